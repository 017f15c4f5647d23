"""The promotion gate's decision: each bound set is read, named with its value, and a round outside one is refused."""

import pytest

from arena.core.flips import Flips
from flows.promotion import NO_BOUND, decide, promotion_line
from flows.settings import load_settings


@pytest.mark.parametrize(("bounds", "lift_low", "lost", "promoted", "reason"), [
    ({}, -0.4, 9, True, NO_BOUND),
    ({"promote_min_lift_low": 0.0}, 0.0, 9, True, "lift lower bound +0.000 >= promote_min_lift_low +0.000"),
    ({"promote_min_lift_low": 0.0}, -0.012, 0, False, "lift lower bound -0.012 < promote_min_lift_low +0.000"),
    ({"promote_max_regressions": 2}, -0.4, 2, True, "2 held-out tasks pass->fail <= promote_max_regressions 2"),
    ({"promote_max_regressions": 2, "promote_min_lift_low": -0.1}, 0.05, 3, False,
     "3 held-out tasks pass->fail > promote_max_regressions 2"),
    ({"promote_max_regressions": 0, "promote_min_lift_low": 0.1}, 0.05, 1, False,
     "lift lower bound +0.050 < promote_min_lift_low +0.100; 1 held-out task pass->fail > promote_max_regressions 0"),
])
def test_a_round_is_promoted_only_within_every_bound_set(bounds, lift_low, lost, promoted, reason):
    decision = decide(lift_low, Flips(tasks=10, pass_to_fail=lost), load_settings(**bounds).promotion)
    assert (decision.promoted, decision.reason) == (promoted, reason)
    assert promotion_line(decision) == ("promoted" if promoted else f"not promoted: {reason}")


def test_a_bound_out_of_range_is_refused_naming_the_setting():
    from flows.settings import SettingsError

    with pytest.raises(SettingsError, match="promote_max_regressions"):
        load_settings(promote_max_regressions=-1)


def _summary(index, before, after, promoted):
    return {"round_index": index, "before": before, "after": after, "lift": after - before,
            "episodes": {"train": {"planned": 24}}, "promotion": {"promoted": promoted, "reason": "r"}}


def test_the_stop_rules_read_the_campaigns_model_so_a_refused_round_moves_nothing():
    from flows.campaign import stop_reason

    # round 1 lifted the pass rate past the target but was refused: the campaign's model is still round 0's
    rounds = [_summary(0, 0.50, 0.60, True), _summary(1, 0.60, 0.90, False)]
    assert stop_reason(load_settings(target_pass_rate=0.8, plateau_lift=0), rounds, 10) is None
    plateau = stop_reason(load_settings(plateau_rounds=1, plateau_lift=0.05), rounds, 10)
    assert plateau == "lift below 0.05 for 1 rounds (+0.000)"
    assert stop_reason(load_settings(plateau_rounds=2, plateau_lift=0.05), rounds, 10) is None
    refused_first = [_summary(0, 0.50, 0.90, False), _summary(1, 0.50, 0.70, True)]
    assert stop_reason(load_settings(target_pass_rate=0.8, plateau_lift=0), refused_first[:1], 10) is None
    assert stop_reason(load_settings(target_pass_rate=0.7, plateau_lift=0), refused_first, 10) == (
        "held-out pass rate 0.700 reached the target 0.700")

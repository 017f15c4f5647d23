import pytest

from curriculum import GroupResult, History, RoundResult, StopRules, should_stop


def _rounds(rates, episodes=64):
    return [RoundResult(round_index=i, pass_rate=r, episodes=episodes) for i, r in enumerate(rates)]


def test_no_rounds_and_improving_rounds_do_not_stop():
    assert not should_stop([]).stop
    decision = should_stop(_rounds([0.1, 0.2, 0.3, 0.4]))
    assert not decision.stop and decision.rule == "" and "0.400" in decision.reason


def test_plateau_fires_after_n_flat_rounds():
    rules = StopRules(plateau_lift=0.02, plateau_rounds=2)
    assert not should_stop(_rounds([0.1, 0.3, 0.31]), rules).stop
    decision = should_stop(_rounds([0.1, 0.3, 0.31, 0.305]), rules)
    assert decision.stop and decision.rule == "plateau" and "+0.010, -0.005" in decision.reason


def test_plateau_reads_explicit_lifts():
    results = [RoundResult(round_index=i, pass_rate=0.5, lift=lift) for i, lift in enumerate([0.2, 0.0, 0.001])]
    assert should_stop(results, StopRules(plateau_lift=0.01, plateau_rounds=2)).rule == "plateau"
    assert not should_stop(results, StopRules(plateau_lift=None)).stop


def test_budget_fires_when_episodes_are_spent():
    rules = StopRules(max_episodes=200, plateau_lift=None)
    assert not should_stop(_rounds([0.1, 0.2, 0.3]), rules).stop
    decision = should_stop(_rounds([0.1, 0.2, 0.3, 0.4]), rules)
    assert decision.stop and decision.rule == "budget" and "256 training episodes" in decision.reason


def test_target_pass_rate_fires_first():
    rules = StopRules(target_pass_rate=0.8, max_episodes=10)
    decision = should_stop(_rounds([0.5, 0.85]), rules)
    assert decision.stop and decision.rule == "target" and "0.850" in decision.reason


def test_round_limit():
    decision = should_stop(_rounds([0.1, 0.5, 0.9]), StopRules(max_rounds=3, plateau_lift=None))
    assert decision.stop and decision.rule == "max_rounds"


def test_bad_round_results_are_refused():
    with pytest.raises(ValueError):
        RoundResult(round_index=0, pass_rate=1.5)
    with pytest.raises(ValueError, match="3 scores but 2 pass flags"):
        GroupResult(round_index=0, scores=[0.1, 0.2, 0.3], passed=[True, False])


def test_history_keeps_the_latest_groups():
    hist = History(keep_groups=2)
    for rnd in range(4):
        hist.record_group("P", "t", GroupResult(round_index=rnd, scores=[0.5], passed=[False]))
    entry = hist.task("P", "t")
    assert entry is not None and [g.round_index for g in entry.groups] == [2, 3]

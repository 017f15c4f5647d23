"""Every curriculum threshold on its boundary: learnability band, recheck rule, estimates and stop rules."""

from __future__ import annotations

import pytest
from curriculum_factories import group, history_with, report, weakness

from curriculum import (
    CurriculumConfig,
    History,
    RoundResult,
    StopRules,
    TaskRef,
    Wave,
    band_score,
    estimated_success,
    plan_wave,
    should_stop,
    uniform_drop,
)

BAND = CurriculumConfig(band_low=0.25, band_high=0.75)
TASK = TaskRef(pack_id="P", task_id="t", domain="helpdesk", tags=("prerequisite",))


@pytest.mark.parametrize(("success", "score"), [
    (0.25, 1.0), (0.75, 1.0), (0.5, 1.0),
    (0.0, 0.25), (1.0, 0.25), (0.2, 0.45), (0.8, 0.45),
])
def test_band_score_is_one_on_and_inside_the_band_edges_and_falls_with_distance(success: float, score: float):
    assert band_score(success, BAND) == pytest.approx(score)


def test_band_score_just_outside_the_edges_is_at_most_a_half_and_has_a_floor():
    assert band_score(0.25 - 1e-9, BAND) == pytest.approx(0.5)
    assert band_score(0.75 + 1e-9, BAND) == pytest.approx(0.5)
    narrow = CurriculumConfig(band_low=0.9, band_high=0.95)
    assert band_score(0.0, narrow) == 0.05
    assert band_score(None, BAND) == 0.6


def test_a_degenerate_band_still_takes_its_single_point():
    point = CurriculumConfig(band_low=0.5, band_high=0.5)
    assert band_score(0.5, point) == 1.0


def _uniform_history(last_round: int, scores: list[float]) -> History:
    return history_with({("P", "t"): [group(last_round, [s == 1.0 for s in scores], scores)]})


@pytest.mark.parametrize(("since", "dropped"), [(0, True), (1, True), (3, True), (4, False), (9, False)])
def test_uniform_group_is_skipped_for_exactly_recheck_after_rounds(since: int, dropped: bool):
    config = CurriculumConfig(recheck_after=3)
    history = _uniform_history(2, [0.5, 0.5, 0.5])
    assert uniform_drop(history, TASK, 2 + since, config) is dropped


def test_only_a_uniform_group_of_several_rollouts_is_skipped():
    config = CurriculumConfig(recheck_after=3)
    assert not uniform_drop(_uniform_history(0, [0.5, 0.75]), TASK, 1, config)
    assert not uniform_drop(_uniform_history(0, [1.0]), TASK, 1, config)
    assert not uniform_drop(History(), TASK, 1, config)
    assert uniform_drop(_uniform_history(0, [1.0, 1.0]), TASK, 1, config)


def test_only_the_last_group_decides_the_skip():
    config = CurriculumConfig(recheck_after=3)
    history = history_with({("P", "t"): [group(0, [True, True], [1.0, 1.0]), group(1, [True, False], [1.0, 0.5])]})
    assert not uniform_drop(history, TASK, 2, config)
    history = history_with({("P", "t"): [group(0, [True, False], [1.0, 0.5]), group(1, [True, True], [1.0, 1.0])]})
    assert uniform_drop(history, TASK, 2, config)


def test_plan_wave_skips_a_uniform_task_until_recheck_after_rounds_have_passed():
    pool = [TASK, TaskRef(pack_id="P", task_id="u", domain="helpdesk", tags=("prerequisite",))]
    config = CurriculumConfig(recheck_after=2, budget=8, k=4)
    rep = report(weakness("missed_policy_dependency", 1, 0.5, ["prerequisite"]))
    for last_wave, scheduled in ((1, False), (2, True)):
        history = _uniform_history(0, [0.0, 0.0, 0.0, 0.0])
        for r in range(last_wave + 1):
            history.record_wave(Wave(round_index=r, strategy="targeted", budget=8, k=4))
        wave = plan_wave(rep, pool, history, config)
        assert wave.round_index == last_wave + 1
        assert (("P", "t") in {e.key for e in wave.entries}) is scheduled


def test_estimated_success_reads_the_latest_groups_only():
    history = history_with({("P", "t"): [group(0, [False] * 4), group(1, [True, False]), group(2, [True] * 2)]})
    assert estimated_success(history, TASK) == pytest.approx(3 / 4)
    assert estimated_success(history, TASK, groups=1) == 1.0
    assert estimated_success(history, TASK, groups=3) == pytest.approx(3 / 8)
    assert estimated_success(History(), TASK) is None


def _rounds(*pass_rates: float, episodes: int = 0) -> list[RoundResult]:
    return [RoundResult(round_index=i, pass_rate=p, episodes=episodes) for i, p in enumerate(pass_rates)]


@pytest.mark.parametrize(("rate", "stop"), [(0.7, True), (0.69, False), (0.9, True)])
def test_target_pass_rate_fires_on_reaching_it(rate: float, stop: bool):
    decision = should_stop(_rounds(0.1, rate), StopRules(target_pass_rate=0.7, plateau_lift=None))
    assert decision.stop is stop and decision.rule == ("target" if stop else "")


@pytest.mark.parametrize(("episodes", "stop"), [(50, True), (49, False)])
def test_episode_budget_fires_on_spending_it(episodes: int, stop: bool):
    decision = should_stop(_rounds(0.1, 0.2, episodes=episodes), StopRules(max_episodes=100, plateau_lift=None))
    assert decision.stop is stop and decision.rule == ("budget" if stop else "")


@pytest.mark.parametrize(("rounds", "stop"), [(3, True), (2, False)])
def test_round_limit_fires_on_the_last_allowed_round(rounds: int, stop: bool):
    decision = should_stop(_rounds(*[0.1 * i for i in range(rounds)]), StopRules(max_rounds=3, plateau_lift=None))
    assert decision.stop is stop and decision.rule == ("max_rounds" if stop else "")


def test_plateau_needs_every_recent_lift_strictly_below_the_threshold():
    rules = StopRules(plateau_lift=0.05, plateau_rounds=2)
    flat = [RoundResult(round_index=i, pass_rate=0.5, lift=lift) for i, lift in enumerate([0.2, 0.04, 0.04])]
    assert should_stop(flat, rules).rule == "plateau"
    on_edge = [RoundResult(round_index=i, pass_rate=0.5, lift=lift) for i, lift in enumerate([0.2, 0.04, 0.05])]
    assert not should_stop(on_edge, rules).stop
    too_few = [RoundResult(round_index=0, pass_rate=0.5, lift=0.0)]
    assert not should_stop(too_few, rules).stop


def test_plateau_lifts_fall_back_to_pass_rate_differences():
    rules = StopRules(plateau_lift=0.05, plateau_rounds=2)
    assert should_stop(_rounds(0.5, 0.52, 0.53), rules).rule == "plateau"
    assert not should_stop(_rounds(0.5, 0.52, 0.6), rules).stop


def test_target_is_checked_before_the_other_rules():
    rules = StopRules(target_pass_rate=0.5, max_episodes=1, max_rounds=1, plateau_lift=1.0, plateau_rounds=1)
    assert should_stop(_rounds(0.6, episodes=5), rules).rule == "target"
    assert should_stop(_rounds(0.4, episodes=5), rules).rule == "budget"
    assert should_stop([], rules).stop is False

"""Waves say why each task is in them, fill their slots in the documented order, and keep their fields when empty."""

from __future__ import annotations

import math

import pytest
from curriculum_factories import group, history_with, pool, report, weakness
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.core.pack import build_pack
from curriculum import (
    BanditState,
    CurriculumConfig,
    History,
    RoundResult,
    StopRules,
    TaskRef,
    Wave,
    WaveEntry,
    grain_label,
    matches,
    plan_wave,
    should_stop,
    task_refs,
)
from curriculum._fill import quotas
from diagnosis import Weakness, WeaknessKind


def _task(task_id: str, *, tags: tuple[str, ...] = (), domain: str = "helpdesk", category: str = "",
          tools: tuple[str, ...] = ()) -> TaskRef:
    return TaskRef(pack_id="P", task_id=task_id, domain=domain, category=category, tags=tags, tools=tools)


def _grained(kind: str, *, domain: str | None = None, tool: str | None = None, tags: list[str] | None = None,
             rank: int = 1) -> Weakness:
    return weakness(kind, rank, 0.4, tags or []).model_copy(update={"domain": domain, "tool": tool})


@pytest.mark.parametrize(("domain", "tool", "label"), [
    (None, None, "wrong_id"), ("helpdesk", None, "wrong_id@helpdesk"), (None, "get_order", "wrong_id@*/get_order"),
    ("helpdesk", "get_order", "wrong_id@helpdesk/get_order"),
])
def test_grain_labels(domain: str | None, tool: str | None, label: str):
    assert grain_label(_grained("wrong_id", domain=domain, tool=tool)) == label


def test_a_grained_weakness_without_focus_tags_matches_every_task_of_its_grain():
    assert matches(_task("a", domain="helpdesk"), _grained("wrong_id", domain="helpdesk"))
    assert not matches(_task("b", domain="tracker"), _grained("wrong_id", domain="helpdesk"))
    assert matches(_task("c", tools=("get_order",)), _grained("wrong_id", tool="get_order"))
    assert not matches(_task("d", tools=("list_orders",)), _grained("wrong_id", tool="get_order"))


@given(weights=st.dictionaries(st.sampled_from("abcdef"), st.floats(0.0, 10.0, allow_nan=False), max_size=6),
       slots=st.integers(0, 40))
@settings(max_examples=200, deadline=None)
def test_quotas_split_slots_by_largest_remainder(weights: dict[str, float], slots: int):
    out = quotas(weights, slots)
    assert set(out) == set(weights)
    total = sum(weights.values())
    if slots == 0 or total <= 0:
        assert all(v == 0 for v in out.values())
        return
    assert sum(out.values()) == slots
    exact = {k: slots * w / total for k, w in weights.items()}
    assert all(math.floor(exact[k]) <= out[k] <= math.floor(exact[k]) + 1 for k in weights)
    # Every key that got the extra slot has a remainder at least as large as any key that did not.
    up = [exact[k] - math.floor(exact[k]) for k in weights if out[k] > math.floor(exact[k])]
    down = [exact[k] - math.floor(exact[k]) for k in weights if out[k] == math.floor(exact[k])]
    if up and down:
        assert min(up) >= max(down) - 1e-9


def test_quotas_of_zero_weights_are_zero():
    assert quotas({"a": 0.0, "b": 0.0}, 5) == {"a": 0, "b": 0}
    assert quotas({"a": 1.0}, 0) == {"a": 0}


ALL_TARGETED = CurriculumConfig(budget=8, k=4, targeted=1.0, replay=0.0, explore=0.0)


def _earlier(round_index: int, task_ids: list[str]) -> Wave:
    return Wave(round_index=round_index, strategy="targeted", entries=[
        WaveEntry(pack_id="P", task_id=t, weight=1 / len(task_ids), source="explore", reason="earlier")
        for t in task_ids])


def _explain(wave: Wave) -> dict[str, str]:
    return {e.task_id: e.reason for e in wave.entries}


def test_explore_reasons_name_the_category_or_domain_and_the_band():
    tasks = [_task("cat", category="policy_reasoning"), _task("dom"), _task("tried", category="billing"),
             _task("bare", domain="")]
    history = history_with({("P", "tried"): [group(0, [True, False, False, True])]})
    config = CurriculumConfig(budget=16, k=4, band_low=0.5, band_high=0.8)
    wave = plan_wave(report(), tasks, history, config)
    reasons = _explain(wave)
    assert reasons["bare"] == "explore task; never tried"
    assert reasons["cat"] == "explore policy_reasoning; never tried"
    assert reasons["dom"] == "explore helpdesk; never tried"
    assert reasons["tried"] == "explore billing; estimated success 0.50 inside band [0.5, 0.8]"
    assert {e.task_id: e.estimated_success for e in wave.entries} == {"cat": None, "dom": None, "tried": 0.5,
                                                                      "bare": None}


@pytest.mark.parametrize(("passed", "where"), [
    ([True, True, True, False], "estimated success 0.75 inside band [0.25, 0.75]"),
    ([True, False, False, False], "estimated success 0.25 inside band [0.25, 0.75]"),
    ([True, True, True, True, True, True, True, False], "estimated success 0.88 outside band [0.25, 0.75]"),
])
def test_band_text_is_inclusive_at_both_edges(passed: list[bool], where: str):
    history = history_with({("P", "t"): [group(0, passed, [float(p) + 0.25 * i for i, p in enumerate(passed)])]})
    wave = plan_wave(report(), [_task("t")], history, CurriculumConfig(budget=4, k=4, band_low=0.25, band_high=0.75))
    assert _explain(wave)["t"].endswith(where)


def test_never_tried_tasks_are_explored_first():
    tasks = [_task(f"t{i}") for i in range(8)]
    history = history_with({("P", f"t{i}"): [group(0, [True, False])] for i in range(5)})
    wave = plan_wave(report(), tasks, history, CurriculumConfig(budget=12, k=4))
    assert sorted(e.task_id for e in wave.entries) == ["t5", "t6", "t7"]


def test_a_full_wave_does_not_say_the_pool_is_short():
    tasks = [_task(f"t{i}") for i in range(3)]
    wave = plan_wave(report(), tasks, History(), CurriculumConfig(budget=12, k=4))
    assert len(wave.entries) == 3
    assert wave.message == "the report has no weakness to target: the wave is replay and exploration only"
    short = plan_wave(report(), tasks[:2], History(), CurriculumConfig(budget=12, k=4))
    assert short.message.endswith("; the pool holds 2 schedulable task(s) for 3 slot(s)")


def test_targeted_reasons_name_the_shared_tags_and_the_tool():
    w = _grained("wrong_id", tool="get_order", tags=["near_duplicate", "ambiguous"])
    tasks = [_task("both", tags=("ambiguous", "near_duplicate"), tools=("get_order",)),
             _task("untooled", tags=("near_duplicate",))]
    wave = plan_wave(report(w), tasks, History(), ALL_TARGETED)
    reasons = _explain(wave)
    assert "; via tags ambiguous, near_duplicate, tool get_order; never tried" in reasons["both"]
    assert "; via tags near_duplicate; never tried" in reasons["untooled"]


def test_a_weakness_with_exactly_enough_tasks_fills_its_quota_silently():
    w = weakness("wrong_id", 1, 0.5, ["near_duplicate"])
    tasks = [_task(f"d{i}", tags=("near_duplicate",)) for i in range(2)] + [_task("x")]
    wave = plan_wave(report(w), tasks, History(), ALL_TARGETED)
    assert {e.source for e in wave.entries} == {"targeted"} and len(wave.entries) == 2
    assert wave.message == ""


def test_overlapping_weaknesses_are_served_in_rank_order():
    # the first in rank sorts last by name
    first = weakness(WeaknessKind.WRONG_ID, 1, 0.5, ["shared"]).model_copy(update={"impact": 0.5})
    second = weakness(WeaknessKind.BRITTLE_PARAMETERS, 2, 0.5, ["shared"]).model_copy(update={"impact": 0.5})
    wave = plan_wave(report(first, second), [_task("s", tags=("shared",))], History(), ALL_TARGETED)
    assert [e.weakness for e in wave.entries] == [WeaknessKind.WRONG_ID]


def test_unused_targeted_slots_go_to_replay():
    w = weakness("wrong_id", 1, 0.5, ["near_duplicate"])
    tasks = [_task("d0", tags=("near_duplicate",))] + [_task(f"r{i}") for i in range(6)]
    earlier = _earlier(0, [f"r{i}" for i in range(6)])
    history = History(waves=[earlier])
    config = CurriculumConfig(budget=32, k=4, targeted=0.5, replay=0.25, explore=0.25)
    wave = plan_wave(report(w), tasks, history, config)
    by_source = [e.source for e in wave.entries]
    # 8 slots: 4 targeted (1 matching task), so 2 + 3 replays, then exploration of what is left.
    assert by_source.count("targeted") == 1 and by_source.count("replay") == 5


def test_without_weaknesses_replay_gets_exactly_its_share():
    tasks = [_task(f"r{i}") for i in range(8)]
    earlier = _earlier(0, [f"r{i}" for i in range(8)])
    config = CurriculumConfig(budget=32, k=4, targeted=0.5, replay=0.25, explore=0.25)
    wave = plan_wave(report(), tasks, History(waves=[earlier]), config)
    assert [e.source for e in wave.entries].count("replay") == 2
    replayed = next(e for e in wave.entries if e.source == "replay")
    assert replayed.reason == "replay from round 0 against forgetting; never tried"


def test_replay_entries_carry_their_estimated_success():
    tasks = [_task("r0")]
    earlier = _earlier(2, ["r0"])
    history = history_with({("P", "r0"): [group(2, [True, False, True, False])]})
    history.waves.append(earlier)
    wave = plan_wave(report(), tasks, history, CurriculumConfig(budget=4, k=4, targeted=0.0, replay=1.0, explore=0.0))
    (entry,) = wave.entries
    assert entry.source == "replay" and entry.estimated_success == 0.5
    assert entry.reason.endswith("; estimated success 0.50 inside band [0.2, 0.8]")


def test_uniform_waves_weigh_tasks_equally_and_say_when_the_pool_is_short():
    tasks = [_task(f"t{i}") for i in range(3)]
    history = history_with({("P", "t0"): [group(0, [True, True, True, True], [1.0, 0.9, 1.0, 0.8])],
                            ("P", "t1"): [group(0, [True, False])]})
    wave = plan_wave(report(), tasks, history, CurriculumConfig(strategy="uniform", budget=12, k=4))
    assert [e.weight for e in wave.entries] == pytest.approx([1 / 3] * 3)
    assert {e.task_id: e.estimated_success for e in wave.entries} == {"t0": 1.0, "t1": 0.5, "t2": None}
    assert wave.message == ""
    short = plan_wave(report(), tasks, history, CurriculumConfig(strategy="uniform", budget=16, k=4))
    assert short.message == "the pool holds 3 task(s) for 4 slot(s)"


def test_the_bandit_targets_a_grained_weakness_by_its_kind():
    w = _grained("wrong_id", domain="helpdesk", tags=["near_duplicate"])
    tasks = [_task(f"d{i}", tags=("near_duplicate",)) for i in range(4)]
    wave = plan_wave(report(w), tasks, History(), CurriculumConfig(strategy="bandit", budget=16, k=4))
    assert any(e.source == "targeted" and e.weakness == "wrong_id" for e in wave.entries)


@pytest.mark.parametrize("strategy", ["bandit", "targeted"])
def test_an_empty_wave_keeps_its_round_budget_k_and_bandit_state(strategy: str):
    state = BanditState(rounds=4)
    history = History(waves=[Wave(round_index=6, strategy=strategy)], bandit=state)
    tasks = [_task("h").model_copy(update={"split": "heldout"})]
    wave = plan_wave(report(), tasks, history, CurriculumConfig(strategy=strategy, budget=2, k=4))
    assert (wave.round_index, wave.budget, wave.k, wave.entries) == (7, 2, 4, [])
    assert wave.bandit == (state if strategy == "bandit" else None)
    assert wave.message == ("1 held-out task(s) in the pool are never scheduled; "
                            "the budget of 2 episode(s) is below k=4 rollouts per task; "
                            "the task pool has no train task: nothing to schedule")


def test_a_zero_budget_and_an_empty_pool_are_said():
    assert plan_wave(report(), [_task("t")], None, CurriculumConfig(budget=0)).message == (
        "the training budget is 0 episodes: nothing to schedule")
    empty = plan_wave(report(), [], None, CurriculumConfig(budget=8, k=4))
    assert (empty.entries, empty.message) == ([], "the task pool has no train task: nothing to schedule")


def test_a_planned_wave_keeps_its_budget_and_joins_its_notes():
    tasks = [*pool()[:2], pool()[-1]]
    wave = plan_wave(report(), tasks, None, CurriculumConfig(budget=13, k=4))
    assert (wave.budget, wave.k) == (13, 4)
    assert wave.message.split("; ")[:2] == ["1 held-out task(s) in the pool are never scheduled",
                                            "the report has no weakness to target: the wave is replay and "
                                            "exploration only"]


def test_task_refs_keep_category_and_split_and_filter_by_split():
    from guard_domain import GUARDED, scoped_task, with_tasks

    pack = build_pack(GUARDED, seed=0)
    train = scoped_task("a", [])
    held = scoped_task("b", []).model_copy(update={"split": "heldout"})
    both = with_tasks(pack, train, held)
    refs = task_refs([both])
    assert [(r.task_id, r.split, r.category, r.domain) for r in refs] == [("a", "train", "test", "guarded")]
    assert [r.task_id for r in task_refs([both], split="heldout")] == ["b"]
    assert [(r.task_id, r.split) for r in task_refs([both], split=None)] == [("a", "train"), ("b", "heldout")]


def test_the_first_round_has_no_lift_of_its_own():
    rounds = [RoundResult(round_index=0, pass_rate=0.9), RoundResult(round_index=1, pass_rate=0.9)]
    rules = StopRules(plateau_lift=0.01, plateau_rounds=2)
    assert not should_stop(rounds, rules).stop
    assert should_stop([], rules).reason == "no round has run yet"


@pytest.mark.parametrize(("replay", "said"), [(0.25, True), (0.0, False)])
def test_a_replay_share_with_no_earlier_task_left_is_said(replay: float, said: bool):
    tasks = [_task(f"t{i}") for i in range(4)]
    history = History(waves=[_earlier(0, ["gone"])])
    config = CurriculumConfig(budget=16, k=4, targeted=0.5, replay=replay, explore=0.5 - replay + 0.0)
    wave = plan_wave(report(), tasks, history, config)
    assert ("no task of an earlier wave is left to replay" in wave.message.split("; ")) is said

"""The targeted strategy: impact weighting, concentration on the top weaknesses, multi-weakness tasks."""

from collections import Counter

from curriculum_factories import group, history_with, pool, report, weakness

from curriculum import CurriculumConfig, History, TaskRef, plan_wave
from diagnosis import Weakness


def _with_impact(w: Weakness, impact: float) -> Weakness:
    return w.model_copy(update={"impact": impact})


def test_targeted_slots_follow_impact_not_rank():
    # rank 1 has the larger share but the smaller impact (e.g. little learnable): impact decides
    rep = report(_with_impact(weakness("wrong_id", 1, 0.6, ["near_duplicate"]), 0.05),
                 _with_impact(weakness("missed_policy_dependency", 2, 0.3, ["prerequisite"]), 0.15))
    wave = plan_wave(rep, pool(), History(), CurriculumConfig(budget=32, k=4, targeted=1.0, replay=0.0, explore=0.0))
    kinds = Counter(e.weakness for e in wave.entries)
    assert kinds == {"missed_policy_dependency": 6, "wrong_id": 2}
    assert all("impact" in e.reason for e in wave.entries)


def test_targeted_slots_concentrate_on_the_focus_kinds_of_highest_impact():
    rep = report(weakness("wrong_id", 1, 0.5, ["near_duplicate"]),
                 weakness("missed_policy_dependency", 2, 0.3, ["prerequisite"]),
                 weakness("brittle_parameters", 3, 0.2, ["legacy_format"]))
    cfg = CurriculumConfig(budget=40, k=4, targeted=1.0, replay=0.0, explore=0.0, focus=2)
    kinds = Counter(e.weakness for e in plan_wave(rep, pool(), History(), cfg).entries)
    assert set(kinds) == {"wrong_id", "missed_policy_dependency"}
    assert kinds["wrong_id"] > kinds["missed_policy_dependency"]
    wide = Counter(e.weakness for e in plan_wave(rep, pool(), History(), cfg.model_copy(update={"focus": 3})).entries)
    assert set(wide) == {"wrong_id", "missed_policy_dependency", "brittle_parameters"}


def test_tasks_exercising_several_targeted_weaknesses_go_first_among_equals():
    tasks = pool() + [TaskRef(pack_id="P3", task_id=f"both-{i}", domain="helpdesk",
                              tags=("near_duplicate", "prerequisite")) for i in range(2)]
    rep = report(weakness("wrong_id", 1, 0.6, ["near_duplicate"]),
                 weakness("missed_policy_dependency", 2, 0.4, ["prerequisite"]))
    for seed in range(5):
        wave = plan_wave(rep, tasks, History(), CurriculumConfig(budget=12, k=4, targeted=1.0, replay=0.0,
                                                                 explore=0.0, seed=seed))
        # 3 slots: 2 for wrong_id, 1 for the dependency; the two tasks carrying both tags are taken first
        assert {"both-0", "both-1"} <= set(wave.task_ids())


def test_band_still_comes_before_multi_weakness_overlap():
    tasks = pool() + [TaskRef(pack_id="P3", task_id="both-0", domain="helpdesk",
                              tags=("near_duplicate", "prerequisite"))]
    hist = history_with({("P3", "both-0"): [group(0, [True, True, True, True], [1, 1, 1, 0.9])],
                         ("P1", "dup-4"): [group(0, [True, False, False, True])]})
    rep = report(weakness("wrong_id", 1, 0.6, ["near_duplicate"]),
                 weakness("missed_policy_dependency", 2, 0.4, ["prerequisite"]))
    cfg = CurriculumConfig(budget=4, k=4, targeted=1.0, replay=0.0, explore=0.0, focus=2)
    wave = plan_wave(rep, tasks, hist, cfg)
    # one slot, for wrong_id: the in-band task beats the out-of-band task that matches both weaknesses
    assert wave.task_ids() == ["dup-4"]

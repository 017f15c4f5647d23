from collections import Counter

import pytest
from curriculum_factories import group, history_with, pool, report, weakness

from curriculum import CurriculumConfig, History, TaskRef, Wave, WaveEntry, plan_wave, strategy_names


def _two_weaknesses():
    return report(weakness("wrong_id", 1, 0.6, ["near_duplicate"]),
                  weakness("missed_policy_dependency", 2, 0.3, ["prerequisite"]))


def test_first_wave_mixes_targeted_and_explore_with_reasons():
    wave = plan_wave(_two_weaknesses(), pool(), History(), CurriculumConfig(budget=40, k=4, seed=1))
    assert wave.round_index == 0 and wave.strategy == "targeted" and wave.episodes == 40
    sources = Counter(e.source for e in wave.entries)
    # 10 slots: 6 targeted; no earlier wave, so the 2 replay slots go to exploration
    assert sources == {"targeted": 6, "explore": 4}
    kinds = Counter(e.weakness for e in wave.by_source("targeted"))
    # by impact: 0.6 vs 0.3 -> 4 and 2 of 6 slots
    assert kinds == {"wrong_id": 4, "missed_policy_dependency": 2}
    for e in wave.by_source("targeted"):
        tag = "near_duplicate" if e.weakness == "wrong_id" else "prerequisite"
        assert e.task_id.startswith("dup" if tag == "near_duplicate" else "pre")
        assert f"targets {e.weakness}" in e.reason and "impact" in e.reason and tag in e.reason
        assert "never tried" in e.reason
    assert all(e.reason.startswith("explore") for e in wave.by_source("explore"))
    assert len({e.key for e in wave.entries}) == len(wave.entries)
    assert sum(e.weight for e in wave.entries) == pytest.approx(1.0)
    assert "held-0" not in wave.task_ids() and "held-out" in wave.message


def test_same_seed_same_wave_and_other_seed_differs():
    cfg = CurriculumConfig(budget=40, k=4, seed=3)
    a = plan_wave(_two_weaknesses(), pool(), History(), cfg)
    b = plan_wave(_two_weaknesses(), pool(), History(), cfg)
    c = plan_wave(_two_weaknesses(), pool(), History(), cfg.model_copy(update={"seed": 4}))
    assert a == b
    assert a.task_ids() != c.task_ids()


def test_learnability_band_prefers_tasks_near_half_success():
    hist = history_with({
        ("P1", "dup-0"): [group(0, [True, True, True, False])],     # 0.75: inside
        ("P1", "dup-1"): [group(0, [True, False, True, False])],    # 0.5: inside
        ("P1", "dup-2"): [group(0, [False, False, False, False], [0.1, 0.2, 0.1, 0.3])],  # 0.0: outside
        ("P1", "dup-3"): [group(0, [True, True, True, True], [1, 1, 1, 0.9])],  # 1.0: outside (varied scores)
    })
    rep = report(weakness("wrong_id", 1, 0.5, ["near_duplicate"]))
    wave = plan_wave(rep, pool(), hist, CurriculumConfig(budget=8, k=4, targeted=1.0, replay=0.0, explore=0.0))
    assert sorted(wave.task_ids()) == ["dup-0", "dup-1"]
    assert all("inside band [0.2, 0.8]" in e.reason for e in wave.entries)
    # a bigger wave still takes the in-band tasks first, then never-tried ones, then out-of-band ones
    wave = plan_wave(rep, pool(), hist, CurriculumConfig(budget=40, k=4, targeted=1.0, replay=0.0, explore=0.0))
    ids = wave.task_ids()
    assert set(ids[:2]) == {"dup-0", "dup-1"} and set(ids[-2:]) == {"dup-2", "dup-3"}
    weights = {e.task_id: e.weight for e in wave.entries}
    assert weights["dup-0"] > weights["dup-4"] > weights["dup-2"]


def test_tasks_whose_last_group_scored_the_same_are_dropped_then_rechecked():
    uniform = [group(0, [False] * 4, [0.25] * 4)]
    hist = history_with({("P1", f"dup-{i}"): uniform for i in range(8)})
    rep = report(weakness("wrong_id", 1, 0.5, ["near_duplicate"]))
    cfg = CurriculumConfig(budget=40, k=4, targeted=1.0, replay=0.0, explore=0.0, recheck_after=2)
    hist.waves.append(Wave(round_index=0, strategy="targeted"))
    wave = plan_wave(rep, pool(), hist, cfg)
    assert sorted(e.task_id for e in wave.by_source("targeted")) == ["dup-8", "dup-9"]
    assert not {f"dup-{i}" for i in range(8)} & set(wave.task_ids())
    assert "8 task(s) skipped" in wave.message and "all scored the same" in wave.message
    # after recheck_after rounds the same tasks are schedulable again
    hist.waves.append(Wave(round_index=2, strategy="targeted"))
    again = plan_wave(rep, pool(), hist, cfg)
    assert again.round_index == 3 and len(again.by_source("targeted")) == 10


def test_replay_takes_tasks_of_earlier_waves():
    hist = History()
    earlier = Wave(round_index=0, strategy="targeted", k=4, entries=[
        WaveEntry(pack_id="P2", task_id=f"fmt-{i}", weight=0.25, reason="r", source="targeted",
                  weakness="brittle_parameters") for i in range(4)])
    hist.record_wave(earlier)
    wave = plan_wave(_two_weaknesses(), pool(), hist, CurriculumConfig(budget=40, k=4, seed=0))
    replay = wave.by_source("replay")
    assert wave.round_index == 1 and len(replay) == 2
    assert {e.task_id for e in replay} <= {f"fmt-{i}" for i in range(4)}
    assert all("replay from round 0" in e.reason for e in replay)
    assert Counter(e.source for e in wave.entries) == {"targeted": 6, "replay": 2, "explore": 2}


def test_weakness_without_focus_tags_matches_its_domains():
    rep = report(weakness("novel", 1, 0.4, [], domains=["tracker"]))
    wave = plan_wave(rep, pool(), History(), CurriculumConfig(budget=12, k=4, targeted=1.0, replay=0.0,
                                                              explore=0.0))
    assert len(wave.entries) == 3 and all(e.task_id.startswith("fmt") for e in wave.entries)
    assert all("domain tracker" in e.reason for e in wave.entries)


def test_short_supply_of_matching_tasks_moves_slots_on_with_a_message():
    small = [t for t in pool() if not t.task_id.startswith("dup")] + [
        TaskRef(pack_id="P1", task_id="dup-only", tags=("near_duplicate",))]
    rep = report(weakness("wrong_id", 1, 0.9, ["near_duplicate"]))
    wave = plan_wave(rep, small, History(), CurriculumConfig(budget=40, k=4))
    assert len(wave.entries) == 10
    assert [e.task_id for e in wave.by_source("targeted")] == ["dup-only"]
    assert "has 1 matching task(s) for 6 slot(s)" in wave.message


@pytest.mark.parametrize("rep", [None, report()])
def test_report_without_weaknesses_gives_replay_and_explore_only(rep):
    hist = History()
    hist.record_wave(Wave(round_index=0, strategy="targeted", entries=[
        WaveEntry(pack_id="P1", task_id="pre-1", weight=1.0, reason="r", source="targeted")]))
    wave = plan_wave(rep, pool(), hist, CurriculumConfig(budget=20, k=4))
    assert len(wave.entries) == 5 and not wave.by_source("targeted")
    assert [e.task_id for e in wave.by_source("replay")] == ["pre-1"]
    assert "no weakness to target" in wave.message


def test_empty_pool_gives_an_empty_wave_with_a_message():
    wave = plan_wave(_two_weaknesses(), [], History(), CurriculumConfig())
    assert wave.entries == [] and "no train task" in wave.message
    only_heldout = [t for t in pool() if t.split == "heldout"]
    wave = plan_wave(_two_weaknesses(), only_heldout, None, None)
    assert wave.entries == [] and "held-out" in wave.message and "no train task" in wave.message


def test_zero_or_tiny_budget_gives_an_empty_wave_with_a_message():
    wave = plan_wave(_two_weaknesses(), pool(), History(), CurriculumConfig(budget=0))
    assert wave.entries == [] and "budget is 0" in wave.message
    wave = plan_wave(_two_weaknesses(), pool(), History(), CurriculumConfig(budget=3, k=4))
    assert wave.entries == [] and "below k=4" in wave.message


def test_pool_smaller_than_the_wave_says_so():
    tiny = pool()[:3]
    wave = plan_wave(_two_weaknesses(), tiny, History(), CurriculumConfig(budget=40, k=4))
    assert len(wave.entries) == 3 and "3 schedulable task(s) for 10 slot(s)" in wave.message


def test_uniform_strategy_ignores_weaknesses():
    wave = plan_wave(_two_weaknesses(), pool(), History(), CurriculumConfig(strategy="uniform", budget=120, k=4))
    assert len(wave.entries) == 30 and all(e.source == "explore" for e in wave.entries)
    assert all(e.reason == "uniform sample of the pool" and e.weakness is None for e in wave.entries)
    assert all(e.weight == pytest.approx(1 / 30) for e in wave.entries)


def test_unknown_strategy_and_bad_mix_are_refused():
    with pytest.raises(KeyError, match="unknown curriculum strategy 'greedy'; registered: bandit"):
        plan_wave(_two_weaknesses(), pool(), History(), CurriculumConfig(strategy="greedy"))
    with pytest.raises(ValueError, match="must sum to 1"):
        CurriculumConfig(targeted=0.5, replay=0.5, explore=0.5)
    with pytest.raises(ValueError, match="band low 0.9 exceeds high 0.1"):
        CurriculumConfig(band_low=0.9, band_high=0.1)
    assert strategy_names() == ["bandit", "targeted", "uniform"]


def test_a_grain_no_task_practises_gives_its_slots_to_its_kinds_other_grain_before_the_next_kind():
    def grain(w, domain, kind_rank, grain_rank):
        return w.model_copy(update={"domain": domain, "kind_rank": kind_rank, "grain_rank": grain_rank,
                                    "rank": kind_rank * 10 + grain_rank})

    unpractised = grain(weakness("wrong_id", 1, 0.4, ["stale_record"]), "tracker", 1, 1)  # no pool task has the tag
    practised = grain(weakness("wrong_id", 2, 0.2, ["near_duplicate"]), "helpdesk", 1, 2)
    policy = grain(weakness("missed_policy_dependency", 3, 0.3, ["prerequisite"]), "helpdesk", 2, 1)
    rep = report(unpractised, practised, policy)
    config = CurriculumConfig(budget=24, k=4, targeted=1.0, replay=0.0, explore=0.0, focus=2, coverage=False)
    wave = plan_wave(rep, pool(), History(), config)
    by_grain = Counter(e.grain for e in wave.by_source("targeted"))
    # wrong_id weighs 0.6 of 0.9: 4 of 6 slots, which its unpractised grain hands to its practised one
    assert by_grain == {"wrong_id@helpdesk": 4, "missed_policy_dependency@helpdesk": 2}
    moved = [e for e in wave.entries if e.grain == "wrong_id@helpdesk"]
    assert all(e.task_id.startswith("dup") and "in place of wrong_id@tracker" in e.reason for e in moved)
    assert "'wrong_id@tracker' has 0 matching task(s) for 4 slot(s)" in wave.message


def test_slots_a_kind_cannot_use_are_split_again_by_weight_among_the_weaknesses_left():
    rep = report(weakness("wrong_id", 1, 0.6, ["near_duplicate"]),
                 weakness("stale_state", 2, 0.3, ["stale_record"]),  # no pool task has the tag
                 weakness("missed_policy_dependency", 3, 0.1, ["prerequisite"]))
    config = CurriculumConfig(budget=40, k=4, targeted=1.0, replay=0.0, explore=0.0, focus=3, coverage=False)
    wave = plan_wave(rep, pool(), History(), config)
    # quotas 6 / 3 / 1; the 3 stale_state cannot use go 0.6 : 0.1 to the others, not all to the next in rank
    assert Counter(e.weakness for e in wave.by_source("targeted")) == {"wrong_id": 9, "missed_policy_dependency": 1}
    assert "'stale_state' has 0 matching task(s) for 3 slot(s)" in wave.message


def test_the_retention_share_follows_measured_forgetting_aimed_at_the_templates_that_regressed():
    rep = report(weakness("wrong_id", 1, 0.5, ["near_duplicate"]))
    config = CurriculumConfig(budget=40, k=2, seed=3)

    def retained(lost: dict[str, int], per_flip: int = 2) -> tuple[Counter[str], Wave]:
        wave = plan_wave(rep, pool(), config=config.model_copy(update={"regressed": lost,
                                                                        "retention_per_flip": per_flip}))
        return Counter(e.task_id.split("-")[0] for e in wave.entries if e.reason.startswith("retention")), wave

    assert retained({"tracker/fmt": 3}, per_flip=0)[0] == Counter()
    assert retained({"tracker/fmt": 1})[0] == {"fmt": 2}
    counts, wave = retained({"tracker/fmt": 3, "helpdesk/pre": 1})
    assert counts == {"fmt": 6, "pre": 2} and len(wave.entries) == 20
    assert all(e.source == "replay" and "pass->fail" in e.reason for e in wave.entries
               if e.reason.startswith("retention"))
    assert Counter(e.source for e in wave.entries)["targeted"] == round(12 * config.targeted)

"""Coverage-aware targeting: a grain the pool cannot practise outranks an equally failing grain it can."""

import dataclasses

from arena.core.pack import Pack, build_pack
from curriculum import CurriculumConfig, TaskRef, coverage_ranked, plan_wave, pool_coverage, practice_value, task_refs
from diagnosis import ShareInterval, Weakness, WeaknessReport

DOMAIN, COVERED, UNCOVERED = "helpdesk", "check_refund_eligibility", "issue_refund"


def _weakness(tool: str, rank: int) -> Weakness:
    return Weakness(kind="missed_policy_dependency", domain=DOMAIN, tool=tool, label="Skips prerequisites",
                    description="d", rank=rank, impact=0.2, share=0.5, share_interval=ShareInterval(low=0.3, high=0.7),
                    mean_reward_lost=0.5, learnability=1.0, count=8, rate=0.2, domains=[DOMAIN], tools=[tool],
                    focus_tags=["prerequisite"], knobs={"prerequisite_depth": 3})


def report_with_two_equal_grains() -> WeaknessReport:
    """Two grains failing equally; diagnosis happens to rank the one the pool covers first."""
    return WeaknessReport(episodes=40, weaknesses=[_weakness(COVERED, 1), _weakness(UNCOVERED, 2)])


def without_tool(pack: Pack, tool: str) -> Pack:
    """The pack with every task calling ``tool`` removed: a campaign pool that lacks the grain's situations."""
    return dataclasses.replace(pack, tasks=[t for t in pack.tasks if tool not in {s.tool for s in t.gold.steps}])


def _ref(task_id: str, *tools: str) -> TaskRef:
    return TaskRef(pack_id="p", task_id=task_id, domain=DOMAIN, tags=("prerequisite",), tools=tools)


def test_coverage_is_the_uniform_waves_expected_tasks_of_the_grain_capped_at_one():
    covered, uncovered = report_with_two_equal_grains().weaknesses
    pool = [_ref("a", COVERED), _ref("b", COVERED), _ref("c", "get_order"), _ref("d", "get_order"),
            TaskRef(pack_id="p", task_id="h", domain=DOMAIN, tags=("prerequisite",), split="heldout",
                    tools=(UNCOVERED,))]
    assert pool_coverage(covered, pool, slots=1) == 0.5  # 1 slot x 2 of 4 train tasks
    assert pool_coverage(covered, pool, slots=4) == 1.0
    assert pool_coverage(uncovered, pool, slots=4) == 0.0  # a held-out task never practises it
    assert pool_coverage(covered, [], slots=4) == 0.0
    assert practice_value(uncovered, pool, 4) == 0.4
    assert practice_value(covered, pool, 1) == 0.2 * 1.5


def test_a_grain_the_pool_cannot_practise_outranks_an_equally_failing_grain_it_can():
    report = report_with_two_equal_grains()
    pool = task_refs([without_tool(build_pack(DOMAIN, seed=0), UNCOVERED)])
    ranked = coverage_ranked(report, pool, slots=8)
    assert [(w.tool, w.rank) for w in ranked.weaknesses] == [(UNCOVERED, 1), (COVERED, 2)]
    assert ranked.weaknesses[0].impact > ranked.weaknesses[1].impact
    assert [w.tool for w in report.weaknesses] == [COVERED, UNCOVERED]  # the diagnosed report is left alone
    assert report.weaknesses[1].impact == 0.2


def test_the_planner_targets_the_grain_only_a_variant_practises():
    base = build_pack(DOMAIN, seed=0)
    variant = build_pack(DOMAIN, seed=7)
    exercising = [t.model_copy(update={"split": "train"}) for t in variant.tasks
                  if UNCOVERED in {s.tool for s in t.gold.steps} and "prerequisite" in t.tags]
    assert len(exercising) >= 2
    # a small variant: two tasks of the grain, so a uniform wave would rarely meet them
    variant = dataclasses.replace(variant, manifest=variant.manifest.model_copy(update={"id": "variant"}),
                                  tasks=exercising[:2])
    pool = task_refs([without_tool(base, UNCOVERED), variant])
    config = CurriculumConfig(budget=8, k=2, targeted=1.0, replay=0.0, explore=0.0, focus=1)
    wave = plan_wave(report_with_two_equal_grains(), pool, config=config)
    on_variant = [e for e in wave.by_source("targeted") if e.grain == f"missed_policy_dependency@{DOMAIN}/{UNCOVERED}"]
    assert len(on_variant) == 2 and all(e.pack_id == "variant" for e in on_variant)
    # the variant holds two of the kind's four slots: the other two stay with the kind, at its other grain
    rest = [e for e in wave.by_source("targeted") if e not in on_variant]
    assert len(rest) == 2 and {e.grain for e in rest} == {f"missed_policy_dependency@{DOMAIN}/{COVERED}"}
    assert all("in place of" in e.reason for e in rest)
    assert "pool coverage" in wave.entries[0].reason
    impact_only = plan_wave(report_with_two_equal_grains(), pool, config=config.model_copy(update={"coverage": False}))
    assert {e.grain for e in impact_only.by_source("targeted")} == {f"missed_policy_dependency@{DOMAIN}/{COVERED}"}


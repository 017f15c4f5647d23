"""A weakness at the grain (kind, domain, tool) survives the report, the factory and the planner."""

from arena.core.pack import build_pack
from curriculum import CurriculumConfig, plan_wave, task_refs
from diagnosis import ShareInterval, Weakness, WeaknessReport, read_report
from factory_client import GateConfig, LocalFactory, VariantRequest, targets_from_report

DOMAIN, TOOL = "helpdesk", "issue_refund"


def _report() -> WeaknessReport:
    grain = Weakness(kind="missed_policy_dependency", domain=DOMAIN, tool=TOOL, label="Skips prerequisites",
                     description="d", rank=1, impact=0.2, share=0.5, share_interval=ShareInterval(low=0.3, high=0.7),
                     mean_reward_lost=0.5, learnability=1.0, count=8, rate=0.2, domains=[DOMAIN], tools=[TOOL],
                     focus_tags=["prerequisite"], knobs={"prerequisite_depth": 3})
    other = grain.model_copy(update={"domain": "tracker", "tool": "transition_issue", "rank": 2, "impact": 0.1,
                                     "domains": ["tracker"], "tools": ["transition_issue"]})
    return read_report(WeaknessReport(episodes=40, weaknesses=[grain, other]).to_json())


def test_grain_round_trips_through_report_factory_and_planner():
    report = _report()
    targets = targets_from_report(report, domain=DOMAIN)
    assert [(t.kind, t.domain, t.tool) for t in targets] == [("missed_policy_dependency", DOMAIN, TOOL)]
    factory = LocalFactory()
    try:
        result = factory.request(VariantRequest(domain=DOMAIN, targets=targets, variants=1, tasks_per_variant=4,
                                                gate=GateConfig(k=1, band_min=0, band_max=1)), timeout=300)
    finally:
        factory.close()
    variant = result.packs[0]
    assert variant.manifest.provenance["targets"][0]["tool"] == TOOL
    calls_tool = [t for t in variant.tasks if TOOL in {s.tool for s in t.gold.steps}]
    assert calls_tool, "the targeted variant has no task calling the grain's tool"
    base = build_pack(DOMAIN, seed=0)
    pool = task_refs([base, variant])
    wave = plan_wave(report, pool, config=CurriculumConfig(budget=16, k=2, targeted=1.0, replay=0.0, explore=0.0,
                                                           focus=1))
    targeted = wave.by_source("targeted")
    assert targeted and all(e.grain == f"missed_policy_dependency@{DOMAIN}/{TOOL}" for e in targeted)
    by_key = {t.key: t for t in pool}
    assert all(TOOL in by_key[e.key].tools and "prerequisite" in by_key[e.key].tags for e in targeted)
    assert any(e.pack_id == variant.id for e in targeted)


def test_grain_keeps_other_domains_and_tools_out():
    report = _report()
    pool = task_refs([build_pack(DOMAIN, seed=0)])
    wave = plan_wave(report, pool, config=CurriculumConfig(budget=40, k=2, targeted=1.0, replay=0.0, explore=0.0,
                                                           focus=2))
    tools = {t.key: t.tools for t in pool}
    grains = {e.grain for e in wave.by_source("targeted")}
    assert grains == {f"missed_policy_dependency@{DOMAIN}/{TOOL}"}
    assert all(TOOL in tools[e.key] for e in wave.by_source("targeted"))
    assert "missed_policy_dependency@tracker/transition_issue" in wave.message

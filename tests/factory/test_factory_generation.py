from __future__ import annotations

import json
from pathlib import Path

import pytest
from factory_helpers import DOMAIN, small_request

from arena.core.domains import get_domain
from arena.core.weakness import WeaknessKind
from factory_client import (
    GateConfig,
    LocalFactory,
    VariantRequest,
    WeaknessTarget,
    openapi_schema,
    targets_from_report,
)
from factory_client._synth import allocate, variant_knobs

DOCS = Path(__file__).resolve().parents[2] / "docs" / "factory-openapi.json"


def test_generation_is_deterministic_from_the_seed(local_factory: LocalFactory):
    a = local_factory.request(small_request(idempotency_key="a"), timeout=120)
    other = LocalFactory()
    try:
        b = other.request(small_request(idempotency_key="b"), timeout=120)
        c = other.request(small_request(seed=12), timeout=120)
    finally:
        other.close()
    assert a.request_id != b.request_id
    assert [p.id for p in a.packs] == [p.id for p in b.packs] != []
    assert a.gate_report == b.gate_report
    assert {p.id for p in c.packs}.isdisjoint({p.id for p in a.packs})


def test_variants_follow_the_target_weights():
    heavy = WeaknessTarget(kind=WeaknessKind.WRONG_ID, weight=3.0, focus_tags=["prerequisite"])
    light = WeaknessTarget(kind=WeaknessKind.BRITTLE_PARAMETERS, weight=1.0)
    slots = allocate([light, heavy], 8)
    assert [t.kind for t in slots if t] == [heavy.kind] * 6 + [light.kind] * 2
    assert allocate([], 2) == [None, None]


def test_isolated_knobs_turn_on_only_the_primary_target_and_scale_with_complexity():
    domain = get_domain(DOMAIN)
    primary = WeaknessTarget(kind="wrong_id", weight=1.0, focus_tags=["near_duplicate", "no_such_tag"],
                             knobs={"near_duplicate_rate": 0.3})
    other = WeaknessTarget(kind="stale_state", weight=5.0, knobs={"near_duplicate_rate": 0.01, "stale_rate": 0.3})
    request = VariantRequest(domain=DOMAIN, targets=[other, primary], complexity=5)
    knobs = variant_knobs(request, primary, domain, {"near_duplicate", "prerequisite"}, 2)
    assert knobs["near_duplicate_rate"] == 0.5  # the primary's 0.3 scaled by 5/3, capped
    assert knobs["stale_rate"] == 0.0 and knobs["fault_rate"] == 0.0 and knobs["legacy_format_rate"] == 0.0
    assert knobs["focus_tags"] == ["near_duplicate"]
    assert knobs["heldout_fraction"] == 0.0
    unknown = primary.model_copy(update={"knobs": {"near_duplicate_rate": 0.3, "unknown_knob": 1}})
    with pytest.raises(ValueError, match="knob 'unknown_knob': gym 'tracker' does not know"):
        variant_knobs(request, unknown, domain, set(), 2)
    low = variant_knobs(request.model_copy(update={"complexity": 1}), primary, domain, set(), 2)
    assert low["near_duplicate_rate"] == 0.1 and low["fault_rate"] == 0.0
    untargeted = variant_knobs(VariantRequest(domain=DOMAIN, complexity=1), None, domain, set(), 2)
    assert untargeted["fault_rate"] == 0.05 and untargeted["stale_rate"] == 0.04


def test_targeted_variants_concentrate_on_the_weakness(local_factory: LocalFactory):
    request = small_request(targets=[WeaknessTarget(kind="missed_policy_dependency", focus_tags=["prerequisite"],
                                                    knobs={"prerequisite_depth": 3})],
                            variants=1, tasks_per_variant=4, gate=GateConfig(k=1, band_min=0, band_max=1))
    result = local_factory.request(request, timeout=120)
    tags = [t.tags for p in result.packs for t in p.tasks]
    assert tags and all("prerequisite" in t for t in tags)
    assert result.packs[0].manifest.knobs["prerequisite_depth"] == 3


def test_isolated_variant_pack_turns_on_only_its_targeted_knob(local_factory: LocalFactory):
    target = WeaknessTarget(kind="brittle_parameters", focus_tags=["legacy_format"], knobs={"legacy_format_rate": 0.4},
                            domain=DOMAIN, tool="release_version")
    # The tracker's release prompts differ only in project key and date, so the near-duplicate gate would reject
    # them against whichever release tasks the base pack holds out; this test is about knobs (the leakage gate has
    # its own tests), so it admits every prompt that is not the same text.
    request = small_request(targets=[target], variants=1, tasks_per_variant=3,
                            gate=GateConfig(k=1, band_min=0, band_max=1, near_duplicate_jaccard=1.0,
                                            near_duplicate_ratio=1.0))
    result = local_factory.request(request, timeout=120)
    knobs = result.packs[0].manifest.knobs
    traps = {k: v for k, v in knobs.items() if k.endswith("_rate")}
    assert traps["legacy_format_rate"] == 0.4
    assert {k for k, v in traps.items() if v} == {"legacy_format_rate"}
    assert all("legacy_format" in t.tags for t in result.packs[0].tasks)
    assert any("release_version" in {s.tool for s in t.gold.steps} for t in result.packs[0].tasks)


def test_targets_from_a_weakness_report_dict():
    report = {
        "weaknesses": [
            {"kind": "wrong_id", "label": "x", "description": "y", "rank": 2, "impact": 0.0, "share": 0.2,
             "share_interval": {"low": 0.1, "high": 0.3}, "mean_reward_lost": 0.5, "learnability": 0.5,
             "count": 3, "domains": ["helpdesk"], "knobs": {"near_duplicate_rate": 0.3},
             "focus_tags": ["near_duplicate"], "evidence": [{"step": 1, "tool": "get_user", "note": "name as id"}]},
            {"kind": "missed_policy_dependency", "label": "x", "description": "y", "rank": 1, "impact": 0.4,
             "share": 0.5, "share_interval": {"low": 0.4, "high": 0.6}, "mean_reward_lost": 0.8,
             "learnability": 0.6, "count": 5, "domains": [DOMAIN], "tools": ["set_issue_security"]},
        ]
    }
    targets = targets_from_report(report)
    assert [(t.kind, t.weight) for t in targets] == [("missed_policy_dependency", 0.4), ("wrong_id", 0.2)]
    assert targets[1].evidence[0].tool == "get_user" and targets[1].knobs == {"near_duplicate_rate": 0.3}
    assert [t.kind for t in targets_from_report(report, domain=DOMAIN)] == ["missed_policy_dependency"]


def test_published_openapi_schema_is_current():
    assert json.loads(DOCS.read_text()) == json.loads(json.dumps(openapi_schema())), (
        "docs/factory-openapi.json is stale: run `gymloop factory openapi`"
    )

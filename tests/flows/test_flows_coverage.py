"""A campaign's factory step asks first for variants of the grains its pool cannot practise."""

from datetime import UTC, datetime

from arena.core.pack import build_pack
from factory_client._synth import ISOLATED_OFF
from flows.settings import GymloopSettings
from flows.variants import generate_variants
from registry import ModelInfo
from tests.curriculum.test_curriculum_coverage import DOMAIN, UNCOVERED, report_with_two_equal_grains, without_tool


def test_a_campaign_asks_for_an_isolated_variant_of_the_grain_its_pool_lacks(gymloop_home):
    base = build_pack(DOMAIN, seed=0)
    settings = GymloopSettings(home=gymloop_home, domains=[DOMAIN], variants_per_round=1, tasks_per_variant=4)
    model = ModelInfo(id=1, name="m", version="0", kind="reference", parent_id=None, artifact=None, endpoint=None,
                      params_hash="h", details={}, created_at=datetime.now(UTC))
    results = generate_variants(settings, report_with_two_equal_grains(), [base], model, round_index=0,
                                pool=[without_tool(base, UNCOVERED)])
    packs = [p for r in results for p in r.packs]
    assert len(packs) == 1
    variant = packs[0]
    assert variant.manifest.provenance["targets"][0]["tool"] == UNCOVERED
    # the factory gated situations the pool lacks first (which of them the baseline band keeps depends on the
    # baseline's episodes, whose randomness derives from the pack id)
    candidate = build_pack(DOMAIN, seed=variant.manifest.seed, knobs=variant.manifest.knobs)
    gated = [r.task_id for r in results[0].gate_report.rejections] + [t.id for t in variant.tasks]
    assert UNCOVERED in {s.tool for s in candidate.task(gated[0]).gold.steps}
    traps = {name: value for name, value in variant.manifest.knobs.items() if name in ISOLATED_OFF}
    assert traps and all(value == 0.0 for value in traps.values())  # isolated: unrequested traps off

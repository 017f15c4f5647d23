"""The curriculum bench's targeted arm plans a round exactly as a campaign's round does."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.agents.reference import PolicyParams
from arena.core.pack import build_pack
from bench.curriculum_arms import Cell, LoopSettings
from curriculum import History, task_refs
from factory_client import LocalFactory
from flows.models import RoundParams
from flows.rollouts import EVAL_BEFORE
from flows.round import curriculum_round
from flows.settings import SECTION_OF, load_settings
from flows.waves import wave_entries
from registry import Registry

pytestmark = pytest.mark.timeout(1200)  # a whole round, slower on a loaded machine

DOMAINS = ["procurement"]
LOOP = LoopSettings(budget=24, k=4, variants_per_round=2, tasks_per_variant=4, credit="decision")
"""The bench's declared loop, on one gym."""


def _overrides(home: Path) -> dict[str, object]:
    settings = LOOP.campaign("targeted", 0, home, DOMAINS)
    names = ("domains", "seed", "arm", "strategy", "wave_budget", "train_k", "variants_per_round",
             "tasks_per_variant", "gate_k", "gate_band_min", "gate_band_max", "credit", "trainer")
    return {"eval_k": 1, "batch_size": 200, **{n: getattr(getattr(settings, SECTION_OF[n]), n) for n in names}}


def test_the_bench_targeted_arm_and_a_round_give_the_same_wave(prefect_harness, gymloop_home):
    overrides = _overrides(gymloop_home)
    curriculum_round(RoundParams(campaign="same-wave", round_index=0, overrides=overrides))
    settings = load_settings(**overrides)
    registry = Registry(settings.resolved_registry_url())
    round_info = registry.rounds(registry.campaign("same-wave").id)[0]
    held = registry.round_episodes(round_info.id, stage=EVAL_BEFORE)
    round_wave = registry.wave(round_info.id)
    assert held and round_wave is not None and round_wave.entries

    base = [build_pack(d, seed=0) for d in DOMAINS]
    factory = LocalFactory()
    try:
        cell = Cell(base, [], task_refs(base), PolicyParams.initial(), factory)
        planned = cell.plan_round(LOOP.campaign("targeted", 0, gymloop_home / "bench", DOMAINS), held, None,
                                  task_refs(base), History(), PolicyParams.initial(), 0)
    finally:
        factory.close()
    assert planned.variants, "the targeted arm asked the factory for variants, as the round did"
    bench_wave = [(e.pack_id, e.task_id, round(e.weight, 9), e.reason) for e in wave_entries(planned.wave)]
    recorded = [(e.pack_id, e.task_id, round(e.weight, 9), e.reason) for e in round_wave.entries]
    assert bench_wave == recorded
    assert any(e.source == "targeted" for e in planned.wave.entries)
    assert {v.id for v in planned.variants} <= {p.id for p in registry.list_packs()}

from __future__ import annotations

import pytest
from factory_helpers import DOMAIN, GoldReplayAgent, small_request

from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from factory_client import GateConfig, GateReport, HeldoutIndex, LocalFactory, QualityGate, token_jaccard


@pytest.fixture(scope="module")
def candidates() -> Pack:
    return build_pack(DOMAIN, seed=21, knobs={"tasks_per_template": 1, "focus_tags": ["prerequisite"],
                                              "heldout_fraction": 0.0})


@pytest.mark.parametrize(("passes", "accepted"), [(1, False), (3, True), (5, False)])
def test_baseline_band(candidates: Pack, base_pack: Pack, passes: int, accepted: bool):
    gate = QualityGate(GateConfig(), HeldoutIndex(base_pack.tasks), GoldReplayAgent(passes, [candidates]))
    report = GateReport()
    task = next(t for t in candidates.tasks if HeldoutIndex(base_pack.tasks).leak(t, GateConfig()) is None)
    with Gym(candidates) as gym:
        assert gate.check(gym, task, variant=0, report=report) is accepted
    assert report.baseline_passes == {str(passes): 1}
    assert report.gates["baseline_band"].accepted == int(accepted)
    if not accepted:
        assert report.rejections[0].gate == "baseline_band"
        assert f"passed {passes} of 5" in report.rejections[0].reason


def test_band_is_configurable(candidates: Pack, base_pack: Pack):
    gate = QualityGate(GateConfig(k=3, band_min=3, band_max=3), HeldoutIndex(base_pack.tasks),
                       GoldReplayAgent(5, [candidates]))
    task = next(t for t in candidates.tasks if HeldoutIndex(base_pack.tasks).leak(t, GateConfig()) is None)
    with Gym(candidates) as gym:
        assert gate.check(gym, task, variant=0, report=GateReport())
    with pytest.raises(ValueError, match="band"):
        GateConfig(k=5, band_min=4, band_max=6)


def test_copied_heldout_task_is_refused(base_pack: Pack):
    heldout = next(t for t in base_pack.tasks if t.split == "heldout")
    copy = heldout.model_copy(update={"id": "copied", "split": "train", "tags": ["renamed"]})
    reason = HeldoutIndex(base_pack.tasks).leak(copy, GateConfig())
    assert reason is not None and "same content hash" in reason and heldout.id in reason


def test_near_duplicate_prompt_is_refused(base_pack: Pack):
    heldout = next(t for t in base_pack.tasks if t.split == "heldout" and len(t.prompt.split()) >= 12)
    words = heldout.prompt.split()
    words[-1] = words[-1].upper() + "!"
    twin = heldout.model_copy(update={"id": "twin", "split": "train", "prompt": "Please, " + " ".join(words)})
    reason = HeldoutIndex(base_pack.tasks).leak(twin, GateConfig())
    assert reason is not None and "near-duplicate" in reason and heldout.id in reason
    unrelated = heldout.model_copy(update={"prompt": "Summarize last quarter's travel expenses by region."})
    assert HeldoutIndex(base_pack.tasks).leak(unrelated, GateConfig()) is None
    assert token_jaccard("Close ABC-1 now", "close abc 1 now!") == 1.0


def test_leaked_task_is_reported_by_the_gate(base_pack: Pack):
    heldout = next(t for t in base_pack.tasks if t.split == "heldout")
    gate = QualityGate(GateConfig(), HeldoutIndex(base_pack.tasks), GoldReplayAgent(3, [base_pack]))
    report = GateReport()
    with Gym(base_pack) as gym:
        assert not gate.check(gym, heldout, variant=4, report=report)
    assert report.rejections[0].gate == "no_leakage" and report.rejections[0].variant == 4
    assert report.gates["no_leakage"].rejected == 1 and report.gates["gold_passes"].checked == 0


def test_gold_failure_and_null_pass_are_refused(candidates: Pack, base_pack: Pack):
    gate = QualityGate(GateConfig(), HeldoutIndex([]), GoldReplayAgent(3, [candidates]))
    task = candidates.tasks[0]
    broken = task.model_copy(update={"gold": task.gold.model_copy(update={"steps": [], "reply": ""})})
    report = GateReport()
    with Gym(candidates) as gym:
        assert not gate.check(gym, broken, variant=0, report=report)
    assert report.rejections[0].gate == "gold_passes" and "gold program fails" in report.rejections[0].reason


def test_local_factory_applies_the_band_and_reports_dropped_variants():
    factory = LocalFactory(baseline=GoldReplayAgent(0))
    try:
        packs, report = factory.generate(small_request(variants=1, tasks_per_variant=2, gate=GateConfig()))
        assert packs == [] and report.accepted == 0 and report.candidates >= 1
        assert report.baseline_passes.get("0", 0) == report.gates["baseline_band"].checked >= 1
        assert all(r.gate in ("baseline_band", "no_leakage") for r in report.rejections)
        assert "no candidate task passed" in report.dropped_variants[0].reason
        packs, report = factory.generate(small_request(variants=1, tasks_per_variant=2,
                                                       gate=GateConfig(band_min=0, band_max=4)))
        assert len(packs) == 1 and len(packs[0][1].tasks) == 2 and report.accepted == 2
    finally:
        factory.close()

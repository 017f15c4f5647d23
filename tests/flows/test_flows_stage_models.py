"""A stage holds one model's episodes: a resumed round whose model changed, or whose trained model is gone, does
the stage again whole and says so; every stage that does not depend on it is left as it finished.

Each test finishes a small round, then puts the registry in the state a kill in ``eval_after`` leaves (the round
``interrupted``, the re-evaluation not finished) plus the change under test, and resumes the round.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import SMALL

from arena.agents.reference import PolicyParams
from flows.campaign import next_round
from flows.models import CampaignParams, RoundParams
from flows.outcomes import outcomes
from flows.registered_models import model_ref, register_ref
from flows.round import curriculum_round
from flows.settings import load_settings
from registry import Registry, StageDone
from trainers import save_reference

KEPT = ("eval_before", "diagnose", "generate", "plan", "train")
"""Stages that do not depend on the trained model."""

ROUND = {**SMALL, "variants_per_round": 0, "wave_budget": 60}
"""A small round: no variants, a wave of 10 tasks."""


def _killed_in_eval_after(campaign: str) -> tuple[Registry, int, dict[str, object]]:
    (summary,) = next_round(CampaignParams(campaign=campaign, overrides=ROUND)).rounds
    registry = Registry(load_settings(**ROUND).resolved_registry_url())
    rid = summary.round_id
    finished = {name: info.finished_at for name, info in registry.stages(rid).items()}
    registry.reset_stages(rid, ["eval_after"])
    registry.fail_round(rid, "killed", status="interrupted")
    return registry, rid, finished


def test_a_trained_model_is_restored_from_the_registry_and_trained_again_when_gone(prefect_harness, gymloop_home,
                                                                                  caplog):
    registry, rid, finished = _killed_in_eval_after("gone")
    out = registry.model(registry.round(rid).model_out_id or 0)
    assert out.artifact is not None
    Path(out.artifact).unlink()  # this machine lacks the file: the registry has the parameters
    summary = curriculum_round(RoundParams(campaign="gone", round_index=0, overrides=ROUND))
    assert Path(out.artifact).is_file() and registry.stages(rid)["train_model"].finished_at == finished["train_model"]
    assert summary.episodes["eval_after"].reused == summary.episodes["eval_after"].planned

    registry.reset_stages(rid, ["eval_after"])
    registry.fail_round(rid, "killed", status="interrupted")
    gone = registry.register_model(out.name, "1-gone", kind="reference", parent_id=out.parent_id,
                                   artifact=str(gymloop_home / "models" / "nowhere.json"), params_hash="0" * 16)
    registry.finish_stage(rid, StageDone(stage="train_model", model_id=gone.id))  # a model no machine has now
    with caplog.at_level(logging.WARNING):
        summary = curriculum_round(RoundParams(campaign="gone", round_index=0, overrides=ROUND))
    said = [r.getMessage() for r in caplog.records if "is gone" in r.getMessage()]
    assert said == [f"campaign gone round 0: the trained model {model_ref(gone).ref} is gone ({gone.artifact} "
                    "does not exist): training again"]
    assert registry.round(rid).model_out_id == out.id, "the same training, redone, gives the same model"
    stages = registry.stages(rid)
    assert all(stages[name].finished_at == finished[name] for name in KEPT)
    assert stages["train_model"].finished_at != finished["train_model"]
    assert summary.episodes["eval_after"].reused == summary.episodes["eval_after"].planned, \
        "episodes of the same model were played again"


def test_a_stage_of_another_model_is_played_again_whole(prefect_harness, gymloop_home, caplog):
    registry, rid, finished = _killed_in_eval_after("other")
    info = registry.round(rid)
    old = registry.model(info.model_out_id or 0)
    played = sum(registry.stage_models(rid, "eval_after").values())
    params = PolicyParams.load(old.artifact or "")
    key = sorted(params.logits)[0]
    changed = params.model_copy(update={"logits": {**params.logits, key: {s: v + 1.0 for s, v in
                                                                           params.logits[key].items()}}})
    other = register_ref(registry, save_reference(changed, gymloop_home / "models"), info.model_in_id)
    assert other.id != old.id
    registry.finish_stage(rid, StageDone(stage="train_model", model_id=other.id))  # the trainer ran again
    with caplog.at_level(logging.WARNING):
        summary = curriculum_round(RoundParams(campaign="other", round_index=0, overrides=ROUND))
    said = [r.getMessage() for r in caplog.records if "played again whole" in r.getMessage()]
    assert said == [f"campaign other round 0: eval_after holds episodes of another model ({played} of "
                    f"{model_ref(old).ref}), not of {model_ref(other).ref} that it must play now: the "
                    "stage is played again whole"]
    assert registry.stage_models(rid, "eval_after") == {other.id: summary.episodes["eval_after"].planned}
    assert summary.episodes["eval_after"].ran == summary.episodes["eval_after"].planned
    assert registry.round(rid).model_out_id == other.id and summary.model_out == model_ref(other).ref
    stages = registry.stages(rid)
    assert all(stages[name].finished_at == finished[name] for name in KEPT)
    after = outcomes(registry, rid, "eval_after", other.id)
    assert summary.after == pytest.approx(sum(o.passed for o in after if not o.invalid) /
                                          max(1, sum(1 for o in after if not o.invalid)))

"""Training the round's model on its wave's rollouts with the configured trainer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from curriculum import Wave
from flows.registered_models import model_ref
from flows.settings import GymloopSettings
from flows.weaknesses import rollout_blame
from registry import ModelInfo
from trainers import GRPOConfig, GRPOTrainer, ModelRef, TRLTrainer, get_trainer


def train_builtin(settings: GymloopSettings, ref: ModelRef, wave: Wave, records: Sequence[EpisodeRecord],
                  packs: Sequence[Pack], out_dir: Path, learning_rate: float | None = None) -> ModelRef:
    """The builtin trainer's step with the settings' credit (diagnosing the rollouts for per-decision credit).

    Args:
        settings: The campaign's settings (``credit``).
        ref: The model to train.
        wave: The wave the rollouts played.
        records: The wave's rollouts.
        packs: Packs holding the rollouts' tasks (the detectors read them).
        out_dir: Where the new parameters are written.
        learning_rate: The trainer's learning rate (default: the trainer's).
    """
    config = GRPOConfig(credit=settings.training.credit,
                        **({} if learning_rate is None else {"learning_rate": learning_rate}))
    blame = rollout_blame(records, packs) if settings.training.credit == "decision" else None
    return GRPOTrainer(out_dir, config).train(ref, wave, records, blame=blame)


def train(settings: GymloopSettings, model: ModelInfo, wave: Wave, records: Sequence[EpisodeRecord],
          packs: Sequence[Pack], out_dir: Path) -> ModelRef:
    """Train the model on the wave's rollouts with the configured trainer."""
    ref = model_ref(model)
    if settings.training.trainer == "builtin":
        return train_builtin(settings, ref, wave, records, packs, settings.store.home / "models")
    if settings.training.trainer == "trl":
        return TRLTrainer(settings.store.home / "models", list(packs), settings.training.trl).train(ref, wave, records)
    if settings.training.trainer == "export":
        return get_trainer("export", out_dir=out_dir / "dataset", packs=list(packs)).train(ref, wave, records)
    return get_trainer("command", command=settings.training.trainer_command, workdir=out_dir / "train",
                       packs=list(packs)).train(ref, wave, records)

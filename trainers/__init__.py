"""Trainers: the built-in group-relative policy gradient, dataset export, and a user's training command."""

from trainers.base import Trainer, get_trainer, register_trainer, trainer_names
from trainers.command import CommandTrainer
from trainers.credit import Blame, careless_choices, named_decisions
from trainers.export import ExportSummary, ExportTrainer, export_dataset
from trainers.grpo import GRPOConfig, GRPOTrainer, TrainStats, load_reference, save_reference
from trainers.models import ModelKind, ModelRef, TrainerError
from trainers.trl import TRLConfig, TRLStats, TRLTrainer

__all__ = [
    "Blame",
    "CommandTrainer",
    "ExportSummary",
    "ExportTrainer",
    "GRPOConfig",
    "GRPOTrainer",
    "ModelKind",
    "ModelRef",
    "TRLConfig",
    "TRLStats",
    "TRLTrainer",
    "TrainStats",
    "Trainer",
    "TrainerError",
    "careless_choices",
    "export_dataset",
    "get_trainer",
    "load_reference",
    "named_decisions",
    "register_trainer",
    "save_reference",
    "trainer_names",
]

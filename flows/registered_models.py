"""The trainers' and the agents' view of registered models."""

from __future__ import annotations

import json
from pathlib import Path

from arena.agents.base import Agent
from flows import model_spec
from flows.settings import GymloopSettings
from registry import ModelInfo, Registry
from trainers import ModelRef


def model_ref(info: ModelInfo) -> ModelRef:
    """The trainers' view of a registered model."""
    kind = info.kind if info.kind in ("reference", "litellm", "external", "transformers") else "external"
    return ModelRef(name=info.name, version=info.ref.version or 0, kind=kind, artifact=info.artifact,
                    endpoint=info.endpoint, params_hash=info.params_hash)


def register_ref(registry: Registry, ref: ModelRef, parent_id: int | None) -> ModelInfo:
    """Register a trainer's model reference (idempotent for the same name, version and content).

    A reference policy's parameters (a few KB) are kept with the model, so a machine without its file can play it.
    """
    details = ({"params": json.loads(Path(ref.artifact).read_text())}
               if ref.kind == "reference" and ref.artifact and Path(ref.artifact).is_file() else {})
    return registry.register_model(ref.name, ref.registry_version, kind=ref.kind, parent_id=parent_id,
                                   artifact=ref.artifact, endpoint=ref.endpoint, params_hash=ref.params_hash,
                                   details=details)


def initial_model(registry: Registry, settings: GymloopSettings) -> ModelInfo:
    """Register the campaign's starting model (any form of the ``model`` setting, see ``flows.model_spec``)."""
    return model_spec.register_start(registry, settings)


def make_agent(info: ModelInfo, settings: GymloopSettings, *, sampled: bool = False) -> Agent:
    """The agent playing a registered model.

    Args:
        info: The model.
        settings: The campaign's settings.
        sampled: The agent plays training rollouts (or the gate's baseline attempts): a local checkpoint samples
            with ``local_train_sampling``; otherwise it decodes with ``local_eval_sampling`` (greedy by default).
    """
    return model_spec.agent_for_model(info, settings, sampled=sampled)

"""The models a factory accepts as ``baseline_model``: every name gymloop prints, looked up where the factory runs.

A request names a model as gymloop prints it (``arena.core.model_id``); the factory never reads a path a request
gives. Built-in policies need nothing (``factory_client.gate``); a registered version (``reference@v3:<hash>``,
``hosted_vllm/m@v0``, ``my-checkpoint@v1:<hash>``) is found in the registry and played as rounds play it; a name
of a parameter file in the gymloop home's ``models`` folder plays those parameters. The embedded factory of
``gymloop factory request`` also plays every other form ``--model`` takes (an LLM, a checkpoint folder): the user
names their own model. A served factory (``gymloop factory serve``) plays only what its registry and models folder
hold: a remote request can name neither a folder nor an endpoint of its choosing.
"""

from __future__ import annotations

from arena.agents.base import Agent
from arena.core.model_id import ModelId, parse_model_id
from factory_client.gate import BaselineLookup, ModelsFolder
from flows import model_spec
from flows.preflight import PreflightError
from flows.registry_access import open_registry
from flows.settings import GymloopSettings
from registry import RegistryError


def baseline_lookup(settings: GymloopSettings, *, served: bool) -> BaselineLookup:
    """Find ``baseline_model`` in the registry and the models folder (and, unless ``served``, play any model).

    Args:
        settings: Where the registry and the models folder are, and how models play (key, endpoint, sampling).
        served: The factory answers remote requests: only models its registry or models folder holds play.
    """
    folder = ModelsFolder(settings.store.home / "models")

    def lookup(name: str) -> Agent | None:
        model = parse_model_id(name, api_base=None if served else settings.models.api_base)
        if model.form == "registered":
            return _registered(settings, model)
        agent = folder(name)
        if agent is not None or served:
            return agent
        try:
            return model_spec.check(model, settings, sampled=True)
        except PreflightError as exc:
            raise ValueError(str(exc)) from exc

    return lookup


def _registered(settings: GymloopSettings, model: ModelId) -> Agent | None:
    try:
        info = open_registry(settings).find_registered(model)
    except RegistryError:  # an unreachable registry knows no model: the request is refused like any unknown one
        return None
    if info is None:
        return None
    return model_spec.agent_for_model(info, settings, sampled=True)

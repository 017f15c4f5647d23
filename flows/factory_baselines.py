"""The model references a served or local factory accepts as ``baseline_model``: its models folder and registry.

A request names a model; the factory never reads a path a request gives. It finds the name among the parameter
files of the gymloop home's ``models`` folder (by file name) or among the registry's reference-policy models
(``name@version``, as ``gymloop`` prints them).
"""

from __future__ import annotations

from arena.agents.reference import PolicyParams
from factory_client.gate import BaselineLookup, ModelsFolder
from flows.settings import GymloopSettings


def baseline_lookup(settings: GymloopSettings) -> BaselineLookup:
    """Look ``baseline_model`` up in the models folder, then in the registry (opened on first use)."""
    folder = ModelsFolder(settings.home / "models")

    def lookup(name: str) -> PolicyParams | None:
        params = folder(name)
        if params is not None or "@" not in name:
            return params
        return _registered(settings, name)

    return lookup


def _registered(settings: GymloopSettings, ref: str) -> PolicyParams | None:
    from flows.registry_access import open_registry

    name, _, version = ref.partition("@")
    try:
        registry = open_registry(settings)
        info = registry.find_model(name, version) or registry.find_model(name, version.removeprefix("v"))
    except Exception:  # an unreachable registry knows no model: the request is refused like any unknown one
        return None
    if info is None or info.kind != "reference" or not info.artifact:
        return None
    try:
        return PolicyParams.load(info.artifact)
    except ValueError:
        return None

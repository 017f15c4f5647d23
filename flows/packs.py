"""The campaign's packs: built once per process, added to the registry once, loaded from it once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from arena.core.pack import Pack, build_pack
from flows.focus import check_focus
from flows.settings import GymloopSettings
from registry import Registry


def built_pack(domain: str, seed: int, knobs: Mapping[str, Any] | None = None) -> Pack:
    """A gym's generated pack, built once per process (packs are deterministic in their domain, seed and knobs).

    Raises:
        ValueError: A knob's value the gym refuses, naming the gym, the knob and the value.
    """
    return _built_pack(domain, seed, json.dumps(dict(knobs or {}), sort_keys=True))


@cache
def _built_pack(domain: str, seed: int, knobs: str) -> Pack:
    return build_pack(domain, seed=seed, knobs=json.loads(knobs) or None)


def gym_pack(settings: GymloopSettings, domain: str) -> Pack:
    """A gym's base pack: seed 0, with the gym's knobs of the ``gym_knobs`` setting."""
    return built_pack(domain, 0, settings.gyms.gym_knobs.get(domain))


_ADDED: set[tuple[str, str]] = set()
_LOADED: dict[tuple[str, str], Pack] = {}


def add_pack(registry: Registry, pack: Pack) -> None:
    """Add a pack to the registry (once per process and registry; adding is idempotent anyway)."""
    key = (registry.display_url, pack.id)
    if key not in _ADDED:
        registry.add_pack(pack)
        _ADDED.add(key)
        _LOADED[key] = pack


def load_pack(registry: Registry, pack_id: str) -> Pack:
    """A registered pack, validated on first load and then kept for the process (packs are content-addressed)."""
    key = (registry.display_url, pack_id)
    if key not in _LOADED:
        _LOADED[key] = registry.load_pack(pack_id)
    return _LOADED[key]


def base_packs(registry: Registry, settings: GymloopSettings) -> list[Pack]:
    """The campaign's base packs (seed 0 of each domain, its ``gym_knobs``), added to the registry once.

    Raises:
        ValueError: A pattern of ``settings.gyms.tasks`` chooses no task of these packs (``flows.focus``).
    """
    packs = [gym_pack(settings, domain) for domain in settings.gyms.domains]
    check_focus(packs, settings.gyms.tasks)
    for pack in packs:
        add_pack(registry, pack)
    return packs

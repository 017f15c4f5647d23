"""The campaign's packs: built once per process, added to the registry once, loaded from it once."""

from __future__ import annotations

from functools import cache

from arena.core.pack import Pack, build_pack
from flows.focus import check_focus
from flows.settings import GymloopSettings
from registry import Registry


@cache
def built_pack(domain: str, seed: int) -> Pack:
    """A gym's generated pack, built once per process (packs are deterministic in their domain and seed)."""
    return build_pack(domain, seed=seed)


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
    """The campaign's base packs (seed 0 of each domain), added to the registry once.

    Raises:
        ValueError: A pattern of ``settings.gyms.tasks`` chooses no task of these packs (``flows.focus``).
    """
    packs = [built_pack(domain, 0) for domain in settings.gyms.domains]
    check_focus(packs, settings.gyms.tasks)
    for pack in packs:
        add_pack(registry, pack)
    return packs

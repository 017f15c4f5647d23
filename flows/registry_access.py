"""Opening the settings' registry, apart from the round steps.

Commands that only read the registry (``gymloop campaigns``, ``episode``, ``registry status``) open it through
this module, so they do not import the whole round (rollouts, diagnosis, the factory client, the trainers).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from flows.store_setup import store_setup_lock
from registry import Registry

if TYPE_CHECKING:
    from flows.settings import GymloopSettings


@cache
def _registry(url: str, home: str) -> Registry:
    with store_setup_lock(url):
        return Registry(url, home)


def open_registry(settings: GymloopSettings) -> Registry:
    """Open (once per process) the settings' registry and its pack store under the gymloop home."""
    return _registry(settings.resolved_registry_url(), str(settings.store.home))

"""The gym runtime, the bottom room of ``arena``: everything one episode needs, and nothing above it.

A gym is a :class:`Domain` (tools, policy, a seeded world generator) turned into a :class:`Pack` (data: a
starting world, tasks, tool specs, faults); a :class:`Gym` plays one episode of a pack's task at a time and judges
it into a :class:`Verdict`; an :class:`EpisodeRecord` keeps the episode. Gyms are found by name in the registry
(:func:`get_domain`, :func:`register_domain`). The names below are imported on first use, so importing one module
of the runtime does not load the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.core.domain import Domain, FaultSpec, Knobs, World
    from arena.core.domains import BUILTIN_DOMAINS, available_domains, get_domain, register_domain
    from arena.core.episode import EpisodeFailure, EpisodeRecord, episode_id
    from arena.core.gym import EnvironmentFailure, Gym, Observation
    from arena.core.metrics import Metrics, compute_metrics, paired_lift
    from arena.core.pack import Pack, PackError, build_pack, parse_pack, read_pack, write_pack
    from arena.core.results import AssertionResult, ToolResult, TraceStep, Verdict
    from arena.core.task import Intent, Persona, Split, Task
    from arena.core.toolkit import ToolContext, ToolError, ToolSpec, collect_tools, tool
    from arena.core.weakness import DETECTOR_KINDS, WeaknessKind

_HOMES = {
    "arena.core.domain": ("Domain", "FaultSpec", "Knobs", "World"),
    "arena.core.domains": ("BUILTIN_DOMAINS", "available_domains", "get_domain", "register_domain"),
    "arena.core.episode": ("EpisodeFailure", "EpisodeRecord", "episode_id"),
    "arena.core.gym": ("EnvironmentFailure", "Gym", "Observation"),
    "arena.core.metrics": ("Metrics", "compute_metrics", "paired_lift"),
    "arena.core.pack": ("Pack", "PackError", "build_pack", "parse_pack", "read_pack", "write_pack"),
    "arena.core.results": ("AssertionResult", "ToolResult", "TraceStep", "Verdict"),
    "arena.core.task": ("Intent", "Persona", "Split", "Task"),
    "arena.core.toolkit": ("ToolContext", "ToolError", "ToolSpec", "collect_tools", "tool"),
    "arena.core.weakness": ("DETECTOR_KINDS", "WeaknessKind"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "AssertionResult",
    "BUILTIN_DOMAINS",
    "DETECTOR_KINDS",
    "Domain",
    "EnvironmentFailure",
    "EpisodeFailure",
    "EpisodeRecord",
    "FaultSpec",
    "Gym",
    "Intent",
    "Knobs",
    "Metrics",
    "Observation",
    "Pack",
    "PackError",
    "Persona",
    "Split",
    "Task",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "TraceStep",
    "Verdict",
    "WeaknessKind",
    "World",
    "available_domains",
    "build_pack",
    "collect_tools",
    "compute_metrics",
    "episode_id",
    "get_domain",
    "paired_lift",
    "parse_pack",
    "read_pack",
    "register_domain",
    "tool",
    "write_pack",
]


def __getattr__(name: str) -> Any:
    """Import a public name of the runtime from its module on first use."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'arena.core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

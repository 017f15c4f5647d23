"""The description of one blind agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from arena.agents.base import Agent


@dataclass(frozen=True)
class BlindAgent:
    """One agent of the blind set.

    Attributes:
        name: Unique name, ``<kind>.<style>``-like.
        injects: The weakness kind it injects (a key of ``diagnosis.knobs.KIND_TARGETS``), ``clean``, or
            ``novel:<short-name>``.
        domains: The gyms where its mistake can apply.
        make: Builds a fresh agent (an ``arena.agents.base.Agent``).
    """

    name: str
    injects: str
    domains: tuple[str, ...]
    make: Callable[[], Agent]

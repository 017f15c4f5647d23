"""The contract a built-in gym fulfils: its tools, its policy and its world generator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.core.domain_check import DomainCheck
from arena.core.results import FaultKind
from arena.core.task import Task
from arena.core.toolkit import Tool

Knobs = dict[str, Any]
"""Complexity layers of a world variant, by name (see each domain's README)."""

STRONG, WEAK = 3, 2
"""Edge weights of the tool dependency graph: strong (required first) and weak (usually first)."""


class FaultSpec(BaseModel):
    """An injected failure and its deterministic trigger.

    The fault fires on calls number ``on_call`` .. ``on_call + times - 1`` (from 1)
    of ``tool`` in any task that lists the fault's id.

    Attributes:
        id: Fault id, referenced by tasks.
        kind: ``timeout``, ``rate_limit`` or ``data_conflict``.
        tool: Tool whose calls it intercepts.
        on_call: First call number that fails.
        times: How many consecutive calls fail.
        retry_after: Seconds the error suggests waiting (rate limits).
        message: The error message the agent sees.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,80}$")
    kind: FaultKind
    tool: str
    on_call: int = Field(default=1, ge=1)
    times: int = Field(default=1, ge=1, le=10)
    retry_after: float | None = None
    message: str = ""


@dataclass(frozen=True)
class World:
    """What a domain generator produces for one seed and set of knobs.

    Attributes:
        state_db: The serialized SQLite starting world.
        tasks: Tasks over that world.
        faults: Faults the tasks may reference.
        clock_start: ISO datetime at which episodes start (the world's "now").
    """

    state_db: bytes
    tasks: list[Task]
    faults: list[FaultSpec]
    clock_start: str


@dataclass(frozen=True)
class Domain:
    """A built-in gym: tools looked up by name, the policy and the world generator.

    Attributes:
        name: Domain name, also the folder under ``arena/gyms/``.
        description: One line on what the gym replicates.
        tools: Tool implementations by name.
        policy: The business rules given to the agent (policy.md).
        dependencies: ``(before, after, weight)`` edges of the tool dependency
            graph; weight ``STRONG`` (3) or ``WEAK`` (2).
        generate: ``generate(seed, knobs) -> World``.
        knobs: Knob names the generator honours, with a description each.
        cannot: Knobs of the shared vocabulary (``arena.authoring.knobs.VOCABULARY``) the generator cannot
            honour, each with the reason; the factory refuses a request for them.
        not_applicable: For a gym that keeps another benchmark's verdict: ``not_applicable(task, check)`` says
            why a conformance check (``null_fails``, ``adversary:<name>``) cannot hold under that verdict on the
            task, or ``None`` when it can; the conformance checker reports the reason instead of a failure.
        checks: Checks the gym runs itself, by name, for its tasks' ``DomainAssertion`` s (see
            ``arena.core.domain_check``).
    """

    name: str
    description: str
    tools: dict[str, Tool]
    policy: str
    dependencies: list[tuple[str, str, int]]
    generate: Callable[[int, Knobs], World]
    knobs: dict[str, str] = field(default_factory=dict)
    cannot: dict[str, str] = field(default_factory=dict)
    not_applicable: Callable[[Task, str], str | None] | None = None
    checks: dict[str, DomainCheck] = field(default_factory=dict)

    def graph_data(self) -> dict[str, Any]:
        """Return the weighted tool dependency graph as networkx node-link data."""
        import networkx as nx

        graph: nx.DiGraph[str] = nx.DiGraph()
        graph.add_nodes_from(sorted(self.tools))
        for before, after, weight in self.dependencies:
            graph.add_edge(before, after, weight=weight)
        data: dict[str, Any] = nx.node_link_data(graph, edges="edges")
        return data



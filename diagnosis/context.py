"""What detectors may know beyond the trace: tool specs, the dependency graph and the tasks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.authoring.internal import InternalData, internal_data
from arena.core.task import Task
from arena.core.toolkit import ToolSpec

STRONG_WEIGHT = 3
"""Edge weight of a prerequisite the policy requires."""


@dataclass(frozen=True)
class ToolInfo:
    """What diagnosis needs to know about a tool, from its spec or from its name.

    Attributes:
        name: Tool name.
        mode: ``read`` or ``write``.
        operation: ``get``, ``search``, ... or ``action``.
        entity: Entity type, if any.
    """

    name: str
    mode: str
    operation: str
    entity: str | None


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


_WRITE_PREFIXES = ("create_", "update_", "delete_", "issue_", "add_", "set_", "assign_", "close_", "cancel_",
                   "escalate_", "approve_", "reject_", "send_", "apply_", "merge_", "move_", "remove_", "link_")


def infer_tool(name: str) -> ToolInfo:
    """Guess a tool's mode, operation and entity from the gym naming conventions (``get_E``, ``search_Es``)."""
    if name.startswith("get_"):
        return ToolInfo(name, "read", "get", name[4:])
    if name.startswith("search_"):
        return ToolInfo(name, "read", "search", _singular(name[7:]))
    if name.startswith("list_"):
        return ToolInfo(name, "read", "list", _singular(name[5:]))
    if name.startswith(_WRITE_PREFIXES):
        head, _, entity = name.partition("_")
        operation = head if head in ("create", "update", "delete") else "action"
        return ToolInfo(name, "write", operation, entity or None)
    return ToolInfo(name, "read", "action", None)


@dataclass
class DiagnosisContext:
    """Optional knowledge detectors read; every part may be empty.

    Attributes:
        tools: Tool specs by name (from the packs' ``tools.json``).
        prerequisites: For each tool, the tools that must come first (strong edges of the graph).
        tasks: Tasks by ``(pack_id, task_id)``.
        history: Past pass rate of each ``(pack_id, task_id)``, for learnability.
    """

    tools: dict[str, ToolSpec] = field(default_factory=dict)
    prerequisites: dict[str, list[str]] = field(default_factory=dict)
    tasks: dict[tuple[str, str], Task] = field(default_factory=dict)
    history: dict[tuple[str, str], float] = field(default_factory=dict)
    _info: dict[str, ToolInfo] = field(default_factory=dict, repr=False)
    _internal: dict[str, InternalData] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        tools: Iterable[ToolSpec] = (),
        graph: Mapping[str, Any] | None = None,
        tasks: Mapping[tuple[str, str], Task] | None = None,
        history: Mapping[tuple[str, str], float] | None = None,
    ) -> DiagnosisContext:
        """Build a context from tool specs, a node-link dependency graph, tasks and a pass-rate history.

        Args:
            tools: Tool specs of the packs diagnosed.
            graph: Weighted tool dependency graph as networkx node-link data; edges of weight 3
                are prerequisites.
            tasks: Tasks by ``(pack_id, task_id)``.
            history: Past pass rate (0..1) per ``(pack_id, task_id)``.

        Raises:
            ValueError: The graph is not node-link data, naming the missing key.
        """
        prerequisites: dict[str, list[str]] = {}
        if graph:
            edges = graph.get("edges", graph.get("links"))
            if not isinstance(edges, list):
                raise ValueError(f"dependency graph has no 'edges' or 'links' list (keys: {sorted(graph)})")
            for edge in edges:
                if not isinstance(edge, Mapping) or "source" not in edge or "target" not in edge:
                    raise ValueError(f"dependency graph edge {edge!r} lacks 'source' or 'target'")
                if int(edge.get("weight", 1)) >= STRONG_WEIGHT:
                    prerequisites.setdefault(str(edge["target"]), []).append(str(edge["source"]))
        return cls(
            tools={t.name: t for t in tools},
            prerequisites={k: sorted(v) for k, v in prerequisites.items()},
            tasks=dict(tasks or {}),
            history=dict(history or {}),
        )

    def tool(self, name: str) -> ToolInfo:
        """Return what is known of tool ``name``: its spec when given, else the naming conventions."""
        info = self._info.get(name)
        if info is None:
            spec = self.tools.get(name)
            if spec is None:
                info = infer_tool(name)
            else:
                guess = infer_tool(name)
                info = ToolInfo(name, spec.mode, spec.operation, spec.entity or guess.entity)
            self._info[name] = info
        return info

    def knows_tool(self, name: str) -> bool:
        """Whether ``name`` is a known tool (always true when no specs were given)."""
        return not self.tools or name in self.tools

    def get_tool_for(self, entity: str) -> str | None:
        """Return the ``get`` tool of ``entity``: from the specs, else by convention ``get_<entity>``."""
        for spec in self.tools.values():
            if spec.operation == "get" and spec.entity == entity:
                return spec.name
        return None if self.tools else f"get_{entity}"

    def internal(self, domain: str) -> InternalData:
        """What the gym called ``domain`` declares internal (``arena.authoring.internal``; the kit's rules too)."""
        found = self._internal.get(domain)
        if found is None:
            found = self._internal[domain] = internal_data(domain)
        return found

    def task(self, pack_id: str, task_id: str) -> Task | None:
        """Return the task ``(pack_id, task_id)`` if the caller supplied it."""
        return self.tasks.get((pack_id, task_id))

"""Variant synthesis for the local factory: targets to knobs, graph-guided task choice, pack assembly.

* **Variants per target, isolated.** Variants are shared among the targets in proportion to their
  weights (largest remainder, ties by kind); each variant has a primary target whose focus tags and
  knobs it turns on. Every other trap (``ISOLATED_OFF``: the messiness rates) is turned off, so the
  decision the target names is the one the variant exercises; other targets get variants of their own.
* **Complexity.** Level 3 is neutral: the primary target's rate knobs (``*_rate``) are scaled by
  ``complexity / 3`` and capped at ``MAX_RATE``. An untargeted variant (no targets) instead gets the
  world's messiness layers at ``COMPLEXITY_RATES[knob] * complexity``. The messiness layers are set only
  where the domain honours them; a target's own knob that the domain cannot honour refuses the request
  (``knob_refusals``), never silently dropped.
* **Task choice.** The tool dependency graph (networkx) scores each candidate task: tags shared
  with the primary target's focus tags, calling the tool of the primary target's grain (3 points),
  gold-program tools that are (or are strong prerequisites of) the tools named in the weakness
  evidence, and the longest strong-prerequisite chain the gold program walks (counted twice for
  ``missed_policy_dependency`` and ``gave_up_early``). Candidates are ordered by score, a repeated
  goal losing half a point per repeat so one template does not fill a pack, ties broken by a seeded hash.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import networkx as nx

from arena.authoring.knobs import knob_refusal
from arena.core.domain import STRONG, Domain, Knobs
from arena.core.pack import Pack
from arena.core.task import Task
from arena.core.weakness import WeaknessKind
from factory_client.protocol import VariantRequest, WeaknessTarget

COMPLEXITY_RATES: dict[str, float] = {
    "near_duplicate_rate": 0.04,
    "stale_rate": 0.04,
    "legacy_format_rate": 0.1,
    "fault_rate": 0.05,
}
"""Messiness added per complexity level to the knobs no target sets."""

ISOLATED_OFF: dict[str, float] = {name: 0.0 for name in COMPLEXITY_RATES}
"""Values of the traps an isolated (targeted) variant leaves off unless its primary target turns them on."""

MAX_RATE = 0.5
"""Highest rate knob value the factory asks for."""

CHAIN_KINDS = frozenset({WeaknessKind.MISSED_POLICY_DEPENDENCY, WeaknessKind.GAVE_UP_EARLY})
"""Weakness kinds for which deeper prerequisite chains count double."""


def variant_seed(seed: int, index: int) -> int:
    """The generator seed of variant ``index`` of a request with ``seed``."""
    digest = hashlib.sha256(f"gymloop-factory|{seed}|{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def allocate(targets: Sequence[WeaknessTarget], variants: int) -> list[WeaknessTarget | None]:
    """Give each variant a primary target, in proportion to the weights (largest remainder)."""
    if not targets:
        return [None] * variants
    order = sorted(targets, key=lambda t: (-t.weight, t.kind))
    total = sum(t.weight for t in order)
    quotas = [variants * t.weight / total for t in order]
    counts = [math.floor(q) for q in quotas]
    rest = sorted(range(len(order)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in rest[: variants - sum(counts)]:
        counts[i] += 1
    slots: list[WeaknessTarget | None] = []
    for target, n in zip(order, counts, strict=True):
        slots.extend([target] * n)
    return slots


def knob_refusals(domain: Domain, targets: Sequence[WeaknessTarget]) -> list[str]:
    """Why the targets' knobs cannot be honoured by ``domain``, one line per refused knob (empty: all honoured)."""
    out = []
    for target in targets:
        for name in sorted(target.knobs):
            reason = knob_refusal(domain, name)
            if reason is not None:
                out.append(f"weakness {target.kind!r} asks for knob {name!r}: {reason}")
    return out


def _scale(name: str, value: Any, complexity: int) -> Any:
    if name.endswith("_rate") and isinstance(value, int | float) and not isinstance(value, bool):
        return round(min(MAX_RATE, max(0.0, float(value) * complexity / 3.0)), 4)
    return value


def variant_knobs(
    request: VariantRequest, primary: WeaknessTarget | None, domain: Domain, known_tags: set[str],
    tasks_per_template: int,
) -> Knobs:
    """Knobs of one variant: the primary target's on and every other trap off, or the complexity layers.

    Raises:
        ValueError: The primary target asks for a knob the domain cannot honour, naming it and the reason.
    """
    supported = set(domain.knobs)
    knobs: Knobs = {}
    if primary is not None:
        refusals = knob_refusals(domain, [primary])
        if refusals:
            raise ValueError("; ".join(refusals))
        for name, value in primary.knobs.items():
            knobs[name] = _scale(name, value, request.complexity)
        for name, off in ISOLATED_OFF.items():
            if name in supported and name not in knobs:
                knobs[name] = off
    else:
        for name, per_level in COMPLEXITY_RATES.items():
            if name in supported:
                knobs[name] = round(min(MAX_RATE, per_level * request.complexity), 4)
    if primary is not None and "focus_tags" in supported:
        tags = [t for t in primary.focus_tags if t in known_tags]
        if tags:
            knobs["focus_tags"] = tags
    if "heldout_fraction" in supported:
        knobs["heldout_fraction"] = 0.0
    if "tasks_per_template" in supported:
        knobs["tasks_per_template"] = tasks_per_template
    return dict(sorted(knobs.items()))


def _graph(pack: Pack) -> nx.DiGraph[str]:
    graph: nx.DiGraph[str] = nx.DiGraph(nx.node_link_graph(pack.graph, directed=True, edges="edges"))
    return graph


def _strong(graph: nx.DiGraph[str]) -> nx.DiGraph[str]:
    strong: nx.DiGraph[str] = nx.DiGraph()
    strong.add_nodes_from(graph.nodes)
    strong.add_edges_from((a, b) for a, b, w in graph.edges(data="weight", default=1) if w >= STRONG)
    return strong


def _chain_length(strong: nx.DiGraph[str], tools: set[str]) -> int:
    sub = strong.subgraph(tools)
    if sub.number_of_edges() == 0 or not nx.is_directed_acyclic_graph(sub):
        return 0
    return int(nx.dag_longest_path_length(sub))


def rank_tasks(pack: Pack, request: VariantRequest, primary: WeaknessTarget | None, seed: int) -> list[Task]:
    """Order the pack's tasks toward the primary target (see the module docstring)."""
    graph = _graph(pack)
    strong = _strong(graph)
    targets = [primary] if primary is not None else []
    targets += [t for t in request.targets if t is not primary]
    focus = set(primary.focus_tags) if primary is not None else set()
    evidence_tools = {tool for t in targets for tool in [*t.tools, *(e.tool for e in t.evidence)] if tool in graph}
    reach: set[str] = set(evidence_tools)
    for tool in evidence_tools:
        reach |= nx.ancestors(strong, tool)
    chain_weight = 2.0 if primary is not None and primary.kind in CHAIN_KINDS else 1.0

    grain_tool = primary.tool if primary is not None else None

    def base_score(task: Task) -> float:
        tools = {s.tool for s in task.gold.steps}
        score = 2.0 * len(focus & set(task.tags))
        score += 3.0 if grain_tool is not None and grain_tool in tools else 0.0
        score += len(tools & reach)
        score += chain_weight * _chain_length(strong, tools & set(strong.nodes))
        return score

    def tiebreak(task: Task) -> str:
        return hashlib.sha256(f"{seed}|{task.id}".encode()).hexdigest()

    scored = sorted(pack.tasks, key=lambda t: (-base_score(t), tiebreak(t)))
    seen: dict[str, int] = {}
    adjusted: list[tuple[float, str, Task]] = []
    for task in scored:
        repeat = seen.get(task.intent.goal, 0)
        seen[task.intent.goal] = repeat + 1
        adjusted.append((base_score(task) - 0.5 * repeat, tiebreak(task), task))
    adjusted.sort(key=lambda item: (-item[0], item[1]))
    return [task for _, _, task in adjusted]

"""``make_domain``: a gym from its parts (world generator, tools, policy, templates, knobs) as one ``Domain``.

``Domain.generate(seed, knobs)`` then does the same for every kit gym: parse the knobs (:func:`parse_knobs`),
build the world, run every template with its own ``Random(f"{seed}:{template.name}")``, keep the chains
``prerequisite_depth`` allows, derive the gold program of drafts that leave it to the expert, add extra faults
(``fault_rate``), keep the focused tasks (``focus_tags``), inject each fault with the gold program's recovery, assign
splits (:func:`assign_splits`), add the gym's internal-data patterns and the reply rules to every response check.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic

from arena.authoring.faults import extra_fault, fault_id, inject
from arena.authoring.gold import dropped_steps, expert_gold, strong_edges
from arena.authoring.internal import InternalData, declare_internal
from arena.authoring.knobs import FAULT_TAGS, TAGS, VOCABULARY, GymKnobs, K, knob_docs, parse_knobs
from arena.authoring.reply_rules import guard_replies
from arena.authoring.splits import assign_splits
from arena.authoring.template import Draft, Template, WorldView
from arena.core.domain import Domain, FaultSpec, Knobs, World
from arena.core.task import GoldProgram, Persona, ResponseAssertion, Split, Task
from arena.core.toolkit import Tool, collect_tools

NO_CHAIN = ("no template declares a chain of two or more policy-required steps (Template.depth), so no depth "
            "leaves a task out")
"""Why a gym whose templates declare no prerequisite chain cannot honour ``prerequisite_depth``."""


@dataclass(frozen=True)
class _GymParts(Generic[K]):
    """Everything ``make_domain`` needs to know about a gym; ``generate`` runs it.

    Attributes:
        name: The gym's name.
        world: ``world(seed, knobs) -> sqlite3.Connection``: the seeded world generator.
        templates: The task templates, in a fixed order.
        knobs: The gym's knob model (``GymKnobs`` or a subclass adding its world knobs).
        clock_start: ISO datetime at which every episode starts (the world's "now").
        persona: Who the agent acts as when a draft names no persona.
        internal_patterns: Regular expressions of internal data no reply may contain.
        id_pattern: Regular expression of the world's record ids for the reply rules (``None``: the formats of
            the world's own primary keys).
    """

    name: str
    world: Callable[[int, K], sqlite3.Connection]
    templates: tuple[Template[K], ...]
    knobs: type[K]
    clock_start: str
    persona: Persona
    internal_patterns: tuple[str, ...] = ()
    id_pattern: str | None = None

    def generate(self, domain: Domain, seed: int, knobs: Knobs | GymKnobs) -> World:
        """Generate the world and the tasks for ``seed`` and ``knobs`` (a mapping or the gym's knob model).

        Raises:
            ValueError: An unknown knob or a bad value; focus tags or a depth that select no task.
        """
        parsed = parse_knobs(self.knobs, knobs, self.name)
        conn = self.world(seed, parsed)
        try:
            view = WorldView(conn=conn, knobs=parsed, seed=seed, write_tools=frozenset(
                n for n, t in domain.tools.items() if t.spec.mode == "write"))
            built = [_Built(t, i, d) for t in self.templates
                     for i, d in enumerate(t.build(view, random.Random(f"{seed}:{t.name}"), parsed.tasks_per_template),
                                           start=1)]
            built = self._within_depth(built, parsed.prerequisite_depth)
            state = conn.serialize()
        finally:
            conn.close()
        self._derive_gold(domain, state, built)
        tasks, faults = self._tasks(built, view, seed)
        return World(state_db=state, tasks=guard_replies(tasks, world=state, tools=domain.tools,
                                                                   id_pattern=self.id_pattern), faults=faults,
                     clock_start=self.clock_start)

    def _within_depth(self, built: list[_Built], depth: int | None) -> list[_Built]:
        """The drafts whose chain (the draft's ``depth``, else its template's) is at most ``depth``."""
        if depth is None:
            return built
        kept = [b for b in built if b.depth <= depth]
        if not kept:
            raise ValueError(f"prerequisite_depth={depth} selects no {self.name} task")
        return kept

    def _derive_gold(self, domain: Domain, state: bytes, built: list[_Built]) -> None:
        """Give every draft that leaves its gold program to the expert the expert's program (and reply)."""
        pending = {b.task_id: b for b in built if b.draft.steps is None}
        if not pending:
            return
        programs = expert_gold(domain, state, self.clock_start, [b.provisional(self.persona) for b in pending.values()])
        strong = strong_edges(domain)
        for task_id, b in pending.items():
            dropped = dropped_steps(programs[task_id].steps, b.draft.intent, strong, domain)
            if dropped:
                raise ValueError(f"gym {self.name!r}, template {b.template.name!r}, task {task_id}: {dropped}")
            b.draft.steps = list(programs[task_id].steps)
            b.draft.reply = b.draft.reply or programs[task_id].reply

    def _tasks(self, built: list[_Built], view: WorldView[K], seed: int) -> tuple[list[Task], list[FaultSpec]]:
        knobs = view.knobs
        fault_rng = random.Random(f"{seed}:faults")
        for b in built:
            if not b.draft.faults and knobs.fault_rate > 0 and fault_rng.random() < knobs.fault_rate:
                fault = extra_fault(b.draft.steps or [], fault_rng, knobs.fault_kinds, view.write_tools)
                if fault is not None:
                    b.draft.faults.append(fault)
        if knobs.focus_tags:
            focus = set(knobs.focus_tags)
            built = [b for b in built if focus & b.tags]
            if not built:
                raise ValueError(f"focus_tags {sorted(focus)} select no {self.name} task; tags: {', '.join(TAGS)}")
        splits = assign_splits([{b.template.category, *b.tags} for b in built], knobs.heldout_fraction,
                               random.Random(f"{seed}:splits"))
        tasks: list[Task] = []
        faults: list[FaultSpec] = []
        for b, split in zip(built, splits, strict=True):
            task, specs = b.finish(split, self.persona, self.internal_patterns)
            tasks.append(task)
            faults += specs
        return tasks, sorted(faults, key=lambda f: f.id)


class _Built:
    """One draft on its way to a task."""

    def __init__(self, template: Template[K], index: int, draft: Draft) -> None:
        self.template: Template[Any] = template
        self.task_id = f"{template.name}-{index:02d}"
        self.draft = draft

    @property
    def depth(self) -> int:
        """The chain of policy-required steps the task walks: the draft's own, else its template's."""
        return self.template.depth if self.draft.depth is None else self.draft.depth

    @property
    def tags(self) -> set[str]:
        """The task's tags: its template's, its own and those of its faults."""
        return {*self.template.tags, *self.draft.tags, *(FAULT_TAGS[f.kind] for f in self.draft.faults)}

    def provisional(self, persona: Persona) -> Task:
        """The task without gold program, for the expert to play."""
        d = self.draft
        return Task(id=self.task_id, prompt=d.prompt, persona=d.persona or persona, split="train",
                    category=self.template.category, intent=d.intent, gold=GoldProgram(), assertions=d.assertions)

    def finish(self, split: Split, persona: Persona, internal: tuple[str, ...]) -> tuple[Task, list[FaultSpec]]:
        """The task (id, split, persona, faults with the gold program's recovery) and its fault specs."""
        draft = self.draft
        steps = list(draft.steps or [])
        specs: list[FaultSpec] = []
        for fault in draft.faults:
            steps, spec = inject(steps, fault, fault_id(self.task_id, fault.kind, [s.id for s in specs]))
            specs.append(spec)
        assertions = [_internal(a, internal) if isinstance(a, ResponseAssertion) else a for a in draft.assertions]
        task = Task(
            id=self.task_id, prompt=draft.prompt, persona=draft.persona or persona, split=split,
            category=self.template.category, tags=sorted(self.tags), intent=draft.intent,
            faults=sorted(s.id for s in specs), gold=GoldProgram(steps=steps, reply=draft.reply),
            assertions=assertions,
        )
        return task, specs


def _internal(assertion: ResponseAssertion, patterns: tuple[str, ...]) -> ResponseAssertion:
    if not patterns:
        return assertion
    extra = [p for p in assertion.forbidden_patterns if p not in patterns]
    return assertion.model_copy(update={"forbidden_patterns": [*patterns, *extra]})


def make_domain(
    *,
    name: str,
    description: str,
    tools: ModuleType | Mapping[str, Tool],
    policy: str,
    dependencies: Sequence[tuple[str, str, int]],
    world: Callable[[int, K], sqlite3.Connection],
    templates: Sequence[Template[K]],
    knobs: type[K],
    clock_start: str,
    persona: Persona,
    cannot: Mapping[str, str] | None = None,
    internal: InternalData | None = None,
    internal_patterns: Sequence[str] = (),
    id_pattern: str | None = None,
) -> Domain:
    """Assemble a gym into the ``Domain`` the runtime, the factory and the CLI use.

    Args:
        name: The gym's name (``build_pack(name)``, ``gymloop gyms check name``).
        description: One line on what the gym replicates.
        tools: The module holding the ``@tool`` functions, or the tools by name.
        policy: The business rules the agent is given (the text of policy.md).
        dependencies: ``(before, after, STRONG | WEAK)`` edges of the tool dependency graph.
        world: ``world(seed, knobs) -> sqlite3.Connection``, the seeded world generator.
        templates: The task templates, in a fixed order (their names unique).
        knobs: The knob model: ``GymKnobs`` or a subclass adding the gym's world knobs.
        clock_start: ISO datetime at which episodes start.
        persona: Who the agent acts as when a draft names none.
        cannot: Knobs of the shared vocabulary the gym cannot honour, each with the reason.
        internal: What the gym's policy keeps from requesters (``arena.authoring.internal``): every response check
            forbids its patterns and internal ids, and diagnosis reads it.
        internal_patterns: More regular expressions of internal data; every response check forbids them.
        id_pattern: Regular expression of the world's record ids.

    Raises:
        ValueError: Two templates share a name, or a vocabulary knob is neither honoured nor declared in
            ``cannot`` (every gym says which it honours).
    """
    names = [t.name for t in templates]
    if len(set(names)) != len(names):
        raise ValueError(f"gym {name!r}: template names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    docs = knob_docs(knobs)
    refused = dict(cannot or {})
    if max((t.depth for t in templates), default=0) < 2 and "prerequisite_depth" in docs:
        docs.pop("prerequisite_depth")
        refused.setdefault("prerequisite_depth", NO_CHAIN)
    overlap = sorted(set(docs) & set(refused))
    if overlap:
        raise ValueError(f"gym {name!r} both honours and refuses knob(s) {overlap}")
    undeclared = sorted(set(VOCABULARY) - set(docs) - set(refused))
    if undeclared:
        raise ValueError(f"gym {name!r} neither honours nor refuses vocabulary knob(s) {undeclared}: add them to "
                         "its knob model or to cannot= with the reason")
    declared = internal or InternalData()
    declare_internal(name, declared)
    forbidden = tuple(dict.fromkeys([*declared.forbidden_patterns(), *internal_patterns]))
    gym: _GymParts[K] = _GymParts(name=name, world=world, templates=tuple(templates), knobs=knobs,
                                  clock_start=clock_start, persona=persona,
                                  internal_patterns=forbidden, id_pattern=id_pattern)
    bound: list[Domain] = []

    def generate(seed: int, knob_values: Knobs | GymKnobs) -> World:
        return gym.generate(bound[0], seed, knob_values)

    generate.__module__ = world.__module__  # worker processes import the gym's own module to register it
    tool_map = collect_tools(tools) if isinstance(tools, ModuleType) else dict(sorted(tools.items()))
    domain = Domain(name=name, description=description, tools=tool_map, policy=policy,
                    dependencies=list(dependencies), generate=generate, knobs=docs, cannot=refused)
    bound.append(domain)
    return domain

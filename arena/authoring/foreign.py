"""Gyms of other benchmarks on the kit: a fixed world and fixed tasks, judged by the benchmark's own verdict.

A benchmark such as τ²-bench ships its world (a database), its tasks with their splits and a gold action sequence,
and a verdict. :func:`make_foreign_domain` turns them into the same ``Domain`` every kit gym is: the world is the
benchmark's, whatever the seed; the tasks keep their ids, splits (``test`` is gymloop's ``heldout``) and
:class:`~arena.core.conversation.TaskSource`; the gold program is the benchmark's actions. What the kit adds:

- **the end-state verdict as data**: the gold actions are replayed once on the starting world through the gym's
  own tools, and the task is judged by whether the final world equals that one: no row changes but the rows the
  gold actions change (a side-effect check over exactly their write-set), those rows hold what they hold after the
  gold actions (a state check), and no row is added or removed beyond them (a row-count check)
  (:func:`same_world_as_gold`);
- no gymloop reply rules (ids, length, claims): the benchmark's verdict says what a reply must hold, through the
  task's :class:`~arena.core.conversation.Conversation`;
- the knobs that mean something on a fixed world: ``fault_rate`` and ``fault_kinds`` inject faults into the gold
  program with the kit's recovery, as for every kit gym; the others are refused with the reason
  (:data:`FIXED_WORLD_REFUSALS`).

For a benchmark whose user turns are given and whose verdict judges each turn (BFCL multi-turn), the kit also plays
the gold program turn by turn through the gym and measures the world after each turn (:func:`play_gold`), and
derives the intent the reference policy plays from the gold calls (:func:`intent_from_gold`): a value the requester
said stays literal, a value only the world holds becomes a ``"$tool.path"`` into the output of the call that
returned it.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.authoring.checks import quote, scope, state, writes
from arena.authoring.faults import extra_fault, fault_id, inject
from arena.authoring.knobs import FaultKindName
from arena.core.conversation import Conversation, TaskSource
from arena.core.domain import Domain, FaultSpec, Knobs, World
from arena.core.gym import Gym
from arena.core.pack import SCHEMA_VERSION, Manifest, Pack
from arena.core.results import RowChange, TraceStep
from arena.core.task import Assertion, GoldProgram, GoldStep, IntendedCall, Intent, Persona, Split, Task
from arena.core.toolkit import Tool, collect_tools, iter_specs

FIXED_WORLD_REFUSALS: dict[str, str] = {
    "tasks_per_template": "the benchmark's tasks are fixed: it has no templates to build more from",
    "focus_tags": "the benchmark's tasks carry no gymloop task tags to focus on",
    "heldout_fraction": "the splits are the benchmark's own and are never re-drawn (its test split stays held out)",
    "prerequisite_depth": "the benchmark's tasks declare no chains of policy-required steps",
    "near_duplicate_rate": "the world is the benchmark's database, kept as it is",
    "stale_rate": "the world is the benchmark's database, kept as it is",
    "legacy_format_rate": "the world is the benchmark's database, kept as it is",
}
"""The vocabulary knobs a fixed world and fixed tasks cannot honour, with the reason."""

M = TypeVar("M")

SAME_WORLD = "the final database equals the database after the gold actions"
"""What the end-state checks of a foreign task judge, together."""


class ForeignKnobs(BaseModel):
    """The knobs a benchmark's gym honours: injected faults (the kit adds the gold program's recovery)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fault_rate: float = Field(default=0.0, ge=0.0, le=1.0, description="Share of the tasks without a fault that "
                              "get one injected fault (0-1, default 0).")
    fault_kinds: tuple[FaultKindName, ...] = Field(
        default=("timeout", "rate_limit", "data_conflict"),
        description="Fault kinds the injected faults draw from (list of timeout, rate_limit, data_conflict; "
                    "default all).")


@dataclass
class ForeignTask:
    """One task of another benchmark, as its gym hands it to the kit.

    Attributes:
        id: The task's id (the benchmark's, made safe for file names).
        split: ``train`` or ``heldout`` (the benchmark's test split).
        prompt: What a single-reply agent is asked (a conversation replaces it with the user's opening).
        intent: The structured reading of the request, for the reference policy.
        steps: The benchmark's gold actions, in order.
        reply: A reply that states what the verdict requires (the gold program's reply).
        source: The benchmark, its domain, task id and split.
        conversation: The task's user and what the conversation must hold.
        category: Task category.
        tags: Task tags.
        persona: Who the agent acts as (the gym's default when ``None``).
    """

    id: str
    split: Split
    prompt: str
    intent: Intent
    steps: list[GoldStep]
    reply: str
    source: TaskSource
    conversation: Conversation | None = None
    category: str = "benchmark"
    tags: list[str] = field(default_factory=list)
    persona: Persona | None = None


def same_world_as_gold(gym: Gym, task_id: str) -> list[Assertion]:
    """Replay a task's gold program on a fresh world and return the checks that the final world equals that one.

    The task's gold program is played through the gym's tools at seed 0; the checks are a side-effect check whose
    write-set is exactly the rows it changed, one state check per table it changed (those rows, all columns, as
    they stand after it; a row it deleted must be gone), and, when it added or removed rows, a check of those
    tables' row counts.

    Args:
        gym: A gym of the pack holding the task.
        task_id: The task.
    """
    task = gym.pack.task(task_id)
    gym.reset(task_id, seed=0)
    for step in task.gold.steps:
        gym.call_tool(step.tool, dict(step.arguments))
    changes = gym.verify("").changes
    tables: dict[str, list[RowChange]] = {}
    for change in changes:
        tables.setdefault(change.table, []).append(change)
    if not tables:
        return [writes()]
    checks: list[Assertion] = [writes(*(
        scope(table, ids=[c.key for c in rows if c.op != "insert"], insert=any(c.op == "insert" for c in rows),
              delete=any(c.op == "delete" for c in rows)) for table, rows in tables.items()))]
    counted: list[str] = []
    for table, rows in tables.items():
        key = _key_column(gym, table)
        keys = sorted({c.key for c in rows})
        listed = ", ".join(quote(k) for k in keys)
        sql = f'SELECT * FROM "{table}" WHERE "{key}" IN ({listed}) ORDER BY "{key}"'
        checks.append(state(f"{table}: the rows the gold actions change hold what they hold after them", sql,
                            [list(r) for r in gym.query(sql)]))
        if any(c.op != "update" for c in rows):
            counted.append(table)
    if counted:
        sql = "SELECT " + ", ".join(f'(SELECT COUNT(*) FROM "{t}")' for t in counted)
        checks.append(state(f"{', '.join(counted)}: as many rows as after the gold actions", sql,
                            [list(r) for r in gym.query(sql)]))
    return checks


def _key_column(gym: Gym, table: str) -> str:
    return gym.keys.get(table) or "rowid"


@dataclass(frozen=True)
class _ForeignParts:
    """What ``make_foreign_domain`` needs to generate the gym's world and tasks."""

    name: str
    world: Callable[[], sqlite3.Connection]
    tasks: Callable[[], list[ForeignTask]]
    clock_start: str
    persona: Persona


def make_foreign_domain(
    *,
    name: str,
    description: str,
    tools: ModuleType | Mapping[str, Tool],
    policy: str,
    dependencies: Sequence[tuple[str, str, int]],
    world: Callable[[], sqlite3.Connection],
    tasks: Callable[[], list[ForeignTask]],
    clock_start: str,
    persona: Persona,
    not_applicable: Callable[[Task, str], str | None] | None = None,
) -> Domain:
    """Assemble a benchmark's world, tools and tasks into the ``Domain`` the runtime, the factory and the CLI use.

    ``world`` and ``tasks`` are called once per process, when the gym is first generated (they read the
    benchmark's files); the gold replay that gives each task its end-state checks runs then too.

    Args:
        name: The gym's name.
        description: One line on what the gym replicates.
        tools: The module holding the ``@tool`` functions, or the tools by name.
        policy: The rules the agent is given (the benchmark's policy).
        dependencies: ``(before, after, STRONG | WEAK)`` edges of the tool dependency graph.
        world: ``world() -> sqlite3.Connection``: the benchmark's database as a world.
        tasks: ``tasks() -> list[ForeignTask]``: the benchmark's tasks.
        clock_start: ISO datetime at which episodes start.
        persona: Who the agent acts as when a task names none.
        not_applicable: ``not_applicable(task, check)``: why a conformance check (``null_fails``,
            ``adversary:<name>``) cannot hold under the benchmark's verdict on a task, or ``None`` when it can;
            ``gymloop gyms check`` prints the reason instead of a failure.
    """
    parts = _ForeignParts(name=name, world=world, tasks=tasks, clock_start=clock_start, persona=persona)
    tool_map = collect_tools(tools) if isinstance(tools, ModuleType) else dict(sorted(tools.items()))
    bound: list[Domain] = []

    @cache
    def built() -> tuple[bytes, tuple[Task, ...]]:
        return _build(bound[0], parts)

    def generate(seed: int, knob_values: Knobs) -> World:
        knobs = _parse(knob_values, name)
        state_db, base = built()
        fault_tasks, faults = _with_faults(list(base), knobs, seed, frozenset(
            n for n, t in tool_map.items() if t.spec.mode == "write"))
        return World(state_db=state_db, tasks=fault_tasks, faults=faults, clock_start=clock_start)

    generate.__module__ = world.__module__  # worker processes import the gym's own module to register it
    knobs = {knob: spec.description or knob for knob, spec in ForeignKnobs.model_fields.items()}
    domain = Domain(name=name, description=description, tools=tool_map, policy=policy,
                    dependencies=list(dependencies), generate=generate, knobs=knobs,
                    cannot=dict(FIXED_WORLD_REFUSALS), not_applicable=not_applicable)
    bound.append(domain)
    return domain


def _parse(knobs: Knobs, gym: str) -> ForeignKnobs:
    refused = sorted(set(knobs) & set(FIXED_WORLD_REFUSALS))
    if refused:
        raise ValueError(f"gym {gym!r} cannot honour knob {refused[0]!r}: {FIXED_WORLD_REFUSALS[refused[0]]}")
    unknown = sorted(set(knobs) - set(ForeignKnobs.model_fields))
    if unknown:
        raise ValueError(f"unknown {gym} knob(s) {unknown}; known knobs: {', '.join(ForeignKnobs.model_fields)}")
    try:
        return ForeignKnobs.model_validate(dict(knobs))
    except ValidationError as exc:
        err = exc.errors()[0]
        knob = str(err["loc"][0]) if err["loc"] else "?"
        raise ValueError(f"{gym} knob {knob}={knobs.get(knob)!r}: {err['msg']}") from exc


def _build(domain: Domain, parts: _ForeignParts) -> tuple[bytes, tuple[Task, ...]]:
    """The world's bytes and the tasks, each with its end-state checks from replaying its gold actions."""
    conn = parts.world()
    try:
        state_db = conn.serialize()
    finally:
        conn.close()
    foreign = parts.tasks()
    provisional = [_task(t, parts.persona, [writes()]) for t in foreign]
    pack = Pack(manifest=Manifest(domain=domain.name, schema_version=SCHEMA_VERSION, seed=0,
                                  clock_start=parts.clock_start),
                state_db=state_db, policy=domain.policy, tools=list(iter_specs(domain.tools)),
                graph=domain.graph_data(), faults=[], tasks=provisional)
    with Gym(pack, domain) as gym:
        tasks = tuple(_task(t, parts.persona, same_world_as_gold(gym, t.id)) for t in foreign)
    return state_db, tasks


def _task(foreign: ForeignTask, persona: Persona, assertions: list[Assertion]) -> Task:
    return Task(id=foreign.id, prompt=foreign.prompt, persona=foreign.persona or persona, split=foreign.split,
                category=foreign.category, tags=sorted(foreign.tags), intent=foreign.intent,
                gold=GoldProgram(steps=list(foreign.steps), reply=foreign.reply), assertions=assertions,
                conversation=foreign.conversation, source=foreign.source)


def _with_faults(tasks: list[Task], knobs: ForeignKnobs, seed: int,
                 write_tools: frozenset[str]) -> tuple[list[Task], list[FaultSpec]]:
    """The tasks with ``fault_rate`` of them given one injected fault (and its recovery in the gold program)."""
    if knobs.fault_rate <= 0:
        return tasks, []
    rng = random.Random(f"{seed}:faults")
    out: list[Task] = []
    specs: list[FaultSpec] = []
    for task in tasks:
        fault = None
        if rng.random() < knobs.fault_rate:
            fault = extra_fault(task.gold.steps, rng, knobs.fault_kinds, write_tools)
        if fault is None:
            out.append(task)
            continue
        try:
            steps, spec = inject(task.gold.steps, fault, fault_id(task.id, fault.kind))
        except ValueError:  # no step to recover with (a conflict with no get_ before it): leave the task as it is
            out.append(task)
            continue
        specs.append(spec)
        out.append(task.model_copy(update={"faults": [spec.id], "gold": GoldProgram(steps=steps,
                                                                                  reply=task.gold.reply)}))
    return out, sorted(specs, key=lambda f: f.id)


@dataclass
class PlayedTurn:
    """One turn of a gold program played through the gym.

    Attributes:
        text: The user's message that opened the turn.
        steps: The turn's calls as the trace recorded them (outputs included).
        measured: What the gym's ``measure`` read of the world at the end of the turn.
    """

    text: str
    steps: list[TraceStep] = field(default_factory=list)
    measured: Any = None


def play_gold(domain: Domain, state_db: bytes, clock_start: str, tasks: Sequence[Task],
              measure: Callable[[Gym, Task], M]) -> dict[str, list[PlayedTurn]]:
    """Play every task's gold program through a gym on the built world, turn by turn, measuring after each turn.

    A task whose conversation has given user turns plays each turn's message, then the gold steps of that turn
    (``GoldStep.turn``); any other task plays its prompt then all its steps, as one turn.

    Args:
        domain: The gym being built (its tools).
        state_db: The built starting world.
        clock_start: The episode clock's start.
        tasks: The tasks, with their gold programs (their assertions are not used).
        measure: Reads what the gym needs of the world at the end of a turn (the gym is open on the task).

    Raises:
        ValueError: A gold call fails in the gym (names the task, the turn and the call): the gold program of a
            given task must run as the benchmark ran it.
    """
    pack = Pack(
        manifest=Manifest(domain=domain.name, schema_version=SCHEMA_VERSION, seed=0, clock_start=clock_start),
        state_db=state_db, policy=domain.policy, tools=list(iter_specs(domain.tools)), graph=domain.graph_data(),
        faults=[], tasks=list(tasks),
    )
    played: dict[str, list[PlayedTurn]] = {}
    with Gym(pack, domain) as gym:
        for task in tasks:
            gym.reset(task.id, seed=0)
            texts = _user_texts(task)
            turns: list[PlayedTurn] = []
            for k, text in enumerate(texts):
                gym.record_turn("user", text)
                turn = PlayedTurn(text=text)
                for step in task.gold.steps:
                    if (step.turn or 0) != k:
                        continue
                    result = gym.call_tool(step.tool, step.arguments)
                    if not result.ok:
                        message = result.error.message if result.error else ""
                        raise ValueError(f"task {task.id}: gold call {step.tool}({step.arguments}) of turn {k + 1} "
                                         f"failed in the gym: {message}")
                    turn.steps.append(gym.trace[-1])
                turn.measured = measure(gym, task)
                turns.append(turn)
            played[task.id] = turns
    return played


def _user_texts(task: Task) -> list[str]:
    conversation = task.conversation
    if conversation is not None and conversation.user.kind == "given":
        return [t.text for t in conversation.user.turns]
    return [task.prompt]


def intent_from_gold(goal: str, turns: Sequence[PlayedTurn]) -> Intent:
    """The intent the reference policy plays: the gold calls of each turn, with symbolic arguments.

    An argument stays literal when the requester said it (in this turn's message or an earlier one); a value only
    the world holds becomes a ``"$tool.path"`` into the latest output of the earlier call that returned it.

    Args:
        goal: The intent's goal name.
        turns: The gold program played turn by turn (:func:`play_gold`).
    """
    said = ""
    latest: dict[str, dict[tuple[type, Any], str]] = {}
    calls: list[IntendedCall] = []
    for k, turn in enumerate(turns):
        said += "\n" + turn.text
        for step in turn.steps:
            arguments = {name: _symbolic(value, latest, said) for name, value in step.arguments.items()}
            calls.append(IntendedCall(tool=step.tool, arguments=arguments, turn=k))
            latest.pop(step.tool, None)
            latest[step.tool] = _leaf_paths(step.output)
    return Intent(goal=goal, calls=calls)


def _symbolic(value: Any, latest: Mapping[str, dict[tuple[type, Any], str]], said: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) in said:
        return value
    for tool in reversed(list(latest)):
        path = latest[tool].get((type(value), value))
        if path is not None:
            return f"${tool}.{path}" if path else f"${tool}"
    return value


def _leaf_paths(output: Any) -> dict[tuple[type, Any], str]:
    """Each text or integer ``output`` holds, by (type, value), with the dotted path of its first occurrence."""
    paths: dict[tuple[type, Any], str] = {}

    def walk(value: Any, path: str, depth: int) -> None:
        if isinstance(value, str | int) and not isinstance(value, bool):
            paths.setdefault((type(value), value), path)
        elif depth < 6 and isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and "." not in key:
                    walk(item, f"{path}.{key}" if path else key, depth + 1)
        elif depth < 6 and isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}.{i}" if path else str(i), depth + 1)

    walk(output, "", 0)
    return paths


def gold_steps(turns: Sequence[Sequence[tuple[str, dict[str, Any]]]]) -> list[GoldStep]:
    """Gold steps of a conversation of given turns: each turn's ``(tool, arguments)`` calls, marked with the turn."""
    return [GoldStep(tool=tool, arguments=arguments, turn=k)
            for k, calls in enumerate(turns) for tool, arguments in calls]

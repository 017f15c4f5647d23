"""Labelled mistakes injected into each task's gold program: an agent that is not the reference policy.

The injectors read only the task (its gold program, intent, assertions and faults), the starting world and
the gold episode's own trace; they know nothing of how diagnosis detects anything. Each returns programs
(calls in order, a reply plan) labelled with the weakness kind the mistake is an instance of:

| mode | mistake |
| --- | --- |
| wrong_id | a write or a read aimed at another record of the table; two ids swapped; the near-duplicate hit |
| missed_policy_dependency | a step the task orders before a write left out (after a search: a policy one), or moved |
| brittle_parameters | a value passed in the requester's format (dates, money) instead of the tool's |
| stale_state | after "the record changed" the write is retried without reading the record again |
| search_without_fetch | a search hit used without fetching the record (a fetch the policy does not require first) |
| gave_up_early | stops after zero or one call, nothing in the way, and says it could not do it |
| no_error_recovery | stops at a retryable fault (timeout, rate limit) and reports the failure |
| claimed_unverified_success | the goal's calls left out, success claimed |
| leaked_internal_data | an internal value read (payment token, risk score, ...) in the reply or an outbound message |
| unintended_side_effect | an extra write to a record the task never asked to change |
| duplicate_goal | the goal's write done twice (no detector names this: a novel mode) |
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from arena.agents.base import AgentRun, CallTool
from arena.core.episode import EpisodeRecord
from arena.core.gym import Observation
from arena.core.pack import Pack
from arena.core.results import TraceStep
from arena.core.task import ResponseAssertion, Task, TraceAssertion
from arena.core.weakness import WeaknessKind
from bench.independent_replies import admission, claim

NOVEL_MODE = "duplicate_goal"
"""The injected mode no detector names."""

MODES: tuple[str, ...] = (
    WeaknessKind.WRONG_ID, WeaknessKind.MISSED_POLICY_DEPENDENCY, WeaknessKind.BRITTLE_PARAMETERS,
    WeaknessKind.STALE_STATE, WeaknessKind.SEARCH_WITHOUT_FETCH, WeaknessKind.GAVE_UP_EARLY,
    WeaknessKind.NO_ERROR_RECOVERY, WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, WeaknessKind.LEAKED_INTERNAL_DATA,
    WeaknessKind.UNINTENDED_SIDE_EFFECT, NOVEL_MODE,
)
"""Every injected mode, in report order."""

Call = tuple[str, dict[str, Any]]
ReplyPlan = Callable[[list[TraceStep]], str]


@dataclass
class Program:
    """What the scripted agent does: calls in order, extra writes tried until one succeeds, then a reply.

    Attributes:
        mode: Injected mode (the label).
        variant: Which variant of the mode.
        calls: Tool calls in order.
        reply: The reply, from the trace the calls left.
        extras: Extra writes tried in order after ``calls`` until one succeeds.
    """

    mode: str
    variant: str
    calls: list[Call]
    reply: ReplyPlan
    extras: list[Call] = field(default_factory=list)


class ProgramAgent:
    """An agent that plays a ``Program``: no model, no policy, just the program."""

    name = "program"

    def __init__(self, program: Program) -> None:
        self.program = program
        self.trace: list[TraceStep] = []

    @property
    def model_ref(self) -> str:
        """Name of the injected program."""
        return f"gold+{self.program.mode}"

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Make the program's calls and return its reply."""
        steps: list[TraceStep] = []
        for tool, args in self.program.calls:
            result = call_tool(tool, json.loads(json.dumps(args)))
            steps.append(TraceStep(index=len(steps), tool=tool, arguments=args, ok=result.ok, output=result.output,
                                   error=result.error, clock=""))
        for tool, args in self.program.extras:
            result = call_tool(tool, json.loads(json.dumps(args)))
            steps.append(TraceStep(index=len(steps), tool=tool, arguments=args, ok=result.ok, output=result.output,
                                   error=result.error, clock=""))
            if result.ok:
                break
        return AgentRun(reply=self.program.reply(steps), turns=len(steps) + 1)


@dataclass
class World:
    """Ids of the starting world by table, to aim a call at another record of the same table."""

    table_of: dict[str, str]
    ids: dict[str, list[str]]

    @classmethod
    def of(cls, pack: Pack) -> World:
        """Read every table's ``id`` column from the pack's starting world."""
        conn = sqlite3.connect(":memory:")
        conn.deserialize(pack.state_db)
        table_of: dict[str, str] = {}
        ids: dict[str, list[str]] = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
            columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            if "id" not in columns:
                continue
            values = [str(r[0]) for r in conn.execute(f'SELECT id FROM "{table}" ORDER BY id')]
            ids[table] = values
            for value in values:
                table_of.setdefault(value, table)
        conn.close()
        return cls(table_of, ids)

    def other(self, value: str, rng: random.Random) -> str | None:
        """Another id of the table holding ``value``."""
        table = self.table_of.get(value)
        if table is None:
            return None
        prefix = value.split("-", 1)[0]
        choices = [v for v in self.ids[table] if v != value and v.split("-", 1)[0] == prefix]
        return rng.choice(choices) if choices else None


def _id_values(args: Any) -> Iterator[str]:
    if isinstance(args, dict):
        for key, value in args.items():
            if key.endswith(("_id", "_ids")) or key == "id":
                yield from (v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
            elif isinstance(value, dict | list):
                yield from _id_values(value)
    elif isinstance(args, list):
        for value in args:
            yield from _id_values(value)


def _replace(value: Any, swap: dict[str, str]) -> Any:
    if isinstance(value, str):
        return swap.get(value, value)
    if isinstance(value, list):
        return [_replace(v, swap) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, swap) for k, v in value.items()}
    return value


def _sub_text(text: str, swap: dict[str, str]) -> str:
    if not swap:
        return text
    pattern = re.compile("|".join(re.escape(k) for k in sorted(swap, key=len, reverse=True)))
    return pattern.sub(lambda m: swap[m.group(0)], text)


@dataclass
class Case:
    """One task of one pack, with what the injectors may read.

    Attributes:
        pack: The pack.
        task: The task.
        world: Ids of the starting world.
        gold: The gold episode (its trace holds the outputs the gold program saw).
        rng: Randomness of the injection (seeded per task).
        probe: Plays calls on a fresh world and returns the trace (to pick an extra write that goes through).
    """

    pack: Pack
    task: Task
    world: World
    gold: EpisodeRecord
    rng: random.Random
    probe: Callable[[list[Call]], list[TraceStep]] | None = None

    @property
    def calls(self) -> list[Call]:
        """The gold program's calls."""
        return [(s.tool, dict(s.arguments)) for s in self.task.gold.steps]

    @property
    def goal_tools(self) -> set[str]:
        """Tools the requester's goal consists of."""
        return {c.tool for c in self.task.intent.calls}

    def writes(self) -> set[str]:
        """Write tools of the pack."""
        return {t.name for t in self.pack.tools if t.mode == "write"}

    def main_id(self, swap: dict[str, str] | None = None) -> str:
        """The id the goal is about (after ``swap``)."""
        for tool, args in self.calls:
            if tool in self.goal_tools:
                for value in _id_values(args):
                    return (swap or {}).get(value, value)
        for _tool, args in self.calls:
            for value in _id_values(args):
                return (swap or {}).get(value, value)
        return ""

    def auto_reply(self, swap: dict[str, str] | None = None) -> ReplyPlan:
        """Reply as a sensible agent would: claim when its goal calls succeeded, admit when one failed.

        Where the right answer does only part of what was asked (an invoice held instead of paid), the reply is
        the task's own, not a claim of the whole request.
        """
        goal, gold_reply, rng = self.task.intent.goal, self.task.gold.reply, self.rng
        goal_tools, entity = self.goal_tools, self.main_id(swap)
        gold_has_goal = any(t in goal_tools for t, _ in self.calls)
        gold_does_all = goal_tools <= {t for t, _ in self.calls}  # else the right answer does part of the request
        choice = rng.random()

        def plan(steps: list[TraceStep]) -> str:
            made = [s for s in steps if s.tool in goal_tools]
            if made and any(not any(m.ok for m in made if m.tool == tool) for tool in {m.tool for m in made}):
                return admission(goal, entity, random.Random(choice))
            if not gold_has_goal or not made or not gold_does_all:
                return _sub_text(gold_reply, swap or {})
            return claim(goal, entity, random.Random(choice), _sub_text(gold_reply, swap or {}))

        return plan

    def fixed(self, text: str) -> ReplyPlan:
        """A reply that does not depend on the trace."""
        return lambda steps: text


def _wrong_id(case: Case) -> list[Program]:
    out: list[Program] = []
    calls, writes, rng = case.calls, case.writes(), case.rng
    write_at = next((i for i, (t, a) in enumerate(calls) if t in writes and any(_id_values(a))), None)
    if write_at is not None:
        old = next(iter(_id_values(calls[write_at][1])))
        new = case.world.other(old, rng)
        if new:
            swap = {old: new}
            changed = calls[:write_at] + [(t, _replace(a, swap)) for t, a in calls[write_at:]]
            out.append(Program(WeaknessKind.WRONG_ID, "write", changed, case.auto_reply(swap)))
    read_at = next((i for i, (t, a) in enumerate(calls) if t not in writes and t.startswith("get_")
                    and any(_id_values(a))), None)
    if read_at is not None:
        old = next(iter(_id_values(calls[read_at][1])))
        new = case.world.other(old, rng)
        if new:
            swap = {old: new}
            changed = calls[:read_at] + [(t, _replace(a, swap)) for t, a in calls[read_at:]]
            out.append(Program(WeaknessKind.WRONG_ID, "read", changed, case.auto_reply(swap)))
    by_table: dict[str, list[str]] = {}
    for _tool, args in calls:
        for value in _id_values(args):
            table = case.world.table_of.get(value)
            if table and value not in by_table.setdefault(table, []):
                by_table[table].append(value)
    pairs = [v for v in by_table.values() if len(v) >= 2]
    if pairs:
        a, b = pairs[0][:2]
        swap = {a: b, b: a}
        out.append(Program(WeaknessKind.WRONG_ID, "swap", [(t, _replace(x, swap)) for t, x in calls],
                           case.auto_reply(swap)))
    for i, step in enumerate(case.gold.trace):
        if not step.tool.startswith("search_") or not isinstance(step.output, dict | list):
            continue
        hits = _hit_ids(step.output)
        later = {v for _t, a in calls[i + 1:] for v in _id_values(a)}
        chosen = [h for h in hits if h in later]
        table = case.world.table_of.get(chosen[0]) if chosen else None
        others = [h for h in dict.fromkeys(hits) if h not in later and table and case.world.table_of.get(h) == table]
        if chosen and others:
            swap = {chosen[0]: others[0]}
            changed = calls[:i + 1] + [(t, _replace(a, swap)) for t, a in calls[i + 1:]]
            out.append(Program(WeaknessKind.WRONG_ID, "near_duplicate", changed, case.auto_reply(swap)))
            break
    return out


def _hit_ids(output: Any) -> list[str]:
    found: list[str] = []
    if isinstance(output, dict):
        for key, value in output.items():
            if key == "id" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_hit_ids(value))
    elif isinstance(output, list):
        for value in output:
            found.extend(_hit_ids(value))
    return found


def _ordered_prerequisites(case: Case) -> list[tuple[str, str]]:
    """(prerequisite tool, write tool) pairs the task's trace assertions order, both in the gold program."""
    tools = [t for t, _ in case.calls]
    writes = case.writes()
    pairs: list[tuple[str, str]] = []
    for assertion in case.task.assertions:
        if not isinstance(assertion, TraceAssertion):
            continue
        for a, b in assertion.order:
            first, then = assertion.required[a].tool, assertion.required[b].tool
            if then in writes and first in tools and then in tools and first != then:
                pairs.append((first, then))
    return pairs


def _strong_prerequisites(case: Case) -> set[tuple[str, str]]:
    """(prerequisite tool, later tool) pairs the policy requires (strong graph edges) that the gold program makes."""
    tools = [t for t, _ in case.calls]
    edges = case.pack.graph.get("edges", case.pack.graph.get("links", []))
    return {(str(e["source"]), str(e["target"])) for e in edges
            if int(e.get("weight", 1)) >= 3 and str(e["source"]) in tools
            and str(e["target"]) in tools[tools.index(str(e["source"])) + 1:]}


def _missed_dependency(case: Case) -> list[Program]:
    out: list[Program] = []
    calls = case.calls
    searched = {t.removeprefix("search_").rstrip("s") for t, _ in calls if t.startswith("search_")}
    strong = _strong_prerequisites(case)
    for first, then in _ordered_prerequisites(case)[:2]:
        if first.removeprefix("get_") in searched and (first, then) not in strong:
            continue  # a fetch of a search hit the policy does not require: search_without_fetch's mistake
        late_at = next(i for i, (t, _) in enumerate(calls) if t == then)
        before = [(t, a) for t, a in calls[:late_at] if t != first]
        at = [i for i, (t, _) in enumerate(calls[:late_at]) if t == first]
        rest = calls[late_at:]
        out.append(Program(WeaknessKind.MISSED_POLICY_DEPENDENCY, f"skip:{first}", before + rest, case.auto_reply()))
        if at:
            # the prerequisite moves with what it needs between its attempts (a re-read after a conflict), so
            # moving it injects no other mistake
            block = calls[at[0]:at[-1] + 1]
            moved = calls[:at[0]] + calls[at[-1] + 1:late_at] + rest[:1] + block + rest[1:]
            out.append(Program(WeaknessKind.MISSED_POLICY_DEPENDENCY, f"late:{first}", moved, case.auto_reply()))
    return out


_MONEY_ARGS = ("amount", "price", "unit_price", "total")


def _brittle(case: Case) -> list[Program]:
    out: list[Program] = []
    raw_by_tool: dict[str, dict[str, str]] = {}
    for intended in case.task.intent.calls:
        for name, value in intended.arguments.items():
            if isinstance(value, dict) and "raw" in value and "format" in value:
                raw_by_tool.setdefault(intended.tool, {})[name] = str(value["raw"])
    calls = case.calls
    for i, (tool, args) in enumerate(calls):
        if tool in raw_by_tool and tool not in _faulted(case, ("timeout", "rate_limit", "data_conflict")):
            changed = {**args, **raw_by_tool[tool]}
            program = calls[:i] + [(tool, changed), (tool, changed)] + calls[i + 1:]
            out.append(Program(WeaknessKind.BRITTLE_PARAMETERS, "raw_format", program, case.auto_reply()))
            break
    faulted = _faulted(case, ("timeout", "rate_limit", "data_conflict"))
    for i, (tool, args) in enumerate(calls):
        if tool in faulted:
            continue
        money = [k for k in _MONEY_ARGS if isinstance(args.get(k), int | float) and not isinstance(args.get(k), bool)]
        if tool in case.writes() and money:
            changed = {**args, money[0]: f"{case.rng.choice(('€', '$', ''))}{args[money[0]]:,.2f} total"}
            out.append(Program(WeaknessKind.BRITTLE_PARAMETERS, "money_text",
                               calls[:i] + [(tool, changed)] + calls[i + 1:], case.auto_reply()))
            break
    return out


def _faulted(case: Case, kinds: tuple[str, ...]) -> set[str]:
    by_id = {f.id: f for f in case.pack.faults}
    return {by_id[f].tool for f in case.task.faults if f in by_id and by_id[f].kind in kinds}


def _stale(case: Case) -> list[Program]:
    calls = case.calls
    for tool in sorted(_faulted(case, ("data_conflict",))):
        at = [i for i, (t, _) in enumerate(calls) if t == tool]
        if len(at) < 2:
            continue
        first, second = at[0], at[1]
        kept = calls[:first + 1] + [(t, a) for t, a in calls[first + 1:second] if t in case.writes()]
        retry = calls[second]
        return [Program(WeaknessKind.STALE_STATE, "retry_without_refetch", kept + [retry, retry] + calls[second + 1:],
                        case.auto_reply())]
    return []


def _search_without_fetch(case: Case) -> list[Program]:
    """Drop the fetches of searched entities, keeping re-reads and required prerequisites.

    A re-read is the fetch of a record read before the search, or the fetch right after a call to a tool with an
    injected conflict. Dropping one would inject another mistake (a blind retry) than the label says; so would
    dropping a fetch the policy requires before a later call (a skipped prerequisite).
    """
    calls = case.calls
    required = {first for first, _ in _strong_prerequisites(case)}
    conflicted = _faulted(case, ("data_conflict",))
    searched: set[str] = set()
    fetched: set[str] = set()
    dropped: list[Call] = []
    for i, (tool, args) in enumerate(calls):
        ids = set(_id_values(args))
        reread = (bool(ids) and ids <= fetched) or (i > 0 and calls[i - 1][0] in conflicted)
        if tool.startswith("get_") and tool.removeprefix("get_") in searched and not reread and tool not in required:
            continue
        if tool.startswith("get_") and not searched:
            fetched |= ids
        if tool.startswith("search_"):
            searched.add(tool.removeprefix("search_").rstrip("s"))
        dropped.append((tool, args))
    if len(dropped) == len(calls):
        return []
    return [Program(WeaknessKind.SEARCH_WITHOUT_FETCH, "no_fetch", dropped, case.auto_reply())]


def _gave_up(case: Case) -> list[Program]:
    calls = case.calls
    stop = min(case.rng.choice((0, 1)), len(calls))
    if stop and calls[0][0].startswith("search_"):
        stop = 0  # stopping right after a search that found the record is a search without fetch: one label
    gold_errors = [s for s in case.gold.trace[:stop] if not s.ok]
    if len(calls) <= stop or gold_errors or not case.task.intent.calls:
        return []
    text = admission(case.task.intent.goal, case.main_id(), case.rng)
    return [Program(WeaknessKind.GAVE_UP_EARLY, f"after_{stop}", calls[:stop], case.fixed(text))]


def _no_recovery(case: Case) -> list[Program]:
    calls = case.calls
    for tool in sorted(_faulted(case, ("timeout", "rate_limit"))):
        at = [i for i, (t, _) in enumerate(calls) if t == tool]
        if len(at) < 2:
            continue
        text = admission(case.task.intent.goal, case.main_id(), case.rng)
        return [Program(WeaknessKind.NO_ERROR_RECOVERY, "stop_at_fault", calls[:at[0] + 1], case.fixed(text))]
    return []


def _false_claim(case: Case) -> list[Program]:
    calls, goal_tools = case.calls, case.goal_tools
    cut = next((i for i, (t, _) in enumerate(calls) if t in goal_tools), len(calls))
    if goal_tools and cut < len(calls):
        kept = [(t, a) for t, a in calls[:cut] if t not in goal_tools]
    elif goal_tools:
        kept = calls
    else:
        kept = []
    text = claim(case.task.intent.goal, case.main_id(), case.rng, case.task.gold.reply)
    return [Program(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS, "goal_skipped", kept, case.fixed(text))]


_OUTBOUND_ARGS = ("message", "body", "comment", "text", "note")


def _leak(case: Case) -> list[Program]:
    patterns = [p for a in case.task.assertions if isinstance(a, ResponseAssertion) for p in a.forbidden_patterns]
    if not patterns:
        return []
    outputs = json.dumps([s.output for s in case.gold.trace if s.ok])
    secret = next((m.group(0) for p in patterns for m in [re.search(p, outputs)] if m), None)
    if secret is None:
        return []
    field_name = _field_of(case.gold.trace, secret)
    said = case.rng.choice(("For reference, the {f} on file is {v}.", "(internal {f}: {v})",
                            "I can see {f} {v} on the record.", "Note: {f} = {v}."))
    leak_text = said.format(f=field_name.replace("_", " "), v=secret)
    out = [Program(WeaknessKind.LEAKED_INTERNAL_DATA, "reply", case.calls,
                   case.fixed(f"{case.task.gold.reply} {leak_text}"))]
    calls = case.calls
    for i, (tool, args) in enumerate(calls):
        key = next((k for k in _OUTBOUND_ARGS if isinstance(args.get(k), str)), None)
        if tool in case.writes() and key:
            changed = {**args, key: f"{args[key]} {leak_text}"}
            out.append(Program(WeaknessKind.LEAKED_INTERNAL_DATA, "outbound",
                               calls[:i] + [(tool, changed)] + calls[i + 1:], case.fixed(case.task.gold.reply)))
            break
    return out


def _field_of(trace: list[TraceStep], value: str) -> str:
    def walk(node: Any) -> str | None:
        if isinstance(node, dict):
            for key, item in node.items():
                if item == value:
                    return str(key)
                found = walk(item)
                if found:
                    return found
        elif isinstance(node, list):
            for item in node:
                found = walk(item)
                if found:
                    return found
        return None

    for step in trace:
        name = walk(step.output)
        if name:
            return name
    return "reference"


def _extra_write(case: Case) -> list[Program]:
    used = {t for t, _ in case.calls}
    forbidden = {c.tool for a in case.task.assertions if isinstance(a, TraceAssertion) for c in a.forbidden}
    ids = list(dict.fromkeys(v for _t, a in case.calls for v in _id_values(a)))
    edges = case.pack.graph.get("edges", case.pack.graph.get("links", []))
    needs: dict[str, set[str]] = {e["target"]: set() for e in edges}
    for edge in edges:
        if int(edge.get("weight", 1)) >= 3:
            needs[edge["target"]].add(edge["source"])
    extras: list[Call] = []
    for spec in sorted(case.pack.tools, key=lambda s: s.name):
        if spec.mode != "write" or spec.name in used or spec.name in forbidden:
            continue
        if needs.get(spec.name, set()) - used:
            continue  # skipping the extra write's own prerequisite would also be a missed dependency
        args = _fill_args(spec.parameters, ids, case.world)
        if args is not None:
            extras.append((spec.name, args))
    case.rng.shuffle(extras)
    for extra in extras[:6]:
        if case.probe is not None and not case.probe([*case.calls, extra])[-1].ok:
            continue
        return [Program(WeaknessKind.UNINTENDED_SIDE_EFFECT, "extra_write", case.calls,
                        case.fixed(case.task.gold.reply), extras=[extra])]
    return []


def _fill_args(schema: dict[str, Any], ids: list[str], world: World) -> dict[str, Any] | None:
    props: dict[str, Any] = schema.get("properties", {})
    args: dict[str, Any] = {}
    for name in schema.get("required", list(props)):
        prop = props.get(name, {})
        kind = prop.get("type")
        if name.endswith("_id"):
            table = name.removesuffix("_id")
            match = next((v for v in ids if world.table_of.get(v, "").rstrip("s").endswith(table.split("_")[-1])),
                         None)
            if match is None:
                return None
            args[name] = match
        elif "enum" in prop:
            args[name] = prop["enum"][0]
        elif kind == "string":
            args[name] = "Following up on this request."
        elif kind in ("number", "integer"):
            args[name] = 1
        elif kind == "boolean":
            args[name] = False
        else:
            return None
    return args


def _duplicate_goal(case: Case) -> list[Program]:
    calls, goal_tools = case.calls, case.goal_tools
    at = [i for i, (t, _) in enumerate(calls) if t in goal_tools and t in case.writes()]
    if not at:
        return []
    last = at[-1]
    program = calls[:last + 1] + [calls[last]] + calls[last + 1:]
    text = claim(case.task.intent.goal, case.main_id(), case.rng, case.task.gold.reply)
    return [Program(NOVEL_MODE, "goal_twice", program, case.fixed(text))]


INJECTORS: dict[str, Callable[[Case], list[Program]]] = {
    WeaknessKind.WRONG_ID: _wrong_id, WeaknessKind.MISSED_POLICY_DEPENDENCY: _missed_dependency,
    WeaknessKind.BRITTLE_PARAMETERS: _brittle, WeaknessKind.STALE_STATE: _stale,
    WeaknessKind.SEARCH_WITHOUT_FETCH: _search_without_fetch, WeaknessKind.GAVE_UP_EARLY: _gave_up,
    WeaknessKind.NO_ERROR_RECOVERY: _no_recovery, WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS: _false_claim,
    WeaknessKind.LEAKED_INTERNAL_DATA: _leak, WeaknessKind.UNINTENDED_SIDE_EFFECT: _extra_write,
    NOVEL_MODE: _duplicate_goal,
}
"""Injector of each mode."""


def gold_program(task: Task, rng: random.Random, *, rephrase: bool = False) -> Program:
    """The task's gold program; with ``rephrase`` its reply is a claim in another voice when the goal was done."""
    calls = [(s.tool, dict(s.arguments)) for s in task.gold.steps]
    reply = task.gold.reply
    goal_tools = {c.tool for c in task.intent.calls}
    if rephrase and any(t in goal_tools for t, _ in calls):
        main = next((v for t, a in calls if t in goal_tools for v in _id_values(a)), "")
        reply = claim(task.intent.goal, main, rng, reply)
    return Program("gold", "rephrased" if rephrase else "gold", calls, lambda steps: reply)

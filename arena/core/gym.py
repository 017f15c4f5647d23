"""The gym runtime: fresh worlds, strict tool calls, a trace and a verdict."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from arena.core.conversation import Conversation, EndReason, Role, Turn, agent_messages, conversation_results
from arena.core.domain import Domain, FaultSpec
from arena.core.domain_check import CheckInput
from arena.core.domains import get_domain
from arena.core.ids import RecordIds, stored_world_ids
from arena.core.pack import Pack
from arena.core.results import ToolErrorInfo, ToolResult, TraceStep, Verdict
from arena.core.task import DomainAssertion, Task
from arena.core.text import clean_text
from arena.core.toolkit import ToolContext, ToolError, ToolSpec
from arena.core.verify import CHANGE_LOG, VERIFY_BOUND_S, ChangeDiff, Deadline, ReadOnlyGuard, judge

MAX_ARGUMENT_CHARS = 10_000
"""Longest string argument a tool accepts."""

MAX_ARGUMENTS_JSON_CHARS = 200_000
"""Longest JSON text of a whole arguments object."""

MAX_NESTING = 16
"""Deepest nesting of lists and objects in tool arguments."""

MAX_VALUES = 2_000
"""Most values (leaves, lists and objects together) in one call's arguments."""

SQLITE_INT_MIN, SQLITE_INT_MAX = -(2**63), 2**63 - 1
"""Range of the integers a tool argument may hold (what the world's SQLite stores)."""

MAX_TOOL_NAME_CHARS = 200
"""Longest tool name kept on the trace (longer names are unknown tools anyway)."""

MAX_UNDONE_ROWS = 512
"""Most changed rows a reset puts back one by one; an episode that changed more gets the whole world restored."""

TOOL_CALL_BOUND_S = 2.0
"""Longest a tool call's SQLite work may run; a call past it is stopped, its writes undone, and answered with an
error."""



class EnvironmentFailure(RuntimeError):
    """A tool implementation crashed: the environment's fault, never the agent's.

    The episode ends; the rollout engine records the failure boundary ``environment``.
    """


class Observation(BaseModel):
    """What the agent sees at the start of an episode.

    Attributes:
        task: The task's public view (id, prompt, persona, intent).
        policy: The business rules.
        tools: Tool specs.
        graph: Weighted tool dependency graph (node-link data).
    """

    model_config = ConfigDict(extra="forbid")

    task: dict[str, Any]
    policy: str
    tools: list[ToolSpec]
    graph: dict[str, Any]


def _episode_digest(pack_id: str, task_id: str, seed: int) -> bytes:
    return hashlib.sha256(f"{pack_id}|{task_id}|{seed}".encode()).digest()


def _install_change_log(conn: sqlite3.Connection) -> dict[str, str | None]:
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    conn.execute(f"CREATE TABLE {CHANGE_LOG} (tbl TEXT NOT NULL, rid INTEGER NOT NULL)")
    keys: dict[str, str | None] = {}
    for table in tables:
        info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        pks = [r[1] for r in info if r[5]]
        keys[table] = pks[0] if len(pks) == 1 else None
        for event, ref in (("INSERT", "NEW"), ("UPDATE", "OLD"), ("DELETE", "OLD")):
            conn.execute(
                f'CREATE TRIGGER "_gl_{table}_{event.lower()}" AFTER {event} ON "{table}" '
                f"BEGIN INSERT INTO {CHANGE_LOG} VALUES ('{table}', {ref}.rowid); END"
            )
    return keys


def _bad_string(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
        return f"an integer of {value.bit_length()} bits is out of range (at most 64-bit integers are accepted)"
    if isinstance(value, str):
        if len(value) > MAX_ARGUMENT_CHARS:
            return f"string of {len(value)} characters exceeds the limit of {MAX_ARGUMENT_CHARS}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "string holds a lone surrogate and is not valid Unicode text"
    elif isinstance(value, dict):
        for v in value.values():
            bad = _bad_string(v)
            if bad:
                return bad
    elif isinstance(value, list):
        for v in value:
            bad = _bad_string(v)
            if bad:
                return bad
    return None


def _shape_error(value: Any) -> str | None:
    """Why ``value`` is too deep, too large or keyed by non-strings; checked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"arguments hold more than {MAX_VALUES} values"
        if isinstance(item, dict):
            if depth >= MAX_NESTING:
                return f"arguments are nested deeper than {MAX_NESTING} levels"
            if not all(isinstance(k, str) for k in item):
                return "argument names must be strings"
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            if depth >= MAX_NESTING:
                return f"arguments are nested deeper than {MAX_NESTING} levels"
            stack.extend((v, depth + 1) for v in item)
    return None


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not allowed in tool arguments")


def logical_hash(conn: sqlite3.Connection) -> str:
    """Hash the world's content table by table in rowid order (for checks, not per episode)."""
    digest = hashlib.sha256()
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    for table in tables:
        if table == CHANGE_LOG:
            continue
        digest.update(table.encode())
        for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid'):
            digest.update(repr(row).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class StartingWorld:
    """A pack's starting world with its change log installed, as every episode of the pack restores it.

    Attributes:
        template: The serialized SQLite database.
        keys: Each table's single-column primary key (``None`` when it has none or several).
        columns: Each table's column names, in the table's order.
        schema_version: SQLite's schema version of the world: a world whose schema an episode changed is
            restored whole.
        undoable: Whether an episode's changes can be put back row by row (no AUTOINCREMENT counters, whose
            values the change log does not hold).
        source: The pack's own serialized world (before the change log), under which its record ids are kept.
    """

    template: bytes
    keys: dict[str, str | None]
    columns: dict[str, list[str]]
    schema_version: int
    undoable: bool
    source: bytes

    @cached_property
    def record_ids(self) -> RecordIds:
        """The starting world's record ids, which the reply rules find however they are spelled.

        They are found once per world, whatever number of gyms play it (see ``arena.core.ids.stored_world_ids``).
        """
        return stored_world_ids(self.source).known


def _starting_world(pack: Pack) -> StartingWorld:
    loader = sqlite3.connect(":memory:")
    try:
        loader.deserialize(pack.state_db)
        keys = _install_change_log(loader)
        columns = {t: [r[1] for r in loader.execute(f'PRAGMA table_info("{t}")')] for t in keys}
        version = loader.execute("PRAGMA schema_version").fetchone()[0]
        counters = loader.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone()
        return StartingWorld(loader.serialize(), keys, columns, version, counters is None, pack.state_db)
    finally:
        loader.close()


class Gym:
    """One environment pack, ready to run episodes.

    A tool call's SQLite work is bounded by ``tool_call_bound_s`` and a verification's by ``verify_bound_s``
    (see ``Deadline``): a pack whose world makes a tool or a check slow can neither stall a worker nor a served
    gym's other clients.

    Args:
        pack: The environment pack.
        domain: The domain implementing the pack's tools (looked up by name if omitted).
        starting_world: The pack's starting world when another gym of the pack built it already (``sibling``);
            built from the pack otherwise.
    """

    tool_call_bound_s: float = TOOL_CALL_BOUND_S
    """Longest a tool call's SQLite work may run."""

    verify_bound_s: float = VERIFY_BOUND_S
    """Longest a verification's SQLite work may run."""

    def __init__(self, pack: Pack, domain: Domain | None = None, *,
                 starting_world: StartingWorld | None = None) -> None:
        self.pack = pack
        self.domain = domain or get_domain(pack.manifest.domain)
        self._world = starting_world or _starting_world(pack)
        self._template = self._world.template
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._guard = ReadOnlyGuard(self._conn)
        self._deadline = Deadline(self._conn)
        self._base: sqlite3.Connection | None = None
        self._diff = ChangeDiff(self._starting_copy, self._world.keys, self._world.columns)
        self._tasks = {t.id: t for t in pack.tasks}
        self._specs = {s.name: s for s in pack.tools}
        self._write_tools = frozenset(s.name for s in pack.tools if s.mode == "write")
        self._faults: dict[str, FaultSpec] = {f.id: f for f in pack.faults}
        self._clock_start = datetime.fromisoformat(pack.manifest.clock_start)
        self._task: Task | None = None
        self._ctx: ToolContext | None = None
        self._trace: list[TraceStep] = []
        self._turns: list[Turn] = []
        self._ended_by: EndReason | None = None
        self._calls: dict[str, int] = {}
        self._stale: set[str] = set()
        self._task_faults: dict[str, list[FaultSpec]] = {}
        self._ended = True
        self._restored = False
        self._seed = 0
        self._replayer: Gym | None = None
        self.verdict: Verdict | None = None

    @classmethod
    def from_pack(cls, pack: Pack) -> Gym:
        """Build a gym for ``pack`` with its domain's tools."""
        return cls(pack)

    def sibling(self) -> Gym:
        """A new gym of the same pack and domain that shares this gym's starting world instead of building it.

        Concurrent episodes each need a gym; building the starting world (the change log's triggers on every
        table) is most of a gym's cost, so siblings are several times cheaper to make.
        """
        return Gym(self.pack, self.domain, starting_world=self._world)

    def __enter__(self) -> Gym:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the worlds held in memory."""
        self._conn.close()
        if self._base is not None:
            self._base.close()
        if self._replayer is not None:
            self._replayer.close()

    def _starting_copy(self) -> sqlite3.Connection:
        """A read-only copy of the starting world, made the first time an episode changes a row (or a hash asks).

        Episodes that only read never need it: a gym of them holds one world, not two.
        """
        if self._base is None:
            base = sqlite3.connect(":memory:", check_same_thread=False)
            base.deserialize(self._template)
            base.execute("PRAGMA query_only = ON")
            self._base = base
        return self._base

    @property
    def template_bytes(self) -> bytes:
        """The serialized starting world every episode restores."""
        return self._template

    @property
    def trace(self) -> list[TraceStep]:
        """The current episode's tool calls."""
        return self._trace

    @property
    def turns(self) -> list[Turn]:
        """The current episode's conversation: every user and agent message, where it fell among the tool calls."""
        return self._turns

    @property
    def conversation_end(self) -> EndReason | None:
        """How the current episode's conversation ended (``None`` until it is recorded)."""
        return self._ended_by

    def record_turn(self, role: Role, text: str) -> None:
        """Record one message of the conversation after the tool calls made so far; lone surrogates are replaced."""
        self._turns.append(Turn(role=role, text=clean_text(text) if isinstance(text, str) else "",
                                step=len(self._trace)))

    def end_conversation(self, reason: EndReason) -> None:
        """Record how the conversation ended; the verdict of a conversational task reads it."""
        self._ended_by = reason

    @property
    def task(self) -> Task:
        """The current episode's task.

        Raises:
            RuntimeError: No episode was started.
        """
        if self._task is None:
            raise RuntimeError("no episode started: call reset(task_id) first")
        return self._task

    @property
    def ended(self) -> bool:
        """Whether the current episode has been verified (or never started)."""
        return self._ended

    def reset(self, task_id: str, *, seed: int = 0) -> Observation:
        """Start an episode of ``task_id`` on a fresh copy of the template world.

        Args:
            task_id: Task to run.
            seed: Episode seed; the clock offset and randomness derive from
                (pack id, task id, seed).

        Raises:
            KeyError: Unknown task id.
        """
        if task_id not in self._tasks:
            raise KeyError(f"task {task_id!r} is not in pack {self.pack.id[:12]} ({self.pack.manifest.domain})")
        task = self._tasks[task_id]
        self._restore_world()
        digest = _episode_digest(self.pack.id, task_id, seed)
        offset = int.from_bytes(digest[:4], "big") % 3600
        self._ctx = ToolContext(
            conn=self._conn,
            now=self._clock_start + timedelta(seconds=offset),
            rng=random.Random(int.from_bytes(digest[4:12], "big")),
            persona=task.persona,
            task_id=task_id,
        )
        self._task = task
        self._trace = []
        self._turns = []
        self._ended_by = None
        self._calls = {}
        self._stale = set()
        self._task_faults = {}
        for fid in task.faults:
            fault = self._faults[fid]
            self._task_faults.setdefault(fault.tool, []).append(fault)
        self._ended = False
        self._seed = seed
        self.verdict = None
        return Observation(
            task=task.public_view(),
            policy=self.pack.policy,
            tools=self.offered_tools(),
            graph=self.pack.graph,
        )

    def offered_tools(self) -> list[ToolSpec]:
        """The tools the current episode offers the agent now.

        A task offers the pack's tools (those of ``Task.tools`` when it names some), less the conversation's
        hidden tools that no user turn recorded so far has revealed (``GivenTurn.reveal``). A hidden tool is only
        left off the list: a call to it runs, as BFCL runs a held-back function its model calls anyway. A tool
        outside ``Task.tools`` is unknown to the task.
        """
        task = self._task
        if task is None:
            return list(self.pack.tools)
        offered = set(task.tools) if task.tools is not None else set(self._specs)
        conversation = task.conversation
        if conversation is not None and conversation.hidden_tools:
            hidden = set(conversation.hidden_tools)
            if conversation.user.kind == "given":
                heard = sum(1 for t in self._turns if t.role == "user")
                hidden -= {name for turn in conversation.user.turns[:heard] for name in turn.reveal}
            offered -= hidden
        return [s for s in self.pack.tools if s.name in offered]

    def _restore_world(self) -> None:
        """Bring the world back to the starting world.

        Rows the last episode changed (at most ``MAX_UNDONE_ROWS``) are put back from the read-only starting
        world; an untouched world is left as it is. Restoring the whole serialized world instead copies a
        megabyte per episode, which at hundreds of episodes in flight is most of a reset's time. A world never
        restored, one with AUTOINCREMENT counters (``StartingWorld.undoable``), a changed schema or more changed
        rows is restored whole.
        """
        conn = self._conn
        if self._restored and self._world.undoable:
            logged = conn.execute(f"SELECT DISTINCT tbl, rid FROM {CHANGE_LOG} LIMIT {MAX_UNDONE_ROWS + 1}").fetchall()
            if not logged:
                return
            version = conn.execute("PRAGMA schema_version").fetchone()[0]
            if len(logged) <= MAX_UNDONE_ROWS and version == self._world.schema_version:
                self._undo(logged)
                return
        conn.deserialize(self._template)
        self._restored = True

    def _undo(self, logged: list[tuple[str, int]]) -> None:
        """Delete every logged row, then insert each one's starting values (if it had any) under its rowid."""
        conn = self._conn
        conn.execute("BEGIN")
        for table, rid in logged:
            conn.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rid,))
        for table, rid in logged:
            row = self._starting_copy().execute(f'SELECT rowid, * FROM "{table}" WHERE rowid = ?', (rid,)).fetchone()
            if row is not None:
                names = ", ".join(f'"{name}"' for name in self._world.columns[table])
                marks = ", ".join("?" * len(row))
                conn.execute(f'INSERT INTO "{table}" (rowid, {names}) VALUES ({marks})', row)
        conn.execute(f"DELETE FROM {CHANGE_LOG}")
        conn.execute("COMMIT")

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        """Validate and run one tool call, recording it on the trace.

        Bad calls (unknown tool, a tool name that is not a string, malformed JSON, arguments nested too deep
        or too large, wrong types, oversized or invalid strings, missing arguments, permission denied, policy
        refusal, calls after the episode ended) return an error ``ToolResult`` and leave the world unchanged.

        Raises:
            EnvironmentFailure: The tool implementation itself crashed (ending the episode).
        """
        args, error = self._parse_arguments(arguments)
        if not isinstance(name, str):
            error = error or f"tool name must be a string, got {type(name).__name__}"
            name = repr(name)
        name = clean_text(name[:MAX_TOOL_NAME_CHARS])
        if self._ended or self._ctx is None:
            return self._record(name, args, None, ToolErrorInfo(kind="ended", message="the episode has ended"))
        ctx = self._ctx
        result = self._dispatch(name, args, error, ctx)
        ctx.tick()
        return result

    def _offered_names(self) -> set[str] | None:
        """The names of the tools the task can call, or ``None`` when it can call every tool of the pack."""
        task = self._task
        return None if task is None or task.tools is None else set(task.tools)

    def _parse_arguments(self, arguments: dict[str, Any] | str | None) -> tuple[dict[str, Any], str | None]:
        if arguments is None:
            return {}, None
        if isinstance(arguments, str):
            if len(arguments) > MAX_ARGUMENTS_JSON_CHARS:
                return ({"_raw": arguments[:200]},
                        f"arguments of {len(arguments)} characters exceed the limit of {MAX_ARGUMENTS_JSON_CHARS}")
            try:
                parsed = json.loads(arguments, parse_constant=_refuse_constant)
            except (json.JSONDecodeError, ValueError) as exc:
                return {"_raw": arguments[:200]}, f"malformed JSON arguments: {exc}"
            except RecursionError:
                return {"_raw": arguments[:200]}, f"arguments are nested deeper than {MAX_NESTING} levels"
            arguments = parsed
        if not isinstance(arguments, dict):
            return {"_raw": _preview(arguments)}, "arguments must be a JSON object"
        shape = _shape_error(arguments)
        if shape is not None:
            return {"_raw": _preview(arguments)}, shape
        return arguments, None

    def _dispatch(self, name: str, args: dict[str, Any], error: str | None, ctx: ToolContext) -> ToolResult:
        tool = self.domain.tools.get(name)
        spec = self._specs.get(name)
        offered = self._offered_names()
        if tool is None or spec is None or (offered is not None and name not in offered):
            known = ", ".join(sorted(offered if offered is not None else self._specs))
            return self._record(name, args, None, ToolErrorInfo(
                kind="validation", message=f"unknown tool {name!r}; tools: {known}"))
        if spec.permission and spec.permission not in ctx.persona.permissions:
            return self._record(name, args, None, ToolErrorInfo(
                kind="permission",
                message=f"role {ctx.persona.role!r} lacks permission {spec.permission!r} needed by {name}"))
        if error is not None:
            return self._record(name, args, None, ToolErrorInfo(kind="validation", message=error))
        bad = _bad_string(args)
        if bad:
            return self._record(name, args, None, ToolErrorInfo(kind="validation", message=bad))
        try:
            validated = tool.args_model.model_validate(args)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "arguments"
            return self._record(name, args, None, ToolErrorInfo(
                kind="validation", message=f"{loc}: {err['msg']}"))
        fault = self._fire_fault(name, spec)
        if fault is not None:
            return self._record(name, args, None, fault)
        kwargs = dict(validated.__dict__)
        if spec.mode == "read":
            # A read tool runs under the read-only guard: it cannot change the world, so needs no savepoint.
            self._deadline.start(self.tool_call_bound_s)
            try:
                with self._guard:
                    output = tool.fn(ctx, **kwargs)
            except ToolError as exc:
                return self._record(name, args, None, ToolErrorInfo(
                    kind=exc.kind, message=exc.message, retryable=exc.retryable))
            except Exception as exc:
                if self._deadline.passed:
                    return self._record(name, args, None, self._too_slow(name))
                self._ended = True
                raise EnvironmentFailure(f"tool {name} crashed: {type(exc).__name__}: {exc}") from exc
            finally:
                self._deadline.stop()
            if spec.operation == "get":
                self._stale.clear()
            return self._record(name, args, output, None)
        self._conn.execute("SAVEPOINT tool_call")
        self._deadline.start(self.tool_call_bound_s)
        try:
            output = tool.fn(ctx, **kwargs)
        except ToolError as exc:
            self._deadline.stop()
            self._conn.execute("ROLLBACK TO tool_call")
            self._conn.execute("RELEASE tool_call")
            return self._record(name, args, None, ToolErrorInfo(
                kind=exc.kind, message=exc.message, retryable=exc.retryable))
        except Exception as exc:
            slow = self._deadline.passed
            self._deadline.stop()
            self._conn.execute("ROLLBACK TO tool_call")
            self._conn.execute("RELEASE tool_call")
            if slow:
                return self._record(name, args, None, self._too_slow(name))
            self._ended = True
            raise EnvironmentFailure(f"tool {name} crashed: {type(exc).__name__}: {exc}") from exc
        self._deadline.stop()
        self._conn.execute("RELEASE tool_call")
        return self._record(name, args, output, None, write=True)

    def _too_slow(self, name: str) -> ToolErrorInfo:
        """The error of a call stopped at its time bound (its writes undone)."""
        return ToolErrorInfo(kind="fault", fault="timeout", retryable=False,
                             message=f"{name}: the call ran past its time bound of {self.tool_call_bound_s:g} s "
                                     "and was stopped; nothing was changed")

    def _fire_fault(self, name: str, spec: ToolSpec) -> ToolErrorInfo | None:
        count = self._calls.get(name, 0) + 1
        self._calls[name] = count
        if name in self._stale:
            return ToolErrorInfo(
                kind="conflict",
                message=f"{name}: the record changed since it was read; fetch it again before retrying",
                retryable=True,
            )
        for fault in self._task_faults.get(name, ()):
            if fault.on_call <= count < fault.on_call + fault.times:
                if fault.kind == "data_conflict":
                    self._stale.add(name)
                    return ToolErrorInfo(
                        kind="fault", fault="data_conflict", retryable=True,
                        message=fault.message or f"{name}: another user changed this record; fetch it again",
                    )
                message = fault.message or {
                    "timeout": f"{name}: upstream service timed out",
                    "rate_limit": f"{name}: rate limit exceeded",
                }[fault.kind]
                if fault.retry_after is not None:
                    message += f" (retry after {fault.retry_after:g}s)"
                return ToolErrorInfo(kind="fault", fault=fault.kind, message=message, retryable=True)
        return None

    def _record(
        self, name: str, args: dict[str, Any], output: Any, error: ToolErrorInfo | None, *, write: bool = False
    ) -> ToolResult:
        clock = self._ctx.now.isoformat() if self._ctx is not None else ""
        if error is not None:
            args = {clean_text(str(k))[:200]: _clip(v, 1) for k, v in args.items()}
        # Every field is built here from checked values: skip re-validation on this hot path.
        self._trace.append(TraceStep.model_construct(
            index=len(self._trace), tool=name, arguments=args, ok=error is None,
            output=output, error=error, clock=clock, write=write,
        ))
        return ToolResult.model_construct(ok=error is None, output=output, error=error)

    def verify(self, reply: str) -> Verdict:
        """End the episode and judge it: final state, trace, side effects and reply.

        A reply that is not a string counts as an empty reply; lone surrogates in it are replaced.

        Raises:
            RuntimeError: No episode was started.
        """
        task = self.task
        self._ended = True
        reply = clean_text(reply) if isinstance(reply, str) else ""
        memo: dict[str, Any] = {}

        def run_check(assertion: DomainAssertion) -> tuple[bool, str]:
            check = self.domain.checks.get(assertion.check)
            if check is None:
                return False, f"gym {self.domain.name!r} has no check {assertion.check!r}"
            return check(CheckInput(assertion=assertion, task=task, trace=self._trace, turns=self._turns,
                                    world=self._conn, replay=self._replay, memo=memo))

        self._deadline.start(self.verify_bound_s)
        try:
            verdict = judge(task, self._conn, self._trace, reply, self._diff, self._guard, self._world.record_ids,
                            run_check, self._write_tools)
        finally:
            self._deadline.stop()
        if task.conversation is not None:
            verdict = self._with_conversation(verdict, reply, task.conversation)
        self.verdict = verdict
        return verdict

    def _with_conversation(self, verdict: Verdict, reply: str, conversation: Conversation) -> Verdict:
        """The verdict with a conversational task's own results: the facts told, how it ended, what needs a judge.

        The facts are read in every message the agent said to the user (the reply alone when no message was
        recorded, as for an agent that answers once).
        """
        messages = agent_messages(self._turns) or [reply]
        results = verdict.results + conversation_results(conversation, messages, self._ended_by,
                                                         len(verdict.results))
        held = sum(r.passed for r in results)
        return verdict.model_copy(update={"results": results, "passed": held == len(results),
                                          "score": held / len(results), "unjudged": list(conversation.judge)})

    @property
    def keys(self) -> dict[str, str | None]:
        """Each table of the world with its single-column primary key (``None`` when it has none or several)."""
        return dict(self._world.keys)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only query over the current world (the read-only guard refuses anything else).

        Raises:
            sqlite3.Error: The query failed or tried to write.
        """
        with self._guard:
            return self._conn.execute(sql, params).fetchall()

    def snapshot(self) -> bytes:
        """The current world, serialized (for checks and benchmarks that compare worlds; not per episode)."""
        return self._conn.serialize()

    def _replay(self) -> Gym:
        """A gym of this pack reset on the current task and seed, for a check to replay calls in (kept, reused)."""
        if self._replayer is None:
            self._replayer = self.sibling()
        self._replayer.reset(self.task.id, seed=self._seed)
        return self._replayer

    def changed_rows(self) -> int:
        """Number of change-log entries in the current world (0 means untouched)."""
        row = self._conn.execute(f"SELECT COUNT(*) FROM {CHANGE_LOG}").fetchone()
        return int(row[0])

    def state_hash(self) -> str:
        """Logical hash of the current world (ordered dump; for checks, not per episode)."""
        return logical_hash(self._conn)

    def template_hash(self) -> str:
        """Logical hash of the template world."""
        return logical_hash(self._starting_copy())


def _preview(value: Any) -> str:
    """A short, always-serialisable preview of a value that could not be taken as arguments."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__} nested too deep>"
    return clean_text(text[:200])


def _clip(value: Any, depth: int = 0) -> Any:
    """Refused arguments as kept on the trace: long strings cut, lone surrogates replaced, deep values summarised."""
    if isinstance(value, str):
        if len(value) > 200:
            value = value[:200] + f"...<{len(value)} chars>"
        return clean_text(value)
    if depth >= 4 and isinstance(value, (dict, list, tuple)):
        return _preview(value)
    if isinstance(value, dict):
        return {clean_text(str(k))[:200]: _clip(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clip(v, depth + 1) for v in value]
    return value

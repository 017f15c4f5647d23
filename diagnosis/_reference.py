"""What a task's own program says is right: the ids it concerns, its calls and its ordering constraints."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from arena.core.results import TraceStep
from arena.core.task import CallPattern, Task, TraceAssertion

_PROMPT_ID = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d+\b")
_CREATED_ID = re.compile(r"-N\d{5}$")

Ids = dict[str, frozenset[str]]
"""The ids a call passes, by argument."""


def id_values(name: str, value: Any) -> Iterator[str]:
    """Yield the ids an argument holds: ``E_id`` strings and the items of ``E_ids`` lists."""
    if name.endswith("_id") or name == "id":
        if isinstance(value, str):
            yield value
    elif name.endswith("_ids") and isinstance(value, list):
        yield from (v for v in value if isinstance(v, str))


def text_ids(text: str) -> set[str]:
    """Record ids written in free text ("MOB-228", "INV-50211")."""
    return {m.group(0) for m in _PROMPT_ID.finditer(text)}


def id_prefix(value: str) -> str:
    """An id's kind: everything before its trailing number ("MOB-" of "MOB-228")."""
    return value.rstrip("0123456789")


@dataclass(frozen=True)
class Reference:
    """The task's gold program, read for diagnosis.

    Attributes:
        tools: Tools the gold program calls.
        goal_tools: Tools the requester's goal consists of (the intent's calls).
        ids: Every id the gold program passes or the request mentions.
        ids_by_call: Ids the gold program passes per (tool, argument).
        calls: The gold program's calls, in order.
        order: (before, then) call patterns the task's trace checks order.
        requested: Ids the request itself names.
        reply_ids: Ids the program's reply names.
        id_calls: For each tool, the ids each of the program's calls to it passes, by argument.
        program: The program's calls in order, each as its tool and the ids it passes (the record it is made on).
    """

    tools: frozenset[str]
    goal_tools: frozenset[str]
    ids: frozenset[str]
    ids_by_call: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    calls: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    order: tuple[tuple[CallPattern, CallPattern], ...] = ()
    requested: frozenset[str] = frozenset()
    reply_ids: frozenset[str] = frozenset()
    id_calls: dict[str, tuple[dict[str, frozenset[str]], ...]] = field(default_factory=dict)
    program: tuple[tuple[str, Ids], ...] = ()

    @property
    def does_goal(self) -> bool:
        """Whether the gold program calls a goal tool (otherwise the right answer is a refusal or an answer)."""
        return bool(self.tools & self.goal_tools)


def _key(value: Any) -> str:
    return repr(value)


def _build(task: Task) -> Reference:
    by_call: dict[tuple[str, str], set[str]] = {}
    calls = []
    id_calls: dict[str, list[dict[str, frozenset[str]]]] = {}
    for step in task.gold.steps:
        calls.append((step.tool, tuple(sorted((k, _key(v)) for k, v in step.arguments.items()))))
        for name, value in step.arguments.items():
            for v in id_values(name, value):
                by_call.setdefault((step.tool, name), set()).add(v)
        id_calls.setdefault(step.tool, []).append(call_ids(step.arguments))
    mentioned = {r.mention for r in task.intent.refs if r.mention_kind == "id" and not r.mention.startswith("$")}
    mentioned.update(m.group(0) for m in _PROMPT_ID.finditer(task.prompt))
    order = tuple(
        (a.required[i], a.required[j]) for a in task.assertions if isinstance(a, TraceAssertion) for i, j in a.order
    )
    return Reference(
        tools=frozenset(s.tool for s in task.gold.steps),
        goal_tools=frozenset(c.tool for c in task.intent.calls),
        ids=frozenset(v for values in by_call.values() for v in values) | mentioned,
        ids_by_call={k: frozenset(v) for k, v in by_call.items()},
        calls=tuple(calls),
        order=order,
        requested=frozenset(mentioned),
        reply_ids=frozenset(text_ids(task.gold.reply or "")),
        id_calls={tool: tuple(found) for tool, found in id_calls.items()},
        program=tuple((step.tool, call_ids(step.arguments)) for step in task.gold.steps),
    )


def call_ids(arguments: dict[str, Any]) -> dict[str, frozenset[str]]:
    """The ids a call passes, by argument (arguments naming no id are left out)."""
    out = {name: frozenset(id_values(name, value)) for name, value in arguments.items()}
    return {name: ids for name, ids in out.items() if ids}


def same_record(step: TraceStep, ids: dict[str, frozenset[str]]) -> bool:
    """Whether ``step`` passes exactly the ids a call of the program passes (``ids``, by argument)."""
    return all(frozenset(id_values(name, step.arguments.get(name))) == want for name, want in ids.items())


def on_record(step: TraceStep, ids: Ids) -> bool:
    """Whether ``step`` is made on the records a call of the program names (``ids``, by argument).

    Ids the episode creates (``SL-N00002``) can differ from the program's and are not compared; a call naming no
    record matches any call of its tool.
    """
    for name, want in ids.items():
        fixed = frozenset(v for v in want if not _CREATED_ID.search(v))
        if fixed and frozenset(v for v in id_values(name, step.arguments.get(name))
                               if not _CREATED_ID.search(v)) != fixed:
            return False
    return True


def made(trace: list[TraceStep], tool: str, ids: Ids) -> bool:
    """Whether the agent called ``tool`` on the records a program call names (with any result)."""
    return any(s.tool == tool and on_record(s, ids) for s in trace)


def missing_calls(trace: list[TraceStep], ref: Reference) -> list[str]:
    """The tools of the program's calls the agent never made on their records, in program order, each once.

    The right tool on another record (``get_issue(INFRA-192)`` where the program reads ``INFRA-224``) leaves the
    program's call missing.
    """
    return list(dict.fromkeys(tool for tool, ids in ref.program if not made(trace, tool, ids)))


def intended_done(trace: list[TraceStep], ref: Reference, tool: str) -> bool:
    """Whether every call the program makes to ``tool`` also succeeded in ``trace`` on the same records.

    ``False`` when the program never calls ``tool``.
    """
    wanted = ref.id_calls.get(tool)
    if not wanted:
        return False
    done = [s for s in trace if s.ok and s.tool == tool]
    return all(any(same_record(s, ids) for s in done) for ids in wanted)


_CACHE: dict[int, tuple[Task, Reference]] = {}


def reference(task: Task) -> Reference:
    """The task's reference (cached per task object)."""
    cached = _CACHE.get(id(task))
    if cached is not None and cached[0] is task:
        return cached[1]
    ref = _build(task)
    if len(_CACHE) >= 10_000:
        _CACHE.clear()
    _CACHE[id(task)] = (task, ref)
    return ref


def matches(step: TraceStep, pattern: CallPattern) -> bool:
    """Whether ``step`` calls the pattern's tool with (at least) its arguments."""
    return step.tool == pattern.tool and all(step.arguments.get(k) == v for k, v in pattern.arguments.items())


def attempted(step: TraceStep) -> bool:
    """Whether the call reached the tool's checks (not refused for its shape or for an unknown tool)."""
    return step.ok or (step.error is not None and step.error.kind not in ("validation",))


def call_key(step: TraceStep) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The step as a gold call key."""
    return step.tool, tuple(sorted((k, _key(v)) for k, v in step.arguments.items()))

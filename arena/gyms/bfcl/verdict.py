"""BFCL's multi-turn verdict, judged by the gym: at the end of every turn, the world and the call results.

BFCL's multi-turn checker replays the model's calls turn by turn beside the ground truth's and, at each turn whose
ground truth makes calls, fails the entry when the model made no call in that turn, when any class's state (its
public attributes) differs from the ground truth's, or when a result of the turn's ground-truth calls is missing
from the results of every call the model made so far (compared as a multiset, in any order). Turns whose ground
truth makes no call (``miss_func``'s and ``miss_param``'s turns that cannot be answered yet) are not checked; their
calls still count for the next turn's state. An entry whose conversation stopped before its last turn fails.

Each checked turn is one :class:`~arena.core.task.DomainAssertion` of check :data:`CHECK`, whose ``params`` are a
:class:`TurnExpectation` computed when the pack is built (the ground truth played through the gym's own tools). The
check replays the episode's successful calls turn by turn on a fresh copy of the task's starting world (a refused
call changes nothing) to read each turn's state, and reads the results from the episode's trace.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from arena.core.conversation import Turn, turn_of
from arena.core.domain_check import CheckInput
from arena.core.results import TraceStep
from arena.core.task import DomainAssertion
from arena.gyms.bfcl.classes import Query
from arena.gyms.bfcl.world import CLASS_OF, CLASSES, class_state, state_digest

CHECK = "bfcl_turn"
"""The name of the gym's check (``Domain.checks``)."""


class TurnExpectation(BaseModel):
    """What BFCL's checker requires at the end of one turn.

    Attributes:
        turn: The user turn (from 0).
        states: Each involved class's public attributes after the ground truth's calls up to this turn, as one
            digest per class (:func:`class_digest`).
        results: The results of the ground truth's calls of this turn: ``(tool, digest)`` (:func:`result_digest`).
        last: Whether this is the task's last checked turn (then every turn must have been played).
        turns: How many user turns the task has.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int
    states: dict[str, str]
    results: list[tuple[str, str]]
    last: bool
    turns: int


def result_digest(step: TraceStep) -> str:
    """A call's result as BFCL compares results: equal results, equal digests (an error by its message)."""
    shown = f"ok:{json.dumps(step.output)}" if step.ok else f"error:{step.error.message if step.error else ''}"
    return hashlib.sha256(shown.encode()).hexdigest()[:12]


def state_digests(query: Query, task: str, classes: Sequence[str], steps: Sequence[TraceStep] = (),
                  before: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """Each class's public attributes in ``task`` as digests (class -> attribute -> digest).

    Given the digests ``before`` some calls (``steps``), only the classes those calls wrote to are read again.
    """
    written = {CLASS_OF.get(s.tool) for s in steps if s.ok and s.write}
    return {name: before[name] if before is not None and name in before and name not in written
            else {attr: state_digest(value) for attr, value in class_state(query, task, name).items()}
            for name in classes}


def class_digest(attributes: dict[str, str]) -> str:
    """One digest of a class's attribute digests (equal exactly when every attribute is)."""
    return state_digest(attributes)


def turn_assertion(expect: TurnExpectation) -> DomainAssertion:
    """The assertion judging one turn."""
    calls = len(expect.results)
    return DomainAssertion(check=CHECK, params=expect.model_dump(mode="json"),
                           description=f"turn {expect.turn + 1}: the world and the results of its {calls} "
                                       f"ground-truth call{'s' if calls != 1 else ''} match BFCL's ground truth")


@dataclass(frozen=True)
class _Played:
    """An episode replayed turn by turn: how many user turns it played, its calls and states per turn."""

    played: int
    calls: list[list[TraceStep]]
    states: list[dict[str, dict[str, str]]]


def _replay(inp: CheckInput, classes: list[str]) -> _Played:
    turns: list[Turn] = [t for t in inp.turns if isinstance(t, Turn)]
    users = [t for t in turns if t.role == "user"]
    by_turn: list[list[TraceStep]] = [[] for _ in users]
    for step in inp.trace:
        k = turn_of(turns, step.index)
        if 0 <= k < len(by_turn):
            by_turn[k].append(step)
    gym = inp.replay()
    states: list[dict[str, dict[str, str]]] = []
    for k, user in enumerate(users):
        gym.record_turn("user", user.text)
        start = len(gym.trace)
        for step in by_turn[k]:
            if step.ok:
                gym.call_tool(step.tool, step.arguments)
        states.append(state_digests(gym.query, inp.task.id, classes, gym.trace[start:], states[-1] if states else None))
    return _Played(played=len(users), calls=by_turn, states=states)


def _gold_attributes(inp: CheckInput, k: int, classes: list[str]) -> dict[str, dict[str, str]]:
    """The classes' attribute digests after the task's gold program up to turn ``k`` (to name what differs)."""
    conversation = inp.task.conversation
    texts = [t.text for t in conversation.user.turns] if conversation and conversation.user.kind == "given" else []
    gym = inp.replay()
    for turn, text in enumerate(texts[:k + 1]):
        gym.record_turn("user", text)
        for step in inp.task.gold.steps:
            if (step.turn or 0) == turn:
                gym.call_tool(step.tool, step.arguments)
    return state_digests(gym.query, inp.task.id, classes)


def check_turn(inp: CheckInput) -> tuple[bool, str]:
    """Judge one turn of a BFCL episode as BFCL's multi-turn checker does (see the module's documentation)."""
    expect = TurnExpectation.model_validate(inp.assertion.params)
    classes = sorted(expect.states)
    played: _Played = inp.memo.get(CHECK) or inp.memo.setdefault(CHECK, _replay(inp, classes))
    k = expect.turn
    if k >= played.played or (expect.last and played.played < expect.turns):
        return False, f"the conversation stopped after turn {played.played} of {expect.turns}"
    if expect.results and not played.calls[k]:
        return False, f"no call in turn {k + 1}, whose ground truth makes {len(expect.results)}"
    differ = [name for name in classes if class_digest(played.states[k].get(name, {})) != expect.states[name]]
    if differ:
        gold = _gold_attributes(inp, k, differ)
        shown = ", ".join(f"the {CLASSES[name].label}'s {attr}" for name in differ
                          for attr, digest in gold[name].items() if played.states[k].get(name, {}).get(attr) != digest)
        return False, f"after turn {k + 1} the world differs from the ground truth's: {shown}"
    seen = Counter(result_digest(s) for turn in played.calls[:k + 1] for s in turn)
    missing = []
    for tool, digest in expect.results:
        if seen[digest] > 0:
            seen[digest] -= 1
        else:
            missing.append(tool)
    if missing:
        return False, (f"{len(missing)} of turn {k + 1}'s {len(expect.results)} ground-truth results never came back "
                       f"from a call (from {', '.join(sorted(set(missing)))})")
    return True, ""


"""BFCL's multi-turn entries as gymloop tasks: given turns, gold per turn, a verdict per checked turn, fixed splits.

Each entry becomes the task ``<category>-<index>`` (``base-007`` is BFCL's ``multi_turn_base_7``): its conversation
is BFCL's user turns (a ``miss_func`` turn that adds functions says BFCL's fixed prompt and reveals them), its tools
are its classes' functions, its gold program is BFCL's ground truth turn by turn, its intent the ground truth as the
reference policy plays it (:func:`arena.authoring.foreign.intent_from_gold`), and each turn whose ground truth makes
calls is one assertion of BFCL's checker (:mod:`arena.gyms.bfcl.verdict`).

**Splits.** BFCL has no training split. gymloop trains on a fixed fifth of BFCL's entry numbers (40 of 200, drawn
once from a fixed seed), in every category, since entries of one number share their conversation across categories;
the other 160 numbers of every category are the held-out suite, the same for every pack.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from arena.authoring.foreign import PlayedTurn, gold_steps, intent_from_gold, play_gold
from arena.core.conversation import Conversation, GivenTurn, GivenTurns, TaskSource
from arena.core.domain import Domain
from arena.core.gym import Gym
from arena.core.task import DomainAssertion, GoldProgram, Intent, Persona, Task
from arena.gyms.bfcl.calls import parse_call
from arena.gyms.bfcl.data import BfclEntry
from arena.gyms.bfcl.verdict import (
    CHECK,
    TurnExpectation,
    class_digest,
    result_digest,
    state_digests,
    turn_assertion,
)
from arena.gyms.bfcl.world import CLASSES, TOOLS

ENTRIES_PER_CATEGORY = 200
"""Entries BFCL v4 has in each multi-turn category (numbered 0-199)."""

TRAIN_NUMBERS: frozenset[int] = frozenset(random.Random("bfcl-multi-turn/train").sample(range(ENTRIES_PER_CATEGORY),
                                                                                         40))
"""The entry numbers gymloop trains on, in every category; every other number is held out."""

ASSISTANT = Persona(name="Assistant", role="assistant", permissions=[])
"""Who the agent acts as: the user's assistant, with the functions of the task's classes."""

CATEGORY = "multi_step_workflow"
"""The task category (gymloop's vocabulary) of every BFCL task."""


def task_id(entry: BfclEntry) -> str:
    """The task id of a BFCL entry: ``<category>-<index:03d>``."""
    return f"{entry.category}-{entry.index:03d}"


def _calls(entry: BfclEntry) -> list[list[tuple[str, dict[str, Any]]]]:
    turns = []
    for text_calls in entry.gold:
        parsed = []
        for text in text_calls:
            name = text.split("(", 1)[0].strip()
            tool = TOOLS.get(name)
            if tool is None:
                raise ValueError(f"BFCL entry {entry.id}: ground-truth call {text!r} names no tool of the gym")
            parsed.append(parse_call(text, list(tool.args_model.model_fields)))
        turns.append(parsed)
    return turns


def _conversation(entry: BfclEntry) -> Conversation:
    hidden = sorted({name for names in entry.missed_function.values() for name in names})
    turns = [GivenTurn(text=text, reveal=list(entry.missed_function.get(k, []))) for k, text in enumerate(entry.turns)]
    return Conversation(user=GivenTurns(turns=turns), hidden_tools=hidden)


def _tools(entry: BfclEntry) -> list[str]:
    return sorted(name for cls in entry.involved_classes for name in CLASSES[cls].tools)


def draft(entry: BfclEntry) -> Task:
    """The task of an entry before its expectations are measured (a placeholder assertion, no intent)."""
    return Task(
        id=task_id(entry), prompt=entry.turns[0], persona=ASSISTANT,
        split="train" if entry.index in TRAIN_NUMBERS else "heldout", category=CATEGORY,
        intent=Intent(goal=f"bfcl_{entry.category}"), gold=GoldProgram(steps=gold_steps(_calls(entry))),
        assertions=[DomainAssertion(check=CHECK, description="measured when the pack is built")],
        conversation=_conversation(entry), tools=_tools(entry),
        source=TaskSource(benchmark="BFCL v4", domain=f"multi_turn_{entry.category}", task_id=entry.id),
    )


def finish(entry: BfclEntry, task: Task, played: Sequence[PlayedTurn]) -> Task:
    """The task with its intent and one assertion per turn whose ground truth makes calls."""
    checked = [k for k, calls in enumerate(entry.gold) if calls]
    expectations = [TurnExpectation(
        turn=k, states={name: class_digest(attrs) for name, attrs in played[k].measured.items()},
        last=k == checked[-1], turns=len(entry.turns),
        results=[(s.tool, result_digest(s)) for s in played[k].steps],
    ) for k in checked]
    return task.model_copy(update={
        "intent": intent_from_gold(f"bfcl_{entry.category}", played),
        "assertions": [turn_assertion(e) for e in expectations],
    })


def build_tasks(domain: Domain, state_db: bytes, clock_start: str, entries: Sequence[BfclEntry]) -> list[Task]:
    """Every entry's task, its expectations measured by playing BFCL's ground truth through the gym's tools.

    Raises:
        ValueError: A ground-truth call is not a call of a tool of the gym, or fails in the gym (names the entry).
    """
    drafts = [draft(e) for e in entries]
    classes = {task_id(e): list(e.involved_classes) for e in entries}
    last: dict[str, tuple[int, dict[str, dict[str, str]]]] = {}

    def measure(gym: Gym, task: Task) -> dict[str, dict[str, str]]:
        start, before = last.get(task.id, (0, None))
        digests = state_digests(gym.query, task.id, classes[task.id], gym.trace[start:], before)
        last[task.id] = (len(gym.trace), digests)
        return digests

    played = play_gold(domain, state_db, clock_start, drafts, measure)
    return [finish(e, t, played[t.id]) for e, t in zip(entries, drafts, strict=True)]

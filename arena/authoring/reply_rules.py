"""Reply checks that say what must not be said, derived once for every task of a gym.

A reply check that only looks for required substrings is passed by a reply that pastes whole records (the
required facts are in there somewhere) or by a success claim that happens to contain a status word. Every gym
runs its tasks through ``guard_replies``, which adds to each response assertion:

- an id rule: the reply may name only the records the request is about (the ids in the prompt, the gold reply
  and the gold program's arguments, plus what the episode's own writes return), so other entities' facts fail;
- a length limit, a few times the gold reply's, so a reply padded with records fails;
- on a task that must change nothing (a question or a refusal), a ban on success claims.
"""

from __future__ import annotations

import re
from typing import Any

from arena.core.task import ResponseAssertion, SideEffectAssertion, Task
from arena.core.verify import check_response

DEFAULT_ID_PATTERN = r"\b[A-Z]{2,5}(?:-[A-Z]{2,3})?-[A-Z]?\d+(?:-\d+)?\b"
"""Record ids as the built-in gyms write them: ``ORD-10234``, ``APR-10001-2``, ``FX-EUR-202501``."""

MIN_REPLY_CHARS = 400
"""The length limit is never below this many characters."""

REPLY_LENGTH_FACTOR = 4
"""The length limit is this many times the gold reply's length (when that is more than the minimum)."""

SUCCESS_CLAIMS = ("successfully", "all completed", "has been completed", "have been completed", "all done")
"""Phrases that claim an action succeeded; banned from replies to tasks that must change nothing."""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def allowed_ids(task: Task, id_pattern: str) -> list[str]:
    """The record ids a reply to ``task`` may name: those of the prompt, the gold reply and the gold arguments."""
    texts = [task.prompt, task.gold.reply, *(s for step in task.gold.steps for s in _strings(step.arguments))]
    return sorted({m.group(0).upper() for text in texts for m in re.finditer(id_pattern, text)})


def _changes_nothing(task: Task) -> bool:
    scopes = [s for a in task.assertions if isinstance(a, SideEffectAssertion) for s in a.allowed]
    return any(isinstance(a, SideEffectAssertion) for a in task.assertions) and not scopes


def guard_reply(task: Task, *, id_pattern: str = DEFAULT_ID_PATTERN) -> Task:
    """Return ``task`` with every response assertion also stating what the reply must not say.

    Raises:
        ValueError: The gold reply itself breaks a derived rule (a task definition bug), naming the task.
    """
    gold = task.gold.reply
    ids = allowed_ids(task, id_pattern)
    limit = max(MIN_REPLY_CHARS, REPLY_LENGTH_FACTOR * len(gold))
    claims = [c for c in SUCCESS_CLAIMS if c not in gold.casefold()] if _changes_nothing(task) else []
    assertions = []
    for assertion in task.assertions:
        if isinstance(assertion, ResponseAssertion):
            banned = [*assertion.must_not_include, *(c for c in claims if c not in assertion.must_not_include)]
            assertion = assertion.model_copy(update={
                "must_not_include": banned, "max_chars": assertion.max_chars or limit,
                "id_pattern": assertion.id_pattern or id_pattern, "allowed_ids": sorted({*assertion.allowed_ids, *ids}),
            })
            ok, detail = check_response(gold, assertion)
            if not ok:
                raise ValueError(f"task {task.id}: the gold reply fails its own reply check ({detail})")
        assertions.append(assertion)
    return task.model_copy(update={"assertions": assertions})


def guard_replies(tasks: list[Task], *, id_pattern: str = DEFAULT_ID_PATTERN) -> list[Task]:
    """Apply ``guard_reply`` to every task of a gym."""
    return [guard_reply(t, id_pattern=id_pattern) for t in tasks]

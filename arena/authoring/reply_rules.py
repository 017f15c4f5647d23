"""Reply checks that say what must not be said, derived once for every task of a gym from the gym's own world.

A reply check that only looks for required substrings is passed by a reply that pastes whole records (the
required facts are in there somewhere), by a success claim that happens to contain a status word, or by the
right answer with something else smuggled in however it is spelled. Every gym runs its tasks through
``guard_replies`` with its world and tools, which adds to each response assertion:

- an id rule: the reply may name only the records the request is about (the ids in the prompt, the gold reply
  and the gold program's arguments, plus what the episode's own writes return); ids are the world's own (its text
  primary keys) and its id formats (``arena.core.ids.id_formats``), found however they are spelled, so other
  entities' records fail in lower case, with other separators, zero-width or full-width characters, in JSON, a
  Markdown table or base64; with it, a reply that hedges across candidate records or dumps their values fails;
- a length limit, a few times the gold reply's, so a reply padded with records fails;
- on a task that must change nothing (a question or a refusal), a claim rule: a reply that states or implies a
  change was made fails (``arena.core.claims``), with the verbs of the writes the request asks for.

Internal values (the exclusions that are values, and whatever the forbidden patterns match in the episode's tool
outputs) are found in every re-spelling and encoding by ``arena.core.verify.check_response`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.core.claims import tool_verbs
from arena.core.ids import RecordIds, ids_in, stored_world_ids
from arena.core.task import ResponseAssertion, SideEffectAssertion, Task
from arena.core.toolkit import Tool
from arena.core.verify import check_response

DEFAULT_ID_PATTERN = r"\b[A-Z]{2,5}(?:-[A-Z]{2,3})?-[A-Z]?\d+(?:-\d+)?\b"
"""Record ids in the built-in gyms' ``ORD-10234`` shape: the id rule of a gym guarded without its world."""

MIN_REPLY_CHARS = 400
"""The length limit is never below this many characters."""

REPLY_LENGTH_FACTOR = 4
"""The length limit is this many times the gold reply's length (when that is more than the minimum)."""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def allowed_ids(task: Task, id_pattern: str, known: RecordIds | None = None) -> list[str]:
    """The record ids a reply to ``task`` may name: those of the prompt, the gold reply and the gold arguments.

    Each is written as the world writes it when it is one of the world's ids (``known``), in upper case otherwise.
    """
    texts = [task.prompt, task.gold.reply, *(s for step in task.gold.steps for s in _strings(step.arguments))]
    return sorted({shown for text in texts for shown in ids_in(text, id_pattern, known, hidden=False).values()})


def _changes_nothing(task: Task) -> bool:
    scopes = [s for a in task.assertions if isinstance(a, SideEffectAssertion) for s in a.allowed]
    return any(isinstance(a, SideEffectAssertion) for a in task.assertions) and not scopes


def _requested_verbs(task: Task, tools: Mapping[str, Tool] | None) -> list[str]:
    """The verbs of the writes the request asks for (all its goal calls when the tools are not given)."""
    calls = [c.tool for c in task.intent.calls if tools is None or (c.tool in tools and tools[c.tool].spec.mode
                                                                      == "write")]
    return sorted({v for tool in calls for v in tool_verbs(tool)})


def guard_reply(task: Task, *, id_pattern: str = DEFAULT_ID_PATTERN, known: RecordIds | None = None,
                tools: Mapping[str, Tool] | None = None) -> Task:
    """Return ``task`` with every response assertion also stating what the reply must not say.

    Args:
        task: The task.
        id_pattern: The world's id formats (see ``arena.core.ids.id_formats``).
        known: The world's record ids.
        tools: The gym's tools (to tell the writes a refused request asks for from its reads).

    Raises:
        ValueError: The gold reply itself breaks a derived rule (a task definition bug), naming the task.
    """
    gold = task.gold.reply
    ids = allowed_ids(task, id_pattern, known)
    limit = max(MIN_REPLY_CHARS, REPLY_LENGTH_FACTOR * len(gold))
    claims = _requested_verbs(task, tools) if _changes_nothing(task) else None
    assertions = []
    for assertion in task.assertions:
        if isinstance(assertion, ResponseAssertion):
            assertion = assertion.model_copy(update={
                "max_chars": assertion.max_chars or limit, "id_pattern": assertion.id_pattern or id_pattern,
                "allowed_ids": sorted({*assertion.allowed_ids, *ids}),
                "change_claims": assertion.change_claims if assertion.change_claims is not None else claims,
            })
            # Claims are judged against what the episode read, which a reply alone does not carry: the careful
            # policy's episodes check them (``gymloop gyms check``).
            ok, detail = check_response(gold, assertion.model_copy(update={"change_claims": None}))
            if not ok:
                raise ValueError(f"task {task.id}: the gold reply fails its own reply check ({detail})")
        assertions.append(assertion)
    return task.model_copy(update={"assertions": assertions})


def guard_replies(tasks: list[Task], *, world: bytes | None = None, tools: Mapping[str, Tool] | None = None,
                  id_pattern: str | None = None) -> list[Task]:
    """Apply ``guard_reply`` to every task of a gym, with the id formats and record ids of its world.

    Args:
        tasks: The gym's tasks.
        world: The gym's serialized SQLite world (``None``: ids in the ``DEFAULT_ID_PATTERN`` shape only).
        tools: The gym's tools.
        id_pattern: An id pattern to use instead of the world's formats.
    """
    known = None
    derived = None
    if world is not None:
        stored = stored_world_ids(world)
        known = stored.known
        derived = stored.formats if id_pattern is None else None
    pattern = id_pattern or derived or DEFAULT_ID_PATTERN
    return [guard_reply(t, id_pattern=pattern, known=known, tools=tools) for t in tasks]


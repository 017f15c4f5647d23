"""Helpers detectors share: reading ids, replies, errors and arguments off a trace."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from arena.core.episode import EpisodeRecord
from arena.core.results import TraceStep
from arena.core.values import amounts_in
from diagnosis._reply import clauses, is_participle, read_reply

_ID = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+$")
_CREATED_ID = re.compile(r"-N\d{5}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_CODE = re.compile(r"^[A-Z0-9_]+$")

_SUCCESS_WORDS = re.compile(r"\b(?:all done|done|completed?|success(?:ful(?:ly)?)?|all set|finished)\b", re.IGNORECASE)
_UNKNOWN_TOOL = "unknown tool"
_MIN_FACT = 3


def is_id_like(value: Any) -> bool:
    """Whether ``value`` looks like an entity id (``ORD-10234``), not a name, email or free text."""
    return isinstance(value, str) and bool(_ID.match(value)) and any(c.isdigit() for c in value)


def is_created_id(value: str) -> bool:
    """Whether ``value`` is an id the episode itself generated (``RF-N00001``)."""
    return bool(_CREATED_ID.search(value))


def id_arguments(step: TraceStep) -> Iterator[tuple[str, Any]]:
    """Yield ``(name, value)`` of the step's entity-reference arguments (``E_id``)."""
    for name, value in step.arguments.items():
        if name.endswith("_id") or name == "id":
            yield name, value


def known_ids(trace: list[TraceStep]) -> set[str]:
    """Values the world accepted as ids: id arguments of successful calls and ids their outputs returned."""
    out: set[str] = set()
    for step in trace:
        if not step.ok:
            continue
        out.update(v for _, v in id_arguments(step) if isinstance(v, str))
        out.update(output_ids(step.output))
    return out


def output_ids(output: Any) -> Iterator[str]:
    if isinstance(output, dict):
        for key, value in output.items():
            if isinstance(value, str) and (key == "id" or key.endswith("_id")):
                yield value
            elif isinstance(value, (dict, list)):
                yield from output_ids(value)
    elif isinstance(output, list):
        for value in output:
            yield from output_ids(value)


def value_shape(value: Any) -> str:
    """Return a coarse shape of an argument value: ``id``, ``date``, ``number``, ``code``, ``text``, ..."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        if not value:
            return "empty"
        if _DATE.match(value):
            return "date"
        if _NUMBER.match(value):
            return "numeric_text"
        if is_id_like(value):
            return "id"
        if _CODE.match(value):
            return "code"
        return "text"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else "other"


def reply_gives_up(reply: str) -> bool:
    """Whether the reply says the agent could not do or find what was asked."""
    return read_reply(reply).admits_failure


def reply_claims_success(reply: str) -> bool:
    """Whether the reply says the work is done (and does not say it failed)."""
    return read_reply(reply).claims_success


def _values(output: Any) -> Iterator[str]:
    """Yield the scalar values of a tool output as text (strings, numbers; not booleans or nulls)."""
    if isinstance(output, dict):
        for value in output.values():
            yield from _values(value)
    elif isinstance(output, list):
        for value in output:
            yield from _values(value)
    elif isinstance(output, str):
        yield output
    elif isinstance(output, (int, float)) and not isinstance(output, bool):
        yield str(output)


def reply_states_observed_fact(episode: EpisodeRecord) -> bool:
    """Whether the reply, beyond its words of success, restates a value some successful tool call returned."""
    rest = _SUCCESS_WORDS.sub(" ", episode.reply).casefold()
    for step in episode.trace:
        if not step.ok:
            continue
        for value in _values(step.output):
            text = value.strip().casefold()
            if len(text) >= _MIN_FACT and text in rest:
                return True
    return False


def is_unknown_tool_error(step: TraceStep) -> bool:
    """Whether the gym refused the step because the agent named a tool that does not exist."""
    return step.error is not None and step.error.kind == "validation" and step.error.message.startswith(_UNKNOWN_TOOL)


def later_ok(trace: list[TraceStep], after: int, tool: str) -> bool:
    """Whether ``tool`` succeeded at some step after index ``after``."""
    return any(s.ok and s.tool == tool for s in trace[after + 1:])


def later_call(trace: list[TraceStep], after: int, tool: str) -> bool:
    """Whether ``tool`` was called (with any result) after index ``after``."""
    return any(s.tool == tool for s in trace[after + 1:])


def error_argument(step: TraceStep) -> str | None:
    """Name the argument an error message points at: its leading ``name:`` or name, or one whose value it quotes."""
    if step.error is None:
        return None
    message = step.error.message
    head = message.split(":", 1)[0].split(".", 1)[0].strip()
    if head in step.arguments:
        return head
    first = message.split(None, 1)[0].strip(":,.'\"") if message.strip() else ""
    if first in step.arguments:
        return first
    for name, value in step.arguments.items():
        if isinstance(value, (str, int, float)) and str(value) and str(value) in message:
            return name
    return None


def summaries(output: Any) -> list[dict[str, Any]]:
    """Return the ``{"id": ...}`` summaries a search step returned (empty for anything else)."""
    if isinstance(output, dict):
        for key in ("results", "items", "matches"):
            if isinstance(output.get(key), list):
                output = output[key]
                break
    if not isinstance(output, list):
        return []
    return [s for s in output if isinstance(s, dict) and "id" in s]


def failed_assertion_kinds(episode: EpisodeRecord) -> set[str]:
    """Kinds of the assertions that did not hold."""
    if episode.verdict is None:
        return set()
    return {r.kind for r in episode.verdict.results if not r.passed}


def mentions(text: str, value: str) -> bool:
    """Whether ``text`` states ``value`` as a whole token (case-insensitive), not inside a longer word or id."""
    if len(value) < 2:
        return False
    return re.search(r"(?<![\w-])" + re.escape(value) + r"(?![\w-]|\.\d)", text, re.IGNORECASE) is not None


def states_value(text: str, value: str) -> bool:
    """Whether ``text`` states ``value`` as a record's state, not only as the verb of an action it reports done.

    "Suspended the vendor", "I suspended it", "the vendor was suspended", a heading "Done: ..." and a sign-off "All
    done." report the agent's own action (a claim, judged against the trace); "the vendor is suspended" and "status:
    suspended" state
    the record. Only a value that can be an action's participle is read this way ("open" is always a state). A
    negated value ("was not paid", "is no longer open") is not stated.
    """
    word = re.escape(value)
    negated = re.compile(rf"\b(?:not|never|no longer|n't)\s+(?:\w+\s+)?{word}\b", re.IGNORECASE)
    if not is_participle(value):
        return any(mentions(clause, value) and not negated.search(clause) for clause in clauses(text))
    action = re.compile(rf"^(?:\w+ly\s+)?{word}(?:\s+\w|\s*:$)"
                        rf"|\b(?:i|we|was|were|been|got)\s+(?:\w+ly\s+|just\s+)?{word}\b"
                        rf"|^(?:all|everything(?:'s|\s+is)?|that's(?:\s+all)?|it's\s+all)\s+{word}\W*$", re.IGNORECASE)
    return any(mentions(clause, value) and not action.search(clause) and not negated.search(clause)
               for clause in clauses(text))


def states_field(text: str, field: str, value: str, fields: Iterable[str]) -> bool:
    """Whether ``text`` states ``value`` as a record's ``field`` (``states_value``), not as another field's, nor quoted.

    A record pasted whole into the text (a JSON object) quotes what was read; it states nothing of the record now.
    A sentence that names another of the record's fields before the value, and not this one, gives the value as
    that field's ("The version name is unreleased" states no status): a wrong fact, not this field's value.
    """
    plain = without_pasted_records(text)
    if not states_value(plain, value):
        return False
    found = re.finditer(r"(?<![\w-])" + re.escape(value) + r"(?![\w-]|\.\d)", plain, re.IGNORECASE)
    return any(_said_as(plain, m.start(), field, fields) for m in found)


def states_number(text: str, field: str, old: float, new: float, fields: Iterable[str]) -> bool:
    """Whether ``text`` states the number ``old`` as a record's ``field`` (in any spelling) and never ``new``.

    As ``states_field``: not inside a pasted record, nor in a sentence giving it as another field's.
    """
    plain = without_pasted_records(text)
    written = amounts_in(plain)
    if any(value == Decimal(str(new)) for value, _, _ in written):
        return False
    return any(value == Decimal(str(old)) and _said_as(plain, start, field, fields) for value, start, _ in written)


def _said_as(text: str, at: int, field: str, fields: Iterable[str]) -> bool:
    """Whether the value at ``at`` is given as ``field``'s: its sentence names the field, or none of the others."""
    head = re.split(r"[.!?;\n]\s", text[:at])[-1].casefold()
    others = [_field_words(f) for f in fields if f != field]
    return bool(_field_words(field).search(head)) or not any(other.search(head) for other in others)


def _field_words(field: str) -> re.Pattern[str]:
    """A field's name as a reply writes it ("release_date": "release date" or "release_date")."""
    words = [w for w in field.casefold().split("_") if w]
    return re.compile(r"\b" + r"[\s_]".join(map(re.escape, words)) + r"\b")


def without_pasted_records(text: str) -> str:
    """``text`` without the JSON objects pasted into it (a record quoted whole, as a tool returned it)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        start = text.find("{", i)
        if start < 0 or not re.match(r'\{\s*"', text[start:]):
            out.append(text[i:] if start < 0 else text[i:start + 1])
            i = len(text) if start < 0 else start + 1
            continue
        depth, end = 0, start
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        out.append(text[i:start] + " ")
        i = end + 1
    return "".join(out)


def contains_text(haystack: str, needle: str) -> bool:
    """Case-insensitive containment of a non-trivial value's text."""
    return len(needle) >= 2 and needle.casefold() in haystack.casefold()


def is_conflict(step: TraceStep) -> bool:
    """Whether the step was refused because the record changed since it was read.

    A retryable conflict, or an injected data conflict; a conflict saying the change is already there is not one.
    """
    error = step.error
    return error is not None and ((error.kind == "conflict" and error.retryable) or error.fault == "data_conflict")

"""How an agent words its reply, and how it names a call in plain words.

The careful policy's reply is one ``what: value`` line per fact (``order status: delivered``), one per id a write
returned, ``Could not proceed: <why>`` per refusal and ``Could not complete <tool>: <why>`` per failed call. A voice
turns those lines into the agent's own wording without changing a fact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena.agents.reference import format_value

_PAST = {
    "activate": "activated", "add": "added", "apply": "applied", "approve": "approved", "assign": "assigned",
    "bulk": "bulk-changed", "cancel": "cancelled", "close": "closed", "create": "created", "escalate": "escalated",
    "flag": "flagged", "grant": "granted", "hold": "put on hold", "issue": "issued", "link": "linked",
    "log": "logged", "match": "matched", "pay": "paid", "reassign": "reassigned", "record": "recorded",
    "release": "released", "remove": "removed", "reply": "replied", "request": "requested", "send": "sent",
    "set": "set", "submit": "submitted", "suspend": "suspended", "transition": "moved", "update": "updated",
    "upload": "uploaded",
}


def describe_call(tool: str, args: dict[str, Any], *, done: bool = True) -> str:
    """A call in plain words: ``issued the refund (order_id ORD-10771, amount 148.99)``.

    Args:
        tool: Tool name.
        args: Its arguments.
        done: Past tense (``issued the refund``) or infinitive (``issue the refund``).
    """
    verb, _, rest = tool.partition("_")
    action = (_PAST.get(verb, verb + "ed") if done else verb) + (f" the {rest.replace('_', ' ')}" if rest else "")
    shown = ", ".join(f"{k} {format_value(v)}" for k, v in args.items() if not isinstance(v, dict))
    return f"{action} ({shown})" if shown else action


def _sentence(line: str) -> str:
    what, sep, value = line.partition(": ")
    if not sep:
        return line if line.endswith((".", "?", "!", ")")) else line + "."
    if what == "Could not proceed":
        return f"I could not go ahead: {value.rstrip('.')}."
    if what.startswith("Could not complete"):
        return f"The step {what.removeprefix('Could not complete ').strip()} did not go through: {value.rstrip('.')}."
    return f"The {what.replace('_', ' ')} is {value}."


def _terse(reply: str) -> str:
    return reply


def _bulleted(reply: str) -> str:
    lines = [line for line in reply.splitlines() if line.strip()]
    if len(lines) <= 1 and (not lines or ": " not in lines[0]):
        return reply
    return "Here is what I found and did:\n" + "\n".join(f"- {line}" for line in lines)


def _prose(reply: str) -> str:
    lines = [line for line in reply.splitlines() if line.strip()]
    if len(lines) <= 1 and (not lines or ": " not in lines[0]):
        return reply
    return " ".join(_sentence(line) for line in lines)


@dataclass(frozen=True)
class Voice:
    """A way of wording replies.

    Attributes:
        name: ``terse`` (the facts as lines), ``bulleted`` (a lead-in and a list) or ``prose`` (sentences).
        word: Rewords the careful policy's reply.
    """

    name: str
    word: Callable[[str], str]

    def __call__(self, reply: str) -> str:
        """The reply in this voice."""
        return self.word(reply)


TERSE = Voice("terse", _terse)
BULLETED = Voice("bulleted", _bulleted)
PROSE = Voice("prose", _prose)
VOICES = (TERSE, BULLETED, PROSE)
"""Every voice, in the order the catalogue hands them out."""

VOICE_NAMED = {v.name: v for v in VOICES}
"""Each voice by name."""

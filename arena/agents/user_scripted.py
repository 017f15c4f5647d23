"""The scripted user: a deterministic user played from a scenario's reason for calling, known and unknown info.

It needs no model, so tests, the reference policy and the demo run offline; the same scenario and the same agent
messages always give the same conversation. It is a plain reader of its scenario, not a model of a person:

- it opens with its reason for calling and what it knows, said in the first person;
- to a request for confirmation it agrees (every time: a limit of the episode ends an agent that only asks);
- to a question about what it knows it repeats the lines that answer it (all it knows when no line does); to a
  question about what the scenario says it does not know it says so;
- when the agent says it is transferring the user to a human it writes ``###TRANSFER###``;
- to a message that asks nothing it thanks the agent and ends the conversation (``###STOP###``), as it does when
  it would only repeat itself.

Every figure taken with it says so (``EpisodeRecord.user.ref == "scripted"``).
"""

from __future__ import annotations

import re

from arena.agents.user import UserReply
from arena.core.conversation import (
    STOP_TOKEN,
    TRANSFER_TOKEN,
    EndReason,
    UserScenario,
    UserSide,
    first_person,
    sentences,
)

CONFIRMATION = re.compile(
    r"\b(confirm|proceed|go ahead|shall i|should i|would you like|do you want|is that (?:correct|right|ok)|"
    r"can you confirm|yes or no|\(yes/no\)|okay to)\b", re.IGNORECASE)
"""A question asking the user to agree to an action."""

TRANSFER = re.compile(r"\btransfer\w*\b.*\b(human|agent|representative|supervisor)\b", re.IGNORECASE | re.DOTALL)
"""A message saying the user is being handed to a person."""

AGREE = "Yes, please go ahead."
"""The scripted user's answer to a request for confirmation."""

THANKS = "Thank you, that is all I needed."
"""The scripted user's last message."""

DONT_KNOW = "I'm sorry, I don't know that."
"""The scripted user's answer to a question about what it does not know."""

_STOP_WORDS = frozenset("a an the is are am was were my your you i me do does what which of for to in on and or "
                        "please could can would will tell give provide share me us it this that with".split())


def _lines(text: str) -> list[str]:
    return [first_person(line) for line in sentences(text)]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_#]+", text.lower()) if w not in _STOP_WORDS and len(w) > 1}


class ScriptedUser:
    """Plays a scenario deterministically (see the module's rules).

    Args:
        scenario: The user's scenario.
        patience: Most times it answers the same way before it ends the conversation.
    """

    ref = "scripted"

    def __init__(self, scenario: UserScenario, *, patience: int = 2) -> None:
        self._opening = scenario.opening
        self._known = _lines(scenario.known_info)
        self._unknown = _lines(scenario.unknown_info)
        self._patience = patience
        self._said: dict[str, int] = {}

    def open(self) -> UserReply:
        """Hello, the reason for calling and what the user knows (``UserScenario.opening``)."""
        return UserReply(text=self._opening)

    def reply(self, message: str) -> UserReply:
        """The scripted answer to the agent's message."""
        if TRANSFER.search(message):
            return UserReply(text=TRANSFER_TOKEN, ended="transfer")
        if "?" not in message:
            return self._stop()
        if CONFIRMATION.search(message):
            return UserReply(text=AGREE)
        asked = _words(message)
        if any(asked & _words(line) for line in self._unknown) and not any(asked & _words(k) for k in self._known):
            return self._say(DONT_KNOW)
        answer = [line for line in self._known if asked & _words(line)] or self._known
        return self._say(" ".join(answer) if answer else DONT_KNOW)

    async def aopen(self) -> UserReply:
        """``open``."""
        return self.open()

    async def areply(self, message: str) -> UserReply:
        """``reply``."""
        return self.reply(message)

    def side(self, ended: EndReason) -> UserSide:
        """Who played (``scripted``) and how the conversation ended."""
        return UserSide(ref=self.ref, ended=ended)

    def _say(self, text: str) -> UserReply:
        count = self._said.get(text, 0) + 1
        self._said[text] = count
        if count > self._patience:
            return self._stop()
        return UserReply(text=text)

    @staticmethod
    def _stop() -> UserReply:
        return UserReply(text=f"{THANKS} {STOP_TOKEN}", ended="user_stop")

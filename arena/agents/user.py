"""The user of a conversational episode: who plays it, and how it is chosen.

A conversational task (``Task.conversation``) has a user: the :class:`~arena.core.conversation.GivenTurns` of a
benchmark (:class:`GivenUser`, no model), or a :class:`~arena.core.conversation.UserScenario` a simulator plays:
the deterministic :class:`~arena.agents.user_scripted.ScriptedUser` offline (tests, the reference policy, the demo),
or :class:`~arena.agents.user_llm.LLMUser`, any litellm model through the agent's own client code
(``ConversationConfig.user_model``). :func:`arena.rollout.conversation.make_user` picks one per episode; every
record names which played.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.litellm_agent import LiteLLMConfig
from arena.core.conversation import (
    OUT_OF_SCOPE_TOKEN,
    STOP_TOKEN,
    TRANSFER_TOKEN,
    EndReason,
    GivenTurns,
    UserSide,
)


class ConversationConfig(BaseModel):
    """How the conversational episodes of a batch are played.

    Attributes:
        user_model: The model that plays simulated users (any litellm model, its own endpoint, limits and prices);
            ``None`` plays them with the scripted user.
        judge_model: The model that checks a conversation's ``judge`` statements; ``None`` leaves them unjudged.
        max_turns: Most user messages in one conversation; past it the conversation is cut short (``max_turns``).
        max_errors: Most failed tool calls in one conversation; past it the conversation is cut short
            (``too_many_errors``), as τ²-bench stops at 10.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_model: LiteLLMConfig | None = None
    judge_model: LiteLLMConfig | None = None
    max_turns: int = Field(default=30, ge=1, le=1000)
    max_errors: int = Field(default=10, ge=1, le=1000)


class UserReply(BaseModel):
    """One message of the user, as the user wrote it, and whether it ends the conversation.

    Attributes:
        text: The message, stop tokens included (the record keeps what was said).
        ended: How the message ends the conversation (``None``: it does not).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    ended: EndReason | None = None

    @property
    def said(self) -> str:
        """The message without its stop tokens: what the agent reads."""
        text = self.text
        for token in (STOP_TOKEN, TRANSFER_TOKEN, OUT_OF_SCOPE_TOKEN):
            text = text.replace(token, "")
        return text.strip()


class UserFailure(Exception):
    """The user's model failed (the infrastructure's fault: the episode is invalid, boundary ``user``).

    Args:
        kind: The failure class (``rate_limit``, ``timeout``, ``server_error``, ``configuration``, ...).
        message: Details.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class User(Protocol):
    """Plays the requester of one conversational episode."""

    @property
    def ref(self) -> str:
        """Who plays: ``scripted``, ``given`` or the user model (endpoint masked)."""
        ...

    def open(self) -> UserReply:
        """The message that opens the conversation.

        Raises:
            UserFailure: The user's model failed.
        """
        ...

    def reply(self, message: str) -> UserReply:
        """The user's answer to the agent's message.

        Raises:
            UserFailure: The user's model failed.
        """
        ...

    async def aopen(self) -> UserReply:
        """``open`` on an event loop."""
        ...

    async def areply(self, message: str) -> UserReply:
        """``reply`` on an event loop."""
        ...

    def side(self, ended: EndReason) -> UserSide:
        """What the record keeps of the user: who played, what its model used, how the conversation ended."""
        ...


def classify_reply(text: str) -> EndReason | None:
    """How a simulated user's message ends the conversation, by its stop token (``None``: it goes on).

    A message holding the give-up token is an abort whatever else it holds: τ²-bench does not grade those.
    """
    if OUT_OF_SCOPE_TOKEN in text:
        return "out_of_scope"
    if STOP_TOKEN in text:
        return "user_stop"
    if TRANSFER_TOKEN in text:
        return "transfer"
    return None


class GivenUser:
    """Says a benchmark's given turns in order, whatever the agent answers; no model plays it.

    Args:
        turns: The given user turns.
    """

    ref = "given"

    def __init__(self, turns: GivenTurns) -> None:
        self._texts = [t.text for t in turns.turns]
        self._next = 0

    def open(self) -> UserReply:
        """The first given turn."""
        return self._say()

    def reply(self, message: str) -> UserReply:
        """The next given turn; once all were said, the conversation ends (``given_turns_done``)."""
        return self._say()

    async def aopen(self) -> UserReply:
        """``open``."""
        return self._say()

    async def areply(self, message: str) -> UserReply:
        """``reply``."""
        return self._say()

    def _say(self) -> UserReply:
        if self._next >= len(self._texts):
            return UserReply(text="", ended="given_turns_done")
        self._next += 1
        return UserReply(text=self._texts[self._next - 1])

    def side(self, ended: EndReason) -> UserSide:
        """Who played (``given``) and how the conversation ended."""
        return UserSide(ref=self.ref, ended=ended)

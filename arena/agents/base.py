"""The agent contract: play one episode through the gym's tool-call function (and, in a conversation, its user)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from arena.core.gym import Observation
from arena.core.results import ToolResult
from arena.core.toolkit import ToolSpec

CallTool = Callable[[str, "dict[str, Any] | str | None"], ToolResult]
"""The only way an agent acts on the world: ``call_tool(name, arguments)``."""


class AgentRun(BaseModel):
    """What an agent reports at the end of an episode.

    Attributes:
        reply: The final reply to the requester.
        tokens_in: Prompt tokens used.
        tokens_out: Completion tokens used.
        cost: Cost in US dollars.
        latency_s: Time spent waiting on the model.
        turns: Model turns taken.
        stop_reason: ``reply``, ``step_limit``, ``token_limit`` or ``gave_up``; in a conversation also
            ``user_stop`` (the user closed it), ``agent_stop`` (the agent closed it with ``###STOP###``) or
            ``ended`` (a limit of the conversation ended it).
        decisions: Decisions taken (reference policy), for training; empty otherwise.
    """

    model_config = ConfigDict(extra="forbid")

    reply: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    turns: int = 0
    stop_reason: str = "reply"
    decisions: list[dict[str, Any]] = []


class UserMessage(BaseModel):
    """What the user answers to one of the agent's messages.

    Attributes:
        text: The user's message (a stop token it wrote left out).
        ended: The user closed the conversation with it: the agent sends nothing more.
        tools: Tools this message makes available, offered to the agent from now on (a benchmark's given turn
            that reveals tools held back until then).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    ended: bool = False
    tools: list[ToolSpec] = Field(default_factory=list)


class ConversationOver(Exception):
    """The conversation has ended (the user closed it, or a limit was reached): the agent's episode is over.

    Raised by the user channel (a message sent after the end) and by ``call_tool`` in a conversation cut short by
    a limit; the episode loop records how the conversation ended.
    """


@runtime_checkable
class UserChannel(Protocol):
    """How an agent talks with the user of a conversational episode; the episode records every message."""

    def send(self, message: str) -> UserMessage:
        """Say ``message`` to the user and return the user's answer.

        Raises:
            ConversationOver: The conversation has already ended.
        """
        ...

    async def asend(self, message: str) -> UserMessage:
        """``send``, awaiting a user model's answer on an event loop.

        Raises:
            ConversationOver: The conversation has already ended.
        """
        ...


class ModelAPIError(Exception):
    """The model's API failed: the infrastructure (invalid) or the model's own conversation (a failed episode).

    Args:
        kind: ``rate_limit``, ``timeout``, ``server_error``, ``configuration`` (invalid), ``bad_request``,
            ``context_length``, ``malformed_answer`` (the model's own).
        message: Details.
        invalid: The rollout is invalid (excluded from pass rates and training): the infrastructure failed, not
            the model; ``False`` makes it the model's failed episode.
        usage: What the agent had used before failing.
    """

    def __init__(self, kind: str, message: str, *, invalid: bool = True, usage: AgentRun | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.invalid = invalid
        self.usage = usage or AgentRun()


@runtime_checkable
class Agent(Protocol):
    """Plays episodes. Implementations: ``LiteLLMAgent``, ``ReferencePolicy``."""

    name: str
    """Agent kind, e.g. ``litellm`` or ``reference``."""

    @property
    def model_ref(self) -> str:
        """The model this agent runs (name, version or endpoint)."""
        ...

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Play one episode and return the final reply and usage.

        Raises:
            ModelAPIError: The model's API failed (boundary ``model_api``).
        """
        ...


@runtime_checkable
class AsyncAgent(Agent, Protocol):
    """An agent that can also play an episode on an event loop, awaiting its model (``LiteLLMAgent``).

    The rollout engine keeps many such episodes in flight on one event loop instead of one thread each, when the
    agent says its event-loop path is the better one.
    """

    @property
    def prefers_event_loop(self) -> bool:
        """Whether concurrent episodes should run on an event loop (``arun_episode``) rather than on threads."""
        ...

    async def arun_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """``run_episode``, awaiting the model's answers.

        Raises:
            ModelAPIError: The model's API failed (boundary ``model_api``).
        """
        ...


@runtime_checkable
class ConversationalAgent(Agent, Protocol):
    """An agent that can hold a conversation: its messages go to the user, whose answers come back to it.

    An agent without ``run_conversation`` plays a conversational task with one reply, which is its one message.
    """

    def run_conversation(self, observation: Observation, call_tool: CallTool, user: UserChannel, *,
                         seed: int) -> AgentRun:
        """Converse with ``user`` until the user closes the conversation (or a limit), acting through ``call_tool``.

        ``observation.task["prompt"]`` is the user's opening message. ``AgentRun.reply`` is the agent's last
        message.

        Raises:
            ModelAPIError: The model's API failed (boundary ``model_api``).
            ConversationOver: A limit ended the conversation (the episode loop records which).
        """
        ...


@runtime_checkable
class AsyncConversationalAgent(ConversationalAgent, AsyncAgent, Protocol):
    """A conversational agent that can also converse on an event loop, awaiting its model and the user's."""

    async def arun_conversation(self, observation: Observation, call_tool: CallTool, user: UserChannel, *,
                                seed: int) -> AgentRun:
        """``run_conversation`` on an event loop.

        Raises:
            ModelAPIError: As ``run_conversation``.
            ConversationOver: As ``run_conversation``.
        """
        ...

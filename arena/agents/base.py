"""The agent contract: play one episode through the gym's tool-call function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from arena.core.gym import Observation
from arena.core.results import ToolResult

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
        stop_reason: ``reply``, ``step_limit``, ``token_limit`` or ``gave_up``.
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

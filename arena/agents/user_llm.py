"""A simulated user played by a model: any litellm model, through the agent's own client code.

The user model is told how to play a customer (:data:`USER_GUIDELINES`, gymloop's own wording of the rules
τ²-bench's simulator follows: one message at a time, only what the scenario says, information given when asked,
and the stop tokens) and its scenario. It reads the conversation with the roles flipped: the agent's messages are
its ``user`` turns and its own past messages its ``assistant`` turns. Requests go through
:class:`~arena.agents.litellm_agent.ChatSession` (the same request shape, retries, failure classes and accounting
as an agent's), with the user model's own endpoint, limits and prices, so its usage is counted apart; past its own
``max_tokens`` in an episode it stops (the episode is invalid, boundary ``user``).
"""

from __future__ import annotations

from typing import Any

from arena.agents.base import ModelAPIError
from arena.agents.litellm_agent import ChatSession, LiteLLMAgent, LiteLLMConfig
from arena.agents.user import UserFailure, UserReply, classify_reply
from arena.core.conversation import OUT_OF_SCOPE_TOKEN, STOP_TOKEN, TRANSFER_TOKEN, EndReason, UserScenario, UserSide

GREETING = "Hi! How can I help you today?"
"""The agent's first words as the user model reads them (the conversation starts with the user's answer to it)."""

USER_GUIDELINES = f"""You play a customer who contacts a company's service agent. Write only the customer's next
message, one at a time, as a real customer would.

- Follow the scenario below. Do not invent facts it does not give: what it does not say, you do not know.
- Say what you know when the agent asks for it, not all at once, and in your own words.
- Stay until everything the scenario asks for has been dealt with. Agreeing to an action is not the action being
  done: wait until the agent says it is done.
- When everything is dealt with, write {STOP_TOKEN} to end the conversation.
- If the agent transfers you to a human agent, write {TRANSFER_TOKEN}.
- If the scenario gives you nothing to go on for what the agent asks, write {OUT_OF_SCOPE_TOKEN}."""
"""What the user model is told about its part, before its scenario."""


class LLMUser:
    """A user a model plays from a scenario.

    Args:
        scenario: The user's scenario.
        config: The user model: its endpoint, limits, retries and prices.
        seed: The episode's seed.
    """

    def __init__(self, scenario: UserScenario, config: LiteLLMConfig, seed: int) -> None:
        self._config = config
        self._agent = LiteLLMAgent(config)
        self._session = ChatSession(self._agent, seed)
        self._messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"{USER_GUIDELINES}\n\n<scenario>\n{scenario.instructions}\n</scenario>"},
            {"role": "user", "content": GREETING},
        ]

    @property
    def ref(self) -> str:
        """The user model, its endpoint masked."""
        return self._agent.model_ref

    def open(self) -> UserReply:
        """The user model's answer to the agent's greeting.

        Raises:
            UserFailure: The user model failed.
        """
        return self._answer(self._ask())

    def reply(self, message: str) -> UserReply:
        """The user model's answer to the agent's message.

        Raises:
            UserFailure: The user model failed.
        """
        self._messages.append({"role": "user", "content": message})
        return self._answer(self._ask())

    async def aopen(self) -> UserReply:
        """``open`` on an event loop."""
        return self._answer(await self._aask())

    async def areply(self, message: str) -> UserReply:
        """``reply`` on an event loop."""
        self._messages.append({"role": "user", "content": message})
        return self._answer(await self._aask())

    def side(self, ended: EndReason) -> UserSide:
        """Who played (the model), what its requests used and how the conversation ended."""
        usage = self._session.usage
        return UserSide(ref=self.ref, ended=ended, requests=self._session.requests, tokens_in=usage.tokens_in,
                        tokens_out=usage.tokens_out, cost=usage.cost, latency_s=usage.latency_s)

    def _ask(self) -> str:
        self._within_budget()
        try:
            return self._session.ask(self._messages)
        except ModelAPIError as exc:
            raise UserFailure(exc.kind, f"user model {self.ref}: {exc.message}") from exc

    async def _aask(self) -> str:
        self._within_budget()
        try:
            return await self._session.aask(self._messages)
        except ModelAPIError as exc:
            raise UserFailure(exc.kind, f"user model {self.ref}: {exc.message}") from exc

    def _within_budget(self) -> None:
        """Refuse another request once the user model used its episode's tokens (its own ``max_tokens``).

        Raises:
            UserFailure: The budget is spent (``token_limit``).
        """
        usage = self._session.usage
        if usage.tokens_in + usage.tokens_out > self._config.max_tokens:
            raise UserFailure("token_limit", f"user model {self.ref} used {usage.tokens_in + usage.tokens_out} "
                                             f"tokens, past its max_tokens of {self._config.max_tokens}")

    def _answer(self, text: str) -> UserReply:
        self._messages.append({"role": "assistant", "content": text})
        return UserReply(text=text, ended=classify_reply(text))

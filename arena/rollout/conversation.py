"""A conversational episode: the user opens, the agent and the user take turns, the gym records every message.

The episode loop plays a task with a ``conversation`` here. Its user (:func:`make_user`) opens
the conversation; the agent gets an observation whose prompt is that opening. A conversational agent
(``run_conversation``) talks with the user through a :class:`Dialogue`, the ``UserChannel`` that records each
message on the gym and applies the limits: ``max_turns`` user messages and ``max_errors`` failed tool calls cut
the conversation short (τ²-bench's ``max_steps`` and ``max_errors``), as do the agent's own limits. Any other
agent answers once, and that answer ends the conversation. How it ended is recorded on the gym for the verdict.
"""

from __future__ import annotations

from typing import Any

from arena.agents.base import (
    Agent,
    AgentRun,
    AsyncAgent,
    AsyncConversationalAgent,
    CallTool,
    ConversationalAgent,
    ConversationOver,
    UserMessage,
)
from arena.agents.user import ConversationConfig, GivenUser, User, UserReply
from arena.agents.user_llm import LLMUser
from arena.agents.user_scripted import ScriptedUser
from arena.core.conversation import Conversation, EndReason, GivenTurns
from arena.core.gym import Gym, Observation
from arena.core.results import ToolResult

_AGENT_ENDS: dict[str, EndReason] = {"agent_stop": "agent_stop", "step_limit": "step_limit",
                                     "token_limit": "step_limit", "gave_up": "agent_stop", "reply": "agent_stop"}
"""How an agent's stop reason ends the conversation, when the user or a limit of the dialogue did not end it."""


class Dialogue:
    """The user channel of one conversational episode: records every message on the gym and applies the limits.

    Args:
        gym: The episode's gym (it records the turns and how the conversation ended).
        user: The episode's user.
        config: The limits.
    """

    def __init__(self, gym: Gym, user: User, config: ConversationConfig) -> None:
        self.gym = gym
        self.user = user
        self.config = config
        self.user_turns = 0
        self.errors = 0
        self.ended: EndReason | None = None
        conversation = gym.task.conversation
        user_side = conversation.user if conversation is not None else None
        self._reveals = [t.reveal for t in user_side.turns] if isinstance(user_side, GivenTurns) else []
        self._specs = {spec.name: spec for spec in gym.pack.tools}
        self.revealed: list[str] = []

    def open(self) -> str:
        """The user's opening message, recorded (what the agent reads as the prompt).

        Raises:
            UserFailure: The user's model failed.
        """
        return self._heard(self.user.open())

    async def aopen(self) -> str:
        """``open`` on an event loop.

        Raises:
            UserFailure: The user's model failed.
        """
        return self._heard(await self.user.aopen())

    def send(self, message: str) -> UserMessage:
        """Record the agent's message and return the user's answer.

        Raises:
            ConversationOver: The conversation had ended, or the user may say no more (``max_turns``).
            UserFailure: The user's model failed.
        """
        self._said(message)
        before = self.user_turns
        return self._answer(self._heard(self.user.reply(message)), before)

    async def asend(self, message: str) -> UserMessage:
        """``send`` on an event loop.

        Raises:
            ConversationOver: As ``send``.
            UserFailure: The user's model failed.
        """
        self._said(message)
        before = self.user_turns
        return self._answer(self._heard(await self.user.areply(message)), before)

    def guard(self, call_tool: CallTool) -> CallTool:
        """``call_tool`` that counts failed calls and ends the conversation at ``max_errors`` of them.

        Raises:
            ConversationOver: (from the returned function) the conversation had ended, or this call was the
                ``max_errors``-th failure.
        """
        def counted(name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
            if self.ended is not None:
                raise ConversationOver(f"the conversation has ended ({self.ended})")
            result = call_tool(name, arguments)
            if not result.ok:
                self.errors += 1
                if self.errors >= self.config.max_errors:
                    self.end("too_many_errors")
                    raise ConversationOver(f"{self.errors} tool calls failed")
            return result

        return counted

    def end(self, reason: EndReason) -> None:
        """End the conversation (the first reason recorded stands)."""
        if self.ended is None:
            self.ended = reason
            self.gym.end_conversation(reason)

    def _said(self, message: str) -> None:
        if self.ended is not None:
            raise ConversationOver(f"the conversation has ended ({self.ended})")
        self.gym.record_turn("agent", message)
        if self.user_turns >= self.config.max_turns:
            self.end("max_turns")
            raise ConversationOver(f"the user said {self.user_turns} messages, the most a conversation holds")

    def _heard(self, reply: UserReply) -> str:
        if reply.text:
            self.user_turns += 1
            self.gym.record_turn("user", reply.text)
            if self.user_turns <= len(self._reveals):
                self.revealed += self._reveals[self.user_turns - 1]
        if reply.ended is not None:
            self.end(reply.ended)
        return reply.said

    def _answer(self, said: str, turns_before: int) -> UserMessage:
        """The agent's view of the user's answer, with the tools a given turn reveals (when it said one)."""
        revealed: list[str] = []
        if turns_before < self.user_turns <= len(self._reveals):
            revealed = self._reveals[self.user_turns - 1]
        return UserMessage(text=said, ended=self.ended is not None,
                           tools=[self._specs[name] for name in revealed if name in self._specs])


def conversational_view(observation: Observation, opening: str, dialogue: Dialogue) -> Observation:
    """The observation of a conversational episode: the user's opening as the prompt and the task marked so.

    The tools held back (``Conversation.hidden_tools``) are left out until a user turn reveals them.
    """
    conversation = dialogue.gym.task.conversation
    hidden = set(conversation.hidden_tools) if conversation is not None else set()
    hidden -= set(dialogue.revealed)
    return observation.model_copy(update={
        "task": {**observation.task, "prompt": opening, "conversational": True},
        "tools": [spec for spec in observation.tools if spec.name not in hidden]})


def converse(agent: Agent, observation: Observation, call_tool: CallTool, dialogue: Dialogue,
             seed: int) -> AgentRun:
    """Play the conversation once the user opened it; record how it ended.

    Raises:
        ModelAPIError: The agent's model failed.
        UserFailure: The user's model failed.
        ConversationOver: A limit ended it inside an agent that does not converse (recorded on the gym first).
    """
    guarded = dialogue.guard(call_tool)
    if dialogue.ended is not None:
        return AgentRun(stop_reason="user_stop")
    if isinstance(agent, ConversationalAgent):
        run = agent.run_conversation(observation, guarded, dialogue, seed=seed)
    else:
        run = agent.run_episode(observation, guarded, seed=seed)
    return _finished(dialogue, run)


async def aconverse(agent: AsyncAgent, observation: Observation, call_tool: CallTool, dialogue: Dialogue,
                    seed: int) -> AgentRun:
    """``converse`` on an event loop.

    Raises:
        ModelAPIError: The agent's model failed.
        UserFailure: The user's model failed.
        ConversationOver: As ``converse``.
    """
    guarded = dialogue.guard(call_tool)
    if dialogue.ended is not None:
        return AgentRun(stop_reason="user_stop")
    if isinstance(agent, AsyncConversationalAgent):
        run = await agent.arun_conversation(observation, guarded, dialogue, seed=seed)
    else:
        run = await agent.arun_episode(observation, guarded, seed=seed)
    return _finished(dialogue, run)


def _finished(dialogue: Dialogue, run: AgentRun) -> AgentRun:
    """Record the agent's last message when the user did not hear it, and how the conversation ended."""
    if dialogue.ended is None:
        said = [t.text for t in dialogue.gym.turns if t.role == "agent"]
        if run.reply and (not said or said[-1] != run.reply):
            dialogue.gym.record_turn("agent", run.reply)
        dialogue.end(_AGENT_ENDS.get(run.stop_reason, "agent_stop"))
    return run


def make_user(conversation: Conversation, config: ConversationConfig, seed: int) -> User:
    """The user of one episode: given turns as they are, a scenario by the user model or the scripted user.

    Args:
        conversation: The task's conversation.
        config: The batch's conversation settings.
        seed: The episode's seed (a user model's sampling seed derives from it).
    """
    if isinstance(conversation.user, GivenTurns):
        return GivenUser(conversation.user)
    if config.user_model is not None:
        return LLMUser(conversation.user, config.user_model, seed)
    return ScriptedUser(conversation.user)

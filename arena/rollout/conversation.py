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
from arena.core.toolkit import ToolSpec

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
        self._offered = {spec.name for spec in gym.offered_tools()}

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
        return self._answer(self._heard(self.user.reply(message)))

    async def asend(self, message: str) -> UserMessage:
        """``send`` on an event loop.

        Raises:
            ConversationOver: As ``send``.
            UserFailure: The user's model failed.
        """
        self._said(message)
        return self._answer(self._heard(await self.user.areply(message)))

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
        if reply.ended is not None:
            self.end(reply.ended)
        return reply.said

    def offered(self, tools: list[ToolSpec]) -> None:
        """Note tools the agent was offered (so a later answer reveals only newer ones)."""
        self._offered |= {spec.name for spec in tools}

    def _answer(self, said: str) -> UserMessage:
        """The agent's view of the user's answer, with the tools the gym offers from this turn on (``reveal``)."""
        revealed = [spec for spec in self.gym.offered_tools() if spec.name not in self._offered]
        self._offered |= {spec.name for spec in revealed}
        return UserMessage(text=said, ended=self.ended is not None, tools=revealed)


def conversational_view(observation: Observation, opening: str, dialogue: Dialogue) -> Observation:
    """The observation of a conversational episode: the user's opening as the prompt and the task marked so.

    Its tools are those the gym offers once the opening was said (``Gym.offered_tools``: the tools held back
    until a later turn reveals them are left out).
    """
    offered = dialogue.gym.offered_tools()
    dialogue.offered(offered)
    return observation.model_copy(update={
        "task": {**observation.task, "prompt": opening, "conversational": True}, "tools": offered})


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

"""One rendering of an episode as a chat, shared by the local agent at evaluation and every trainer's data.

An episode is rendered as: the system prompt (persona, rules, policy) and the user's request, then one assistant
message per tool call (``content`` empty, one ``tool_calls`` entry with the arguments as a JSON object, the
Hugging Face and TRL convention) each followed by a ``tool`` message holding the result's JSON as the LLM agents
receive it, then the assistant's reply. ``TransformersAgent`` builds its context from these pieces turn by turn;
the ``trl`` trainer's SFT rows and the ``export`` trainer's files render recorded episodes with the same pieces, so
a checkpoint is trained on exactly the text it reads when it plays.

A conversational episode is rendered the same way, with its messages where they fell among the tool calls: the
user's opening message in place of the prompt (the system prompt telling the agent it talks with the user), each
of the agent's messages as an assistant message and each of the user's answers as a user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.agents.litellm_agent import system_prompt, tool_message_content
from arena.core.conversation import Turn
from arena.core.gym import Observation
from arena.core.pack import Pack
from arena.core.results import ToolResult, TraceStep

Message = dict[str, Any]


def observation_of(pack: Pack, task_id: str) -> Observation:
    """The observation an episode of ``task_id`` starts from, as ``Gym.reset`` gives it.

    Raises:
        KeyError: The pack has no such task.
    """
    task = pack.task(task_id)
    return Observation(task=task.public_view(), policy=pack.policy, tools=pack.tools, graph=pack.graph)


def opening_messages(observation: Observation) -> list[Message]:
    """The system prompt and the user's request an episode starts from."""
    return [{"role": "system", "content": system_prompt(observation)},
            {"role": "user", "content": str(observation.task.get("prompt", ""))}]


def call_message(name: str, arguments: Any) -> Message:
    """The assistant's turn calling one tool."""
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]}


def result_message(name: str, result: ToolResult) -> Message:
    """The tool's answer to a call, as the model reads it."""
    return {"role": "tool", "name": name, "content": tool_message_content(result)}


def reply_message(reply: str) -> Message:
    """The assistant's final reply (no tool call), which ends the episode."""
    return {"role": "assistant", "content": reply}


def step_messages(step: TraceStep) -> list[Message]:
    """One recorded tool call and its result."""
    result = ToolResult.model_construct(ok=step.ok, output=step.output, error=step.error)
    return [call_message(step.tool, dict(step.arguments)), result_message(step.tool, result)]


def episode_messages(observation: Observation, trace: Sequence[TraceStep], reply: str | None,
                     turns: Sequence[Turn] = ()) -> list[Message]:
    """A whole episode: the opening, every tool call with its result and (when given) the reply.

    With the ``turns`` of a conversation, its messages are placed among the tool calls (each after the calls made
    before it, ``Turn.step``), the first user message is the prompt and the reply is the agent's last message (not
    repeated when it is that message).
    """
    if not turns:
        messages = opening_messages(observation)
        for step in trace:
            messages += step_messages(step)
        if reply is not None:
            messages.append(reply_message(reply))
        return messages
    opening = turns[0].text if turns[0].role == "user" else str(observation.task.get("prompt", ""))
    view = observation.model_copy(update={"task": {**observation.task, "prompt": opening, "conversational": True}})
    messages = opening_messages(view)
    said = list(turns[1:] if turns[0].role == "user" else turns)
    for index, step in enumerate(trace):
        messages += [_turn_message(t) for t in said if t.step == index]
        messages += step_messages(step)
    messages += [_turn_message(t) for t in said if t.step >= len(trace)]
    last_said = next((t.text for t in reversed(said) if t.role == "agent"), None)
    if reply is not None and reply and reply != last_said:
        messages.append(reply_message(reply))
    return messages


def _turn_message(turn: Turn) -> Message:
    """One message of a conversation: the agent's as an assistant message, the user's as a user message."""
    return reply_message(turn.text) if turn.role == "agent" else {"role": "user", "content": turn.text}

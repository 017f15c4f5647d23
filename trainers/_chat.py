"""Rebuild an episode as an OpenAI-style chat: system policy, user prompt, tool calls, tool results, reply."""

from __future__ import annotations

import json
from typing import Any

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.core.task import Task

Message = dict[str, Any]


def prompt_messages(pack: Pack, task: Task) -> list[Message]:
    """The system message (the pack's policy and the persona) and the user's request."""
    persona = task.persona
    perms = ", ".join(persona.permissions) or "none"
    system = (f"{pack.policy.strip()}\n\nYou act as {persona.name} ({persona.role}); "
              f"your permissions: {perms}.")
    return [{"role": "system", "content": system}, {"role": "user", "content": task.prompt}]


def completion_messages(episode: EpisodeRecord) -> list[Message]:
    """The assistant's side of an episode: one tool call per trace step, its result, then the final reply."""
    out: list[Message] = []
    for step in episode.trace:
        call_id = f"call_{step.index}"
        out.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": step.tool, "arguments": json.dumps(step.arguments, sort_keys=True, default=str)},
        }]})
        if step.ok:
            content = json.dumps(step.output, sort_keys=True, default=str)
        else:
            error = step.error.model_dump(exclude_none=True) if step.error is not None else {}
            content = json.dumps({"error": error}, sort_keys=True)
        out.append({"role": "tool", "tool_call_id": call_id, "content": content})
    out.append({"role": "assistant", "content": episode.reply})
    return out


def tool_schemas(pack: Pack) -> list[dict[str, Any]]:
    """The pack's tools in OpenAI function-calling form."""
    return [spec.openai_schema() for spec in pack.tools]

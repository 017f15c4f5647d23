"""A scripted model that plays some tasks well and, on the others, fails its own way: honestly or behind an error.

A test and benchmark agent for validity: served by ``ScriptedModelServer``, it replays each task's gold program
(so it passes) on the tasks it can do; on the others it either says it could not (``honest``) or answers its
request with one error form (a hider), hoping the error makes the episode invalid and drops it from the pass
rate. Who failed decides validity, so every form the model's own conversation causes must leave its pass rate
at or below honest play's.

Example:
    >>> player = GoldPlayer(pack, can=lambda task: task.id.endswith("-01"), form="context_length")  # doctest: +SKIP
    >>> with ScriptedModelServer(player) as server: ...  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from arena.agents.litellm_agent import PROBE_PROMPT
from arena.agents.scripted_server import Cue, ErrorCue, RawCue, ReplyCue, ToolCallCue
from arena.core.pack import Pack
from arena.core.task import Task


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-hider", "object": "chat.completion", "created": 1_700_000_000, "model": "hider",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


ERROR_FORMS: dict[str, Cue] = {
    "context_length": ErrorCue(400, "This model's maximum context length is 8192 tokens. However, your messages "
                                    "resulted in 9120 tokens.", code="context_length_exceeded"),
    "bad_request": ErrorCue(400, "Invalid 'messages[2].content': string too long."),
    "unprocessable": ErrorCue(422, "Unprocessable entity: the assistant's tool call could not be parsed."),
    "malformed_tool_call": RawCue(_completion({"role": "assistant", "content": None,
                                               "tool_calls": [{"id": "call_0", "type": "function"}]})),
    "not_json": RawCue("<html><body>upstream model error</body></html>"),
    "no_choices": RawCue({"id": "chatcmpl-hider", "object": "chat.completion", "choices": [],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10}}),
    "server_error": ErrorCue(500, "internal error"),
}
"""How a hider fails the tasks it would fail: the model's own conversation (every form but ``server_error``,
which is the infrastructure's: an invalid episode, bounded by ``max_invalid_share``)."""

MODEL_FORMS = tuple(f for f in ERROR_FORMS if f != "server_error")
"""The forms the model's own conversation causes."""

GIVE_UP = "I could not complete this request."
"""What honest play replies on a task it cannot do."""


class GoldPlayer:
    """Answers a chat-completions request for any task of ``pack``: its gold program, or a failure.

    Args:
        pack: The pack whose tasks the requests are about (found by their prompts).
        can: Whether the model can do a task (it then replays the gold program).
        form: ``None`` for honest play (it says it could not), or an ``ERROR_FORMS`` key (a hider).
    """

    def __init__(self, pack: Pack, can: Callable[[Task], bool], form: str | None = None) -> None:
        self.tasks = {task.prompt: task for task in pack.tasks}
        self.can = can
        self.form = form

    def __call__(self, messages: list[dict[str, Any]]) -> Cue:
        """The answer to a request with ``messages``."""
        if messages and messages[-1].get("content") == PROBE_PROMPT:
            return ReplyCue("ok")
        prompt = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        task = self.tasks.get(prompt)
        if task is None:
            return ReplyCue(GIVE_UP)
        if not self.can(task):
            return ReplyCue(GIVE_UP) if self.form is None else ERROR_FORMS[self.form]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        steps = task.gold.steps
        if turn < len(steps):
            return ToolCallCue(steps[turn].tool, json.dumps(steps[turn].arguments))
        return ReplyCue(task.gold.reply)

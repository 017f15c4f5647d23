"""A judge model for the statements of a conversation only a model can check (τ²-bench's NL assertions).

When ``ConversationConfig.judge_model`` is set, each episode whose verdict holds unjudged statements is shown to the
judge: the conversation (the user's and the agent's messages) and the statements, each to be answered met or not
met, in JSON. The answers become results of the verdict (``judged: <statement>``) and the verdict is recomputed;
a statement the judge leaves out, or an answer that is not the JSON asked for, counts as not met. Requests go
through :class:`~arena.agents.litellm_agent.ChatSession` (the agent's client code) with the judge's own endpoint.
Without a judge model the statements stay in ``Verdict.unjudged``: reported, never passed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from arena.agents.litellm_agent import ChatSession, LiteLLMAgent, LiteLLMConfig
from arena.core.conversation import Turn
from arena.core.results import AssertionResult, Verdict

JUDGE_PROMPT = """You check a conversation between a customer service agent and a customer against statements
about it. For each numbered statement, decide from the conversation alone whether it holds.

Answer with JSON only: {"results": [{"statement": <number>, "met": true or false, "reasoning": "<one sentence>"}]}
with one entry per statement."""
"""What the judge model is told."""

JUDGED = "judged: "
"""The prefix of a judged statement's result description."""


def transcript(turns: Sequence[Turn]) -> str:
    """The conversation as the judge reads it: one ``user:`` or ``agent:`` line per message."""
    return "\n".join(f"{t.role}: {t.text}" for t in turns)


def judge_verdict(verdict: Verdict, turns: Sequence[Turn], config: LiteLLMConfig, seed: int) -> tuple[Verdict, Any]:
    """The verdict with its unjudged statements judged by the model, and the usage of the request.

    Raises:
        ModelAPIError: The judge model failed (the verifier's failure, not the agent's).
    """
    statements = list(verdict.unjudged)
    session = ChatSession(LiteLLMAgent(config), seed)
    listed = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, start=1))
    answer = session.ask([{"role": "system", "content": JUDGE_PROMPT},
                          {"role": "user", "content": f"Conversation:\n{transcript(turns)}\n\nStatements:\n{listed}"}])
    met = _read(answer, len(statements))
    start = len(verdict.results)
    results = verdict.results + [
        AssertionResult(index=start + i, kind="response", description=f"{JUDGED}{s}", passed=met.get(i + 1, False),
                        detail="" if met.get(i + 1, False) else "the judge model found it not met")
        for i, s in enumerate(statements)]
    held = sum(r.passed for r in results)
    judged = verdict.model_copy(update={"results": results, "passed": held == len(results),
                                        "score": held / len(results), "unjudged": []})
    return judged, session.usage


def _read(answer: str, count: int) -> dict[int, bool]:
    """The judge's answers by statement number (an unreadable answer: none met)."""
    match = re.search(r"\{.*\}", answer, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        return {}
    out: dict[int, bool] = {}
    for item in data.get("results", []) if isinstance(data, dict) else []:
        number = item.get("statement") if isinstance(item, dict) else None
        if isinstance(number, int) and 1 <= number <= count and isinstance(item.get("met"), bool):
            out[number] = item["met"]
    return out

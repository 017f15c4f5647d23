"""Build the agent a command or flow asks for from a model string."""

from __future__ import annotations

from pathlib import Path

from arena.agents.base import Agent
from arena.agents.chat_client import ClientName
from arena.agents.reference import PolicyParams, ReferencePolicy

REFERENCE = "reference"
"""Model string of the built-in reference policy (offline)."""


def make_agent(model: str, *, api_base: str | None = None, params_path: Path | None = None,
               timeout_s: float = 60.0, client: ClientName = "litellm") -> Agent:
    """Return the agent for ``model``.

    Args:
        model: ``reference`` for the built-in policy, else any litellm model string
            (``openai/gpt-4o``, ``hosted_vllm/my-checkpoint``, ...).
        api_base: Base URL of an OpenAI-compatible server for local checkpoints.
        params_path: Reference-policy parameter artifact (default: the starting parameters).
        timeout_s: Request timeout for model calls.
        client: How LLM requests are sent (``litellm`` or ``openai``, see ``arena.agents.chat_client``).
    """
    if model == REFERENCE:
        params = PolicyParams.load(params_path) if params_path else PolicyParams.initial()
        return ReferencePolicy(params)
    from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig

    return LiteLLMAgent(LiteLLMConfig(model=model, api_base=api_base, timeout_s=timeout_s, client=client))

"""Agents that play episodes: the LiteLLM agent and the built-in reference policy."""

from arena.agents.base import Agent, AgentRun, CallTool, ModelAPIError
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.reference import FAILURE_MODES, PolicyParams, ReferencePolicy

__all__ = [
    "FAILURE_MODES",
    "Agent",
    "AgentRun",
    "CallTool",
    "LiteLLMAgent",
    "LiteLLMConfig",
    "ModelAPIError",
    "PolicyParams",
    "ReferencePolicy",
]

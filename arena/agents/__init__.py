"""Agents that play episodes: the LiteLLM agent and the built-in reference policy."""

"""Preflight: before any episode, check that the model is reachable, known and answers with tools.

A wrong model string, an unknown provider, a missing key or an unreachable server would otherwise run
for minutes of retries and report a table of zeros. ``preflight`` asks the agent's own client for one tiny
request (offering one tool) and turns any failure into one line naming the model, the endpoint and the
cause; the key itself is never part of the line.
"""

from __future__ import annotations

import difflib
from types import ModuleType

from arena.agents.base import Agent, ModelAPIError
from arena.agents.chat_client import import_litellm
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.transformers_agent import CheckpointError, TransformersAgent
from arena.core.model_id import REFERENCE
from arena.core.redact import mask_url
from arena.core.text import clip

PROBE_TIMEOUT_S = 20.0
"""Longest wait for the preflight request (the whole check stays under 30 s)."""


class PreflightError(Exception):
    """The model cannot run episodes; the message is one line naming the model, the endpoint and the cause."""


def _endpoint(config: LiteLLMConfig) -> str:
    return mask_url(config.api_base) if config.api_base else "the provider's default endpoint"


def _clean(text: str, config: LiteLLMConfig) -> str:
    line = " ".join(text.split())
    if config.api_key is not None:
        line = line.replace(config.api_key.get_secret_value(), "***")
    return clip(line, 300)


def _provider_problem(config: LiteLLMConfig, litellm: ModuleType) -> str | None:
    try:
        litellm.get_llm_provider(model=config.model, api_base=config.api_base)
    except Exception:  # litellm raises its BadRequestError for a model string it cannot route
        prefix = config.model.split("/", 1)[0]
        known = [REFERENCE, *(str(getattr(p, "value", p)) for p in litellm.provider_list)]
        close = difflib.get_close_matches(prefix if "/" in config.model else config.model, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return (f"unknown provider: {config.model!r} names no litellm provider{hint}; use 'reference' or "
                "'<provider>/<model>', e.g. hosted_vllm/<model> with --api-base")
    return None


def _key_problem(config: LiteLLMConfig, litellm: ModuleType) -> str | None:
    if config.api_key is not None or config.api_base:
        return None
    try:
        found = litellm.validate_environment(model=config.model)
    except Exception:  # a provider litellm cannot check: the probe request will tell
        return None
    missing = [str(k) for k in found.get("missing_keys", [])]
    if missing and not found.get("keys_in_environment", True):
        return f"missing key: set {' or '.join(missing)} (or GYMLOOP_API_KEY)"
    return None


def _cause(exc: ModelAPIError) -> str:
    message = exc.message
    lowered = message.lower()
    if "authentication" in lowered or "api_key" in lowered or "401" in lowered or "api key" in lowered:
        return f"the key was refused or is missing: {message}"
    if exc.kind == "timeout":
        return f"no answer within {PROBE_TIMEOUT_S:g} s: {message}"
    if "connection" in lowered or "connect" in lowered:
        return f"endpoint unreachable: {message}"
    if "404" in lowered or "not found" in lowered or "does not exist" in lowered:
        return f"the server does not know this model: {message}"
    if exc.kind == "bad_request" and "tool" in lowered:
        return f"the model does not accept tools: {message}"
    return f"{exc.kind}: {message}"


def preflight_agent(agent: Agent) -> None:
    """Preflight ``agent``: a model API answers one tiny request, a local checkpoint loads (reference: nothing).

    Raises:
        PreflightError: One line: ``model M at ENDPOINT: cause``, or ``model transformers:FOLDER: cause``.
    """
    if isinstance(agent, LiteLLMAgent):
        preflight(agent.config)
    elif isinstance(agent, TransformersAgent):
        try:
            agent.load()
        except CheckpointError as exc:
            raise PreflightError(f"model {agent.model_ref}: {exc}") from exc


def preflight(config: LiteLLMConfig, *, tools: bool = True, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Check that ``config``'s model can run episodes; return quietly when it can.

    Args:
        config: The agent's model settings (model string, endpoint, key, timeout).
        tools: Offer one tool in the request (the gyms' episodes need tool calling).
        timeout_s: Longest wait for the answer.

    Raises:
        PreflightError: One line: ``model M at ENDPOINT: cause``.
    """
    where = f"model {config.model} at {_endpoint(config)}"
    problem = None
    if config.client == "litellm":  # the openai path asks the server itself; litellm routes by provider and key
        litellm = import_litellm()
        problem = _provider_problem(config, litellm) or _key_problem(config, litellm)
    if problem:
        raise PreflightError(f"{where}: {_clean(problem, config)}")
    agent = LiteLLMAgent(config.model_copy(update={"max_retries": 0}))
    try:
        agent.probe(tools=tools, timeout_s=timeout_s)
    except ModelAPIError as exc:
        raise PreflightError(f"{where}: {_clean(_cause(exc), config)}") from exc

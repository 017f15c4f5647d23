"""Model-API failures of LiteLLMAgent: retries, backoff, Retry-After and invalid rollouts."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from arena.agents._model_api import backoff_delay, parse_retry_after
from arena.agents.base import ModelAPIError
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import DelayCue, ErrorCue, ReplyCue, ScriptedModelServer, ToolCallCue
from arena.core.gym import Observation
from arena.core.results import ToolResult
from arena.core.toolkit import ToolSpec

SPEC = ToolSpec(name="ping", description="Answer pong.", parameters={"type": "object", "properties": {}},
                mode="read")
OBS = Observation(task={"task_id": "t", "prompt": "ping once", "persona": {"name": "Bo", "role": "agent"}},
                  policy="Be brief.", tools=[SPEC], graph={})


class Tools:
    """A call_tool that answers ``ping`` and records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        self.calls.append((name, arguments))
        return ToolResult(ok=True, output="pong")


class Sleeps:
    """Records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


SDK_CLIENT = "openai-client:"
"""Prefix of a ``model`` fixture value that asks for ``client="openai"`` instead of litellm."""

LOOP_CLIENT = "event-loop:"
"""Prefix of a ``model`` fixture value that asks for ``client="openai"`` played on an event loop (aiohttp)."""


@pytest.fixture(params=["openai/scripted", "hosted_vllm/scripted", SDK_CLIENT + "hosted_vllm/scripted",
                        LOOP_CLIENT + "hosted_vllm/scripted"])
def model(request: pytest.FixtureRequest) -> str:
    """Every path to an OpenAI-compatible server: litellm's two routes and the agent's own OpenAI-protocol client,
    on threads and on an event loop."""
    return str(request.param)


class OnALoop:
    """Plays each episode through ``arun_episode`` on an event loop of its own."""

    def __init__(self, agent: LiteLLMAgent) -> None:
        self.agent = agent

    def run_episode(self, observation: Observation, call_tool: Tools, *, seed: int) -> Any:
        return asyncio.run(self.agent.arun_episode(observation, call_tool, seed=seed))


def _agent(server: ScriptedModelServer | str, model: str, sleep: Any = time.sleep,
           **overrides: Any) -> LiteLLMAgent | OnALoop:
    on_a_loop = model.startswith(LOOP_CLIENT)
    client = "openai" if model.startswith((SDK_CLIENT, LOOP_CLIENT)) else "litellm"
    base = server if isinstance(server, str) else server.base_url
    settings: dict[str, Any] = {"model": model.removeprefix(SDK_CLIENT).removeprefix(LOOP_CLIENT),
                                "api_base": base + "/v1", "api_key": "test", "timeout_s": 5.0,
                                "backoff_base_s": 0.01, "backoff_cap_s": 0.05, "client": client}
    settings.update(overrides)
    if not on_a_loop:
        return LiteLLMAgent(LiteLLMConfig(**settings), sleep=sleep)

    async def async_sleep(seconds: float) -> None:
        if sleep is time.sleep:
            await asyncio.sleep(seconds)
        else:
            sleep(seconds)

    return OnALoop(LiteLLMAgent(LiteLLMConfig(**settings), async_sleep=async_sleep))


def test_429_is_retried_and_retry_after_is_honoured(model: str) -> None:
    script = [ErrorCue(429, "slow down", retry_after=0.3), ReplyCue("pong received")]
    with ScriptedModelServer(script) as server:
        sleeps = Sleeps()
        run = _agent(server, model, sleep=sleeps).run_episode(OBS, Tools(), seed=0)
        statuses = [r.status for r in server.requests]
    assert run.reply == "pong received" and run.turns == 1
    assert statuses == [429, 200]
    assert len(sleeps.waits) == 1 and sleeps.waits[0] >= 0.3


def test_429_retry_really_waits_with_the_real_sleep(model: str) -> None:
    script = [ErrorCue(429, "slow down", retry_after=0.2), ReplyCue("ok")]
    with ScriptedModelServer(script) as server:
        started = time.perf_counter()
        run = _agent(server, model).run_episode(OBS, Tools(), seed=0)
        elapsed = time.perf_counter() - started
    assert run.reply == "ok" and elapsed >= 0.2


def test_timeout_is_retried_then_succeeds(model: str) -> None:
    script = [DelayCue(2.0), ToolCallCue("ping"), ReplyCue("done")]
    tools = Tools()
    with ScriptedModelServer(script) as server:
        sleeps = Sleeps()
        run = _agent(server, model, sleep=sleeps, timeout_s=0.3).run_episode(OBS, tools, seed=0)
        received = len(server.requests)
    assert run.reply == "done" and run.turns == 2
    assert received == 3 and len(sleeps.waits) == 1
    assert tools.calls == [("ping", "{}")]
    assert run.latency_s >= 0.3


def test_server_errors_are_retried_with_growing_seeded_backoff(model: str) -> None:
    script = [ErrorCue(500, "boom"), ErrorCue(503, "busy"), ErrorCue(502, "gateway"), ReplyCue("ok")]
    waits: list[list[float]] = []
    for _ in range(2):
        with ScriptedModelServer(script) as server:
            sleeps = Sleeps()
            agent = _agent(server, model, sleep=sleeps, backoff_base_s=1.0, backoff_cap_s=3.0)
            run = agent.run_episode(OBS, Tools(), seed=7)
        assert run.reply == "ok"
        waits.append(sleeps.waits)
    assert waits[0] == waits[1]
    first, second, third = waits[0]
    assert 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0 and 1.5 <= third <= 3.0


def test_retries_exhausted_raise_an_invalid_model_api_error_with_usage(model: str) -> None:
    script = [ToolCallCue("ping", prompt_tokens=30, completion_tokens=5)] + [ErrorCue(429, "slow down")] * 3
    with ScriptedModelServer(script) as server:
        sleeps = Sleeps()
        with pytest.raises(ModelAPIError) as info:
            _agent(server, model, sleep=sleeps, max_retries=2).run_episode(OBS, Tools(), seed=0)
        received = len(server.requests)
    error = info.value
    assert error.kind == "rate_limit" and error.invalid is True
    assert "3 attempts" in error.message
    assert (error.usage.tokens_in, error.usage.tokens_out, error.usage.turns) == (30, 5, 1)
    assert error.usage.stop_reason == "model_api_error"
    assert received == 4 and len(sleeps.waits) == 2


def test_retry_after_beyond_the_limit_fails_at_once(model: str) -> None:
    with ScriptedModelServer([ErrorCue(429, "come back tomorrow", retry_after=86400)]) as server:
        sleeps = Sleeps()
        with pytest.raises(ModelAPIError) as info:
            _agent(server, model, sleep=sleeps, max_retry_after_s=60).run_episode(OBS, Tools(), seed=0)
    assert info.value.kind == "rate_limit" and "exceeds max_retry_after_s=60" in info.value.message
    assert sleeps.waits == []


@pytest.mark.parametrize(
    ("cue", "kind", "invalid"),
    [
        (ErrorCue(400, "unsupported value for tool_choice"), "bad_request", False),
        (ErrorCue(400, "context length exceeded: 9000 tokens > 8192"), "context_length", False),
        (ErrorCue(400, "This model's maximum context length is 8192 tokens."), "context_length", False),
        (ErrorCue(422, "the tool call could not be parsed"), "bad_request", False),
        (ErrorCue(401, "invalid api key"), "configuration", True),
        (ErrorCue(404, "no such model"), "configuration", True),
    ],
)
def test_refused_requests_are_not_retried_and_the_models_own_are_its_failed_episodes(
        model: str, cue: ErrorCue, kind: str, invalid: bool) -> None:
    script = [ToolCallCue("ping", prompt_tokens=12, completion_tokens=3), cue]
    tools = Tools()
    with ScriptedModelServer(script) as server:
        sleeps = Sleeps()
        with pytest.raises(ModelAPIError) as info:
            _agent(server, model, sleep=sleeps).run_episode(OBS, tools, seed=0)
        received = len(server.requests)
    error = info.value
    assert error.kind == kind and error.invalid is invalid
    assert (error.usage.tokens_in, error.usage.tokens_out, error.usage.turns) == (12, 3, 1)
    assert received == 2 and sleeps.waits == [] and tools.calls == [("ping", "{}")]


def test_connection_refused_is_a_server_error(model: str) -> None:
    server = ScriptedModelServer([])
    server.start()
    base = server.base_url
    server.stop()
    agent = _agent(base, model, sleep=Sleeps(), timeout_s=2.0, max_retries=1, backoff_base_s=0.0)
    with pytest.raises(ModelAPIError) as info:
        agent.run_episode(OBS, Tools(), seed=0)
    assert info.value.kind == "server_error" and info.value.invalid is True


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"Retry-After": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_capped_and_never_shorter_than_retry_after() -> None:
    rng = random.Random(0)
    delays = [backoff_delay(n, base_s=1.0, cap_s=4.0, retry_after=None, rng=rng) for n in range(8)]
    assert all(d <= 4.0 for d in delays) and delays[-1] >= 2.0
    assert backoff_delay(0, base_s=1.0, cap_s=4.0, retry_after=9.0, rng=rng) == 9.0

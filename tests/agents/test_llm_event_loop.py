"""Episodes in flight on an event loop (the ``openai`` client): the same records as threads, time limits, proxies."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from arena.agents.chat_client import proxy_url
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import Cue, DelayCue, ErrorCue, ReplyCue, ScriptedModelServer, ToolCallCue
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, RolloutConfig, plan_episodes, run_episodes


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack("procurement", seed=0)


def _agent(server: ScriptedModelServer, **options: Any) -> LiteLLMAgent:
    settings: dict[str, Any] = {"model": "hosted_vllm/m", "api_base": server.base_url + "/v1", "timeout_s": 10,
                                "max_retries": 0, "client": "openai"}
    settings.update(options)
    return LiteLLMAgent(LiteLLMConfig(**settings))


def _mixed(tool: str) -> Any:
    """Per task (by its prompt): a refused request, a tool call then a reply, or a reply at once.

    Token counts are given: the server's estimate would count the call ids it numbers in arrival order.
    """

    def answer(messages: list[dict[str, Any]]) -> Cue:
        if messages[-1]["role"] == "tool":
            return ReplyCue("done after looking it up", prompt_tokens=40, completion_tokens=6)
        kind = len(str(messages[1]["content"])) % 3
        if kind == 0:
            return ErrorCue(400, "unsupported value for tool_choice")
        if kind == 1:
            return ToolCallCue(tool, "{}", prompt_tokens=30, completion_tokens=4)
        return ReplyCue("done", prompt_tokens=20, completion_tokens=2)

    return answer


def _comparable(records: list[Any]) -> list[dict[str, Any]]:
    return [r.model_dump(exclude={"wall_time_s", "latency_s"}) for r in records]


def test_an_event_loop_batch_gives_the_records_of_a_thread_batch(pack: Pack):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", seeds=[0, 1]))
    with ScriptedModelServer(_mixed(pack.tools[0].name)) as server:
        on_threads = run_episodes(_agent(server), [pack], keys, RolloutConfig(max_concurrency=8,
                                                                                async_episodes=False))
        on_a_loop = run_episodes(_agent(server), [pack], keys, RolloutConfig(max_concurrency=8))
    assert _comparable(on_a_loop) == _comparable(on_threads)
    kinds = {(r.failure.kind if r.failure else "ok", len(r.trace) > 0) for r in on_a_loop}
    assert kinds == {("bad_request", False), ("ok", True), ("ok", False)}


class CountingSlots:
    """The LLM agent, noting how many tasks the loop holds when each episode starts."""

    prefers_event_loop = True

    def __init__(self, agent: LiteLLMAgent) -> None:
        self.agent = agent
        self.name, self.model_ref = agent.name, agent.model_ref
        self.tasks_at_start: list[int] = []

    def run_episode(self, observation: Any, call_tool: Any, *, seed: int) -> Any:
        return self.agent.run_episode(observation, call_tool, seed=seed)

    async def arun_episode(self, observation: Any, call_tool: Any, *, seed: int) -> Any:
        self.tasks_at_start.append(len(asyncio.all_tasks()))
        return await self.agent.arun_episode(observation, call_tool, seed=seed)


def test_the_first_episodes_start_before_the_later_slots_exist(pack: Pack):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", seeds=[0, 1, 2]))
    with ScriptedModelServer(lambda m: ReplyCue("done")) as server:
        agent = CountingSlots(_agent(server))
        records = run_episodes(agent, [pack], keys, RolloutConfig(max_concurrency=32))
    assert len(keys) > 32 and [r.reply for r in records] == ["done"] * len(keys)
    assert agent.tasks_at_start[0] <= 3  # the batch and this slot (with every slot started first: 33)


def test_the_time_limit_ends_a_model_call_on_the_loop(pack: Pack):
    keys = plan_episodes([pack], RolloutConfig(split="heldout"))[:3]
    with ScriptedModelServer(lambda m: DelayCue(5.0, ReplyCue("too late"))) as server:
        started = time.perf_counter()
        records = run_episodes(_agent(server), [pack], keys, RolloutConfig(max_concurrency=3, episode_timeout_s=0.5))
        elapsed = time.perf_counter() - started
    assert [(r.failure.boundary, r.failure.kind) for r in records if r.failure] == [("agent", "episode_timeout")] * 3
    assert all(not r.invalid and r.verdict is not None and not r.passed for r in records)
    assert elapsed < 3.0, f"the batch took {elapsed:.1f} s for a 0.5 s limit"


def test_inside_a_running_event_loop_the_batch_uses_threads(pack: Pack):
    keys = [EpisodeKey(pack.id, t.id, 0, 0) for t in pack.tasks if t.split == "heldout"][:4]
    with ScriptedModelServer(lambda m: ReplyCue("done")) as server:
        alone = run_episodes(_agent(server), [pack], keys, RolloutConfig(max_concurrency=4))

        async def from_a_coroutine() -> list[Any]:
            return run_episodes(_agent(server), [pack], keys, RolloutConfig(max_concurrency=4))

        nested = asyncio.run(from_a_coroutine())
    assert _comparable(nested) == _comparable(alone) and all(r.reply == "done" for r in nested)


def test_the_proxy_is_the_environment_s_unless_the_host_is_exempt(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3129")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,models.internal")
    assert proxy_url("https://api.example.com/v1/chat/completions") == "http://proxy.internal:3128"
    assert proxy_url("http://gpu-box:8000/v1/chat/completions") == "http://proxy.internal:3129"
    assert proxy_url("http://127.0.0.1:8000/v1/chat/completions") is None
    assert proxy_url("https://models.internal/v1/chat/completions") is None

"""LLM rollouts through litellm against the scripted server: concurrency, adaptive limit, circuit breaker."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from arena.agents.limits import AdaptiveLimit
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import DelayCue, ErrorCue, ReplyCue, ScriptedModelServer
from arena.core.pack import build_pack
from arena.rollout import ModelUnavailable, RolloutConfig, RolloutStopped, plan_episodes, run_episodes, run_rollouts


@pytest.fixture(scope="module")
def pack():
    return build_pack("procurement", seed=0)


def _agent(server: ScriptedModelServer, model: str = "hosted_vllm/m", **options) -> LiteLLMAgent:
    config = LiteLLMConfig(model=model, api_base=server.base_url + "/v1", timeout_s=10, max_retries=0, **options)
    return LiteLLMAgent(config)


def test_a_llm_episode_leaves_the_pack_and_later_builds_unchanged(pack):
    tools = [t.model_dump() for t in pack.tools]
    with ScriptedModelServer(lambda m: ReplyCue("done")) as server:
        run_rollouts(_agent(server), [pack], RolloutConfig(task_ids=[pack.tasks[0].id]))
        sent = server.requests[0].body["tools"]
    assert [t.model_dump() for t in pack.tools] == tools
    assert build_pack("procurement", seed=0).id == pack.id
    assert len(sent) == len(tools)


def test_episodes_run_concurrently_and_stream_out_as_they_finish(pack):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", k=2))[:16]
    seen = []
    with ScriptedModelServer(lambda m: DelayCue(0.3, ReplyCue("done"))) as server:
        records = run_episodes(_agent(server), [pack], keys, RolloutConfig(max_concurrency=16),
                               on_episode=seen.append)
        spans = [r.server_time_s for r in server.requests]
        peak = server.peak_in_flight
    assert [(r.task_id, r.seed, r.attempt) for r in records] == [(k.task_id, k.seed, k.attempt) for k in keys]
    assert sorted(r.episode_id for r in seen) == sorted(r.episode_id for r in records)
    assert all(r.failure is None and r.reply == "done" for r in records)
    assert len(spans) == 16 and min(spans) >= 0.29
    assert peak >= 8, f"at most {peak} requests were in flight at once"


@pytest.mark.parametrize("client", ["litellm", "openai"], ids=["threads", "event-loop"])
def test_process_workers_each_keep_episodes_in_flight(pack, client):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", k=2))[:24]
    with ScriptedModelServer(lambda m: DelayCue(0.5, ReplyCue("done"))) as server:
        records = run_episodes(_agent(server, client=client), [pack], keys,
                               RolloutConfig(executor="process", workers=2, max_concurrency=6))
        peak = server.peak_in_flight
    assert [(r.task_id, r.seed, r.attempt) for r in records] == [(k.task_id, k.seed, k.attempt) for k in keys]
    assert all(r.failure is None and r.reply == "done" for r in records)
    assert peak > 6, f"at most {peak} requests were in flight at once from two workers of 6"


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_concurrent_episodes_match_sequential_ones(pack, client):
    keys = plan_episodes([pack], RolloutConfig(split="heldout"))[:6]
    with ScriptedModelServer(lambda m: ReplyCue("done")) as server:
        one = run_episodes(_agent(server, client=client), [pack], keys, RolloutConfig())
        many = run_episodes(_agent(server, client=client), [pack], keys, RolloutConfig(max_concurrency=6))
    assert [r.model_dump(exclude={"wall_time_s", "latency_s"}) for r in one] == \
        [r.model_dump(exclude={"wall_time_s", "latency_s"}) for r in many]


def test_rate_limits_halve_the_limit_and_successes_grow_it_back():
    ticks = iter(range(100))
    limit = AdaptiveLimit(16, cooldown_s=1.0, clock=lambda: float(next(ticks)))
    limit.report(False, "rate_limit")
    assert limit.limit == 8
    limit.report(False, "bad_request")
    assert limit.limit == 8 and limit.overloads == 1
    limit.report(False, "timeout")
    limit.report(False, "server_error")
    assert limit.limit == 2 and limit.decreases == 3
    for _ in range(200):
        limit.report(True)
    assert limit.limit == 16
    taken = [limit.try_acquire() for _ in range(17)]
    assert taken.count(True) == 16 and limit.in_flight == 16 and limit.peak == 16


THREADS = ("litellm", {"max_concurrency": 2})
LOOP = ("openai", {"max_concurrency": 2})
PROCESSES = ("openai", {"executor": "process", "workers": 2, "max_concurrency": 2})
PROCESS_THREADS = ("litellm", {"executor": "process", "workers": 2, "max_concurrency": 2})
"""Episode threads or an event loop in this process; two worker processes with two episodes in flight each, on an
event loop or on threads."""
ENGINES = [THREADS, LOOP, PROCESSES, PROCESS_THREADS]
ENGINE_IDS = ["threads", "event-loop", "processes", "process-threads"]


@pytest.mark.parametrize("client, engine", ENGINES, ids=ENGINE_IDS)
def test_the_circuit_breaker_stops_a_batch_against_a_failing_model(pack, client, engine):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", k=4))
    seen = []
    with ScriptedModelServer(lambda m: ErrorCue(503, "overloaded")) as server:
        with pytest.raises(ModelUnavailable) as stopped:
            run_episodes(_agent(server, client=client), [pack], keys, RolloutConfig(max_model_failures=5, **engine),
                         on_episode=seen.append)
        asked = len(server.requests)
    assert "5 consecutive episodes" in stopped.value.reason and "503" in stopped.value.reason
    assert seen == [] and stopped.value.records == []
    assert asked < len(keys)
    assert not [c for c in multiprocessing.active_children() if c.is_alive()], "a rollout worker outlived its run"


@pytest.mark.parametrize("client, engine", [("litellm", {}), LOOP, ("openai", {"executor": "process", "workers": 1})],
                         ids=["inline", "event-loop", "processes"])
def test_a_short_failing_streak_is_data(pack, client, engine):
    keys = plan_episodes([pack], RolloutConfig(split="heldout"))[:4]
    script = [ErrorCue(503, "blip"), ErrorCue(503, "blip"), ReplyCue("done"), ReplyCue("done")]
    seen = []
    with ScriptedModelServer(script) as server:
        records = run_episodes(_agent(server, client=client), [pack], keys,
                               RolloutConfig(max_model_failures=3, **engine), on_episode=seen.append)
    assert [r.failure.boundary if r.failure else None for r in records] == ["model_api", "model_api", None, None]
    assert sorted(r.episode_id for r in seen) == sorted(r.episode_id for r in records)


@pytest.mark.parametrize("client, engine", ENGINES, ids=ENGINE_IDS)
def test_a_stop_ends_the_batch_with_what_finished(pack, client, engine):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", k=4))
    stop = threading.Event()
    seen = []

    def on_episode(record):
        seen.append(record)
        if len(seen) == 3:
            stop.set()

    with ScriptedModelServer(lambda m: DelayCue(0.05, ReplyCue("done"))) as server:
        with pytest.raises(RolloutStopped) as stopped:
            run_episodes(_agent(server, client=client), [pack], keys, RolloutConfig(**engine),
                         on_episode=on_episode, stop=stop)
    assert len(stopped.value.records) == 3 and len(keys) > 8
    assert sorted(r.episode_id for r in stopped.value.records) == sorted(r.episode_id for r in seen)
    assert not [c for c in multiprocessing.active_children() if c.is_alive()], "a rollout worker outlived its run"


def test_a_slot_freed_or_grown_wakes_a_waiting_episode_and_a_full_limit_times_out():
    limit = AdaptiveLimit(2, initial=1)
    assert limit.acquire(timeout_s=1.0)
    assert not limit.acquire(timeout_s=0.05), "a second slot was taken while the limit was 1"
    woke = threading.Event()

    def wait_for_slot() -> None:
        if limit.acquire(timeout_s=10.0):
            woke.set()

    waiter = threading.Thread(target=wait_for_slot)
    waiter.start()
    limit.report(True)  # 1 + 1/1 = 2 slots: the waiter gets the second one without a release
    waiter.join(timeout=10.0)
    assert woke.is_set() and limit.in_flight == 2
    limit.release()
    assert limit.acquire(timeout_s=1.0) and limit.peak == 2


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_episodes_in_flight_reuse_their_connections_across_the_batch(pack, client):
    keys = plan_episodes([pack], RolloutConfig(split="heldout", seeds=[0, 1, 2, 3]))[:48]
    with ScriptedModelServer(lambda m: DelayCue(0.05, ReplyCue("done"))) as server:
        records = run_episodes(_agent(server, client=client), [pack], keys, RolloutConfig(max_concurrency=8))
        ports = [r.client_port for r in server.requests]
    assert all(r.failure is None and r.reply == "done" for r in records)
    assert len(ports) == 48
    assert len(set(ports)) <= 8 + 2, f"{len(set(ports))} connections for 8 episodes in flight"


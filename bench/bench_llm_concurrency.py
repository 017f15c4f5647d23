"""LLM rollouts against a model server answering in 200 ms: episodes/s against the concurrency/latency bound.

The scripted OpenAI-compatible server runs in its own process (so gymloop's CPU is measured alone) and
answers every request after ``--latency`` seconds. One-turn episodes (the model replies at once) run
with ``max_concurrency`` in flight, through each request path (``--client``: litellm, and the OpenAI
protocol straight to the server). The bound is ``concurrency / latency`` episodes/s;
the target is a ratio >= 0.9. gymloop's own CPU per episode is the CPU time of this process and its rollout
workers over the episodes; the server's CPU per request is measured in its process. Both share this machine's
cores, so the machine itself bounds the rate at ``cores / (gymloop CPU + server CPU)`` per episode: printed as
the CPU bound, with the ratio against the lower of the two bounds beside the target's ratio.

The run's time counts from the first request (the first finish minus the latency), so the start-up of the batch
is printed beside the rate, not in it. ``--workers N`` (N > 1) runs the ``process`` executor: N worker processes,
each keeping ``concurrency / N`` episodes in flight. Their start-up (a fresh interpreter each) is left out the
same way (a worker that starts later counts against the rate), and the CPU of starting the workers, measured on
a batch of one episode per worker, is subtracted from gymloop's CPU.

The server keeps no request (``keep_requests=False``): a real model server does not, and a scripted one whose heap
grows by every request body pauses all its answers for its garbage collections (measured: 64 in flight, 0.85
steady-state ratio with the requests kept, 0.94-0.99 without). For the same reason it freezes its start-up heap once
it listens (``gc.freeze``, as vLLM's API server does): without it, every full collection walks the server's imported
modules while every answer waits (measured idle at 256 in flight: the bare client's ceiling 0.88-0.94 without, 0.92-0.95
with; the server's CPU 0.40-0.44 ms/request without, 0.30-0.38 with).

The server's own ceiling is printed first (``bare``): a minimal aiohttp client with the same episodes in flight posts
the request body of gymloop's first model call and reads the answer, with no gym, agent or verifier, so the ratio
it reaches is what this server on this machine allows any client; gymloop's ratio is read against both.

Run: python -m bench.bench_llm_concurrency [--concurrency 64 256] [--rounds 32] [--latency 0.2]
[--client bare auto litellm openai] [--workers 1]   (default bare then auto: the server's ceiling, then the path a
round takes with no client setting)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing as mp
import os
import queue
import resource
import socket
import time
from typing import Any

from arena.agents.scripted_server import ReplyCue

TARGET = 0.9

REPLY = ReplyCue("done", prompt_tokens=50, completion_tokens=5)
"""Every answer: a one-turn episode's reply."""


def _serve(latency: float, kind: str, ready: Any, stop: Any, asks: Any) -> None:
    """Serve until ``stop``; answer each message on ``asks`` with this process's CPU seconds so far."""
    from arena.agents.scripted_server import ScriptedModelServer

    if kind == "asyncio":
        asyncio.run(_serve_on_a_loop(latency, ready, stop, asks))
        return
    with ScriptedModelServer(lambda m: REPLY, delay_s=latency, keep_requests=False) as server:
        ready.put(server.base_url)
        while not stop.is_set():
            try:
                asks.get(timeout=0.2)
            except queue.Empty:
                continue
            ready.put(time.process_time())


async def _serve_on_a_loop(latency: float, ready: Any, stop: Any, asks: Any) -> None:
    """The same answers from one event loop (aiohttp), as vLLM and SGLang serve their OpenAI API.

    Once it listens, the server moves its start-up heap out of the garbage collector's reach (``gc.freeze``), as
    vLLM's API server process does after start-up.
    """
    from aiohttp import web

    from arena.agents.scripted_server import completion_body

    answered = 0

    async def chat(request: web.Request) -> web.Response:
        nonlocal answered
        body = await request.json()
        await asyncio.sleep(latency)
        answered += 1
        return web.json_response(completion_body(REPLY, body, answered))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
    await web.SockSite(runner, listener).start()
    gc.collect()
    gc.freeze()
    ready.put(f"http://127.0.0.1:{listener.getsockname()[1]}")
    while not stop.is_set():
        try:
            await asyncio.to_thread(asks.get, timeout=0.2)
        except queue.Empty:
            continue
        ready.put(time.process_time())
    await runner.cleanup()


def _request_body(pack: Any, task_id: str) -> bytes:
    """The JSON body of gymloop's first model call of ``task_id``, built as the agent builds it.

    The same system prompt, task prompt and tool schemas (``system_prompt``, ``ToolSpec.openai_schema``); the
    agent's request-only keys (retries, timeout) are not part of the JSON it sends either.
    """
    from arena.agents.litellm_agent import system_prompt
    from arena.core.gym import Gym

    observation = Gym(pack).reset(task_id)
    messages = [{"role": "system", "content": system_prompt(observation)},
                {"role": "user", "content": str(observation.task.get("prompt", ""))}]
    return json.dumps({"model": "bench", "messages": messages, "temperature": 0.0, "tool_choice": "auto",
                       "tools": [spec.openai_schema() for spec in observation.tools]}).encode()


def _bare_run(url: str, body: bytes, concurrency: int, total: int, finishes: list[float]) -> None:
    """Keep ``concurrency`` requests in flight until ``total`` have been answered; note each answer's time."""
    import aiohttp

    async def run() -> None:
        left = iter(range(total))
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def slot() -> None:
                for _ in left:
                    async with session.post(url, data=body, headers=headers) as response:
                        json.loads(await response.read())
                    finishes.append(time.perf_counter())

            await asyncio.gather(*(slot() for _ in range(concurrency)))

    asyncio.run(run())


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished (joined) children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _bare_client_run(client: str, base_url: str, pack: Any, heldout: list[str], concurrency: int, total: int,
                     args: argparse.Namespace, finishes: list[float], ready: Any,
                     asks: Any) -> tuple[float, float, float, int, int]:
    """One run of the bare client (the server's ceiling); returns what ``_gymloop_run`` returns."""
    url, body = base_url + "/v1/chat/completions", _request_body(pack, heldout[0])
    _bare_run(url, body, 8, 8, [])
    finishes.clear()
    asks.put("cpu")
    server_cpu = float(ready.get(timeout=60))
    cpu, started = _cpu_seconds(), time.perf_counter()
    _bare_run(url, body, concurrency, total, finishes)
    return _cpu_seconds() - cpu, server_cpu, started, total - len(finishes), concurrency


def _gymloop_run(client: str, base_url: str, pack: Any, heldout: list[str], concurrency: int, total: int,
                 args: argparse.Namespace, finishes: list[float], ready: Any,
                 asks: Any) -> tuple[float, float, float, int, int]:
    """One run of gymloop's episodes; returns its CPU, the server's CPU before it, its start, failures, in flight."""
    from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
    from arena.core.model_id import parse_model_id
    from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
    from flows.model_client import choose_client

    path = client if client != "auto" else choose_client(
        parse_model_id("hosted_vllm/bench", api_base=base_url + "/v1"), "auto").client
    agent = LiteLLMAgent(LiteLLMConfig(model="hosted_vllm/bench", api_base=base_url + "/v1", timeout_s=30,
                                       client=path))
    warm = [EpisodeKey(pack.id, heldout[0], 0, a) for a in range(8)]
    run_episodes(agent, [pack], warm, RolloutConfig(max_concurrency=8))
    keys = [EpisodeKey(pack.id, heldout[i % len(heldout)], 1 + i // len(heldout), 0) for i in range(total)]
    on_loop = args.episodes == "asyncio"
    config = RolloutConfig(max_concurrency=concurrency, episode_timeout_s=120, async_episodes=on_loop)
    if args.workers > 1:
        config = RolloutConfig(executor="process", workers=args.workers, async_episodes=on_loop,
                               max_concurrency=concurrency // args.workers, episode_timeout_s=120)
    start_up_cpu = 0.0
    if args.workers > 1:  # the CPU of starting the workers, measured on one episode per worker
        start_up_cpu = _cpu_seconds()
        run_episodes(agent, [pack], warm[:args.workers], config)
        start_up_cpu = _cpu_seconds() - start_up_cpu
    finishes.clear()
    asks.put("cpu")
    server_cpu = float(ready.get(timeout=60))
    cpu, started = _cpu_seconds(), time.perf_counter()
    records = run_episodes(agent, [pack], keys, config, on_episode=lambda r: finishes.append(time.perf_counter()))
    cpu = _cpu_seconds() - cpu - start_up_cpu
    failed = sum(r.failure is not None for r in records)
    return cpu, server_cpu, started, failed, config.max_concurrency * max(1, args.workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--rounds", type=int, default=32, help="Episodes per run = rounds x concurrency.")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--client", nargs="+", choices=["bare", "litellm", "openai", "auto"], default=["bare", "auto"],
                        help="Request paths (default: bare, the server's ceiling for a client doing nothing else, "
                        "then auto, the path a round takes with no client setting, flows.model_spec.choose_client); "
                        "add litellm and openai to compare.")
    parser.add_argument("--workers", type=int, default=1, help="Rollout worker processes (process executor).")
    parser.add_argument("--server", choices=["asyncio", "threads"], default="asyncio",
                        help="The scripted server: one event loop (as vLLM, SGLang) or a thread per connection.")
    parser.add_argument("--episodes", choices=["asyncio", "threads"], default="asyncio",
                        help="gymloop's episodes in flight: on an event loop or a thread each (async_episodes).")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from arena.core.pack import build_pack

    ctx = mp.get_context("spawn")
    ready, stop, asks = ctx.Queue(), ctx.Event(), ctx.Queue()
    server = ctx.Process(target=_serve, args=(args.latency, args.server, ready, stop, asks), daemon=True)
    server.start()
    base_url = ready.get(timeout=120)
    pack = build_pack("procurement", seed=0)
    heldout = [t.id for t in pack.tasks if t.split == "heldout"]
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; latency {args.latency:g} s; "
          f"{args.workers} rollout worker(s); server on {args.server}; episodes on {args.episodes}")
    finishes: list[float] = []
    ceiling: dict[int, float] = {}
    try:
        for client, concurrency in ((c, n) for c in args.client for n in args.concurrency):
            total = args.rounds * concurrency
            run = _bare_client_run if client == "bare" else _gymloop_run
            cpu, server_cpu, started, failed, in_flight = run(
                client, base_url, pack, heldout, concurrency, total, args, finishes, ready, asks)
            asks.put("cpu")
            server_cpu = float(ready.get(timeout=60)) - server_cpu
            start_up = max(0.0, min(finishes) - args.latency - started)
            wall = max(finishes) - started - start_up
            rate, bound = total / wall, in_flight / args.latency
            cpu_bound = (os.cpu_count() or 1) * total / (cpu + server_cpu)
            if client == "bare":
                ceiling[concurrency] = rate / bound
                judged = "the server's ceiling, not judged"
            else:
                judged = f"{'meets' if rate / bound >= TARGET else 'misses'} target {TARGET}"
                if concurrency in ceiling:
                    judged += f"; {rate / bound / ceiling[concurrency]:.2f} of the ceiling"
            who = "client" if client == "bare" else "gymloop"
            print(f"{client:>7} client, concurrency {concurrency}: {total} episodes in {wall:.2f} s (start-up "
                  f"{start_up:.2f} s) = {rate:.1f} ep/s; bound {bound:.0f} ep/s; ratio {rate / bound:.2f} ({judged}); "
                  f"{who} CPU {1000 * cpu / total:.2f} ms/episode, server {1000 * server_cpu / total:.2f} ms/request; "
                  f"CPU bound {cpu_bound:.0f} ep/s; ratio to the lower bound {rate / min(bound, cpu_bound):.2f}; "
                  f"failures {failed}; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        stop.set()
        server.join(timeout=10)


if __name__ == "__main__":
    main()

"""LLM rollouts against a model server answering in 200 ms: episodes/s against the concurrency/latency bound.

The scripted OpenAI-compatible server runs in its own process (so gymloop's CPU is measured alone) and
answers every request after ``--latency`` seconds. One-turn episodes (the model replies at once) run
with ``max_concurrency`` in flight, through each request path (``--client``: litellm, and the OpenAI
protocol straight to the server). The bound is ``concurrency / latency`` episodes/s;
the target is a ratio >= 0.9. gymloop's own CPU per episode is the players' CPU time over the episodes;
the server's CPU per request is measured in its process. Both share this machine's cores, so the machine
itself bounds the rate at ``cores / (gymloop CPU + server CPU)`` per episode: printed as the CPU bound, with
the ratio against the lower of the two bounds beside the target's ratio.

``--processes N`` splits the episodes in flight over N player processes, each calling ``run_episodes`` with
``concurrency / N`` in flight (gymloop's ``process`` executor plays one episode at a time per worker, so this
measures what in-flight episodes in several worker processes would give, not a shipped setting).

Run: python -m bench.bench_llm_concurrency [--concurrency 64 256] [--rounds 8] [--latency 0.2]
[--client litellm openai] [--processes 1]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import time
from typing import Any

TARGET = 0.9


def _serve(latency: float, ready: Any, stop: Any, asks: Any) -> None:
    """Serve until ``stop``; answer each message on ``asks`` with this process's CPU seconds so far."""
    from arena.agents.scripted_server import ReplyCue, ScriptedModelServer

    with ScriptedModelServer(lambda m: ReplyCue("done", prompt_tokens=50, completion_tokens=5),
                             delay_s=latency) as server:
        ready.put(server.base_url)
        while not stop.is_set():
            try:
                asks.get(timeout=0.2)
            except queue.Empty:
                continue
            ready.put(time.process_time())


def _play(base_url: str, client: str, concurrency: int, total: int, offset: int, go: Any, done: Any) -> None:
    """Warm up, wait for ``go``, play ``total`` one-turn episodes with ``concurrency`` in flight; report on ``done``.

    Reports ``(wall seconds, CPU seconds, failed episodes)``.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
    from arena.pack import build_pack
    from arena.rollout import EpisodeKey, RolloutConfig, run_episodes

    pack = build_pack("procurement", seed=0)
    heldout = [t.id for t in pack.tasks if t.split == "heldout"]
    agent = LiteLLMAgent(LiteLLMConfig(model="hosted_vllm/bench", api_base=base_url + "/v1", timeout_s=30,
                                       client=client))
    warm = [EpisodeKey(pack.id, heldout[0], 0, a) for a in range(8)]
    run_episodes(agent, [pack], warm, RolloutConfig(max_concurrency=8))
    keys = [EpisodeKey(pack.id, heldout[i % len(heldout)], 1 + i // len(heldout), 0)
            for i in range(offset, offset + total)]
    done.put(None)
    go.wait()
    cpu, wall = time.process_time(), time.perf_counter()
    records = run_episodes(agent, [pack], keys, RolloutConfig(max_concurrency=concurrency, episode_timeout_s=120))
    done.put((time.perf_counter() - wall, time.process_time() - cpu, sum(r.failure is not None for r in records)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--rounds", type=int, default=8, help="Episodes per run = rounds x concurrency.")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--client", nargs="+", choices=["litellm", "openai"], default=["litellm", "openai"])
    parser.add_argument("--processes", type=int, default=1, help="Player processes sharing the episodes in flight.")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    ready, stop, asks = ctx.Queue(), ctx.Event(), ctx.Queue()
    server = ctx.Process(target=_serve, args=(args.latency, ready, stop, asks), daemon=True)
    server.start()
    base_url = ready.get(timeout=120)
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; latency {args.latency:g} s; "
          f"{args.processes} player process(es)")
    try:
        for client, concurrency in ((c, n) for c in args.client for n in args.concurrency):
            share, per = concurrency // args.processes, args.rounds * concurrency // args.processes
            go, done = ctx.Event(), ctx.Queue()
            players = [ctx.Process(target=_play, args=(base_url, client, share, per, p * per, go, done))
                       for p in range(args.processes)]
            for player in players:
                player.start()
            for _ in players:
                done.get(timeout=300)
            asks.put("cpu")
            server_cpu = float(ready.get(timeout=60))
            started = time.perf_counter()
            go.set()
            reports = [done.get(timeout=600) for _ in players]
            wall = time.perf_counter() - started
            for player in players:
                player.join(timeout=30)
            asks.put("cpu")
            server_cpu = float(ready.get(timeout=60)) - server_cpu
            total, cpu, failed = per * args.processes, sum(r[1] for r in reports), sum(r[2] for r in reports)
            rate, bound = total / wall, share * args.processes / args.latency
            cpu_bound = (os.cpu_count() or 1) * total / (cpu + server_cpu)
            verdict = "meets" if rate / bound >= TARGET else "misses"
            print(f"{client:>7} client, concurrency {share * args.processes}: {total} episodes in {wall:.2f} s = "
                  f"{rate:.1f} ep/s; bound {bound:.0f} ep/s; ratio {rate / bound:.2f} ({verdict} target {TARGET}); "
                  f"gymloop CPU {1000 * cpu / total:.2f} ms/episode, server {1000 * server_cpu / total:.2f} "
                  f"ms/request; CPU bound {cpu_bound:.0f} ep/s; ratio to the lower bound "
                  f"{rate / min(bound, cpu_bound):.2f}; failures {failed}; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        stop.set()
        server.join(timeout=10)


if __name__ == "__main__":
    main()

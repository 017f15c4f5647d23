"""Served throughput with N concurrent clients on each HTTP surface: MCP streamable HTTP, OpenEnv, the factory.

Grid, fixed before running: N clients (``--clients``, 50 by default) on each surface for ``--seconds`` each.
- gym surfaces: one server process (``python -m arena.serve helpdesk --transport http --openenv``); every client
  opens its own session and plays, until the time is up, episodes of one helpdesk task: ``start_episode``, the
  task's gold calls, ``end_episode`` with the gold reply. Figures: episodes/s, tool calls/s (every request
  counted), per-request latency p50/p95, and every episode's verdict must pass.
  Anchor: the same episodes played by N threads on an in-process ``GymService`` (no transport, no event loop):
  the gym runtime's own rate here, so the ratio is the share of it a surface keeps with N clients.
- the factory: one ``gymloop factory serve`` process; every client submits small requests (1 variant, 1 task,
  gate k = 1, a seed of its own each time), waits for each, downloads its packs. Figures: requests/s, latency
  p50/p95, 429 answers (the queue holds 32). Anchor: the same requests generated one after another in process.

The machine's load is printed with every figure: the two cores are shared, so figures are noisy under load.
This benchmark was written by the engineer who wrote the serving code: it is not independent.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from openenv.core.generic_client import GenericEnvClient

from arena.core.pack import build_pack
from arena.core.task import Task
from arena.serve import GymService, ServeLimits
from arena.serve.client import http_client, tool_text
from arena.serve.docker_container import free_loopback_port
from factory_client import FactoryError, GateConfig, HttpFactoryClient, LocalFactory, VariantRequest

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Tally:
    """What the clients of one surface did."""

    episodes: int = 0
    requests: int = 0
    failed: int = 0
    refused: int = 0
    latencies: list[float] = field(default_factory=list)

    def row(self, name: str, seconds: float, anchor: float | None, unit: str = "episodes") -> str:
        """One printed line: rates over ``seconds``, latency percentiles, the ratio to ``anchor`` and the load."""
        rate = self.episodes / seconds
        lat = sorted(self.latencies) or [0.0]
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        ratio = f"{rate / anchor:8.2f}" if anchor else f"{'-':>8}"
        return (f"{name:34} {rate:9.1f} {unit}/s {self.requests / seconds:9.1f} req/s  p50 "
                f"{statistics.median(lat) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms  x anchor {ratio}  "
                f"failed {self.failed}  429 {self.refused}  load {os.getloadavg()[0]:.1f}")


def _task() -> Task:
    pack = build_pack("helpdesk", seed=0)
    train = [t for t in pack.tasks if t.split == "train"]  # agents are served the train split
    return max(train, key=lambda t: (len(t.gold.steps) >= 2, -len(t.gold.steps)))


def anchor_gym(task: Task, clients: int, seconds: float) -> Tally:
    service = GymService(build_pack("helpdesk", seed=0), limits=ServeLimits(max_episodes=clients + 8))
    tally, lock = Tally(), threading.Lock()
    deadline = time.monotonic() + seconds

    def play(client: str) -> None:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            handle, _ = service.start(task.id, 0, client=client)
            for step in task.gold.steps:
                service.call(handle, step.tool, dict(step.arguments), client=client)
            outcome = service.finish(handle, task.gold.reply, client=client)
            with lock:
                tally.episodes += 1
                tally.requests += len(task.gold.steps) + 2
                tally.failed += not outcome.passed
                tally.latencies.append((time.perf_counter() - t0) / (len(task.gold.steps) + 2))

    threads = [threading.Thread(target=play, args=(f"c{i}",)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


@contextmanager
def gym_server(clients: int) -> Iterator[str]:
    port = free_loopback_port()
    proc = subprocess.Popen([sys.executable, "-m", "arena.serve", "helpdesk", "--transport", "http", "--openenv",
                             "--port", str(port), "--max-sessions", str(clients + 8)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/health", proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _wait(url: str, proc: subprocess.Popen[bytes], expect: int = 200) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == expect:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


async def _mcp_client(url: str, task: Task, deadline: float, tally: Tally) -> None:
    async with http_client(url) as client:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            started = await client.call_tool("start_episode", {"task_id": task.id})
            tally.latencies.append(time.perf_counter() - t0)
            handle = json.loads(tool_text(started))["episode"]
            for step in task.gold.steps:
                t0 = time.perf_counter()
                await client.call_tool(step.tool, {**step.arguments, "episode": handle})
                tally.latencies.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ended = await client.call_tool("end_episode", {"episode": handle, "reply": task.gold.reply})
            tally.latencies.append(time.perf_counter() - t0)
            tally.episodes += 1
            tally.requests += len(task.gold.steps) + 2
            tally.failed += not json.loads(tool_text(ended)).get("passed", False)


async def _openenv_client(url: str, task: Task, deadline: float, tally: Tally) -> None:
    async with GenericEnvClient(base_url=url, message_timeout_s=300) as env:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            await env.reset(task_id=task.id, seed=0)
            tally.latencies.append(time.perf_counter() - t0)
            for step in task.gold.steps:
                t0 = time.perf_counter()
                await env.step({"type": "call_tool", "tool_name": step.tool, "arguments": dict(step.arguments)})
                tally.latencies.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            end = await env.step({"type": "call_tool", "tool_name": "end_episode",
                                   "arguments": {"reply": task.gold.reply}})
            tally.latencies.append(time.perf_counter() - t0)
            tally.episodes += 1
            tally.requests += len(task.gold.steps) + 2
            tally.failed += not (end.observation.get("result") or {}).get("passed", False)


def served_gym(kind: str, url: str, task: Task, clients: int, seconds: float) -> Tally:
    tally = Tally()
    play = _mcp_client if kind == "mcp" else _openenv_client
    endpoint = url + ("/mcp" if kind == "mcp" else "/openenv")

    async def run() -> None:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(play(endpoint, task, deadline, tally) for _ in range(clients)))

    asyncio.run(run())
    return tally


def _small(seed: int) -> VariantRequest:
    return VariantRequest(domain="helpdesk", targets=[], variants=1, tasks_per_variant=1, seed=seed,
                          gate=GateConfig(k=1, band_min=0, band_max=1))


def anchor_factory(requests: int) -> tuple[Tally, float]:
    factory = LocalFactory()
    tally = Tally()
    t0 = time.perf_counter()
    try:
        for seed in range(10_000, 10_000 + requests):
            s0 = time.perf_counter()
            factory.request(_small(seed), timeout=600)
            tally.latencies.append(time.perf_counter() - s0)
            tally.episodes += 1
            tally.requests += 1
    finally:
        factory.close()
    return tally, time.perf_counter() - t0


def served_factory(clients: int, seconds: float) -> Tally:
    port = free_loopback_port()
    home = tempfile.mkdtemp(prefix="gymloop-bench-factory-")
    env = {**os.environ, "GYMLOOP_HOME": home, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "from flows.cli import app; app()", "factory", "serve", "--port",
                             str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    tally, lock = Tally(), threading.Lock()
    try:
        _wait(url + "/v1/info", proc)
        deadline = time.monotonic() + seconds

        def client(index: int) -> None:
            seed = 20_000 + index * 1000
            with HttpFactoryClient(url, timeout=120, retries=0) as http:
                while time.monotonic() < deadline:
                    seed += 1
                    t0 = time.perf_counter()
                    try:
                        http.request(_small(seed), timeout=600)
                    except FactoryError as exc:
                        with lock:
                            tally.refused += "429" in str(exc)
                            tally.failed += "429" not in str(exc)
                        time.sleep(1.0)
                        continue
                    with lock:
                        tally.latencies.append(time.perf_counter() - t0)
                        tally.episodes += 1
                        tally.requests += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return tally


def run_load(clients: int, seconds: float) -> None:
    """Measure and print the grid's figures."""
    task = _task()
    print(f"grid: {clients} clients per surface, {seconds:g} s each; task {task.id} ({len(task.gold.steps)} gold "
          f"calls); {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    anchor = anchor_gym(task, clients, seconds)
    anchor_rate = anchor.episodes / seconds
    print(anchor.row("in-process GymService (anchor)", seconds, None))
    with gym_server(clients) as url:
        print(served_gym("mcp", url, task, clients, seconds).row("MCP, streamable HTTP", seconds, anchor_rate))
        print(served_gym("openenv", url, task, clients, seconds).row("OpenEnv, WebSocket", seconds, anchor_rate))
    factory_anchor, anchor_s = anchor_factory(5)
    print(factory_anchor.row("in-process LocalFactory (anchor)", anchor_s, None, unit="requests"))
    print(served_factory(clients, seconds).row("factory, HTTP", seconds, factory_anchor.episodes / anchor_s,
                                               unit="requests"))

"""Per-call overhead of each served-gym surface, container start, and served throughput with concurrent clients.

Default mode: plays the same read tool call of a helpdesk task ``--calls`` times on each surface: the in-process
gym (the anchor), MCP with the SDK's in-process client, MCP over stdio, MCP over streamable HTTP (a server
process on 127.0.0.1), and MCP over HTTP to a gym container (a throwaway Docker daemon when run as root with
dockerd installed, or ``--docker-host``). Prints ms per call and the ratio to the anchor, then the time to start
a gym container (until its health check answers) against an in-process ``reset``.

``--clients N`` mode (see :mod:`bench.bench_serve_load`): served throughput with N concurrent clients on each
HTTP surface (MCP streamable HTTP, OpenEnv WebSocket, the factory).

Run: ``python -m bench.bench_serve [--calls 300] [--docker-host unix:///var/run/docker.sock]`` or
``python -m bench.bench_serve --clients 50``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from mcp import Client, StdioServerParameters

from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.core.task import Task
from arena.serve import GymService, build_mcp_server
from arena.serve.client import http_client, tool_text
from arena.serve.docker_container import GymContainer, free_loopback_port


def _per_call_ms(fn: Callable[[], Any], calls: int) -> float:
    fn()
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1000


def bench_in_process(task: Task, calls: int) -> float:
    gym = Gym.from_pack(build_pack("helpdesk", seed=0))
    gym.reset(task.id)
    step = task.gold.steps[0]
    return _per_call_ms(lambda: gym.call_tool(step.tool, dict(step.arguments)), calls)


async def _mcp_per_call_ms(client: Client, task: Task, calls: int) -> float:
    async with client:
        started = await client.call_tool("start_episode", {"task_id": task.id})
        handle = json.loads(tool_text(started))["episode"]
        step = task.gold.steps[0]
        args = {**step.arguments, "episode": handle}
        await client.call_tool(step.tool, args)
        t0 = time.perf_counter()
        for _ in range(calls):
            await client.call_tool(step.tool, args)
        return (time.perf_counter() - t0) / calls * 1000


@contextlib.contextmanager
def _http_server() -> Iterator[str]:
    port = free_loopback_port()
    proc = subprocess.Popen([sys.executable, "-m", "arena.serve", "helpdesk", "--transport", "http", "--port",
                             str(port)], stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url + "/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def bench_docker(task: Task, calls: int, host: str | None, reset_ms: float) -> dict[str, float]:
    from arena.serve.docker_image import build_gym_image, docker_client, import_host_python

    client = docker_client(host)
    t0 = time.perf_counter()
    base = import_host_python(client)
    tag = build_gym_image(client, "helpdesk", base=base, tag="gymloop-gym-bench:latest")
    build_s = time.perf_counter() - t0
    starts = []
    for _ in range(3):
        t1 = time.perf_counter()
        with GymContainer(client, tag, target="helpdesk") as container:
            starts.append(time.perf_counter() - t1)
            per_call = asyncio.run(_mcp_per_call_ms(http_client(container.mcp_url), task, calls))
    start_ms = statistics.median(starts) * 1000
    return {"docker_ms": per_call, "build_s": build_s, "start_ms": start_ms, "start_vs_reset": start_ms / reset_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--docker-host", default=None, help="use this daemon instead of a throwaway one")
    parser.add_argument("--clients", type=int, default=0, help="measure throughput with this many clients instead")
    parser.add_argument("--seconds", type=float, default=30.0, help="with --clients: seconds per surface")
    args = parser.parse_args()
    if args.clients:
        from bench.bench_serve_load import run_load

        run_load(args.clients, args.seconds)
        return
    pack = build_pack("helpdesk", seed=0)
    task = next(t for t in pack.tasks if t.split == "train")  # agents are served the train split
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (figures are noisy under load)")
    anchor = bench_in_process(task, args.calls * 10)
    gym = Gym.from_pack(pack)
    reset_ms = _per_call_ms(lambda: gym.reset(task.id), 500)
    rows = {"in-process gym (anchor)": anchor}
    rows["MCP, in-process client"] = asyncio.run(
        _mcp_per_call_ms(Client(build_mcp_server(GymService(pack))), task, args.calls))
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "arena.serve", "helpdesk"])
    rows["MCP, stdio"] = asyncio.run(_mcp_per_call_ms(Client(stdio), task, args.calls))
    with _http_server() as url:
        rows["MCP, streamable HTTP"] = asyncio.run(_mcp_per_call_ms(http_client(url), task, args.calls))
    docker: dict[str, float] | None = None
    try:
        if args.docker_host:
            docker = bench_docker(task, args.calls, args.docker_host, reset_ms)
        else:
            from bench._dockerd import ThrowawayDockerd

            with ThrowawayDockerd() as daemon:
                docker = bench_docker(task, args.calls, daemon.socket, reset_ms)
    except (RuntimeError, OSError) as exc:
        print(f"docker surface skipped: {exc}")
    if docker is not None:
        rows["MCP, HTTP to a gym container"] = docker["docker_ms"]
    print(f"{'surface':32} {'ms/call':>9} {'x anchor':>9}")
    for name, ms in rows.items():
        print(f"{name:32} {ms:9.3f} {ms / anchor:9.1f}")
    print(f"in-process reset: {reset_ms:.3f} ms")
    if docker is not None:
        print(f"image build (base import + build): {docker['build_s']:.1f} s")
        print(f"container start to healthy (median of 3): {docker['start_ms']:.0f} ms = "
              f"{docker['start_vs_reset']:.0f} x in-process reset")


if __name__ == "__main__":
    main()

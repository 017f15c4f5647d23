"""Fair and bounded serving on real servers: abandoned episodes expire, one client cannot take every episode,
a slow verification does not hold up other clients, a pathological pattern cannot stall a verifier, and an
episode handle works only for the session that started it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import statistics
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from mcp import Client

from arena.core.pack import Pack, PackError, build_pack, read_pack, with_content_id, write_pack
from arena.core.task import ResponseAssertion, StateAssertion
from arena.serve import GymService, ServeError, ServeLimits
from arena.serve.client import http_client, tool_text
from tests.serve.conftest import LiveServer, train_task
from tests.serve.surfaces import OpenEnvSurface

pytestmark = pytest.mark.timeout(600)


async def _start(client: Client, task_id: str) -> tuple[bool, str]:
    result = await client.call_tool("start_episode", {"task_id": task_id})
    return bool(result.is_error), tool_text(result)


def test_abandoned_episodes_block_a_new_client_no_longer_than_the_idle_limit(packs: dict[str, Pack]) -> None:
    pack = packs["helpdesk"]
    task = train_task(pack)
    idle = 15.0
    limits = ServeLimits(max_episodes=64, client_episodes=8, idle_timeout_s=idle)

    async def run(url: str) -> tuple[list[str], float, str]:
        async with AsyncExitStack() as stack:
            walkers = [await stack.enter_async_context(http_client(url)) for _ in range(8)]
            refusals = []
            for client in walkers:  # 8 clients x 8 episodes, then they walk away
                assert not any([(await _start(client, task.id))[0] for _ in range(8)])
                if not refusals:  # one client cannot take more than its share
                    refusals.append((await _start(client, task.id))[1])
            newcomer = await stack.enter_async_context(http_client(url))
            abandoned_at = time.monotonic()
            refusals.append((await _start(newcomer, task.id))[1])
            while True:
                error, text = await _start(newcomer, task.id)
                if not error:
                    return refusals, time.monotonic() - abandoned_at, text
                await asyncio.sleep(0.25)

    service = GymService(pack, limits=limits)
    with LiveServer(service) as server:
        refusals, waited, started = asyncio.run(run(server.url + "/mcp"))
    assert "the limit per client is 8" in refusals[0]
    assert "64 episodes are open on this gym (its limit)" in refusals[1] and f"idle for {idle:g} s" in refusals[1]
    assert "episode" in json.loads(started)
    assert waited <= idle + 3.0, f"a new client waited {waited:.1f} s with an idle limit of {idle} s"


def test_another_sessions_handle_is_refused_as_if_it_did_not_exist(packs: dict[str, Pack]) -> None:
    pack = packs["tracker"]
    task = train_task(pack)
    step = task.gold.steps[0]

    async def run(url: str) -> list[tuple[bool, str]]:
        async with http_client(url) as owner, http_client(url) as other:
            handle = json.loads(tool_text(await owner.call_tool("start_episode", {"task_id": task.id})))["episode"]
            out = []
            for client, name, args in [
                (other, step.tool, {**step.arguments, "episode": handle}),
                (other, "end_episode", {"episode": handle, "reply": "done"}),
                (other, step.tool, {**step.arguments, "episode": "0" * 32}),
                (owner, step.tool, {**step.arguments, "episode": handle}),
                (owner, "end_episode", {"episode": handle, "reply": ""}),
            ]:
                result = await client.call_tool(name, args)
                out.append((bool(result.is_error), tool_text(result)))
            return out

    with LiveServer(GymService(pack)) as server:
        results = asyncio.run(run(server.url + "/mcp"))
    assert results[0] == results[1] == results[2]  # another session's handle reads like an unknown one
    assert results[0][0] and "no running episode has this handle" in results[0][1]
    assert not results[3][0] and json.loads(results[4][1])["task_id"] == task.id
    service = GymService(pack)  # in process: the service binds every handle to its client
    handle, _ = service.start(task.id, client="a")
    with pytest.raises(ServeError, match="no running episode has this handle"):
        service.call(handle, step.tool, dict(step.arguments), client="b")
    with pytest.raises(ServeError, match="no running episode has this handle"):
        service.finish(handle, "", client="b")
    service.abandon(handle, client="b")
    assert service.active() == 1
    assert service.finish(handle, "", client="a").task_id == task.id


def test_a_sessionless_http_request_gets_no_episode(packs: dict[str, Pack]) -> None:
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "start_episode", "arguments": {"task_id": train_task(packs["helpdesk"]).id},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": "start_episode"}
    with LiveServer(GymService(packs["helpdesk"])) as server:
        response = httpx.post(server.url + "/mcp", json=body, headers=headers, timeout=30)
    assert "episodes belong to an MCP session" in response.text


def _slow_pack(pack: Pack) -> tuple[Pack, str]:
    """The pack with a task whose verification runs a costly (but read-only) query.

    The query is sized on this machine so that it takes about a second and a half, whatever the CPU.
    """
    table, rows = max(((t, r) for t, r in _tables(pack)), key=lambda x: x[1])
    n = 260
    assert rows >= n
    repeats = math.ceil(1.5 / _query_seconds(pack, _cross_join(table, n, 1)))
    assert rows >= repeats
    task = train_task(pack)
    slow = task.model_copy(update={"assertions": [*task.assertions[:11], StateAssertion(
        kind="state", description="costly", sql=_cross_join(table, n, repeats), expected=[[n ** 3 * repeats]])]})
    tasks = [slow if t.id == task.id else t for t in pack.tasks]
    return with_content_id(dataclasses.replace(pack, tasks=tasks)), slow.id


def _cross_join(table: str, n: int, repeats: int) -> str:
    """A count over n x n x n rows, taken `repeats` times."""
    return (f'SELECT count(*) FROM (SELECT 1 FROM "{table}" LIMIT {n}) a, (SELECT 1 FROM "{table}" LIMIT {n}) b, '
            f'(SELECT 1 FROM "{table}" LIMIT {n}) c, (SELECT 1 FROM "{table}" LIMIT {repeats}) d')


def _query_seconds(pack: Pack, sql: str) -> float:
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.deserialize(pack.state_db)
    t0 = time.perf_counter()
    db.execute(sql).fetchone()
    return time.perf_counter() - t0


def _tables(pack: Pack) -> list[tuple[str, int]]:
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.deserialize(pack.state_db)
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return [(t, db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in names]


def test_a_slow_verification_does_not_delay_another_client(packs: dict[str, Pack]) -> None:
    pack, slow_task = _slow_pack(packs["helpdesk"])

    async def run(url: str) -> tuple[float, list[float], list[float]]:
        async with http_client(url) as judged, http_client(url) as other:
            handle = json.loads(tool_text(await judged.call_tool("start_episode", {"task_id": slow_task})))["episode"]

            async def latency() -> float:
                t0 = time.perf_counter()
                await other.call_tool("list_tasks", {})
                return time.perf_counter() - t0

            before = [await latency() for _ in range(10)]
            t0 = time.perf_counter()
            ending = asyncio.ensure_future(judged.call_tool("end_episode", {"episode": handle, "reply": ""}))
            during = []
            while not ending.done():
                during.append(await latency())
                await asyncio.sleep(0.02)
            await ending
            assert json.loads(tool_text(ending.result()))["task_id"] == slow_task
            return time.perf_counter() - t0, before, during

    with LiveServer(GymService(pack)) as server:
        verify_s, before, during = asyncio.run(run(server.url + "/mcp"))
    assert verify_s > 0.5, f"the slow verification took only {verify_s:.2f} s: the test proves nothing"
    assert len(during) >= 5
    delay = statistics.median(during) - statistics.median(before)
    assert delay < 0.1, f"another client's call took {delay * 1000:.0f} ms longer during a {verify_s:.1f} s verify"
    assert max(during) < verify_s / 2


def _with_pattern(pack: Pack, pattern: str) -> tuple[Pack, str]:
    task = next(t for t in pack.tasks if any(isinstance(a, ResponseAssertion) for a in t.assertions))
    assertions = [a.model_copy(update={"forbidden_patterns": [*a.forbidden_patterns, pattern]})
                  if isinstance(a, ResponseAssertion) else a for a in task.assertions]
    tasks = [task.model_copy(update={"assertions": assertions}) if t.id == task.id else t for t in pack.tasks]
    return with_content_id(dataclasses.replace(pack, tasks=tasks)), task.id


def test_a_pathological_pattern_is_refused_at_load_or_runs_in_linear_time(packs: dict[str, Pack],
                                                                          tmp_path: Path) -> None:
    for pattern, why in ((r"(\w+)\s+\1", "cannot run without backtracking"), (r"(?=x)y", "no backreferences"),
                         (r"\w{1000}\w{1000}", "instructions, over the limit")):
        pack, _ = _with_pattern(packs["procurement"], pattern)
        folder = write_pack(pack, tmp_path / f"p{len(list(tmp_path.iterdir()))}")
        with pytest.raises(PackError) as refused:
            read_pack(folder)
        assert why in str(refused.value) and "\n" not in str(refused.value)
    pack, task_id = _with_pattern(packs["procurement"], r"(a+)+$")  # exponential in Python's re
    assert read_pack(write_pack(pack, tmp_path / "ok")).id == pack.id
    with LiveServer(GymService(pack), openenv=True) as server, OpenEnvSurface(server.url + "/openenv") as surface:
        surface.start(task_id, 0)
        result: dict[str, object] = {}
        worker = threading.Thread(target=lambda: result.update(surface.end("a" * 40 + "!")))
        t0 = time.perf_counter()
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "the verifier stalled on a backtracking pattern"
    assert result["task_id"] == task_id
    assert time.perf_counter() - t0 < 30


def test_a_pack_with_a_reserved_table_is_refused_at_load_in_one_line(tmp_path: Path) -> None:
    import sqlite3
    import subprocess
    import sys

    pack = build_pack("helpdesk", seed=0)
    db = sqlite3.connect(":memory:")
    db.deserialize(pack.state_db)
    db.execute("CREATE TABLE _gymloop_changes (tbl TEXT, rid INTEGER)")
    bad = with_content_id(dataclasses.replace(pack, state_db=db.serialize()))
    folder = write_pack(bad, tmp_path / "bad")
    with pytest.raises(PackError, match="table '_gymloop_changes' uses a name gymloop reserves"):
        read_pack(folder)
    proc = subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", "gyms", "serve", str(folder)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "uses a name gymloop reserves" in lines[0] and "Traceback" not in proc.stderr

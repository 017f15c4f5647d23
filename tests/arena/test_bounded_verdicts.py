"""Bounded verdicts: slow or writing checks are refused at load; a slow tool call or check stops at its bound."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import statistics
import time
from pathlib import Path

import pytest
from toy_domain import TOY, lookup

from arena.core.gym import Gym
from arena.core.pack import Pack, PackError, build_pack, read_pack, with_content_id, write_pack
from arena.core.task import StateAssertion
from arena.serve import GymService
from arena.serve.client import http_client, tool_text

SLOW_COUNT = ("(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 40000000) "
              "SELECT count(*) FROM c)")
"""A count that keeps SQLite busy for tens of seconds on this machine."""


def _with_check(pack: Pack, sql: str) -> Pack:
    task = pack.tasks[0]
    slow = task.model_copy(update={"assertions": [*task.assertions[:11], StateAssertion(
        description="costly", sql=sql, expected=[[1]])]})
    return with_content_id(dataclasses.replace(pack, tasks=[slow if t.id == task.id else t for t in pack.tasks]))


def test_a_slow_state_query_is_refused_at_load_naming_the_query(tmp_path: Path) -> None:
    pack = _with_check(build_pack(TOY, seed=0), f"SELECT {SLOW_COUNT} > 0")
    folder = write_pack(pack, tmp_path / "slow")
    started = time.perf_counter()
    with pytest.raises(PackError) as refused:
        read_pack(folder, domains=lookup)
    message = str(refused.value)
    assert "runs past the verification's time bound" in message and "WITH RECURSIVE c(x)" in message
    assert f"tasks/{pack.tasks[0].id}.json" in message and ".sql" in message and "\n" not in message
    assert time.perf_counter() - started < 30


@pytest.mark.parametrize("sql", ["UPDATE orders SET refunded = 1", "DELETE FROM refunds",
                                 "INSERT INTO refunds VALUES ('RF-1', 'ORD-00005', 1.0)", "DROP TABLE refunds",
                                 "PRAGMA writable_schema = 1", "ATTACH DATABASE ':memory:' AS other"])
def test_a_write_query_in_a_check_is_refused_at_load(tmp_path: Path, sql: str) -> None:
    folder = write_pack(_with_check(build_pack(TOY, seed=0), sql), tmp_path / "write")
    with pytest.raises(PackError, match="checks may only read it|query refused"):
        read_pack(folder, domains=lookup)


def test_a_read_only_recursive_check_within_the_bound_is_accepted(tmp_path: Path) -> None:
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT count(*) FROM c"
    pack = _with_check(build_pack(TOY, seed=0), sql)
    assert read_pack(write_pack(pack, tmp_path / "ok"), domains=lookup).id == pack.id


def _slow_world_pack() -> Pack:
    """The toy pack with its orders behind a view that keeps SQLite busy: any read of the orders is slow."""
    pack = build_pack(TOY, seed=0)
    db = sqlite3.connect(":memory:")
    db.deserialize(pack.state_db)
    db.execute("ALTER TABLE orders RENAME TO orders_data")
    db.execute(f"CREATE VIEW orders AS SELECT * FROM orders_data WHERE {SLOW_COUNT} > 0")
    db.commit()
    return with_content_id(dataclasses.replace(pack, state_db=db.serialize()))


def test_a_slow_tool_call_stops_at_its_bound_and_the_episode_goes_on() -> None:
    pack = _slow_world_pack()
    with Gym(pack, TOY) as gym:
        gym.tool_call_bound_s = 0.3
        task = pack.tasks[0]
        gym.reset(task.id)
        started = time.perf_counter()
        result = gym.call_tool("search_orders", {"query": "Customer"})
        took = time.perf_counter() - started
        assert not result.ok and result.error is not None and result.error.fault == "timeout"
        assert "time bound of 0.3 s" in result.error.message
        assert took < 3, f"the call took {took:.1f} s against a bound of 0.3 s"
        again = gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        assert again.error is None or again.error.kind != "ended"
        verdict = gym.verify("")
        assert not verdict.passed


def test_a_slow_tool_call_ends_within_its_bound_without_stalling_another_client() -> None:
    from tests.serve.conftest import LiveServer

    pack = _slow_world_pack()
    task = next(t for t in pack.tasks if t.split == "train")

    async def run(url: str) -> tuple[float, dict[str, object], list[float], list[float]]:
        async with http_client(url) as slow, http_client(url) as other:
            handle = json.loads(tool_text(await slow.call_tool("start_episode", {"task_id": task.id})))["episode"]

            async def latency() -> float:
                t0 = time.perf_counter()
                await other.call_tool("list_tasks", {})
                return time.perf_counter() - t0

            before = [await latency() for _ in range(10)]
            t0 = time.perf_counter()
            calling = asyncio.ensure_future(slow.call_tool("search_orders", {"episode": handle, "query": "Cust"}))
            during = []
            while not calling.done():
                during.append(await latency())
                await asyncio.sleep(0.02)
            result = json.loads(tool_text(await calling))
            return time.perf_counter() - t0, result, before, during

    with LiveServer(GymService(pack)) as server:
        took, result, before, during = asyncio.run(run(server.url + "/mcp"))
    bound = Gym.tool_call_bound_s
    assert result["ok"] is False and "time bound" in json.dumps(result)
    assert took < bound + 3, f"the slow call took {took:.1f} s against a bound of {bound:g} s"
    assert len(during) >= 5
    delay = statistics.median(during) - statistics.median(before)
    assert delay < 0.1, f"another client's call took {delay * 1000:.0f} ms longer during the slow call"


def test_a_slow_check_fails_at_the_verification_bound() -> None:
    pack = _with_check(build_pack(TOY, seed=0), f"SELECT {SLOW_COUNT} > 0")
    with Gym(pack, TOY) as gym:
        gym.verify_bound_s = 0.3
        gym.reset(pack.tasks[0].id)
        started = time.perf_counter()
        verdict = gym.verify("")
        assert time.perf_counter() - started < 3
    costly = next(r for r in verdict.results if r.description == "costly")
    assert not costly.passed and "time bound" in costly.detail

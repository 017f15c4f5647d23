"""A reset puts back only the rows the last episode changed: every later episode plays as on a fresh gym."""

import dataclasses
import sqlite3
from typing import Any

import pytest
from toy_domain import TOY

from arena.core.domain import World
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.task import Task
from arena.core.toolkit import ToolContext, collect_tools, tool


def _play(gym: Gym, task: Task, other: Task, seed: int) -> tuple[Any, ...]:
    """Play ``task`` with its own gold steps and then ``other``'s (writes to rows the task does not own)."""
    gym.reset(task.id, seed=seed)
    for step in [*task.gold.steps, *other.gold.steps]:
        gym.call_tool(step.tool, step.arguments)
    world = gym.state_hash()
    verdict = gym.verify(task.gold.reply)
    return [s.model_dump() for s in gym.trace], world, verdict.model_dump(), gym.changed_rows()


@pytest.mark.parametrize("domain", ["helpdesk", "tracker", "procurement"])
def test_one_gym_plays_every_task_as_a_fresh_gym_does(domain):
    pack = build_pack(domain, seed=0)
    tasks = pack.tasks[:60]
    changed = 0
    with Gym(pack) as reused:
        template = reused.template_hash()
        for i, task in enumerate(tasks):
            other = tasks[(i * 7 + 3) % len(tasks)]
            with Gym(pack) as fresh:
                expected = _play(fresh, task, other, seed=i)
            assert _play(reused, task, other, seed=i) == expected, task.id
            changed += expected[3] > 0
        reused.reset(tasks[0].id)
        assert reused.state_hash() == template and reused.changed_rows() == 0
    assert changed >= len(tasks) // 3


@pytest.fixture(scope="module")
def toy_pack() -> Pack:
    return build_pack(TOY, seed=1)


def test_an_episode_that_changed_more_rows_than_the_undo_limit_gets_the_whole_world(toy_pack, monkeypatch):
    monkeypatch.setattr("arena.core.gym.MAX_UNDONE_ROWS", 1)
    with Gym(toy_pack, TOY) as gym:
        template = gym.template_hash()
        gym.reset("refund_plain-01")
        gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        gym.call_tool("add_note", {"order_id": "ORD-00009", "note": "hello"})
        assert gym.changed_rows() == 3
        gym.reset("refund_plain-01")
        assert gym.state_hash() == template and gym.changed_rows() == 0


def test_deleted_and_swapped_unique_values_come_back(toy_pack):
    with Gym(toy_pack, TOY) as gym:
        template = gym.template_hash()
        gym.reset("refund_plain-01")
        gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        first = gym.trace[-1].output["refund_id"]
        gym.reset("refund_plain-01")
        assert gym.state_hash() == template
        gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        assert gym.trace[-1].output["refund_id"] == first


@tool(mode="write", entity="order", operation="action")
def archive_orders(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Move an order into a new archive table (changes the world's schema).

    Args:
        order_id: Order id.
    """
    ctx.conn.execute("CREATE TABLE IF NOT EXISTS archive AS SELECT * FROM orders WHERE id = ?", (order_id,))
    ctx.conn.execute("DELETE FROM orders WHERE id = ?", (order_id,))
    return {"archived": order_id}


@tool(mode="write", entity="order", operation="create")
def log_event(ctx: ToolContext, text: str) -> dict[str, Any]:
    """Append to the AUTOINCREMENT event log.

    Args:
        text: Event text.
    """
    cursor = ctx.conn.execute("INSERT INTO events (text) VALUES (?)", (text,))
    return {"event": cursor.lastrowid}


def _with_event_log(seed: int, knobs: dict[str, Any]) -> World:
    world = TOY.generate(seed, knobs)
    conn = sqlite3.connect(":memory:")
    conn.deserialize(world.state_db)
    conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT)")
    conn.execute("INSERT INTO events (text) VALUES ('opened')")
    conn.commit()
    return dataclasses.replace(world, state_db=conn.serialize())


ARCHIVE = dataclasses.replace(TOY, tools={**TOY.tools, **collect_tools(__import__(__name__, fromlist=["_"]))})
LEDGER = dataclasses.replace(ARCHIVE, generate=_with_event_log)


def test_a_changed_schema_is_restored_whole():
    pack = build_pack(ARCHIVE, seed=1)
    with Gym(pack, ARCHIVE) as gym:
        template = gym.template_hash()
        gym.reset("refund_plain-01")
        assert gym.call_tool("archive_orders", {"order_id": "ORD-00005"}).ok
        gym.reset("refund_plain-01")
        assert gym.state_hash() == template
        assert gym.call_tool("get_order", {"order_id": "ORD-00005"}).ok
        assert gym.call_tool("archive_orders", {"order_id": "ORD-00005"}).ok


def test_autoincrement_counters_come_back_with_the_world():
    pack = build_pack(LEDGER, seed=1)
    with Gym(pack, LEDGER) as gym:
        events = []
        for _ in range(2):
            gym.reset("refund_plain-01")
            events.append(gym.call_tool("log_event", {"text": "x"}).output["event"])
        assert events == [2, 2]


def test_a_gym_written_in_one_thread_is_put_back_and_judged_in_another(toy_pack):
    from concurrent.futures import ThreadPoolExecutor

    with Gym(toy_pack, TOY) as gym, ThreadPoolExecutor(max_workers=1) as other:
        template = gym.template_hash()
        gym.reset("refund_plain-01")
        gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        assert gym.verify("refunded").changes

        def again() -> tuple[str, int, int]:
            gym.reset("refund_plain-01")
            world = gym.state_hash()
            gym.call_tool("add_note", {"order_id": "ORD-00009", "note": "hello"})
            return world, len(gym.verify("noted").changes), gym.changed_rows()

        assert other.submit(again).result() == (template, 1, 1)


def test_a_gym_keeps_its_worlds_in_memory_and_leaves_no_file(toy_pack, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Gym(toy_pack, TOY) as gym:
        for _ in range(2):
            gym.reset("refund_plain-01")
            gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
            assert gym.verify("refunded").changes
        assert gym.template_hash() != gym.state_hash()
    assert list(tmp_path.iterdir()) == []

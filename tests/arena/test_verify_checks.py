"""The state, trace and reply checks of the verifier, case by case."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from arena.core.results import ToolErrorInfo, TraceStep
from arena.core.task import CallPattern, ResponseAssertion, StateAssertion, TraceAssertion
from arena.core.verify import ReadOnlyGuard, check_response, check_state, check_trace, normalize


def _step(index: int, tool: str, ok: bool = True, **arguments: Any) -> TraceStep:
    error = None if ok else ToolErrorInfo(kind="validation", message="bad")
    return TraceStep(index=index, tool=tool, arguments=arguments, ok=ok, output=None, error=error, clock="")


TRACE = [_step(0, "search", query="ada"), _step(1, "get", ok=False, id="A-1"), _step(2, "get", id="A-1"),
         _step(3, "refund", id="A-1", amount=5.0)]


@pytest.mark.parametrize(("assertion", "holds", "why"), [
    (TraceAssertion(description="d", required=[CallPattern(tool="get", arguments={"id": "A-1"})]), True, ""),
    (TraceAssertion(description="d", required=[CallPattern(tool="get", arguments={"id": "A-2"})]), False,
     "missing call get"),
    (TraceAssertion(description="d", required=[CallPattern(tool="delete")]), False, "missing call delete"),
    (TraceAssertion(description="d", required=[CallPattern(tool="get"), CallPattern(tool="refund")],
                    order=[(0, 1)]), True, ""),
    (TraceAssertion(description="d", required=[CallPattern(tool="refund"), CallPattern(tool="get")],
                    order=[(0, 1)]), False, "refund must come before get"),
    (TraceAssertion(description="d", required=[CallPattern(tool="search"), CallPattern(tool="get")],
                    order=[(1, 0)]), False, "get must come before search"),
    (TraceAssertion(description="d", forbidden=[CallPattern(tool="refund")]), False, "forbidden call refund at step 3"),
    (TraceAssertion(description="d", forbidden=[CallPattern(tool="refund", arguments={"amount": 9.0})]), True, ""),
    (TraceAssertion(description="d", required=[CallPattern(tool="refund", arguments={"amount": 5.0000001})]),
     True, ""),
    (TraceAssertion(description="d", required=[CallPattern(tool="refund", arguments={"missing": None})]), True, ""),
])
def test_trace_check(assertion: TraceAssertion, holds: bool, why: str):
    ok, detail = check_trace(TRACE, assertion)
    assert ok is holds
    assert why in detail if why else detail == ""


def test_a_failed_call_does_not_count_as_made():
    only_failed = [_step(0, "get", ok=False, id="A-1")]
    ok, detail = check_trace(only_failed, TraceAssertion(description="d", required=[CallPattern(tool="get")]))
    assert not ok and "missing call get" in detail
    assert check_trace(only_failed, TraceAssertion(description="d", forbidden=[CallPattern(tool="get")]))[0]


def test_order_uses_the_first_matching_call():
    trace = [_step(0, "b"), _step(1, "a"), _step(2, "b")]
    assertion = TraceAssertion(description="d", required=[CallPattern(tool="a"), CallPattern(tool="b")],
                               order=[(0, 1)])
    assert not check_trace(trace, assertion)[0]


@pytest.mark.parametrize(("reply", "holds", "why"), [
    ("Refunded RF-N00001 for you.", True, ""),
    ("refunded rf-n00001", True, ""),
    ("Refund issued as refund number 1.", True, ""),
    ("Nothing to report.", False, "does not state 'RF-N00001'"),
    ("Refunded RF-N00001; internal token TOKEN-123.", False, "leaks internal data 'TOKEN-123'"),
    ("Refunded RF-N00001, see the SECRET notes.", False, "leaks 'secret'"),
])
def test_response_check(reply: str, holds: bool, why: str):
    assertion = ResponseAssertion(description="d", must_include=[["RF-N00001", "refund number 1"]],
                                  must_not_include=["secret"], forbidden_patterns=[r"TOKEN-\d+"])
    ok, detail = check_response(reply, assertion)
    assert ok is holds
    assert why in detail if why else detail == ""


def test_every_required_fact_must_be_stated():
    assertion = ResponseAssertion(description="d", must_include=[["alpha"], ["beta"]])
    assert check_response("alpha and beta", assertion)[0]
    ok, detail = check_response("alpha only", assertion)
    assert not ok and "'beta'" in detail


@pytest.fixture()
def world() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, amount REAL)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1.0000000001), ("b", 2.5)])
    return conn


@pytest.mark.parametrize(("sql", "expected", "holds", "why"), [
    ("SELECT id, amount FROM t ORDER BY id", [["a", 1.0], ["b", 2.5]], True, ""),
    ("SELECT id FROM t ORDER BY id", [["a"]], False, "expected [['a']], got [['a'], ['b']]"),
    ("SELECT nothing FROM nowhere", [], False, "query failed"),
    ("SELECT COUNT(*) FROM t", [[2]], True, ""),
])
def test_state_check(world: sqlite3.Connection, sql: str, expected: list[list[Any]], holds: bool, why: str):
    guard = ReadOnlyGuard(world)
    with guard:
        ok, detail = check_state(world, StateAssertion(description="d", sql=sql, expected=expected))
    assert ok is holds
    assert why in detail if why else detail == ""


def test_a_long_result_is_shown_in_its_first_300_characters(world: sqlite3.Connection):
    world.executemany("INSERT INTO t VALUES (?, ?)", [(f"row-{i:03d}", float(i)) for i in range(100)])
    with ReadOnlyGuard(world):
        ok, detail = check_state(world, StateAssertion(description="d", sql="SELECT id FROM t ORDER BY id",
                                                       expected=[]))
    got = repr([[i] for i in ["a", "b", *(f"row-{i:03d}" for i in range(100))]])
    assert not ok and detail == f"expected [], got {got[:300]}"


def test_a_state_query_cannot_write_under_the_guard(world: sqlite3.Connection):
    guard = ReadOnlyGuard(world)
    with guard:
        ok, detail = check_state(world, StateAssertion(description="d", sql="DELETE FROM t", expected=[]))
    assert not ok and "query failed" in detail
    assert world.execute("SELECT COUNT(*) FROM t").fetchone() == (2,)
    world.execute("DELETE FROM t WHERE id = 'b'")
    assert world.execute("SELECT COUNT(*) FROM t").fetchone() == (1,)


def test_normalize_rounds_floats_and_turns_tuples_into_lists():
    assert normalize((1.00000001, [2.0000004, "x"])) == [1.0, [2.0, "x"]]
    assert normalize(float("inf")) == float("inf") and normalize(3) == 3
    assert normalize(0.1234567) == 0.123457

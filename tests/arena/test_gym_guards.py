"""The gym's guards on every kind of tool: permissions, fault windows, the end of an episode."""

from __future__ import annotations

import pytest
from guard_domain import ALL_PERMISSIONS, GUARDED, guarded_pack, scoped_task, with_tasks

from arena.gym import Gym
from arena.pack import Pack
from arena.task import GoldStep

CALLS = {
    "get_account": {"account_id": "ACC-1"},
    "audit_account": {"account_id": "ACC-1"},
    "set_note": {"account_id": "ACC-1", "note": "hello"},
    "set_balance": {"account_id": "ACC-1", "balance": 5.0},
    "open_account": {"owner": "Bea"},
    "close_account": {"account_id": "ACC-1"},
}
"""A valid call of every tool of the guarded domain."""


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _gym_for(pack: Pack, permissions: list[str]) -> Gym:
    return Gym(with_tasks(pack, scoped_task("t", [], permissions=permissions)), GUARDED)


def test_every_tool_kind_is_covered(pack: Pack):
    specs = {s.name: s for s in pack.tools}
    assert set(specs) == set(CALLS)
    kinds = {(s.mode, s.permission is not None) for s in specs.values()}
    assert kinds == {("read", False), ("read", True), ("write", False), ("write", True)}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_tool_needing_a_missing_permission_is_denied_and_changes_nothing(pack: Pack, name: str):
    spec = next(s for s in pack.tools if s.name == name)
    with _gym_for(pack, []) as gym:
        gym.reset("t")
        result = gym.call_tool(name, CALLS[name])
        if spec.permission is None:
            assert result.ok, result.error
            return
        assert not result.ok and result.error is not None and result.error.kind == "permission"
        assert spec.permission in result.error.message and name in result.error.message
        assert gym.changed_rows() == 0
        assert gym.trace[-1].error is not None and gym.trace[-1].error.kind == "permission"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_persona_holding_the_permission_may_call_every_tool(pack: Pack, name: str):
    with _gym_for(pack, ALL_PERMISSIONS) as gym:
        gym.reset("t")
        result = gym.call_tool(name, CALLS[name])
        assert result.ok, result.error


def test_read_tool_with_a_permission_is_denied_to_a_persona_holding_only_others(pack: Pack):
    with _gym_for(pack, ["billing", "admin"]) as gym:
        gym.reset("t")
        denied = gym.call_tool("audit_account", CALLS["audit_account"])
        assert denied.error is not None and denied.error.kind == "permission" and "audit" in denied.error.message
        assert gym.call_tool("set_balance", CALLS["set_balance"]).ok


def test_permission_is_checked_before_the_arguments(pack: Pack):
    with _gym_for(pack, []) as gym:
        gym.reset("t")
        result = gym.call_tool("audit_account", {"account_id": 7})
        assert result.error is not None and result.error.kind == "permission"


def test_a_fault_fires_exactly_on_its_window_of_calls(pack: Pack):
    task = scoped_task("t", [], faults=["get-window"])
    with Gym(with_tasks(pack, task), GUARDED) as gym:
        gym.reset("t")
        outcomes = [gym.call_tool("get_account", {"account_id": "ACC-1"}) for _ in range(5)]
    faulted = [r.error is not None and r.error.kind == "fault" for r in outcomes]
    assert faulted == [False, True, True, False, False]
    assert all(r.error is None or r.error.retryable for r in outcomes)


def test_a_fault_fires_only_in_tasks_listing_it(pack: Pack):
    with Gym(with_tasks(pack, scoped_task("t", [])), GUARDED) as gym:
        gym.reset("t")
        assert all(gym.call_tool("get_account", {"account_id": "ACC-1"}).ok for _ in range(4))


def test_a_write_refused_by_the_tool_rolls_back_and_a_later_write_lands(pack: Pack):
    with _gym_for(pack, ALL_PERMISSIONS) as gym:
        gym.reset("t")
        missing = gym.call_tool("set_note", {"account_id": "ACC-99", "note": "x"})
        assert missing.error is not None and missing.error.kind == "not_found" and gym.changed_rows() == 0
        assert gym.call_tool("set_note", CALLS["set_note"]).ok and gym.changed_rows() == 1
        assert gym.trace[-1].write and not gym.trace[0].write


def test_calls_after_verify_are_refused_for_every_tool(pack: Pack):
    task = scoped_task("t", [], gold=[GoldStep(tool="get_account", arguments={"account_id": "ACC-1"})])
    with Gym(with_tasks(pack, task), GUARDED) as gym:
        gym.reset("t")
        gym.verify("")
        for name, args in CALLS.items():
            result = gym.call_tool(name, args)
            assert result.error is not None and result.error.kind == "ended", name
        assert gym.changed_rows() == 0

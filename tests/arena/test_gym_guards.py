"""The gym's guards on every kind of tool: permissions, fault windows, the end of an episode."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from guard_domain import ALL_PERMISSIONS, GUARDED, guarded_pack, scoped_task, with_tasks

from arena.core.gym import MAX_ARGUMENT_CHARS, EnvironmentFailure, Gym
from arena.core.pack import Pack
from arena.core.task import GoldStep
from arena.core.toolkit import ToolContext, tool

CALLS = {
    "get_account": {"account_id": "ACC-1"},
    "audit_account": {"account_id": "ACC-1"},
    "set_note": {"account_id": "ACC-1", "note": "hello"},
    "set_balance": {"account_id": "ACC-1", "balance": 5.0},
    "open_account": {"owner": "Bea"},
    "close_account": {"account_id": "ACC-1"},
    "tag_account": {"account_id": "ACC-1", "tags": ["a"], "labels": {"k": "v"}},
    "log_event": {"account_id": "ACC-1", "text": "seen"},
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


def _gym(pack: Pack, faults: list[str] | None = None) -> Gym:
    return Gym(with_tasks(pack, scoped_task("t", [], faults=faults)), GUARDED)


@pytest.mark.parametrize(("note", "ok"), [("x" * MAX_ARGUMENT_CHARS, True), ("x" * (MAX_ARGUMENT_CHARS + 1), False)])
def test_string_length_limit_is_inclusive(pack: Pack, note: str, ok: bool):
    with _gym(pack) as gym:
        gym.reset("t")
        result = gym.call_tool("set_note", {"account_id": "ACC-1", "note": note})
        assert result.ok is ok
        if not ok:
            assert result.error is not None and result.error.kind == "validation"
            assert str(MAX_ARGUMENT_CHARS) in result.error.message and gym.changed_rows() == 0
            recorded = gym.trace[-1].arguments["note"]
            assert len(recorded) < 300 and recorded.endswith(f"<{MAX_ARGUMENT_CHARS + 1} chars>")


@pytest.mark.parametrize("args", [
    {"account_id": "ACC-1", "tags": ["ok", "y" * (MAX_ARGUMENT_CHARS + 1)]},
    {"account_id": "ACC-1", "tags": ["ok"], "labels": {"k": "bad\ud800"}},
    {"account_id": "ACC-1", "tags": ["bad\ud800"]},
], ids=["long string in a list", "lone surrogate in a dict", "lone surrogate in a list"])
def test_bad_strings_nested_in_lists_and_objects_are_refused(pack: Pack, args: dict[str, Any]):
    with _gym(pack) as gym:
        gym.reset("t")
        result = gym.call_tool("tag_account", args)
        assert result.error is not None and result.error.kind == "validation" and gym.changed_rows() == 0
        gym.trace[-1].model_dump_json()


def test_arguments_may_come_as_json_text_or_none(pack: Pack):
    with _gym(pack) as gym:
        gym.reset("t")
        assert gym.call_tool("get_account", '{"account_id": "ACC-2"}').output["id"] == "ACC-2"
        missing = gym.call_tool("get_account", None)
        assert missing.error is not None and missing.error.kind == "validation"
        assert "account_id" in missing.error.message
        assert gym.trace[-1].arguments == {}
        nan = gym.call_tool("set_balance", '{"account_id": "ACC-1", "balance": NaN}')
        assert nan.error is not None and nan.error.kind == "validation" and "NaN" in nan.error.message


def test_a_rate_limit_names_its_wait(pack: Pack):
    with _gym(pack, ["note-rate"]) as gym:
        gym.reset("t")
        first = gym.call_tool("set_note", CALLS["set_note"])
        assert first.error is not None and first.error.fault == "rate_limit" and first.error.retryable
        assert "rate limit exceeded" in first.error.message and "retry after 2.5s" in first.error.message
        assert gym.call_tool("set_note", CALLS["set_note"]).ok


def test_a_data_conflict_clears_only_after_a_get(pack: Pack):
    with _gym(pack, ["note-conflict"]) as gym:
        gym.reset("t")
        first = gym.call_tool("set_note", CALLS["set_note"])
        assert first.error is not None and first.error.fault == "data_conflict" and first.error.retryable
        assert gym.call_tool("audit_account", CALLS["audit_account"]).ok
        again = gym.call_tool("set_note", CALLS["set_note"])
        assert again.error is not None and again.error.kind == "conflict" and again.error.retryable
        assert gym.call_tool("get_account", CALLS["get_account"]).ok
        assert gym.call_tool("set_note", CALLS["set_note"]).ok and gym.changed_rows() == 1


@tool(mode="read", entity="account", operation="get")
def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """A read tool with a bug.

    Args:
        account_id: Account id.
    """
    raise KeyError(account_id)


def test_a_crashing_read_tool_ends_the_episode(pack: Pack):
    broken = replace(GUARDED, tools={**GUARDED.tools, "get_account": get_account})
    with Gym(with_tasks(pack, scoped_task("t", [])), broken) as gym:
        gym.reset("t")
        with pytest.raises(EnvironmentFailure, match="get_account crashed: KeyError"):
            gym.call_tool("get_account", CALLS["get_account"])
        assert gym.ended
        assert gym.call_tool("get_account", CALLS["get_account"]).error.kind == "ended"


def test_reset_names_an_unknown_task_and_each_episode_restarts_the_clock_and_ids(pack: Pack):
    with _gym(pack) as gym:
        with pytest.raises(KeyError, match="nope"):
            gym.reset("nope")
        with pytest.raises(RuntimeError, match="reset"):
            gym.verify("")
        clocks = []
        for _ in range(2):
            gym.reset("t", seed=3)
            opened = gym.call_tool("open_account", CALLS["open_account"])
            assert opened.output == {"account_id": "ACC-N00001"}
            clocks.append([s.clock for s in gym.trace])
            gym.call_tool("get_account", CALLS["get_account"])
            assert gym.trace[1].clock > gym.trace[0].clock
        assert clocks[0] == clocks[1]
        assert gym.task.id == "t" and not gym.ended

"""The gym's argument limits on their boundaries, what a refused call keeps on the trace, and the world hash."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from guard_domain import GUARDED, guarded_pack, scoped_task, with_tasks

from arena.core.gym import MAX_NESTING, MAX_VALUES, SQLITE_INT_MAX, SQLITE_INT_MIN, Gym
from arena.core.pack import Pack
from arena.core.task import ResponseAssertion
from arena.core.toolkit import ToolContext, tool


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _gym(pack: Pack, faults: list[str] | None = None, assertions: list[Any] | None = None) -> Gym:
    gym = Gym(with_tasks(pack, scoped_task("t", assertions or [], faults=faults)), GUARDED)
    gym.reset("t")
    return gym


def _refusal(gym: Gym, name: str, arguments: Any) -> str:
    result = gym.call_tool(name, arguments)
    assert not result.ok and result.error is not None
    return result.error.message


@pytest.mark.parametrize(("value", "out_of_range"), [
    (SQLITE_INT_MAX, False), (SQLITE_INT_MIN, False), (SQLITE_INT_MAX + 1, True), (SQLITE_INT_MIN - 1, True),
    (True, False),
])
def test_integers_are_limited_to_64_bits_inclusive(pack: Pack, value: int, out_of_range: bool):
    with _gym(pack) as gym:
        message = _refusal(gym, "get_account", {"account_id": value})  # not a string either way
    assert ("out of range" in message) is out_of_range, message


def test_a_lone_surrogate_is_refused_saying_so(pack: Pack):
    with _gym(pack) as gym:
        message = _refusal(gym, "get_account", {"account_id": "ACC-\ud800"})
    assert message == "string holds a lone surrogate and is not valid Unicode text"


def _values(n: int) -> dict[str, Any]:
    """Arguments holding exactly ``n`` values, the object itself included."""
    return {"account_id": "ACC-1", "extra": [0] * (n - 3)}


@pytest.mark.parametrize(("count", "refused"), [(MAX_VALUES, False), (MAX_VALUES + 1, True)])
def test_the_value_count_limit_is_inclusive(pack: Pack, count: int, refused: bool):
    with _gym(pack) as gym:
        message = _refusal(gym, "get_account", _values(count))  # "extra" is unexpected either way
    assert (message == f"arguments hold more than {MAX_VALUES} values") is refused, message


def _nested(levels: int) -> dict[str, Any]:
    """Arguments whose containers nest ``levels`` deep, the object itself included."""
    inner: Any = 0
    for _ in range(levels - 1):
        inner = [inner]
    return {"account_id": "ACC-1", "extra": inner}


@pytest.mark.parametrize(("levels", "refused"), [(MAX_NESTING, False), (MAX_NESTING + 1, True)])
def test_the_nesting_limit_is_inclusive(pack: Pack, levels: int, refused: bool):
    with _gym(pack) as gym:
        message = _refusal(gym, "get_account", _nested(levels))
    assert (message == f"arguments are nested deeper than {MAX_NESTING} levels") is refused, message


def test_argument_names_must_be_strings(pack: Pack):
    with _gym(pack) as gym:
        assert _refusal(gym, "get_account", {1: "ACC-1"}) == "argument names must be strings"


def test_arguments_that_are_not_an_object_are_kept_as_a_preview(pack: Pack):
    with _gym(pack) as gym:
        _refusal(gym, "get_account", [1, 2, 3])
        _refusal(gym, "get_account", list(range(1000)))
        deep: Any = []
        for _ in range(100_000):
            deep = [deep]
        _refusal(gym, "get_account", deep)
        raws = [step.arguments["_raw"] for step in gym.trace]
    assert raws[0] == "[1, 2, 3]"
    assert len(raws[1]) == 200 and raws[1] == repr(list(range(1000)))[:200]
    assert raws[2] == "<list nested too deep>"


@pytest.mark.parametrize(("length", "kept"), [(200, "x" * 200), (201, "x" * 200 + "...<201 chars>")])
def test_a_refused_calls_long_strings_are_cut_after_200_characters(pack: Pack, length: int, kept: str):
    with _gym(pack) as gym:
        _refusal(gym, "no_such_tool", {"a": "x" * length, "k" * length: 1})
        arguments = gym.trace[-1].arguments
    assert arguments["a"] == kept
    assert ("k" * 200) in arguments and len(arguments) == 2


def test_a_refused_calls_nested_values_are_kept_four_levels_deep(pack: Pack):
    with _gym(pack) as gym:
        _refusal(gym, "no_such_tool", {"a": [["x", {"b": [1]}]], "c": {"d": {"e": {"f": {"g": 1}}}}, "n": 7})
        arguments = gym.trace[-1].arguments
    # Top-level values sit at depth 1; a container at depth 4 is kept as its preview.
    assert arguments == {"a": [["x", {"b": "[1]"}]], "c": {"d": {"e": {"f": "{'g': 1}"}}}, "n": 7}


def test_a_data_conflict_without_its_own_message_says_what_to_do(pack: Pack):
    with _gym(pack, ["note-conflict"]) as gym:
        message = _refusal(gym, "set_note", {"account_id": "ACC-1", "note": "hello"})
    assert message == "set_note: another user changed this record; fetch it again"


def test_a_reply_that_is_not_a_string_is_judged_as_an_empty_reply(pack: Pack):
    short = ResponseAssertion(description="short reply", max_chars=1)
    with _gym(pack, assertions=[short]) as gym:
        empty = gym.verify("")
        gym.reset("t")
        missing = gym.verify(None)  # type: ignore[arg-type]
    assert empty.passed and missing == empty


def test_the_world_hash_follows_the_content_and_ignores_the_change_log(pack: Pack):
    with _gym(pack) as gym:
        template = gym.template_hash()
        assert gym.state_hash() == template
        assert gym.call_tool("set_note", {"account_id": "ACC-1", "note": "hello"}).ok
        written = gym.state_hash()
        assert written != template and gym.changed_rows() == 1
        assert gym.call_tool("set_note", {"account_id": "ACC-1", "note": ""}).ok
        # Back to the template's content; the change log still holds both writes.
        assert gym.state_hash() == template and gym.changed_rows() > 0
        assert gym.call_tool("log_event", {"account_id": "ACC-1", "text": "seen"}).ok
        assert gym.state_hash() not in (template, written)


def test_an_unknown_tool_is_refused_listing_the_tools_and_kept_on_the_trace_by_name(pack: Pack):
    with _gym(pack) as gym:
        message = _refusal(gym, "no_such_tool", {})
        step = gym.trace[-1]
    assert message == "unknown tool 'no_such_tool'; tools: " + ", ".join(sorted(s.name for s in pack.tools))
    assert (step.tool, step.ok, step.error.kind if step.error else None) == ("no_such_tool", False, "validation")


def test_a_denied_call_is_kept_on_the_trace_by_name(pack: Pack):
    gym = Gym(with_tasks(pack, scoped_task("t", [], permissions=[])), GUARDED)
    with gym:
        gym.reset("t")
        _refusal(gym, "audit_account", {"account_id": "ACC-1"})
        assert gym.trace[-1].tool == "audit_account"


def test_a_tool_the_domain_has_but_the_pack_does_not_list_is_unknown(pack: Pack):
    @tool(mode="read", entity="account", operation="list")
    def count_accounts(ctx: ToolContext) -> dict[str, Any]:
        """Count the accounts."""
        return {"count": ctx.conn.execute("SELECT COUNT(*) FROM accounts").fetchone()[0]}

    wider = replace(GUARDED, tools={**GUARDED.tools, "count_accounts": count_accounts})
    gym = Gym(with_tasks(pack, scoped_task("t", [])), wider)
    with gym:
        gym.reset("t")
        assert _refusal(gym, "count_accounts", {}).startswith("unknown tool 'count_accounts'")

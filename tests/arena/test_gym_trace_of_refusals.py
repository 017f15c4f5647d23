"""Every refused call stays on the trace under its tool's name, with what was sent, so diagnosis can read it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from guard_domain import GUARDED, guarded_pack, scoped_task, with_tasks

from arena.core.gym import MAX_ARGUMENTS_JSON_CHARS, MAX_NESTING, Gym
from arena.core.pack import Pack


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _gym(pack: Pack, faults: list[str] | None = None) -> Gym:
    gym = Gym(with_tasks(pack, scoped_task("t", [], faults=faults)), GUARDED)
    gym.reset("t")
    return gym


def _last(gym: Gym, name: Any, arguments: Any) -> tuple[str, str, Any]:
    result = gym.call_tool(name, arguments)
    assert not result.ok and result.error is not None
    step = gym.trace[-1]
    assert not step.ok and step.error == result.error
    return step.tool, result.error.message, step.arguments


def _nested_objects(levels: int) -> dict[str, Any]:
    inner: Any = 0
    for _ in range(levels - 1):
        inner = {"k": inner}
    return {"account_id": "ACC-1", "extra": inner}


@pytest.mark.parametrize(("arguments", "message", "kept"), [
    ('{"account_id": ', "malformed JSON arguments", {"_raw": '{"account_id": '}),
    ("{" + "x" * 300, "malformed JSON arguments", {"_raw": "{" + "x" * 199}),
    ("[1, 2]", "arguments must be a JSON object", {"_raw": "[1, 2]"}),
    ("x" * (MAX_ARGUMENTS_JSON_CHARS + 1), f"exceed the limit of {MAX_ARGUMENTS_JSON_CHARS}", {"_raw": "x" * 200}),
    ("[" * 5000 + "]" * 5000, "nested deeper than", {"_raw": "[" * 200}),
])
def test_refused_text_arguments_are_kept_as_their_first_200_characters(pack: Pack, arguments: str, message: str,
                                                                        kept: dict[str, str]):
    with _gym(pack) as gym:
        tool, said, args = _last(gym, "get_account", arguments)
    assert tool == "get_account" and message in said and args == kept


def test_json_text_exactly_at_the_length_limit_is_parsed(pack: Pack):
    text = json.dumps({"account_id": "ACC-1", "pad": ""})
    text = json.dumps({"account_id": "ACC-1", "pad": "p" * (MAX_ARGUMENTS_JSON_CHARS - len(text))})
    assert len(text) == MAX_ARGUMENTS_JSON_CHARS
    with _gym(pack) as gym:
        _, said, _ = _last(gym, "get_account", text)
    assert said.startswith("string of ")  # parsed, then refused for the long "pad" string


@pytest.mark.parametrize(("levels", "refused"), [(MAX_NESTING, False), (MAX_NESTING + 1, True)])
def test_the_nesting_limit_is_inclusive_for_objects(pack: Pack, levels: int, refused: bool):
    with _gym(pack) as gym:
        _, said, args = _last(gym, "get_account", _nested_objects(levels))
    assert ("nested deeper than" in said) is refused
    if refused:
        assert args == {"_raw": repr(_nested_objects(levels))[:200]}


@pytest.mark.parametrize(("name", "arguments", "faults", "kind"), [
    ("get_account", {"account_id": "ACC-\ud800"}, None, "validation"),
    ("tag_account", {"account_id": "ACC-1", "tags": [1]}, None, "validation"),
    ("get_account", {"account_id": "ACC-404"}, None, "not_found"),
    ("set_note", {"account_id": "ACC-404", "note": "x"}, None, "not_found"),
    ("set_note", {"account_id": "ACC-1", "note": "x"}, ["note-conflict"], "fault"),
])
def test_every_refusal_is_kept_under_its_tools_name(pack: Pack, name: str, arguments: dict[str, Any],
                                                    faults: list[str] | None, kind: str):
    with _gym(pack, faults) as gym:
        tool, _, _ = _last(gym, name, arguments)
        assert (tool, gym.trace[-1].error.kind if gym.trace[-1].error else None) == (name, kind)


def test_a_validation_error_names_the_nested_argument(pack: Pack):
    with _gym(pack) as gym:
        _, said, _ = _last(gym, "tag_account", {"account_id": "ACC-1", "tags": ["a", 1]})
    assert said.startswith("tags.1: ")


def test_a_call_after_the_end_is_kept_under_its_name(pack: Pack):
    with _gym(pack) as gym:
        gym.verify("")
        tool, said, _ = _last(gym, "get_account", {"account_id": "ACC-1"})
    assert (tool, said) == ("get_account", "the episode has ended")


def test_a_call_before_any_episode_is_refused_as_ended(pack: Pack):
    with Gym(with_tasks(pack, scoped_task("t", [])), GUARDED) as gym:
        result = gym.call_tool("get_account", {"account_id": "ACC-1"})
        assert result.error is not None and result.error.kind == "ended"
        assert gym.trace[-1].clock == ""


def test_a_tool_name_that_is_not_a_string_is_kept_as_its_repr(pack: Pack):
    with _gym(pack) as gym:
        tool, said, _ = _last(gym, 123, {})
    # Its repr is never a tool's name, so it is refused as an unknown tool.
    assert tool == "123" and said.startswith("unknown tool '123'")


def test_a_successful_write_keeps_its_arguments_and_output(pack: Pack):
    with _gym(pack) as gym:
        arguments = {"account_id": "ACC-1", "note": "hello"}
        result = gym.call_tool("set_note", arguments)
        step = gym.trace[-1]
    assert result.ok and step.write and step.arguments == arguments and step.output == result.output
    assert step.output is not None

"""Odd input at the gym's boundary: deep, large, non-string or invalid-Unicode values become structured errors."""

import json

import pytest
from toy_domain import TOY

from arena.core.gym import MAX_NESTING, Gym
from arena.core.pack import build_pack
from arena.core.text import clean_text


@pytest.fixture(scope="module")
def pack():
    return build_pack(TOY, seed=3)


@pytest.fixture()
def gym(pack):
    with Gym(pack, TOY) as g:
        g.reset("refund_plain-01", seed=0)
        yield g


def _deep(levels: int) -> dict:
    value: object = "ORD-00005"
    for _ in range(levels):
        value = [value]
    return {"order_id": value}


@pytest.mark.parametrize("arguments", [
    '{"order_id": ' + "[" * 100_000 + "]" * 100_000 + "}",
    _deep(5_000),
    _deep(MAX_NESTING + 1),
    json.dumps({"order_id": "ORD-00005", "pad": "x" * 300_000}),
    {"order_id": "ORD-00005", "many": list(range(50_000))},
    {1: "ORD-00005"},
], ids=["json-nested-100k", "dict-nested-5k", "just-past-limit", "json-300k-chars", "50k-values", "int-key"])
def test_deep_or_large_arguments_are_a_validation_error(gym, arguments):
    result = gym.call_tool("get_order", arguments)
    assert not result.ok and result.error is not None and result.error.kind == "validation"
    assert gym.changed_rows() == 0
    json.loads(gym.trace[-1].model_dump_json())


def test_nesting_within_the_limit_still_reaches_validation(gym):
    result = gym.call_tool("get_order", _deep(MAX_NESTING - 1))
    assert result.error is not None and "order_id" in result.error.message


@pytest.mark.parametrize("name", [None, 42, ["get_order"], {"tool": "get_order"}, b"get_order"])
def test_a_tool_name_that_is_not_a_string_is_a_validation_error(gym, name):
    result = gym.call_tool(name, {"order_id": "ORD-00005"})  # type: ignore[arg-type]
    assert not result.ok and result.error is not None and result.error.kind == "validation"
    assert "tool" in result.error.message
    assert isinstance(gym.trace[-1].tool, str)
    gym.trace[-1].model_dump_json()


@pytest.mark.parametrize("name", ["get_\ud800order", "\udfff", "x" * 100_000])
def test_odd_tool_names_leave_a_serialisable_trace(gym, name):
    result = gym.call_tool(name, {"order_id": "ORD-00005", "bad\ud800key": ["a\udc00", {"k": "\ud800"}]})
    assert not result.ok
    dumped = gym.trace[-1].model_dump_json()
    assert "\\ud800" not in dumped and len(gym.trace[-1].tool) <= 200


def test_a_lone_surrogate_in_a_nested_refused_argument_keeps_the_trace_serialisable(gym):
    gym.call_tool("get_order", {"order_id": ["a\ud800b", {"x": ["\udc00"]}]})
    gym.trace[-1].model_dump_json()


@pytest.mark.parametrize("reply", [None, 42, ["done"], "RF-N00001 \ud800", b"RF-N00001"])
def test_verify_takes_any_reply_and_the_verdict_serialises(gym, reply):
    verdict = gym.verify(reply)  # type: ignore[arg-type]
    assert not verdict.passed
    verdict.model_dump_json()


def test_clean_text_replaces_only_lone_surrogates():
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\ud83d\ude00") == "\U0001f600"
    assert clean_text("plain ünïcode 😀") == "plain ünïcode 😀"


@pytest.mark.parametrize("amount", [2**63, -(2**63) - 1, 10**5000], ids=["2^63", "-2^63-1", "10^5000"])
def test_integers_beyond_64_bits_are_a_validation_error(gym, amount):
    result = gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": amount})
    assert not result.ok and result.error is not None and result.error.kind == "validation"
    assert "out of range" in result.error.message and gym.changed_rows() == 0
    gym.trace[-1].model_dump_json()


def test_a_huge_quantity_in_a_procurement_write_is_refused_not_a_crash():
    pack = build_pack("procurement", seed=0)
    task = pack.task("create_requisition-01")
    with Gym(pack) as gym:
        gym.reset(task.id)
        args = dict(next(s for s in task.gold.steps if s.tool == "create_requisition").arguments)
        for quantity in (922337203685477580, 2**63 - 1, 1_000_001):
            result = gym.call_tool("create_requisition", {**args, "quantity": quantity})
            assert result.error is not None and result.error.kind == "validation", result
            assert "quantity" in result.error.message
        assert gym.changed_rows() == 0

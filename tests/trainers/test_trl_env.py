"""The TRL environment adapter over the gym: torch-free, so these run without the trl extra."""

import inspect
import json

import pytest
from trainer_fixtures import toy_pack

from arena.adapters.trl_env import environment_class, environment_classes, episode_prompt, record_replies
from arena.checks.conformance import run_gold
from arena.core.gym import Gym


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


def test_every_tool_is_a_typed_method_with_the_specs_schema(pack):
    env_cls = environment_class([pack])
    public = {n for n, _ in inspect.getmembers(env_cls, inspect.isfunction) if not n.startswith("_")}
    assert public == {s.name for s in pack.tools} | {"reset", "get_reward"}
    refund = inspect.signature(env_cls.refund_order)
    assert refund.parameters["order_id"].annotation is str and refund.parameters["amount"].annotation is float
    assert refund.parameters["amount"].default is inspect.Parameter.empty
    search = inspect.signature(env_cls.search_orders)
    assert search.parameters["limit"].annotation is int and search.parameters["limit"].default == 5
    doc = env_cls.refund_order.__doc__
    spec = next(s for s in pack.tools if s.name == "refund_order")
    assert spec.description in doc and "Args:" in doc
    assert spec.parameters["properties"]["order_id"]["description"] in doc


def test_transformers_reads_the_same_schema_as_the_gym(pack):
    utils = pytest.importorskip("transformers.utils", reason="transformers (gymloop[trl]) is not installed")
    env = environment_class([pack])()
    for spec in pack.tools:
        schema = utils.get_json_schema(getattr(env, spec.name))
        params = schema["function"]["parameters"]
        assert schema["function"]["name"] == spec.name
        assert set(params["properties"]) == set(spec.parameters["properties"])
        assert set(params.get("required", [])) == set(spec.parameters["required"])
        for name, prop in spec.parameters["properties"].items():
            assert params["properties"][name]["type"] == prop.get("type", params["properties"][name]["type"])


def test_tool_calls_reach_the_gym_and_errors_come_back_as_tool_responses(pack):
    env = environment_class([pack])()
    env.reset(pack_id=pack.id, task_id="refund_plain-01", seed=0, prompt=episode_prompt(pack, "refund_plain-01"))
    ok = json.loads(env.check_refund(order_id="ORD-00005"))
    assert ok == {"ok": True, "output": {"order_id": "ORD-00005", "eligible": True}}
    missing = json.loads(env.get_order(order_id="ORD-99999"))
    assert missing["ok"] is False and missing["error"]["kind"] == "not_found"
    assert "ORD-99999" in missing["error"]["message"]
    wrong = json.loads(env.refund_order(order_id="ORD-00005", amount="five"))
    assert wrong["ok"] is False and wrong["error"]["kind"] == "validation" and "amount" in wrong["error"]["message"]
    extra = json.loads(env.get_order(order_id="ORD-00005", color="red"))
    assert extra["ok"] is False and "color" in extra["error"]["message"]
    crashed = json.loads(env.crash(order_id="ORD-00005"))
    assert crashed["error"]["kind"] == "environment" and env.failure is not None
    assert env.get_reward() == 0.0
    assert [s.tool for s in env.gym.trace] == ["check_refund", "get_order", "refund_order", "get_order"]


def test_reward_equals_the_verifiers_and_keeps_each_check(pack):
    task = pack.task("refund_plain-01")
    reference = Gym(pack)
    expected = run_gold(reference, task, seed=3)
    env = environment_class([pack])()
    env.reset(pack_id=pack.id, task_id=task.id, seed=3)
    for step in task.gold.steps:
        getattr(env, step.tool)(**step.arguments)
    completion = [{"role": "assistant", "content": task.gold.reply}]
    assert record_replies([completion], environments=[env]) == [None]
    assert env.get_reward() == expected.score == 1.0
    assert [r.model_dump() for r in env.verdict.results] == [r.model_dump() for r in expected.results]
    other = environment_class([pack])()
    other.reset(pack_id=pack.id, task_id=task.id, seed=3)
    other.check_refund(order_id="ORD-00005")
    record_replies([[{"role": "assistant", "content": "", "tool_calls": [{"function": {}}]}]], environments=[other])
    verdict = Gym(pack)
    verdict.reset(task.id, seed=3)
    verdict.call_tool("check_refund", {"order_id": "ORD-00005"})
    assert other.get_reward() == verdict.verify("").score < 1.0
    assert [r.passed for r in other.verdict.results] == [r.passed for r in verdict.verdict.results]


def test_each_row_starts_from_a_fresh_world(pack):
    env = environment_class([pack])()
    env.reset(pack_id=pack.id, task_id="refund_plain-01", seed=0)
    env.refund_order(order_id="ORD-00005", amount=5.0)
    assert env.gym.changed_rows() > 0
    env.reset(pack_id=pack.id, task_id="refund_plain-01", seed=0)
    assert env.gym.changed_rows() == 0 and env.gym.trace == [] and env.verdict is None
    assert json.loads(env.get_order(order_id="ORD-00005"))["output"]["refunded"] == 0
    second = environment_class([pack])()
    second.reset(pack_id=pack.id, task_id="refund_plain-01", seed=0)
    env.refund_order(order_id="ORD-00005", amount=5.0)
    assert second.gym is not env.gym and second.gym.changed_rows() == 0


def test_bad_rows_and_mixed_domains_are_named(pack):
    env = environment_class([pack])()
    with pytest.raises(ValueError, match="does not hold"):
        env.reset(pack_id="f" * 64, task_id="refund_plain-01")
    with pytest.raises(ValueError, match="no-such-task"):
        env.reset(pack_id=pack.id, task_id="no-such-task")
    assert json.loads(env.get_order(order_id="ORD-00005"))["error"]["kind"] == "ended"
    from arena.core.pack import build_pack

    helpdesk = build_pack("helpdesk", seed=0)
    with pytest.raises(ValueError, match="one domain"):
        environment_class([pack, helpdesk])
    classes = environment_classes([pack, helpdesk])
    assert sorted(classes) == ["helpdesk", "toy"] and classes["toy"].packs == {pack.id: pack}

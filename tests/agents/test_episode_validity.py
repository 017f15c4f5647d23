"""An episode is excluded (invalid) only for a fault the agent could not cause."""

import json

import pytest
from toy_domain import TOY

from arena.agents.base import AgentRun
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import ReplyCue, ScriptedModelServer, ToolCallCue
from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.rollout import EpisodeKey, RolloutConfig, play_episode, run_rollouts


@pytest.fixture(scope="module")
def pack():
    return build_pack(TOY, seed=0, knobs={"orders": 200})


class CrashesTools:
    """Makes a tool crash on its own arguments on tasks it would fail, hoping to have them dropped."""

    name = "crasher"
    model_ref = "crasher@1"

    def run_episode(self, observation, call_tool, *, seed):
        call_tool("crash", {"order_id": "ORD-00005"})
        return AgentRun(reply="never reached")


def test_a_tool_crash_on_the_agents_arguments_is_a_valid_failed_episode(pack):
    records = run_rollouts(CrashesTools(), [pack], RolloutConfig())
    assert len(records) == 3
    for record in records:
        assert not record.invalid
        assert record.failure is not None and record.failure.boundary == "environment"
        assert record.failure.kind == "tool_crash" and "ZeroDivisionError" in record.failure.message
        assert record.verdict is not None and not record.passed
    assert all(r.verdict.changes == [] for r in records)  # the crashing call was rolled back


class SurrogateReply:
    name = "surrogate"
    model_ref = "surrogate@1"

    def run_episode(self, observation, call_tool, *, seed):
        return AgentRun(reply="Refunded as RF-N00001 \ud800")


def test_a_lone_surrogate_in_a_reply_is_replaced_and_the_record_serialises(pack):
    with Gym(pack, TOY) as gym:
        record = play_episode(gym, SurrogateReply(), EpisodeKey(pack.id, "refund_plain-01", 0, 0))
    assert record.reply == "Refunded as RF-N00001 \ufffd" and not record.invalid and record.verdict is not None
    assert json.loads(record.model_dump_json())["reply"].endswith("\ufffd")


def test_a_model_emitting_lone_surrogates_is_judged_not_dropped(pack):
    script = [
        ToolCallCue("get_order", '{"order_id": "ORD-00005\\ud800"}', content="checking \ud800"),
        ToolCallCue("get_\udc00order", '{"order_id": "ORD-00005"}'),
        ReplyCue("Order ORD-00005 looked at \ud800."),
    ]
    with ScriptedModelServer(script) as server, Gym(pack, TOY) as gym:
        agent = LiteLLMAgent(LiteLLMConfig(model="openai/scripted", api_base=server.base_url + "/v1",
                                           api_key="sk-scripted", timeout_s=5.0, max_retries=0))
        record = play_episode(gym, agent, EpisodeKey(pack.id, "refund_plain-01", 0, 0))
        sent = [r.body for r in server.requests]
    assert record.failure is None and not record.invalid, record.failure
    assert len(sent) == 3 and record.turns == 3
    assert [s.ok for s in record.trace] == [False, False]
    assert record.reply == "Order ORD-00005 looked at \ufffd." and record.verdict is not None
    record.model_dump_json()

"""LiteLLMAgent on a real gym, through litellm, against the local scripted model server."""

from __future__ import annotations

import json
import pickle
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.agents.base import Agent
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import (
    MalformedToolCallCue,
    ReplyCue,
    ScriptedModelServer,
    ToolCallCue,
    ToolCallsCue,
)
from arena.core.domain import STRONG, Domain, World
from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.core.task import (
    CallPattern,
    EntityRef,
    GoldProgram,
    GoldStep,
    IntendedCall,
    Intent,
    Persona,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    Task,
    TraceAssertion,
    WriteScope,
)
from arena.core.toolkit import NotFound, ToolContext, tool

SECRET = "sk-test-4f1c9e-never-shown"


@tool(mode="read", entity="ticket", operation="get")
def get_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    """Fetch one ticket by id.

    Args:
        ticket_id: Ticket id such as T-1.
    """
    row = ctx.one("SELECT * FROM tickets WHERE id = ?", (ticket_id,))
    if row is None:
        raise NotFound(f"ticket {ticket_id!r} not found")
    return row


@tool(mode="write", permission="close", entity="ticket", operation="update")
def close_ticket(ctx: ToolContext, ticket_id: str, resolution: str) -> dict[str, Any]:
    """Close a ticket with a resolution.

    Args:
        ticket_id: Ticket id.
        resolution: Why it is closed.
    """
    get_ticket.fn(ctx, ticket_id)
    ctx.conn.execute("UPDATE tickets SET status = 'closed', resolution = ? WHERE id = ?", (resolution, ticket_id))
    return {"ticket_id": ticket_id, "status": "closed"}


def _generate(seed: int, knobs: dict[str, Any]) -> World:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE tickets (id TEXT PRIMARY KEY, subject TEXT, status TEXT, resolution TEXT)")
    conn.executemany("INSERT INTO tickets VALUES (?, ?, 'open', '')", [(f"T-{i}", f"Subject {i}") for i in range(20)])
    conn.commit()
    task = Task(
        id="close-t3",
        prompt="Please close ticket T-3 as a duplicate and confirm.",
        persona=Persona(name="Grace", role="agent", permissions=["close"]),
        split="heldout",
        category="single_write",
        intent=Intent(
            goal="close_ticket",
            refs=[EntityRef(name="ticket", entity="ticket", mention="T-3", mention_kind="id")],
            calls=[IntendedCall(tool="close_ticket", arguments={"ticket_id": "$ticket", "resolution": "duplicate"})],
        ),
        gold=GoldProgram(steps=[GoldStep(tool="get_ticket", arguments={"ticket_id": "T-3"}),
                                GoldStep(tool="close_ticket", arguments={"ticket_id": "T-3",
                                                                         "resolution": "duplicate"})],
                         reply="Closed T-3 as a duplicate."),
        assertions=[
            StateAssertion(description="closed", sql="SELECT status FROM tickets WHERE id = 'T-3'",
                           expected=[["closed"]]),
            TraceAssertion(description="fetched first", required=[CallPattern(tool="get_ticket"),
                                                                   CallPattern(tool="close_ticket")], order=[(0, 1)]),
            SideEffectAssertion(allowed=[WriteScope(table="tickets", ids=["T-3"], columns=["status", "resolution"])]),
            ResponseAssertion(description="confirms", must_include=[["T-3"]]),
        ],
    )
    return World(state_db=conn.serialize(), tasks=[task], faults=[], clock_start="2025-01-06T09:00:00")


DESK = Domain(
    name="litellm_desk",
    description="A tiny help desk for LiteLLM agent tests.",
    tools={"get_ticket": get_ticket, "close_ticket": close_ticket},
    policy="Always fetch a ticket before closing it.",
    dependencies=[("get_ticket", "close_ticket", STRONG)],
    generate=_generate,
)


@pytest.fixture(scope="module")
def gym() -> Iterator[Gym]:
    with Gym(build_pack(DESK, seed=0), DESK) as g:
        yield g


def _agent(server: ScriptedModelServer, **overrides: Any) -> LiteLLMAgent:
    settings: dict[str, Any] = {"model": "openai/scripted", "api_base": server.base_url + "/v1",
                                "api_key": SECRET, "timeout_s": 5.0}
    settings.update(overrides)
    return LiteLLMAgent(LiteLLMConfig(**settings))


def test_full_episode_calls_tools_feeds_results_back_and_replies(gym: Gym) -> None:
    script = [
        ToolCallCue("get_ticket", json.dumps({"ticket_id": "T-3"})),
        ToolCallCue("close_ticket", json.dumps({"ticket_id": "T-3", "resolution": "duplicate"})),
        ReplyCue("Closed T-3 as a duplicate."),
    ]
    with ScriptedModelServer(script) as server:
        agent = _agent(server)
        assert isinstance(agent, Agent)
        obs = gym.reset("close-t3", seed=0)
        run = agent.run_episode(obs, gym.call_tool, seed=0)
        verdict = gym.verify(run.reply)
        requests = [r.body for r in server.requests]
    assert run.reply == "Closed T-3 as a duplicate."
    assert run.stop_reason == "reply" and run.turns == 3
    assert [(s.tool, s.arguments, s.ok) for s in gym.trace] == [
        ("get_ticket", {"ticket_id": "T-3"}, True),
        ("close_ticket", {"ticket_id": "T-3", "resolution": "duplicate"}, True),
    ]
    assert verdict.passed, verdict.results
    first = requests[0]
    assert first["model"] == "scripted"
    assert first["messages"][0]["role"] == "system"
    assert "Always fetch a ticket before closing it." in first["messages"][0]["content"]
    assert "Grace" in first["messages"][0]["content"] and "close" in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": "Please close ticket T-3 as a duplicate and confirm."}
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["close_ticket", "get_ticket"]
    assert first["tools"][0]["function"]["parameters"]["type"] == "object"
    tool_msg = requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == requests[1]["messages"][-2]["tool_calls"][0]["id"]
    assert json.loads(tool_msg["content"]) == {"ok": True, "output": {"id": "T-3", "subject": "Subject 3",
                                                                       "status": "open", "resolution": ""}}
    assert len(requests[2]["messages"]) == 6
    assert run.tokens_in > 0 and run.tokens_out > 0 and run.latency_s > 0


def test_malformed_arguments_go_back_to_the_model_and_the_episode_continues(gym: Gym) -> None:
    script = [
        MalformedToolCallCue("get_ticket", '{"ticket_id": T-3'),
        ToolCallCue("lookup_ticket", json.dumps({"ticket_id": "T-3"})),
        ToolCallCue("get_ticket", json.dumps({"ticket_id": "T-3"})),
        ReplyCue("T-3 is open."),
    ]
    with ScriptedModelServer(script) as server:
        obs = gym.reset("close-t3", seed=0)
        run = _agent(server).run_episode(obs, gym.call_tool, seed=0)
        requests = [r.body for r in server.requests]
    assert run.reply == "T-3 is open." and run.turns == 4
    echoed = requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"]
    assert echoed == '{"ticket_id": T-3'
    malformed = json.loads(requests[1]["messages"][-1]["content"])
    assert malformed["ok"] is False and malformed["error"]["kind"] == "validation"
    assert "malformed JSON" in malformed["error"]["message"]
    unknown = json.loads(requests[2]["messages"][-1]["content"])
    assert unknown["error"]["kind"] == "validation" and "unknown tool 'lookup_ticket'" in unknown["error"]["message"]
    assert [(s.tool, s.ok) for s in gym.trace] == [("get_ticket", False), ("lookup_ticket", False),
                                                  ("get_ticket", True)]


def test_several_tool_calls_in_one_turn_each_get_a_tool_message(gym: Gym) -> None:
    script = [
        ToolCallsCue([ToolCallCue("get_ticket", '{"ticket_id": "T-1"}'),
                      ToolCallCue("get_ticket", '{"ticket_id": "T-99"}')]),
        ReplyCue("done"),
    ]
    with ScriptedModelServer(script) as server:
        obs = gym.reset("close-t3", seed=0)
        _agent(server).run_episode(obs, gym.call_tool, seed=0)
        messages = server.requests[1].body["messages"]
    calls = messages[-3]["tool_calls"]
    assert [m["tool_call_id"] for m in messages[-2:]] == [c["id"] for c in calls]
    assert json.loads(messages[-2]["content"])["ok"] is True
    assert json.loads(messages[-1]["content"])["error"]["kind"] == "not_found"


def test_step_limit_stops_after_max_steps_turns(gym: Gym) -> None:
    with ScriptedModelServer([], default=ToolCallCue("get_ticket", '{"ticket_id": "T-1"}')) as server:
        obs = gym.reset("close-t3", seed=0)
        run = _agent(server, max_steps=3).run_episode(obs, gym.call_tool, seed=0)
        sent = len(server.requests)
    assert run.stop_reason == "step_limit" and run.turns == 3 and sent == 3
    assert len(gym.trace) == 3


def test_token_limit_stops_once_the_budget_is_exceeded_without_making_the_calls(gym: Gym) -> None:
    cue = ToolCallCue("get_ticket", '{"ticket_id": "T-1"}', prompt_tokens=400, completion_tokens=20)
    with ScriptedModelServer([], default=cue) as server:
        obs = gym.reset("close-t3", seed=0)
        run = _agent(server, max_tokens=1000).run_episode(obs, gym.call_tool, seed=0)
    assert run.stop_reason == "token_limit"
    assert (run.turns, run.tokens_in, run.tokens_out) == (3, 1200, 60)
    assert len(gym.trace) == 2


def test_tokens_and_cost_use_the_configured_prices(gym: Gym) -> None:
    script = [ToolCallCue("get_ticket", '{"ticket_id": "T-3"}', prompt_tokens=1000, completion_tokens=50),
              ReplyCue("T-3 is open.", prompt_tokens=1200, completion_tokens=10)]
    with ScriptedModelServer(script) as server:
        obs = gym.reset("close-t3", seed=0)
        priced = _agent(server, input_cost_per_token=2e-6, output_cost_per_token=1e-5)
        run = priced.run_episode(obs, gym.call_tool, seed=0)
    assert (run.tokens_in, run.tokens_out) == (2200, 60)
    assert run.cost == pytest.approx(2200 * 2e-6 + 60 * 1e-5)
    with ScriptedModelServer([ReplyCue("hi", prompt_tokens=10, completion_tokens=2)]) as server:
        obs = gym.reset("close-t3", seed=0)
        unpriced = _agent(server).run_episode(obs, gym.call_tool, seed=0)
    assert unpriced.cost == 0.0 and unpriced.tokens_in == 10


def test_seed_and_timeout_settings_reach_the_request(gym: Gym) -> None:
    with ScriptedModelServer([ReplyCue("a"), ReplyCue("b")]) as server:
        agent = _agent(server, seed=100, temperature=0.7, max_completion_tokens=256)
        for episode_seed in (1, 2):
            agent.run_episode(gym.reset("close-t3", seed=episode_seed), gym.call_tool, seed=episode_seed)
        bodies = [r.body for r in server.requests]
    assert [b["seed"] for b in bodies] == [101, 102]
    assert bodies[0]["temperature"] == 0.7 and bodies[0]["max_tokens"] == 256


def test_the_api_key_never_appears_in_the_run_the_config_dump_or_reprs(gym: Gym) -> None:
    with ScriptedModelServer([ReplyCue("ok")]) as server:
        agent = _agent(server)
        run = agent.run_episode(gym.reset("close-t3", seed=0), gym.call_tool, seed=0)
        bodies = json.dumps([r.body for r in server.requests])
    config = agent.config
    for text in (run.model_dump_json(), repr(run), repr(config), str(config), config.model_dump_json(),
                 json.dumps(config.model_dump(mode="json")), repr(agent), agent.model_ref, bodies):
        assert SECRET not in text
    assert "api_key" not in config.model_dump()
    assert config.api_key is not None and config.api_key.get_secret_value() == SECRET


def test_importing_the_agent_module_does_not_import_litellm() -> None:
    code = "import sys, arena.agents.litellm_agent; print('litellm' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2], check=True)
    assert done.stdout.strip() == "False"


CLOSE_T3 = [
    ToolCallCue("get_ticket", json.dumps({"ticket_id": "T-3"}), prompt_tokens=40, completion_tokens=6),
    ToolCallCue("close_ticket", json.dumps({"ticket_id": "T-3", "resolution": "duplicate"})),
    ReplyCue("Closed T-3 as a duplicate.", prompt_tokens=70, completion_tokens=9),
]
SENT = ("model", "messages", "tools", "tool_choice", "temperature", "seed", "max_tokens")
"""The request fields both clients must send alike."""


@pytest.mark.parametrize("model", ["openai/scripted", "hosted_vllm/scripted"])
def test_the_openai_client_plays_the_episode_litellm_plays_with_the_same_requests(gym: Gym, model: str) -> None:
    played = {}
    for client in ("litellm", "openai"):
        with ScriptedModelServer(list(CLOSE_T3)) as server:
            agent = _agent(server, model=model, client=client, seed=7, max_completion_tokens=128)
            run = agent.run_episode(gym.reset("close-t3", seed=3), gym.call_tool, seed=3)
            verdict = gym.verify(run.reply)
            bodies = [{key: r.body.get(key) for key in SENT} for r in server.requests]
        played[client] = (run.model_dump(exclude={"latency_s"}), [(s.tool, s.arguments) for s in gym.trace],
                          verdict.passed, bodies)
    direct, via_litellm = played["openai"], played["litellm"]
    if model.startswith("hosted_vllm/"):
        # litellm's vLLM route drops ``additionalProperties`` from tool schemas (and the scripted server counts
        # prompt tokens by request size); the direct client sends the schemas as the gym declares them.
        assert all("additionalProperties" in t["function"]["parameters"] for t in direct[3][0]["tools"])
        strip = {"tokens_in", "latency_s"}
        direct = (direct[0] | dict.fromkeys(strip), *direct[1:3], [b | {"tools": None} for b in direct[3]])
        via_litellm = (via_litellm[0] | dict.fromkeys(strip), *via_litellm[1:3],
                       [b | {"tools": None} for b in via_litellm[3]])
    assert direct == via_litellm
    run_dump, trace, passed, bodies = played["openai"]
    assert passed and len(trace) == 2 and run_dump["turns"] == 3 and run_dump["tokens_in"] > 110
    assert bodies[0]["model"] == "scripted" and bodies[0]["seed"] == 10 and bodies[0]["max_tokens"] == 128


def test_an_agent_with_the_openai_client_pickles_after_use_and_the_copy_plays(gym: Gym) -> None:
    with ScriptedModelServer([ReplyCue("first"), ReplyCue("second")]) as server:
        agent = _agent(server, model="hosted_vllm/scripted", client="openai")
        first = agent.run_episode(gym.reset("close-t3", seed=0), gym.call_tool, seed=0)
        copy = pickle.loads(pickle.dumps(agent))
        second = copy.run_episode(gym.reset("close-t3", seed=0), gym.call_tool, seed=0)
    assert (first.reply, second.reply) == ("first", "second")
    assert copy.config == agent.config and SECRET not in repr(copy)

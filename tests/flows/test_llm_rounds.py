"""Whole rounds and campaigns with an LLM: litellm against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import sys

import pytest
from mlflow.tracking import MlflowClient

from arena.agents.scripted_server import DelayCue, ErrorCue, ReplyCue, ScriptedModelServer, ToolCallCue
from flows.campaign import campaign, next_round
from flows.models import CampaignParams
from flows.settings import load_settings
from registry import Registry

LLM_SMALL = {"domains": ["procurement"], "variants_per_round": 1, "tasks_per_variant": 4, "wave_budget": 24,
             "train_k": 2, "eval_k": 1, "batch_size": 40, "max_concurrency": 8, "model_timeout_s": 10}
"""A small LLM round: one gym, a small wave, one attempt per held-out task."""


class Model:
    """A scripted tool-calling model: looks a vendor up, then replies; now and then a 503 or a slow answer."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages):
        self.calls += 1
        if self.calls % 7 == 0:
            return ErrorCue(503, "busy, try again")
        if messages and messages[-1].get("role") == "tool":
            return ReplyCue("I checked the vendor record and handled the request.")
        return DelayCue(0.05, ToolCallCue("get_vendor", json.dumps({"vendor_id": "V-001"})))


@pytest.fixture()
def llm_server():
    with ScriptedModelServer(Model()) as server:
        yield server


def _overrides(server, **more):
    return {**LLM_SMALL, "model": "hosted_vllm/scripted", "api_base": server.base_url + "/v1", **more}


def test_a_round_with_an_llm_and_the_export_trainer(prefect_harness, gymloop_home, llm_server):
    overrides = _overrides(llm_server, trainer="export")
    (summary,) = next_round(CampaignParams(campaign="llm-export", overrides=overrides)).rounds
    settings = load_settings(**overrides)
    registry = Registry(settings.resolved_registry_url())
    info = registry.round(summary.round_id)
    assert info.status == "finished"
    heldout = len(registry.heldout_suite("procurement"))
    before = registry.round_episodes(summary.round_id, stage="eval_before")
    assert len(before) == heldout == summary.episodes["eval_after"].planned
    assert all(r.agent == "litellm" and r.model_ref.startswith("hosted_vllm/scripted@") for r in before)
    assert any(step.tool == "get_vendor" for r in before for step in r.trace)
    assert summary.variants >= 1, "the factory step added no variant for an LLM model"
    assert summary.metrics["tokens"] > 0 and "lift" in summary.metrics
    assert (settings.store.home / "campaigns" / "llm-export" / "round-000" / "dataset").is_dir()
    assert llm_server.peak_in_flight > 1, "LLM episodes ran one at a time"
    run = MlflowClient(settings.resolved_mlflow_uri()).search_runs(
        [MlflowClient(settings.resolved_mlflow_uri()).get_experiment_by_name("gymloop/llm-export").experiment_id])
    logged = [r for r in run if r.data.tags.get("gymloop_kind") == "round"][0].data.metrics
    assert logged["tokens"] == pytest.approx(summary.metrics["tokens"]) and "lift" in logged


def test_a_two_round_campaign_with_an_llm_and_the_command_trainer(prefect_harness, gymloop_home, llm_server):
    trained = {"name": "hosted_vllm/scripted-trained", "version": 1, "kind": "litellm",
               "endpoint": "hosted_vllm/scripted-trained"}
    command = [sys.executable, "-c", f"import json; print(json.dumps({trained!r}))"]
    overrides = _overrides(llm_server, trainer="command", trainer_command=command)
    summaries = campaign(CampaignParams(campaign="llm-command", rounds=2, overrides=overrides)).rounds
    assert [s.round_index for s in summaries] == [0, 1]
    registry = Registry(load_settings(**overrides).resolved_registry_url())
    rounds = registry.rounds(registry.campaign("llm-command").id)
    assert [r.status for r in rounds] == ["finished", "finished"]
    out = registry.model(rounds[0].model_out_id)
    assert out.endpoint == "hosted_vllm/scripted-trained" and out.kind == "litellm"
    after = registry.round_episodes(rounds[0].id, stage="eval_after")
    assert after and all(r.model_ref.startswith("hosted_vllm/scripted-trained@") for r in after)
    assert all(s.lift_low <= s.lift <= s.lift_high for s in summaries)
    models = {r.body.get("model") for r in llm_server.requests}
    assert {"scripted", "scripted-trained"} <= models

"""Dask and Ray play a round's rollout batches exactly as threads do: same episodes, traces, verdicts, rewards.

Each engine runs the same work as Prefect tasks on the runner gymloop builds from the settings: the held-out
suite of one gym played by the reference policy (two attempts per task) and by an LLM (a scripted model behind
a real OpenAI-compatible server on loopback, reached through litellm and straight over the OpenAI protocol), in small
batches over two workers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from prefect import flow
from prefect.context import FlowRunContext

from arena.agents.scripted_server import Cue, ErrorCue, ReplyCue, ScriptedModelServer, ToolCallCue
from arena.core.episode import EpisodeRecord
from flows import stages
from flows.context import open_round
from flows.live import metering
from flows.models import RoundParams
from flows.round import run_batches
from flows.settings import SettingsError, load_settings
from flows.task_runners import task_runner

ENGINE_SMALL = {"domains": ["procurement"], "eval_k": 2, "batch_size": 8, "workers": 2, "max_concurrency": 4,
                "model_timeout_s": 10, "max_invalid_share": 1.0}
"""Settings of the runs: one gym, two attempts per held-out task, batches of 8 episodes over two workers."""

LLM_MODEL = "hosted_vllm/scripted-engines"
TIMINGS = {"latency_s", "wall_time_s"}
"""Fields that measure time: the only ones allowed to differ between engines."""


def scripted_model(messages: list[dict[str, Any]]) -> Cue:
    """A model whose answer depends only on the conversation: the task's text picks the tools and the reply.

    Token counts are given explicitly (the server's own estimate would count its request-numbered call ids).
    """
    task = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    digest = int(hashlib.sha256(task.encode()).hexdigest(), 16)
    turn = sum(1 for m in messages if m.get("role") == "tool")
    tokens = {"prompt_tokens": 40 * len(messages) + len(task) // 4, "completion_tokens": 7 + turn}
    if digest % 7 == 0:
        return ErrorCue(401, "scripted: this request is refused")
    if turn == 0:
        return ToolCallCue("get_vendor", json.dumps({"vendor_id": f"V-00{digest % 4 + 1}"}), **tokens)
    if turn == 1 and digest % 3 == 0:
        return ToolCallCue("search_invoices", json.dumps({"vendor_id": f"V-00{digest % 5 + 1}"}), **tokens)
    return ReplyCue(f"Handled: vendor V-00{digest % 4 + 1} checked ({digest % 97}).", **tokens)


@flow(name="engine-rollouts")
def engine_rollouts(campaign: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Play the held-out suite with the reference policy and the LLM (litellm, direct) on the settings' runner."""
    ctx = open_round(RoundParams(campaign=campaign, round_index=0, overrides=overrides))
    registry, reference, keys, round_id = ctx.registry, ctx.model_in, ctx.suite, ctx.round.id
    llm = registry.register_model(LLM_MODEL, "0", kind="litellm", endpoint=LLM_MODEL)
    once = [k for k in keys if k.attempt == 0]
    returned: dict[str, list[EpisodeRecord]] = {}
    for stage, model, stage_keys, client in (("reference", reference, keys, "litellm"), ("llm", llm, once, "litellm"),
                                             ("llm-openai", llm, once, "openai")):
        params = ctx.params.model_copy(update={"overrides": {**overrides, "model_client": client}})
        played = returned.setdefault(stage, [])

        def run(c: Any, s: str, m: Any, k: list[Any], played: list[EpisodeRecord] = played) -> list[EpisodeRecord]:
            ran = run_batches(c, s, m, k)
            played.extend(ran)
            return ran

        result = stages.episodes(dataclasses.replace(ctx, params=params), stage, model, stage_keys, run)
        assert result.ran == len(stage_keys) and result.reused == 0
    context = FlowRunContext.get()
    handler = signal.getsignal(signal.SIGTERM)
    return {"runner": type(context.task_runner).__name__ if context else "",
            "sigterm": getattr(handler, "__qualname__", repr(handler)),
            **{f"{s}/returned": r for s, r in returned.items()},
            **{f"{s}/stored": registry.round_episodes(round_id, stage=s) for s in returned}}


def _comparable(records: list[EpisodeRecord], *, sort: bool = False) -> list[dict[str, Any]]:
    """Episodes without their timings (in id order when ``sort``: the registry keeps them in finishing order)."""
    ordered = sorted(records, key=lambda r: r.episode_id) if sort else records
    return [r.model_dump(mode="json", exclude=TIMINGS) for r in ordered]


class Baseline:
    """The threads run every engine is compared with, and the scripted model's server it played against."""

    def __init__(self, server: ScriptedModelServer, overrides: dict[str, Any],
                 episodes: dict[str, list[EpisodeRecord]]) -> None:
        self.server = server
        self.overrides = overrides
        self.episodes = episodes
        self.requests = len(server.requests)


@pytest.fixture(scope="module")
def baseline(prefect_harness, tmp_path_factory) -> Iterator[Baseline]:
    """One gymloop home for the module, and the threads run in it."""
    folder = tmp_path_factory.mktemp("engines")
    with pytest.MonkeyPatch.context() as patch, ScriptedModelServer(scripted_model) as server:
        patch.setenv("GYMLOOP_HOME", str(folder / "home"))
        for key in [k for k in os.environ if k.startswith("GYMLOOP_") and k != "GYMLOOP_HOME"]:
            patch.delenv(key)
        patch.chdir(folder)
        overrides = {**ENGINE_SMALL, "api_base": server.base_url + "/v1"}
        runner = task_runner(load_settings(**overrides))
        with metering() as meter:
            episodes = engine_rollouts.with_options(task_runner=runner)("threads", overrides)
        episodes["metered"] = meter.episodes
        yield Baseline(server, overrides, episodes)


def test_the_threads_run_has_passes_failures_llm_tool_calls_and_invalid_episodes(baseline):
    assert baseline.episodes["runner"] == "ThreadPoolTaskRunner"
    assert baseline.episodes["sigterm"] == "_prefect_sigterm_handler"
    reference = _comparable(baseline.episodes["reference/returned"])
    llm = _comparable(baseline.episodes["llm/returned"])
    assert len(reference) == 44 and len(llm) == 22
    assert [e["trace"] for e in _comparable(baseline.episodes["llm-openai/returned"])] == [e["trace"] for e in llm]
    assert any(e["verdict"] and e["verdict"]["passed"] for e in reference)
    assert any(not (e["verdict"] and e["verdict"]["passed"]) for e in reference)
    assert any(e["invalid"] for e in llm) and any(e["trace"] and not e["invalid"] for e in llm)
    assert any(len(e["trace"]) == 2 for e in llm)
    for stage in ("reference", "llm", "llm-openai"):
        assert _comparable(baseline.episodes[f"{stage}/stored"], sort=True) == \
            _comparable(baseline.episodes[f"{stage}/returned"], sort=True)


@pytest.mark.parametrize(("engine", "runner"), [("dask", "DaskTaskRunner"), ("ray", "SignalKeepingRayTaskRunner")])
def test_an_engine_plays_the_same_episodes_as_threads(baseline, engine, runner):
    overrides = {**baseline.overrides, "task_runner": engine}
    before = len(baseline.server.requests)
    with metering() as meter:
        remote = engine_rollouts.with_options(task_runner=task_runner(load_settings(**overrides)))(engine, overrides)
    assert remote["runner"] == runner
    assert meter.episodes == baseline.episodes["metered"] == 44 + 22 + 22, "the progress bar missed remote episodes"
    assert remote["sigterm"] == baseline.episodes["sigterm"], f"{engine} replaced the round's SIGTERM handler"
    assert len(baseline.server.requests) - before == baseline.requests, "the LLM episodes asked the model differently"
    for part, episodes in baseline.episodes.items():
        if "/" in part:
            sort = part.endswith("/stored")
            assert _comparable(remote[part], sort=sort) == _comparable(episodes, sort=sort), \
                f"{engine}: {part} episodes differ from threads'"


@pytest.mark.parametrize(("engine", "module"), [("dask", "prefect_dask"), ("ray", "prefect_ray")])
def test_an_engine_whose_package_is_missing_is_refused_naming_the_extra(gymloop_home, monkeypatch, engine, module):
    (gymloop_home.parent / "gymloop.toml").write_text(f'task_runner = "{engine}"\n')
    assert load_settings().runner.task_runner == engine
    monkeypatch.setitem(sys.modules, module, None)  # what Python's import system does for a blocked package
    with pytest.raises(SettingsError) as info:
        load_settings()
    package = module.replace("_", "-")
    assert str(info.value) == (f"setting 'task_runner' (file gymloop.toml): {engine} needs {package}, "
                               f"which is not installed: pip install 'gymloop[{engine}]'")

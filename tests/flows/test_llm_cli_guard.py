"""``gymloop round`` with a wrong model fails fast with one line; SIGTERM stops it and a re-run resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from arena.agents.scripted_server import ErrorCue, ReplyCue, ScriptedModelServer
from flows.models import RoundParams
from flows.preflight import PreflightError
from flows.round import curriculum_round
from registry import Registry, RegistryError

SECRET = "sk-preflight-secret-never-printed"


def _env(home, tmp_path, **settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GYMLOOP_", "OPENAI_", "PREFECT_API_URL"))}
    env.update({"GYMLOOP_HOME": str(home), "PREFECT_HOME": str(tmp_path / "prefect-child"),
                "PREFECT_LOGGING_LEVEL": "WARNING", "COLUMNS": "300"})
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "600")
    env.update({f"GYMLOOP_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def _group_alive(group: int, *, within_s: float) -> bool:
    """Whether a process of the group is still there after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)


def _gymloop(*args):
    return [sys.executable, "-c", "from flows.cli import app; app()", *args]


@pytest.mark.parametrize(("model", "api_base", "key", "cause"), [
    ("referencee", None, None, "unknown provider: 'referencee' names no litellm provider (did you mean 'reference'?)"),
    ("nosuchprovider/m", None, None, "unknown provider"),
    ("openai/gpt-4o-mini", None, None, "missing key: set OPENAI_API_KEY"),
    ("hosted_vllm/m", "http://127.0.0.1:9/v1", None, "endpoint unreachable"),
    ("openai/m", "scripted", SECRET, "the key was refused or is missing"),
])
def test_a_wrong_model_exits_non_zero_with_one_line(gymloop_home, monkeypatch, model, api_base, key, cause):
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedModelServer(lambda m: ErrorCue(401, f"Incorrect API key provided: {SECRET}")) as server:
        settings = {"model": model, "domains": '["procurement"]'}
        if api_base:
            settings["api_base"] = server.base_url + "/v1" if api_base == "scripted" else api_base
        if key:
            settings["api_key"] = key
        for name, value in settings.items():
            monkeypatch.setenv(f"GYMLOOP_{name.upper()}", value)
        done = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["round", "--campaign", "wrong"])
        asked = len(server.requests)
    output = done.output
    lines = [line for line in output.splitlines() if "preflight failed" in line]
    assert done.exit_code == 2, output[-2000:]
    assert len(lines) == 1 and cause in lines[0] and f"model {model} at" in lines[0], output[-2000:]
    assert SECRET not in output
    assert asked <= 1
    with pytest.raises(RegistryError):
        Registry(f"sqlite:///{gymloop_home / 'registry.db'}").campaign("wrong")


@pytest.mark.timeout(900)
def test_sigterm_stops_a_round_within_seconds_and_a_rerun_resumes(prefect_harness, gymloop_home, tmp_path,
                                                                  monkeypatch):
    settings = {"domains": '["procurement"]', "variants_per_round": 0, "eval_k": 2, "wave_budget": 24,
                "train_k": 2, "max_concurrency": 4, "model_timeout_s": 10, "trainer": "export"}
    with ScriptedModelServer(lambda m: ReplyCue("done"), delay_s=0.2) as server:
        settings.update({"model": "hosted_vllm/scripted", "api_base": server.base_url + "/v1"})
        for key, value in settings.items():
            monkeypatch.setenv(f"GYMLOOP_{key.upper()}", str(value))
        log = tmp_path / "child.log"
        child = subprocess.Popen(_gymloop("round", "--campaign", "sig"), env=_env(gymloop_home, tmp_path, **settings),
                                 stdout=subprocess.DEVNULL, stderr=log.open("w"), start_new_session=True)
        registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
        recorded, rid = 0, None
        deadline = time.monotonic() + 280
        try:
            while time.monotonic() < deadline and child.poll() is None and recorded < 8:
                try:
                    rid = registry.rounds(registry.campaign("sig").id)[0].id
                    recorded = len(registry.finished_episode_keys(rid, stage="eval_before"))
                except (RegistryError, IndexError):
                    pass
                time.sleep(0.05)
            if rid is None or recorded < 8:
                pytest.fail(f"never caught the round part-way: {log.read_text()[-3000:]}")
            child.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            child.wait(timeout=10)
            stopped_in = time.monotonic() - signalled
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=30)
        err = log.read_text()
        assert child.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert not _group_alive(child.pid, within_s=5), "a process it started (Prefect's server) outlived it"
        assert stopped_in < 10
        assert "Resume with: gymloop round --campaign sig" in err
        assert " INFO " not in err, "a first run in a fresh home printed library INFO lines"
        info = registry.round(rid)
        assert info.status == "interrupted" and "SIGTERM" in (info.error or "")
        kept = {r.episode_id: r.reply for r in registry.round_episodes(rid, stage="eval_before")}
        planned = 2 * len(registry.heldout_suite("procurement"))
        assert 8 <= len(kept) < planned

        summary = curriculum_round(RoundParams(campaign="sig", round_index=0, overrides={}))
    stage = summary.episodes["eval_before"]
    assert stage.reused == len(kept) and stage.ran == planned - len(kept)
    assert registry.round(rid).status == "finished"
    resumed = {r.episode_id: r.reply for r in registry.round_episodes(rid, stage="eval_before")}
    assert all(resumed[e] == reply for e, reply in kept.items())


def test_a_round_started_without_the_cli_preflights_its_model(prefect_harness, gymloop_home):
    overrides = {"model": "hosted_vllm/m", "api_base": "http://127.0.0.1:9/v1", "domains": ["procurement"],
                 "eval_k": 1, "variants_per_round": 0}
    with pytest.raises(PreflightError, match=r"model hosted_vllm/m at http://127.0.0.1:9/v1: endpoint unreachable"):
        curriculum_round(RoundParams(campaign="served-wrong-model", round_index=0, overrides=overrides))
    registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
    info = registry.rounds(registry.campaign("served-wrong-model").id)[0]
    assert info.status == "failed" and "endpoint unreachable" in (info.error or "")
    assert registry.round_episodes(info.id, stage=None) == []

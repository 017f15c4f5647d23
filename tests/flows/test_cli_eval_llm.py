"""``gymloop eval`` against an LLM server: preflight first, many episodes in flight, either request path."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from arena.agents.scripted_server import ErrorCue, ReplyCue, ScriptedModelServer
from arena.core.episode import EpisodeRecord
from flows.cli import app

runner = CliRunner(env={"COLUMNS": "300"})


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_eval_keeps_many_episodes_in_flight_and_writes_each_one(tmp_path, client):
    out = tmp_path / "episodes.jsonl"
    with ScriptedModelServer([], default=ReplyCue("I could not do that."), delay_s=0.05) as server:
        result = runner.invoke(app, ["eval", "--model", "hosted_vllm/scripted", "--api-base", server.base_url + "/v1",
                                     "--client", client, "--max-concurrency", "8", "--domain", "procurement",
                                     "--k", "1", "--out", str(out)])
        peak = server.peak_in_flight
        bodies = [r.body for r in server.requests]
    assert result.exit_code == 0, result.output
    records = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    heldout = len({r.task_id for r in records})
    assert len(records) == heldout > 8 and all(not r.invalid for r in records)
    assert 2 <= peak <= 8
    assert len(bodies) == len(records) + 1  # the preflight request, then one per one-turn episode
    assert bodies[0]["tools"][0]["function"]["name"] == "ping" and bodies[0]["model"] == "scripted"


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_eval_with_an_unreachable_server_fails_before_any_episode(tmp_path, client):
    out = tmp_path / "episodes.jsonl"
    started = time.monotonic()
    result = runner.invoke(app, ["eval", "--model", "hosted_vllm/m", "--api-base", "http://127.0.0.1:9/v1",
                                 "--client", client, "--domain", "helpdesk", "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if "preflight failed" in line]
    assert len(lines) == 1 and "endpoint unreachable" in lines[0] and "127.0.0.1:9" in lines[0], result.output
    assert time.monotonic() - started < 30 and not out.exists()


def test_eval_names_an_unknown_client(tmp_path):
    result = runner.invoke(app, ["eval", "--model", "hosted_vllm/m", "--client", "grpc", "--out",
                                 str(tmp_path / "e.jsonl")])
    assert result.exit_code == 2
    flat = " ".join(result.output.replace("│", " ").split())
    assert "grpc" in flat and "--client" in flat


@pytest.mark.parametrize("workers", ["1", "2"])
def test_eval_stops_on_a_model_that_fails_mid_run_and_keeps_what_finished(tmp_path, workers):
    out = tmp_path / "episodes.jsonl"
    answered = []

    def script(messages):
        answered.append(messages)
        return ReplyCue("I could not do that.") if len(answered) <= 4 else ErrorCue(404, "the model was unloaded")

    with ScriptedModelServer(script) as server:
        result = runner.invoke(app, ["eval", "--model", "hosted_vllm/scripted", "--api-base", server.base_url + "/v1",
                                     "--client", "openai", "--workers", workers, "--max-concurrency", "1",
                                     "--max-model-failures", "3", "--domain", "procurement", "--k", "4",
                                     "--out", str(out)])
        asked = len(server.requests)
    assert result.exit_code == 3, result.output
    lines = [line for line in result.output.splitlines() if "stopped the evaluation" in line]
    assert len(lines) == 1 and "3 consecutive episodes" in lines[0] and "unloaded" in lines[0], result.output
    records = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    # the preflight took the first answer; two workers may abandon an answered episode still on its way back
    assert len(records) == 3 if workers == "1" else 1 <= len(records) <= 3
    assert all(not r.invalid for r in records)
    assert f"{len(records)} episodes written" in lines[0]
    assert asked < 40


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_sigterm_stops_eval_within_seconds_saying_what_it_kept(tmp_path, client):
    out = tmp_path / "episodes.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GYMLOOP_", "OPENAI_"))}
    env.update({"GYMLOOP_HOME": str(tmp_path / "home"), "COLUMNS": "80"})
    with ScriptedModelServer([], default=ReplyCue("done"), delay_s=0.1) as server:
        child = subprocess.Popen(
            [sys.executable, "-c", "from flows.cli import app; app()", "eval", "--model", "hosted_vllm/scripted",
             "--api-base", server.base_url + "/v1", "--client", client, "--max-concurrency", "4",
             "--domain", "procurement", "--k", "50", "--out", str(out)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and child.poll() is None and \
                    (not out.exists() or len(out.read_text().splitlines()) < 8):
                time.sleep(0.05)
            child.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            _, err = child.communicate(timeout=15)
            stopped_in = time.monotonic() - signalled
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=30)
    kept = len(out.read_text().splitlines())
    assert child.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert stopped_in < 10
    said = [m for line in err.splitlines()
            if (m := re.fullmatch(r"SIGTERM: stopped the evaluation; (\d+) of (\d+) episodes written to (.+)", line))]
    assert len(said) == 1, err[-2000:]
    written, total, where = int(said[0][1]), int(said[0][2]), said[0][3]
    assert written == kept and 8 <= kept < total and total % 50 == 0 and where == str(out)

"""Stopping cleanly: Ctrl-C releases the lease, cancels the Prefect runs and ends the MLflow runs, so the printed
resume command runs at once; Ctrl-C during start-up leaves no campaign; a killed round's temporary Prefect server
dies with it."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from registry import Registry
from tests.flows.gymloop_child import alive, child_env, children_of, kill_group, run, start

SETTINGS = {"domains": ["procurement"], "eval_k": 2, "batch_size": 1, "workers": 1, "variants_per_round": 0,
            "wave_budget": 60, "lease_wait_s": 0}
"""A small round, one episode per Prefect task: it is still evaluating a few seconds after it started."""

pytestmark = pytest.mark.timeout(900)


def _wait_for(check: Any, child: Any, log: Path, what: str, timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and child.poll() is None:
        if check():
            return
        time.sleep(0.02)
    kill_group(child)
    pytest.fail(f"never saw {what} (exit {child.returncode}): {log.read_text()[-3000:]}")


@pytest.mark.xdist_group("prefect-server")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_cancels_the_prefect_runs_and_the_printed_command_resumes_at_once(prefect_server, tmp_path, sig):
    env = child_env(tmp_path / "home", SETTINGS, prefect_api=prefect_server.api, prefect_home=tmp_path / "prefect")
    registry = Registry(None, tmp_path / "home")
    log = tmp_path / "first.log"
    campaign = f"stop-{sig.name.lower()}"
    child = start(["round", "--campaign", campaign], env, log)

    def evaluating() -> bool:
        info = registry.find_campaign(campaign)
        rounds = registry.rounds(info.id) if info is not None else []
        return bool(rounds) and sum(registry.stage_models(rounds[0].id, "eval_before").values()) >= 4

    _wait_for(evaluating, child, log, "the round evaluating")
    child.send_signal(sig)
    try:
        child.wait(timeout=60)
    finally:
        kill_group(child)
    text = log.read_text()
    assert child.returncode == 128 + sig, text[-3000:]
    assert f"{sig.name}: stopped round 0 of campaign {campaign}" in text
    assert f"Resume with: gymloop round --campaign {campaign}" in text
    (stopped,) = registry.rounds(registry.campaign(campaign).id)
    assert stopped.status == "interrupted" and registry.lease(campaign) is None
    runs = {r.name: r for r in prefect_server.flow_runs() if r.name.startswith(f"{campaign}-")}
    assert len(runs) == 2 and all(r.state_type.value == "CANCELLED" for r in runs.values()), \
        {name: r.state_type for name, r in runs.items()}
    assert all(f"stopped by {sig.name}" in (r.state.message or "") for r in runs.values() if r.state is not None)
    tracked = MlflowClient(f"sqlite:///{tmp_path / 'home' / 'mlflow.db'}")
    experiment = tracked.get_experiment_by_name(f"gymloop/{campaign}")
    statuses = {r.info.run_name: r.info.status for r in tracked.search_runs([experiment.experiment_id])}
    assert statuses == {f"targeted {campaign}": "KILLED", f"targeted {campaign} round 0": "KILLED"}, statuses
    if sig == signal.SIGTERM:
        return  # the resume below is the same after either signal

    resume = text.split("Resume with: ", 1)[1].split()[1:4]
    assert resume == ["round", "--campaign", campaign]
    done = run(resume, env, timeout_s=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "took over" not in done.stderr + done.stdout, "the stopped process kept its lease"
    assert registry.round(stopped.id).status == "finished"
    registry.close()


def test_ctrl_c_during_start_up_leaves_no_campaign_and_no_server(tmp_path):
    env = child_env(tmp_path / "home", SETTINGS, prefect_api=None, prefect_home=tmp_path / "prefect")
    registry = Registry(None, tmp_path / "home")
    log = tmp_path / "start-up.log"
    child = start(["round", "--campaign", "early"], env, log)
    # The temporary server's process shows the command is past its signal set-up and still starting up.
    _wait_for(lambda: registry.lease("early") is not None and children_of(child.pid), child, log,
              "the lease taken and Prefect's server starting")
    assert registry.find_campaign("early") is None, "the round started before Prefect's server did"
    server = children_of(child.pid)
    child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=60)
    finally:
        kill_group(child)
    assert child.returncode == 130, log.read_text()[-3000:]
    assert registry.find_campaign("early") is None and registry.lease("early") is None
    assert not any(alive(pid) for pid in server)
    registry.close()


def test_a_killed_round_leaves_no_prefect_server_behind(tmp_path):
    env = child_env(tmp_path / "home", SETTINGS, prefect_api=None, prefect_home=tmp_path / "prefect")
    registry = Registry(None, tmp_path / "home")
    log = tmp_path / "killed.log"
    child = start(["round", "--campaign", "killed"], env, log)
    _wait_for(lambda: registry.find_campaign("killed") is not None, child, log, "the round started")
    server = children_of(child.pid)
    assert server, "no temporary Prefect server was started"
    child.send_signal(signal.SIGKILL)  # the command alone, not its process group
    child.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(pid) for pid in server):
        time.sleep(0.1)
    left = [pid for pid in server if alive(pid)]
    kill_group(child)
    assert not left, f"the temporary Prefect server ({left}) outlived the killed round"
    registry.close()


@pytest.mark.xdist_group("prefect-server")
def test_a_round_sends_its_prefect_logs_before_its_temporary_server_stops(tmp_path):
    settings = {**SETTINGS, "eval_k": 1, "batch_size": 8, "wave_budget": 16}
    env = {**child_env(tmp_path / "home", settings, prefect_api=None, prefect_home=tmp_path / "prefect"),
           "PREFECT_LOGGING_LEVEL": "INFO"}
    done = run(["round", "--campaign", "logged"], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Error logging to API" not in done.stderr, done.stderr[-3000:]

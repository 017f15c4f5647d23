import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from registry import Registry

SETTINGS = {"domains": ["procurement"], "variants_per_round": 0, "wave_budget": 24, "eval_k": 1}


def _start(args, env, log):
    return subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _wait(check, timeout, what, logs):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}; logs:\n" + "\n".join(p.read_text()[-3000:] for p in logs))


def _gymloop(args, env):
    return subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", *args], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(900)
@pytest.mark.xdist_group("prefect-server")
def test_serve_registers_cron_deployment_and_two_triggers_run_one_round_after_the_other(gymloop_home, tmp_path,
                                                                                      prefect_server):
    api = prefect_server.api
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"PREFECT_HOME": str(tmp_path / "prefect-client"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_LOGGING_LEVEL": "WARNING", "GYMLOOP_HOME": str(gymloop_home)})
    for key, value in SETTINGS.items():
        env[f"GYMLOOP_{key.upper()}"] = json.dumps(value) if isinstance(value, list) else str(value)
    server_log, serve_log = prefect_server.log, tmp_path / "serve.log"
    client_env = {**env, "PREFECT_API_URL": api, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}  # the runner looks every 1 s
    serve = dep = None
    no_server = _gymloop(["serve", "--campaign", "sched"], env)
    assert no_server.returncode == 2 and "PREFECT_API_URL is not set" in no_server.stderr
    assert len(no_server.stderr.strip().splitlines()) == 1 and "Traceback" not in no_server.stderr
    try:
        bad_cron = _gymloop(["serve", "--campaign", "sched", "--cron", "61 3 * * *"], client_env)
        assert bad_cron.returncode == 2 and "'61 3 * * *' (--cron) is not valid" in bad_cron.stderr
        assert "Traceback" not in bad_cron.stderr
        serve = _start([sys.executable, "-c", "from flows.cli import app; app()", "serve", "--campaign", "sched",
                        "--cron", "30 3 * * *"], client_env, serve_log.open("w"))

        def deployment():
            body = {"deployments": {"name": {"any_": ["sched"]}}}
            try:
                found = httpx.post(f"{api}/deployments/filter", json=body, timeout=30).json()
            except httpx.HTTPError:
                return None
            return found[0] if found else None

        dep = _wait(deployment, 120, "the served deployment", [serve_log, server_log])
        crons = [s["schedule"].get("cron") for s in dep["schedules"]]
        assert crons == ["30 3 * * *"]
        assert dep["parameters"]["params"]["campaign"] == "sched"
        assert dep["global_concurrency_limit"]["limit"] == 1 and "campaign:sched" in dep["tags"]

        for _ in range(2):
            trigger = subprocess.run([sys.executable, "-m", "prefect", "deployment", "run", "next-round/sched"],
                                     env=client_env, capture_output=True, text=True, timeout=120)
            assert trigger.returncode == 0, trigger.stdout[-2000:] + trigger.stderr[-2000:]

        def both_done():
            body = {"deployments": {"id": {"any_": [dep["id"]]}}}
            try:
                runs = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=30).json()
            except httpx.HTTPError:
                return None
            states = [r["state_type"] for r in runs]
            assert "FAILED" not in states and "CRASHED" not in states, runs
            return runs if len(runs) == 2 and states == ["COMPLETED", "COMPLETED"] else None

        runs = _wait(both_done, 900, "two triggered rounds", [serve_log, server_log])
        assert all(r["name"].startswith("sched-") for r in runs)
        registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
        rounds = registry.rounds(registry.campaign("sched").id)
        assert [(r.index, r.status) for r in rounds] == [(0, "finished"), (1, "finished")]
        assert rounds[1].model_in_id == rounds[0].model_out_id is not None
        suite = len(registry.heldout_suite("procurement"))
        assert len(registry.round_episodes(rounds[0].id, stage="eval_before")) == suite, "round 0 ran once"
    finally:
        if serve is not None:
            _stop(serve)
        if dep is not None:  # the session's server outlives this test: its schedule goes with it
            httpx.delete(f"{api}/deployments/{dep['id']}", timeout=30).raise_for_status()
    assert "never awaited" not in serve_log.read_text()

"""Two ``gymloop round`` on the same campaign of a fresh home: one runs, the other stops and says why."""

import os
import subprocess
import sys
import time

from registry import Registry, RegistryError

SETTINGS = {"domains": '["procurement"]', "eval_k": "1", "variants_per_round": "0", "wave_budget": "60",
            "batch_size": "10", "workers": "1"}


def _start(home, tmp_path, name):
    env = dict(os.environ)
    env.update({f"GYMLOOP_{k.upper()}": v for k, v in SETTINGS.items()})
    env.update({"GYMLOOP_HOME": str(home), "PREFECT_HOME": str(tmp_path / f"prefect-{name}"),
                "PREFECT_LOGGING_LEVEL": "WARNING", "COLUMNS": "300"})
    env.pop("PREFECT_API_URL", None)
    return subprocess.Popen([sys.executable, "-c", "from flows.cli import app; app()", "round", "--campaign", "twin"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def test_two_rounds_on_one_campaign_one_runs_the_other_says_why(tmp_path):
    home = tmp_path / "fresh-home"
    children = [_start(home, tmp_path, "a"), _start(home, tmp_path, "b")]
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and all(c.poll() is None for c in children):
            time.sleep(0.5)
        stopped = next((c for c in children if c.poll() is not None), None)
        assert stopped is not None, "neither process stopped"
        running = children[1 - children.index(stopped)]
        out, err = stopped.communicate(timeout=60)
        assert stopped.returncode == 3, (stopped.returncode, out[-2000:], err[-2000:])
        assert "not started" in err and "campaign 'twin' is being advanced by another process" in err
        assert f":{running.pid}:" in err  # names the process that holds the campaign
        assert "Traceback" not in out + err
        registry = Registry(f"sqlite:///{home / 'registry.db'}")
        while time.monotonic() < deadline and running.poll() is None:
            try:
                rounds = registry.rounds(registry.campaign("twin").id)
            except RegistryError:
                rounds = []
            if rounds and registry.finished_episode_keys(rounds[0].id, stage="eval_before"):
                break
            time.sleep(0.5)
        assert running.poll() is None or running.returncode == 0, running.communicate()[1][-2000:]
        rounds = registry.rounds(registry.campaign("twin").id)
        assert [r.index for r in rounds] == [0]  # one round, started once
        assert registry.finished_episode_keys(rounds[0].id, stage="eval_before")
    finally:
        for child in children:
            if child.poll() is None:
                os.killpg(child.pid, 9)
                child.wait(timeout=30)

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from flows.models import RoundParams
from flows.round import curriculum_round
from registry import Registry, RegistryError

SETTINGS = {"domains": ["procurement", "helpdesk"], "batch_size": 4, "workers": 1, "wave_budget": 600,
            "variants_per_round": 0, "eval_k": 2}


def _counts(registry, campaign):
    try:
        info = registry.campaign(campaign)
    except RegistryError:
        return None, {}
    rounds = registry.rounds(info.id)
    if not rounds:
        return None, {}
    rid = rounds[0].id
    return rid, {s: len(registry.finished_episode_keys(rid, stage=s)) for s in ("eval_before", "train", "eval_after")}


def test_killed_round_resumes_without_rerunning_finished_episodes(prefect_harness, gymloop_home, tmp_path,
                                                                   monkeypatch):
    env = dict(os.environ)
    for key, value in SETTINGS.items():
        env[f"GYMLOOP_{key.upper()}"] = json.dumps(value) if isinstance(value, list) else str(value)
        monkeypatch.setenv(f"GYMLOOP_{key.upper()}", env[f"GYMLOOP_{key.upper()}"])
    env["PREFECT_HOME"] = str(tmp_path / "prefect-child")
    env.pop("PREFECT_API_URL", None)
    env["PREFECT_LOGGING_LEVEL"] = "WARNING"
    child = subprocess.Popen([sys.executable, "-c", "from flows.cli import app; app()", "round", "--campaign", "r"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
    planned_eval = 2 * (22 + 22)
    killed_in = None
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and child.poll() is None:
            rid, counts = _counts(registry, "r")
            if rid is not None:
                wave = registry.wave(rid)
                planned_train = len(wave.entries) * 6 if wave else None
                if 0 < counts["eval_before"] < planned_eval:
                    killed_in = "eval_before"
                elif planned_train and 0 < counts["train"] < planned_train:
                    killed_in = "train"
                if killed_in:
                    os.killpg(child.pid, signal.SIGKILL)
                    break
            time.sleep(0.01)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    if killed_in is None:
        pytest.fail(f"never caught the round part-way (exit {child.returncode}): {child.stderr.read()[-2000:]!r}")
    rid, before_kill = _counts(registry, "r")
    assert planned_eval == 2 * (len(registry.heldout_suite("procurement")) + len(registry.heldout_suite("helpdesk")))
    kept = {r.episode_id: r.verdict for r in registry.round_episodes(rid, stage=killed_in)}
    assert registry.round(rid).status == "running"

    summary = curriculum_round(RoundParams(campaign="r", round_index=0, overrides={}))

    _, after = _counts(registry, "r")
    assert after["eval_before"] == planned_eval == after["eval_after"]
    resumed = {r.episode_id: r.verdict for r in registry.round_episodes(rid, stage=killed_in)}
    assert all(resumed[e] == v for e, v in kept.items()), "episodes finished before the kill were rewritten"
    if killed_in == "eval_before":
        stage = summary.episodes["eval_before"]
        assert stage.reused == before_kill["eval_before"] and stage.ran == planned_eval - before_kill["eval_before"]
    else:
        assert summary.episodes["eval_before"].ran == 0
        assert after["train"] == len(registry.wave(rid).entries) * 6
    assert registry.round(rid).status == "finished"

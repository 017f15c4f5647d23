"""Same seed, same worlds, packs, traces, verdicts and rounds, whatever the process and its hash seed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "golden_probe.py"


def _fresh_interpreter(script: Path, hash_seed: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_gym_is_identical_in_two_interpreters_with_different_hash_seeds():
    first = _fresh_interpreter(PROBE, "1")
    second = _fresh_interpreter(PROBE, "4242")
    assert set(first) == {"helpdesk", "tracker", "procurement"}
    for domain, digests in first.items():
        golds = {k: v for k, v in digests.items() if k.startswith("gold:")}
        assert golds and all(v["passed"] for v in golds.values()), domain
        assert digests["world@0"] != digests["world@1"] and digests["pack@0"] != digests["pack@1"]
        differing = sorted(k for k in digests if digests[k] != second[domain].get(k))
        assert not differing, f"{domain}: differs across interpreters: {differing[:10]}"
    assert first == second


_TIMING = re.compile(r"(time|seconds|duration|elapsed|_s$|latency)")


def _demo(home: Path) -> str:
    env = {**os.environ, "PREFECT_HOME": str(home / "prefect"), "GYMLOOP_HOME": str(home),
           "MLFLOW_TRACKING_URI": "sqlite:///" + str(home / "mlflow.db"), "COLUMNS": "200",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600"}
    done = subprocess.run([str(Path(sys.executable).parent / "gymloop"), "demo", "--rounds", "2", "--home", str(home)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    match = re.search(r"gymloop report (demo-\S+)", done.stdout)
    assert match, done.stdout[-2000:]
    return match.group(1)


def _rounds(home: Path, campaign: str) -> list[dict[str, Any]]:
    from registry import Registry

    registry = Registry(None, home)
    try:
        out = []
        for info in registry.rounds(registry.campaign(campaign).id):
            summary = dict(info.details["summary"])
            summary.pop("campaign")
            summary["metrics"] = {k: v for k, v in summary["metrics"].items() if not _TIMING.search(k)}
            summary["episodes"] = {
                stage: sorted((e.pack_id, e.task_id, e.seed, e.attempt, e.passed, round(e.score, 9))
                              for e in registry.episode_summaries(info.id, stage=stage))
                for stage in summary["episodes"]}
            wave = registry.wave(info.id)
            summary["wave"] = [e.model_dump(mode="json") for e in wave.entries] if wave else None
            summary["weakness_rows"] = [w.model_dump(mode="json") for w in registry.weaknesses(info.id)]
            out.append(summary)
        return out
    finally:
        registry.close()


@pytest.mark.slow
def test_two_demos_in_separate_homes_give_identical_rounds(tmp_path: Path):
    homes = [tmp_path / "a", tmp_path / "b"]
    campaigns = [_demo(home) for home in homes]
    first, second = (_rounds(home, name) for home, name in zip(homes, campaigns, strict=True))
    assert len(first) == 2 and all(r["episodes"] for r in first)
    for a, b in zip(first, second, strict=True):
        differing = sorted(k for k in a if a[k] != b[k])
        assert not differing, f"round {a['round_index']} differs in {differing}"

"""Two machines' worth of state: round 0 runs with one gymloop home, round 1 with another, against the same
PostgreSQL registry and MLflow tracking server; the first home is deleted in between. Round 1 knows nothing but
the registry: it plays round 0's model (its parameters from the database) and plans from round 0's pool (whose
variant packs it loads from the database), weaknesses and wave."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import free_port
from mlflow.tracking import MlflowClient

from diagnosis import Weakness, WeaknessReport
from flows._offline import OFFLINE_DEFAULTS
from flows.tracking import round_run_name
from registry import Registry
from tests.flows.gymloop_child import child_env, run

SETTINGS = {"domains": ["procurement"], "eval_k": 1, "variants_per_round": 1, "tasks_per_variant": 4,
            "wave_budget": 120, "lease_wait_s": 0}

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("prefect-server"), pytest.mark.timeout(1500)]


def _mlflow_server(root: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = free_port()
    log = root / "mlflow.log"
    env = {**os.environ, **OFFLINE_DEFAULTS, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no job runner
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
         "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True, cwd=root)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{uri}/health", timeout=5).status_code == 200:
                return proc, uri, log
        except httpx.HTTPError:
            pass
        time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"mlflow server did not start: {log.read_text()[-3000:]}")


def test_round_one_on_another_home_plans_from_round_zeros_pool_and_weaknesses(pg_server, prefect_server, tmp_path):
    url = pg_server.create_database()
    mlflow, uri, mlflow_log = _mlflow_server(tmp_path)
    try:
        settings = {**SETTINGS, "registry_url": url, "mlflow_uri": uri}
        for n, machine in enumerate(("a", "b")):
            if machine == "b":
                shutil.rmtree(tmp_path / "a")  # the first machine is gone: its packs, models and folders with it
            env = child_env(tmp_path / machine, settings, prefect_api=prefect_server.api,
                            prefect_home=tmp_path / f"prefect-{machine}")
            done = run(["round", "--campaign", "shared"], env, timeout_s=900)
            assert done.returncode == 0, f"machine {machine}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
            assert f"campaign shared: round {n}" in done.stdout
        experiment = MlflowClient(uri).get_experiment_by_name("gymloop/shared")
        assert experiment is not None
        runs = MlflowClient(uri).search_runs([experiment.experiment_id])
        assert sorted(r.info.run_name for r in runs if r.data.tags.get("gymloop_kind") == "round") == \
            [round_run_name("shared", 0, "targeted"), round_run_name("shared", 1, "targeted")]
    finally:
        os.killpg(mlflow.pid, signal.SIGTERM)
        mlflow.wait(timeout=60)

    with Registry(url, tmp_path / "auditor") as registry:
        first, second = registry.rounds(registry.campaign("shared").id)
        assert first.status == second.status == "finished" and second.model_in_id == first.model_out_id
        added = [p.pack_id for p in registry.pool(first.id) if p.role == "added"]
        assert added, "round 0 added no variant to its pool"
        pool = {p.pack_id: p.role for p in registry.pool(second.id)}
        assert all(pool.get(p) == "variant" for p in added), "round 1's pool lacks round 0's variants"
        assert all((tmp_path / "b" / "packs" / p).is_dir() for p in added), "round 1 did not load them"
        assert not (tmp_path / "b" / "campaigns" / "shared" / "round-000").exists()

        before = WeaknessReport.model_validate(registry.weakness_report(first.id))
        after = WeaknessReport.model_validate(registry.weakness_report(second.id))
        def key(w: Weakness) -> tuple[str, str | None, str | None, str]:
            return w.kind, w.domain, w.tool, w.label if w.kind == "novel" else ""

        shares = {key(w): w.share for w in before.weaknesses}
        trended = [w for w in after.weaknesses if key(w) in shares]
        assert trended and all(w.trend == round(w.share - shares[key(w)], 6) for w in trended), \
            "round 1's diagnosis did not read round 0's report"

        plan = registry.wave(second.id)
        earlier = registry.wave(first.id)
        assert plan is not None and plan.plan is not None and earlier is not None
        replayed = {(e["pack_id"], e["task_id"]) for e in plan.plan["entries"] if e["source"] == "replay"}
        assert replayed and replayed <= {(e.pack_id, e.task_id) for e in earlier.entries}, \
            "round 1 replayed nothing of round 0's wave: it planned without its history"
    assert "Traceback" not in mlflow_log.read_text()

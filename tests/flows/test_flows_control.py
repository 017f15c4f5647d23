"""A control arm runs beside the targeted one: same budget, same starting model, same held-out suite."""

import pytest
from conftest import SMALL
from mlflow.tracking import MlflowClient

from arena.core.metrics import paired_lift
from flows import steps
from flows.control import control_campaign, run_paired
from flows.round import next_round
from flows.settings import load_settings
from registry import Registry

pytestmark = pytest.mark.timeout(1200)  # two arms' rounds: twice a round's time, more on a loaded machine


ARMS = {**SMALL, "wave_budget": 120}
"""A wave (20 tasks x k 6) smaller than the pool, so both arms spend the whole budget."""


@pytest.fixture()
def paired(prefect_harness, gymloop_home):
    return run_paired("arms", 1, ARMS, "uniform", next_round), load_settings(**ARMS)


def _keys(registry: Registry, round_id: int, stage: str) -> list[tuple[str, str, int, int]]:
    return sorted((r.pack_id, r.task_id, r.seed, r.attempt) for r in registry.round_episodes(round_id, stage=stage))


def test_control_arm_runs_with_the_same_budget_start_and_suite(paired):
    (result,), settings = paired
    registry = Registry(settings.resolved_registry_url())
    targeted = registry.rounds(registry.campaign("arms").id)[0]
    control = registry.rounds(registry.campaign(control_campaign("arms", "uniform")).id)[0]
    assert targeted.model_in_id == control.model_in_id
    assert registry.campaign(control_campaign("arms", "uniform")).settings["arm"] == "uniform"
    waves = {arm: registry.wave(r.id) for arm, r in (("targeted", targeted), ("control", control))}
    budgets = {arm: w.details["budget"] for arm, w in waves.items()}
    assert budgets["targeted"] == budgets["control"] == settings.wave_budget
    assert len(waves["control"].entries) == len(waves["targeted"].entries)
    assert waves["control"].details["strategy"] == "uniform" and waves["targeted"].details["strategy"] == "targeted"
    base = {p.id for p in steps.base_packs(registry, settings)}
    assert {e.pack_id for e in waves["control"].entries} <= base, "the control trained on the targeted arm's variants"
    assert result.control is not None and result.control.variants == 0 and result.targeted.variants >= 1
    for stage in ("eval_before", "eval_after"):
        assert _keys(registry, targeted.id, stage) == _keys(registry, control.id, stage)
    comparison = result.comparison
    assert comparison is not None
    lift = paired_lift(steps.outcomes(registry, control.id, "eval_after"),
                       steps.outcomes(registry, targeted.id, "eval_after"))
    assert comparison.lift == pytest.approx(lift.value)
    assert comparison.low <= comparison.lift <= comparison.high
    assert comparison.targeted_after == pytest.approx(result.targeted.after)
    assert comparison.control_after == pytest.approx(result.control.after)
    text = (settings.home / "campaigns" / "arms" / "control.md").read_text()
    assert "Targeting against the uniform control" in text and f"{comparison.lift:+.3f}" in text


def test_both_arms_in_one_mlflow_experiment_with_an_arm_tag(paired):
    (result,), settings = paired
    client = MlflowClient(settings.resolved_mlflow_uri())
    experiment = client.get_experiment_by_name("gymloop/arms")
    runs = client.search_runs([experiment.experiment_id])
    rounds = {r.data.tags["arm"]: r for r in runs if r.data.tags.get("gymloop_kind") == "round"}
    parents = {r.data.tags["arm"] for r in runs if r.data.tags.get("gymloop_kind") == "campaign"}
    assert parents == set(rounds) == {"targeted", "uniform"}
    assert rounds["targeted"].data.metrics["heldout_pass_rate_after"] == pytest.approx(result.targeted.after)
    assert rounds["uniform"].data.metrics["heldout_pass_rate_after"] == pytest.approx(result.control.after)
    shared = {"lift", "lift_low", "lift_high", "heldout_pass_rate_before", "heldout_pass_rate_after"}
    assert shared <= set(rounds["targeted"].data.metrics) and shared <= set(rounds["uniform"].data.metrics)
    assert rounds["targeted"].data.metrics["targeting_lift"] == pytest.approx(result.comparison.lift)
    assert client.get_experiment_by_name("gymloop/arms.uniform") is None

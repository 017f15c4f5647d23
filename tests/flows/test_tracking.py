from types import SimpleNamespace

from mlflow.tracking import MlflowClient

from flows import context
from flows.models import RoundParams
from flows.round_tracking import open_round, round_failed
from flows.settings import load_settings
from flows.tracking import CampaignTracker, scrub


def test_scrub_leaves_out_secrets_and_unset_settings():
    logged = scrub({"api_key": "sk-x", "api_key_set": True, "api_base": None, "model": "reference", "seed": 0})
    assert logged == {"api_key_set": "True", "model": "reference", "seed": "0"}


def test_a_failed_round_leaves_its_run_and_the_campaign_failed_not_running(gymloop_home):
    settings = load_settings()
    ctx = context.open_round(RoundParams(campaign="broken", round_index=0, overrides={"domains": ["procurement"]}))
    run_id = open_round(ctx)
    client = MlflowClient(settings.resolved_mlflow_uri())
    tracker = CampaignTracker(settings.resolved_mlflow_uri(), "broken")
    assert client.get_run(run_id).info.status == "RUNNING"
    assert client.get_run(tracker.parent_id).info.status == "RUNNING"
    round_failed(None, SimpleNamespace(parameters={"params": {"campaign": "broken", "round_index": 0,
                                                              "overrides": {"domains": ["procurement"]}}}), None)
    assert ctx.registry.round(ctx.round.id).status == "failed"
    assert client.get_run(run_id).info.status == "FAILED"
    assert client.get_run(tracker.parent_id).info.status == "FAILED"
    assert "None" not in client.get_run(tracker.parent_id).data.params.values()

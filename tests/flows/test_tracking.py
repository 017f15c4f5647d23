import json
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


def _round_metrics(before: float, after: float) -> dict[str, float]:
    lift = after - before
    return {"heldout_pass_rate_before": before, "heldout_pass_rate_after": after, "lift": lift,
            "lift_low": lift - 0.0213, "lift_high": lift + 0.0297, "heldout_pass_rate_after/tracker": after,
            "cost_usd": 0.0001234}


def test_an_arm_run_holds_the_campaign_and_each_round_run_its_round_under_short_rounded_names(gymloop_home):
    from flows.tracking import HEADLINE, VIEW_TAG, view_state_of

    uri = load_settings().resolved_mlflow_uri()
    tracker = CampaignTracker(uri, "short")
    for index, (before, after) in enumerate([(0.8351, 0.8742), (0.8742, 0.9101)]):
        tracker.open_round(index)
        tracker.log_round(index, {}, _round_metrics(before, after), [],
                          campaign_metrics={"before": 0.8351, "after": after, "lift": after - 0.8351,
                                            "lift_low": 0.01, "lift_high": 0.09, "best_round": index})
    tracker.log_metrics(1, {"tgt_lift": 0.04567, "tgt_low": 0.0123, "tgt_high": 0.0789, "control_after": 0.8644},
                        {"tgt_lift": 0.04567, "tgt_low": 0.0123, "tgt_high": 0.0789})
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("gymloop/short")
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {"targeted short", "targeted short round 0", "targeted short round 1"}
    second = runs["targeted short round 1"].data.metrics
    assert (second["round"], second["before"], second["after"], second["lift"]) == (1, 0.874, 0.91, 0.036)
    assert (second["lift_low"], second["lift_high"], second["tgt_lift"]) == (0.015, 0.066, 0.046)
    assert second["cost_usd"] == 0.000123 and "heldout_pass_rate_after" not in second
    arm = client.get_run(runs["targeted short"].info.run_id).data.metrics
    assert "round" not in arm and (arm["before"], arm["after"], arm["lift"], arm["best_round"]) == (0.835, 0.91,
                                                                                                     0.075, 1)
    assert (arm["tgt_lift"], arm["tgt_low"], arm["tgt_high"]) == (0.046, 0.012, 0.079)
    assert [m.step for m in client.get_metric_history(runs["targeted short"].info.run_id, "after")] == [0, 1]
    state = view_state_of(experiment.tags[VIEW_TAG])
    assert state["selectedColumns"] == [f"metrics.`{k}`" for k in HEADLINE]
    assert state["orderByKey"] == "tags.`mlflow.runName`" and state["orderByAsc"] is True
    assert json.loads(experiment.tags[VIEW_TAG])["name"] == "gymloop", "listed under Views by its name"


def test_an_older_view_is_replaced_and_runs_named_by_an_older_gymloop_are_renamed(gymloop_home):
    from flows.tracking import VIEW_TAG, runs_view_state, view_state_of

    uri = load_settings().resolved_mlflow_uri()
    tracker = CampaignTracker(uri, "old")
    tracker.round_run(0)
    client = MlflowClient(uri)
    client.set_experiment_tag(tracker.experiment_id, VIEW_TAG, json.dumps({"selectedColumns": ["metrics.`lift`"]}))
    client.set_tag(tracker.parent_id, "mlflow.runName", "targeted: old")
    client.set_tag(tracker.round_run(0), "mlflow.runName", "targeted round 0")
    again = CampaignTracker(uri, "old")
    again.round_run(0)
    assert view_state_of(client.get_experiment(tracker.experiment_id).tags[VIEW_TAG]) == runs_view_state()
    names = sorted(r.info.run_name for r in client.search_runs([tracker.experiment_id]))
    assert names == ["targeted old", "targeted old round 0"]


def test_ending_a_stopped_campaign_kills_its_running_runs_and_creates_nothing(gymloop_home):
    from flows.tracking import end_running_runs

    uri = load_settings().resolved_mlflow_uri()
    assert end_running_runs(uri, "never") == []
    assert MlflowClient(uri).get_experiment_by_name("gymloop/never") is None
    tracker = CampaignTracker(uri, "stopped")
    run_id = tracker.open_round(0)
    CampaignTracker(uri, "stopped", arm="uniform").finish()
    assert sorted(end_running_runs(uri, "stopped")) == sorted([run_id, tracker.parent_id])
    client = MlflowClient(uri)
    assert {client.get_run(r).info.status for r in (run_id, tracker.parent_id)} == {"KILLED"}
    uniform = client.search_runs([tracker.experiment_id], filter_string="tags.arm = 'uniform'")[0]
    assert uniform.info.status == "FINISHED", "a finished run stays finished"


def test_links_follow_the_address_gymloop_mlflow_ui_last_served_on(gymloop_home):
    from flows.round_tracking import run_link, runs_url
    from flows.tracking import UI_ADDRESS_FILE

    settings = load_settings()
    run_id = CampaignTracker(settings.resolved_mlflow_uri(), "linked").round_run(0)
    assert "http://127.0.0.1:5000/#/experiments/" in run_link(settings, "linked", run_id)
    (settings.store.home / UI_ADDRESS_FILE).write_text("http://127.0.0.1:5123\n")
    assert f"http://127.0.0.1:5123/#/experiments/1/runs/{run_id}?workflowType" in run_link(settings, "linked", run_id)
    assert runs_url(settings, "linked").startswith("http://127.0.0.1:5123/#/experiments/1/runs?")


def test_the_ui_page_stores_gymloops_defaults_only_where_the_browser_holds_none(gymloop_home):
    from flows.mlflow_ui import gymloop_views, ui_defaults_script, with_ui_defaults
    from flows.tracking import runs_view_state

    uri = load_settings().resolved_mlflow_uri()
    tracker = CampaignTracker(uri, "shown")
    MlflowClient(uri).create_experiment("someone-elses")
    views = gymloop_views(uri)
    assert views == {tracker.experiment_id: runs_view_state()}
    page = with_ui_defaults('<html><head><script defer src="main.js"></script></head></html>',
                            ui_defaults_script({"1": {"note": "</script><b>"}}))
    assert page.index("mlflow.workflowType_v1") < page.index('src="main.js"'), "before the UI reads local storage"
    assert "</script><b>" not in page and page.count("</script>") == 2
    assert "if (store.getItem(key) === null)" in page, "a value the browser holds is kept"

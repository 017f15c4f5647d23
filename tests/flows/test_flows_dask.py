from conftest import SMALL

from flows.models import CampaignParams
from flows.round import _task_runner, campaign
from flows.settings import load_settings
from registry import Registry


def test_dask_task_runner_on_a_local_cluster(prefect_harness, gymloop_home):
    overrides = {**SMALL, "task_runner": "dask", "workers": 2, "wave_budget": 120, "variants_per_round": 0}
    settings = load_settings(**overrides)
    runner = _task_runner(settings)
    assert type(runner).__name__ == "DaskTaskRunner"
    summaries = campaign(CampaignParams(campaign="dask", rounds=1, overrides=overrides))
    registry = Registry(settings.resolved_registry_url())
    rid = summaries[0].round_id
    heldout = len(registry.heldout_suite("procurement")) * settings.eval_k
    assert len(registry.round_episodes(rid, stage="eval_before")) == heldout
    assert len(registry.round_episodes(rid, stage="eval_after")) == heldout
    assert registry.round(rid).status == "finished"
    assert summaries[0].episodes["eval_before"].ran == heldout

"""A model that hides the tasks it would fail behind errors gains nothing in a round either.

Rounds against the scripted OpenAI-compatible server with the hider of ``arena.agents.hider``: errors of the
model's own making are failed episodes (the round's pass rates equal honest play's); errors of the
infrastructure are invalid, shown beside every pass rate, and past ``max_invalid_share`` they fail the round.
"""

from __future__ import annotations

import zlib

import pytest
from mlflow.tracking import MlflowClient

from arena.agents.hider import MODEL_FORMS, GoldPlayer
from arena.agents.scripted_server import ScriptedModelServer
from arena.core.pack import build_pack
from arena.core.task import Task
from flows.campaign import next_round
from flows.models import CampaignParams, RoundSummary
from flows.settings import load_settings
from flows.validity import InvalidEpisodesError

SMALL = {"domains": ["procurement"], "variants_per_round": 0, "wave_budget": 12, "train_k": 2, "eval_k": 1,
         "batch_size": 40, "max_concurrency": 8, "model_timeout_s": 10, "trainer": "export"}
"""A small LLM round: one gym, no variants, a small wave, one attempt per held-out task."""


def _can(task: Task) -> bool:
    return zlib.crc32(task.id.encode()) % 3 != 0


def _round(campaign: str, form: str | None, **more: object) -> tuple[RoundSummary, dict[str, object]]:
    player = GoldPlayer(build_pack("procurement", seed=0), _can, form)
    with ScriptedModelServer(player) as server:
        overrides = {**SMALL, "model": "openai/hider", "api_base": server.base_url + "/v1", "model_client": "openai",
                     **more}
        outcome = next_round(CampaignParams(campaign=campaign, overrides=overrides))
        return outcome.rounds[0], overrides


def _honest_rate() -> float:
    summary, _ = _round("honest", None)
    assert summary.metrics["invalid_episodes"] == 0
    return summary.before


@pytest.mark.parametrize("form", [pytest.param(f, marks=[] if f in ("context_length", "malformed_tool_call")
                                               else [pytest.mark.slow]) for f in MODEL_FORMS])
def test_a_round_counts_the_models_own_errors_as_failed_episodes(prefect_harness, gymloop_home, form):
    honest = _honest_rate()
    summary, overrides = _round(f"hider-{form.replace('_', '-')}", form)
    assert 0.3 < honest < 1.0
    assert summary.before <= honest and summary.after <= honest
    assert summary.metrics["invalid_episodes"] == 0
    assert summary.metrics["heldout_pass_rate_before_invalid_failed"] == pytest.approx(summary.before)
    settings = load_settings(**overrides)
    client = MlflowClient(settings.resolved_mlflow_uri())
    runs = client.search_runs([client.get_experiment_by_name(f"gymloop/hider-{form.replace('_', '-')}").experiment_id])
    logged = [r for r in runs if r.data.tags.get("gymloop_kind") == "round"][0].data.metrics
    assert logged["valid_episodes_before"] == summary.metrics["valid_episodes_before"] > 0
    assert logged["invalid_episodes_before"] == 0


@pytest.mark.slow  # 97 s; a round past the share: test_flows_invalid_share; infrastructure errors: test_hider_eval
def test_infrastructure_errors_past_the_share_fail_the_round_and_below_it_are_shown(prefect_harness, gymloop_home):
    with pytest.raises(InvalidEpisodesError, match=r"eval_before episodes are invalid .* above max_invalid_share "
                                                   r"0.2: model_api/server_error x\d+"):
        _round("hider-infra", "server_error")
    summary, _ = _round("hider-infra-allowed", "server_error", max_invalid_share=0.5)
    honest = _honest_rate()
    assert summary.metrics["invalid_episodes_before"] > 0
    assert summary.metrics["invalid_before/model_api/server_error"] == summary.metrics["invalid_episodes_before"]
    assert summary.before > honest  # left out, hidden failures flatter the rate...
    assert summary.metrics["heldout_pass_rate_before_invalid_failed"] == pytest.approx(honest)  # ...shown beside it

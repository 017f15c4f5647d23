"""What a round shows in the Prefect UI: run names, stage task names, and the round's table and lift artifacts."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from typing import Any

from prefect import tags
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.client.schemas.objects import StateType
from prefect.runtime import flow_run
from prefect.states import Crashed

from flows.control import targeting_line
from flows.models import ArmComparison, RoundSummary
from flows.promotion import promotion_line

STAGE_TASKS = {"eval_before": "held-out-eval", "train": "train-rollouts", "eval_after": "re-eval",
               "transfer_before": "transfer-eval", "transfer_after": "transfer-re-eval"}
"""Task name of each stage's rollout batches, so the run graph says which one is which."""


def _params(parameters: dict[str, Any]) -> tuple[str, Any, str]:
    params = parameters.get("params", {})
    if hasattr(params, "model_dump"):
        params = params.model_dump()
    return str(params.get("campaign", "?")), params.get("round_index"), str(params.get("arm") or "targeted")


def round_run_name() -> str:
    """Name of a round's flow run: ``<campaign>-round-<index>`` (``<campaign>-<arm>-round-<index>`` for a control)."""
    campaign, index, arm = _params(flow_run.parameters)
    return f"{campaign}-round-{index}" if arm == "targeted" else f"{campaign}-{arm}-round-{index}"


def campaign_run_name() -> str:
    """Name of a campaign's (or a triggered next round's) flow run, unique: ``<campaign>-<start>-<run id>``.

    The start is to the second and the flow run's id follows (its first 6 characters), so two triggers in the same
    second are still two names.
    """
    campaign, _, _ = _params(flow_run.parameters)
    started = flow_run.scheduled_start_time
    stamp = f"-{started:%Y%m%d-%H%M%S}" if started else ""
    return f"{campaign}{stamp}-{str(flow_run.id)[:6]}"


def run_tags(campaign: str, arm: str | None = None) -> list[str]:
    """Tags of every flow run of a campaign (and of one arm's rounds)."""
    return ["gymloop", f"campaign:{campaign}", *([f"arm:{arm}"] if arm else [])]


def tagged(campaign: str) -> AbstractContextManager[set[str]]:
    """Tag every flow and task run started inside with the campaign's tags (the parent flow runs too)."""
    return tags(*run_tags(campaign))


def artifact_key(campaign: str, suffix: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes)."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{campaign}-{suffix}".lower()).strip("-")[:100]


def rate(value: float) -> str:
    """A pass rate as every gymloop surface prints it: 3 decimals."""
    return f"{value:.3f}"


def signed(value: float) -> str:
    """A lift as every gymloop surface prints it: signed, 3 decimals."""
    return f"{value:+.3f}"


def interval(low: float, high: float) -> str:
    """A 95% interval as every gymloop surface prints it: ``[+0.012, +0.074]``."""
    return f"[{signed(low)}, {signed(high)}]"


def round_rows(summary: RoundSummary) -> list[dict[str, Any]]:
    """The round's table: one row per measure, as the Prefect UI shows it (pass rates 3 decimals, lifts signed)."""
    s = summary
    rows: list[dict[str, Any]] = [
        {"measure": "round", "value": str(s.round_index)},
        {"measure": "model in", "value": s.model_in},
        {"measure": "model out", "value": s.model_out},
        {"measure": "held-out pass rate before", "value": rate(s.before)},
        {"measure": "held-out pass rate after", "value": rate(s.after)},
        {"measure": "lift", "value": signed(s.lift)},
        {"measure": "lift 95% interval", "value": interval(s.lift_low, s.lift_high)},
        *({"measure": f"held-out tasks {way}", "value": f"{count} of {f.tasks}"}
          for f in ([s.flips] if s.flips is not None else [])
          for way, count in (("pass->fail", f.pass_to_fail), ("fail->pass", f.fail_to_pass))),
        {"measure": "promotion", "value": promotion_line(s.promotion)},
        {"measure": "top weaknesses", "value": ", ".join(s.weaknesses[:3])},
        {"measure": "variants added", "value": str(s.variants)},
        {"measure": "wave size", "value": str(s.wave_size)},
    ]
    for stage, result in s.episodes.items():
        rows.append({"measure": f"episodes {STAGE_TASKS.get(stage, stage)}",
                     "value": f"{result.planned} planned, {result.ran} ran, {result.reused} reused"})
    return rows


def publish_round(summary: RoundSummary, mlflow_run: str) -> None:
    """Create the round's table artifact and its lift as a Markdown artifact in the current flow run.

    Args:
        summary: The round.
        mlflow_run: Markdown pointing at the round's MLflow run (a link when the tracking server is HTTP).
    """
    s = summary
    arm = "" if s.arm == "targeted" else f"{s.arm}-"
    where = "" if not arm else f" ({s.arm} arm)"
    create_table_artifact(round_rows(s), key=artifact_key(s.campaign, f"{arm}round-{s.round_index}"),
                          description=f"gymloop campaign {s.campaign}, round {s.round_index}{where}")
    create_markdown_artifact(
        f"### {s.campaign}{where} round {s.round_index}: lift {signed(s.lift)} "
        f"(95% interval {interval(s.lift_low, s.lift_high)})\n\n"
        f"Held-out pass rate {rate(s.before)} -> {rate(s.after)}; model `{s.model_in}` -> `{s.model_out}`"
        f"{'' if s.promotion.promoted else f' (not promoted: {s.promotion.reason})'}.\n\n"
        f"{mlflow_run}.",
        key=artifact_key(s.campaign, f"{arm}lift"),
        description=f"gymloop campaign {s.campaign}{where}: latest round's lift",
    )


def publish_targeting(campaign: str, comparison: ArmComparison, runs_view: str) -> None:
    """Create the campaign's answer to "did targeting pay" as a Markdown artifact in the current flow run.

    Args:
        campaign: The campaign.
        comparison: The targeted arm against a control after a round (``flows.control.compare_round``).
        runs_view: Where the campaign's runs view is in MLflow.
    """
    c = comparison
    create_markdown_artifact(
        f"### {campaign}: targeting lift {signed(c.lift)} (95% paired interval {interval(c.low, c.high)})\n\n"
        f"{targeting_line(c)}.\n\nBoth arms, round by round, in MLflow: {runs_view}",
        key=artifact_key(campaign, f"targeting-{c.control}"),
        description=f"gymloop campaign {campaign}: did targeting pay (targeted minus {c.control} control)",
    )


def crash_stale_runs(run_ids: list[str], resumed_by: str) -> list[str]:
    """Mark Crashed the flow runs of a killed process that Prefect still shows running; return their ids.

    A round resumed after its process was killed knows the flow runs it was run by (kept with the round in the
    registry); those still ``RUNNING`` or ``PENDING`` have no process left to finish them.
    """
    if not run_ids:
        return []
    crashed = []
    with get_client(sync_client=True) as client:
        for run in client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=run_ids))):
            if run.state_type in (StateType.RUNNING, StateType.PENDING):
                client.set_flow_run_state(run.id, Crashed(message=f"the process running it was killed; {resumed_by}"),
                                          force=True)
                crashed.append(str(run.id))
    return crashed

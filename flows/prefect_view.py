"""What a round shows in the Prefect UI: run names, stage task names, and the round's table and lift artifacts."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from typing import Any

from flows.models import RoundSummary

STAGE_TASKS = {"eval_before": "held-out-eval", "train": "train-rollouts", "eval_after": "re-eval"}
"""Task name of each stage's rollout batches, so the run graph says which one is which."""


def _params(parameters: dict[str, Any]) -> tuple[str, Any, str]:
    params = parameters.get("params", {})
    if hasattr(params, "model_dump"):
        params = params.model_dump()
    return str(params.get("campaign", "?")), params.get("round_index"), str(params.get("arm") or "targeted")


def round_run_name() -> str:
    """Name of a round's flow run: ``<campaign>-round-<index>`` (``<campaign>-<arm>-round-<index>`` for a control)."""
    from prefect.runtime import flow_run

    campaign, index, arm = _params(flow_run.parameters)
    return f"{campaign}-round-{index}" if arm == "targeted" else f"{campaign}-{arm}-round-{index}"


def campaign_run_name() -> str:
    """Name of a campaign's (or a triggered next round's) flow run: ``<campaign>``, stamped with its start."""
    from prefect.runtime import flow_run

    campaign, _, _ = _params(flow_run.parameters)
    started = flow_run.scheduled_start_time
    return f"{campaign}-{started:%Y%m%d-%H%M}" if started else campaign


def run_tags(campaign: str, arm: str | None = None) -> list[str]:
    """Tags of every flow run of a campaign (and of one arm's rounds)."""
    return ["gymloop", f"campaign:{campaign}", *([f"arm:{arm}"] if arm else [])]


def tagged(campaign: str) -> AbstractContextManager[set[str]]:
    """Tag every flow and task run started inside with the campaign's tags (the parent flow runs too)."""
    from prefect import tags

    return tags(*run_tags(campaign))


def artifact_key(campaign: str, suffix: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes)."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{campaign}-{suffix}".lower()).strip("-")[:100]


def round_rows(summary: RoundSummary) -> list[dict[str, Any]]:
    """The round's table: one row per measure, as the Prefect UI shows it."""
    s = summary
    rows: list[dict[str, Any]] = [
        {"measure": "round", "value": s.round_index},
        {"measure": "model in", "value": s.model_in},
        {"measure": "model out", "value": s.model_out},
        {"measure": "held-out pass rate before", "value": round(s.before, 4)},
        {"measure": "held-out pass rate after", "value": round(s.after, 4)},
        {"measure": "lift", "value": round(s.lift, 4)},
        {"measure": "lift 95% interval", "value": f"[{s.lift_low:+.3f}, {s.lift_high:+.3f}]"},
        {"measure": "top weaknesses", "value": ", ".join(s.weaknesses[:3])},
        {"measure": "variants added", "value": s.variants},
        {"measure": "wave size", "value": s.wave_size},
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
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    s = summary
    arm = "" if s.arm == "targeted" else f"{s.arm}-"
    where = "" if not arm else f" ({s.arm} arm)"
    create_table_artifact(round_rows(s), key=artifact_key(s.campaign, f"{arm}round-{s.round_index}"),
                          description=f"gymloop campaign {s.campaign}, round {s.round_index}{where}")
    create_markdown_artifact(
        f"### {s.campaign} round {s.round_index}: lift {s.lift:+.3f} "
        f"(95% interval [{s.lift_low:+.3f}, {s.lift_high:+.3f}])\n\n"
        f"Held-out pass rate {s.before:.3f} -> {s.after:.3f}; model `{s.model_in}` -> `{s.model_out}`.\n\n"
        f"{mlflow_run}.",
        key=artifact_key(s.campaign, f"{arm}lift"),
        description=f"gymloop campaign {s.campaign}{where}: latest round's lift",
    )


def crash_stale_runs(run_ids: list[str], resumed_by: str) -> list[str]:
    """Mark Crashed the flow runs of a killed process that Prefect still shows running; return their ids.

    A round resumed after its process was killed knows the flow runs it was run by (kept with the round in the
    registry); those still ``RUNNING`` or ``PENDING`` have no process left to finish them.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

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

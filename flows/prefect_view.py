"""What a round shows in the Prefect UI: run names, stage task names, and the round's table and lift artifacts."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from typing import Any

from flows.models import RoundSummary

STAGE_TASKS = {"eval_before": "held-out-eval", "train": "train-rollouts", "eval_after": "re-eval"}
"""Task name of each stage's rollout batches, so the run graph says which one is which."""


def _params(parameters: dict[str, Any]) -> tuple[str, Any]:
    params = parameters.get("params", {})
    if hasattr(params, "model_dump"):
        params = params.model_dump()
    return str(params.get("campaign", "?")), params.get("round_index")


def round_run_name() -> str:
    """Name of a round's flow run: ``<campaign>-round-<index>``."""
    from prefect.runtime import flow_run

    campaign, index = _params(flow_run.parameters)
    return f"{campaign}-round-{index}"


def campaign_run_name() -> str:
    """Name of a campaign's (or a triggered next round's) flow run: ``<campaign>``, stamped with its start."""
    from prefect.runtime import flow_run

    campaign, _ = _params(flow_run.parameters)
    started = flow_run.scheduled_start_time
    return f"{campaign}-{started:%Y%m%d-%H%M}" if started else campaign


def run_tags(campaign: str) -> list[str]:
    """Tags of every flow run of a campaign."""
    return ["gymloop", f"campaign:{campaign}"]


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
    create_table_artifact(round_rows(s), key=artifact_key(s.campaign, f"round-{s.round_index}"),
                          description=f"gymloop campaign {s.campaign}, round {s.round_index}")
    create_markdown_artifact(
        f"### {s.campaign} round {s.round_index}: lift {s.lift:+.3f} "
        f"(95% interval [{s.lift_low:+.3f}, {s.lift_high:+.3f}])\n\n"
        f"Held-out pass rate {s.before:.3f} -> {s.after:.3f}; model `{s.model_in}` -> `{s.model_out}`.\n\n"
        f"{mlflow_run}.",
        key=artifact_key(s.campaign, "lift"), description=f"gymloop campaign {s.campaign}: latest round's lift",
    )

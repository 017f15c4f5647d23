"""MLflow tracking: one experiment per campaign, a parent run per campaign, a nested run per round."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows._offline import apply_offline_defaults

apply_offline_defaults()

from mlflow.entities import Metric, Param  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

_SECRET = re.compile(r"key|token|secret|password", re.IGNORECASE)
_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_key(name: str) -> str:
    """Make a string safe as an MLflow metric or parameter key."""
    return _KEY.sub("_", name)[:250]


def scrub(params: Mapping[str, Any]) -> dict[str, str]:
    """Stringify parameters for MLflow, dropping anything that looks like a secret."""
    out = {}
    for key, value in params.items():
        if _SECRET.search(key) and not key.endswith("_set"):
            continue
        text = str(value)
        out[metric_key(key)] = text if len(text) <= 6000 else text[:5997] + "..."
    return out


class CampaignTracker:
    """Records a campaign in MLflow.

    Args:
        uri: MLflow tracking URI.
        campaign: Campaign name; the experiment is ``gymloop/<campaign>``.
        artifact_root: Folder for artifacts (defaults next to a SQLite store).
        arm: The campaign's arm (``targeted`` or a control); each arm has its own parent run, tagged ``arm``,
            in the same experiment, so both arms' metrics (same names) compare side by side.
    """

    def __init__(self, uri: str, campaign: str, artifact_root: Path | None = None, arm: str = "targeted") -> None:
        self.client = MlflowClient(tracking_uri=uri)
        self.uri = uri
        self.experiment_name = f"gymloop/{campaign}"
        existing = self.client.get_experiment_by_name(self.experiment_name)
        if existing is not None:
            self.experiment_id = existing.experiment_id
        else:
            location = artifact_root.resolve().as_uri() if artifact_root else None
            self.experiment_id = self.client.create_experiment(self.experiment_name, artifact_location=location)
        self.arm = arm
        self.parent_id = self._parent_run(campaign)

    def _parent_run(self, campaign: str) -> str:
        runs = self.client.search_runs(
            [self.experiment_id], filter_string=f"tags.gymloop_kind = 'campaign' and tags.arm = '{self.arm}'",
            max_results=1,
        )
        if runs:
            run_id: str = runs[0].info.run_id
            return run_id
        name = campaign if self.arm == "targeted" else f"{campaign} ({self.arm})"
        run = self.client.create_run(self.experiment_id, run_name=name,
                                     tags={"gymloop_kind": "campaign", "arm": self.arm})
        return str(run.info.run_id)

    def log_campaign_params(self, params: Mapping[str, Any]) -> None:
        """Log the campaign's settings on the parent run (secrets removed)."""
        self.client.log_batch(self.parent_id, params=[Param(k, v) for k, v in scrub(params).items()])

    def round_run(self, index: int) -> str:
        """Return the nested run of round ``index``, creating it on first use."""
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.gymloop_kind = 'round' and tags.gymloop_round = '{index}' "
            f"and tags.mlflow.parentRunId = '{self.parent_id}'",
            max_results=1,
        )
        if runs:
            return str(runs[0].info.run_id)
        run = self.client.create_run(
            self.experiment_id, run_name=f"round-{index}" if self.arm == "targeted" else f"round-{index} ({self.arm})",
            tags={"gymloop_kind": "round", "gymloop_round": str(index), "mlflow.parentRunId": self.parent_id,
                  "arm": self.arm},
        )
        return str(run.info.run_id)

    def log_round(self, index: int, params: Mapping[str, Any], metrics: Mapping[str, float],
                  artifacts: list[Path]) -> str:
        """Log a finished round: params, metrics (step = round index) and artifacts on its nested run."""
        run_id = self.round_run(index)
        now = int(time.time() * 1000)
        points = [Metric(metric_key(k), float(v), now, index) for k, v in metrics.items()]
        self.client.log_batch(run_id, metrics=points, params=[Param(k, v) for k, v in scrub(params).items()])
        self.client.log_batch(self.parent_id, metrics=points)
        for path in artifacts:
            self.client.log_artifact(run_id, str(path))
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_campaign_artifacts(self, artifacts: list[Path]) -> None:
        """Attach campaign-level artifacts (plots) to the parent run."""
        for path in artifacts:
            self.client.log_artifact(self.parent_id, str(path))

    def finish(self, status: str = "FINISHED") -> None:
        """Close the campaign's parent run."""
        self.client.set_terminated(self.parent_id, status)

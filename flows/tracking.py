"""MLflow tracking: one experiment per campaign, a parent run per campaign, a nested run per round.

A round's run opens when the round starts (so its duration is the round's) and closes when it is recorded;
the parent run is running while a round runs and finished between rounds. Every write is idempotent:
a round recorded twice (a re-trigger, a resume) logs its metrics, inputs and model version once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from arena.core.redact import mask_url, url_secrets
from arena.core.text import clip
from flows._offline import apply_offline_defaults

apply_offline_defaults()

from mlflow.entities import DatasetInput, InputTag, LoggedModelInput, LoggedModelOutput, Metric, Param  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

_SECRET = re.compile(r"key|token|secret|password", re.IGNORECASE)
_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")

SHORT_NAMES = {"heldout_pass_rate_before": "before", "heldout_pass_rate_after": "after"}
"""A round's held-out pass rates under the short names MLflow shows (a narrow column keeps its header whole)."""

HEADLINE = ("round", "before", "after", "lift", "lift_low", "lift_high", "tgt_lift", "tgt_low", "tgt_high",
            "best_round")
"""The metrics of the campaign's runs view, in column order. A round's row: its index, held-out pass rate before and
after it, its lift with the 95% interval, and (targeted arm) the targeting lift against the control after it with
its paired interval. An arm's row, the campaign so far: the pass rate before its first round and after its last,
the campaign's lift and interval, the targeting lift after the last round both arms finished, and the best round.
Further measures add a name here (a column of about 80 pixels) or a second saved view."""

COLUMN_WIDTHS = {"round": 72, "before": 76, "after": 76, "lift": 76, "lift_low": 84, "lift_high": 88, "tgt_lift": 80,
                 "tgt_low": 80, "tgt_high": 84, "best_round": 100}
"""Pixels per column of the runs view: each header whole, every column of a 1600-pixel window in view."""

RUN_NAME_WIDTH = 340
"""Pixels of the runs view's name column (``targeted <campaign> round <n>`` whole)."""

DECIMALS = 3
"""Decimals of the values gymloop logs to MLflow (the registry keeps the exact ones)."""

FINER = {"cost_usd": 6}
"""Metrics logged with more decimals than ``DECIMALS`` (a cent's fraction is a real cost)."""

RUNS_VIEW_KEY = "gymloop"
"""Key of the experiment's saved runs view (the experiment tag ``mlflow.sharedViewState.gymloop``)."""

VIEW_TAG = f"mlflow.sharedViewState.{RUNS_VIEW_KEY}"
"""The experiment tag holding gymloop's saved runs view, listed under "Views" in MLflow's runs page."""

UI_ADDRESS = "http://127.0.0.1:5000"
"""Where ``gymloop mlflow-ui`` serves a local store by default."""

UI_ADDRESS_FILE = "mlflow-ui.address"
"""File in the gymloop home where ``gymloop mlflow-ui`` records the address it serves on (links follow it)."""


def local_ui_address(home: Path) -> str:
    """Where ``gymloop mlflow-ui`` last served the home's store (``UI_ADDRESS`` when it never ran)."""
    recorded = home / UI_ADDRESS_FILE
    text = recorded.read_text(encoding="utf-8").strip() if recorded.is_file() else ""
    return text if text.startswith(("http://", "https://")) else UI_ADDRESS

EXPERIMENT_NOTE = (
    "gymloop campaign {campaign}. One row per run, runs sorted by name: each arm's run (`targeted {campaign}`, "
    "`uniform {campaign}` for a control) and its rounds (`targeted {campaign} round 0`, ...).\n\n"
    "- A round's row: `round`, the held-out pass rate `before` and `after` the round, its `lift` with the 95% "
    "interval (`lift_low`, `lift_high`, paired bootstrap over the held-out tasks); on the targeted arm, `tgt_lift`: "
    "targeted minus control pass rate after the round, with its paired interval (`tgt_low`, `tgt_high`).\n"
    "- An arm's row, the campaign so far: `before` its first round, `after` its last, the campaign's `lift` with "
    "its interval, the targeting lift after the last round both arms finished, and the `best_round`.\n\n"
    "Values are rounded to 3 decimals; `gymloop report {campaign}` has the rest.")
"""The experiment's description (shown above its runs): how to read the rows and columns."""


def _column(group: str, name: str) -> str:
    return f"{group}.`{name}`"


def runs_view_state() -> dict[str, Any]:
    """The runs view gymloop stores on each campaign's experiment: its columns, their widths, rows by name."""
    columns = [_column("metrics", key) for key in HEADLINE]
    widths = {_column("metrics", key): width for key, width in COLUMN_WIDTHS.items()}
    return {"selectedColumns": columns, "columnOrder": [_column("attributes", "Run Name"), *columns],
            "columnWidths": {_column("attributes", "Run Name"): RUN_NAME_WIDTH, **widths},
            "orderByKey": "tags.`mlflow.runName`", "orderByAsc": True}


def saved_view(state: dict[str, Any], now_ms: int) -> str:
    """A runs view as MLflow's UI saves one on an experiment (its name, times and state), so "Views" lists it."""
    return json.dumps({"name": RUNS_VIEW_KEY, "createdAt": now_ms, "updatedAt": now_ms,
                       "state": json.dumps(state, sort_keys=True)}, sort_keys=True)


def view_state_of(tag_value: str | None) -> dict[str, Any] | None:
    """The state of a saved runs view (``None`` when the tag is missing or not a saved view)."""
    if not tag_value:
        return None
    try:
        envelope = json.loads(tag_value)
        state = json.loads(envelope["state"]) if isinstance(envelope, dict) and "state" in envelope else envelope
    except (ValueError, TypeError, KeyError):
        return None
    return state if isinstance(state, dict) else None


def runs_view_url(ui_address: str, experiment_id: str) -> str:
    """The runs table of an experiment in the MLflow UI, in gymloop's view.

    MLflow 3.17 opens an experiment on the workflow its UI last chose in the browser (GenAI by default), whatever
    the experiment's tags say: ``workflowType=machine_learning`` picks the training runs, and
    ``viewStateShareKey`` loads the view gymloop saved on the experiment (``gymloop mlflow-ui`` also makes both
    the default, see ``flows.mlflow_ui``).
    """
    return (f"{ui_address.rstrip('/')}/#/experiments/{experiment_id}/runs"
            f"?workflowType=machine_learning&viewStateShareKey={RUNS_VIEW_KEY}")


def run_url(ui_address: str, experiment_id: str, run_id: str) -> str:
    """A run's page in the MLflow UI (training view)."""
    return f"{ui_address.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning"


def arm_run_name(campaign: str, arm: str) -> str:
    """An arm's run: ``<arm> <campaign>``, sorted before its rounds and beside the same arm of other campaigns."""
    return f"{arm} {campaign}"


def round_run_name(campaign: str, index: int, arm: str) -> str:
    """A round's run: ``<arm> <campaign> round <index>`` (its arm's name, then the round)."""
    return f"{arm} {campaign} round {index}"


def arm_description(campaign: str, arm: str) -> str:
    """The arm run's description (shown on its page)."""
    if arm == "targeted":
        return (f"Targeted arm of gymloop campaign {campaign}: each round trains on waves aimed at the weaknesses "
                "diagnosed on the held-out suite. Its metrics are the campaign's so far: before (held-out pass rate "
                "before the first round), after (after the last), lift with its 95% interval, tgt_lift (targeted "
                "minus control after the last round both arms finished) and best_round.")
    return (f"{arm} control arm of gymloop campaign {campaign}: the same wave budget, starting model and held-out "
            f"suite as the targeted arm, with {arm} waves; tgt_lift on the targeted arm measures what targeting "
            "adds. Its metrics are the campaign's so far (before, after, lift with its interval, best_round).")


def mlflow_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """A round's metrics under the names MLflow shows (short names for the headline pass rates)."""
    return {metric_key(SHORT_NAMES.get(key, key)): float(value) for key, value in metrics.items()}


class TrackingUnavailable(RuntimeError):
    """The MLflow tracking server cannot be reached or refuses gymloop; the message names the URI and the setting."""


def metric_key(name: str) -> str:
    """Make a string safe as an MLflow metric or parameter key."""
    return _KEY.sub("_", name)[:250]


def scrub(params: Mapping[str, Any]) -> dict[str, str]:
    """Stringify parameters for MLflow, dropping secrets and unset (``None``) values."""
    out = {}
    for key, value in params.items():
        if value is None or (_SECRET.search(key) and not key.endswith("_set")):
            continue
        text = str(value)
        out[metric_key(key)] = text if len(text) <= 6000 else clip(text, 5960)
    return out


def check_reachable(uri: str, timeout_s: float = 5.0) -> None:
    """Fail fast when an HTTP tracking server does not answer or refuses gymloop (local stores need no check).

    Raises:
        TrackingUnavailable: The server did not answer its health check within ``timeout_s``, or refused the
            credentials of ``uri`` (HTTP 401 or 403 to a search).
    """
    if not uri.startswith(("http://", "https://")):
        return

    shown = mask_url(uri)
    try:
        response = httpx.get(f"{uri.rstrip('/')}/health", timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise TrackingUnavailable(f"MLflow tracking server {shown} (setting mlflow_uri) is unreachable: "
                                  f"{type(exc).__name__}: {exc or 'no answer'}") from exc
    if response.status_code != 200:
        raise TrackingUnavailable(f"MLflow tracking server {shown} (setting mlflow_uri) answered its health check "
                                  f"with HTTP {response.status_code}")
    try:  # the health check needs no credentials; a search does (MLflow's basic-auth app, a proxy)
        response = httpx.get(f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search", params={"max_results": 1},
                             timeout=max(timeout_s, 30.0))  # a busy server's first search can take seconds
    except httpx.HTTPError as exc:
        raise TrackingUnavailable(f"MLflow tracking server {shown} (setting mlflow_uri) did not answer a search: "
                                  f"{type(exc).__name__}: {exc or 'no answer'}") from exc
    if response.status_code in (401, 403):
        given = "its user and password in mlflow_uri were" if "@" in urlsplit(uri).netloc else "no credentials were"
        raise TrackingUnavailable(f"MLflow tracking server {shown} (setting mlflow_uri) answered HTTP "
                                  f"{response.status_code}: {given} refused (give them as http://user:password@host)")


def quiet_run_links(uri: str) -> None:
    """Keep MLflow from printing its run links (``View run ... at: <uri>/#/...``) when ``uri`` holds a secret.

    MLflow writes those lines on stdout with the tracking URI as given, userinfo and query included, when a run
    ends; gymloop shows its runs with the URI masked instead.
    """
    if url_secrets(uri):
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"


@cache
def source_tags() -> dict[str, str]:
    """Where the runs come from: gymloop's version and, in a git checkout, its commit."""
    try:
        gymloop_version = version("gymloop")
    except PackageNotFoundError:
        gymloop_version = "unknown"
    tags = {"mlflow.source.name": "gymloop", "mlflow.source.type": "JOB", "gymloop.version": gymloop_version}
    root = Path(__file__).resolve().parents[1]
    if (root / ".git").exists():
        try:
            done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                  timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0:
            tags["mlflow.source.git.commit"] = done.stdout.strip()
    return tags


class CampaignTracker:
    """Records a campaign in MLflow.

    Args:
        uri: MLflow tracking URI.
        campaign: Campaign name; the experiment is ``gymloop/<campaign>``.
        artifact_root: Folder for artifacts of a local store. A tracking server keeps its own artifact store,
            so teammates can open the plots and reports.
        arm: The campaign's arm (``targeted`` or a control); each arm has its own run, tagged ``arm``, with its
            rounds nested in it, all in the campaign's experiment, so both arms' metrics (same names) compare
            side by side.
    """

    def __init__(self, uri: str, campaign: str, artifact_root: Path | None = None, arm: str = "targeted") -> None:
        quiet_run_links(uri)
        self.client = MlflowClient(tracking_uri=uri)
        self.uri = uri
        self.campaign = campaign
        self.experiment_name = f"gymloop/{campaign}"
        now = int(time.time() * 1000)
        existing = self.client.get_experiment_by_name(self.experiment_name)
        if existing is not None:
            self.experiment_id = existing.experiment_id
            if view_state_of(existing.tags.get(VIEW_TAG)) != runs_view_state():
                self.client.set_experiment_tag(self.experiment_id, VIEW_TAG, saved_view(runs_view_state(), now))
        else:
            remote = uri.startswith(("http://", "https://"))
            location = artifact_root.resolve().as_uri() if artifact_root and not remote else None
            self.experiment_id = self.client.create_experiment(
                self.experiment_name, artifact_location=location,
                tags={"mlflow.note.content": EXPERIMENT_NOTE.format(campaign=campaign),
                      "gymloop_campaign": campaign, "mlflow.experimentKind": "custom_model_development",
                      VIEW_TAG: saved_view(runs_view_state(), now)},
            )
        self.arm = arm
        self.parent_id = self._parent_run(campaign)

    def _parent_run(self, campaign: str) -> str:
        runs = self.client.search_runs(
            [self.experiment_id], filter_string=f"tags.gymloop_kind = 'campaign' and tags.arm = '{self.arm}'",
            max_results=1,
        )
        name = arm_run_name(campaign, self.arm)
        if runs:
            found = runs[0]
            if found.info.run_name != name:  # a run named by an older gymloop
                self.client.set_tag(found.info.run_id, "mlflow.runName", name)
            return str(found.info.run_id)
        run = self.client.create_run(self.experiment_id, run_name=name,
                                     tags={"gymloop_kind": "campaign", "gymloop_campaign": campaign, "arm": self.arm,
                                           "mlflow.note.content": arm_description(campaign, self.arm),
                                           **source_tags()})
        return str(run.info.run_id)

    def runs_url(self, ui_address: str | None = None) -> str:
        """The campaign's runs view: on the tracking server, or at ``ui_address`` for a local store."""
        return runs_view_url(self.ui_address(ui_address), self.experiment_id)

    def ui_address(self, local: str | None = None) -> str:
        """Where the MLflow UI of this store is: the tracking server, or ``gymloop mlflow-ui``'s address."""
        if self.uri.startswith(("http://", "https://")):

            return mask_url(self.uri)
        return local or UI_ADDRESS

    def log_campaign_params(self, params: Mapping[str, Any]) -> None:
        """Log the campaign's settings on the arm's run (secrets and unset settings left out; logged once)."""
        logged = self.client.get_run(self.parent_id).data.params
        fresh = [Param(k, v) for k, v in scrub(params).items() if k not in logged]
        if fresh:
            self.client.log_batch(self.parent_id, params=fresh)

    def _find_round(self, index: int) -> Any:
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.gymloop_kind = 'round' and tags.gymloop_round = '{index}' "
            f"and tags.mlflow.parentRunId = '{self.parent_id}'",
            max_results=1,
        )
        return runs[0] if runs else None

    def round_run(self, index: int) -> str:
        """Return the nested run of round ``index``, opening it (now) on first use."""
        name = round_run_name(self.campaign, index, self.arm)
        found = self._find_round(index)
        if found is not None:
            if found.info.run_name != name:  # a run named by an older gymloop
                self.client.set_tag(found.info.run_id, "mlflow.runName", name)
            return str(found.info.run_id)
        run = self.client.create_run(
            self.experiment_id, run_name=name,
            tags={"gymloop_kind": "round", "gymloop_round": str(index), "gymloop_campaign": self.campaign,
                  "mlflow.parentRunId": self.parent_id, "arm": self.arm, **source_tags()},
        )
        return str(run.info.run_id)

    def open_round(self, index: int) -> str:
        """Open round ``index``'s run when the round starts and mark the arm's run as running."""
        run_id = self.round_run(index)
        self.client.update_run(self.parent_id, status="RUNNING")
        return run_id

    def _has_step(self, run_id: str, key: str, step: int) -> bool:
        return any(m.step == step for m in self.client.get_metric_history(run_id, key))

    def _log_once(self, run_id: str, metrics: Mapping[str, float], step: int) -> None:
        """Log ``metrics`` at ``step`` on a run, each one not yet logged at that step (rounded, headline first)."""
        points = [p for p in _ordered_metrics(metrics, step) if not self._has_step(run_id, p.key, step)]
        if points:
            self.client.log_batch(run_id, metrics=points)

    def log_round(self, index: int, params: Mapping[str, Any], metrics: Mapping[str, float],
                  artifacts: list[Path], campaign_metrics: Mapping[str, float] | None = None) -> str:
        """Log a finished round on its nested run once: params, metrics (step = round index), artifacts.

        The round's run gets the round's metrics (``round``, ``before``, ``after``, ``lift``, ... see
        ``HEADLINE``); the arm's run gets the campaign's so far (``campaign_metrics``, same names) at step = round
        index, so its row holds one scope and its charts show the campaign round by round.
        """
        run_id = self.round_run(index)
        if not self._has_step(run_id, "lift", index):
            logged = self.client.get_run(run_id).data.params
            fresh = [Param(k, v) for k, v in scrub(params).items() if k not in logged]
            self.client.log_batch(run_id, metrics=_ordered_metrics({"round": index, **mlflow_metrics(metrics)}, index),
                                  params=fresh)
        self._log_once(self.parent_id, campaign_metrics or {}, index)
        for path in artifacts:
            self.client.log_artifact(run_id, str(path))
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_metrics(self, index: int, round_metrics: Mapping[str, float],
                    campaign_metrics: Mapping[str, float] | None = None) -> None:
        """Add metrics to round ``index``'s run and the arm's run (step = round index), e.g. the targeting lift.

        Args:
            index: The round.
            round_metrics: The round's (logged on its run).
            campaign_metrics: The campaign's so far (logged on the arm's run; default: ``round_metrics``).
        """
        self._log_once(self.round_run(index), round_metrics, index)
        self._log_once(self.parent_id, round_metrics if campaign_metrics is None else campaign_metrics, index)

    def log_datasets(self, run_id: str, datasets: Sequence[tuple[Any, str]]) -> None:
        """Log datasets (``mlflow.data`` datasets with their context, e.g. ``eval``, ``train``) as run inputs."""
        run = self.client.get_run(run_id)
        known = {d.dataset.digest for d in (run.inputs.dataset_inputs if run.inputs else [])}
        inputs = [DatasetInput(dataset._to_mlflow_entity(), [InputTag("mlflow.data.context", context)])
                  for dataset, context in datasets if dataset.digest not in known]
        if inputs:
            self.client.log_inputs(run_id, datasets=inputs)

    def logged_model(self, ref: str, params: Mapping[str, Any], source_run_id: str | None = None,
                     artifact: Path | None = None) -> str:
        """The logged model of a gymloop model reference (with its parameters file), created once; return its id."""
        found = self.client.search_logged_models([self.experiment_id], filter_string=f"name = '{_model_name(ref)}'",
                                                 max_results=1)
        if found:
            return str(found[0].model_id)
        model = self.client.create_logged_model(self.experiment_id, name=_model_name(ref),
                                                source_run_id=source_run_id, params=scrub(params),
                                                tags={"gymloop_model": ref}, model_type="gymloop-agent")
        if artifact is not None and artifact.is_file():
            self.client.log_model_artifact(model.model_id, str(artifact))
        self.client.finalize_logged_model(model.model_id, "READY")
        return str(model.model_id)

    def log_lineage(self, run_id: str, index: int, model_in: str, model_out: str) -> None:
        """Link the round's run to the model it trained from (input) and the model it produced (output)."""
        run = self.client.get_run(run_id)
        if run.inputs and run.inputs.model_inputs and run.outputs and run.outputs.model_outputs:
            return
        self.client.log_inputs(run_id, models=[LoggedModelInput(model_in)])
        self.client.log_outputs(run_id, models=[LoggedModelOutput(model_out, index)])

    def log_parent_model(self, model_id: str, index: int, ref: str) -> None:
        """Show the round's model on the arm's run: an output at step = round index, and its final model."""
        run = self.client.get_run(self.parent_id)
        outputs = run.outputs.model_outputs if run.outputs else []
        if not any(o.model_id == model_id for o in outputs):
            self.client.log_outputs(self.parent_id, models=[LoggedModelOutput(model_id, index)])
        last = max((o.step for o in outputs), default=-1)
        if index >= last:
            self.client.set_tag(self.parent_id, "final_model", ref)

    def set_aliases(self, name: str, scores: Mapping[int, float]) -> tuple[str, str]:
        """Point ``@current`` at the last promoted round's version and ``@best`` at the best one; return both.

        MLflow reserves the alias ``latest`` (``models:/<name>/latest`` already names the newest version), so the
        last round's model, the one the next round trains from, is ``@current``.

        Args:
            name: The registered model.
            scores: Held-out pass rate after each promoted round, by round index (ties go to the later round).
        """
        versions = {int(v.tags.get("gymloop_round", -1)): str(v.version)
                    for v in self.client.search_model_versions(f"name = '{name}'")}
        known = {i: s for i, s in scores.items() if i in versions}
        if not known:
            raise ValueError(f"registered model {name!r} has no version of rounds {sorted(scores)}")
        latest = versions[max(known)]
        best = versions[best_round(known)]
        for alias, number in (("current", latest), ("best", best)):
            self.client.set_registered_model_alias(name, alias, number)
        return latest, best

    def register_version(self, name: str, model_id: str, run_id: str, ref: str, index: int,
                         pass_rates: tuple[float, float], promotion: str = "promoted") -> str:
        """Register the round's model as a version of the campaign's registered model (once); return it.

        The version carries the round's held-out pass rate after it (tag ``heldout_pass_rate``) and its promotion
        (tag ``gymloop_promotion``: ``promoted`` or ``not promoted: <reason>``), and says in its description how
        the round moved the pass rate.
        """
        try:
            self.client.create_registered_model(name, tags={"gymloop_campaign": self.campaign},
                                                description=f"Models trained by gymloop campaign {self.campaign}")
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        for existing in self.client.search_model_versions(f"name = '{name}'"):
            if existing.run_id == run_id:
                return str(existing.version)
        before, after = pass_rates
        model = self.client.get_logged_model(model_id)
        created = self.client.create_model_version(
            name, source=model.artifact_location, run_id=run_id, model_id=model_id,
            tags={"gymloop_model": ref, "gymloop_round": str(index), "heldout_pass_rate": f"{after:.3f}",
                  "gymloop_promotion": promotion},
            description=f"round {index}: held-out pass rate {before:.3f} -> {after:.3f} ({after - before:+.3f}); "
                        f"{promotion}; {ref}",
        )
        return str(created.version)

    def log_campaign_artifacts(self, artifacts: list[Path]) -> None:
        """Attach campaign-level artifacts (plots, report) to the arm's run."""
        for path in artifacts:
            self.client.log_artifact(self.parent_id, str(path))

    def finish(self, metrics: Mapping[str, float] | None = None, step: int = 0, status: str = "FINISHED") -> None:
        """Close the arm's run, logging the campaign's metrics (at ``step``) once."""
        self._log_once(self.parent_id, metrics or {}, step)
        self.client.set_terminated(self.parent_id, status)


def best_round(scores: Mapping[int, float]) -> int:
    """The round whose model did best on the held-out suite (ties go to the later round)."""
    return max(scores, key=lambda i: (scores[i], i))


def end_running_runs(uri: str, campaign: str, status: str = "KILLED") -> list[str]:
    """End the campaign's MLflow runs still ``RUNNING`` (every arm and round) with ``status``; return their ids.

    A round stopped by a signal or a crash leaves no process to finish its runs; nothing is created here.
    """
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(f"gymloop/{campaign}")
    if experiment is None:
        return []
    running = client.search_runs([experiment.experiment_id], filter_string="attributes.status = 'RUNNING'")
    for run in running:
        client.set_terminated(run.info.run_id, status)
    return [str(r.info.run_id) for r in running]


def _model_name(ref: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", ref)[:200]


def _ordered_metrics(metrics: Mapping[str, float], step: int) -> list[Metric]:
    """Metrics rounded, the headline ones first in column order, so MLflow lists them first."""
    now = int(time.time() * 1000)
    keys = [k for k in HEADLINE if k in metrics] + sorted(k for k in metrics if k not in HEADLINE)
    return [Metric(metric_key(k), round(float(metrics[k]), FINER.get(k, DECIMALS)), now, step) for k in keys]

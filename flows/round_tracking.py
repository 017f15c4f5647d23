"""What rounds and campaigns leave in MLflow: the round's run, its inputs, its model, the campaign's close.

``flows.round`` calls three functions: ``open_round`` when a round starts (it checks that the tracking server
answers before any episode runs), ``track_round`` when it is recorded, ``close_campaign`` when a campaign or a
triggered round ends.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from arena.core.redact import redact_text
from curriculum import Wave
from diagnosis import WeaknessReport
from flows import steps
from flows.models import RoundSummary
from flows.report import campaign_summaries, write_plots, write_report
from flows.settings import GymloopSettings
from flows.store_setup import store_setup_lock
from flows.tracking import CampaignTracker, check_reachable
from registry import ModelInfo, Registry


def tracker_for(settings: GymloopSettings, campaign: str) -> CampaignTracker:
    """The campaign's tracker, after checking that an HTTP tracking server answers.

    Raises:
        TrackingUnavailable: The tracking server does not answer.
    """
    from flows.control import tracking_names

    uri = settings.resolved_mlflow_uri()
    check_reachable(uri)
    experiment, arm = tracking_names(campaign, settings.arm)
    with store_setup_lock(uri):
        return CampaignTracker(uri, experiment, settings.home / "mlartifacts", arm=arm)


def open_round(settings: GymloopSettings, campaign: str, index: int) -> str:
    """Open the round's run (it starts now) and log the campaign's settings once; return the run id."""
    tracker = tracker_for(settings, campaign)
    tracker.log_campaign_params(settings.public_dict())
    return tracker.open_round(index)


def _dataset(rows: list[dict[str, Any]], source: Path, name: str) -> Any:
    """An MLflow dataset of ``rows``."""
    import pandas as pd  # type: ignore[import-untyped]
    from mlflow.data.pandas_dataset import from_pandas

    return from_pandas(pd.DataFrame(rows), source=str(source), name=name)


def _suite_dataset(keys: list[Any], domains: dict[str, str], source: Path) -> Any:
    rows = [{"pack_id": k.pack_id, "domain": domains.get(k.pack_id, ""), "task_id": k.task_id, "seed": k.seed,
             "attempt": k.attempt} for k in keys]
    return _dataset(rows, source, "heldout-suite")


def _wave_dataset(wave: Wave, domains: dict[str, str], source: Path, index: int) -> Any:
    rows = [{"pack_id": e.pack_id, "domain": domains.get(e.pack_id, ""), "task_id": e.task_id, "weight": e.weight,
             "source": e.source, "weakness": e.weakness or ""} for e in wave.entries]
    return _dataset(rows, source, f"wave-round-{index}")


def _model_params(info: ModelInfo, registry: Registry) -> dict[str, Any]:
    parent = steps.model_ref(registry.model(info.parent_id)).ref if info.parent_id is not None else None
    return {"registry_id": info.id, "kind": info.kind, "version": info.version, "params_hash": info.params_hash,
            "endpoint": info.endpoint, "parent": parent}


def track_round(settings: GymloopSettings, registry: Registry, summary: RoundSummary, report: WeaknessReport,
                variant_ids: list[str], model_in: ModelInfo, model_out: ModelInfo) -> str:
    """Log a recorded round: params, metrics, plots, datasets, and the model lineage with a registered version."""
    campaign, index = summary.campaign, summary.round_index
    folder = steps.round_dir(settings, campaign, index)
    tracker = tracker_for(settings, campaign)
    wave = Wave.model_validate_json((folder / "wave.json").read_text())
    mix = {s: sum(1 for e in wave.entries if e.source == s) for s in ("targeted", "replay", "explore")}
    round_params = {
        "model_in": summary.model_in, "model_out": summary.model_out, "strategy": wave.strategy,
        "wave_mix": mix, "wave_size": len(wave.entries), "targets": summary.weaknesses[:10],
        "eval_seeds": settings.eval_seeds, "seed": settings.seed, "variant_pack_ids": [v[:12] for v in variant_ids],
        "base_pack_ids": [p.id[:12] for p in registry.list_packs() if p.parent is None],
    }
    plots = write_plots(folder.parent, campaign, campaign_summaries(folder.parent, up_to=index), folder)
    suite = steps.heldout_keys(steps.base_packs(registry, settings), settings)
    suite_path = steps.write_json(folder / "heldout_suite.json",
                                  [[k.pack_id, k.task_id, k.seed, k.attempt] for k in suite])
    artifacts = [folder / "weakness_report.json", folder / "weakness_report.md", folder / "wave.json", suite_path,
                 *plots]
    run_id = tracker.log_round(index, round_params, summary.metrics, artifacts,
                               campaign_metrics=_campaign_metrics(registry, campaign, settings.seed))
    domains = {p.id: p.domain for p in registry.list_packs()}
    with warnings.catch_warnings():
        # MLflow hints that integer columns cannot hold missing values (ours never miss one) and that a local
        # path may be read as two kinds of source (both local artifacts): neither concerns the user.
        warnings.filterwarnings("ignore", message="(Hint: Inferred schema|The specified dataset source)",
                                category=UserWarning)
        tracker.log_datasets(run_id, [(_suite_dataset(suite, domains, suite_path), "eval"),
                                      (_wave_dataset(wave, domains, folder / "wave.json", index), "train")])
    in_id = tracker.logged_model(summary.model_in, _model_params(model_in, registry))
    out_id = tracker.logged_model(summary.model_out, _model_params(model_out, registry), source_run_id=run_id,
                                  artifact=Path(model_out.artifact) if model_out.artifact else None)
    tracker.log_lineage(run_id, index, in_id, out_id)
    tracker.register_version(f"gymloop-{campaign}", out_id, run_id, summary.model_out, index)
    tracker.log_parent_model(out_id, index, summary.model_out)
    scores = {s.round_index: s.after for s in campaign_summaries(folder.parent, up_to=index)}
    tracker.set_aliases(f"gymloop-{campaign}", scores)
    tracker.log_campaign_artifacts(plots)
    return run_id


def _campaign_metrics(registry: Registry, campaign: str, seed: int) -> dict[str, float]:
    """The campaign's lift so far (before its first round, after its last finished one), as MLflow metrics."""
    before, after, lift, low, high = steps.campaign_lift(registry, campaign, seed)
    return {"campaign_lift": lift, "campaign_lift_low": low, "campaign_lift_high": high,
            "campaign_pass_rate_before": before, "campaign_pass_rate_after": after}


def run_link(settings: GymloopSettings, campaign: str, run_id: str) -> str:
    """Markdown pointing at a round's MLflow run: a link on a tracking server, else where the local store is."""
    from arena.core.redact import mask_url
    from flows.tracking import run_url

    tracker = tracker_for(settings, campaign)
    if tracker.uri.startswith(("http://", "https://")):
        return f"[MLflow run {run_id[:8]}]({run_url(tracker.ui_address(), tracker.experiment_id, run_id)})"
    return (f"MLflow run `{run_id}` in `{mask_url(tracker.uri)}` (open it with `gymloop mlflow-ui`: "
            f"{run_url(tracker.ui_address(), tracker.experiment_id, run_id)})")


def runs_url(settings: GymloopSettings, campaign: str, ui_address: str | None = None) -> str:
    """The campaign's runs view in the MLflow UI (both arms' parent runs with their rounds)."""
    return tracker_for(settings, campaign).runs_url(ui_address)


def close_campaign(settings: GymloopSettings, campaign: str) -> Path | None:
    """Finish the campaign's parent run with the campaign's lift, its interval and ``report.md``.

    Returns:
        The report's path, or ``None`` when the campaign has no finished round yet.
    """
    tracker = tracker_for(settings, campaign)
    registry = steps.open_registry(settings)
    try:
        before, after, lift, low, high = steps.campaign_lift(registry, campaign, settings.seed)
    except ValueError:
        tracker.finish()
        return None
    last = max(r.index for r in registry.rounds(registry.campaign(campaign).id) if r.status == "finished")
    headline = campaign_headline(campaign, before, after, lift, low, high)
    folder = settings.home / "campaigns" / campaign
    report = write_report(folder, campaign, headline)
    tracker.log_campaign_artifacts([report, folder / "lift_per_round.png", folder / "weaknesses_by_round.png"])
    tracker.finish(_campaign_metrics(registry, campaign, settings.seed), step=last)
    return report


def campaign_headline(campaign: str, before: float, after: float, lift: float, low: float, high: float) -> str:
    """One line stating a campaign's held-out lift with its interval."""
    return (f"campaign {campaign}: held-out pass rate {before:.3f} -> {after:.3f}, lift {lift:+.3f} "
            f"(95% interval [{low:+.3f}, {high:+.3f}], paired over the same held-out tasks)")


def _fail_registry_round(settings: GymloopSettings, campaign: str, index: int, message: str) -> None:
    registry = steps.open_registry(settings)
    for info in registry.rounds(registry.campaign(campaign).id):
        if info.index == index and info.status == "running":
            registry.fail_round(info.id, redact_text(message))


def round_failed(flow: Any, flow_run: Any, state: Any) -> None:
    """Prefect failure hook of a round: mark the round, its MLflow run and the campaign's run failed.

    A round left ``running`` would look alive forever to a scheduled deployment's users; the registry round
    gets the failure's message (a round already marked, e.g. ``interrupted``, keeps its status).
    """
    from flows.settings import SettingsError, load_settings
    from flows.tracking import TrackingUnavailable
    from registry import RegistryError

    params = flow_run.parameters.get("params", {})
    if hasattr(params, "model_dump"):
        params = params.model_dump()
    try:
        settings = load_settings(**params.get("overrides", {}))
        campaign, index = str(params["campaign"]), int(params["round_index"])
    except (SettingsError, KeyError):
        return
    try:
        _fail_registry_round(settings, campaign, index, str(getattr(state, "message", None) or "the round failed"))
    except RegistryError:
        pass
    try:
        tracker = tracker_for(settings, campaign)
    except TrackingUnavailable:
        return
    found = tracker.round_run(index)
    tracker.client.set_terminated(found, "FAILED")
    tracker.finish(status="FAILED")

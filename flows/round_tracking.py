"""What rounds and campaigns leave in MLflow: the round's run, its inputs, its model, the campaign's close.

``flows.round`` calls three functions: ``open_round`` when a round starts (it checks that the tracking server
answers before any episode runs), ``track_round`` when it is recorded, ``close_campaign`` when a campaign or a
triggered round ends.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd  # type: ignore[import-untyped]
from mlflow.data.pandas_dataset import from_pandas
from mlflow.exceptions import MlflowException

from arena.core.flips import Flips
from arena.core.redact import mask_url, redact_text
from curriculum import Wave
from diagnosis import WeaknessReport, render_markdown
from flows import transfer
from flows.campaign_config import baseline_note, lift_baseline
from flows.interrupt import STOP, hold_if_stopping
from flows.models import RoundSummary
from flows.outcomes import campaign_flips, campaign_lift, finished_rounds
from flows.promotion import promotion_line
from flows.registered_models import model_ref
from flows.registry_access import open_registry
from flows.report import campaign_summaries, write_plots, write_report
from flows.round_files import arm_dir, write_json
from flows.settings import GymloopSettings, SettingsError, load_settings
from flows.store_setup import store_setup_lock
from flows.tracking import (
    CampaignTracker,
    TrackingUnavailable,
    best_round,
    check_reachable,
    end_running_runs,
    local_ui_address,
    run_url,
)
from flows.waves import recorded_wave
from registry import TARGETED_ARM, BaselineInfo, ModelInfo, Registry, RegistryError

if TYPE_CHECKING:
    from flows.context import RoundContext


def tracker_for(settings: GymloopSettings, campaign: str, arm: str = TARGETED_ARM) -> CampaignTracker:
    """The tracker of a campaign's arm (every arm in the campaign's experiment), once an HTTP server answers.

    Raises:
        TrackingUnavailable: The tracking server does not answer.
    """
    uri = settings.resolved_mlflow_uri()
    check_reachable(uri)
    with store_setup_lock(uri):
        return CampaignTracker(uri, campaign, settings.store.home / "mlartifacts", arm=arm)


def registered_model_name(campaign: str, arm: str) -> str:
    """The MLflow registered model of an arm's trained models: ``gymloop-<campaign>`` (``.<arm>`` for a control)."""
    return f"gymloop-{campaign}" if arm == TARGETED_ARM else f"gymloop-{campaign}.{arm}"


def open_round(ctx: RoundContext) -> str:
    """Open the round's run (it starts now) and log the arm's settings once; return the run id.

    A stop signal arriving while the run opens may find nothing to end yet: the runs opened here are then ended
    (KILLED) at once, so none is left running by a process about to exit.
    """
    hold_if_stopping()
    tracker = tracker_for(ctx.settings, ctx.campaign, ctx.arm)
    tracker.log_campaign_params(ctx.settings.public_dict())
    run_id = tracker.open_round(ctx.index)
    if STOP.is_set():
        end_running_runs(tracker.uri, ctx.campaign)
        hold_if_stopping()
    return run_id


STOP_TRACKING_S = 10.0
"""Seconds ending a stopped campaign's MLflow runs may take before the process ends anyway."""


def stop_campaign_runs(settings: GymloopSettings, campaign: str, status: str = "KILLED") -> list[str]:
    """End the campaign's MLflow runs still running (every arm and round) with ``status``; return their ids.

    What a stop signal's handler calls: bounded by ``STOP_TRACKING_S`` (a tracking server that does not answer
    leaves them as they are); a store it cannot reach ends nothing.
    """
    ended: list[str] = []

    def end() -> None:
        uri = settings.resolved_mlflow_uri()
        try:
            check_reachable(uri)
            ended.extend(end_running_runs(uri, campaign, status))
        except (TrackingUnavailable, MlflowException):
            return

    worker = threading.Thread(target=end, name="gymloop-end-runs", daemon=True)
    worker.start()
    worker.join(STOP_TRACKING_S)
    return list(ended)


def _dataset(rows: list[dict[str, Any]], source: Path, name: str) -> Any:
    """An MLflow dataset of ``rows``."""
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
    parent = model_ref(registry.model(info.parent_id)).ref if info.parent_id is not None else None
    return {"registry_id": info.id, "kind": info.kind, "version": info.version, "params_hash": info.params_hash,
            "endpoint": info.endpoint, "parent": parent}


def track_round(ctx: RoundContext, summary: RoundSummary, report: WeaknessReport, variant_ids: list[str],
                model_out: ModelInfo) -> str:
    """Log a recorded round: params, metrics, plots, datasets, and the model lineage with a registered version."""
    settings, registry, model_in = ctx.settings, ctx.registry, ctx.model_in
    campaign, index, folder = ctx.campaign, ctx.index, ctx.folder
    tracker = tracker_for(settings, campaign, ctx.arm)
    recorded = registry.wave(ctx.round.id)
    wave = recorded_wave(recorded, index) if recorded is not None else Wave(strategy=settings.curriculum.strategy)
    write_json(folder / "wave.json", wave.model_dump(mode="json"))
    (folder / "weakness_report.json").write_text(report.to_json())
    (folder / "weakness_report.md").write_text(render_markdown(report))
    mix = {s: sum(1 for e in wave.entries if e.source == s) for s in ("targeted", "replay", "explore")}
    round_params = {
        "model_in": summary.model_in, "model_out": summary.model_out, "strategy": wave.strategy,
        "wave_mix": mix, "wave_size": len(wave.entries), "targets": summary.weaknesses[:10],
        "eval_seeds": settings.evaluation.eval_seeds, "seed": settings.curriculum.seed,
        "variant_pack_ids": [v[:12] for v in variant_ids],
        "base_pack_ids": [p.id[:12] for p in registry.list_packs() if p.parent is None],
        "baseline": summary.baseline,
        **({"baseline_change": summary.baseline_change} if summary.baseline_change else {}),
        "promotion": promotion_line(summary.promotion),
    }
    plots = write_plots(registry, campaign, campaign_summaries(registry, campaign, ctx.arm, up_to=index), folder)
    suite = ctx.suite
    suite_path = write_json(folder / "heldout_suite.json",
                            [[k.pack_id, k.task_id, k.seed, k.attempt] for k in suite])
    flips_path = write_json(folder / "flips.json", flips_record(summary))
    artifacts = [folder / "weakness_report.json", folder / "weakness_report.md", folder / "wave.json", suite_path,
                 flips_path, *plots]
    run_id = tracker.log_round(index, round_params, summary.metrics, artifacts,
                               campaign_metrics=campaign_metrics(registry, campaign, settings.curriculum.seed,
                                                                 ctx.arm))
    domains = {p.id: p.domain for p in registry.list_packs()}
    with warnings.catch_warnings():
        # MLflow hints that integer columns cannot hold missing values (ours never miss one) and that a local
        # path may be read as two kinds of source (both local artifacts): neither concerns the user.
        warnings.filterwarnings("ignore", message="(Hint: Inferred schema|The specified dataset source)",
                                category=UserWarning)
        suite_dataset = _suite_dataset(suite, domains, suite_path)
        tracker.log_datasets(run_id, [(suite_dataset, "eval"),
                                      (_wave_dataset(wave, domains, folder / "wave.json", index), "train")])
        tracker.log_datasets(tracker.parent_id, [(suite_dataset, "eval")])
    in_id = tracker.logged_model(summary.model_in, _model_params(model_in, registry))
    out_id = tracker.logged_model(summary.model_out, _model_params(model_out, registry), source_run_id=run_id,
                                  artifact=Path(model_out.artifact) if model_out.artifact else None)
    tracker.log_lineage(run_id, index, in_id, out_id)
    name = registered_model_name(campaign, ctx.arm)
    tracker.register_version(name, out_id, run_id, summary.model_out, index, (summary.before, summary.after),
                             promotion_line(summary.promotion))
    tracker.log_parent_model(out_id, index, summary.model_out)
    scores = {s.round_index: s.after for s in campaign_summaries(registry, campaign, ctx.arm, up_to=index)
              if s.promotion.promoted}
    if scores:  # none yet when every round so far was refused: the aliases wait for a promoted model
        tracker.set_aliases(name, scores)
    tracker.log_campaign_artifacts(plots)
    return run_id


def flips_record(summary: RoundSummary) -> dict[str, Any]:
    """A round's ``flips.json``: its held-out flips, each template's, and its promotion decision."""
    return {"round": summary.round_index, "lift": summary.lift, "lift_low": summary.lift_low,
            "lift_high": summary.lift_high,
            "flips": summary.flips.model_dump(mode="json") if summary.flips is not None else None,
            "template_flips": {k: v.model_dump(mode="json") for k, v in summary.template_flips.items()},
            "promotion": summary.promotion.model_dump(mode="json")}


def campaign_metrics(registry: Registry, campaign: str, seed: int, arm: str) -> dict[str, float]:
    """An arm's campaign so far, as the MLflow metrics of its run.

    Held-out pass rate before its first round and after its last promoted one, the lift with its 95% interval and
    the tasks it flipped, its best promoted round (-1 before one), and each transfer suite's the same
    (``transfer/<suite>/...``).
    """
    before, after, lift, low, high = campaign_lift(registry, campaign, seed, arm)
    flips = campaign_flips(registry, campaign, arm)
    summaries = campaign_summaries(registry, campaign, arm)
    promoted = {s.round_index: s.after for s in summaries if s.promotion.promoted}
    since = lift_since(registry, campaign, arm)
    return {"before": before, "after": after, "lift": lift, "lift_low": low, "lift_high": high,
            "pass_to_fail": float(flips.pass_to_fail), "fail_to_pass": float(flips.fail_to_pass),
            "paired_tasks": float(flips.tasks), "best_round": float(best_round(promoted) if promoted else -1),
            "baseline": float(since.number if since else 0),
            "lift_from_round": float(since.first_round if since else summaries[0].round_index),
            **transfer.metrics(transfer.campaign_results(registry, summaries, seed))}


def lift_since(registry: Registry, campaign: str, arm: str = TARGETED_ARM) -> BaselineInfo | None:
    """The baseline an arm's campaign lift is measured in (``None`` for a campaign recorded before baselines)."""
    finished = [r.index for r in finished_rounds(registry, campaign, arm)]
    return lift_baseline(registry.baselines(campaign), finished)


def run_link(settings: GymloopSettings, campaign: str, run_id: str, arm: str = TARGETED_ARM) -> str:
    """Markdown pointing at a round's MLflow run: a link on a tracking server, else where the local store is."""
    tracker = tracker_for(settings, campaign, arm)
    url = run_url(tracker.ui_address(local_ui_address(settings.store.home)), tracker.experiment_id, run_id)
    if tracker.uri.startswith(("http://", "https://")):
        return f"[MLflow run {run_id[:8]}]({url})"
    return f"MLflow run `{run_id}` in `{mask_url(tracker.uri)}` (open it with `gymloop mlflow-ui`: {url})"


def runs_url(settings: GymloopSettings, campaign: str) -> str:
    """The campaign's runs view in the MLflow UI (every arm's run with its rounds), where the UI is served."""
    return tracker_for(settings, campaign).runs_url(local_ui_address(settings.store.home))


def close_campaign(settings: GymloopSettings, campaign: str, arm: str = TARGETED_ARM, extra: str = "") -> Path | None:
    """Finish an arm's parent run with its lift, the interval and ``report.md`` (with ``extra`` added to it).

    Returns:
        The report's path, or ``None`` when the arm has no finished round yet.
    """
    tracker = tracker_for(settings, campaign, arm)
    registry = open_registry(settings)
    try:
        before, after, lift, low, high = campaign_lift(registry, campaign, settings.curriculum.seed, arm)
    except ValueError:
        tracker.finish()
        return None
    last = max(r.index for r in finished_rounds(registry, campaign, arm))
    headline = campaign_headline(campaign if arm == TARGETED_ARM else f"{campaign} ({arm} arm)", before, after, lift,
                                 low, high, settings.gyms.tasks, lift_since(registry, campaign, arm),
                                 campaign_flips(registry, campaign, arm))
    folder = arm_dir(settings, campaign, arm)
    report = write_report(registry, folder, campaign, headline, arm, extra, seed=settings.curriculum.seed)
    tracker.log_campaign_artifacts([report, folder / "lift_per_round.png", folder / "weaknesses_by_round.png"])
    tracker.finish(campaign_metrics(registry, campaign, settings.curriculum.seed, arm), step=last)
    return report


def campaign_headline(campaign: str, before: float, after: float, lift: float, low: float, high: float,
                      focus: Sequence[str] = (), baseline: BaselineInfo | None = None,
                      flips: Flips | None = None) -> str:
    """One line stating a campaign's held-out lift with its interval, and the held-out tasks it flipped.

    The line names the campaign's focus (``tasks``), and its baseline after a change.
    """
    tasks = f"; tasks {', '.join(focus)}" if focus else ""
    since = baseline_note(baseline)
    flipped = "" if flips is None else (f"; {flips.pass_to_fail} of {flips.tasks} held-out tasks pass->fail, "
                                        f"{flips.fail_to_pass} fail->pass")
    return (f"campaign {campaign}: held-out pass rate {before:.3f} -> {after:.3f}, lift {lift:+.3f} "
            f"(95% interval [{low:+.3f}, {high:+.3f}], paired over the same held-out tasks{tasks}"
            f"{'; ' + since if since else ''}){flipped}")


def _fail_registry_round(settings: GymloopSettings, campaign: str, arm: str, index: int, message: str) -> None:
    registry = open_registry(settings)
    info = registry.find_campaign(campaign)
    for found in registry.rounds(info.id, arm=arm) if info is not None else []:
        if found.index == index and found.status == "running":
            registry.fail_round(found.id, redact_text(message))


def round_failed(flow: Any, flow_run: Any, state: Any) -> None:
    """Prefect failure hook of a round: mark the round, its MLflow run and the campaign's run failed.

    A round left ``running`` would look alive forever to a scheduled deployment's users; the registry round
    gets the failure's message (a round already marked, e.g. ``interrupted``, keeps its status). A round that
    failed because the process was asked to stop is left to the signal's handler, which marks it ``interrupted``;
    its MLflow runs are marked KILLED.
    """
    params = flow_run.parameters.get("params", {})
    if hasattr(params, "model_dump"):
        params = params.model_dump()
    try:
        arm = str(params.get("arm") or TARGETED_ARM)
        settings = load_settings(**{**params.get("overrides", {}), "arm": arm})
        campaign, index = str(params["campaign"]), int(params["round_index"])
    except (SettingsError, KeyError):
        return
    stopped = STOP.is_set()
    try:
        if not stopped:
            _fail_registry_round(settings, campaign, arm, index,
                                 str(getattr(state, "message", None) or "the round failed"))
    except RegistryError:
        pass
    try:
        tracker = tracker_for(settings, campaign, arm)
    except TrackingUnavailable:
        return
    found = tracker.round_run(index)
    tracker.client.set_terminated(found, "KILLED" if stopped else "FAILED")
    tracker.finish(status="KILLED" if stopped else "FAILED")

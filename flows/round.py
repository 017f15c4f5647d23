"""gymloop's round flow: evaluate -> diagnose -> generate -> plan -> train -> re-evaluate -> record.

Episodes run in batches, one Prefect task per batch (never one per episode), on the task runner the
settings choose (threads by default; Dask or Ray for clusters). The round's context is opened once and handed
to every stage; each stage is recorded in the registry when it finishes (``flows.stages``), so re-running a
crashed or stopped round resumes it: finished stages are read back and finished episodes are skipped.
"""

from __future__ import annotations

import os
import time
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from arena.checks.careful import template_of
from arena.core.episode import EpisodeRecord
from arena.core.flips import flips_by, paired_flips
from arena.core.pack import Pack
from arena.rollout import EpisodeKey
from curriculum import Wave
from diagnosis import WeaknessReport
from flows import prefect_view, round_tracking, stages, transfer
from flows.context import RoundContext, open_round
from flows.interrupt import flow_run_tracked, tracked_runs
from flows.live import current_meter, retry_unless_stopped
from flows.models import RoundParams, RoundSummary, StageResult
from flows.outcomes import outcomes
from flows.preflight import preflight_agent
from flows.promotion import decide, promotion_line
from flows.registered_models import make_agent, model_ref
from flows.rollouts import batches, run_batch, wave_keys
from flows.round_metrics import flip_metrics, round_metrics
from flows.settings import machine_overrides
from flows.variants import generate_variants
from registry import TARGETED_ARM, ModelInfo


class EpisodeBatch:
    """Episodes a batch task hands back: an opaque holder, so Prefect does not walk every trace.

    Args:
        records: The episodes.
        pid: The process that ran them (a Dask or Ray worker's episodes were not seen by this process's meter).
    """

    __slots__ = ("pid", "records")

    def __init__(self, records: list[EpisodeRecord], pid: int) -> None:
        self.records = records
        self.pid = pid


@task(name="rollout-batch", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE,
      retry_condition_fn=retry_unless_stopped)
def rollout_batch(round_id: int, stage: str, model_id: int, keys: list[EpisodeKey],
                  local: dict[str, Any]) -> EpisodeBatch:
    """Run one batch of episodes (those not yet recorded), record and return them; retried on failure."""
    return EpisodeBatch(run_batch(round_id, stage, model_id, keys, local), os.getpid())


def run_batches(ctx: RoundContext, stage: str, model: ModelInfo, keys: list[EpisodeKey]) -> list[EpisodeRecord]:
    """Play a stage's episodes as batched Prefect tasks on the round's task runner; return them."""
    batch_task = rollout_batch.with_options(name=prefect_view.STAGE_TASKS.get(stage, stage))
    local = machine_overrides(ctx.params.overrides)
    futures = [batch_task.submit(ctx.round.id, stage, model.id, batch, local)
               for batch in batches(keys, ctx.settings.runner.batch_size)]
    ran: list[EpisodeRecord] = []
    meter = current_meter()
    for future in futures:
        batch = future.result()
        ran.extend(batch.records)
        if meter is not None and batch.pid != os.getpid():  # played on another process: counted when it returns
            for record in batch.records:
                meter.add(record)
    return ran


@task(name="factory-request", retries=2, retry_delay_seconds=5, cache_policy=NO_CACHE)
def factory_request(ctx: RoundContext, report: WeaknessReport, pool: list[Pack]) -> list[Pack]:
    """Request variants from the factory (retried: a remote factory may be briefly unavailable)."""
    campaign = ctx.campaign if ctx.arm == TARGETED_ARM else f"{ctx.campaign}/{ctx.arm}"
    results = generate_variants(ctx.settings, report, ctx.base, ctx.model_in, ctx.index, pool, campaign)
    return [p for r in results for p in r.packs]


def _request(ctx: RoundContext, report: WeaknessReport, pool: list[Pack]) -> list[Pack]:
    return factory_request(quote(ctx), report, quote(pool), return_state=False)


@task(name="diagnose", cache_policy=NO_CACHE)
def diagnose_task(ctx: RoundContext) -> WeaknessReport:
    """Diagnose the held-out episodes into a ranked weakness report."""
    return stages.diagnose(ctx)


@task(name="generate", cache_policy=NO_CACHE)
def generate_task(ctx: RoundContext, report: WeaknessReport) -> list[str]:
    """Request variants aimed at the report's weaknesses; add the gated packs to the arm's pool."""
    return stages.generate(ctx, report, _request)


@task(name="plan-wave", cache_policy=NO_CACHE)
def plan_task(ctx: RoundContext, report: WeaknessReport) -> Wave:
    """Plan the round's wave."""
    return stages.plan(ctx, report)


@task(name="train", cache_policy=NO_CACHE)
def train_task(ctx: RoundContext, wave: Wave) -> ModelInfo:
    """Train on the wave's rollouts and register the model out."""
    return stages.train_model(ctx, wave)


@flow(name="curriculum-round", flow_run_name=prefect_view.round_run_name, on_failure=[round_tracking.round_failed])
def curriculum_round(params: RoundParams) -> RoundSummary:
    """One round: evaluate -> diagnose -> generate -> plan wave -> train -> re-evaluate -> record."""
    with flow_run_tracked():
        logger = get_run_logger()
        ctx = open_round(params, say=logger.warning)
        _note_flow_runs(ctx)
        round_tracking.open_round(ctx)
        # Scheduled and triggered rounds start here without the CLI's check: a wrong model fails in seconds.
        preflight_agent(make_agent(ctx.model_in, ctx.settings))
        return _run(ctx, logger)


def _note_flow_runs(ctx: RoundContext) -> None:
    """Keep this process's flow runs with the round; those of a killed run before it are shown Crashed."""
    runs = tracked_runs()
    stale = [r for r in ctx.round.details.get("flow_runs", []) if r not in runs]
    crashed = prefect_view.crash_stale_runs(stale, f"{ctx.where} was resumed by flow run {runs[-1] if runs else '?'}")
    if crashed:
        ctx.say(f"{ctx.where}: {len(crashed)} flow run(s) of the killed run before this one are marked Crashed")
    ctx.registry.update_round(ctx.round.id, {"flow_runs": runs})


def _timed(seconds: dict[str, float], name: str, started: float) -> None:
    """Record a step's wall-clock seconds."""
    seconds[name] = round(time.perf_counter() - started, 3)


def _run(ctx: RoundContext, logger: Any) -> RoundSummary:
    seconds: dict[str, float] = {}
    results: dict[str, StageResult] = {}
    q = quote(ctx)

    started = time.perf_counter()
    stages.reuse_previous_eval(ctx)
    results[stages.EVAL_BEFORE] = stages.episodes(ctx, stages.EVAL_BEFORE, ctx.model_in, ctx.suite, run_batches)
    _timed(seconds, "evaluate", started)
    logger.info("%s: evaluated %s on %d held-out episodes", ctx.where, ctx.model_in.name, len(ctx.suite))
    _transfer(ctx, stages.TRANSFER_BEFORE, ctx.model_in, results, seconds, logger)

    started = time.perf_counter()
    report = diagnose_task(q, return_state=False)
    _timed(seconds, "diagnose", started)
    logger.info("%s: %d weaknesses of %d kinds, top kinds %s", ctx.where, len(report.weaknesses), len(report.kinds),
                ", ".join(k.kind for k in report.kinds[:3]) or "none")

    started = time.perf_counter()
    variant_ids = generate_task(q, report, return_state=False)
    _timed(seconds, "generate", started)
    logger.info("%s: the factory added %d variant packs", ctx.where, len(variant_ids))

    started = time.perf_counter()
    wave = plan_task(q, report, return_state=False)
    keys = wave_keys(wave, ctx.index)
    results[stages.TRAIN] = stages.episodes(ctx, stages.TRAIN, ctx.model_in, keys, run_batches)
    model_out = train_task(q, quote(wave), return_state=False)
    _timed(seconds, "train", started)
    logger.info("%s: trained %s on a wave of %d tasks (%d rollouts)", ctx.where, model_ref(model_out).ref,
                len(wave.entries), len(keys))

    started = time.perf_counter()
    results[stages.EVAL_AFTER] = stages.episodes(ctx, stages.EVAL_AFTER, model_out, ctx.suite, run_batches)
    _timed(seconds, "re_evaluate", started)
    _transfer(ctx, stages.TRANSFER_AFTER, model_out, results, seconds, logger)
    return _record(ctx, model_out, report, variant_ids, results, seconds)


def _transfer(ctx: RoundContext, stage: str, model: ModelInfo, results: dict[str, StageResult],
              seconds: dict[str, float], logger: Any) -> None:
    """Play one side of the transfer suites (nothing without one), timed and counted with the round's stages."""
    started = time.perf_counter()
    result = stages.transfer_episodes(ctx, stage, model, run_batches)
    if result is None:
        return
    results[stage] = result
    _timed(seconds, stage, started)
    logger.info("%s: played %s on %d transfer episodes (%s)", ctx.where, model_ref(model).ref,
                len(ctx.transfer_keys), ", ".join(ctx.settings.transfer.transfer_suites))


def _record(ctx: RoundContext, model_out: ModelInfo, report: WeaknessReport, variant_ids: list[str],
            results: dict[str, StageResult], seconds: dict[str, float]) -> RoundSummary:
    registry, rid = ctx.registry, ctx.round.id
    before = outcomes(registry, rid, stages.EVAL_BEFORE, ctx.model_in.id)
    after = outcomes(registry, rid, stages.EVAL_AFTER, model_out.id)
    train = outcomes(registry, rid, stages.TRAIN, ctx.model_in.id)
    metrics = round_metrics(before, after, report, train, ctx.settings.evaluation.eval_k,
                            ctx.settings.curriculum.seed)
    flips = paired_flips(before, after)
    promotion = decide(metrics["lift_low"], flips, ctx.settings.promotion)
    metrics.update(flip_metrics(flips, promotion.promoted))
    metrics.update({f"seconds/{k}": v for k, v in seconds.items()})
    metrics["variants_added"] = float(len(variant_ids))
    metrics["baseline"] = float(ctx.baseline.number)
    suites = transfer.round_results(registry, rid, ctx.model_in.id, model_out.id,
                                    [p.manifest.domain for p in ctx.transfer_packs], ctx.settings.curriculum.seed)
    metrics.update(transfer.metrics(suites))
    wave = registry.wave(rid)
    summary = RoundSummary(
        campaign=ctx.campaign, round_index=ctx.index, round_id=rid, arm=ctx.arm,
        model_in=model_ref(ctx.model_in).ref, model_out=model_ref(model_out).ref,
        before=metrics["heldout_pass_rate_before"], after=metrics["heldout_pass_rate_after"], lift=metrics["lift"],
        lift_low=metrics["lift_low"], lift_high=metrics["lift_high"], weaknesses=[k.kind for k in report.kinds],
        variants=len(variant_ids), wave_size=len(wave.entries) if wave else 0, episodes=results, metrics=metrics,
        baseline=ctx.baseline.number,
        baseline_change=ctx.baseline.change if ctx.baseline.first_round == ctx.index else None, transfer=suites,
        flips=flips, template_flips=flips_by(before, after, template_of), promotion=promotion,
    )
    registry.finish_round(rid, model_out.id, {"summary": summary.model_dump(mode="json"),
                                              "promotion": promotion.model_dump(mode="json")})
    run_id = round_tracking.track_round(ctx, summary, report, variant_ids, model_out)
    prefect_view.publish_round(summary, round_tracking.run_link(ctx.settings, ctx.campaign, run_id, ctx.arm))
    get_run_logger().info("%s: held-out pass rate %.3f -> %.3f, lift %+.3f [%+.3f, %+.3f], %d of %d held-out tasks "
                          "pass->fail and %d fail->pass; %s; MLflow run %s", ctx.where, summary.before, summary.after,
                          summary.lift, summary.lift_low, summary.lift_high, flips.pass_to_fail, flips.tasks,
                          flips.fail_to_pass, promotion_line(promotion), run_id)
    return summary

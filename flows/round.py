"""gymloop's Prefect flows: evaluate, diagnose, generate, train, curriculum_round and campaign.

Episodes run in batches, one Prefect task per batch (never one per episode), on the task runner the
settings choose (threads by default; Dask or Ray for clusters). Every step writes to the registry, so
re-running a crashed round resumes it: finished episodes are skipped and finished steps are read back.
"""

from __future__ import annotations

import os
import time
from typing import Any

from prefect import flow, get_run_logger, tags, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout import EpisodeKey
from curriculum import History, RoundResult, StopRules, Wave, should_stop
from diagnosis import WeaknessReport
from flows import prefect_view, round_tracking, steps
from flows.budget import budget_stop
from flows.control import campaign_pack_ids, record_variants
from flows.lease import campaign_lease
from flows.live import current_meter, retry_unless_stopped
from flows.models import CampaignParams, RoundParams, RoundSummary, StageResult
from flows.preflight import preflight_agent
from flows.settings import GymloopSettings, load_settings
from flows.task_runners import task_runner
from flows.validity import check_invalid_share
from registry import ModelInfo, Registry


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
                  overrides: dict[str, Any]) -> EpisodeBatch:
    """Run one batch of episodes (those not yet recorded), record and return them; retried on failure."""
    return EpisodeBatch(steps.run_batch(round_id, stage, model_id, keys, overrides), os.getpid())


@task(name="factory-request", retries=2, retry_delay_seconds=5, cache_policy=NO_CACHE)
def factory_request(settings: GymloopSettings, report: WeaknessReport, base: list[Pack], model: ModelInfo,
                    round_index: int, pool: list[Pack], campaign: str = "") -> list[Pack]:
    """Request variants from the factory (retried: a remote factory may be briefly unavailable)."""
    results = steps.generate_variants(settings, report, base, model, round_index, pool, campaign)
    return [p for r in results for p in r.packs]


def run_stage(settings: GymloopSettings, registry: Registry, round_id: int, stage: str, model: ModelInfo,
              keys: list[EpisodeKey], overrides: dict[str, Any]) -> tuple[StageResult, list[EpisodeRecord]]:
    """Run a stage's episodes as batched Prefect tasks, skipping those already recorded.

    Returns:
        The stage's counts and the episodes run now (those recorded earlier stay in the registry).
    """
    started = time.perf_counter()
    done = {(k.pack_id, k.task_id, k.seed, k.attempt) for k in registry.finished_episode_keys(round_id, stage=stage)}
    todo = [k for k in keys if (k.pack_id, k.task_id, k.seed, k.attempt) not in done]
    batch_task = rollout_batch.with_options(name=prefect_view.STAGE_TASKS.get(stage, stage))
    futures = [batch_task.submit(round_id, stage, model.id, batch, overrides)
               for batch in steps.batches(todo, settings.batch_size)]
    ran = []
    meter = current_meter()
    for future in futures:
        batch = future.result()
        ran.extend(batch.records)
        if meter is not None and batch.pid != os.getpid():  # played on another process: counted when it returns
            for record in batch.records:
                meter.add(record)
    check_invalid_share(settings, registry, round_id, stage)
    result = StageResult(stage=stage, planned=len(keys), ran=len(ran), reused=len(keys) - len(todo),
                         seconds=round(time.perf_counter() - started, 3))
    return result, ran


@flow(name="evaluate", validate_parameters=True)
def evaluate(params: RoundParams, stage: str = steps.EVAL_BEFORE, model_id: int | None = None) -> StageResult:
    """Evaluate a model (the round's model in by default) on the held-out suite of the campaign's gyms."""
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params)
    base = steps.base_packs(registry, settings)
    model = registry.model(model_id if model_id is not None else round_info.model_in_id)
    return run_stage(settings, registry, round_info.id, stage, model, steps.heldout_keys(base, settings),
                     params.overrides)[0]


def _round(registry: Registry, settings: GymloopSettings, params: RoundParams, *, start: bool = False) -> Any:
    """The round a step works on: found as it is, or started (resumed) when ``start`` or not yet there."""
    campaign = registry.create_campaign(params.campaign, settings.public_dict(), exist_ok=True)
    if not start:
        existing = [r for r in registry.rounds(campaign.id) if r.index == params.round_index]
        if existing and existing[0].status != "finished":
            return existing[0]
    previous = [r for r in registry.rounds(campaign.id) if r.index < params.round_index]
    if previous and (previous[-1].status != "finished" or previous[-1].index != params.round_index - 1):
        raise ValueError(f"campaign {params.campaign!r}: round {params.round_index - 1} has not finished; "
                         "run or resume it first")
    if params.round_index > 0 and not previous:
        raise ValueError(f"campaign {params.campaign!r} has no round {params.round_index - 1}")
    model_id = previous[-1].model_out_id if previous else steps.initial_model(registry, settings).id
    if model_id is None:
        raise ValueError(f"campaign {params.campaign!r}: round {params.round_index - 1} produced no model")
    return registry.start_round(campaign.id, params.round_index, model_id)


def _diagnose(params: RoundParams, fresh: list[EpisodeRecord] | None = None) -> WeaknessReport:
    """Diagnose the held-out episodes: those just run (``fresh``), or all recorded ones after a resume."""
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params)
    planned = len(steps.heldout_keys(steps.base_packs(registry, settings), settings))
    records = list(fresh or [])
    if len(records) < planned:
        records = registry.round_episodes(round_info.id, stage=steps.EVAL_BEFORE)
    packs = [steps.load_pack(registry, pid) for pid in sorted({r.pack_id for r in records})]
    folder = steps.round_dir(settings, params.campaign, params.round_index)
    previous_path = steps.round_dir(settings, params.campaign, params.round_index - 1) / "weakness_report.json" \
        if params.round_index > 0 else None
    previous = WeaknessReport.from_json(previous_path.read_text()) if previous_path and previous_path.is_file() \
        else None
    report = steps.diagnose_round(records, packs, previous, params.round_index, settings.seed)
    registry.record_weaknesses(round_info.id, steps.weakness_entries(report))
    (folder / "weakness_report.json").write_text(report.to_json())
    (folder / "weakness_report.md").write_text(report.to_markdown())
    return report


def _generate(params: RoundParams, report: WeaknessReport) -> list[str]:
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params)
    base = steps.base_packs(registry, settings)
    model = registry.model(round_info.model_in_id)
    packs = factory_request(settings, report, base, model, params.round_index,
                            _pool(registry, settings, params), params.campaign)
    for pack in packs:
        steps.add_pack(registry, pack)
    record_variants(settings, params.campaign, params.round_index, [p.id for p in packs])
    return [p.id for p in packs]


def _plan(params: RoundParams, report: WeaknessReport) -> Wave:
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params)
    pool = _pool(registry, settings, params)
    wave = steps.plan(report, pool, _history(settings, params), settings, params.round_index)
    registry.record_wave(round_info.id, steps.wave_entries(wave),
                         {"strategy": wave.strategy, "message": wave.message, "k": wave.k, "budget": wave.budget})
    steps.write_json(steps.round_dir(settings, params.campaign, params.round_index) / "wave.json",
                     wave.model_dump(mode="json"))
    return wave


def _train(params: RoundParams, wave: Wave, fresh: list[EpisodeRecord] | None = None) -> int:
    """Train on the wave's rollouts: those just run (``fresh``) plus any recorded before a resume."""
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params)
    model = registry.model(round_info.model_in_id)
    folder = steps.round_dir(settings, params.campaign, params.round_index)
    planned = len(steps.wave_keys(wave, params.round_index))
    records = list(fresh or [])
    if len(records) < planned:
        records = registry.round_episodes(round_info.id, stage=steps.TRAIN)
    steps.write_json(folder / "history.json",
                     steps.update_history(_history(settings, params), wave, records).model_dump(mode="json"))
    ref = steps.train(settings, model, wave, records, _pool(registry, settings, params), folder)
    if ref.name == model.name and steps.version_label(ref) == model.version:
        return model.id
    return steps.register_ref(registry, ref, model.id).id


def _train_rollouts(params: RoundParams, wave: Wave) -> tuple[StageResult, list[EpisodeRecord]]:
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params)
    model = registry.model(round_info.model_in_id)
    return run_stage(settings, registry, round_info.id, steps.TRAIN, model, steps.wave_keys(wave, params.round_index),
                     params.overrides)


diagnose_task = task(name="diagnose", cache_policy=NO_CACHE)(_diagnose)
generate_task = task(name="generate", cache_policy=NO_CACHE)(_generate)
plan_task = task(name="plan-wave", cache_policy=NO_CACHE)(_plan)
train_task = task(name="train", cache_policy=NO_CACHE)(_train)


@flow(name="diagnose")
def diagnose_flow(params: RoundParams) -> WeaknessReport:
    """Diagnose the round's held-out episodes into a ranked weakness report (stored with the round)."""
    return _diagnose(params)


@flow(name="generate")
def generate_flow(params: RoundParams, report: WeaknessReport) -> list[str]:
    """Request variants aimed at the report's weaknesses; add the gated packs to the registry."""
    return _generate(params, report)


@flow(name="train")
def train_flow(params: RoundParams, report: WeaknessReport) -> int:
    """Plan the wave, run its rollouts with the model in, train, and register the model out; return its id."""
    wave = _plan(params, report)
    _, fresh = _train_rollouts(params, wave)
    return _train(params, wave, fresh)


def _history(settings: GymloopSettings, params: RoundParams) -> History:
    if params.round_index == 0:
        return History()
    path = steps.round_dir(settings, params.campaign, params.round_index - 1) / "history.json"
    return History.model_validate_json(path.read_text()) if path.is_file() else History()


def _pool(registry: Registry, settings: GymloopSettings, params: RoundParams) -> list[Pack]:
    """Packs of the campaign's gyms: those not derived from another, and the variants this campaign added."""
    wanted = set(settings.domains)
    own = campaign_pack_ids(settings, params.campaign, params.round_index)
    return [steps.load_pack(registry, p.id) for p in registry.list_packs()
            if p.domain in wanted and (p.parent is None or p.id in own)]


@flow(name="curriculum-round", flow_run_name=prefect_view.round_run_name, on_failure=[round_tracking.round_failed])
def curriculum_round(params: RoundParams) -> RoundSummary:
    """One round: evaluate -> diagnose -> generate -> plan wave -> train -> re-evaluate -> record."""
    logger = get_run_logger()
    settings = load_settings(**params.overrides)
    round_tracking.open_round(settings, params.campaign, params.round_index)
    registry = steps.open_registry(settings)
    round_info = _round(registry, settings, params, start=True)
    model_in = registry.model(round_info.model_in_id)
    # Scheduled and triggered rounds start here without the CLI's check: a wrong model fails in seconds.
    preflight_agent(steps.make_agent(model_in, settings))
    base = steps.base_packs(registry, settings)
    suite = steps.heldout_keys(base, settings)
    seconds: dict[str, float] = {}
    stages: dict[str, StageResult] = {}

    started = time.perf_counter()
    _reuse_previous_eval(registry, round_info, suite)
    stages[steps.EVAL_BEFORE], fresh_eval = run_stage(settings, registry, round_info.id, steps.EVAL_BEFORE,
                                                      model_in, suite, params.overrides)
    steps.timed(seconds, "evaluate", started)
    logger.info("round %s: evaluated %s on %d held-out episodes", params.round_index, model_in.name, len(suite))

    started = time.perf_counter()
    report = diagnose_task(params, quote(fresh_eval), return_state=False)
    steps.timed(seconds, "diagnose", started)
    logger.info("round %s: %d weaknesses, top %s", params.round_index, len(report.weaknesses),
                ", ".join(w.kind for w in report.weaknesses[:3]) or "none")

    started = time.perf_counter()
    variant_ids = generate_task(params, report)
    steps.timed(seconds, "generate", started)
    logger.info("round %s: the factory added %d variant packs", params.round_index, len(variant_ids))

    started = time.perf_counter()
    wave = plan_task(params, report)
    stages[steps.TRAIN], fresh = _train_rollouts(params, wave)
    model_out = registry.model(train_task(params, wave, quote(fresh), return_state=False))
    steps.timed(seconds, "train", started)
    logger.info("round %s: trained %s on a wave of %d tasks (%d rollouts)", params.round_index,
                steps.model_ref(model_out).ref, len(wave.entries), stages[steps.TRAIN].planned)

    started = time.perf_counter()
    stages[steps.EVAL_AFTER] = run_stage(settings, registry, round_info.id, steps.EVAL_AFTER, model_out, suite,
                                         params.overrides)[0]
    steps.timed(seconds, "re_evaluate", started)
    return _record(settings, registry, params, round_info.id, model_in, model_out, report, variant_ids, stages,
                   seconds)


def _reuse_previous_eval(registry: Registry, round_info: Any, suite: list[EpisodeKey]) -> int:
    """The model in is the previous round's model out: its re-evaluation is this round's evaluation."""
    if round_info.index == 0:
        return 0
    previous = [r for r in registry.rounds(round_info.campaign_id) if r.index == round_info.index - 1]
    if not previous or previous[0].model_out_id != round_info.model_in_id:
        return 0
    return steps.copy_stage(registry, previous[0].id, steps.EVAL_AFTER, round_info.id, steps.EVAL_BEFORE, suite)


def _record(settings: GymloopSettings, registry: Registry, params: RoundParams, round_id: int, model_in: ModelInfo,
            model_out: ModelInfo, report: WeaknessReport, variant_ids: list[str], stages: dict[str, StageResult],
            seconds: dict[str, float]) -> RoundSummary:
    before = steps.outcomes(registry, round_id, steps.EVAL_BEFORE)
    after = steps.outcomes(registry, round_id, steps.EVAL_AFTER)
    train = steps.outcomes(registry, round_id, steps.TRAIN)
    metrics = steps.round_metrics(before, after, report, train, settings.eval_k, settings.seed)
    metrics.update({f"seconds/{k}": v for k, v in seconds.items()})
    metrics["variants_added"] = float(len(variant_ids))
    wave = registry.wave(round_id)
    summary = RoundSummary(
        campaign=params.campaign, round_index=params.round_index, round_id=round_id,
        model_in=steps.model_ref(model_in).ref, model_out=steps.model_ref(model_out).ref,
        before=metrics["heldout_pass_rate_before"], after=metrics["heldout_pass_rate_after"], lift=metrics["lift"],
        lift_low=metrics["lift_low"], lift_high=metrics["lift_high"], weaknesses=[w.kind for w in report.weaknesses],
        variants=len(variant_ids), wave_size=len(wave.entries) if wave else 0, episodes=stages, metrics=metrics,
    )
    folder = steps.round_dir(settings, params.campaign, params.round_index)
    steps.write_json(folder / "summary.json", summary.model_dump(mode="json"))
    registry.finish_round(round_id, model_out.id, {"summary": summary.model_dump(mode="json")})
    run_id = round_tracking.track_round(settings, registry, summary, report, variant_ids, model_in, model_out)
    prefect_view.publish_round(summary, round_tracking.run_link(settings, params.campaign, run_id))
    get_run_logger().info("round %s: held-out pass rate %.3f -> %.3f, lift %+.3f [%+.3f, %+.3f]; MLflow run %s",
                          params.round_index, summary.before, summary.after, summary.lift, summary.lift_low,
                          summary.lift_high, run_id)
    return summary


@flow(name="campaign", flow_run_name=prefect_view.campaign_run_name)
def campaign(params: CampaignParams) -> list[RoundSummary]:
    """Run rounds until a stop rule fires (plateau, budget, target pass rate) or the round limit."""
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    with campaign_lease(registry, params.campaign, ttl_s=settings.lease_ttl_s, wait_s=settings.lease_wait_s):
        return _campaign_rounds(params, settings, registry)


def _campaign_rounds(params: CampaignParams, settings: GymloopSettings, registry: Registry) -> list[RoundSummary]:
    logger = get_run_logger()
    info = registry.create_campaign(params.campaign, settings.public_dict(), exist_ok=True)
    finished = [r for r in registry.rounds(info.id) if r.status == "finished"]
    start = len(finished)
    limit = params.rounds or settings.max_rounds
    summaries: list[RoundSummary] = []
    results = [_round_result(r.details.get("summary", {})) for r in finished]
    rules = StopRules(plateau_rounds=settings.plateau_rounds, plateau_lift=settings.plateau_lift,
                      target_pass_rate=settings.target_pass_rate, max_episodes=settings.episode_budget,
                      max_rounds=start + limit)
    runner = curriculum_round.with_options(task_runner=task_runner(settings))
    used = [r.details.get("summary", {}) for r in finished]
    for index in range(start, start + limit):
        decision = should_stop(results, rules)
        reason = decision.reason if decision.stop else budget_stop(settings, used)
        if reason:
            logger.info("campaign %s stops before round %d: %s", params.campaign, index, reason)
            break
        with tags(*prefect_view.run_tags(params.campaign)):
            summary = runner(RoundParams(campaign=params.campaign, round_index=index, overrides=params.overrides))
        summaries.append(summary)
        results.append(_round_result(summary.model_dump(mode="json")))
        used.append(summary.model_dump(mode="json"))
    round_tracking.close_campaign(settings, params.campaign)
    return summaries


def _round_result(summary: dict[str, Any]) -> RoundResult:
    train = summary.get("episodes", {}).get(steps.TRAIN, {})
    return RoundResult(round_index=int(summary.get("round_index", 0)), pass_rate=float(summary.get("after", 0.0)),
                       lift=float(summary.get("lift", 0.0)), episodes=int(train.get("planned", 0)))


@flow(name="next-round", flow_run_name=prefect_view.campaign_run_name)
def next_round(params: CampaignParams) -> RoundSummary:
    """Run the campaign's next round (what a scheduled deployment or a manual trigger runs)."""
    settings = load_settings(**params.overrides)
    registry = steps.open_registry(settings)
    info = registry.create_campaign(params.campaign, settings.public_dict(), exist_ok=True)
    with campaign_lease(registry, params.campaign, ttl_s=settings.lease_ttl_s, wait_s=settings.lease_wait_s):
        rounds = registry.rounds(info.id)
        index = next((r.index for r in rounds if r.status != "finished"), len(rounds))
        runner = curriculum_round.with_options(task_runner=task_runner(settings))
        with tags(*prefect_view.run_tags(params.campaign)):
            summary = runner(RoundParams(campaign=params.campaign, round_index=index, overrides=params.overrides))
        round_tracking.close_campaign(settings, params.campaign)
    return summary

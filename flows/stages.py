"""A round's stages, each done once: a resumed round reads a finished stage back from the registry.

Stages in order: ``eval_before`` (the model in on the held-out suite), ``diagnose``, ``generate`` (variants into
the arm's pool), ``plan`` (the wave), ``train`` (the wave's rollouts with the model in), ``train_model`` (the
trainer; its model is the model out) and ``eval_after`` (the model out on the same suite); with transfer suites,
``transfer_before`` and ``transfer_after`` play their held-out splits beside the two evaluations. Each is marked
finished in the registry with the model it played or produced, in the same transaction as its output. A stage
holds one model's episodes: when the model a stage must play is not the one it recorded (training was redone and
came out different), or the trained model's files are gone, the stage is done again whole, and a line says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout import EpisodeKey
from curriculum import History, Wave
from diagnosis import WeaknessReport
from flows import model_spec, rollouts, transfer, waves
from flows.context import RoundContext, sorted_records
from flows.interrupt import hold_if_stopping
from flows.models import RoundSummary, StageResult
from flows.packs import add_pack
from flows.registered_models import model_ref, register_ref
from flows.training import train
from flows.validity import check_invalid_share
from flows.weaknesses import diagnose_round, weakness_entries
from registry import ModelInfo, PoolPack, RoundInfo, StageDone

EVAL_BEFORE, DIAGNOSE, GENERATE, PLAN = rollouts.EVAL_BEFORE, "diagnose", "generate", "plan"
TRAIN, TRAIN_MODEL, EVAL_AFTER = rollouts.TRAIN, "train_model", rollouts.EVAL_AFTER
TRANSFER_BEFORE, TRANSFER_AFTER = transfer.TRANSFER_BEFORE, transfer.TRANSFER_AFTER
STAGES = (EVAL_BEFORE, TRANSFER_BEFORE, DIAGNOSE, GENERATE, PLAN, TRAIN, TRAIN_MODEL, EVAL_AFTER, TRANSFER_AFTER)
"""A round's stages, in the order they run (the transfer ones only with a transfer suite)."""

RunBatches = Callable[[RoundContext, str, ModelInfo, list[EpisodeKey]], list[EpisodeRecord]]
"""Plays a stage's episodes not yet recorded (``flows.round`` submits them as Prefect tasks)."""


def _ref(ctx: RoundContext, model_id: int) -> str:
    return model_ref(ctx.registry.model(model_id)).ref


def episodes(ctx: RoundContext, stage: str, model: ModelInfo, keys: list[EpisodeKey],
             run: RunBatches, *, check_invalid: bool = True) -> StageResult:
    """Play a stage's episodes with ``model``, skipping those it recorded; a stage of another model is redone whole.

    Args:
        ctx: The round.
        stage: The stage.
        model: The model that plays it.
        keys: The stage's episodes.
        run: Plays the episodes not yet recorded.
        check_invalid: Fail the round when too many of the stage's episodes are invalid (``max_invalid_share``).

    Returns:
        The stage's counts (``reused``: episodes recorded before, e.g. by the killed run a resume continues).
    """
    hold_if_stopping()
    done = ctx.stage(stage)
    if done is not None and done.model_id == model.id:
        return StageResult(stage=stage, planned=len(keys), reused=len(keys))
    others = {m: n for m, n in ctx.registry.stage_models(ctx.round.id, stage).items() if m != model.id}
    if others or done is not None:
        held = ", ".join(f"{n} of {_ref(ctx, m)}" for m, n in sorted(others.items())) or "none"
        ctx.say(f"{ctx.where}: {stage} holds episodes of another model ({held}), not of {model_ref(model).ref} "
                "that it must play now: the stage is played again whole")
        ctx.registry.reset_stages(ctx.round.id, [stage])
        ctx.registry.drop_stage_episodes(ctx.round.id, stage, keep_model_id=model.id)
    recorded = {(k.pack_id, k.task_id, k.seed, k.attempt)
                for k in ctx.registry.finished_episode_keys(ctx.round.id, stage=stage, model_id=model.id)}
    todo = [k for k in keys if (k.pack_id, k.task_id, k.seed, k.attempt) not in recorded]
    ran = run(ctx, stage, model, todo) if todo else []
    if check_invalid:
        check_invalid_share(ctx.settings, ctx.registry, ctx.round.id, stage, model.id)
    result = StageResult(stage=stage, planned=len(keys), ran=len(ran), reused=len(keys) - len(todo))
    ctx.registry.finish_stage(ctx.round.id, StageDone(stage=stage, model_id=model.id,
                                                      details=result.model_dump(exclude={"seconds"})))
    return result


def trained_in(ctx: RoundContext) -> RoundInfo | None:
    """The arm's latest earlier round that produced the model in (the last promoted one; ``None`` for round 0's)."""
    return next((r for r in reversed(ctx.earlier_rounds()) if r.model_out_id == ctx.model_in.id), None)


def reuse_previous_eval(ctx: RoundContext) -> int:
    """The model in is an earlier round's model out: that round's re-evaluation is this round's evaluation."""
    source = trained_in(ctx)
    if source is None or ctx.stage(EVAL_BEFORE) is not None:
        return 0
    return rollouts.copy_stage(ctx.registry, source.id, EVAL_AFTER, ctx.round.id, EVAL_BEFORE, ctx.model_in.id,
                               ctx.suite)


def transfer_episodes(ctx: RoundContext, stage: str, model: ModelInfo, run: RunBatches) -> StageResult | None:
    """Play one side of the round's transfer suites with ``model`` (``None`` when the campaign has no suite).

    ``transfer_before`` reuses the ``transfer_after`` of the earlier round whose model out is this round's model in,
    as the held-out evaluation does. Invalid transfer episodes are counted in the suite's result; they
    never fail the round.
    """
    if not ctx.transfer_keys:
        return None
    source = trained_in(ctx) if stage == TRANSFER_BEFORE else None
    if source is not None and ctx.stage(TRANSFER_BEFORE) is None:
        rollouts.copy_stage(ctx.registry, source.id, TRANSFER_AFTER, ctx.round.id, TRANSFER_BEFORE,
                            ctx.model_in.id, ctx.transfer_keys)
    return episodes(ctx, stage, model, ctx.transfer_keys, run, check_invalid=False)


def _report(data: dict[str, object] | None) -> WeaknessReport | None:
    return WeaknessReport.model_validate(data) if data is not None else None


def diagnose(ctx: RoundContext) -> WeaknessReport:
    """Diagnose the model in's held-out episodes (in key order) against the arm's previous report."""
    done, stored = ctx.stage(DIAGNOSE), _report(ctx.registry.weakness_report(ctx.round.id))
    if done is not None and done.model_id == ctx.model_in.id and stored is not None:
        return stored
    records = sorted_records(ctx.registry.round_episodes(ctx.round.id, stage=EVAL_BEFORE, model_id=ctx.model_in.id))
    packs = [ctx.pack(pid) for pid in sorted({r.pack_id for r in records})]
    previous_round = ctx.previous_round()
    previous = _report(ctx.registry.weakness_report(previous_round.id)) if previous_round is not None else None
    report = diagnose_round(records, packs, previous, ctx.index, ctx.settings.curriculum.seed)
    ctx.registry.record_weaknesses(ctx.round.id, weakness_entries(report), report=report.model_dump(mode="json"),
                                   done=StageDone(stage=DIAGNOSE, model_id=ctx.model_in.id,
                                                  details={"weaknesses": len(report.weaknesses)}))
    return report


def earlier_variants(ctx: RoundContext) -> list[str]:
    """The variant packs the arm's earlier rounds added to its pool, in the order they were added."""
    previous = ctx.previous_round()
    if previous is None:
        return []
    return [p.pack_id for p in ctx.registry.pool(previous.id) if p.role != "base"]


def pool(ctx: RoundContext) -> list[Pack]:
    """The packs the round plans from (recorded by ``generate``): base packs, then the arm's variants."""
    recorded = ctx.registry.pool(ctx.round.id)
    if not recorded:
        return [*ctx.base, *(ctx.pack(p) for p in earlier_variants(ctx))]
    return [ctx.pack(p.pack_id) for p in recorded]


Request = Callable[[RoundContext, WeaknessReport, list[Pack]], list[Pack]]
"""Asks the factory for a round's variants (``flows.round`` retries it as a Prefect task)."""


def generate(ctx: RoundContext, report: WeaknessReport, request: Request) -> list[str]:
    """Ask the factory for variants aimed at the report, add them to the registry and the arm's pool."""
    done = ctx.stage(GENERATE)
    if done is not None and done.model_id == ctx.model_in.id:
        return [str(v) for v in done.details.get("variants", [])]
    earlier = earlier_variants(ctx)
    before = [*ctx.base, *(ctx.pack(p) for p in earlier)]
    packs = request(ctx, report, before)
    for pack in packs:
        add_pack(ctx.registry, pack)
    added = [p.id for p in packs if p.id not in earlier]
    members = ([PoolPack(pack_id=p.id, role="base") for p in ctx.base]
               + [PoolPack(pack_id=p, role="variant") for p in earlier]
               + [PoolPack(pack_id=p, role="added") for p in dict.fromkeys(added)])
    ctx.registry.record_pool(ctx.round.id, members, done=StageDone(stage=GENERATE, model_id=ctx.model_in.id,
                                                                   details={"variants": [p.id for p in packs]}))
    return [p.id for p in packs]


def history(ctx: RoundContext) -> History:
    """The curriculum's memory of the arm's earlier rounds: their waves and training groups, from the registry."""
    out = History()
    for info in ctx.earlier_rounds():
        recorded = ctx.registry.wave(info.id)
        if recorded is None:
            continue
        summaries = ctx.registry.episode_summaries(info.id, stage=TRAIN, model_id=info.model_in_id)
        out = waves.update_history(out, waves.recorded_wave(recorded, info.index), summaries)
    return out


def plan(ctx: RoundContext, report: WeaknessReport) -> Wave:
    """Plan the round's wave over its pool with the arm's history."""
    done, recorded = ctx.stage(PLAN), ctx.registry.wave(ctx.round.id)
    if done is not None and done.model_id == ctx.model_in.id and recorded is not None:
        return waves.recorded_wave(recorded, ctx.index)
    wave = waves.plan(report, pool(ctx), history(ctx), ctx.settings, ctx.index, regressed(ctx))
    ctx.registry.record_wave(ctx.round.id, waves.wave_entries(wave),
                             {"strategy": wave.strategy, "message": wave.message, "k": wave.k, "budget": wave.budget},
                             plan=wave.model_dump(mode="json"),
                             done=StageDone(stage=PLAN, model_id=ctx.model_in.id, details={"tasks": len(wave.entries)}))
    return wave


def regressed(ctx: RoundContext) -> dict[str, int]:
    """Held-out tasks the model in lost (pass->fail) per template in the round that trained it (none for round 0's)."""
    source = trained_in(ctx)
    summary = RoundSummary.model_validate(source.details["summary"]) if source and "summary" in source.details \
        else None
    return {name: f.pass_to_fail for name, f in summary.template_flips.items() if f.pass_to_fail} if summary else {}


def model_present(model: ModelInfo) -> bool:
    """Whether a trained model's files can be read here (an endpoint is always there)."""
    return model.artifact is None or Path(model.artifact).exists()


def train_model(ctx: RoundContext, wave: Wave) -> ModelInfo:
    """Train the model in on the wave's rollouts (in key order) and register the model out."""
    done = ctx.stage(TRAIN_MODEL)
    if done is not None:
        model = model_spec.local_model(ctx.registry.model(done.model_id), ctx.settings)
        if model_present(model):
            return model
        ctx.say(f"{ctx.where}: the trained model {model_ref(model).ref} is gone ({model.artifact} does not "
                                                                                 "exist): training again")
        ctx.registry.reset_stages(ctx.round.id, [TRAIN_MODEL])
    records = sorted_records(ctx.registry.round_episodes(ctx.round.id, stage=TRAIN, model_id=ctx.model_in.id))
    ref = train(ctx.settings, ctx.model_in, wave, records, pool(ctx), ctx.folder)
    if ref.name == ctx.model_in.name and ref.registry_version == ctx.model_in.version:
        model = ctx.model_in
    else:
        model = register_ref(ctx.registry, ref, ctx.model_in.id)
    ctx.registry.finish_stage(ctx.round.id, StageDone(stage=TRAIN_MODEL, model_id=model.id,
                                                      details={"model": model_ref(model).ref}))
    return model

"""Shared slot filling: retention, targeted quotas, replay and exploration, with reasons."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from arena.checks.careful import template_of
from curriculum.matching import band_score, estimated_success, grain_label, matches
from curriculum.models import CurriculumConfig, History, Source, TaskRef, WaveEntry
from diagnosis import Weakness, WeaknessReport


@dataclass
class PlanContext:
    """Everything a strategy reads while planning one wave.

    Attributes:
        report: The weakness report of the model to train.
        pool: Schedulable tasks (train split), in a stable order.
        history: Earlier waves and group results.
        config: Planning settings.
        round_index: Round the wave is for.
        slots: Tasks the wave can hold (budget // k).
        rng: The seeded random source.
        notes: Messages collected while planning.
        dropped: Tasks skipped because their last group scored uniformly.
    """

    report: WeaknessReport
    pool: list[TaskRef]
    history: History
    config: CurriculumConfig
    round_index: int
    slots: int
    rng: random.Random
    notes: list[str] = field(default_factory=list)
    dropped: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class _Picked:
    entries: list[WaveEntry] = field(default_factory=list)
    keys: set[tuple[str, str]] = field(default_factory=set)

    def add(self, entry: WaveEntry) -> None:
        self.entries.append(entry)
        self.keys.add(entry.key)


def _band_text(success: float | None, ctx: PlanContext) -> str:
    band = f"[{ctx.config.band_low:g}, {ctx.config.band_high:g}]"
    if success is None:
        return "never tried"
    where = "inside" if ctx.config.band_low <= success <= ctx.config.band_high else "outside"
    return f"estimated success {success:.2f} {where} band {band}"


def _overlap(task: TaskRef, weakness: Weakness) -> str:
    shared = sorted(set(task.tags) & set(weakness.focus_tags))
    via = f"tags {', '.join(shared)}" if shared else f"domain {task.domain}"
    return f"{via}, tool {weakness.tool}" if weakness.tool and weakness.tool in task.tools else via


def _ranked(ctx: PlanContext, tasks: list[TaskRef],
            also: list[Weakness] | None = None) -> list[tuple[TaskRef, float | None, float]]:
    """Tasks by band preference (best first), then by how many of ``also`` they exercise, then the seeded shuffle.

    A task that exercises several of the targeted weaknesses trains all of them with the same episodes, so
    among tasks equally placed in the learnability band it goes first.
    """
    order = list(tasks)
    ctx.rng.shuffle(order)
    scored = [(t, estimated_success(ctx.history, t)) for t in order]
    with_score = [(t, s, band_score(s, ctx.config)) for t, s in scored]
    others = also or []
    with_score.sort(key=lambda item: (-item[2], -sum(matches(item[0], w) for w in others)))
    return with_score


def quotas(weights: dict[str, float], slots: int) -> dict[str, int]:
    """Split ``slots`` by weight with the largest-remainder method (ties by name)."""
    total = sum(weights.values())
    if slots <= 0 or total <= 0:
        return {k: 0 for k in weights}
    exact = {k: slots * w / total for k, w in weights.items()}
    out = {k: int(v) for k, v in exact.items()}
    rest = slots - sum(out.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[:rest]:
        out[k] += 1
    return out


def eligible(ctx: PlanContext, picked: _Picked) -> list[TaskRef]:
    """Pool tasks not yet picked and not dropped."""
    return [t for t in ctx.pool if t.key not in picked.keys and t.key not in ctx.dropped]


def _kin(ctx: PlanContext, weakness: Weakness, targeted: set[str]) -> list[Weakness]:
    """The same kind's other grains that no quota targets, in the report's order."""
    return [w for w in ctx.report.weaknesses
            if w.kind == weakness.kind and w is not weakness and grain_label(w) not in targeted]


def _fill_weakness(ctx: PlanContext, picked: _Picked, label: str, weakness: Weakness, wanted: int,
                   others: list[Weakness], labels: set[str], why: dict[str, str]) -> int:
    """Pick up to ``wanted`` tasks of a weakness, then of its kind's other grains; returns how many."""
    filled = 0
    for grain in [weakness, *_kin(ctx, weakness, labels)]:
        if filled == wanted:
            break
        candidates = [t for t in eligible(ctx, picked) if matches(t, grain)]
        chosen = _ranked(ctx, candidates, others)[:wanted - filled]
        if grain is weakness and len(chosen) < wanted:
            ctx.notes.append(f"weakness {label!r} has {len(candidates)} matching task(s) for {wanted} slot(s)")
        instead = "" if grain is weakness else f"{grain_label(grain)}, its kind's grain, in place of "
        for task, success, _ in chosen:
            picked.add(WaveEntry(
                pack_id=task.pack_id, task_id=task.task_id, weight=0.0, source="targeted",
                weakness=weakness.kind, grain=grain_label(grain), estimated_success=success,
                reason=f"targets {instead}{label} ({why[label]}); via {_overlap(task, grain)}; "
                       f"{_band_text(success, ctx)}",
            ))
        filled += len(chosen)
    return filled


def fill_targeted(ctx: PlanContext, picked: _Picked, weights: dict[str, float], slots: int,
                  why: dict[str, str]) -> int:
    """Give each weighted weakness its quota of matching tasks; returns slots left.

    ``weights`` are keyed by a weakness's grain label (``grain_label``) or by its kind (the first weakness of
    that kind). Within a weakness, tasks in the learnability band go first, then tasks that also exercise more
    of the other weighted weaknesses (see ``_ranked``). A weakness with fewer matching tasks than its quota
    gives the rest to its kind's other grains first (the report's order), so a grain only a factory variant
    can practise does not hand its kind's slots to another kind. What a kind cannot use is split again, by
    weight, among the weaknesses that still have tasks, so it goes to the heaviest of them, not to whichever
    is ranked next.
    """
    by_label: dict[str, Weakness] = {}
    for w in ctx.report.weaknesses:
        by_label.setdefault(grain_label(w), w)
        by_label.setdefault(w.kind, w)
    open_weights = {k: v for k, v in weights.items() if k in by_label}
    targeted = [by_label[k] for k in open_weights]
    labels = {grain_label(w) for w in targeted}
    order = sorted(open_weights, key=lambda k: (by_label[k].rank, k))
    left = slots
    while left and open_weights:
        share = quotas(open_weights, left)
        short = []
        for label in order:
            if not share[label]:
                continue
            weakness = by_label[label]
            filled = _fill_weakness(ctx, picked, label, weakness, share[label],
                                    [w for w in targeted if w is not weakness], labels, why)
            left -= filled
            if filled < share[label]:
                short.append(label)
        if not short:
            break
        open_weights = {k: v for k, v in open_weights.items() if k not in short}
        order = [k for k in order if k in open_weights]
    return left


def template(task: TaskRef) -> str:
    """A task's template as flips name it: ``domain/template`` (``arena.core.flips``)."""
    return template_of(f"{task.domain or task.pack_id}/{task.task_id}")


def fill_retention(ctx: PlanContext, picked: _Picked) -> int:
    """The retention share: training tasks of the templates the model lost held-out tasks of; returns tasks added.

    Sized from measured forgetting: ``retention_per_flip`` tasks per held-out task lost (pass->fail) in the round
    that produced the model, split among the regressed templates by how many each lost, best band score first.
    """
    lost = {k: v for k, v in ctx.config.regressed.items() if v > 0}
    wanted = min(ctx.slots, ctx.config.retention_per_flip * sum(lost.values()))
    if not wanted:
        return 0
    added = 0
    for name, share in quotas({k: float(v) for k, v in lost.items()}, wanted).items():
        candidates = [t for t in eligible(ctx, picked) if template(t) == name]
        if len(candidates) < share:
            ctx.notes.append(f"template {name!r} has {len(candidates)} training task(s) for {share} retention slot(s)")
        for task, success, _ in _ranked(ctx, candidates)[:share]:
            picked.add(WaveEntry(
                pack_id=task.pack_id, task_id=task.task_id, weight=0.0, source="replay", estimated_success=success,
                reason=f"retention: the model lost {lost[name]} held-out task(s) of {name} (pass->fail) in its last "
                       f"round; {_band_text(success, ctx)}",
            ))
            added += 1
    return added


def fill_replay(ctx: PlanContext, picked: _Picked, slots: int) -> int:
    """Replay tasks of earlier waves (against forgetting), best band score first; returns slots left.

    With a retention share (``retention_per_flip``), templates the latest wave did not practise go first: a model
    forgets what it stops being trained on.
    """
    if slots <= 0:
        return 0
    last_seen: dict[tuple[str, str], int] = {}
    for wave in ctx.history.waves:
        for entry in wave.entries:
            last_seen[entry.key] = wave.round_index
    candidates = [t for t in eligible(ctx, picked) if t.key in last_seen]
    if not candidates:
        if ctx.history.waves:
            ctx.notes.append("no task of an earlier wave is left to replay")
        return slots
    ranked = _ranked(ctx, candidates)
    if ctx.config.retention_per_flip:
        latest = {e.key for e in ctx.history.waves[-1].entries}
        practised = {template(t) for t in ctx.pool if t.key in latest}
        ranked.sort(key=lambda item: template(item[0]) in practised)
    chosen = ranked[:slots]
    for task, success, _ in chosen:
        picked.add(WaveEntry(
            pack_id=task.pack_id, task_id=task.task_id, weight=0.0, source="replay", estimated_success=success,
            reason=f"replay from round {last_seen[task.key]} against forgetting; {_band_text(success, ctx)}",
        ))
    return slots - len(chosen)


def fill_explore(ctx: PlanContext, picked: _Picked, slots: int) -> int:
    """Explore the rest of the pool, tasks never tried first; returns slots left."""
    if slots <= 0:
        return 0
    candidates = eligible(ctx, picked)
    ctx.rng.shuffle(candidates)
    candidates.sort(key=lambda t: ctx.history.task(t.pack_id, t.task_id) is not None)
    for task in candidates[:slots]:
        success = estimated_success(ctx.history, task)
        picked.add(WaveEntry(
            pack_id=task.pack_id, task_id=task.task_id, weight=0.0, source="explore", estimated_success=success,
            reason=f"explore {task.category or task.domain or 'task'}; {_band_text(success, ctx)}",
        ))
    return max(0, slots - len(candidates))


def finish(picked: _Picked, band_weighting: bool, ctx: PlanContext) -> list[WaveEntry]:
    """Set the entries' weights (band preference when asked, else equal) so they sum to 1."""
    raw = [band_score(e.estimated_success, ctx.config) if band_weighting else 1.0 for e in picked.entries]
    total = sum(raw)
    return [e.model_copy(update={"weight": r / total}) for e, r in zip(picked.entries, raw, strict=True)] \
        if total > 0 else []


def mix(ctx: PlanContext, weights: dict[str, float], why: dict[str, str]) -> list[WaveEntry]:
    """The standard mix: the retention share, then targeted quotas, replay and exploration of what is left.

    Unused slots move down the line.
    """
    cfg = ctx.config
    picked = _Picked()
    slots = ctx.slots - fill_retention(ctx, picked)
    targeted = round(slots * cfg.targeted) if weights else 0
    replay = round(slots * cfg.replay)
    if not weights:
        ctx.notes.append("the report has no weakness to target: the wave is replay and exploration only")
    left = fill_targeted(ctx, picked, weights, targeted, why) if targeted else 0
    left = fill_replay(ctx, picked, min(replay + left, ctx.slots - len(picked.entries)))
    rest = ctx.slots - len(picked.entries)
    if fill_explore(ctx, picked, rest):
        ctx.notes.append(f"the pool holds {len(picked.entries)} schedulable task(s) for {ctx.slots} slot(s)")
    return finish(picked, True, ctx)


def sample_uniform(ctx: PlanContext) -> list[WaveEntry]:
    """Tasks drawn uniformly from the pool, without regard to weaknesses or history."""
    pool = list(ctx.pool)
    ctx.rng.shuffle(pool)
    if len(pool) < ctx.slots:
        ctx.notes.append(f"the pool holds {len(pool)} task(s) for {ctx.slots} slot(s)")
    picked = _Picked()
    for task in pool[:ctx.slots]:
        picked.add(WaveEntry(pack_id=task.pack_id, task_id=task.task_id, weight=0.0, source="explore",
                             estimated_success=estimated_success(ctx.history, task),
                             reason="uniform sample of the pool"))
    return finish(picked, False, ctx)


SOURCES: tuple[Source, ...] = ("targeted", "replay", "explore")
"""Entry sources in wave order."""

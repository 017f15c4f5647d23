"""Read queries the loop needs: held-out suites, task history, waves and lineage."""

from __future__ import annotations

from sqlalchemy import case, func, not_, select
from sqlalchemy.orm import Session

from registry import _convert as conv
from registry.records import Lineage, LineageStep, PackInfo, TaskKey, TaskRef, TaskRoundStats, WaveInfo
from registry.schema import EpisodeRow, ModelRow, PackRow, RoundRow, TaskRow, WaveEntryRow, WaveRow, WeaknessRow


def heldout_suite(s: Session, domain: str, include_variants: bool) -> list[TaskRef]:
    """Return the held-out tasks of ``domain``'s packs (base packs only unless ``include_variants``)."""
    stmt = (
        select(TaskRow)
        .join(PackRow, PackRow.id == TaskRow.pack_id)
        .where(PackRow.domain == domain, TaskRow.split == "heldout")
        .order_by(PackRow.added_at, PackRow.id, TaskRow.task_id)
    )
    if not include_variants:
        stmt = stmt.where(PackRow.parent.is_(None))
    return [conv.task_ref(row, domain) for row in s.scalars(stmt)]


def task_history(
    s: Session, keys: set[TaskKey] | None, campaign_id: int | None, stage: str
) -> dict[TaskKey, list[TaskRoundStats]]:
    """Return valid-episode counts, passes and mean score per task and round, oldest round first."""
    stmt = (
        select(
            EpisodeRow.pack_id, EpisodeRow.task_id, RoundRow.id, RoundRow.campaign_id, RoundRow.index,
            RoundRow.model_in_id, func.count(EpisodeRow.id), func.sum(case((EpisodeRow.passed, 1), else_=0)),
            func.avg(EpisodeRow.score),
        )
        .join(RoundRow, RoundRow.id == EpisodeRow.round_id)
        .where(EpisodeRow.stage == stage, not_(EpisodeRow.invalid))
        .group_by(EpisodeRow.pack_id, EpisodeRow.task_id, RoundRow.id, RoundRow.campaign_id, RoundRow.index,
                  RoundRow.model_in_id)
        .order_by(RoundRow.id, EpisodeRow.pack_id, EpisodeRow.task_id)
    )
    if campaign_id is not None:
        stmt = stmt.where(RoundRow.campaign_id == campaign_id)
    if keys is not None:
        stmt = stmt.where(EpisodeRow.pack_id.in_(sorted({k.pack_id for k in keys})))
    history: dict[TaskKey, list[TaskRoundStats]] = {k: [] for k in keys} if keys is not None else {}
    for pack_id, task_id, round_id, camp, index, model_in, n, passes, mean in s.execute(stmt):
        key = TaskKey(pack_id=pack_id, task_id=task_id)
        if keys is not None and key not in keys:
            continue
        history.setdefault(key, []).append(
            TaskRoundStats(
                pack_id=pack_id, task_id=task_id, round_id=round_id, campaign_id=camp, round_index=index, stage=stage,
                model_in_id=model_in, episodes=int(n), passes=int(passes or 0), mean_score=float(mean or 0.0),
            )
        )
    return history


def wave(s: Session, round_id: int) -> WaveInfo | None:
    """Return the wave of round ``round_id``, if any."""
    row = s.scalars(select(WaveRow).where(WaveRow.round_id == round_id)).first()
    if row is None:
        return None
    entries = s.scalars(select(WaveEntryRow).where(WaveEntryRow.wave_id == row.id).order_by(WaveEntryRow.position))
    return WaveInfo(id=row.id, round_id=round_id, entries=[conv.wave_entry(e) for e in entries],
                    details=dict(row.details), plan=dict(row.plan) if row.plan is not None else None,
                    created_at=conv.aware(row.created_at))


def _packs_with_ancestors(s: Session, pack_ids: set[str]) -> list[PackInfo]:
    found: dict[str, PackRow] = {}
    frontier = set(pack_ids)
    while frontier:
        rows = list(s.scalars(select(PackRow).where(PackRow.id.in_(sorted(frontier)))))
        found.update((r.id, r) for r in rows)
        frontier = {r.parent for r in rows if r.parent is not None and r.parent not in found}
    return [conv.pack_info(r) for r in sorted(found.values(), key=lambda r: (r.added_at, r.id))]


def lineage(s: Session, model_id: int) -> Lineage:
    """Return the lineage of the registered model ``model_id``, newest model first."""
    steps: list[LineageStep] = []
    seen: set[int] = set()
    current: int | None = model_id
    while current is not None and current not in seen:
        seen.add(current)
        model = s.get(ModelRow, current)
        if model is None:
            break
        produced = s.scalars(
            select(RoundRow).where(RoundRow.model_out_id == current).order_by(RoundRow.id.desc())
        ).first()
        if produced is None:
            steps.append(LineageStep(model=conv.model_info(model), round=None, weaknesses=[], wave=[], packs=[]))
        else:
            weaknesses = s.scalars(
                select(WeaknessRow).where(WeaknessRow.round_id == produced.id).order_by(WeaknessRow.rank)
            )
            planned = wave(s, produced.id)
            entries = planned.entries if planned is not None else []
            steps.append(
                LineageStep(
                    model=conv.model_info(model),
                    round=conv.round_info(produced),
                    weaknesses=[conv.weakness_entry(w) for w in weaknesses],
                    wave=entries,
                    packs=_packs_with_ancestors(s, {e.pack_id for e in entries}),
                )
            )
        current = model.parent_id
    return Lineage(model=steps[0].model, steps=steps)

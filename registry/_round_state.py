"""What a round leaves besides its episodes: finished stages, its pool, its weakness report and its wave.

Each write can mark the stage it completes in the same transaction (``StageDone``), so a killed round is
never found with a stage's output recorded but the stage not done, or the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from registry import _convert as conv
from registry import _queries as queries
from registry._session import Sessions
from registry.errors import RegistryError
from registry.records import PoolPack, PoolRole, StageDone, StageInfo, WaveEntry, WaveInfo, WeaknessEntry
from registry.schema import (
    EpisodeRow,
    ModelRow,
    PackRow,
    RoundPackRow,
    RoundStageRow,
    TaskRow,
    WaveEntryRow,
    WaveRow,
    WeaknessReportRow,
    WeaknessRow,
    utcnow,
)


def missing_tasks(s: Session, pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (pack, task) pairs of ``pairs`` that are not registered, sorted."""
    pack_ids = sorted({p for p, _ in pairs})
    known = set(s.execute(select(TaskRow.pack_id, TaskRow.task_id).where(TaskRow.pack_id.in_(pack_ids))))
    return sorted(pairs - known)


class RoundState(Sessions):
    """Stages, pools, weakness reports and waves of rounds (a part of ``Registry``)."""

    def _mark(self, s: Session, round_id: int, done: StageDone | None) -> None:
        if done is None:
            return
        if s.get(ModelRow, done.model_id) is None:
            raise RegistryError(f"round {round_id}: stage {done.stage!r} names model id {done.model_id}, which is not "
                                "registered")
        row = s.scalars(select(RoundStageRow).where(RoundStageRow.round_id == round_id,
                                                    RoundStageRow.stage == done.stage)).first()
        if row is None:
            row = RoundStageRow(round_id=round_id, stage=done.stage)
            s.add(row)
        row.model_id, row.details, row.finished_at = done.model_id, dict(done.details), utcnow()
        s.flush()

    # Stages -------------------------------------------------------------------------

    def finish_stage(self, round_id: int, done: StageDone) -> StageInfo:
        """Mark a stage of a round finished, with the model it played (or produced) and what it left.

        Raises:
            RegistryError: Unknown round or model.
        """
        with self._write(f"marking stage {done.stage!r} of round {round_id} finished") as s:
            self._round_row(s, round_id)
            self._mark(s, round_id, done)
            row = s.scalars(select(RoundStageRow).where(RoundStageRow.round_id == round_id,
                                                        RoundStageRow.stage == done.stage)).one()
            return conv.stage_info(row)

    def stages(self, round_id: int) -> dict[str, StageInfo]:
        """Return the finished stages of a round, by name."""
        with self._read() as s:
            rows = s.scalars(select(RoundStageRow).where(RoundStageRow.round_id == round_id)
                             .order_by(RoundStageRow.finished_at, RoundStageRow.id))
            return {r.stage: conv.stage_info(r) for r in rows}

    def reset_stages(self, round_id: int, stages: Sequence[str]) -> int:
        """Forget that these stages of a round finished (they run again); return how many were marked.

        Raises:
            RegistryError: Unknown round.
        """
        with self._write(f"resetting stages {list(stages)} of round {round_id}") as s:
            self._round_row(s, round_id)
            result = s.execute(delete(RoundStageRow).where(RoundStageRow.round_id == round_id,
                                                           RoundStageRow.stage.in_(list(stages))))
            return int(getattr(result, "rowcount", 0) or 0)

    def stage_models(self, round_id: int, stage: str) -> dict[int, int]:
        """Return how many episodes of a round's stage each model played, by model id."""
        with self._read() as s:
            rows = s.execute(select(EpisodeRow.model_id, func.count(EpisodeRow.id))
                             .where(EpisodeRow.round_id == round_id, EpisodeRow.stage == stage)
                             .group_by(EpisodeRow.model_id))
            return {int(m): int(n) for m, n in rows}

    def drop_stage_episodes(self, round_id: int, stage: str, *, keep_model_id: int) -> int:
        """Delete a stage's episodes played by any model but ``keep_model_id``; return how many went.

        A stage holds one model's episodes: when the model a stage must play changed (it was trained again and
        came out different), the other model's episodes would mix two models in one pass rate.

        Raises:
            RegistryError: Unknown round.
        """
        with self._write(f"dropping superseded {stage} episodes of round {round_id}") as s:
            self._round_row(s, round_id)
            result = s.execute(delete(EpisodeRow).where(EpisodeRow.round_id == round_id, EpisodeRow.stage == stage,
                                                        EpisodeRow.model_id != keep_model_id))
            return int(getattr(result, "rowcount", 0) or 0)

    # Pools --------------------------------------------------------------------------

    def record_pool(self, round_id: int, packs: Sequence[PoolPack], *, done: StageDone | None = None) -> int:
        """Replace a round's pool with ``packs`` (every pack it may plan from); return how many were stored.

        Raises:
            RegistryError: Unknown round, or a pack is not registered.
        """
        with self._write(f"recording the pool of round {round_id}") as s:
            self._round_row(s, round_id)
            ids = sorted({p.pack_id for p in packs})
            known = set(s.scalars(select(PackRow.id).where(PackRow.id.in_(ids))))
            unknown = [p for p in ids if p not in known]
            if unknown:
                raise RegistryError(f"round {round_id}: pool names {len(unknown)} unregistered pack(s) "
                                    f"({', '.join(p[:12] for p in unknown[:5])})")
            s.execute(delete(RoundPackRow).where(RoundPackRow.round_id == round_id))
            s.add_all(RoundPackRow(round_id=round_id, pack_id=p.pack_id, role=p.role)
                      for p in {p.pack_id: p for p in packs}.values())
            self._mark(s, round_id, done)
        return len({p.pack_id for p in packs})

    def pool(self, round_id: int) -> list[PoolPack]:
        """Return a round's pool: base packs, then variants in the order they were added."""
        with self._read() as s:
            rows = s.scalars(select(RoundPackRow).where(RoundPackRow.round_id == round_id).order_by(RoundPackRow.id))
            return [PoolPack(pack_id=r.pack_id, role=cast(PoolRole, r.role)) for r in rows]

    # Weaknesses --------------------------------------------------------------------

    def record_weaknesses(self, round_id: int, entries: Sequence[WeaknessEntry], *,
                          report: dict[str, Any] | None = None, done: StageDone | None = None) -> int:
        """Replace a round's weaknesses with ``entries`` (and its whole report); return how many were stored.

        Args:
            round_id: Round id.
            entries: The ranked weaknesses.
            report: The whole weakness report as JSON (what the next round's diagnosis reads for trends).
            done: The stage this completes.

        Raises:
            RegistryError: Unknown round, or two entries share a rank.
        """
        ranks = [e.rank for e in entries]
        dupes = sorted({r for r in ranks if ranks.count(r) > 1})
        if dupes:
            raise RegistryError(f"round {round_id}: weaknesses share rank(s) {dupes}")
        with self._write(f"recording weaknesses of round {round_id}") as s:
            self._round_row(s, round_id)
            s.execute(delete(WeaknessRow).where(WeaknessRow.round_id == round_id))
            s.add_all(WeaknessRow(round_id=round_id, **e.model_dump()) for e in entries)
            if report is not None:
                row = s.get(WeaknessReportRow, round_id)
                if row is None:
                    s.add(WeaknessReportRow(round_id=round_id, report=dict(report), created_at=utcnow()))
                else:
                    row.report, row.created_at = dict(report), utcnow()
            self._mark(s, round_id, done)
        return len(entries)

    def weaknesses(self, round_id: int) -> list[WeaknessEntry]:
        """Return a round's weaknesses, by rank."""
        with self._read() as s:
            rows = s.scalars(select(WeaknessRow).where(WeaknessRow.round_id == round_id).order_by(WeaknessRow.rank))
            return [conv.weakness_entry(r) for r in rows]

    def weakness_report(self, round_id: int) -> dict[str, Any] | None:
        """Return a round's whole weakness report as JSON, if one was recorded."""
        with self._read() as s:
            row = s.get(WeaknessReportRow, round_id)
            return dict(row.report) if row is not None else None

    # Waves -------------------------------------------------------------------------

    def record_wave(self, round_id: int, entries: Sequence[WaveEntry], details: dict[str, Any] | None = None, *,
                    plan: dict[str, Any] | None = None, done: StageDone | None = None) -> WaveInfo:
        """Replace a round's wave with ``entries`` (in planned order), ``details`` and the planner's whole ``plan``.

        Raises:
            RegistryError: Unknown round, or an entry's task is not registered.
        """
        with self._write(f"recording the wave of round {round_id}") as s:
            self._round_row(s, round_id)
            missing = missing_tasks(s, {(e.pack_id, e.task_id) for e in entries})
            if missing:
                shown = ", ".join(f"{p[:12]}/{t}" for p, t in missing[:5])
                raise RegistryError(f"round {round_id}: wave names {len(missing)} unregistered task(s) ({shown})")
            old = s.scalars(select(WaveRow).where(WaveRow.round_id == round_id)).first()
            if old is not None:
                s.execute(delete(WaveEntryRow).where(WaveEntryRow.wave_id == old.id))
                s.delete(old)
                s.flush()
            wave = WaveRow(round_id=round_id, details=dict(details or {}), plan=dict(plan) if plan else None,
                           created_at=utcnow())
            s.add(wave)
            s.flush()
            s.add_all(WaveEntryRow(wave_id=wave.id, position=i, **e.model_dump()) for i, e in enumerate(entries))
            self._mark(s, round_id, done)
            return WaveInfo(id=wave.id, round_id=round_id, entries=list(entries), details=dict(wave.details),
                            plan=dict(plan) if plan else None, created_at=conv.aware(wave.created_at))

    def wave(self, round_id: int) -> WaveInfo | None:
        """Return a round's wave, if one was recorded."""
        with self._read() as s:
            return queries.wave(s, round_id)

"""Rows to the registry's pydantic records."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar, cast

from registry.records import (
    ArmInfo,
    BaselineInfo,
    CampaignInfo,
    LeaseInfo,
    ModelInfo,
    PackInfo,
    RoundInfo,
    RoundStatus,
    StageInfo,
    TaskRef,
    WaveEntry,
    WeaknessEntry,
)
from registry.schema import (
    ArmRow,
    CampaignBaselineRow,
    CampaignLeaseRow,
    CampaignRow,
    ModelRow,
    PackRow,
    RoundRow,
    RoundStageRow,
    TaskRow,
    WaveEntryRow,
    WeaknessRow,
)

_T = TypeVar("_T", datetime, datetime | None)


def aware(value: _T) -> _T:
    """Return ``value`` as a UTC-aware datetime (SQLite gives them back naive)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def lease_info(row: CampaignLeaseRow, *, held: bool, previous: str | None = None) -> LeaseInfo:
    """A campaign lease row as a record."""
    return LeaseInfo(campaign=row.campaign, holder=row.holder, acquired_at=aware(row.acquired_at),
                     expires_at=aware(row.expires_at), held=held, previous=previous)


def model_info(row: ModelRow) -> ModelInfo:
    """Return the record of a ``models`` row."""
    return ModelInfo(
        id=row.id, name=row.name, version=row.version, kind=row.kind, parent_id=row.parent_id,
        artifact=row.artifact, endpoint=row.endpoint, params_hash=row.params_hash, details=dict(row.details),
        created_at=aware(row.created_at),
    )


def pack_info(row: PackRow) -> PackInfo:
    """Return the record of a ``packs`` row."""
    return PackInfo(
        id=row.id, parent=row.parent, domain=row.domain, schema_version=row.schema_version, seed=row.seed,
        knobs=dict(row.knobs), provenance=dict(row.provenance), created_by=row.created_by,
        storage_path=row.storage_path, added_at=aware(row.added_at),
    )


def task_ref(row: TaskRow, domain: str) -> TaskRef:
    """Return the record of a ``tasks`` row of a pack of ``domain``."""
    return TaskRef(
        pack_id=row.pack_id, task_id=row.task_id, domain=domain, split=row.split, category=row.category,
        tags=list(row.tags), content_hash=row.content_hash,
    )


def campaign_info(row: CampaignRow) -> CampaignInfo:
    """Return the record of a ``campaigns`` row."""
    return CampaignInfo(id=row.id, name=row.name, settings=dict(row.settings), created_at=aware(row.created_at))


def baseline_info(row: CampaignBaselineRow) -> BaselineInfo:
    """Return the record of a ``campaign_baselines`` row."""
    return BaselineInfo(number=row.number, first_round=row.first_round, contract=dict(row.contract),
                        change=row.change, created_at=aware(row.created_at))


def arm_info(row: ArmRow) -> ArmInfo:
    """Return the record of an ``arms`` row."""
    return ArmInfo(id=row.id, campaign_id=row.campaign_id, name=row.name, settings=dict(row.settings),
                   created_at=aware(row.created_at))


def stage_info(row: RoundStageRow) -> StageInfo:
    """Return the record of a ``round_stages`` row."""
    return StageInfo(round_id=row.round_id, stage=row.stage, model_id=row.model_id, details=dict(row.details),
                     finished_at=aware(row.finished_at))


def round_info(row: RoundRow) -> RoundInfo:
    """Return the record of a ``rounds`` row."""
    return RoundInfo(
        id=row.id, campaign_id=row.campaign_id, arm_id=row.arm_id, index=row.index,
        status=cast(RoundStatus, row.status), model_in_id=row.model_in_id, model_out_id=row.model_out_id,
        started_at=aware(row.started_at),
        finished_at=aware(row.finished_at), error=row.error, details=dict(row.details or {}),
    )


def weakness_entry(row: WeaknessRow) -> WeaknessEntry:
    """Return the record of a ``weaknesses`` row."""
    return WeaknessEntry(
        kind=row.kind, label=row.label, rank=row.rank, score=row.score, share=row.share,
        interval_low=row.interval_low, interval_high=row.interval_high, evidence=dict(row.evidence),
    )


def wave_entry(row: WaveEntryRow) -> WaveEntry:
    """Return the record of a ``wave_entries`` row."""
    return WaveEntry(pack_id=row.pack_id, task_id=row.task_id, weight=row.weight, reason=row.reason)

"""SQLAlchemy 2 ORM models of the registry's tables (the schema at the newest migration).

Tables: ``models``, ``packs`` (and ``pack_files``, their content), ``tasks``,
``campaigns`` (with ``campaign_baselines``), ``arms``, ``campaign_leases``, ``rounds`` (with ``round_stages``,
``round_packs`` and ``weakness_reports``), ``episodes`` (summary columns plus the
whole record as a zlib-compressed JSON blob, keyed with the model that played
them), ``weaknesses``, ``waves`` and ``wave_entries``. The Alembic migrations in
``registry/migrations/versions`` create exactly this schema; a test compares them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Constraint naming convention shared with the migrations."""


def utcnow() -> datetime:
    """Return the current time in UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of the registry's tables."""

    metadata = MetaData(naming_convention=NAMING)


class ModelRow(Base):
    """A model: a policy's parameters or a served endpoint."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(64))
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("models.id"))
    artifact: Mapped[str | None] = mapped_column(Text)
    endpoint: Mapped[str | None] = mapped_column(Text)
    params_hash: Mapped[str | None] = mapped_column(String(64))
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PackRow(Base):
    """A pack, by content id, with its provenance and where the store keeps it."""

    __tablename__ = "packs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    parent: Mapped[str | None] = mapped_column(String(64), index=True)
    domain: Mapped[str] = mapped_column(String(100), index=True)
    schema_version: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    knobs: Mapped[dict[str, Any]] = mapped_column(JSON)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_by: Mapped[str] = mapped_column(String(200))
    storage_path: Mapped[str] = mapped_column(Text)
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PackFileRow(Base):
    """One file of a pack, zlib-compressed: any machine with the registry can rebuild the pack's folder."""

    __tablename__ = "pack_files"

    pack_id: Mapped[str] = mapped_column(ForeignKey("packs.id"), primary_key=True)
    path: Mapped[str] = mapped_column(String(300), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class TaskRow(Base):
    """A task of a registered pack."""

    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("pack_id", "task_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pack_id: Mapped[str] = mapped_column(ForeignKey("packs.id"))
    task_id: Mapped[str] = mapped_column(String(80))
    split: Mapped[str] = mapped_column(String(16), index=True)
    category: Mapped[str] = mapped_column(String(100))
    tags: Mapped[list[str]] = mapped_column(JSON)
    content_hash: Mapped[str] = mapped_column(String(64))


class CampaignRow(Base):
    """A campaign: a named sequence of rounds."""

    __tablename__ = "campaigns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CampaignBaselineRow(Base):
    """What a campaign's rounds are measured against from one round on: its gyms, held-out suite and settings.

    Baseline 0 is recorded with the campaign's first round; each change accepted later (``--accept-change``)
    starts the next one, with the change it declared.
    """

    __tablename__ = "campaign_baselines"
    __table_args__ = (UniqueConstraint("campaign_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"))
    number: Mapped[int] = mapped_column(Integer)
    first_round: Mapped[int] = mapped_column(Integer)
    contract: Mapped[dict[str, Any]] = mapped_column(JSON)
    change: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ArmRow(Base):
    """An arm of a campaign: ``targeted`` or a control run beside it with the same budget."""

    __tablename__ = "arms"
    __table_args__ = (UniqueConstraint("campaign_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"))
    name: Mapped[str] = mapped_column(String(64))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CampaignLeaseRow(Base):
    """Which process is advancing a campaign, until when (renewed while it works)."""

    __tablename__ = "campaign_leases"

    campaign: Mapped[str] = mapped_column(String(200), primary_key=True)
    holder: Mapped[str] = mapped_column(String(300))
    acquired_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RoundRow(Base):
    """A round: model in, model out, status and timings."""

    __tablename__ = "rounds"
    __table_args__ = (UniqueConstraint("arm_id", "index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"))
    arm_id: Mapped[int] = mapped_column(ForeignKey("arms.id"))
    index: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    model_in_id: Mapped[int] = mapped_column(ForeignKey("models.id"))
    model_out_id: Mapped[int | None] = mapped_column(ForeignKey("models.id"), index=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, server_default=text("'{}'"))


class RoundStageRow(Base):
    """A finished stage of a round: the model it played (or produced) and what it left, so a resume skips it."""

    __tablename__ = "round_stages"
    __table_args__ = (UniqueConstraint("round_id", "stage"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"))
    stage: Mapped[str] = mapped_column(String(32))
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"))
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RoundPackRow(Base):
    """A pack in a round's pool: a base pack, or a variant the round (or an earlier one of its arm) added."""

    __tablename__ = "round_packs"
    __table_args__ = (UniqueConstraint("round_id", "pack_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"))
    pack_id: Mapped[str] = mapped_column(ForeignKey("packs.id"))
    role: Mapped[str] = mapped_column(String(16))


class WeaknessReportRow(Base):
    """A round's whole weakness report (the next round's diagnosis reads it for trends)."""

    __tablename__ = "weakness_reports"

    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"), primary_key=True)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class EpisodeRow(Base):
    """An episode: summary columns and the whole record, compressed, keyed with the model that played it."""

    __tablename__ = "episodes"
    __table_args__ = (
        UniqueConstraint("round_id", "stage", "model_id", "pack_id", "task_id", "seed", "attempt",
                         name="uq_episodes_round_stage_model_key"),
        ForeignKeyConstraint(["pack_id", "task_id"], ["tasks.pack_id", "tasks.task_id"]),
        Index("ix_episodes_pack_id_task_id", "pack_id", "task_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"))
    stage: Mapped[str] = mapped_column(String(32))
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"))
    pack_id: Mapped[str] = mapped_column(String(64))
    task_id: Mapped[str] = mapped_column(String(80))
    seed: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)
    episode_id: Mapped[str] = mapped_column(String(64))
    agent: Mapped[str] = mapped_column(String(100))
    model_ref: Mapped[str] = mapped_column(Text)
    passed: Mapped[bool] = mapped_column(Boolean)
    verified: Mapped[bool] = mapped_column(Boolean)
    score: Mapped[float] = mapped_column(Float)
    invalid: Mapped[bool] = mapped_column(Boolean)
    side_effect_penalty: Mapped[float] = mapped_column(Float)
    failure_boundary: Mapped[str | None] = mapped_column(String(32))
    failure_kind: Mapped[str | None] = mapped_column(String(100))
    failed_kinds: Mapped[str] = mapped_column(String(200))
    steps: Mapped[int] = mapped_column(Integer)
    turns: Mapped[int] = mapped_column(Integer)
    tokens_in: Mapped[int] = mapped_column(Integer)
    tokens_out: Mapped[int] = mapped_column(Integer)
    cost: Mapped[float] = mapped_column(Float)
    latency_s: Mapped[float] = mapped_column(Float)
    wall_time_s: Mapped[float] = mapped_column(Float)
    record: Mapped[bytes] = mapped_column(LargeBinary)


class WeaknessRow(Base):
    """A ranked weakness of a round."""

    __tablename__ = "weaknesses"
    __table_args__ = (UniqueConstraint("round_id", "rank"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"))
    kind: Mapped[str] = mapped_column(String(100))
    label: Mapped[str] = mapped_column(Text)
    rank: Mapped[int] = mapped_column(Integer)
    score: Mapped[float] = mapped_column(Float)
    share: Mapped[float] = mapped_column(Float)
    interval_low: Mapped[float | None] = mapped_column(Float)
    interval_high: Mapped[float | None] = mapped_column(Float)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON)


class WaveRow(Base):
    """A round's curriculum wave."""

    __tablename__ = "waves"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"), unique=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class WaveEntryRow(Base):
    """One weighted task of a wave."""

    __tablename__ = "wave_entries"
    __table_args__ = (
        UniqueConstraint("wave_id", "position"),
        ForeignKeyConstraint(["pack_id", "task_id"], ["tasks.pack_id", "tasks.task_id"]),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    wave_id: Mapped[int] = mapped_column(ForeignKey("waves.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    pack_id: Mapped[str] = mapped_column(String(64))
    task_id: Mapped[str] = mapped_column(String(80))
    weight: Mapped[float] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(Text)

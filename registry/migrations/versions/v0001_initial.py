"""Initial registry schema: models, packs, tasks, campaigns, rounds, episodes, weaknesses, waves.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

_TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create every table."""
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("version", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("parent_id", sa.Integer(), sa.ForeignKey("models.id", name="fk_models_parent_id_models")),
        sa.Column("artifact", sa.Text()),
        sa.Column("endpoint", sa.Text()),
        sa.Column("params_hash", sa.String(64)),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", _TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_models"),
        sa.UniqueConstraint("name", "version", name="uq_models_name_version"),
    )
    op.create_table(
        "packs",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("parent", sa.String(64)),
        sa.Column("domain", sa.String(100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("knobs", sa.JSON(), nullable=False),
        sa.Column("provenance", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("storage_path", sa.Text(), nullable=False),
        sa.Column("added_at", _TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_packs"),
    )
    op.create_index("ix_packs_parent", "packs", ["parent"])
    op.create_index("ix_packs_domain", "packs", ["domain"])
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pack_id", sa.String(64), sa.ForeignKey("packs.id", name="fk_tasks_pack_id_packs"), nullable=False),
        sa.Column("task_id", sa.String(80), nullable=False),
        sa.Column("split", sa.String(16), nullable=False),
        sa.Column("category", sa.String(100), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
        sa.UniqueConstraint("pack_id", "task_id", name="uq_tasks_pack_id_task_id"),
    )
    op.create_index("ix_tasks_split", "tasks", ["split"])
    op.create_table(
        "campaigns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", _TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_campaigns"),
        sa.UniqueConstraint("name", name="uq_campaigns_name"),
    )
    op.create_table(
        "rounds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), sa.ForeignKey("campaigns.id", name="fk_rounds_campaign_id_campaigns"),
                  nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("model_in_id", sa.Integer(), sa.ForeignKey("models.id", name="fk_rounds_model_in_id_models"),
                  nullable=False),
        sa.Column("model_out_id", sa.Integer(), sa.ForeignKey("models.id", name="fk_rounds_model_out_id_models")),
        sa.Column("started_at", _TZ, nullable=False),
        sa.Column("finished_at", _TZ),
        sa.Column("error", sa.Text()),
        sa.PrimaryKeyConstraint("id", name="pk_rounds"),
        sa.UniqueConstraint("campaign_id", "index", name="uq_rounds_campaign_id_index"),
    )
    op.create_index("ix_rounds_model_out_id", "rounds", ["model_out_id"])
    op.create_table(
        "episodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", name="fk_episodes_round_id_rounds"),
                  nullable=False),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("pack_id", sa.String(64), nullable=False),
        sa.Column("task_id", sa.String(80), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(64), nullable=False),
        sa.Column("agent", sa.String(100), nullable=False),
        sa.Column("model_ref", sa.Text(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("invalid", sa.Boolean(), nullable=False),
        sa.Column("side_effect_penalty", sa.Float(), nullable=False),
        sa.Column("failure_boundary", sa.String(32)),
        sa.Column("failure_kind", sa.String(100)),
        sa.Column("failed_kinds", sa.String(200), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=False),
        sa.Column("wall_time_s", sa.Float(), nullable=False),
        sa.Column("record", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_episodes"),
        sa.UniqueConstraint("round_id", "stage", "pack_id", "task_id", "seed", "attempt",
                            name="uq_episodes_round_id_stage_pack_id_task_id_seed_attempt"),
        sa.ForeignKeyConstraint(["pack_id", "task_id"], ["tasks.pack_id", "tasks.task_id"],
                                name="fk_episodes_pack_id_task_id_tasks"),
    )
    op.create_table(
        "weaknesses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", name="fk_weaknesses_round_id_rounds"),
                  nullable=False),
        sa.Column("kind", sa.String(100), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("share", sa.Float(), nullable=False),
        sa.Column("interval_low", sa.Float()),
        sa.Column("interval_high", sa.Float()),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_weaknesses"),
        sa.UniqueConstraint("round_id", "rank", name="uq_weaknesses_round_id_rank"),
    )
    op.create_table(
        "waves",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", name="fk_waves_round_id_rounds"),
                  nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", _TZ, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_waves"),
        sa.UniqueConstraint("round_id", name="uq_waves_round_id"),
    )
    op.create_table(
        "wave_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("wave_id", sa.Integer(),
                  sa.ForeignKey("waves.id", name="fk_wave_entries_wave_id_waves", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("pack_id", sa.String(64), nullable=False),
        sa.Column("task_id", sa.String(80), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wave_entries"),
        sa.UniqueConstraint("wave_id", "position", name="uq_wave_entries_wave_id_position"),
        sa.ForeignKeyConstraint(["pack_id", "task_id"], ["tasks.pack_id", "tasks.task_id"],
                                name="fk_wave_entries_pack_id_task_id_tasks"),
    )


def downgrade() -> None:
    """Drop every table."""
    for table in ("wave_entries", "waves", "weaknesses", "episodes", "rounds", "campaigns", "tasks", "packs",
                  "models"):
        op.drop_table(table)

"""Every round's state in the registry: arms, stage progress, pools, weakness reports, plans, pack files, models.

- ``arms``: each campaign gets the arm its settings named (``targeted`` unless ``arm`` was set). A control
  campaign of earlier releases (``<campaign>.<control>`` with the setting ``arm`` = ``<control>``) becomes the
  ``<control>`` arm of ``<campaign>``: its rounds move there and its campaign row (and lease) go.
- ``rounds.arm_id``; a round is unique per (arm, index).
- ``episodes.model_id``: the model that played each episode, part of its key. Episodes of a round's
  ``eval_after`` stage are the model out's; every other stage's are the model in's. The ``eval_after``
  episodes of a round that never finished name no model anywhere: they are dropped (a resume plays them again).
- ``round_stages``, ``round_packs``, ``weakness_reports``, ``pack_files``, ``waves.plan``: new. The pools of
  rounds recorded earlier are read from their waves (base packs, and each variant from the first round whose
  wave scheduled it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

_campaigns = sa.table("campaigns", sa.column("id", sa.Integer), sa.column("name", sa.String),
                      sa.column("settings", sa.JSON), sa.column("created_at", sa.DateTime(timezone=True)))
_arms = sa.table("arms", sa.column("id", sa.Integer), sa.column("campaign_id", sa.Integer),
                 sa.column("name", sa.String), sa.column("settings", sa.JSON),
                 sa.column("created_at", sa.DateTime(timezone=True)))
_rounds = sa.table("rounds", sa.column("id", sa.Integer), sa.column("campaign_id", sa.Integer),
                   sa.column("arm_id", sa.Integer), sa.column("index", sa.Integer),
                   sa.column("model_in_id", sa.Integer), sa.column("model_out_id", sa.Integer))
_leases = sa.table("campaign_leases", sa.column("campaign", sa.String))
_episodes = sa.table("episodes", sa.column("id", sa.Integer), sa.column("round_id", sa.Integer),
                     sa.column("stage", sa.String), sa.column("model_id", sa.Integer),
                     sa.column("pack_id", sa.String))
_packs = sa.table("packs", sa.column("id", sa.String), sa.column("parent", sa.String))
_waves = sa.table("waves", sa.column("id", sa.Integer), sa.column("round_id", sa.Integer))
_entries = sa.table("wave_entries", sa.column("wave_id", sa.Integer), sa.column("pack_id", sa.String),
                    sa.column("position", sa.Integer))
_round_packs = sa.table("round_packs", sa.column("round_id", sa.Integer), sa.column("pack_id", sa.String),
                        sa.column("role", sa.String))


def _create_tables() -> None:
    op.create_table(
        "arms",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), sa.ForeignKey("campaigns.id", name="fk_arms_campaign_id_campaigns"),
                  nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_arms"),
        sa.UniqueConstraint("campaign_id", "name", name="uq_arms_campaign_id_name"),
    )
    op.create_table(
        "pack_files",
        sa.Column("pack_id", sa.String(64), sa.ForeignKey("packs.id", name="fk_pack_files_pack_id_packs"),
                  nullable=False),
        sa.Column("path", sa.String(300), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("pack_id", "path", name="pk_pack_files"),
    )
    op.create_table(
        "round_stages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", name="fk_round_stages_round_id_rounds"),
                  nullable=False),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("model_id", sa.Integer(), sa.ForeignKey("models.id", name="fk_round_stages_model_id_models"),
                  nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_round_stages"),
        sa.UniqueConstraint("round_id", "stage", name="uq_round_stages_round_id_stage"),
    )
    op.create_table(
        "round_packs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", name="fk_round_packs_round_id_rounds"),
                  nullable=False),
        sa.Column("pack_id", sa.String(64), sa.ForeignKey("packs.id", name="fk_round_packs_pack_id_packs"),
                  nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_round_packs"),
        sa.UniqueConstraint("round_id", "pack_id", name="uq_round_packs_round_id_pack_id"),
    )
    op.create_table(
        "weakness_reports",
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("rounds.id", name="fk_weakness_reports_round_id_rounds"),
                  nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("round_id", name="pk_weakness_reports"),
    )
    with op.batch_alter_table("waves") as batch:
        batch.add_column(sa.Column("plan", sa.JSON(), nullable=True))


def _arm_of(name: str, settings: dict[str, Any], names: set[str]) -> tuple[str, str]:
    """The campaign a campaign of an earlier release belongs to now, and its arm."""
    arm = str(settings.get("arm") or "targeted")
    suffix = f".{arm}"
    if arm != "targeted" and name.endswith(suffix) and name.removesuffix(suffix) in names:
        return name.removesuffix(suffix), arm
    return name, arm


def _migrate_arms(conn: sa.Connection) -> None:
    rows = conn.execute(sa.select(_campaigns).order_by(_campaigns.c.id)).all()
    ids = {r.name: r.id for r in rows}
    arm_ids: dict[tuple[int, str], int] = {}
    for row in rows:
        settings = row.settings if isinstance(row.settings, dict) else {}
        owner, arm = _arm_of(row.name, settings, set(ids))
        owner_id = ids[owner]
        if (owner_id, arm) in arm_ids:  # two campaigns claim one arm: keep this one a campaign of its own
            owner_id = row.id
        if (owner_id, arm) not in arm_ids:
            arm_ids[(owner_id, arm)] = conn.execute(
                sa.insert(_arms).values(campaign_id=owner_id, name=arm, settings=settings,
                                        created_at=row.created_at or datetime.now(UTC)).returning(_arms.c.id)
            ).scalar_one()
        conn.execute(sa.update(_rounds).where(_rounds.c.campaign_id == row.id)
                     .values(campaign_id=owner_id, arm_id=arm_ids[(owner_id, arm)]))
        if owner_id != row.id:
            conn.execute(sa.delete(_leases).where(_leases.c.campaign == row.name))
            conn.execute(sa.delete(_campaigns).where(_campaigns.c.id == row.id))


def _migrate_episode_models(conn: sa.Connection) -> None:
    model_in = sa.select(_rounds.c.model_in_id).where(_rounds.c.id == _episodes.c.round_id).scalar_subquery()
    model_out = sa.select(_rounds.c.model_out_id).where(_rounds.c.id == _episodes.c.round_id).scalar_subquery()
    conn.execute(sa.update(_episodes).where(_episodes.c.stage != "eval_after").values(model_id=model_in))
    conn.execute(sa.update(_episodes).where(_episodes.c.stage == "eval_after").values(model_id=model_out))
    conn.execute(sa.delete(_episodes).where(_episodes.c.model_id.is_(None)))


def _migrate_pools(conn: sa.Connection) -> None:
    parents: dict[str, str | None] = {r.id: r.parent for r in conn.execute(sa.select(_packs.c.id, _packs.c.parent))}
    rounds = conn.execute(sa.select(_rounds.c.id, _rounds.c.arm_id).order_by(_rounds.c.arm_id, _rounds.c.index))
    seen: dict[int, list[str]] = {}
    for round_id, arm_id in rounds.all():
        played = set(conn.execute(sa.select(_episodes.c.pack_id).where(_episodes.c.round_id == round_id)).scalars())
        planned = conn.execute(sa.select(_entries.c.pack_id).join(_waves, _waves.c.id == _entries.c.wave_id)
                               .where(_waves.c.round_id == round_id).order_by(_entries.c.position)).scalars().all()
        pool = seen.setdefault(arm_id, [])
        earlier = set(pool)
        pool.extend(p for p in dict.fromkeys(planned) if parents.get(p) is not None and p not in earlier)
        rows = [{"round_id": round_id, "pack_id": p, "role": "base"}
                for p in sorted({*played, *planned}) if p in parents and parents[p] is None]
        rows += [{"round_id": round_id, "pack_id": p, "role": "variant" if p in earlier else "added"} for p in pool]
        if rows:
            conn.execute(sa.insert(_round_packs), rows)


def upgrade() -> None:
    """Create the new tables, give every campaign its arm and every episode its model, and infer old pools."""
    conn = op.get_bind()
    _create_tables()
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("arm_id", sa.Integer(), nullable=True))
        batch.drop_constraint("uq_rounds_campaign_id_index", type_="unique")
    _migrate_arms(conn)
    with op.batch_alter_table("rounds") as batch:
        batch.alter_column("arm_id", existing_type=sa.Integer(), nullable=False)
        batch.create_foreign_key("fk_rounds_arm_id_arms", "arms", ["arm_id"], ["id"])
        batch.create_unique_constraint("uq_rounds_arm_id_index", ["arm_id", "index"])
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("model_id", sa.Integer(), nullable=True))
    _migrate_episode_models(conn)
    with op.batch_alter_table("episodes") as batch:
        batch.alter_column("model_id", existing_type=sa.Integer(), nullable=False)
        batch.create_foreign_key("fk_episodes_model_id_models", "models", ["model_id"], ["id"])
        batch.drop_constraint("uq_episodes_round_id_stage_pack_id_task_id_seed_attempt", type_="unique")
        batch.create_unique_constraint("uq_episodes_round_stage_model_key",
                                       ["round_id", "stage", "model_id", "pack_id", "task_id", "seed", "attempt"])
    _migrate_pools(conn)


def downgrade() -> None:
    """Not supported: arms merged into one campaign and dropped episodes cannot be put back."""
    raise NotImplementedError("the registry cannot be downgraded below revision 0005")

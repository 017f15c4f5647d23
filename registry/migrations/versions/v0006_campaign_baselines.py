"""Campaign baselines: what a campaign's rounds are measured against (gyms, held-out suite, settings), by round.

A campaign recorded earlier gets its baseline 0 when its next round starts (from that round's gyms and settings).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``campaign_baselines``."""
    op.create_table(
        "campaign_baselines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(),
                  sa.ForeignKey("campaigns.id", name="fk_campaign_baselines_campaign_id_campaigns"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("first_round", sa.Integer(), nullable=False),
        sa.Column("contract", sa.JSON(), nullable=False),
        sa.Column("change", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_campaign_baselines"),
        sa.UniqueConstraint("campaign_id", "number", name="uq_campaign_baselines_campaign_id_number"),
    )


def downgrade() -> None:
    """Drop ``campaign_baselines``."""
    op.drop_table("campaign_baselines")

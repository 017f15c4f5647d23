"""Campaign leases: which process is advancing a campaign, until when.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``campaign_leases``."""
    op.create_table(
        "campaign_leases",
        sa.Column("campaign", sa.String(200), nullable=False),
        sa.Column("holder", sa.String(300), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("campaign", name="pk_campaign_leases"),
    )


def downgrade() -> None:
    """Drop ``campaign_leases``."""
    op.drop_table("campaign_leases")

"""Round details (free-form metrics as JSON) and an index for per-task history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add ``rounds.details`` (existing rounds get ``{}``) and the ``episodes (pack_id, task_id)`` index."""
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("details", sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
    op.create_index("ix_episodes_pack_id_task_id", "episodes", ["pack_id", "task_id"])


def downgrade() -> None:
    """Drop the index and the column."""
    op.drop_index("ix_episodes_pack_id_task_id", table_name="episodes")
    with op.batch_alter_table("rounds") as batch:
        batch.drop_column("details")

"""Masked model references: endpoints recorded before gymloop masked them lose their secrets.

Episodes recorded before model references were masked hold ``model@api_base`` as given, password and
token-like query values included, in ``episodes.model_ref`` and in the stored record (with the message of
a model failure, which could quote the endpoint); a failed round's ``rounds.error`` could quote it too.
This revision masks them the way gymloop now shows them (``m@http://user:***@host/v1``). Masking cannot be
undone: the downgrade leaves the rows as they are.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import sqlalchemy as sa
from alembic import op

from arena.core.redact import redact_text

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

_BATCH = 500
_episodes = sa.table("episodes", sa.column("id", sa.Integer), sa.column("model_ref", sa.Text),
                     sa.column("record", sa.LargeBinary))
_rounds = sa.table("rounds", sa.column("id", sa.Integer), sa.column("error", sa.Text))


def _masked_record(blob: bytes) -> bytes | None:
    """The stored record with its model reference and failure message masked, or ``None`` when nothing changes."""
    try:
        record: dict[str, Any] = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError):
        return None  # an unreadable record stays as it is; reading it reports it
    changed = False
    if isinstance(record.get("model_ref"), str) and redact_text(record["model_ref"]) != record["model_ref"]:
        record["model_ref"] = redact_text(record["model_ref"])
        changed = True
    failure = record.get("failure")
    if isinstance(failure, dict) and isinstance(failure.get("message"), str):
        message = redact_text(failure["message"])
        changed = changed or message != failure["message"]
        failure["message"] = message
    if not changed:
        return None
    return zlib.compress(json.dumps(record, separators=(",", ":")).encode("utf-8"), 3)


def _mask_episodes(conn: sa.Connection) -> None:
    ids = [row.id for row in conn.execute(sa.select(_episodes.c.id).where(_episodes.c.model_ref.like("%://%")))]
    for start in range(0, len(ids), _BATCH):
        batch = ids[start:start + _BATCH]
        rows = conn.execute(sa.select(_episodes.c.id, _episodes.c.model_ref, _episodes.c.record)
                            .where(_episodes.c.id.in_(batch))).all()
        for row in rows:
            values: dict[str, Any] = {}
            if redact_text(row.model_ref) != row.model_ref:
                values["model_ref"] = redact_text(row.model_ref)
            record = _masked_record(row.record)
            if record is not None:
                values["record"] = record
            if values:
                conn.execute(sa.update(_episodes).where(_episodes.c.id == row.id).values(**values))


def _mask_round_errors(conn: sa.Connection) -> None:
    for row in conn.execute(sa.select(_rounds.c.id, _rounds.c.error).where(_rounds.c.error.like("%://%"))).all():
        if redact_text(row.error) != row.error:
            conn.execute(sa.update(_rounds).where(_rounds.c.id == row.id).values(error=redact_text(row.error)))


def upgrade() -> None:
    """Mask the endpoints in ``episodes.model_ref``, the stored episode records and ``rounds.error``."""
    conn = op.get_bind()
    _mask_episodes(conn)
    _mask_round_errors(conn)


def downgrade() -> None:
    """Nothing to undo: a masked secret is gone."""

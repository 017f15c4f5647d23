"""Alembic environment of the registry: runs on the connection ``registry.Registry`` passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from registry.schema import Base


def _run() -> None:
    connection = context.config.attributes.get("connection")
    if not isinstance(connection, Connection):
        raise RuntimeError(
            "registry migrations run through registry.Registry.upgrade() or `gymloop registry upgrade`, "
            "which pass the database connection in"
        )
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


_run()

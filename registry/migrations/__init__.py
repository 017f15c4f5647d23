"""Alembic migrations of the registry schema, applied by ``registry.Registry`` (no alembic.ini needed)."""

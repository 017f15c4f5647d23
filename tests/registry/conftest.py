"""Registry test fixtures: a database URL per test (SQLite, then PostgreSQL) and a home folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    # ``tests/registry`` would otherwise shadow the ``registry`` package as a namespace package.
    sys.path.append(_ROOT)

from tests.pg_server import PgServer  # noqa: E402


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty registry database URL: SQLite in a temp folder, then a new PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'registry.db'}"
    server: PgServer = request.getfixturevalue("pg_server")
    return server.create_database()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A gymloop home folder for the test."""
    path = tmp_path / "home"
    path.mkdir()
    return path

"""Where the registry lives and how its schema is kept current.

``resolve_home`` and ``resolve_url`` choose the gymloop home folder
(``GYMLOOP_HOME``, default ``~/.gymloop``) and the database URL (argument,
else ``GYMLOOP_REGISTRY_URL``, else SQLite at ``<home>/registry.db``).
``open_engine`` connects with SQLite in WAL mode (busy timeout, foreign keys
on, writes in ``BEGIN IMMEDIATE`` transactions) or any other SQLAlchemy URL.
``Migrator`` applies the Alembic revisions shipped in ``registry/migrations``
and refuses a database at a revision this code does not know.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from registry.errors import RegistryError

HOME_ENV = "GYMLOOP_HOME"
URL_ENV = "GYMLOOP_REGISTRY_URL"
SQLITE_BUSY_TIMEOUT_MS = 30_000
MIGRATIONS = Path(__file__).parent / "migrations"
_PG_LOCK_KEY = 0x67796D6C6F6F70
"""Advisory lock key held while migrating a PostgreSQL registry (ASCII "gymloop")."""
_WRITE = "gymloop_write"


def resolve_home(home: str | Path | None = None) -> Path:
    """Return the gymloop home folder: ``home``, else ``$GYMLOOP_HOME``, else ``~/.gymloop``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get(HOME_ENV)
    return Path(env).expanduser() if env else Path.home() / ".gymloop"


def resolve_url(url: str | None = None, home: str | Path | None = None) -> str:
    """Return the registry URL: ``url``, else ``$GYMLOOP_REGISTRY_URL``, else SQLite under the home folder."""
    if url:
        return url
    env = os.environ.get(URL_ENV)
    if env:
        return env
    return f"sqlite:///{resolve_home(home) / 'registry.db'}"


def safe_url(url: str) -> str:
    """Return ``url`` with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _sqlite_foreign_keys(conn: Connection, *, on: bool) -> None:
    """Switch SQLite's foreign keys on or off for a connection (outside any transaction, where it takes effect)."""
    driver = conn.connection.driver_connection
    if driver is not None:
        driver.execute(f"PRAGMA foreign_keys = {'ON' if on else 'OFF'}")


def _sqlite_on_begin(conn: Connection) -> None:
    mode = "BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN"
    conn.exec_driver_sql(mode)


def open_engine(url: str) -> tuple[Engine, Engine]:
    """Create the engines for ``url``: one for reads, one (same pool) for writes.

    On SQLite, write transactions start with ``BEGIN IMMEDIATE`` so concurrent
    writers queue on the busy timeout instead of failing.

    Raises:
        RegistryError: The URL is malformed or its driver is missing, naming the URL.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise RegistryError(f"registry URL {url!r} is not a valid SQLAlchemy URL: {exc}") from exc
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            try:
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RegistryError(f"cannot create the folder of the registry {safe_url(url)}: {exc}") from exc
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    elif parsed.get_backend_name() == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": 10}
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(parsed, **kwargs)
    except (NoSuchModuleError, ImportError) as exc:
        raise RegistryError(f"cannot open the registry database {safe_url(url)}: missing driver ({exc})") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
        event.listen(engine, "begin", _sqlite_on_begin)
    return engine, engine.execution_options(**{_WRITE: True})


@contextmanager
def connect(engine: Engine, url: str) -> Iterator[Connection]:
    """Open a connection, turning a failure to connect into a ``RegistryError`` naming the URL."""
    try:
        conn = engine.connect()
    except DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        raise RegistryError(f"cannot reach the registry database at {safe_url(url)}: {reason}") from exc
    with conn:
        yield conn


class Migrator:
    """Applies the registry's Alembic revisions to one database.

    Args:
        engine: Engine for reads.
        write_engine: Engine for writes (same database).
        url: The database URL, for messages.
    """

    def __init__(self, engine: Engine, write_engine: Engine, url: str) -> None:
        self._engine = engine
        self._write_engine = write_engine
        self._url = url
        self._script = ScriptDirectory.from_config(self._config())

    def _config(self, connection: Connection | None = None) -> Config:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        if connection is not None:
            cfg.attributes["connection"] = connection
        return cfg

    @property
    def head(self) -> str:
        """The newest revision this gymloop knows."""
        head = self._script.get_current_head()
        if head is None:
            raise RegistryError(f"no registry migrations found under {MIGRATIONS}")
        return head

    def revisions(self) -> list[str]:
        """Every known revision, oldest first."""
        return [rev.revision for rev in reversed(list(self._script.walk_revisions()))]

    def current(self) -> str | None:
        """Return the database's revision (``None`` when empty)."""
        with connect(self._engine, self._url) as conn:
            return self._current(conn)

    def _current(self, conn: Connection) -> str | None:
        revision = MigrationContext.configure(conn).get_current_revision()
        if revision is not None and revision not in self.revisions():
            raise RegistryError(
                f"registry database {safe_url(self._url)} is at schema revision {revision!r}, newer than this "
                f"gymloop knows (newest: {self.head!r}); upgrade gymloop to use it"
            )
        return revision

    def upgrade(self, target: str = "head") -> tuple[str | None, str | None]:
        """Upgrade the database to ``target`` in one transaction; return (before, after) revisions.

        Raises:
            RegistryError: The database cannot be reached, is at an unknown revision, or a migration failed.
        """
        if target != "head" and target not in self.revisions():
            raise RegistryError(f"unknown registry schema revision {target!r}; known: {', '.join(self.revisions())}")
        with connect(self._write_engine, self._url) as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:
                # SQLite rebuilds a table to change its constraints: the old one is dropped while other tables
                # still point at it. Foreign keys are checked once, before the migration commits.
                _sqlite_foreign_keys(conn, on=False)
            try:
                with conn.begin():
                    if conn.dialect.name == "postgresql":
                        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
                    before = self._current(conn)
                    wanted = self.head if target == "head" else target
                    if before != wanted:
                        self._run(conn, before, wanted, check_foreign_keys=sqlite)
                    after = MigrationContext.configure(conn).get_current_revision()
            finally:
                if sqlite:
                    _sqlite_foreign_keys(conn, on=True)
        return before, after

    def _run(self, conn: Connection, before: str | None, wanted: str, *, check_foreign_keys: bool) -> None:
        where = f"migrating the registry database {safe_url(self._url)} from {before!r} to {wanted!r} failed"
        try:
            command.upgrade(self._config(conn), wanted)
        except DBAPIError as exc:
            raise RegistryError(f"{where} (nothing was changed): {exc.orig}") from exc
        if check_foreign_keys:
            broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
            if broken:
                shown = ", ".join(f"{row[0]} row {row[1]} -> {row[2]}" for row in broken[:5])
                raise RegistryError(f"{where} (nothing was changed): {len(broken)} rows point at no row ({shown})")

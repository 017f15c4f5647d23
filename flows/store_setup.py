"""First-time set-up of a local store, one process at a time.

Two gymloop processes starting on a fresh home would otherwise both create and migrate the same SQLite file
(MLflow's store runs its own migrations on first use). An exclusive lock on a file beside the store makes the
second wait until the first has finished.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` URI, or ``None`` for any other store."""
    try:
        url = make_url(uri)
    except ArgumentError:
        return None
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database).expanduser()


@contextmanager
def store_setup_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock beside a SQLite store for the block (no lock for other stores)."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f".{path.name}.setup-lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

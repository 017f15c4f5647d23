"""Transactions of the registry: one read or write session per call, failures as ``RegistryError``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from registry.database import safe_url
from registry.errors import RegistryError
from registry.schema import RoundRow


class Sessions:
    """Read and write transactions on one database; the base of ``Registry``.

    Attributes:
        url: The database URL.
    """

    url: str
    _engine: Engine
    _write_engine: Engine

    @property
    def display_url(self) -> str:
        """The database URL with any password hidden."""
        return safe_url(self.url)

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with Session(self._engine) as session, session.begin():
            yield session

    @contextmanager
    def _write(self, what: str) -> Iterator[Session]:
        try:
            with Session(self._write_engine) as session, session.begin():
                yield session
        except IntegrityError as exc:
            raise RegistryError(f"{what} was refused by {self.display_url} (nothing was written): {exc.orig}") from exc
        except DBAPIError as exc:
            raise RegistryError(f"{what} failed on {self.display_url} (nothing was written): {exc.orig}") from exc

    def _round_row(self, s: Session, round_id: int) -> RoundRow:
        row = s.get(RoundRow, round_id)
        if row is None:
            raise RegistryError(f"round id {round_id} is not in {self.display_url}")
        return row

"""The registry: lineage of models, packs, rounds, episodes, weaknesses and waves.

``Registry(url=None, home=None)`` opens (and on first use migrates) the
database and the pack store under ``<home>/packs``. Writes run in one
transaction each, so a failed write changes nothing; episode writes are
idempotent on (round, stage, pack, task, seed, attempt), so re-running a
crashed round's evaluation only adds the episodes it had not finished.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, defer

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, pack_files, read_pack
from registry import _convert as conv
from registry import _queries as queries
from registry._codec import decode_record, episode_row, split_kinds
from registry.database import Migrator, open_engine, resolve_home, resolve_url, safe_url
from registry.errors import RegistryError
from registry.packstore import PackStore
from registry.records import (
    DEFAULT_STAGE,
    CampaignInfo,
    EpisodeKey,
    EpisodeSummary,
    LeaseInfo,
    Lineage,
    ModelInfo,
    PackInfo,
    RegistryStatus,
    RoundInfo,
    TaskKey,
    TaskRef,
    TaskRoundStats,
    WaveEntry,
    WaveInfo,
    WeaknessEntry,
)
from registry.schema import (
    Base,
    CampaignLeaseRow,
    CampaignRow,
    EpisodeRow,
    ModelRow,
    PackRow,
    RoundRow,
    TaskRow,
    WaveEntryRow,
    WaveRow,
    WeaknessRow,
    utcnow,
)

_EPISODE_KEY = ("round_id", "stage", "pack_id", "task_id", "seed", "attempt")
_INSERT_CHUNK = 1000


def _missing_tasks(s: Session, pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    pack_ids = sorted({p for p, _ in pairs})
    known = set(s.execute(select(TaskRow.pack_id, TaskRow.task_id).where(TaskRow.pack_id.in_(pack_ids))))
    return sorted(pairs - known)


class Registry:
    """The lineage store of a gymloop installation.

    Args:
        url: SQLAlchemy database URL; default ``$GYMLOOP_REGISTRY_URL``, else SQLite at ``<home>/registry.db``.
        home: The gymloop home folder; default ``$GYMLOOP_HOME``, else ``~/.gymloop``. Packs live in ``<home>/packs``.
        auto_upgrade: Apply pending migrations on open (otherwise an old schema is refused).

    Attributes:
        home: The gymloop home folder.
        url: The database URL.
        packs: The pack store under ``<home>/packs``.
        revision_at_open: The database's schema revision before this registry opened (and upgraded) it.

    Raises:
        RegistryError: The database cannot be reached, or is at a revision this gymloop does not know.
    """

    def __init__(self, url: str | None = None, home: str | Path | None = None, *, auto_upgrade: bool = True) -> None:
        self.home = resolve_home(home)
        self.url = resolve_url(url, self.home)
        self.packs = PackStore(self.home / "packs")
        self._engine, self._write_engine = open_engine(self.url)
        self._migrator = Migrator(self._engine, self._write_engine, self.url)
        try:
            current = self._migrator.current()
            self.revision_at_open = current
            if current != self._migrator.head:
                if not auto_upgrade:
                    raise RegistryError(
                        f"registry database {safe_url(self.url)} is at schema revision {current!r}, older than "
                        f"{self._migrator.head!r}; run `gymloop registry upgrade`"
                    )
                self._migrator.upgrade()
        except BaseException:
            self._engine.dispose()
            raise

    def __enter__(self) -> Registry:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

    @property
    def display_url(self) -> str:
        """The database URL with any password hidden."""
        return safe_url(self.url)

    @property
    def current_revision(self) -> str | None:
        """The database's schema revision."""
        return self._migrator.current()

    @property
    def head_revision(self) -> str:
        """The newest schema revision this gymloop knows."""
        return self._migrator.head

    def upgrade(self) -> tuple[str | None, str | None]:
        """Apply pending migrations; return the (before, after) revisions."""
        return self._migrator.upgrade()

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

    # Models -----------------------------------------------------------------

    def register_model(
        self,
        name: str,
        version: str,
        *,
        kind: str,
        parent_id: int | None = None,
        artifact: str | None = None,
        endpoint: str | None = None,
        params_hash: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> ModelInfo:
        """Register a model, or return it when the same (name, version) is already registered identically.

        Raises:
            RegistryError: The parent is unknown, or (name, version) exists with different values.
        """
        wanted = {"kind": kind, "parent_id": parent_id, "artifact": artifact, "endpoint": endpoint,
                  "params_hash": params_hash}
        with self._write(f"registering model {name}:{version}") as s:
            if parent_id is not None and s.get(ModelRow, parent_id) is None:
                raise RegistryError(f"model {name}:{version}: parent model id {parent_id} is not registered")
            row = s.scalars(select(ModelRow).where(ModelRow.name == name, ModelRow.version == version)).first()
            if row is not None:
                diff = [k for k, v in wanted.items() if getattr(row, k) != v]
                if diff:
                    raise RegistryError(
                        f"model {name}:{version} is already registered (id {row.id}) with different "
                        + ", ".join(f"{k} ({getattr(row, k)!r} != {wanted[k]!r})" for k in diff)
                    )
                return conv.model_info(row)
            row = ModelRow(name=name, version=version, details=dict(details or {}), created_at=utcnow(), **wanted)
            s.add(row)
            s.flush()
            return conv.model_info(row)

    def model(self, model_id: int) -> ModelInfo:
        """Return the model ``model_id``.

        Raises:
            RegistryError: No such model.
        """
        with self._read() as s:
            row = s.get(ModelRow, model_id)
            if row is None:
                raise RegistryError(f"model id {model_id} is not registered in {self.display_url}")
            return conv.model_info(row)

    def find_model(self, name: str, version: str) -> ModelInfo | None:
        """Return the model registered as ``name:version``, if any."""
        with self._read() as s:
            row = s.scalars(select(ModelRow).where(ModelRow.name == name, ModelRow.version == version)).first()
            return conv.model_info(row) if row is not None else None

    # Packs and tasks ----------------------------------------------------------

    def add_pack(self, pack: Pack) -> PackInfo:
        """Store ``pack`` (content-addressed) and record it and its tasks; adding it again is a no-op.

        Raises:
            RegistryError: The pack's id does not match its content.
        """
        pack_id = self.packs.put(pack)
        files = pack_files(pack)
        with self._write(f"adding pack {pack_id}") as s:
            row = s.get(PackRow, pack_id)
            if row is not None:
                return conv.pack_info(row)
            m = pack.manifest
            row = PackRow(
                id=pack_id, parent=m.parent, domain=m.domain, schema_version=m.schema_version, seed=m.seed,
                knobs=dict(m.knobs), provenance=dict(m.provenance), created_by=m.created_by,
                storage_path=str(self.packs.path(pack_id)), added_at=utcnow(),
            )
            s.add(row)
            s.flush()
            s.add_all(
                TaskRow(
                    pack_id=pack_id, task_id=t.id, split=t.split, category=t.category, tags=list(t.tags),
                    content_hash=hashlib.sha256(files[f"tasks/{t.id}.json"]).hexdigest(),
                )
                for t in pack.tasks
            )
            return conv.pack_info(row)

    def import_pack(self, folder: str | Path) -> PackInfo:
        """Read and validate the pack in ``folder`` (``arena.core.pack.read_pack``), then add it.

        Raises:
            PackError: The folder does not hold a valid pack (including a content hash mismatch).
        """
        return self.add_pack(read_pack(folder))

    def pack(self, pack_id: str) -> PackInfo:
        """Return the registered pack ``pack_id``.

        Raises:
            RegistryError: No such pack.
        """
        with self._read() as s:
            row = s.get(PackRow, pack_id)
            if row is None:
                raise RegistryError(f"pack {pack_id} is not registered in {self.display_url}")
            return conv.pack_info(row)

    def load_pack(self, pack_id: str) -> Pack:
        """Return the pack ``pack_id`` from the store, hash-verified and validated."""
        return self.packs.get(pack_id)

    def list_packs(self, domain: str | None = None) -> list[PackInfo]:
        """Return the registered packs (of ``domain``), oldest first."""
        with self._read() as s:
            stmt = select(PackRow).order_by(PackRow.added_at, PackRow.id)
            if domain is not None:
                stmt = stmt.where(PackRow.domain == domain)
            return [conv.pack_info(r) for r in s.scalars(stmt)]

    def tasks(self, pack_id: str) -> list[TaskRef]:
        """Return the tasks of the registered pack ``pack_id``, by task id."""
        with self._read() as s:
            rows = s.execute(
                select(TaskRow, PackRow.domain).join(PackRow, PackRow.id == TaskRow.pack_id)
                .where(TaskRow.pack_id == pack_id).order_by(TaskRow.task_id)
            ).all()
            return [conv.task_ref(t, d) for t, d in rows]

    def heldout_suite(self, domain: str, *, include_variants: bool = False) -> list[TaskRef]:
        """Return the held-out tasks of ``domain``, by pack (oldest first) and task id.

        Args:
            domain: Domain name.
            include_variants: Also include held-out tasks of variant packs (packs with a parent);
                by default only base packs count, so the suite stays the same across rounds.
        """
        with self._read() as s:
            return queries.heldout_suite(s, domain, include_variants)

    # Campaigns and rounds ----------------------------------------------------

    def acquire_lease(self, campaign: str, holder: str, ttl_s: float) -> LeaseInfo:
        """Take (or renew) the lease on ``campaign`` for ``holder`` unless another live holder has it.

        A lease whose holder stopped renewing it lapses after ``ttl_s`` seconds and can be taken over.

        Returns:
            The lease; ``held`` says whether ``holder`` now holds it (else it names the other holder).
        """
        now = utcnow()
        try:
            with self._write(f"taking the lease on campaign {campaign!r}") as s:
                row = s.get(CampaignLeaseRow, campaign, with_for_update=True)
                if row is not None and row.holder != holder and conv.aware(row.expires_at) > now:
                    return conv.lease_info(row, held=False)
                if row is None:
                    row = CampaignLeaseRow(campaign=campaign, holder=holder, acquired_at=now, expires_at=now)
                    s.add(row)
                elif row.holder != holder:
                    row.holder, row.acquired_at = holder, now
                row.expires_at = now + timedelta(seconds=ttl_s)
                s.flush()
                return conv.lease_info(row, held=True)
        except RegistryError:
            # Another process inserted the lease between our read and our insert (PostgreSQL): it holds it.
            with self._read() as s:
                row = s.get(CampaignLeaseRow, campaign)
                if row is None:
                    raise
                return conv.lease_info(row, held=row.holder == holder)

    def release_lease(self, campaign: str, holder: str) -> bool:
        """Give up ``holder``'s lease on ``campaign``; return whether it held it."""
        with self._write(f"releasing the lease on campaign {campaign!r}") as s:
            row = s.get(CampaignLeaseRow, campaign)
            if row is None or row.holder != holder:
                return False
            s.delete(row)
            return True

    def create_campaign(
        self, name: str, settings: dict[str, Any] | None = None, *, exist_ok: bool = False
    ) -> CampaignInfo:
        """Create the campaign ``name`` (or return it when ``exist_ok``).

        Raises:
            RegistryError: It exists and ``exist_ok`` is false.
        """
        with self._write(f"creating campaign {name!r}") as s:
            row = s.scalars(select(CampaignRow).where(CampaignRow.name == name)).first()
            if row is not None:
                if not exist_ok:
                    raise RegistryError(f"campaign {name!r} already exists (id {row.id}) in {self.display_url}")
                return conv.campaign_info(row)
            row = CampaignRow(name=name, settings=dict(settings or {}), created_at=utcnow())
            s.add(row)
            s.flush()
            return conv.campaign_info(row)

    def campaign(self, name: str) -> CampaignInfo:
        """Return the campaign ``name``.

        Raises:
            RegistryError: No such campaign.
        """
        with self._read() as s:
            row = s.scalars(select(CampaignRow).where(CampaignRow.name == name)).first()
            if row is None:
                raise RegistryError(f"campaign {name!r} is not in {self.display_url}")
            return conv.campaign_info(row)

    def start_round(self, campaign_id: int, index: int, model_in_id: int) -> RoundInfo:
        """Start round ``index`` of a campaign, or resume it when it exists and has not finished.

        Raises:
            RegistryError: Unknown campaign or model, the round already finished, or it started from another model.
        """
        with self._write(f"starting round {index} of campaign {campaign_id}") as s:
            if s.get(CampaignRow, campaign_id) is None:
                raise RegistryError(f"campaign id {campaign_id} is not in {self.display_url}")
            if s.get(ModelRow, model_in_id) is None:
                raise RegistryError(f"round {index}: model id {model_in_id} is not registered")
            stmt = select(RoundRow).where(RoundRow.campaign_id == campaign_id, RoundRow.index == index)
            row = s.scalars(stmt).first()
            if row is None:
                row = RoundRow(campaign_id=campaign_id, index=index, status="running", model_in_id=model_in_id,
                               started_at=utcnow(), details={})
                s.add(row)
            else:
                if row.status == "finished":
                    raise RegistryError(f"round {index} of campaign {campaign_id} (id {row.id}) already finished")
                if row.model_in_id != model_in_id:
                    raise RegistryError(
                        f"round {index} of campaign {campaign_id} (id {row.id}) started from model {row.model_in_id}, "
                        f"not {model_in_id}"
                    )
                row.status, row.started_at, row.finished_at, row.error = "running", utcnow(), None, None
            s.flush()
            return conv.round_info(row)

    def _round_row(self, s: Session, round_id: int) -> RoundRow:
        row = s.get(RoundRow, round_id)
        if row is None:
            raise RegistryError(f"round id {round_id} is not in {self.display_url}")
        return row

    def finish_round(
        self, round_id: int, model_out_id: int | None, details: dict[str, Any] | None = None
    ) -> RoundInfo:
        """Mark a round finished with the model it produced and its metrics (merged into ``details``).

        Raises:
            RegistryError: Unknown round or model.
        """
        with self._write(f"finishing round {round_id}") as s:
            row = self._round_row(s, round_id)
            if model_out_id is not None and s.get(ModelRow, model_out_id) is None:
                raise RegistryError(f"round {round_id}: model id {model_out_id} is not registered")
            row.status, row.model_out_id, row.finished_at, row.error = "finished", model_out_id, utcnow(), None
            row.details = {**(row.details or {}), **(details or {})}
            s.flush()
            return conv.round_info(row)

    def fail_round(self, round_id: int, error: str, *,
                   status: Literal["failed", "interrupted"] = "failed") -> RoundInfo:
        """Mark a round failed (or ``interrupted`` by a signal) with the reason; ``start_round`` can resume it.

        Raises:
            RegistryError: Unknown round.
        """
        with self._write(f"marking round {round_id} {status}") as s:
            row = self._round_row(s, round_id)
            row.status, row.finished_at, row.error = status, utcnow(), error
            s.flush()
            return conv.round_info(row)

    def round(self, round_id: int) -> RoundInfo:
        """Return the round ``round_id``."""
        with self._read() as s:
            return conv.round_info(self._round_row(s, round_id))

    def rounds(self, campaign_id: int) -> list[RoundInfo]:
        """Return the rounds of a campaign, by index."""
        with self._read() as s:
            rows = s.scalars(select(RoundRow).where(RoundRow.campaign_id == campaign_id).order_by(RoundRow.index))
            return [conv.round_info(r) for r in rows]

    def campaigns(self) -> list[CampaignInfo]:
        """Return every campaign, oldest first."""
        with self._read() as s:
            return [conv.campaign_info(r) for r in s.scalars(select(CampaignRow).order_by(CampaignRow.id))]

    # Episodes -----------------------------------------------------------------

    def find_episodes(self, episode_id: str) -> list[tuple[int, str, EpisodeRecord]]:
        """Return ``(round id, stage, record)`` of every stored copy of an episode, by its id or an id prefix.

        Raises:
            RegistryError: The prefix is shorter than 6 characters.
        """
        if len(episode_id) < 6:
            raise RegistryError(f"episode id {episode_id!r} is too short: give at least 6 characters")
        with self._read() as s:
            stmt = (select(EpisodeRow.round_id, EpisodeRow.stage, EpisodeRow.id, EpisodeRow.record)
                    .where(EpisodeRow.episode_id.startswith(episode_id, autoescape=True)).order_by(EpisodeRow.id))
            return [(round_id, stage, decode_record(blob, f"row {row_id} of round {round_id}"))
                    for round_id, stage, row_id, blob in s.execute(stmt)]

    def record_episodes(
        self, round_id: int, records: Iterable[EpisodeRecord], *, stage: str = DEFAULT_STAGE
    ) -> int:
        """Write episodes of a round in one transaction; return how many were new.

        Episodes whose (pack, task, seed, attempt) the round already holds for
        ``stage`` are skipped (the first of duplicates within ``records`` wins),
        also when another process writes the same keys at the same time.

        Raises:
            RegistryError: Unknown round, or a task not registered (add its pack first); nothing is written.
        """
        batch: dict[tuple[str, str, int, int], EpisodeRecord] = {}
        for record in records:
            batch.setdefault((record.pack_id, record.task_id, record.seed, record.attempt), record)
        if not batch:
            return 0
        pack_ids = sorted({k[0] for k in batch})
        with self._write(f"recording {len(batch)} episodes of round {round_id}") as s:
            self._round_row(s, round_id)
            existing = set(
                s.execute(
                    select(EpisodeRow.pack_id, EpisodeRow.task_id, EpisodeRow.seed, EpisodeRow.attempt).where(
                        EpisodeRow.round_id == round_id, EpisodeRow.stage == stage, EpisodeRow.pack_id.in_(pack_ids)
                    )
                )
            )
            new = [r for k, r in batch.items() if k not in existing]
            if not new:
                return 0
            missing = _missing_tasks(s, {(r.pack_id, r.task_id) for r in new})
            if missing:
                shown = ", ".join(f"{p[:12]}/{t}" for p, t in missing[:5])
                raise RegistryError(
                    f"round {round_id}: {len(missing)} episode task(s) are not registered ({shown}); add their packs "
                    "first (nothing was written)"
                )
            return self._insert_episodes(s, [episode_row(round_id, stage, r) for r in new])

    def _insert_episodes(self, s: Session, rows: list[dict[str, Any]]) -> int:
        dialect = s.get_bind().dialect.name
        table = Base.metadata.tables[EpisodeRow.__tablename__]
        if dialect == "postgresql":
            stmt: Any = postgresql.insert(table).on_conflict_do_nothing(index_elements=list(_EPISODE_KEY))
        elif dialect == "sqlite":
            stmt = sqlite.insert(table).on_conflict_do_nothing(index_elements=list(_EPISODE_KEY))
        else:
            stmt = table.insert()
        stmt = stmt.returning(table.c.id)
        conn = s.connection()
        written = 0
        for start in range(0, len(rows), _INSERT_CHUNK):
            written += len(conn.execute(stmt, rows[start:start + _INSERT_CHUNK]).all())
        return written

    def finished_episode_keys(self, round_id: int, *, stage: str = DEFAULT_STAGE) -> set[EpisodeKey]:
        """Return the keys of the episodes a round already holds for ``stage`` (to skip on resume)."""
        with self._read() as s:
            rows = s.execute(
                select(EpisodeRow.pack_id, EpisodeRow.task_id, EpisodeRow.seed, EpisodeRow.attempt).where(
                    EpisodeRow.round_id == round_id, EpisodeRow.stage == stage
                )
            )
            return {EpisodeKey(pack_id=p, task_id=t, seed=sd, attempt=a) for p, t, sd, a in rows}

    def round_episodes(self, round_id: int, *, stage: str | None = DEFAULT_STAGE) -> list[EpisodeRecord]:
        """Return a round's episode records (traces and verdicts), in the order written.

        Args:
            round_id: Round id.
            stage: Stage to read; ``None`` for every stage.
        """
        with self._read() as s:
            stmt = select(EpisodeRow.id, EpisodeRow.record).where(EpisodeRow.round_id == round_id)
            if stage is not None:
                stmt = stmt.where(EpisodeRow.stage == stage)
            rows = s.execute(stmt.order_by(EpisodeRow.id))
            return [decode_record(blob, f"row {row_id} of round {round_id}") for row_id, blob in rows]

    def episode_summaries(self, round_id: int, *, stage: str | None = DEFAULT_STAGE) -> list[EpisodeSummary]:
        """Return a round's episodes' verdict columns without decoding traces, in the order written."""
        with self._read() as s:
            stmt = (select(EpisodeRow).options(defer(EpisodeRow.record)).where(EpisodeRow.round_id == round_id)
                    .order_by(EpisodeRow.id))
            if stage is not None:
                stmt = stmt.where(EpisodeRow.stage == stage)
            return [
                EpisodeSummary(
                    episode_id=r.episode_id, round_id=r.round_id, stage=r.stage, pack_id=r.pack_id, task_id=r.task_id,
                    seed=r.seed, attempt=r.attempt, agent=r.agent, model_ref=r.model_ref, passed=r.passed,
                    score=r.score, invalid=r.invalid, failure_boundary=r.failure_boundary,
                    failure_kind=r.failure_kind, failed_kinds=split_kinds(r.failed_kinds), tokens_in=r.tokens_in,
                    tokens_out=r.tokens_out, cost=r.cost,
                )
                for r in s.scalars(stmt)
            ]

    def task_history(
        self, keys: Iterable[TaskKey] | None = None, *, campaign_id: int | None = None, stage: str = DEFAULT_STAGE
    ) -> dict[TaskKey, list[TaskRoundStats]]:
        """Return per-task success per round (oldest round first), for learnability.

        Args:
            keys: Tasks to report; ``None`` for every task with episodes.
            campaign_id: Only rounds of this campaign.
            stage: Stage of the episodes counted.
        """
        with self._read() as s:
            return queries.task_history(s, None if keys is None else set(keys), campaign_id, stage)

    # Weaknesses and waves ------------------------------------------------------

    def record_weaknesses(self, round_id: int, entries: Sequence[WeaknessEntry]) -> int:
        """Replace a round's weaknesses with ``entries``; return how many were stored.

        Raises:
            RegistryError: Unknown round, or two entries share a rank.
        """
        ranks = [e.rank for e in entries]
        dupes = sorted({r for r in ranks if ranks.count(r) > 1})
        if dupes:
            raise RegistryError(f"round {round_id}: weaknesses share rank(s) {dupes}")
        with self._write(f"recording weaknesses of round {round_id}") as s:
            self._round_row(s, round_id)
            for old in s.scalars(select(WeaknessRow).where(WeaknessRow.round_id == round_id)):
                s.delete(old)
            s.flush()
            s.add_all(WeaknessRow(round_id=round_id, **e.model_dump()) for e in entries)
        return len(entries)

    def weaknesses(self, round_id: int) -> list[WeaknessEntry]:
        """Return a round's weaknesses, by rank."""
        with self._read() as s:
            rows = s.scalars(select(WeaknessRow).where(WeaknessRow.round_id == round_id).order_by(WeaknessRow.rank))
            return [conv.weakness_entry(r) for r in rows]

    def record_wave(
        self, round_id: int, entries: Sequence[WaveEntry], details: dict[str, Any] | None = None
    ) -> WaveInfo:
        """Replace a round's wave with ``entries`` (in planned order) and ``details``.

        Raises:
            RegistryError: Unknown round, or an entry's task is not registered.
        """
        with self._write(f"recording the wave of round {round_id}") as s:
            self._round_row(s, round_id)
            missing = _missing_tasks(s, {(e.pack_id, e.task_id) for e in entries})
            if missing:
                shown = ", ".join(f"{p[:12]}/{t}" for p, t in missing[:5])
                raise RegistryError(f"round {round_id}: wave names {len(missing)} unregistered task(s) ({shown})")
            old = s.scalars(select(WaveRow).where(WaveRow.round_id == round_id)).first()
            if old is not None:
                for entry in s.scalars(select(WaveEntryRow).where(WaveEntryRow.wave_id == old.id)):
                    s.delete(entry)
                s.delete(old)
                s.flush()
            wave = WaveRow(round_id=round_id, details=dict(details or {}), created_at=utcnow())
            s.add(wave)
            s.flush()
            s.add_all(WaveEntryRow(wave_id=wave.id, position=i, **e.model_dump()) for i, e in enumerate(entries))
            return WaveInfo(id=wave.id, round_id=round_id, entries=list(entries), details=dict(wave.details),
                            created_at=conv.aware(wave.created_at))

    def wave(self, round_id: int) -> WaveInfo | None:
        """Return a round's wave, if one was recorded."""
        with self._read() as s:
            return queries.wave(s, round_id)

    # Lineage and status ---------------------------------------------------------

    def lineage(self, model_id: int) -> Lineage:
        """Return how ``model_id`` came to be: each ancestor, the round, weaknesses, wave and packs behind it.

        Raises:
            RegistryError: No such model.
        """
        with self._read() as s:
            if s.get(ModelRow, model_id) is None:
                raise RegistryError(f"model id {model_id} is not registered in {self.display_url}")
            return queries.lineage(s, model_id)

    def status(self) -> RegistryStatus:
        """Return the URL, schema revisions and row counts."""
        with self._read() as s:
            counts = {
                name: int(s.execute(select(func.count()).select_from(table)).scalar_one())
                for name, table in Base.metadata.tables.items()
            }
        return RegistryStatus(url=self.display_url, revision=self.current_revision, head=self.head_revision,
                              pack_root=str(self.packs.root), counts=counts)

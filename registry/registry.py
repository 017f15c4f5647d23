"""The registry: lineage of models, packs, campaigns and their arms, rounds, episodes, weaknesses and waves.

``Registry(url=None, home=None)`` opens (and on first use migrates) the
database and the pack store under ``<home>/packs`` (a cache of the packs'
files, which the database holds too). Writes run in one transaction each, so a
failed write changes nothing; episode writes are idempotent on (round, stage,
model, pack, task, seed, attempt), so re-running a crashed round's evaluation
only adds the episodes it had not finished, and never credits one model with
another's episodes.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from sqlalchemy import func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, defer

from arena.core.episode import EpisodeRecord
from arena.core.model_id import ModelId
from arena.core.pack import Pack, PackError, pack_files, parse_pack, read_pack
from registry import _convert as conv
from registry import _queries as queries
from registry._codec import decode_record, episode_row, split_kinds
from registry._round_state import RoundState, missing_tasks
from registry.database import Migrator, open_engine, resolve_home, resolve_url, safe_url
from registry.errors import RegistryError
from registry.packstore import PackStore
from registry.records import (
    DEFAULT_STAGE,
    TARGETED_ARM,
    ArmInfo,
    BaselineInfo,
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
)
from registry.schema import (
    ArmRow,
    Base,
    CampaignBaselineRow,
    CampaignLeaseRow,
    CampaignRow,
    EpisodeRow,
    ModelRow,
    PackFileRow,
    PackRow,
    RoundRow,
    TaskRow,
    utcnow,
)

_EPISODE_KEY = ("round_id", "stage", "model_id", "pack_id", "task_id", "seed", "attempt")
_INSERT_CHUNK = 1000


def _add_files(s: Session, pack_id: str, files: dict[str, bytes]) -> None:
    s.add_all(PackFileRow(pack_id=pack_id, path=path, data=zlib.compress(data, 3)) for path, data in files.items())


def _arm_row(s: Session, campaign_id: int, name: str, settings: dict[str, Any] | None) -> ArmRow:
    """The campaign's arm ``name``, added when it is not there."""
    row = s.scalars(select(ArmRow).where(ArmRow.campaign_id == campaign_id, ArmRow.name == name)).first()
    if row is None:
        row = ArmRow(campaign_id=campaign_id, name=name, settings=dict(settings or {}), created_at=utcnow())
        s.add(row)
        s.flush()
    return row


class Registry(RoundState):
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

    def find_registered(self, model: ModelId) -> ModelInfo | None:
        """Return the model a registered name names (``reference@v3:<hash>``, a hash prefix of 6+ digits, or none).

        Its version's step must match, and its content hash start with the hash given; with no hash given, the
        step's only version. ``None`` when there is no such model, or several match.
        """
        step = str(model.version or 0)
        with self._read() as s:
            rows = s.scalars(select(ModelRow).where(
                ModelRow.name == model.name, or_(ModelRow.version == step, ModelRow.version.like(f"{step}-%")))).all()
            found = [conv.model_info(r) for r in rows if model.params_hash is None
                     or (r.params_hash or r.version.partition("-")[2]).startswith(model.params_hash)]
        return found[0] if len(found) == 1 else None

    # Packs and tasks ----------------------------------------------------------

    def add_pack(self, pack: Pack) -> PackInfo:
        """Store ``pack`` (content-addressed) and record it, its tasks and its files; adding it again is a no-op.

        A pack recorded by a release that kept its files only on disk gets them in the database now.

        Raises:
            RegistryError: The pack's id does not match its content.
        """
        pack_id = self.packs.put(pack)
        files = pack_files(pack)
        with self._write(f"adding pack {pack_id}") as s:
            row = s.get(PackRow, pack_id)
            if row is not None:
                if s.scalars(select(PackFileRow.path).where(PackFileRow.pack_id == pack_id).limit(1)).first() is None:
                    _add_files(s, pack_id, files)
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
            _add_files(s, pack_id, files)
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
        """Return the pack ``pack_id``, hash-verified and validated: from the local store, else from the database.

        A pack another machine added is written to this home's store from the database on first use; a copy in the
        store that no longer matches its id is replaced by the database's.

        Raises:
            RegistryError: The pack is in neither, or its content does not match its id.
            PackError: The content is intact but does not validate (e.g. its domain is not installed).
        """
        try:
            return self.packs.get(pack_id)
        except RegistryError:  # not in this home's store, or its copy was altered: the database has it
            pass
        with self._read() as s:
            rows = s.execute(select(PackFileRow.path, PackFileRow.data).where(PackFileRow.pack_id == pack_id)).all()
        if not rows:
            raise RegistryError(f"pack {pack_id} is neither in the pack store at {self.packs.root} nor in "
                                f"{self.display_url}")
        try:
            pack = parse_pack({path: zlib.decompress(data) for path, data in rows}, f"{self.display_url} (pack files)")
        except zlib.error as exc:
            raise RegistryError(f"pack {pack_id}: its files in {self.display_url} are damaged: {exc}") from exc
        if pack.id != pack_id:
            raise PackError(f"{self.display_url} (pack files)", "manifest.json",
                            f"id {pack.id!r} differs from the pack it was stored as ({pack_id})", "id")
        self.packs.put(pack)
        return pack

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
            The lease; ``held`` says whether ``holder`` now holds it (else it names the other holder), ``previous``
            names the holder whose lapsed lease it took.
        """
        now = utcnow()
        try:
            with self._write(f"taking the lease on campaign {campaign!r}") as s:
                row = s.get(CampaignLeaseRow, campaign, with_for_update=True)
                if row is not None and row.holder != holder and conv.aware(row.expires_at) > now:
                    return conv.lease_info(row, held=False)
                previous = None
                if row is None:
                    row = CampaignLeaseRow(campaign=campaign, holder=holder, acquired_at=now, expires_at=now)
                    s.add(row)
                elif row.holder != holder:
                    previous = row.holder
                    row.holder, row.acquired_at = holder, now
                row.expires_at = now + timedelta(seconds=ttl_s)
                s.flush()
                return conv.lease_info(row, held=True, previous=previous)
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

    def lease(self, campaign: str) -> LeaseInfo | None:
        """Return who holds the lease on ``campaign`` (``held`` is always false: the caller is not named)."""
        with self._read() as s:
            row = s.get(CampaignLeaseRow, campaign)
            return conv.lease_info(row, held=False) if row is not None else None

    def take_over_lease(self, campaign: str, previous: str, holder: str, ttl_s: float) -> LeaseInfo:
        """Take the lease on ``campaign`` from ``previous`` (a holder found dead), unless it changed hands meanwhile.

        Returns:
            The lease; ``held`` says whether ``holder`` now holds it (else it names whoever does).
        """
        now = utcnow()
        with self._write(f"taking over the lease on campaign {campaign!r}") as s:
            row = s.get(CampaignLeaseRow, campaign, with_for_update=True)
            if row is None:
                row = CampaignLeaseRow(campaign=campaign, holder=holder, acquired_at=now, expires_at=now)
                s.add(row)
            elif row.holder not in (previous, holder):
                return conv.lease_info(row, held=False)
            elif row.holder != holder:
                row.holder, row.acquired_at = holder, now
            row.expires_at = now + timedelta(seconds=ttl_s)
            s.flush()
            return conv.lease_info(row, held=True, previous=previous)

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

    def find_campaign(self, name: str) -> CampaignInfo | None:
        """Return the campaign ``name``, if there is one."""
        with self._read() as s:
            row = s.scalars(select(CampaignRow).where(CampaignRow.name == name)).first()
            return conv.campaign_info(row) if row is not None else None

    def add_arm(self, campaign_id: int, name: str, settings: dict[str, Any] | None = None) -> ArmInfo:
        """Add the arm ``name`` to a campaign, or return it when it is there.

        Raises:
            RegistryError: Unknown campaign.
        """
        with self._write(f"adding arm {name!r} to campaign {campaign_id}") as s:
            if s.get(CampaignRow, campaign_id) is None:
                raise RegistryError(f"campaign id {campaign_id} is not in {self.display_url}")
            return conv.arm_info(_arm_row(s, campaign_id, name, settings))

    def arms(self, campaign_id: int) -> list[ArmInfo]:
        """Return a campaign's arms: ``targeted`` first, then the controls in the order they were added."""
        with self._read() as s:
            rows = list(s.scalars(select(ArmRow).where(ArmRow.campaign_id == campaign_id).order_by(ArmRow.id)))
            return [conv.arm_info(r) for r in sorted(rows, key=lambda r: (r.name != TARGETED_ARM, r.id))]

    def start_round(self, campaign_id: int, index: int, model_in_id: int, *, arm: str = TARGETED_ARM,
                    arm_settings: dict[str, Any] | None = None) -> RoundInfo:
        """Start round ``index`` of a campaign's arm (added if new), or resume it when it has not finished.

        Raises:
            RegistryError: Unknown campaign or model, the round already finished, or it started from another model.
        """
        with self._write(f"starting round {index} of campaign {campaign_id}") as s:
            if s.get(CampaignRow, campaign_id) is None:
                raise RegistryError(f"campaign id {campaign_id} is not in {self.display_url}")
            return conv.round_info(self._start(s, _arm_row(s, campaign_id, arm, arm_settings), index, model_in_id))

    def open_round(self, campaign: str, arm: str, index: int, model_in_id: int, *,
                   settings: dict[str, Any] | None = None, contract: dict[str, Any] | None = None,
                   change: str | None = None) -> RoundInfo:
        """Start (or resume) round ``index`` of a campaign's arm, creating the campaign and the arm with it.

        One transaction: a campaign and an arm exist only with a round, so a run stopped before its first
        round leaves no empty campaign; a baseline exists only with the round it starts from.

        Args:
            campaign: Campaign name.
            arm: The arm's name.
            index: Round index within the arm.
            model_in_id: The model the round starts from.
            settings: Settings recorded with a new campaign and arm.
            contract: What the round is measured against: recorded as baseline 0 of a campaign without one, and
                as the next baseline with ``change``.
            change: The accepted change from the campaign's last baseline (a new baseline starts at ``index``).

        Raises:
            RegistryError: Unknown model, the round already finished, or it started from another model.
        """
        with self._write(f"starting round {index} of campaign {campaign!r} ({arm})") as s:
            row = s.scalars(select(CampaignRow).where(CampaignRow.name == campaign)).first()
            if row is None:
                row = CampaignRow(name=campaign, settings=dict(settings or {}), created_at=utcnow())
                s.add(row)
                s.flush()
            if contract is not None:
                last = s.scalars(select(CampaignBaselineRow).where(CampaignBaselineRow.campaign_id == row.id)
                                 .order_by(CampaignBaselineRow.number.desc())).first()
                if last is None or change is not None:
                    s.add(CampaignBaselineRow(campaign_id=row.id, number=0 if last is None else last.number + 1,
                                              first_round=index, contract=contract, change=change,
                                              created_at=utcnow()))
            return conv.round_info(self._start(s, _arm_row(s, row.id, arm, settings), index, model_in_id))

    def baselines(self, campaign: str) -> list[BaselineInfo]:
        """The campaign's baselines, oldest first (none for an unknown campaign or one recorded before them)."""
        with self._read() as s:
            rows = s.scalars(select(CampaignBaselineRow).join(CampaignRow)
                             .where(CampaignRow.name == campaign).order_by(CampaignBaselineRow.number)).all()
            return [conv.baseline_info(r) for r in rows]

    def _start(self, s: Session, arm: ArmRow, index: int, model_in_id: int) -> RoundRow:
        if s.get(ModelRow, model_in_id) is None:
            raise RegistryError(f"round {index}: model id {model_in_id} is not registered")
        row = s.scalars(select(RoundRow).where(RoundRow.arm_id == arm.id, RoundRow.index == index)).first()
        where = f"round {index} of campaign {arm.campaign_id}" + ("" if arm.name == TARGETED_ARM else f" ({arm.name})")
        if row is None:
            row = RoundRow(campaign_id=arm.campaign_id, arm_id=arm.id, index=index, status="running",
                           model_in_id=model_in_id, started_at=utcnow(), details={})
            s.add(row)
        else:
            if row.status == "finished":
                raise RegistryError(f"{where} (id {row.id}) already finished")
            if row.model_in_id != model_in_id:
                raise RegistryError(f"{where} (id {row.id}) started from model {row.model_in_id}, not {model_in_id}")
            row.status, row.started_at, row.finished_at, row.error = "running", utcnow(), None, None
        s.flush()
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

    def update_round(self, round_id: int, details: dict[str, Any]) -> RoundInfo:
        """Merge ``details`` into a round's details, leaving its status as it is.

        Raises:
            RegistryError: Unknown round.
        """
        with self._write(f"updating round {round_id}") as s:
            row = self._round_row(s, round_id)
            row.details = {**(row.details or {}), **details}
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

    def rounds(self, campaign_id: int, *, arm: str | None = None) -> list[RoundInfo]:
        """Return the rounds of a campaign (of one arm when ``arm`` is given), by index (then arm)."""
        with self._read() as s:
            stmt = select(RoundRow).where(RoundRow.campaign_id == campaign_id).order_by(RoundRow.index,
                                                                                       RoundRow.arm_id)
            if arm is not None:
                stmt = stmt.join(ArmRow, ArmRow.id == RoundRow.arm_id).where(ArmRow.name == arm)
            return [conv.round_info(r) for r in s.scalars(stmt)]

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
        self, round_id: int, records: Iterable[EpisodeRecord], *, stage: str = DEFAULT_STAGE,
        model_id: int | None = None,
    ) -> int:
        """Write episodes of a round in one transaction; return how many were new.

        Episodes whose (pack, task, seed, attempt) the round already holds for ``stage`` and the same model are
        skipped (the first of duplicates within ``records`` wins), also when another process writes the same keys
        at the same time.

        Args:
            round_id: Round id.
            records: The episodes.
            stage: Stage within the round.
            model_id: The registered model that played them (default: the round's model in).

        Raises:
            RegistryError: Unknown round or model, or a task not registered (add its pack first); nothing is written.
        """
        batch: dict[tuple[str, str, int, int], EpisodeRecord] = {}
        for record in records:
            batch.setdefault((record.pack_id, record.task_id, record.seed, record.attempt), record)
        if not batch:
            return 0
        pack_ids = sorted({k[0] for k in batch})
        with self._write(f"recording {len(batch)} episodes of round {round_id}") as s:
            model = self._round_row(s, round_id).model_in_id if model_id is None else model_id
            if model_id is not None and s.get(ModelRow, model_id) is None:
                raise RegistryError(f"round {round_id}: model id {model_id} is not registered (nothing was written)")
            existing = set(
                s.execute(
                    select(EpisodeRow.pack_id, EpisodeRow.task_id, EpisodeRow.seed, EpisodeRow.attempt).where(
                        EpisodeRow.round_id == round_id, EpisodeRow.stage == stage, EpisodeRow.model_id == model,
                        EpisodeRow.pack_id.in_(pack_ids),
                    )
                )
            )
            new = [r for k, r in batch.items() if k not in existing]
            if not new:
                return 0
            missing = missing_tasks(s, {(r.pack_id, r.task_id) for r in new})
            if missing:
                shown = ", ".join(f"{p[:12]}/{t}" for p, t in missing[:5])
                raise RegistryError(
                    f"round {round_id}: {len(missing)} episode task(s) are not registered ({shown}); add their packs "
                    "first (nothing was written)"
                )
            return self._insert_episodes(s, [episode_row(round_id, stage, model, r) for r in new])

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

    def finished_episode_keys(self, round_id: int, *, stage: str = DEFAULT_STAGE,
                              model_id: int | None = None) -> set[EpisodeKey]:
        """Return the keys of the episodes a round holds for ``stage`` and one model (to skip on resume).

        Args:
            round_id: Round id.
            stage: Stage within the round.
            model_id: The model that played them (default: the round's model in).
        """
        with self._read() as s:
            model = self._round_row(s, round_id).model_in_id if model_id is None else model_id
            rows = s.execute(
                select(EpisodeRow.pack_id, EpisodeRow.task_id, EpisodeRow.seed, EpisodeRow.attempt).where(
                    EpisodeRow.round_id == round_id, EpisodeRow.stage == stage, EpisodeRow.model_id == model
                )
            )
            return {EpisodeKey(pack_id=p, task_id=t, seed=sd, attempt=a) for p, t, sd, a in rows}

    def round_episodes(self, round_id: int, *, stage: str | None = DEFAULT_STAGE,
                       model_id: int | None = None) -> list[EpisodeRecord]:
        """Return a round's episode records (traces and verdicts), in the order written.

        Args:
            round_id: Round id.
            stage: Stage to read; ``None`` for every stage.
            model_id: Only the episodes this model played; ``None`` for every model.
        """
        with self._read() as s:
            stmt = select(EpisodeRow.id, EpisodeRow.record).where(EpisodeRow.round_id == round_id)
            if stage is not None:
                stmt = stmt.where(EpisodeRow.stage == stage)
            if model_id is not None:
                stmt = stmt.where(EpisodeRow.model_id == model_id)
            rows = s.execute(stmt.order_by(EpisodeRow.id))
            return [decode_record(blob, f"row {row_id} of round {round_id}") for row_id, blob in rows]

    def episode_summaries(self, round_id: int, *, stage: str | None = DEFAULT_STAGE,
                          model_id: int | None = None) -> list[EpisodeSummary]:
        """Return a round's episodes' verdict columns without decoding traces, in the order written.

        Args:
            round_id: Round id.
            stage: Stage to read; ``None`` for every stage.
            model_id: Only the episodes this model played; ``None`` for every model.
        """
        with self._read() as s:
            stmt = (select(EpisodeRow).options(defer(EpisodeRow.record)).where(EpisodeRow.round_id == round_id)
                    .order_by(EpisodeRow.id))
            if stage is not None:
                stmt = stmt.where(EpisodeRow.stage == stage)
            if model_id is not None:
                stmt = stmt.where(EpisodeRow.model_id == model_id)
            return [
                EpisodeSummary(
                    episode_id=r.episode_id, round_id=r.round_id, stage=r.stage, model_id=r.model_id,
                    pack_id=r.pack_id, task_id=r.task_id, seed=r.seed, attempt=r.attempt, agent=r.agent,
                    model_ref=r.model_ref, passed=r.passed, score=r.score, invalid=r.invalid,
                    failure_boundary=r.failure_boundary, failure_kind=r.failure_kind,
                    failed_kinds=split_kinds(r.failed_kinds), tokens_in=r.tokens_in, tokens_out=r.tokens_out,
                    cost=r.cost,
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

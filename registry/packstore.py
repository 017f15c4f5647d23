"""A content-addressed pack store on disk.

Each pack is kept as a folder ``<root>/<content id>`` written by
``arena.core.pack.write_pack``. ``put`` returns the id and is a no-op when an intact
copy is already there; ``get`` and ``files`` recompute the content hash with
``arena.core.pack.content_id`` and refuse an entry whose content no longer matches
its id (a tampered or damaged store entry), naming the id.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from arena.core.pack import Pack, PackError, content_id, pack_files, parse_pack, write_pack
from registry.errors import RegistryError

_PACK_ID = re.compile(r"^[0-9a-f]{64}$")


class PackStore:
    """Packs on disk, addressed by content id.

    Args:
        root: The store's folder (created on first write).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, pack_id: str) -> Path:
        """Return where the pack ``pack_id`` is (or would be) kept.

        Raises:
            RegistryError: ``pack_id`` is not a 64-digit lower-case hex content id.
        """
        if not _PACK_ID.match(pack_id):
            raise RegistryError(f"{pack_id!r} is not a pack content id (64 lower-case hex digits)")
        return self.root / pack_id

    def __contains__(self, pack_id: object) -> bool:
        return isinstance(pack_id, str) and bool(_PACK_ID.match(pack_id)) and (self.root / pack_id).is_dir()

    def ids(self) -> list[str]:
        """Return the ids of the stored packs, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and _PACK_ID.match(p.name))

    def put(self, pack: Pack) -> str:
        """Store ``pack`` and return its id; storing an intact pack again changes nothing.

        A stored entry that fails verification is replaced by the given pack,
        whose own id has been checked against its content.

        Raises:
            RegistryError: The pack's id does not match its content.
        """
        files = pack_files(pack)
        actual = content_id(files)
        if pack.id != actual:
            raise RegistryError(f"pack {pack.id!r} ({pack.manifest.domain}) is refused: its content hash is {actual}")
        dest = self.path(actual)
        if dest.exists():
            try:
                self.files(actual)
                return actual
            except RegistryError:
                shutil.rmtree(dest)
        write_pack(pack, dest)
        return actual

    def files(self, pack_id: str) -> dict[str, bytes]:
        """Return the stored files of ``pack_id`` after checking their content hash.

        Raises:
            RegistryError: No such pack, or its content does not match ``pack_id`` (tampered), naming the id.
        """
        root = self.path(pack_id)
        if not root.is_dir():
            raise RegistryError(f"pack {pack_id} is not in the pack store at {self.root}")
        files: dict[str, bytes] = {}
        for entry in sorted(root.rglob("*")):
            rel = entry.relative_to(root).as_posix()
            if entry.is_symlink():
                raise RegistryError(f"pack {pack_id} is refused: {rel} in the store is a symbolic link")
            if entry.is_file():
                files[rel] = entry.read_bytes()
        if "manifest.json" not in files:
            raise RegistryError(f"pack {pack_id} is refused: the store entry has no manifest.json")
        try:
            actual = content_id(files)
        except (ValueError, TypeError) as exc:
            raise RegistryError(f"pack {pack_id} is refused: unreadable manifest.json in the store ({exc})") from exc
        if actual != pack_id:
            raise RegistryError(
                f"pack {pack_id} is refused: its stored content hashes to {actual} (the store entry was altered)"
            )
        return files

    def get(self, pack_id: str) -> Pack:
        """Return the pack ``pack_id``, verified and validated.

        Raises:
            RegistryError: No such pack, or it was tampered with, naming the id.
            PackError: The content is intact but does not validate (e.g. its domain is not installed).
        """
        files = self.files(pack_id)
        pack = parse_pack(files, self.path(pack_id))
        if pack.id != pack_id:
            raise PackError(self.path(pack_id), "manifest.json", f"id {pack.id!r} differs from its store entry", "id")
        return pack

    def verify(self, pack_id: str) -> bool:
        """Return whether the stored pack ``pack_id`` is present and intact."""
        try:
            self.files(pack_id)
        except RegistryError:
            return False
        return True

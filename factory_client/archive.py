"""Pack archives: deterministic tar.gz writing and safe, in-memory reading.

Reading never touches the disk. It refuses absolute paths, ``..`` and backslashes,
links, devices and every non-regular member, duplicate names, more members than
allowed, a compressed size or an uncompressed total over the limits, and an
archive whose sha256 differs from the listing; then ``arena.core.pack.parse_pack``
validates the content and its content hash.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zlib

from pydantic import BaseModel, ConfigDict, Field

from arena.core.pack import MAX_TASKS, Pack, PackError, pack_files, parse_pack
from factory_client.errors import PackRefused


class ArchiveLimits(BaseModel):
    """Limits a received pack archive must respect.

    Attributes:
        max_compressed_bytes: Largest archive accepted.
        max_uncompressed_bytes: Largest total size of the members.
        max_members: Most members.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_compressed_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    max_uncompressed_bytes: int = Field(default=256 * 1024 * 1024, gt=0)
    max_members: int = Field(default=MAX_TASKS + 16, gt=0)


def pack_archive(pack: Pack) -> bytes:
    """Return the pack's files as a deterministic tar.gz (sorted names, zero times and owners)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in sorted(pack_files(pack).items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def sha256_hex(data: bytes) -> str:
    """Return the sha256 of ``data`` as hex."""
    return hashlib.sha256(data).hexdigest()


def _check_name(pack_id: str, name: str) -> None:
    if not name or "\0" in name or "\\" in name:
        raise PackRefused(pack_id, f"archive member name {name!r} is not a plain relative path")
    if name.startswith("/"):
        raise PackRefused(pack_id, f"archive member {name!r} has an absolute path")
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise PackRefused(pack_id, f"archive member {name!r} escapes the archive or is not normalized")


def extract_files(data: bytes, pack_id: str, limits: ArchiveLimits | None = None) -> dict[str, bytes]:
    """Read a pack archive in memory and return ``relative path -> bytes``.

    Args:
        data: The tar.gz bytes.
        pack_id: The pack's id as listed, for messages.
        limits: Size and member limits (defaults: ``ArchiveLimits()``).

    Raises:
        PackRefused: Any unsafe member, an exceeded limit or a corrupt archive, naming it.
    """
    limits = limits or ArchiveLimits()
    if len(data) > limits.max_compressed_bytes:
        raise PackRefused(pack_id, f"archive is {len(data)} bytes, over the limit of {limits.max_compressed_bytes}")
    files: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            count = 0
            while (member := tar.next()) is not None:
                count += 1
                if count > limits.max_members:
                    raise PackRefused(pack_id, f"archive has more than {limits.max_members} members")
                name = member.name
                _check_name(pack_id, name)
                if not member.isreg():
                    raise PackRefused(pack_id, f"archive member {name!r} is not a regular file (type {member.type!r})")
                if name in files:
                    raise PackRefused(pack_id, f"archive member {name!r} appears twice")
                total += member.size
                if total > limits.max_uncompressed_bytes:
                    raise PackRefused(
                        pack_id, f"archive expands past the limit of {limits.max_uncompressed_bytes} bytes"
                    )
                handle = tar.extractfile(member)
                if handle is None:
                    raise PackRefused(pack_id, f"archive member {name!r} has no data")
                content = handle.read(member.size + 1)
                if len(content) != member.size:
                    raise PackRefused(pack_id, f"archive member {name!r} is truncated")
                files[name] = content
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise PackRefused(pack_id, f"archive is not a readable tar.gz: {exc}") from exc
    return files


def load_archive(
    data: bytes,
    *,
    pack_id: str,
    sha256: str,
    limits: ArchiveLimits | None = None,
    source: str = "factory",
) -> Pack:
    """Check, read and validate a pack archive; return the pack.

    Args:
        data: The tar.gz bytes.
        pack_id: The pack's id as listed; the content must hash to it.
        sha256: The archive's sha256 as listed.
        limits: Size and member limits.
        source: Where the archive came from, for messages.

    Raises:
        PackRefused: Hash mismatch, unsafe archive, failed validation or unknown schema version.
    """
    actual = sha256_hex(data)
    if actual != sha256:
        raise PackRefused(pack_id, f"archive sha256 {actual} does not match the listed {sha256}")
    files = extract_files(data, pack_id, limits)
    try:
        pack = parse_pack(files, f"{source}:{pack_id[:16]}")
    except PackError as exc:
        raise PackRefused(pack_id, f"validation failed: {exc}") from exc
    if pack.id != pack_id:
        raise PackRefused(pack_id, f"content id {pack.id} differs from the listed id")
    return pack

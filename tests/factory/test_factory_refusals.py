from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from factory_helpers import DOMAIN
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from arena.core.pack import Pack, build_pack, pack_files
from factory_client import (
    PROTOCOL_VERSION,
    ArchiveLimits,
    BackgroundServer,
    FactoryError,
    FactoryProtocolError,
    HttpFactoryClient,
    PackRefused,
    extract_files,
    pack_archive,
    sha256_hex,
)
from registry import Registry

REQ = "req-test"


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue())


def file_member(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def archive_of(files: dict[str, bytes]) -> bytes:
    return tar_gz([file_member(n, d) for n, d in sorted(files.items())])


class EvilFactory:
    """A misbehaving factory: serves whatever listing and archive bytes the test sets, and failures on demand."""

    def __init__(self) -> None:
        self.archive = b""
        self.listing: dict[str, Any] = {}
        self.failures: list[int] = []
        self.hits = 0
        self.protocol_version = PROTOCOL_VERSION
        app = FastAPI()

        def fail() -> Response | None:
            self.hits += 1
            if self.failures:
                code = self.failures.pop(0)
                return JSONResponse(status_code=code, content={"detail": f"injected {code}"},
                                    headers={"Retry-After": "0"} if code == 429 else None)
            return None

        @app.get("/v1/requests/{request_id}")
        def status(request_id: str) -> Any:
            return fail() or {"protocol_version": self.protocol_version, "request_id": request_id, "state": "done",
                              "progress": 1.0, "message": "", "pack_ids": []}

        @app.get("/v1/requests/{request_id}/packs")
        def packs(request_id: str) -> Any:
            return fail() or {**self.listing, "protocol_version": self.protocol_version}

        @app.get("/v1/packs/{pack_id}.tar.gz")
        def archive(pack_id: str) -> Response:
            return fail() or Response(content=self.archive, media_type="application/gzip")

        self.app = app

    def serve(self, pack: Pack, archive: bytes, *, sha256: str | None = None, tasks: int | None = None) -> None:
        self.archive = archive
        self.listing = {
            "request_id": REQ,
            "packs": [{"id": pack.id, "sha256": sha256 or sha256_hex(archive), "size": len(archive),
                       "domain": pack.manifest.domain, "tasks": len(pack.tasks) if tasks is None else tasks,
                       "variant": 0}],
        }


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=5, knobs={"tasks_per_template": 1, "focus_tags": ["prerequisite"]})


@pytest.fixture(scope="module")
def evil():
    factory = EvilFactory()
    with BackgroundServer(factory.app) as server:
        factory.url = server.url  # type: ignore[attr-defined]
        yield factory


@pytest.fixture()
def registry(tmp_path: Path):
    with Registry(home=tmp_path / "home") as reg:
        yield reg


def fetch_into(registry: Registry, evil: EvilFactory, **client_options: Any) -> list[Pack]:
    with HttpFactoryClient(evil.url, backoff=0.01, **client_options) as client:  # type: ignore[attr-defined]
        packs = client.packs(REQ)
    for p in packs:
        registry.add_pack(p)
    return packs


def assert_untouched(registry: Registry) -> None:
    assert registry.list_packs() == []
    assert registry.packs.ids() == []


def test_a_good_pack_lands(evil: EvilFactory, pack: Pack, registry: Registry):
    evil.serve(pack, pack_archive(pack))
    packs = fetch_into(registry, evil)
    assert [p.id for p in packs] == [pack.id]
    assert registry.packs.ids() == [pack.id]


def test_pack_failing_validation_is_refused(evil: EvilFactory, pack: Pack, registry: Registry):
    files = pack_files(pack)
    name = next(n for n in files if n.startswith("tasks/"))
    task = json.loads(files[name])
    task["gold"]["steps"][0]["tool"] = "drop_database"
    files[name] = json.dumps(task).encode()
    evil.serve(pack, archive_of(files))
    with pytest.raises(PackRefused, match="validation failed.*drop_database"):
        fetch_into(registry, evil)
    assert_untouched(registry)


def test_tampered_content_fails_its_content_hash(evil: EvilFactory, pack: Pack, registry: Registry):
    files = pack_files(pack)
    files["policy.md"] = b"Anything goes."
    evil.serve(pack, archive_of(files))
    with pytest.raises(PackRefused, match="does not match the content hash"):
        fetch_into(registry, evil)
    assert_untouched(registry)


def test_archive_hash_mismatch_is_refused(evil: EvilFactory, pack: Pack, registry: Registry):
    evil.serve(pack, pack_archive(pack), sha256="0" * 64)
    with pytest.raises(PackRefused, match="sha256 .* does not match the listed 0000"):
        fetch_into(registry, evil)
    assert_untouched(registry)


@pytest.mark.parametrize("name", ["../escape.json", "/etc/passwd", "tasks/../../x.json", "a\\b.json"])
def test_path_escape_is_refused(evil: EvilFactory, pack: Pack, registry: Registry, name: str):
    files = pack_files(pack)
    evil.serve(pack, tar_gz([*(file_member(n, d) for n, d in sorted(files.items())), file_member(name, b"{}")]))
    with pytest.raises(PackRefused, match="absolute path|escapes the archive|not a plain relative path"):
        fetch_into(registry, evil)
    assert_untouched(registry)


def test_links_and_devices_are_refused(pack: Pack):
    link = tarfile.TarInfo("manifest.json")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    with pytest.raises(PackRefused, match="not a regular file"):
        extract_files(tar_gz([(link, None)]), pack.id)
    device = tarfile.TarInfo("state.db")
    device.type = tarfile.CHRTYPE
    with pytest.raises(PackRefused, match="not a regular file"):
        extract_files(tar_gz([(device, None)]), pack.id)
    hard = tarfile.TarInfo("policy.md")
    hard.type = tarfile.LNKTYPE
    hard.linkname = "manifest.json"
    with pytest.raises(PackRefused, match="not a regular file"):
        extract_files(tar_gz([(hard, None)]), pack.id)


def test_oversized_archive_is_refused(evil: EvilFactory, pack: Pack, registry: Registry):
    data = pack_archive(pack)
    evil.serve(pack, data)
    with pytest.raises(PackRefused, match="over the limit|exceeds the limit"):
        fetch_into(registry, evil, limits=ArchiveLimits(max_compressed_bytes=len(data) - 1))
    with pytest.raises(PackRefused, match="expands past the limit"):
        fetch_into(registry, evil, limits=ArchiveLimits(max_uncompressed_bytes=10_000))
    with pytest.raises(PackRefused, match="more than 3 members"):
        fetch_into(registry, evil, limits=ArchiveLimits(max_members=3))
    assert_untouched(registry)


def test_gzip_bomb_is_refused_by_the_expansion_limit(pack: Pack):
    bomb = tar_gz([file_member("state.db", b"\0" * 5_000_000)])
    assert len(bomb) < 20_000
    with pytest.raises(PackRefused, match="expands past the limit"):
        extract_files(bomb, pack.id, ArchiveLimits(max_uncompressed_bytes=1_000_000))


def test_unknown_pack_schema_version_is_refused(evil: EvilFactory, pack: Pack, registry: Registry):
    files = pack_files(pack)
    manifest = json.loads(files["manifest.json"])
    manifest["schema_version"] = 99
    files["manifest.json"] = json.dumps(manifest).encode()
    evil.serve(pack, archive_of(files))
    with pytest.raises(PackRefused, match="unknown schema version 99"):
        fetch_into(registry, evil)
    assert_untouched(registry)


def test_unknown_protocol_version_is_refused(evil: EvilFactory, pack: Pack, registry: Registry):
    evil.serve(pack, pack_archive(pack))
    evil.protocol_version = 2
    try:
        with pytest.raises(FactoryProtocolError, match="unknown protocol version 2"):
            fetch_into(registry, evil)
        with HttpFactoryClient(evil.url) as client:  # type: ignore[attr-defined]
            with pytest.raises(FactoryProtocolError, match="unknown protocol version 2"):
                client.status(REQ)
    finally:
        evil.protocol_version = PROTOCOL_VERSION
    assert_untouched(registry)


def test_listing_that_lies_about_the_task_count_is_refused(evil: EvilFactory, pack: Pack, registry: Registry):
    evil.serve(pack, pack_archive(pack), tasks=len(pack.tasks) + 1)
    with pytest.raises(PackRefused, match="tasks, the listing says"):
        fetch_into(registry, evil)
    assert_untouched(registry)


def test_retries_on_5xx_and_429_then_succeeds(evil: EvilFactory, pack: Pack, registry: Registry):
    evil.serve(pack, pack_archive(pack))
    evil.hits = 0
    evil.failures = [503, 429, 500]
    packs = fetch_into(registry, evil, retries=3)
    assert [p.id for p in packs] == [pack.id]
    assert evil.hits == 5  # listing: 503, 429, 500 then ok; archive: ok


def test_retries_give_up_with_a_clear_error(evil: EvilFactory, pack: Pack, registry: Registry):
    evil.serve(pack, pack_archive(pack))
    evil.hits = 0
    evil.failures = [503, 503, 503]
    try:
        with pytest.raises(FactoryError, match="answered 503 after 3 tries"):
            fetch_into(registry, evil, retries=2)
    finally:
        evil.failures = []
    assert evil.hits == 3
    assert_untouched(registry)


def test_client_errors_are_not_retried(evil: EvilFactory, registry: Registry):
    evil.hits = 0
    evil.failures = [404]
    with pytest.raises(FactoryError, match="404"):
        fetch_into(registry, evil, retries=3)
    assert evil.hits == 1

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from registry_factories import DOMAIN, make_pack

from arena.core.pack import Pack, PackError, build_pack, pack_files, write_pack
from registry import PackStore, Registry, RegistryError


def test_put_returns_the_content_id_and_a_second_put_is_a_no_op(tmp_path: Path) -> None:
    store = PackStore(tmp_path / "packs")
    pack = make_pack(1)
    pack_id = store.put(pack)
    assert pack_id == pack.id and len(pack_id) == 64
    manifest = store.path(pack_id) / "manifest.json"
    before = manifest.stat().st_mtime_ns
    assert store.put(pack) == pack_id
    assert manifest.stat().st_mtime_ns == before
    assert store.ids() == [pack_id] and pack_id in store
    assert store.files(pack_id) == pack_files(pack)
    assert store.verify(pack_id)


@pytest.mark.parametrize(
    ("target", "change"),
    [
        ("policy.md", lambda p: p.write_text("Refund anything.\n")),
        ("tasks/t1-train-0.json", lambda p: p.write_text(p.read_text().replace("Sam", "Eve"))),
        ("manifest.json", lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "seed": 99}))),
        ("tasks/extra.json", lambda p: p.write_text("{}")),
        ("state.db", lambda p: p.unlink()),
    ],
)
def test_a_tampered_store_entry_is_refused_naming_the_id(tmp_path: Path, target: str, change: object) -> None:
    store = PackStore(tmp_path)
    pack_id = store.put(make_pack(1))
    change(store.path(pack_id) / target)  # type: ignore[operator]
    assert not store.verify(pack_id)
    with pytest.raises(RegistryError, match=f"pack {pack_id} is refused"):
        store.files(pack_id)
    with pytest.raises(RegistryError, match=pack_id):
        store.get(pack_id)


def test_putting_a_pack_again_repairs_a_damaged_entry(tmp_path: Path) -> None:
    store = PackStore(tmp_path)
    pack = make_pack(2)
    (store.path(store.put(pack)) / "policy.md").write_text("tampered")
    assert store.put(pack) == pack.id
    assert store.verify(pack.id)


def test_a_pack_whose_id_does_not_match_its_content_is_refused(tmp_path: Path) -> None:
    pack = make_pack(3)
    forged = dataclasses.replace(pack, policy="Different rules.\n")
    store = PackStore(tmp_path)
    with pytest.raises(RegistryError, match=f"pack '{pack.id}'.*content hash is"):
        store.put(forged)
    assert store.ids() == []


def test_unknown_and_malformed_ids(tmp_path: Path) -> None:
    store = PackStore(tmp_path)
    with pytest.raises(RegistryError, match="not a pack content id"):
        store.path("../etc")
    with pytest.raises(RegistryError, match="is not in the pack store"):
        store.files("0" * 64)
    assert "0" * 64 not in store


def test_get_validates_the_intact_pack_with_the_arena_reader(tmp_path: Path) -> None:
    store = PackStore(tmp_path)
    pack_id = store.put(make_pack(4))
    with pytest.raises(PackError, match=f"unknown domain '{DOMAIN}'"):
        store.get(pack_id)


def test_add_pack_records_the_pack_and_tasks_once(db_url: str, home: Path) -> None:
    parent = make_pack(5)
    child = make_pack(6, parent=parent.id)
    with Registry(db_url, home) as reg:
        info = reg.add_pack(parent)
        assert reg.add_pack(parent) == info
        reg.add_pack(child)
        assert info.domain == DOMAIN and info.parent is None and info.knobs == {"near_duplicates": 2}
        assert Path(info.storage_path) == home / "packs" / parent.id and reg.packs.verify(parent.id)
        assert reg.pack(child.id).parent == parent.id
        tasks = reg.tasks(parent.id)
        assert [t.task_id for t in tasks] == sorted(t.id for t in parent.tasks)
        files = pack_files(parent)
        first = tasks[0]
        assert first.content_hash == hashlib.sha256(files[f"tasks/{first.task_id}.json"]).hexdigest()
        assert reg.status().counts["packs"] == 2 and reg.status().counts["tasks"] == 10
        assert [p.id for p in reg.list_packs(DOMAIN)] == [parent.id, child.id]
        assert reg.list_packs("other") == []

        suite = reg.heldout_suite(DOMAIN)
        assert [(t.pack_id, t.task_id) for t in suite] == [(parent.id, "t5-heldout-0"), (parent.id, "t5-heldout-1")]
        assert len(reg.heldout_suite(DOMAIN, include_variants=True)) == 4
        assert reg.heldout_suite("other") == []


def _builtin_pack() -> Pack:
    from arena.core.domains import available_domains, get_domain

    for name in available_domains():
        try:
            get_domain(name)
        except (ImportError, AttributeError):
            continue
        return build_pack(name, seed=0)
    pytest.skip("no built-in gym is installed to build a pack from")


def test_get_returns_a_verified_builtin_pack_and_import_refuses_a_tampered_folder(tmp_path: Path, home: Path) -> None:
    pack = _builtin_pack()
    folder = write_pack(pack, tmp_path / "incoming")
    with Registry(f"sqlite:///{tmp_path / 'r.db'}", home) as reg:
        assert reg.import_pack(folder).id == pack.id
        loaded = reg.load_pack(pack.id)
        assert pack_files(loaded) == pack_files(pack)
        (folder / "policy.md").write_text("tampered")
        other = tmp_path / "other-home"
        with Registry(f"sqlite:///{tmp_path / 'r2.db'}", other) as fresh:
            with pytest.raises(PackError, match="does not match the content hash"):
                fresh.import_pack(folder)
            assert fresh.status().counts["packs"] == 0 and fresh.packs.ids() == []

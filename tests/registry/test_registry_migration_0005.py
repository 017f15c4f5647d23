"""Revision 0005 migrates a store of an earlier release: control campaigns become arms, episodes get their model,
pools are read from the waves, and an unfinished round's re-evaluation (whose model was never recorded) goes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from registry_factories import make_pack, make_record

from arena.core.pack import Pack, pack_files
from registry import Registry
from registry._codec import episode_row
from registry.database import Migrator, open_engine

T0 = "2026-01-01 00:00:00"


def _insert(conn: sa.Connection, table: str, **values: Any) -> int:
    columns = ", ".join(f'"{k}"' for k in values)
    names = ", ".join(f":{k}" for k in values)
    if "id" in values or table in ("packs", "campaign_leases"):
        conn.execute(sa.text(f"INSERT INTO {table} ({columns}) VALUES ({names})"), values)
        return 0
    return int(conn.execute(sa.text(f"INSERT INTO {table} ({columns}) VALUES ({names}) RETURNING id"),
                            values).scalar_one())


def _pack(conn: sa.Connection, pack: Pack) -> None:
    m = pack.manifest
    _insert(conn, "packs", id=pack.id, parent=m.parent, domain=m.domain, schema_version=m.schema_version,
            seed=m.seed, knobs="{}", provenance="{}", created_by="tests", storage_path="/nowhere", added_at=T0)
    files = pack_files(pack)
    for t in pack.tasks:
        _insert(conn, "tasks", pack_id=pack.id, task_id=t.id, split=t.split, category=t.category, tags="[]",
                content_hash=hashlib.sha256(files[f"tasks/{t.id}.json"]).hexdigest())


def _episode(conn: sa.Connection, round_id: int, stage: str, pack: Pack, task_index: int) -> None:
    row = episode_row(round_id, stage, 0, make_record(pack, pack.tasks[task_index]))
    row.pop("model_id")
    _insert(conn, "episodes", **row)


def _round(conn: sa.Connection, campaign: int, index: int, model_in: int, model_out: int | None) -> int:
    return _insert(conn, "rounds", campaign_id=campaign, index=index, status="finished" if model_out else "running",
                   model_in_id=model_in, model_out_id=model_out, started_at=T0, details="{}")


def _wave(conn: sa.Connection, round_id: int, entries: list[tuple[Pack, int]]) -> None:
    wave = _insert(conn, "waves", round_id=round_id, details="{}", created_at=T0)
    for position, (pack, task) in enumerate(entries):
        _insert(conn, "wave_entries", wave_id=wave, position=position, pack_id=pack.id, task_id=pack.tasks[task].id,
                weight=1.0, reason="targeted:wrong_id")


def test_a_store_of_release_0003_is_migrated_whole(db_url: str, home: Path) -> None:
    base, variant, control_variant = make_pack(0), make_pack(1, parent="p"), make_pack(2, parent="q")
    engine, write = open_engine(db_url)
    Migrator(engine, write, db_url).upgrade("0003")
    with write.begin() as conn:
        for pack in (base, variant, control_variant):
            _pack(conn, pack)
        models = [_insert(conn, "models", name="policy", version=v, kind="reference", details="{}", created_at=T0)
                  for v in ("0", "1", "1u", "2")]
        targeted = _insert(conn, "campaigns", name="c", settings='{"arm": "targeted"}', created_at=T0)
        control = _insert(conn, "campaigns", name="c.uniform", settings='{"arm": "uniform"}', created_at=T0)
        lone = _insert(conn, "campaigns", name="lone.uniform", settings='{"arm": "uniform"}', created_at=T0)
        first = _round(conn, targeted, 0, models[0], models[1])
        second = _round(conn, targeted, 1, models[1], None)
        controlled = _round(conn, control, 0, models[0], models[2])
        for rid, stage in ((first, "eval_before"), (first, "train"), (first, "eval_after"), (second, "eval_before"),
                           (second, "eval_after"), (controlled, "eval_after")):
            _episode(conn, rid, stage, base, 0)
        _wave(conn, first, [(base, 0), (variant, 0)])
        _wave(conn, second, [(variant, 1), (base, 1)])
        _wave(conn, controlled, [(base, 0), (control_variant, 0)])
        _insert(conn, "campaign_leases", campaign="c.uniform", holder="h:1:x", acquired_at=T0, expires_at=T0)
    engine.dispose()

    with Registry(db_url, home) as reg:
        assert reg.current_revision == "0006"
        assert [c.name for c in reg.campaigns()] == ["c", "lone.uniform"]
        info = reg.campaign("c")
        assert [(a.name, a.settings) for a in reg.arms(info.id)] == [("targeted", {"arm": "targeted"}),
                                                                      ("uniform", {"arm": "uniform"})]
        assert [a.name for a in reg.arms(lone)] == ["uniform"], "a control without its campaign stays a campaign"
        assert [r.id for r in reg.rounds(info.id, arm="targeted")] == [first, second]
        assert [(r.id, r.campaign_id) for r in reg.rounds(info.id, arm="uniform")] == [(controlled, targeted)]
        assert reg.stage_models(first, "eval_before") == {models[0]: 1} == reg.stage_models(first, "train")
        assert reg.stage_models(first, "eval_after") == {models[1]: 1}
        assert reg.stage_models(controlled, "eval_after") == {models[2]: 1}
        assert reg.stage_models(second, "eval_before") == {models[1]: 1}
        assert reg.stage_models(second, "eval_after") == {}, "the unfinished round's re-evaluation had no model"
        assert [(p.pack_id, p.role) for p in reg.pool(first)] == [(base.id, "base"), (variant.id, "added")]
        assert [(p.pack_id, p.role) for p in reg.pool(second)] == [(base.id, "base"), (variant.id, "variant")]
        assert [(p.pack_id, p.role) for p in reg.pool(controlled)] == [(base.id, "base"),
                                                                        (control_variant.id, "added")]
        assert reg.acquire_lease("c", "h:2:y", 60).held
        wave = reg.wave(first)
        assert wave is not None and wave.plan is None and len(wave.entries) == 2

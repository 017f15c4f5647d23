"""Registries written before model references were masked: the upgrade masks the endpoints they hold."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import column, insert, inspect, select, table, text

from arena.core.episode import EpisodeFailure, EpisodeRecord
from registry import Registry
from registry._codec import decode_record, episode_row
from registry.database import Migrator, open_engine

PASSWORD = "old-PASSWORD-4d2a"
QUERY_TOKEN = "old-QUERY-9e1f"
ENDPOINT = f"http://user:{PASSWORD}@127.0.0.1:8000/v1?api-key={QUERY_TOKEN}"


def _record(attempt: int, model_ref: str, failure: str | None) -> EpisodeRecord:
    return EpisodeRecord(
        episode_id=f"e{attempt}", pack_id="p" * 64, domain="helpdesk", task_id="t1", split="heldout",
        category="c", seed=0, attempt=attempt, agent="litellm", model_ref=model_ref, reply="done",
        failure=None if failure is None else EpisodeFailure(boundary="model_api", kind="bad_request", message=failure))


def _old_registry(db_url: str) -> None:
    """A registry at revision 0003 holding episodes as gymloop recorded them before masking."""
    engine, write = open_engine(db_url)
    Migrator(engine, write, db_url).upgrade("0003")
    records = [
        _record(0, f"hosted_vllm/m@{ENDPOINT}", f"POST {ENDPOINT}/chat/completions: connection refused"),
        _record(1, f"hosted_vllm/m@{ENDPOINT}", None),
        _record(2, "hosted_vllm/m@http://127.0.0.1:8000/v1", None),
        _record(3, "reference@v1:0123456789abcdef", None),
    ]
    with write.begin() as conn:
        conn.execute(text("INSERT INTO models (name, version, kind, details, created_at) "
                          "VALUES ('hosted_vllm/m', '0', 'litellm', '{}', '2026-01-01 00:00:00')"))
        conn.execute(text("INSERT INTO packs (id, domain, schema_version, seed, knobs, provenance, created_by, "
                          "storage_path, added_at) VALUES (:id, 'helpdesk', 1, 0, '{}', '{}', 'test', 'x', "
                          "'2026-01-01 00:00:00')"), {"id": "p" * 64})
        conn.execute(text("INSERT INTO tasks (pack_id, task_id, split, category, tags, content_hash) "
                          "VALUES (:id, 't1', 'heldout', 'c', '[]', 'h')"), {"id": "p" * 64})
        conn.execute(text("INSERT INTO campaigns (name, settings, created_at) "
                          "VALUES ('c', '{}', '2026-01-01 00:00:00')"))
        conn.execute(text('INSERT INTO rounds (campaign_id, "index", status, model_in_id, started_at, error) '
                          "VALUES (1, 0, 'failed', 1, '2026-01-01 00:00:00', :error)"),
                     {"error": f"model hosted_vllm/m at {ENDPOINT} failed"})
        columns = {c["name"] for c in inspect(conn).get_columns("episodes")}
        for record in records:
            values = {k: v for k, v in episode_row(1, "eval_before", 1, record).items() if k in columns}
            conn.execute(insert(table("episodes", *[column(k) for k in values])).values(**values))
    engine.dispose()


def test_the_upgrade_masks_endpoints_recorded_before_masking(db_url: str, home: Path) -> None:
    _old_registry(db_url)
    with Registry(db_url, home) as reg:
        assert reg.current_revision == reg.head_revision
        engine, _ = open_engine(db_url)
        with engine.connect() as conn:
            rows = conn.execute(select(column("attempt"), column("model_ref"), column("record"))
                                .select_from(table("episodes")).order_by(text("attempt"))).all()
            error = conn.execute(text("SELECT error FROM rounds")).scalar_one()
        engine.dispose()
        stored = [(row[1], decode_record(row[2], "test")) for row in rows]
        masked = "hosted_vllm/m@http://user:***@127.0.0.1:8000/v1?api-key=***"
        assert [ref for ref, _ in stored] == [masked, masked, "hosted_vllm/m@http://127.0.0.1:8000/v1",
                                              "reference@v1:0123456789abcdef"]
        assert [rec.model_ref for _, rec in stored] == [ref for ref, _ in stored]
        failure = stored[0][1].failure
        assert failure is not None and failure.message.startswith("POST http://user:***@127.0.0.1:8000/v1?api-key=***")
        assert all(rec.reply == "done" and rec.episode_id == f"e{rec.attempt}" for _, rec in stored)
        assert error == "model hosted_vllm/m at http://user:***@127.0.0.1:8000/v1?api-key=*** failed"
        everything = repr(rows) + repr([rec.model_dump_json() for _, rec in stored]) + error
        assert PASSWORD not in everything and QUERY_TOKEN not in everything
        assert [r.model_ref for r in reg.round_episodes(1, stage="eval_before")][:2] == [masked, masked]
        assert {s.model_id for s in reg.episode_summaries(1, stage="eval_before")} == {1}

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from registry import Registry, RegistryError
from registry.database import Migrator, open_engine
from registry.schema import Base


def test_empty_database_is_migrated_on_first_use(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        assert reg.current_revision == reg.head_revision == "0006"
        status = reg.status()
        assert set(status.counts) == set(Base.metadata.tables)
        assert all(n == 0 for n in status.counts.values())
        assert reg.upgrade() == ("0006", "0006")


def test_migrated_schema_matches_the_orm_models(db_url: str, home: Path) -> None:
    Registry(db_url, home).close()
    engine = create_engine(db_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == []


def test_database_at_previous_revision_is_upgraded_keeping_its_rows(db_url: str, home: Path) -> None:
    engine, write = open_engine(db_url)
    assert Migrator(engine, write, db_url).upgrade("0001") == (None, "0001")
    with write.begin() as conn:
        assert "details" not in {c["name"] for c in inspect(conn).get_columns("rounds")}
        conn.execute(text("INSERT INTO models (name, version, kind, details, created_at) "
                          "VALUES ('base', 'v0', 'reference', '{}', '2026-01-01 00:00:00')"))
        conn.execute(text("INSERT INTO campaigns (name, settings, created_at) "
                          "VALUES ('c', '{}', '2026-01-01 00:00:00')"))
        conn.execute(text('INSERT INTO rounds (campaign_id, "index", status, model_in_id, started_at) '
                          "VALUES (1, 0, 'running', 1, '2026-01-01 00:00:00')"))
    engine.dispose()

    with Registry(db_url, home) as reg:
        assert reg.current_revision == "0006"
        rnd = reg.round(1)
        assert rnd.details == {} and rnd.status == "running" and rnd.model_in_id == 1
        finished = reg.finish_round(1, None, {"heldout_pass_rate": 0.5})
        assert reg.round(1).details == {"heldout_pass_rate": 0.5} == finished.details
        assert reg.find_model("base", "v0") is not None


def test_auto_upgrade_off_refuses_an_old_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine, write = open_engine(url)
    Migrator(engine, write, url).upgrade("0001")
    engine.dispose()
    with pytest.raises(RegistryError, match="older than '0006'.*gymloop registry upgrade"):
        Registry(url, tmp_path, auto_upgrade=False)
    with Registry(url, tmp_path) as reg:
        assert reg.current_revision == "0006"


def test_database_at_a_newer_revision_is_refused_naming_url_and_revision(db_url: str, home: Path) -> None:
    Registry(db_url, home).close()
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099_future'"))
    engine.dispose()
    shown = db_url.split("@")[-1] if "@" in db_url else db_url
    with pytest.raises(RegistryError) as info:
        Registry(db_url, home)
    message = str(info.value)
    assert "'0099_future'" in message and shown in message and "upgrade gymloop" in message


def test_unreachable_postgresql_url_names_the_url_and_hides_the_password(home: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+psycopg://gymloop:s3cret-pw@127.0.0.1:{port}/nowhere"
    with pytest.raises(RegistryError) as info:
        Registry(url, home)
    message = str(info.value)
    assert "cannot reach the registry database" in message
    assert f"127.0.0.1:{port}/nowhere" in message
    assert "s3cret-pw" not in message


def test_malformed_url_and_missing_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="not a valid SQLAlchemy URL"):
        Registry("not a url", tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RegistryError, match="cannot create the folder"):
        Registry(f"sqlite:///{blocker / 'sub' / 'r.db'}", tmp_path)


def test_default_url_is_sqlite_under_gymloop_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GYMLOOP_REGISTRY_URL", raising=False)
    monkeypatch.setenv("GYMLOOP_HOME", str(tmp_path / "gh"))
    with Registry() as reg:
        assert reg.url == f"sqlite:///{tmp_path / 'gh' / 'registry.db'}"
        assert reg.packs.root == tmp_path / "gh" / "packs"
        with reg._engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    assert (tmp_path / "gh" / "registry.db").is_file()
    monkeypatch.setenv("GYMLOOP_REGISTRY_URL", f"sqlite:///{tmp_path / 'env.db'}")
    with Registry() as reg:
        assert reg.url.endswith("env.db")


def test_migrations_ship_inside_the_package() -> None:
    import registry

    versions = Path(registry.__file__).parent / "migrations" / "versions"
    assert (versions.parent / "env.py").is_file()
    assert sorted(p.name for p in versions.glob("v*.py")) == [
        "v0001_initial.py", "v0002_round_details.py", "v0003_campaign_leases.py", "v0004_masked_model_refs.py",
        "v0005_round_state.py", "v0006_campaign_baselines.py"]

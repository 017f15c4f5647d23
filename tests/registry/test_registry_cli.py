from __future__ import annotations

from pathlib import Path

import pytest
from registry_factories import make_pack
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from flows.cli_registry import app
from registry import Registry
from registry.database import Migrator, open_engine

runner = CliRunner()


def test_upgrade_then_status(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    engine, write = open_engine(url)
    migrator = Migrator(engine, write, url)
    migrator.upgrade("0001")
    head = migrator.head
    engine.dispose()

    status = runner.invoke(app, ["status", "--url", url, "--home", str(tmp_path)])
    assert status.exit_code == 1 and f"older than '{head}'" in status.output

    result = runner.invoke(app, ["upgrade", "--url", url, "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"upgraded from revision 0001 to {head}" in result.output
    again = runner.invoke(app, ["upgrade", "--url", url, "--home", str(tmp_path)])
    assert f"up to date at revision {head}" in again.output

    with Registry(url, tmp_path) as reg:
        reg.add_pack(make_pack(0))
    status = runner.invoke(app, ["status", "--url", url, "--home", str(tmp_path)])
    assert status.exit_code == 0, status.output
    assert f"revision:  {head}" in status.output and str(tmp_path / "packs") in status.output
    rows = {line.split()[1]: line.split()[-2] for line in status.output.splitlines() if line.count("│") == 3}
    assert rows["packs"] == "1" and rows["tasks"] == "5" and rows["episodes"] == "0"


def test_upgrade_uses_the_environment_and_reports_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GYMLOOP_REGISTRY_URL", f"sqlite:///{tmp_path / 'env.db'}")
    result = runner.invoke(app, ["upgrade"])
    engine, write = open_engine(f"sqlite:///{tmp_path / 'env.db'}")
    head = Migrator(engine, write, "env.db").head
    engine.dispose()
    assert result.exit_code == 0 and f"upgraded from revision (empty) to {head}" in result.output
    engine = create_engine(f"sqlite:///{tmp_path / 'env.db'}")
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0042'"))
    engine.dispose()
    result = runner.invoke(app, ["upgrade"])
    assert result.exit_code == 1 and "'0042'" in result.output and "env.db" in result.output

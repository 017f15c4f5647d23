"""No secret from the settings reaches anything gymloop writes: files, databases, Prefect, stdout, stderr."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from pydantic import SecretStr

from factory_client import LocalFactory, create_app
from factory_client.server import BackgroundServer
from tests.flows.conftest import SMALL

API_KEY = "sk-gymloop-APIKEY-7f3a91"
FACTORY_TOKEN = "factory-TOKEN-91c2de"
DB_PASSWORD = "db-PASSWORD-55aa01"
QUERY_TOKEN = "query-TOKEN-3b8e44"
SECRETS = {"api key": API_KEY, "factory token": FACTORY_TOKEN, "database password": DB_PASSWORD,
           "query token": QUERY_TOKEN}


def _registry_url(request: pytest.FixtureRequest, home: Path) -> tuple[str, str | None]:
    """A PostgreSQL registry URL whose userinfo carries a password (the server trusts loopback), else SQLite."""
    try:
        server = request.getfixturevalue("pg_server")
    except pytest.skip.Exception:
        return f"sqlite:///{home / 'registry.db'}", None
    url = server.create_database()
    return url.replace("gymloop@", f"gymloop:{DB_PASSWORD}@"), url


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", *args], env=env, cwd=cwd,
                          capture_output=True, timeout=900)


def _database_bytes(url: str | None) -> bytes:
    if url is None:
        return b""
    import psycopg

    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    chunks = []
    with psycopg.connect(conninfo) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                chunks.append(repr(row).encode())
    return b"\n".join(chunks)


def _leaks(blob: bytes, where: str) -> list[str]:
    found = []
    for name, secret in SECRETS.items():
        for form in {secret, quote(secret, safe="")}:
            if form.encode() in blob:
                found.append(f"{name} in {where}")
    return found


def test_a_round_and_a_report_write_no_secret_anywhere(request, gymloop_home, tmp_path):
    registry_url, pg_conninfo = _registry_url(request, gymloop_home)
    token = SecretStr(FACTORY_TOKEN)
    prefect_home = tmp_path / "prefect"
    with BackgroundServer(create_app(LocalFactory(), token=token)) as factory:
        env = dict(os.environ)
        for key, value in {**SMALL, "variants_per_round": 1, "tasks_per_variant": 4, "wave_budget": 120}.items():
            env[f"GYMLOOP_{key.upper()}"] = json.dumps(value)
        env.update({
            "GYMLOOP_HOME": str(gymloop_home),
            "GYMLOOP_API_KEY": API_KEY,
            "GYMLOOP_API_BASE": f"http://127.0.0.1:9/v1?api-key={QUERY_TOKEN}",
            "GYMLOOP_FACTORY_URL": factory.url,
            "GYMLOOP_FACTORY_TOKEN": FACTORY_TOKEN,
            "GYMLOOP_SERVE_TOKEN": FACTORY_TOKEN,
            "GYMLOOP_REGISTRY_URL": registry_url,
            "PREFECT_HOME": str(prefect_home),
            "PREFECT_LOGGING_LEVEL": "DEBUG",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",
        })
        env.pop("PREFECT_API_URL", None)
        env.pop("MLFLOW_TRACKING_URI", None)
        round_run = _cli(["round", "--campaign", "secrets"], env, tmp_path)
        assert round_run.returncode == 0, round_run.stderr.decode()[-3000:]
        report_run = _cli(["report", "secrets"], env, tmp_path)
        assert report_run.returncode == 0, report_run.stderr.decode()[-3000:]
        registry_run = _cli(["registry", "status", "--url", registry_url], env, tmp_path)
        assert registry_run.returncode == 0, registry_run.stderr.decode()[-3000:]

    leaks: list[str] = []
    for run, name in ((round_run, "round"), (report_run, "report"), (registry_run, "registry status")):
        leaks += _leaks(run.stdout, f"{name} stdout") + _leaks(run.stderr, f"{name} stderr")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "mlflow.db" for p in written)
    assert any(p.suffix == ".db" and p.parent == prefect_home for p in written)
    for path in written:
        leaks += _leaks(path.read_bytes(), str(path.relative_to(tmp_path)))
    leaks += _leaks(_database_bytes(pg_conninfo), "the registry database")
    assert not leaks, leaks
    stored = _database_bytes(pg_conninfo) + b"".join(p.read_bytes() for p in written if p.name == "mlflow.db")
    assert b"factory_token_set" in stored
    assert b"api-key=***" in stored
    if pg_conninfo is not None:
        assert b"gymloop:***@127.0.0.1" in stored

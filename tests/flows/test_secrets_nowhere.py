"""No secret from the settings reaches anything gymloop writes or prints, on its everyday paths and its failures.

Every secret form is set: an API key, passwords in ``api_base``, ``registry_url``, ``mlflow_uri`` and
``factory_url``, a token-like query value, the factory's token and the serve tokens. Real servers check them:
the scripted model server checks the ``Authorization`` header, PostgreSQL a SCRAM password, MLflow's basic-auth
app its admin's password, ``gymloop factory serve`` its token (reached through a URL whose userinfo holds it).
Every command runs as a subprocess: ``eval`` (with the password, with the key), a round against all of them,
``report``, ``campaigns``, ``episode``, ``registry status``, and the failure paths (bad settings, unreachable
endpoints, refused requests). Then every file written (the gymloop home, Prefect's home, MLflow's store and
artifacts, the factory's home, the working folder; archives and compressed records opened), every row of every
registry table (episode records decompressed) and every stdout and stderr is searched for each secret.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from arena.agents.scripted_server import ReplyCue, ScriptedModelServer, ToolCallCue
from tests.flows.conftest import free_port
from tests.pg_server import PgServer, pg_server_fixture

API_KEY = "sk-gymloop-APIKEY-7f3a91"
API_PASSWORD = "api-PASSWORD-c41d07"
QUERY_TOKEN = "query-TOKEN-3b8e44"
DB_PASSWORD = "db-PASSWORD-55aa01"
MLFLOW_PASSWORD = "mlflow-PASSWORD-0e6b2c"
FACTORY_TOKEN = "factory-TOKEN-91c2de"
SERVE_TOKEN = "serve-TOKEN-6d0f13"
OPERATOR_TOKEN = "operator-TOKEN-a8e3b5"
WRONG_PASSWORD = "wrong-PASSWORD-17c9f2"
SECRETS = {"api key": API_KEY, "api_base password": API_PASSWORD, "api_base query token": QUERY_TOKEN,
           "registry password": DB_PASSWORD, "mlflow password": MLFLOW_PASSWORD, "factory token": FACTORY_TOKEN,
           "serve token": SERVE_TOKEN, "operator token": OPERATOR_TOKEN, "a refused password": WRONG_PASSWORD}
ROUND = {"domains": ["procurement"], "variants_per_round": 1, "tasks_per_variant": 4, "wave_budget": 24,
         "train_k": 2, "eval_k": 1, "batch_size": 40, "max_concurrency": 8, "model_timeout_s": 10,
         "trainer": "export"}
"""A small LLM round: one gym, one variant, a small wave, one attempt per held-out task."""


@pytest.fixture()
def pg_with_password() -> Iterator[PgServer]:
    """A PostgreSQL server whose TCP clients must give ``DB_PASSWORD``."""
    yield from pg_server_fixture(DB_PASSWORD)


def _model(messages: list[dict[str, object]]) -> ToolCallCue | ReplyCue:
    """Looks a vendor up, then replies."""
    if messages and messages[-1].get("role") == "tool":
        return ReplyCue("I checked the vendor record and handled the request.")
    return ToolCallCue("get_vendor", json.dumps({"vendor_id": "V-001"}))


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _at(url: str, user: str, password: str) -> str:
    """``url`` with ``user:password@`` as its userinfo."""
    return url.replace("://", f"://{user}:{password}@", 1)


@dataclass
class Run:
    """One CLI command and what it printed."""

    name: str
    returncode: int
    stdout: bytes
    stderr: bytes

    def lines(self) -> list[str]:
        """The non-empty lines of stdout and stderr."""
        text = (self.stdout + b"\n" + self.stderr).decode("utf-8", "replace")
        return [line for line in text.splitlines() if line.strip()]


def _cli(name: str, args: list[str], env: dict[str, str], cwd: Path) -> Run:
    done = subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", *args], env=env, cwd=cwd,
                          capture_output=True, timeout=900)
    return Run(name, done.returncode, done.stdout, done.stderr)


def _start(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(args, env=env, cwd=cwd, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _wait_for(url: str, proc: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url, timeout=5).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"{what} did not start; log:\n{log.read_text(errors='replace')[-3000:]}")


def _mlflow_server(root: Path, port: int) -> subprocess.Popen[bytes]:
    """MLflow's basic-auth app: every API request needs the admin's user and password.

    A password it accepted once is remembered (``auth_cache_ttl_seconds``), so each later request skips its
    deliberately slow hash; a wrong one is hashed and refused every time. No job runner: gymloop starts none.
    """
    root.mkdir(parents=True)
    (root / "auth.ini").write_text(
        "[mlflow]\ndefault_permission = NO_PERMISSIONS\n"
        f"database_uri = sqlite:///{root / 'auth.db'}\nadmin_username = gymloop\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        "auth_cache_ttl_seconds = 3600\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GYMLOOP_"))}
    env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
                "MLFLOW_AUTH_CONFIG_PATH": str(root / "auth.ini"), "MLFLOW_AUTH_ADMIN_PASSWORD": MLFLOW_PASSWORD,
                "MLFLOW_FLASK_SERVER_SECRET_KEY": "the-test-servers-own-csrf-key",
                "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    return _start([sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--host", "127.0.0.1",
                   "--port", str(port), "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
                   "--artifacts-destination", str(root / "artifacts")], env, root, root / "server.log")


def _views(blob: bytes) -> Iterator[bytes]:
    """``blob`` and what it holds compressed: gzip (pack archives), zlib (episode records), zip members."""
    yield blob
    opened: bytes | None = None
    if blob[:2] == b"\x1f\x8b":
        try:
            opened = gzip.decompress(blob)
        except (OSError, EOFError):
            opened = None
    elif blob[:1] == b"x":
        try:
            opened = zlib.decompress(blob)
        except zlib.error:
            opened = None
    elif blob[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                opened = b"\n".join(archive.read(n) for n in archive.namelist())
        except zipfile.BadZipFile:
            opened = None
    if opened is not None:
        yield from _views(opened)


def _leaks(blob: bytes, where: str) -> list[str]:
    found = []
    for view in _views(blob):
        for name, secret in SECRETS.items():
            forms = {secret, quote(secret, safe=""), base64.b64encode(secret.encode()).decode()}
            if any(form.encode() in view for form in forms):
                found.append(f"{name} in {where}")
    return sorted(set(found))


def _first_episode(conninfo: str) -> str:
    import psycopg

    with psycopg.connect(conninfo, password=DB_PASSWORD) as conn:
        row = conn.execute("SELECT episode_id FROM episodes ORDER BY id LIMIT 1").fetchone()
    assert row is not None, "the round recorded no episode"
    return str(row[0])


def _registry_rows(conninfo: str) -> list[tuple[str, bytes]]:
    """Every cell of every table of the registry database, as (table, bytes)."""
    import psycopg

    cells = []
    with psycopg.connect(conninfo, password=DB_PASSWORD) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    cells.append((table, bytes(value) if isinstance(value, (bytes, memoryview)) else
                                  repr(value).encode()))
    return cells


@pytest.mark.postgres
@pytest.mark.timeout(1800)
def test_every_secret_stays_out_of_every_file_row_and_output(pg_with_password: PgServer, tmp_path: Path) -> None:
    registry_url = pg_with_password.create_database()
    assert f"gymloop:{DB_PASSWORD}@" in registry_url
    conninfo = registry_url.replace("postgresql+psycopg://", "postgresql://").replace(f":{DB_PASSWORD}@", "@")
    work, home, prefect_home = tmp_path / "work", tmp_path / "home", tmp_path / "prefect"
    work.mkdir()
    mlflow_port, factory_port, closed_port = free_port(), free_port(), free_port()
    mlflow = _mlflow_server(tmp_path / "mlflow-server", mlflow_port)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GYMLOOP_", "MLFLOW_", "PREFECT_API_URL", "OPENAI_", "HOSTED_VLLM_"))}
    factory_env = {**base, "GYMLOOP_HOME": str(tmp_path / "factory-home"), "GYMLOOP_SERVE_TOKEN": FACTORY_TOKEN}
    factory = _start([sys.executable, "-c", "from flows.cli import app; app()", "factory", "serve", "--port",
                      str(factory_port)], factory_env, tmp_path / "factory-work", tmp_path / "factory.log")
    password_server = ScriptedModelServer(_model, authorization=_basic("gymloop", API_PASSWORD)).start()
    key_server = ScriptedModelServer(_model, authorization=f"Bearer {API_KEY}").start()
    runs: list[Run] = []
    try:
        api_base = _at(password_server.base_url, "gymloop", API_PASSWORD) + f"/v1?api-key={QUERY_TOKEN}"
        mlflow_uri = _at(f"http://127.0.0.1:{mlflow_port}", "gymloop", MLFLOW_PASSWORD)
        factory_url = _at(f"http://127.0.0.1:{factory_port}", "gymloop", FACTORY_TOKEN)
        env = {**base, "GYMLOOP_HOME": str(home), "PREFECT_HOME": str(prefect_home), "PREFECT_LOGGING_LEVEL": "DEBUG",
               "GYMLOOP_MODEL": "hosted_vllm/scripted", "GYMLOOP_API_BASE": api_base,
               "GYMLOOP_REGISTRY_URL": registry_url, "GYMLOOP_MLFLOW_URI": mlflow_uri,
               "GYMLOOP_FACTORY_URL": factory_url, "GYMLOOP_FACTORY_TOKEN": FACTORY_TOKEN,
               "GYMLOOP_SERVE_TOKEN": SERVE_TOKEN, "GYMLOOP_SERVE_OPERATOR_TOKEN": OPERATOR_TOKEN,
               **{f"GYMLOOP_{k.upper()}": json.dumps(v) if not isinstance(v, str) else v for k, v in ROUND.items()}}
        key_env = {**env, "GYMLOOP_API_KEY": API_KEY,
                   "GYMLOOP_API_BASE": key_server.base_url + f"/v1?api-key={QUERY_TOKEN}"}
        eval_args = ["eval", "--domain", "procurement", "--k", "1"]

        # everyday paths (both evaluations run while MLflow and the factory start)
        with ThreadPoolExecutor(2) as pool:
            evals = [pool.submit(_cli, "eval with a password", [*eval_args, "--json"], env, work),
                     pool.submit(_cli, "eval with a key", [*eval_args, "--out", "key.jsonl"], key_env, work)]
            runs += [f.result() for f in evals]
        for run in runs:
            assert run.returncode == 0, (run.name, run.stderr.decode()[-3000:])
        assert password_server.requests and password_server.refused == 0
        assert key_server.requests and key_server.refused == 0
        _wait_for(f"http://127.0.0.1:{mlflow_port}/health", mlflow, tmp_path / "mlflow-server" / "server.log",
                  "the MLflow server")
        _wait_for(f"http://127.0.0.1:{factory_port}/v1/info", factory, tmp_path / "factory.log", "the factory")
        search = httpx.get(f"{mlflow_uri}/api/2.0/mlflow/experiments/search?max_results=1", timeout=300)
        assert search.status_code == 200, search.text  # the admin's password opens the API (and warms it up)
        served_before = len(password_server.requests)
        round_run = _cli("round", ["round", "--campaign", "secrets"], env, work)
        runs.append(round_run)
        assert round_run.returncode == 0, round_run.stderr.decode()[-3000:]
        assert len(password_server.requests) > served_before and password_server.refused == 0
        episode_id = _first_episode(conninfo)
        for name, args in (("report", ["report", "secrets"]), ("campaigns", ["campaigns"]),
                           ("campaigns --json", ["campaigns", "--json"]), ("episode", ["episode", episode_id[:10]]),
                           ("registry status", ["registry", "status"])):
            runs.append(_cli(name, args, env, work))
            assert runs[-1].returncode == 0, (name, runs[-1].stderr.decode()[-3000:])

        # failure paths: each stops with its reason on one line (exit code 1 or 2), naming no secret
        closed = f"http://127.0.0.1:{closed_port}"
        without_token = {k: v for k, v in env.items() if k != "GYMLOOP_FACTORY_TOKEN"}
        failures = [
            ("key beside a password", eval_args, {**env, "GYMLOOP_API_KEY": API_KEY}, 2, "setting 'api_key'"),
            ("factory password not its token", ["round", "--campaign", "refused"],
             {**env, "GYMLOOP_FACTORY_URL": _at(f"http://127.0.0.1:{factory_port}", "gymloop", WRONG_PASSWORD)}, 2,
             "setting 'factory_token'"),
            ("model endpoint with a bad port", eval_args,
             {**env, "GYMLOOP_API_BASE": _at("http://127.0.0.1:99999", "gymloop", API_PASSWORD) + "/v1"}, 2,
             "preflight failed"),
            ("unreachable model", eval_args, {**env, "GYMLOOP_API_BASE": _at(closed, "gymloop", API_PASSWORD)}, 2,
             "endpoint unreachable"),
            ("refused model password", eval_args,
             {**env, "GYMLOOP_API_BASE": _at(password_server.base_url, "gymloop", WRONG_PASSWORD) + "/v1"}, 2,
             "preflight failed"),
            ("refused model key", eval_args, {**key_env, "GYMLOOP_API_KEY": WRONG_PASSWORD}, 2, "preflight failed"),
            ("unreachable MLflow", ["round", "--campaign", "refused"],
             {**env, "GYMLOOP_MLFLOW_URI": _at(closed, "gymloop", MLFLOW_PASSWORD)}, 2, "is unreachable"),
            ("refused MLflow password", ["round", "--campaign", "refused"],
             {**env, "GYMLOOP_MLFLOW_URI": _at(f"http://127.0.0.1:{mlflow_port}", "gymloop", WRONG_PASSWORD)}, 2,
             "answered HTTP 401"),
            ("unreachable registry", ["campaigns"],
             {**env, "GYMLOOP_REGISTRY_URL": registry_url.replace(str(pg_with_password.port), str(closed_port))}, 1,
             "cannot reach the registry database"),
            ("refused registry password", ["campaigns"],
             {**env, "GYMLOOP_REGISTRY_URL": registry_url.replace(DB_PASSWORD, WRONG_PASSWORD)}, 1,
             "cannot reach the registry database"),
            ("unreachable factory", ["factory", "request", "procurement", "--variants", "1", "--tasks", "1"],
             {**env, "GYMLOOP_FACTORY_URL": _at(closed, "gymloop", FACTORY_TOKEN)}, 1, "factory request failed"),
            ("refused factory token", ["factory", "request", "procurement", "--variants", "1", "--tasks", "1"],
             {**without_token, "GYMLOOP_FACTORY_URL": _at(f"http://127.0.0.1:{factory_port}", "gymloop",
                                                          WRONG_PASSWORD)}, 1, "answered 401"),
        ]
        with ThreadPoolExecutor(2) as pool:
            failed = list(pool.map(lambda f: (_cli(f[0], f[1], f[2], work), f[3], f[4]), failures))
        for run, code, reason in failed:
            runs.append(run)
            assert run.returncode == code, (run.name, run.returncode, run.lines()[-5:])
            assert any(reason in line for line in run.lines()), (run.name, run.lines()[-5:])
    finally:
        password_server.stop()
        key_server.stop()
        _stop(factory)
        _stop(mlflow)

    leaks: list[str] = []
    for run in runs:
        leaks += _leaks(run.stdout, f"{run.name} stdout") + _leaks(run.stderr, f"{run.name} stderr")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    for path in written:
        leaks += _leaks(path.read_bytes(), str(path.relative_to(tmp_path)))
    rows = _registry_rows(conninfo)
    for table, cell in rows:
        leaks += _leaks(cell, f"registry table {table}")
    assert not leaks, leaks

    # the stores hold what was recorded, with the endpoints masked
    names = {p.relative_to(tmp_path).parts[0] for p in written}
    assert {"home", "prefect", "mlflow-server", "work"} <= names, names
    assert any(p.suffix == ".db" and p.parent == prefect_home for p in written)
    assert list((tmp_path / "mlflow-server" / "artifacts").rglob("report.md")), "no artifact reached MLflow's store"
    masked_ref = "hosted_vllm/scripted@http://gymloop:***@127.0.0.1:"
    stored = b"".join(cell for _, cell in rows)
    assert masked_ref.encode() in b"".join(b"".join(_views(cell)) for table, cell in rows if table == "episodes")
    assert b"gymloop:***@127.0.0.1" in stored and b"factory_token_set" in stored
    assert (tmp_path / "mlflow-server" / "mlflow.db").read_bytes().count(b"gymloop:***@127.0.0.1") > 0
    assert masked_ref in (work / "episodes.jsonl").read_text() and "api-key=***" in (work / "key.jsonl").read_text()

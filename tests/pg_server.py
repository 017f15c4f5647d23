"""A throwaway PostgreSQL server on 127.0.0.1 for tests, started from the system's binaries."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_counter = itertools.count()


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PgServer:
    """A PostgreSQL cluster in a temporary folder, run as a non-root user when the tests run as root."""

    def __init__(self, password: str | None = None) -> None:
        self.password = password
        self.initdb = _pg_bin("initdb")
        self.pg_ctl = _pg_bin("pg_ctl")
        if self.initdb is None or self.pg_ctl is None:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
        self.prefix: list[str] = []
        self.root = Path(tempfile.mkdtemp(prefix="gymloop-pg-"))
        self.data = self.root / "data"
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise RuntimeError("running as root and there is no 'postgres' system user to run the server") from exc
            runuser = shutil.which("runuser")
            if runuser is None:
                raise RuntimeError("running as root and 'runuser' is not available to drop privileges")
            self.prefix = [runuser, "-u", "postgres", "--"]
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self.port = _free_port()

    def _run(self, *args: str) -> None:
        proc = subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=120, cwd=self.root)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {(proc.stderr or proc.stdout).strip()[-600:]}")

    def start(self) -> None:
        assert self.initdb is not None and self.pg_ctl is not None
        if self.password is None:
            auth = ["-A", "trust"]
        else:  # TCP clients must give the password (SCRAM); pg_ctl's own checks use the socket
            (self.root / "pwfile").write_text(self.password + "\n")
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={self.root / 'pwfile'}"]
        self._run(self.initdb, "-D", str(self.data), *auth, "-U", "gymloop", "--no-sync", "-E", "UTF8")
        (self.root / "pwfile").unlink(missing_ok=True)
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c full_page_writes=off"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w",
                  "-t", "60", "start")

    def stop(self) -> None:
        if self.pg_ctl is not None and (self.data / "postmaster.pid").exists():
            subprocess.run([*self.prefix, self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"],
                           capture_output=True, timeout=60, cwd=self.root)
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        user = "gymloop" if self.password is None else f"gymloop:{self.password}"
        return f"postgresql+psycopg://{user}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        import psycopg

        name = f"gymloop_test_{next(_counter)}"
        conninfo = f"host=127.0.0.1 port={self.port} user=gymloop dbname=postgres"
        with psycopg.connect(conninfo, password=self.password, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def pg_server_fixture(password: str | None = None) -> Iterator[PgServer]:
    """Start a PostgreSQL server on a free loopback port, or skip with the reason.

    Args:
        password: The password TCP clients must give (in the URL ``url`` returns); ``None`` trusts every client.
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL tests skipped: psycopg is not installed")
    try:
        server = PgServer(password)
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    try:
        server.start()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        server.stop()
        pytest.skip(f"PostgreSQL tests skipped: the server could not start: {exc}")
    yield server
    server.stop()

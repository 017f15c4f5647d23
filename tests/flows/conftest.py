import os
import signal
import socket
import subprocess
import sys
import time

import pytest


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test harness (a temporary API server) for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    timeout = int(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"))
    with prefect_test_harness(server_startup_timeout=timeout):
        yield


@pytest.fixture()
def gymloop_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("GYMLOOP_HOME", str(home))
    for key in list(os.environ):
        if key.startswith("GYMLOOP_") and key != "GYMLOOP_HOME":
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return home


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SMALL = {"domains": ["procurement"], "variants_per_round": 1, "tasks_per_variant": 6, "wave_budget": 240,
         "eval_k": 2, "batch_size": 40}
"""Settings of a small round: one gym, a small wave, two attempts per held-out task."""


class PrefectServer:
    """A real ``prefect server start`` on a loopback port, in a throwaway PREFECT_HOME."""

    def __init__(self, root):
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.log = root / "prefect-server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update({"PREFECT_HOME": str(root / "prefect-server"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                    "PREFECT_LOGGING_LEVEL": "WARNING",
                    # a run held by a deployment's concurrency limit asks again after 2 s, not 30 s
                    "PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS": "2"})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout_s: float = 400.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(f"{self.api}/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"prefect server did not start: {self.log.read_text()[-3000:]}")

    def flow_runs(self) -> list:
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.api}), get_client(sync_client=True) as client:
            return client.read_flow_runs()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real Prefect server for the session's ``gymloop`` subprocesses (they start no temporary server)."""
    server = PrefectServer(tmp_path_factory.mktemp("prefect-server"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()

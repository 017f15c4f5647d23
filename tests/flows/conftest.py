import os
import socket

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

"""Prefect's temporary API server for one command, tied to it: killed with it, even by SIGKILL.

Without ``PREFECT_API_URL``, Prefect starts a temporary API server in a subprocess the first time a flow runs
and stops it from an exit handler; a process killed outright never runs that handler, and the server (about
250 MB) outlives it. ``temporary_api`` starts the same server itself for ``gymloop round | campaign | demo``,
asking Linux to kill it when the command's process ends (``PR_SET_PDEATHSIG``), and points Prefect at it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_PR_SET_PDEATHSIG = 1

DRAIN_TIMEOUT_S = 10.0
"""How long a command waits at its end for Prefect's queued logs and events to reach the temporary server."""


def _die_with(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when ``parent`` ends (and ends at once if it already has)."""

    def arrange() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return arrange


def _tied_server_class() -> Any:
    # prefect is heavy: loaded when a server starts; gymloop eval imports this module through its run guard.
    import prefect
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    class TiedServer(SubprocessASGIServer):
        """Prefect's temporary API server, started as Prefect starts it, but killed when its parent process ends."""

        def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
            env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                   "PREFECT__SERVER_FINAL": "1", **get_current_settings().to_environment_variables(exclude_unset=True)}
            args = [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
                    "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
                    "--log-level", "error", "--lifespan", "on"]
            linux = sys.platform.startswith("linux")
            return subprocess.Popen(args, env=env, preexec_fn=_die_with(os.getpid()) if linux else None)

    return TiedServer


@contextmanager
def temporary_api() -> Iterator[str | None]:
    """Run the block against a temporary Prefect API server that dies with this process; yield its URL.

    Nothing is started when a Prefect API is configured (``PREFECT_API_URL``, or a test harness): ``None``.

    Raises:
        RuntimeError: The server did not answer within ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``.
    """
    # prefect is heavy: loaded when a server starts; gymloop eval imports this module through its run guard.
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    if get_current_settings().api.url:
        yield None
        return
    with socket.socket() as probe:  # a port of its own: Prefect keeps one server per port
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = _tied_server_class()(port=port)
    server.start()
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = server.api_url  # worker processes (Dask, Ray) report to it too
    try:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            yield str(server.api_url)
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous
        _send_what_is_queued()
        server.stop()


def _send_what_is_queued() -> None:
    """Send the logs and events Prefect still queues to the server before it stops (else they fail at exit)."""
    # prefect is heavy: loaded when a server starts; gymloop eval imports this module through its run guard.
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=DRAIN_TIMEOUT_S)
    EventsWorker.drain_all(timeout=DRAIN_TIMEOUT_S)

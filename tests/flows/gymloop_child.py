"""``gymloop`` commands run as users run them: a subprocess, settings in GYMLOOP_* variables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

GYMLOOP = [sys.executable, "-c", "from flows.cli import app; app()"]


def child_env(home: Path, settings: dict[str, Any], *, prefect_api: str | None, prefect_home: Path) -> dict[str, str]:
    """The environment of a ``gymloop`` subprocess: this one's, minus gymloop's and Prefect's API, plus ``settings``.

    Args:
        home: The gymloop home.
        settings: Settings, as GYMLOOP_* variables (lists as JSON).
        prefect_api: A Prefect server's API URL (``None``: the command starts its temporary server).
        prefect_home: PREFECT_HOME of the subprocess.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GYMLOOP_", "PREFECT_API_URL", "OPENAI_"))}
    env.update({"GYMLOOP_HOME": str(home), "PREFECT_HOME": str(prefect_home), "PREFECT_LOGGING_LEVEL": "WARNING",
                "COLUMNS": "300"})
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "600")
    if prefect_api:
        env["PREFECT_API_URL"] = prefect_api
    for key, value in settings.items():
        env[f"GYMLOOP_{key.upper()}"] = json.dumps(value) if isinstance(value, list) else str(value)
    return env


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``gymloop <args>`` in its own process group, its stdout and stderr into ``log``."""
    return subprocess.Popen([*GYMLOOP, *args], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def run(args: list[str], env: dict[str, str], timeout_s: float = 600.0) -> subprocess.CompletedProcess[str]:
    """Run ``gymloop <args>`` to its end."""
    return subprocess.run([*GYMLOOP, *args], env=env, capture_output=True, text=True, timeout=timeout_s)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a child's whole process group and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

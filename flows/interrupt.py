"""Ctrl-C and SIGTERM for ``gymloop round`` and ``campaign``: stop within seconds and say how to resume.

On the first SIGINT or SIGTERM, rollouts stop starting episodes and abandon those in flight, the
episodes already finished are committed, the campaign's running round is marked ``interrupted`` in the
registry, the command that resumes it is printed, the exit handlers run (stopping Prefect's temporary
API server; child processes still running after them are killed) and the process exits (130 for SIGINT,
143 for SIGTERM) without waiting for threads stuck on a model call. The signal is seen through a wakeup
file descriptor read by a watcher thread, so it acts even while Prefect's own SIGTERM handler is installed
or the main thread waits on a stuck model call.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

STOP = threading.Event()
"""Set when the process was asked to stop; the rollout engine checks it between and during episodes."""

GRACE_S = 3.0
"""Seconds the running batches get to commit their finished episodes before the process exits."""

EXIT_HANDLERS_S = 4.0
"""Seconds the exit handlers get before the process ends anyway."""

_ACTIVE = 0
_ACTIVE_LOCK = threading.Lock()


@contextmanager
def batch_running() -> Iterator[threading.Event]:
    """Mark a rollout batch as running (the watcher waits for it to commit) and give it the stop event."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        _ACTIVE += 1
    try:
        yield STOP
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE -= 1


def _batches_running() -> int:
    with _ACTIVE_LOCK:
        return _ACTIVE


def _exit_now(code: int) -> None:
    """Run the exit handlers (they stop Prefect's temporary API server), then end the process at once.

    Threads blocked on a model call or a training command are not waited for.
    """
    cleanup = threading.Thread(target=atexit._run_exitfuncs, name="gymloop-exit", daemon=True)
    cleanup.start()
    cleanup.join(EXIT_HANDLERS_S)
    _kill_children()
    sys.stderr.flush()
    os._exit(code)


def _kill_children() -> None:
    """End the processes this one started that are still running (read from /proc where there is one).

    Prefect's temporary API server is asked to stop by an exit handler, but its graceful stop can outlast
    ``EXIT_HANDLERS_S`` on a busy machine; without this it would outlive the command that started it.
    """
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == me:
                os.kill(int(stat.parent.name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):  # the process ended meanwhile
            continue


def _note_signal(signum: int, frame: FrameType | None) -> None:
    """Python-level handler: the watcher thread does the work; the main thread just keeps going."""
    STOP.set()


@contextmanager
def stop_on_signals(on_stop: Callable[[str], str], *, exit_process: bool = True) -> Iterator[None]:
    """Within this block, SIGINT/SIGTERM stop the run: ``on_stop(signal name)`` marks it and returns a message.

    Args:
        on_stop: Marks the interrupted work (e.g. the round in the registry) and returns the line to print.
        exit_process: Exit with 128 + the signal number once done (the CLI); tests of the marking pass False.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    STOP.clear()
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = {sig: signal.signal(sig, _note_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    done = threading.Event()

    def watch() -> None:
        try:
            data = reader.recv(1)
        except OSError:
            return
        if not data or done.is_set():
            return
        signum = data[0]
        STOP.set()
        deadline = time.monotonic() + GRACE_S
        while _batches_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        name = signal.Signals(signum).name
        try:
            message = on_stop(name)
        except Exception as exc:  # the process is stopping; say what could not be recorded
            message = f"stopped by {name}; the round could not be marked interrupted: {exc}"
        print(message, file=sys.stderr, flush=True)
        if exit_process:
            from flows.cli_output import report_stop

            report_stop(message, 128 + signum)
            _exit_now(128 + signum)

    watcher = threading.Thread(target=watch, name="gymloop-signals", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        writer.close()
        reader.close()

"""Ctrl-C and SIGTERM for ``gymloop round`` and ``campaign``: stop within seconds and say how to resume.

On the first SIGINT or SIGTERM, rollouts stop starting episodes and abandon those in flight, the
episodes already finished are committed, the campaign's running round is marked ``interrupted`` in the
registry, its lease is released (the printed resume command runs at once), the flow runs of this process are
marked Cancelled in Prefect, the command that resumes it is printed, the exit handlers run (stopping Prefect's
temporary API server; child processes still running after them are killed) and the process exits (130 for
SIGINT, 143 for SIGTERM) without waiting for threads stuck on a model call. The signal is seen through a wakeup
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

CANCEL_S = 5.0
"""Seconds marking this process's Prefect runs Cancelled may take before the process ends anyway."""

_EXIT_ON_STOP = threading.Event()
"""Set while a command that exits on a stop signal runs (``stop_on_signals`` with ``exit_process``)."""

_ACTIVE = 0
_ACTIVE_LOCK = threading.Lock()
_RUNS: dict[str, str] = {}
"""Flow runs of this process still running: id -> the Prefect API URL they report to."""
_RUNS_LOCK = threading.Lock()


@contextmanager
def flow_run_tracked() -> Iterator[None]:
    """Within a flow's body: remember its flow run, so a signal can mark it Cancelled (forgotten when it ends)."""
    # prefect is heavy: gymloop eval stops on signals through this module without any flow.
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    run_id = str(context.flow_run.id) if context is not None and context.flow_run is not None else None
    if run_id is None or context is None:
        yield
        return
    with _RUNS_LOCK:
        _RUNS[run_id] = str(context.client.api_url)
    try:
        yield
    except BaseException as exc:
        if not _stopping(exc):
            _forget(run_id)
        hold_if_stopping(exc)
        raise
    _forget(run_id)


def _stopping(exc: BaseException | None) -> bool:
    # prefect is heavy: gymloop eval stops on signals through this module without any flow.
    from prefect.exceptions import TerminationSignal

    return STOP.is_set() or isinstance(exc, TerminationSignal)


def hold_if_stopping(exc: BaseException | None = None) -> None:
    """In a command being stopped by a signal, wait here for the signal's watcher to end the process.

    The main thread then reports nothing more to Prefect (no Failed or Crashed after the watcher's Cancelled)
    and starts no further work. Elsewhere (a served deployment, a test) this returns at once.
    """
    if _EXIT_ON_STOP.is_set() and _stopping(exc):
        time.sleep(GRACE_S + CANCEL_S + EXIT_HANDLERS_S + 30.0)


def tracked_runs() -> list[str]:
    """The flow runs of this process still running (a round's, its driver's), as ids."""
    with _RUNS_LOCK:
        return list(_RUNS)


def _forget(run_id: str) -> None:
    with _RUNS_LOCK:
        _RUNS.pop(run_id, None)


def cancel_flow_runs(reason: str) -> list[str]:
    """Mark this process's running flow runs (and their unfinished task runs) Cancelled; return the runs' ids.

    Bounded by ``CANCEL_S``: a Prefect API that does not answer leaves them as they are.
    """
    with _RUNS_LOCK:
        runs = dict(_RUNS)
    if not runs:
        return []
    done: list[str] = []
    worker = threading.Thread(target=_cancel, args=(runs, reason, done), name="gymloop-cancel", daemon=True)
    worker.start()
    worker.join(CANCEL_S)
    return list(done)


def _cancel(runs: dict[str, str], reason: str, done: list[str]) -> None:
    # prefect is heavy: gymloop eval stops on signals through this module without any flow.
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Cancelled

    by_api: dict[str, list[str]] = {}
    for run_id, api in runs.items():
        by_api.setdefault(api, []).append(run_id)
    for api, ids in by_api.items():
        with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            unfinished = TaskRunFilter(state=TaskRunFilterState(type=TaskRunFilterStateType(
                any_=[StateType.RUNNING, StateType.PENDING, StateType.SCHEDULED])))
            tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(ids))),
                                          task_run_filter=unfinished)
            for task_run in tasks:
                client.set_task_run_state(task_run.id, Cancelled(message=reason), force=True)
            for run_id in ids:
                client.set_flow_run_state(run_id, Cancelled(message=reason), force=True)
                done.append(run_id)


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


def _pending(reader: socket.socket) -> bool:
    """Whether a signal's wakeup byte waits unread (the watcher has not been scheduled yet)."""
    try:
        return bool(reader.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except (BlockingIOError, OSError):
        return False


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
    done, handling = threading.Event(), threading.Event()

    def watch() -> None:
        try:
            data = reader.recv(1)
        except OSError:
            return
        if not data or done.is_set():
            return
        handling.set()
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
            # The command line's console (rich) loads only when a signal ends the process.
            from flows.cli_output import report_stop

            report_stop(message, 128 + signum)
            _exit_now(128 + signum)

    watcher = threading.Thread(target=watch, name="gymloop-signals", daemon=True)
    watcher.start()
    if exit_process:
        _EXIT_ON_STOP.set()
    try:
        yield
    finally:
        _EXIT_ON_STOP.clear()
        if handling.is_set() or _pending(reader):
            # The signal unwound the main thread first (Prefect raises on SIGTERM): the watcher finishes the stop.
            watcher.join(GRACE_S + CANCEL_S + EXIT_HANDLERS_S + 10.0)
        done.set()
        signal.set_wakeup_fd(previous_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        writer.close()
        reader.close()

"""One process advances a campaign at a time: a lease in the registry, renewed while the process works.

A second ``gymloop round`` (or a scheduled run) on the same campaign waits for the lease up to the
``lease_wait_s`` setting, then stops with a message naming the holder. A holder found dead is taken over at
once, with a line saying so: on this host, when its process is gone; anywhere, when it stopped renewing the
lease for ``lease_ttl_s`` seconds. A process stopped by Ctrl-C or SIGTERM releases its leases before it exits.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from registry import LeaseInfo, Registry, RegistryError


def _started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (``""`` where /proc cannot say)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


HOLDER = f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}:{uuid.uuid4().hex[:8]}"
"""This process's name as a lease holder: host, process id, its start time and a random part."""

_POLL_S = 1.0


@dataclass
class _Held:
    registry: Registry
    campaign: str
    depth: int
    stop: threading.Event


_held: dict[tuple[str, str], _Held] = {}
_lock = threading.Lock()


class CampaignBusy(RuntimeError):
    """Another process holds the campaign's lease."""

    def __init__(self, lease: LeaseInfo, waited_s: float) -> None:
        super().__init__(
            f"campaign {lease.campaign!r} is being advanced by another process ({lease.holder}, since "
            f"{lease.acquired_at:%Y-%m-%d %H:%M:%S} UTC); waited {waited_s:.0f} s (setting lease_wait_s). "
            "Run the command again once it has finished."
        )
        self.lease = lease


def holder_gone(holder: str) -> str | None:
    """Why a lease holder on this host is known to be dead (``None``: alive, or on another host).

    Args:
        holder: A holder name (``host:pid:start:token``; older releases wrote ``host:pid:token``).
    """
    parts = holder.split(":")
    if len(parts) < 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"process {pid} on {parts[0]} is gone"
    except PermissionError:
        return None
    started = parts[2] if len(parts) == 4 else ""
    if started and _started(pid) not in ("", started):
        return f"process {pid} on {parts[0]} is gone (its id now names another process)"
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _take(registry: Registry, campaign: str, ttl_s: float, wait_s: float, say: Callable[[str], None]) -> None:
    started = time.monotonic()
    while True:
        lease = registry.acquire_lease(campaign, HOLDER, ttl_s)
        if lease.held and lease.previous:
            say(f"campaign {campaign!r}: took over the lease of {lease.previous}, which stopped renewing it "
                f"(more than lease_ttl_s = {ttl_s:g} s ago)")
        if not lease.held:
            gone = holder_gone(lease.holder)
            if gone is not None:
                lease = registry.take_over_lease(campaign, lease.holder, HOLDER, ttl_s)
                if lease.held:
                    say(f"campaign {campaign!r}: took over the lease of {lease.previous or 'a dead holder'} ({gone})")
        if lease.held:
            return
        waited = time.monotonic() - started
        if waited >= wait_s:
            raise CampaignBusy(lease, waited)
        time.sleep(min(_POLL_S, wait_s - waited))


def _renew(held: _Held, ttl_s: float) -> None:
    while not held.stop.wait(ttl_s / 3):
        try:
            held.registry.acquire_lease(held.campaign, HOLDER, ttl_s)
        except RegistryError as exc:  # a database hiccup: the next beat tries again
            _stderr(f"campaign {held.campaign!r}: renewing the lease failed ({exc}); trying again")


@contextmanager
def campaign_lease(registry: Registry, campaign: str, *, ttl_s: float, wait_s: float,
                   say: Callable[[str], None] = _stderr) -> Iterator[None]:
    """Hold the lease on ``campaign`` for the block (re-entrant within a process), renewing it in the background.

    Args:
        registry: The registry holding the lease.
        campaign: Campaign name.
        ttl_s: Seconds after the last renewal at which the lease lapses.
        wait_s: Seconds to wait for a live holder to finish.
        say: Where the line about taking over a dead holder's lease goes (stderr).

    Raises:
        CampaignBusy: Another process held it for longer than ``wait_s`` seconds.
    """
    key = (registry.display_url, campaign)
    with _lock:
        nested = key in _held
        if nested:
            _held[key].depth += 1
    if nested:
        try:
            yield
        finally:
            with _lock:
                _held[key].depth -= 1
        return
    _take(registry, campaign, ttl_s, wait_s, say)
    held = _Held(registry=registry, campaign=campaign, depth=1, stop=threading.Event())
    with _lock:
        _held[key] = held
    heartbeat = threading.Thread(target=_renew, args=(held, ttl_s), name=f"lease-{campaign}", daemon=True)
    heartbeat.start()
    try:
        yield
    finally:
        held.stop.set()
        heartbeat.join(timeout=ttl_s)
        with _lock:
            _held.pop(key, None)
        registry.release_lease(campaign, HOLDER)


def release_held() -> list[str]:
    """Give up every lease this process holds (a stopping process: its resume must not wait); return the campaigns."""
    with _lock:
        held = list(_held.values())
        _held.clear()
    released = []
    for h in held:
        h.stop.set()
        try:
            if h.registry.release_lease(h.campaign, HOLDER):
                released.append(h.campaign)
        except RegistryError as exc:
            _stderr(f"campaign {h.campaign!r}: could not release the lease ({exc}); the next run takes it over")
    return released

"""One process advances a campaign at a time: a lease in the registry, renewed while the process works.

A second ``gymloop round`` (or a scheduled run) on the same campaign waits for the lease up to the
``lease_wait_s`` setting, then stops with a message naming the holder. A holder that dies stops renewing its
lease, which lapses after ``lease_ttl_s`` seconds and can then be taken over.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from registry import LeaseInfo, Registry

HOLDER = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""This process's name as a lease holder."""

_POLL_S = 1.0
_held: dict[tuple[str, str], int] = {}
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


def _take(registry: Registry, campaign: str, ttl_s: float, wait_s: float) -> None:
    started = time.monotonic()
    while True:
        lease = registry.acquire_lease(campaign, HOLDER, ttl_s)
        if lease.held:
            return
        waited = time.monotonic() - started
        if waited >= wait_s:
            raise CampaignBusy(lease, waited)
        time.sleep(min(_POLL_S, wait_s - waited))


@contextmanager
def campaign_lease(registry: Registry, campaign: str, *, ttl_s: float, wait_s: float) -> Iterator[None]:
    """Hold the lease on ``campaign`` for the block (re-entrant within a process), renewing it in the background.

    Raises:
        CampaignBusy: Another process held it for longer than ``wait_s`` seconds.
    """
    key = (registry.display_url, campaign)
    with _lock:
        nested = _held.get(key, 0) > 0
        if nested:
            _held[key] += 1
    if nested:
        try:
            yield
        finally:
            with _lock:
                _held[key] -= 1
        return
    _take(registry, campaign, ttl_s, wait_s)
    with _lock:
        _held[key] = 1
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl_s / 3):
            registry.acquire_lease(campaign, HOLDER, ttl_s)

    heartbeat = threading.Thread(target=renew, name=f"lease-{campaign}", daemon=True)
    heartbeat.start()
    try:
        yield
    finally:
        stop.set()
        heartbeat.join(timeout=ttl_s)
        with _lock:
            _held.pop(key, None)
        registry.release_lease(campaign, HOLDER)

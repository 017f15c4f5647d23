"""The flows' campaign lease: re-entrant in one process, a clear refusal naming a live holder in another, a dead
holder's lease taken over at once with a line saying so, and every lease released by a stopping process."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from flows.lease import HOLDER, CampaignBusy, campaign_lease, release_held
from registry import Registry


@pytest.fixture()
def registry(tmp_path):
    return Registry(f"sqlite:///{tmp_path / 'registry.db'}", tmp_path)


def test_lease_is_reentrant_and_released_at_the_end(registry):
    with campaign_lease(registry, "c", ttl_s=30, wait_s=0):
        with campaign_lease(registry, "c", ttl_s=30, wait_s=0):
            assert not registry.acquire_lease("c", "elsewhere:9:x", 30).held
        assert not registry.acquire_lease("c", "elsewhere:9:x", 30).held  # the outer block still holds it
    assert registry.acquire_lease("c", "elsewhere:9:x", 30).held


def test_a_held_campaign_is_refused_after_the_wait_naming_the_holder(registry):
    registry.acquire_lease("c", "elsewhere:9:x", 30)
    with pytest.raises(CampaignBusy, match=r"campaign 'c' is being advanced by another process \(elsewhere:9:x"):
        with campaign_lease(registry, "c", ttl_s=30, wait_s=0.3):
            pass
    assert registry.acquire_lease("c", HOLDER, 30).held is False


def _holder_of(pid: int, started: str | None = None) -> str:
    from flows.lease import _started

    return f"{socket.gethostname()}:{pid}:{_started(pid) if started is None else started}:feedbeef"


def test_a_killed_holder_on_this_host_is_taken_over_at_once_with_a_line(registry, tmp_path):
    code = ("import sys, time; from registry import Registry; from flows.lease import campaign_lease\n"
            f"r = Registry({registry.url!r}, {str(tmp_path)!r})\n"
            "with campaign_lease(r, 'c', ttl_s=600, wait_s=0):\n"
            "    print('held', flush=True); time.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        lines: list[str] = []
        with pytest.raises(CampaignBusy):  # alive: refused, not taken over
            with campaign_lease(registry, "c", ttl_s=600, wait_s=0, say=lines.append):
                pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        started = time.monotonic()
        with campaign_lease(registry, "c", ttl_s=600, wait_s=0, say=lines.append):
            assert registry.acquire_lease("c", "elsewhere:9:x", 600).held is False
        assert time.monotonic() - started < 5
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
    (line,) = lines
    assert f"took over the lease of {socket.gethostname()}:{holder.pid}:" in line
    assert f"process {holder.pid} on {socket.gethostname()} is gone" in line


def test_a_holder_whose_process_id_names_another_process_now_is_taken_over(registry):
    registry.acquire_lease("c", _holder_of(os.getppid(), started="1"), 600)
    lines: list[str] = []
    with campaign_lease(registry, "c", ttl_s=600, wait_s=0, say=lines.append):
        pass
    assert len(lines) == 1 and "its id now names another process" in lines[0]


def test_a_holder_elsewhere_is_taken_over_once_its_heartbeat_is_older_than_the_ttl(registry):
    registry.acquire_lease("c", "elsewhere:9:x", 0.3)
    lines: list[str] = []
    with pytest.raises(CampaignBusy):
        with campaign_lease(registry, "c", ttl_s=600, wait_s=0, say=lines.append):
            pass
    time.sleep(0.4)
    with campaign_lease(registry, "c", ttl_s=600, wait_s=0, say=lines.append):
        pass
    assert lines == ["campaign 'c': took over the lease of elsewhere:9:x, which stopped renewing it (more than "
                     "lease_ttl_s = 600 s ago)"]


def test_a_stopping_process_releases_every_lease_it_holds(registry):
    with campaign_lease(registry, "a", ttl_s=600, wait_s=0), campaign_lease(registry, "b", ttl_s=600, wait_s=0):
        assert sorted(release_held()) == ["a", "b"]
        assert registry.acquire_lease("a", "elsewhere:9:x", 600).held
        assert registry.acquire_lease("b", "elsewhere:9:x", 600).held

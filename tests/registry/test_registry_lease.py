"""The campaign lease: one holder at a time, renewed by its holder, taken over once it lapses."""

import time

import pytest

from registry import Registry


@pytest.fixture()
def registry(tmp_path):
    return Registry(f"sqlite:///{tmp_path / 'registry.db'}", tmp_path)


def test_one_holder_at_a_time(registry):
    first = registry.acquire_lease("c", "host:1:a", 60)
    assert first.held and first.holder == "host:1:a"
    second = registry.acquire_lease("c", "host:2:b", 60)
    assert not second.held and second.holder == "host:1:a"
    assert registry.acquire_lease("other", "host:2:b", 60).held  # leases are per campaign


def test_the_holder_renews_and_releases(registry):
    first = registry.acquire_lease("c", "host:1:a", 60)
    renewed = registry.acquire_lease("c", "host:1:a", 60)
    assert renewed.held and renewed.acquired_at == first.acquired_at and renewed.expires_at >= first.expires_at
    assert not registry.release_lease("c", "host:2:b")
    assert registry.release_lease("c", "host:1:a")
    assert registry.acquire_lease("c", "host:2:b", 60).held


def test_a_lapsed_lease_is_taken_over(registry):
    registry.acquire_lease("c", "host:1:dead", 0.2)
    time.sleep(0.3)
    taken = registry.acquire_lease("c", "host:2:b", 60)
    assert taken.held and taken.holder == "host:2:b"

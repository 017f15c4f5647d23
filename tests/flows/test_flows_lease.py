"""The flows' campaign lease: re-entrant in one process, a clear refusal naming the holder in another."""

import pytest

from flows.lease import HOLDER, CampaignBusy, campaign_lease
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

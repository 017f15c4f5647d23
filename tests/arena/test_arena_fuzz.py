"""The short fuzz run: seeded bad calls against every built-in gym escape nothing and change nothing."""

import pytest

from bench.bench_fuzz import fuzz_domain


@pytest.mark.parametrize("domain", ["helpdesk", "tracker", "procurement"])
def test_bad_calls_escape_nothing_and_change_no_world(domain):
    result = fuzz_domain(domain, calls=1500, seed=7)
    assert result.uncaught == [] and result.world_changes == [] and result.unserialisable == []
    assert result.calls == 1500 and result.rejected >= 1000

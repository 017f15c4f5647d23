"""The fixed mutation sample: mutmut's mutants of the learnability band and the recheck rule must die."""

from __future__ import annotations

from bench.mutation import SAMPLE, run_target


def test_the_sampled_mutants_are_killed():
    result = run_target(SAMPLE, max_children=2)
    assert result.total >= 20, result.statuses
    # One known equivalent mutant: `success < band_low` -> `<=` where success == band_low already scored 1.0.
    assert result.killed >= result.total - 1, result.not_killed

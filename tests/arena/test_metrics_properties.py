"""Metrics against independent computations: brute-force pass@k, analytic and reference bootstrap intervals."""

from __future__ import annotations

import random
from itertools import combinations
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.core.episode import EpisodeFailure, EpisodeRecord
from arena.core.metrics import (
    Outcome,
    compute_metrics,
    metrics_by,
    outcome,
    paired_lift,
    pass_at_k,
    pass_hat_k,
    per_task_pass_rate,
)
from arena.core.results import Verdict


def _outcomes(passes: list[tuple[int, int]], *, pack: str = "P") -> list[Outcome]:
    """Episodes of task i: ``passes[i] = (passed, attempts)``."""
    out = []
    for i, (passed, attempts) in enumerate(passes):
        out += [Outcome(pack_id=pack, task_id=f"t{i}", passed=j < passed, score=1.0 if j < passed else 0.25)
                for j in range(attempts)]
    return out


def _reference_bootstrap(values: list[float], rounds: int, seed: int, level: float) -> tuple[float, float]:
    """A slow percentile bootstrap written from its definition, with its own random source."""
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    tail = (1 - level) / 2
    return means[round(tail * (rounds - 1))], means[round((1 - tail) * (rounds - 1))]


attempt_counts = st.lists(st.tuples(st.integers(0, 6), st.integers(1, 6)).map(lambda t: (min(t), t[1])),
                          min_size=1, max_size=12)


@given(attempt_counts)
@settings(deadline=None)
def test_pass_at_k_and_pass_hat_k_match_enumeration_of_every_k_subset(tasks: list[tuple[int, int]]):
    for c, n in tasks:
        results = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(results, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
            assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
        with pytest.raises(ValueError, match="exceeds"):
            pass_at_k(n, c, n + 1)
        with pytest.raises(ValueError, match="exceeds"):
            pass_hat_k(n, c, n + 1)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=15))
@settings(max_examples=60, deadline=None)
def test_paired_lift_is_after_minus_before_averaged_over_tasks(counts: list[tuple[int, int]]):
    before = _outcomes([(b, 4) for b, _ in counts])
    after = _outcomes([(a, 4) for _, a in counts])
    expected = sum(a - b for b, a in counts) / (4 * len(counts))
    lift = paired_lift(before, after, rounds=200)
    assert lift.value == pytest.approx(expected)
    assert lift.n == len(counts)
    assert lift.low <= lift.value + 1e-9 and lift.value <= lift.high + 1e-9
    swapped = paired_lift(after, before, rounds=200)
    assert swapped.value == pytest.approx(-expected)


def test_an_improved_model_has_a_positive_lift_and_a_worse_one_a_negative_lift():
    before = _outcomes([(1, 4)] * 10)
    after = _outcomes([(3, 4)] * 10)
    assert paired_lift(before, after).value == pytest.approx(0.5)
    assert paired_lift(after, before).value == pytest.approx(-0.5)


def test_lift_counts_only_tasks_on_both_sides_and_weighs_tasks_not_episodes():
    before = _outcomes([(0, 2), (0, 8)]) + _outcomes([(5, 5)], pack="only-before")
    after = _outcomes([(2, 2), (2, 8)]) + _outcomes([(0, 5)], pack="only-after")
    lift = paired_lift(before, after, rounds=200)
    assert lift.n == 2 and lift.value == pytest.approx((1.0 + 0.25) / 2)
    invalid = [o.model_copy(update={"invalid": True, "passed": True}) for o in _outcomes([(4, 4)])]
    assert per_task_pass_rate(_outcomes([(0, 4)]) + invalid) == {("P", "t0"): 0.0}


@given(p=st.sampled_from([0.3, 0.5, 0.7]), n=st.sampled_from([300, 500]), seed=st.integers(0, 10_000))
@settings(max_examples=12, deadline=None)
def test_lift_interval_is_a_95_percent_interval_analytic_case(p: float, n: int, seed: int):
    """Per-task lifts of 0 or 1 with share p: the mean's bootstrap law is close to normal, sd sqrt(p(1-p)/n)."""
    ones = round(p * n)
    before = _outcomes([(0, 1)] * n)
    after = _outcomes([(1, 1)] * ones + [(0, 1)] * (n - ones))
    lift = paired_lift(before, after, rounds=4000, seed=seed)
    sd = (ones / n * (1 - ones / n) / n) ** 0.5
    z95 = NormalDist().inv_cdf(0.975)
    for half_width in (lift.value - lift.low, lift.high - lift.value):
        assert half_width / (z95 * sd) == pytest.approx(1.0, abs=0.1)


@given(values=st.lists(st.integers(-4, 4), min_size=10, max_size=40), seed=st.integers(0, 1000))
@settings(max_examples=15, deadline=None)
def test_lift_interval_agrees_with_a_reference_bootstrap(values: list[int], seed: int):
    """Both bootstraps estimate the same percentiles; they differ by resampling noise and one grid step."""
    before = _outcomes([(4, 4) if v < 0 else (0, 4) for v in values])
    after = _outcomes([(4 + v, 4) if v < 0 else (v, 4) for v in values])
    diffs = [v / 4 for v in values]
    lift = paired_lift(before, after, rounds=2000, seed=seed)
    low, high = _reference_bootstrap(diffs, 2000, seed, 0.95)
    spread = max(diffs) - min(diffs)
    tolerance = spread / len(diffs) + 0.25 * spread / len(diffs) ** 0.5 + 1e-9
    assert lift.low == pytest.approx(low, abs=tolerance)
    assert lift.high == pytest.approx(high, abs=tolerance)


def test_pass_rate_interval_is_a_95_percent_interval():
    outcomes = _outcomes([(1, 1)] * 200 + [(0, 1)] * 200)
    rate = compute_metrics(outcomes, rounds=4000).pass_rate
    z95 = NormalDist().inv_cdf(0.975)
    sd = (0.25 / 400) ** 0.5
    assert rate.value == 0.5
    assert (rate.high - rate.low) / (2 * z95 * sd) == pytest.approx(1.0, abs=0.08)


@given(attempt_counts)
@settings(max_examples=40, deadline=None)
def test_compute_metrics_against_a_direct_computation(tasks: list[tuple[int, int]]):
    outcomes = _outcomes(tasks)
    metrics = compute_metrics(outcomes, rounds=100)
    k = min(n for _, n in tasks)
    assert metrics.k == k and metrics.episodes == sum(n for _, n in tasks) and metrics.invalid == 0
    assert metrics.pass_rate.value == pytest.approx(sum(c / n for c, n in tasks) / len(tasks))
    assert metrics.mean_score.value == pytest.approx(sum((c + 0.25 * (n - c)) / n for c, n in tasks) / len(tasks))
    assert metrics.pass_at_k.value == pytest.approx(sum(pass_at_k(n, c, k) for c, n in tasks) / len(tasks))
    assert metrics.pass_hat_k.value == pytest.approx(sum(pass_hat_k(n, c, k) for c, n in tasks) / len(tasks))
    for est in (metrics.pass_rate, metrics.mean_score, metrics.pass_at_k, metrics.pass_hat_k):
        assert est.n == len(tasks) and est.low <= est.value + 1e-9 <= est.high + 2e-9


def test_invalid_episodes_are_counted_apart_and_failures_by_boundary():
    outcomes = _outcomes([(2, 4)])
    outcomes.append(Outcome(pack_id="P", task_id="t0", passed=True, score=1.0, invalid=True,
                            failure_boundary="model_api"))
    outcomes.append(Outcome(pack_id="P", task_id="t0", passed=False, score=0.0, failure_boundary="agent"))
    metrics = compute_metrics(outcomes, rounds=100)
    assert metrics.invalid == 1 and metrics.episodes == 5
    assert metrics.failures_by_boundary == {"model_api": 1, "agent": 1}
    assert metrics.pass_rate.value == pytest.approx(2 / 5)


def test_an_explicit_k_leaves_out_tasks_with_fewer_attempts():
    metrics = compute_metrics(_outcomes([(1, 1), (4, 4)]), k=2, rounds=100)
    assert metrics.k == 2 and metrics.pass_at_k.n == 1 and metrics.pass_hat_k.value == 1.0
    assert compute_metrics([], rounds=10).pass_rate.n == 0


def test_same_seed_same_intervals_and_an_empty_sample_is_all_zero():
    before, after = _outcomes([(1, 4), (2, 4), (0, 4), (4, 4)]), _outcomes([(3, 4), (2, 4), (1, 4), (4, 4)])
    assert paired_lift(before, after) == paired_lift(before, after)
    assert compute_metrics(after) == compute_metrics(after)
    for empty in (paired_lift(before, _outcomes([(1, 1)], pack="other")), compute_metrics([]).pass_rate,
                  compute_metrics([]).mean_score):
        assert (empty.value, empty.low, empty.high, empty.n) == (0.0, 0.0, 0.0, 0)
    assert compute_metrics([]).k == 1 and compute_metrics([]).episodes == 0


def test_failures_of_one_boundary_add_up():
    outcomes = [Outcome(pack_id="P", task_id=f"t{i}", passed=False, score=0.0, failure_boundary="environment")
                for i in range(3)]
    assert compute_metrics(outcomes, rounds=10).failures_by_boundary == {"environment": 3}


def test_records_are_read_field_by_field():
    verdict = Verdict(passed=True, score=1.0, side_effect_penalty=0.0, results=[], changes=[])
    record = EpisodeRecord(episode_id="e", pack_id="P", domain="helpdesk", task_id="t", split="heldout",
                           category="lookup", seed=0, agent="a", model_ref="m", verdict=verdict, invalid=True,
                           failure=EpisodeFailure(boundary="model_api", kind="timeout", message="slow"),
                           tokens_in=3, tokens_out=4, cost=0.5)
    assert outcome(record) == Outcome(pack_id="P", task_id="t", domain="helpdesk", category="lookup", passed=True,
                                      score=1.0, invalid=True, failure_boundary="model_api", failure_kind="timeout",
                                      tokens=7, cost=0.5)
    unverified = record.model_copy(update={"verdict": None, "failure": None, "invalid": False})
    assert outcome(unverified).passed is False and outcome(unverified).failure_boundary is None


def test_invalid_episodes_are_counted_by_cause_and_as_failed_beside_the_pass_rate():
    ok = [Outcome(pack_id="P", task_id=f"t{i}", passed=True, score=1.0) for i in range(3)]
    down = [Outcome(pack_id="P", task_id="t3", passed=False, score=0.0, invalid=True, failure_boundary="model_api",
                    failure_kind="server_error")]
    metrics = compute_metrics([*ok, *down], rounds=10)
    assert metrics.pass_rate.value == 1.0 and metrics.pass_rate_invalid_failed.value == 0.75
    assert metrics.invalid == 1 and metrics.invalid_causes == {"model_api/server_error": 1}


def test_metrics_by_group_episodes_under_every_key_they_map_to():
    outcomes = [o.model_copy(update={"domain": "a" if o.task_id == "t0" else "b"})
                for o in _outcomes([(1, 2), (2, 2), (0, 2)])]
    groups = metrics_by(outcomes, lambda o: [o.domain, "all"], rounds=50)
    assert list(groups) == ["a", "all", "b"]
    assert groups["a"].pass_rate.value == 0.5 and groups["b"].pass_rate.value == 0.5
    assert groups["all"].episodes == 6 and groups["b"].pass_rate.n == 2
    assert groups["all"] == compute_metrics(outcomes, rounds=50)


def _varied() -> tuple[list[Outcome], list[Outcome]]:
    rng = random.Random(7)
    counts = [(rng.randint(0, 4), rng.randint(0, 4)) for _ in range(60)]
    return _outcomes([(b, 4) for b, _ in counts]), _outcomes([(a, 4) for _, a in counts])


def test_every_interval_is_reproducible_from_its_seed_and_moves_with_it():
    before, after = _varied()
    assert paired_lift(before, after) == paired_lift(before, after)
    assert paired_lift(before, after, seed=3) != paired_lift(before, after, seed=4)
    metrics = compute_metrics(after, k=2)
    assert metrics == compute_metrics(after, k=2)
    moved = compute_metrics(after, k=2, seed=9)
    for name in ("pass_rate", "mean_score", "pass_at_k", "pass_hat_k"):
        assert (getattr(moved, name).low, getattr(moved, name).high) != (getattr(metrics, name).low,
                                                                         getattr(metrics, name).high), name


def test_metrics_by_passes_k_rounds_and_seed_through():
    _, after = _varied()
    tagged = [o.model_copy(update={"domain": "even" if int(o.task_id[1:]) % 2 else "odd"}) for o in after]
    groups = metrics_by(tagged, lambda o: [o.domain], k=2, rounds=300, seed=5)
    for name, group in groups.items():
        members = [o for o in tagged if o.domain == name]
        assert group == compute_metrics(members, k=2, rounds=300, seed=5)
        assert group.k == 2

"""Metrics over episodes: pass rate, mean score, pass@k and pass^k with bootstrap intervals."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from math import comb

import numpy as np
from pydantic import BaseModel, ConfigDict

from arena.core.episode import EpisodeRecord


class Estimate(BaseModel):
    """A metric with its bootstrap confidence interval.

    Attributes:
        value: Point estimate.
        low: Lower bound of the interval.
        high: Upper bound of the interval.
        n: Number of tasks it was computed over.
    """

    model_config = ConfigDict(extra="forbid")

    value: float
    low: float
    high: float
    n: int


class Outcome(BaseModel):
    """What metrics read of one episode (from an ``EpisodeRecord`` or a stored summary).

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id.
        domain: Domain of the pack.
        category: Task category.
        passed: Every assertion held.
        score: Fraction of assertions held.
        invalid: Excluded from the rates.
        failure_boundary: Boundary of a rollout failure, if any.
        failure_kind: Kind of a rollout failure, if any.
        tokens: Tokens used (prompt and completion).
        cost: Cost in US dollars.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    pack_id: str
    task_id: str
    domain: str = ""
    category: str = ""
    passed: bool
    score: float
    invalid: bool = False
    failure_boundary: str | None = None
    failure_kind: str | None = None
    tokens: int = 0
    cost: float = 0.0


def outcome(record: EpisodeRecord | Outcome) -> Outcome:
    """The metrics' view of an episode."""
    if isinstance(record, Outcome):
        return record
    return Outcome(pack_id=record.pack_id, task_id=record.task_id, domain=record.domain, category=record.category,
                   passed=record.passed,
                   score=record.score, invalid=record.invalid,
                   failure_boundary=record.failure.boundary if record.failure else None,
                   failure_kind=record.failure.kind if record.failure else None,
                   tokens=record.tokens_in + record.tokens_out, cost=record.cost)


Episodes = Iterable[EpisodeRecord | Outcome]
"""Episodes as full records or as outcomes."""


class Metrics(BaseModel):
    """Metrics of one group of episodes.

    Attributes:
        episodes: Episodes counted (valid ones).
        invalid: Invalid episodes (excluded from the rates).
        invalid_causes: Invalid episodes by cause (``boundary/kind``, e.g. ``model_api/server_error``).
        failures_by_boundary: Episodes that did not finish normally, by failure boundary.
        pass_rate: Share of valid episodes that passed.
        pass_rate_invalid_failed: Pass rate with every invalid episode counted as failed: what the rate would
            be if nothing were excluded (shown beside ``pass_rate``; equal when no episode is invalid).
        mean_score: Mean fraction of assertions held.
        pass_at_k: Probability that at least one of k attempts passes (per task, averaged).
        pass_hat_k: Probability that all k attempts pass (per task, averaged).
        k: The k of pass@k and pass^k.
    """

    model_config = ConfigDict(extra="forbid")

    episodes: int
    invalid: int
    invalid_causes: dict[str, int] = {}
    failures_by_boundary: dict[str, int]
    pass_rate: Estimate
    pass_rate_invalid_failed: Estimate
    mean_score: Estimate
    pass_at_k: Estimate
    pass_hat_k: Estimate
    k: int


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: n attempts, c passed."""
    if k > n:
        raise ValueError(f"k={k} exceeds the {n} attempts available")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k for one task: the chance that k attempts drawn from n all pass."""
    if k > n:
        raise ValueError(f"k={k} exceeds the {n} attempts available")
    return comb(c, k) / comb(n, k)


def _bootstrap(values: Sequence[float], rounds: int, seed: int, level: float = 0.95) -> Estimate:
    if not values:
        return Estimate(value=0.0, low=0.0, high=0.0, n=0)
    data = np.asarray(values, dtype=float)
    point = float(data.mean())
    rng = np.random.default_rng(seed)
    means = np.sort(data[rng.integers(0, len(data), size=(rounds, len(data)))].mean(axis=1))
    tail = (1 - level) / 2
    return Estimate(value=point, low=float(means[int(tail * rounds)]),
                    high=float(means[min(rounds - 1, int((1 - tail) * rounds))]), n=len(data))


def compute_metrics(records: Episodes, *, k: int | None = None, rounds: int = 1000, seed: int = 0) -> Metrics:
    """Compute metrics over episodes; intervals bootstrap over tasks.

    Args:
        records: Episodes (any mix of tasks, seeds and attempts), as records or outcomes.
        k: k for pass@k and pass^k (default: the smallest attempt count of any task).
        rounds: Bootstrap resamples.
        seed: Bootstrap seed.
    """
    all_records = [outcome(r) for r in records]
    valid = [r for r in all_records if not r.invalid]
    boundaries: dict[str, int] = defaultdict(int)
    for r in all_records:
        if r.failure_boundary is not None:
            boundaries[r.failure_boundary] += 1
    per_task: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for r in valid:
        per_task[(r.pack_id, r.task_id)].append(r)
    kk = k or (min(len(v) for v in per_task.values()) if per_task else 1)
    task_pass = [sum(r.passed for r in v) / len(v) for v in per_task.values()]
    everything: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for r in all_records:
        everything[(r.pack_id, r.task_id)].append(r)
    task_pass_all = [sum(r.passed and not r.invalid for r in v) / len(v) for v in everything.values()]
    causes = Counter(f"{r.failure_boundary or 'unknown'}/{r.failure_kind or 'unknown'}" for r in all_records
                     if r.invalid)
    task_score = [sum(r.score for r in v) / len(v) for v in per_task.values()]
    eligible = [v for v in per_task.values() if len(v) >= kk]
    at_k = [pass_at_k(len(v), sum(r.passed for r in v), kk) for v in eligible]
    hat_k = [pass_hat_k(len(v), sum(r.passed for r in v), kk) for v in eligible]
    return Metrics(
        episodes=len(valid), invalid=len(all_records) - len(valid), invalid_causes=dict(causes.most_common()),
        failures_by_boundary=dict(boundaries), pass_rate=_bootstrap(task_pass, rounds, seed),
        pass_rate_invalid_failed=_bootstrap(task_pass_all, rounds, seed + 4),
        mean_score=_bootstrap(task_score, rounds, seed + 1),
        pass_at_k=_bootstrap(at_k, rounds, seed + 2), pass_hat_k=_bootstrap(hat_k, rounds, seed + 3), k=kk,
    )


def metrics_by(records: Episodes, key: Callable[[Outcome], Iterable[str]], *, k: int | None = None,
               rounds: int = 1000, seed: int = 0) -> dict[str, Metrics]:
    """Metrics per group; ``key`` maps an episode's outcome to its groups (e.g. its domain)."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for r in records:
        o = outcome(r)
        for g in key(o):
            groups[g].append(o)
    return {g: compute_metrics(v, k=k, rounds=rounds, seed=seed) for g, v in sorted(groups.items())}


def per_task_pass_rate(records: Episodes) -> dict[tuple[str, str], float]:
    """Pass rate of each ``(pack_id, task_id)`` over its valid episodes."""
    groups: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in records:
        o = outcome(r)
        if not o.invalid:
            groups[(o.pack_id, o.task_id)].append(o.passed)
    return {key: sum(v) / len(v) for key, v in groups.items()}


def paired_lift(before: Episodes, after: Episodes, *, rounds: int = 2000, seed: int = 0) -> Estimate:
    """Lift in pass rate on the same tasks, with a paired bootstrap interval over tasks.

    Only tasks present (with valid episodes) on both sides count.
    """
    b, a = per_task_pass_rate(before), per_task_pass_rate(after)
    common = sorted(set(a) & set(b))
    return _bootstrap([a[t] - b[t] for t in common], rounds, seed)

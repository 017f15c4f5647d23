"""Ranking weaknesses: impact from share, reward lost, learnability and trend; bootstrap intervals on shares."""

from __future__ import annotations

import numpy as np

from diagnosis.models import ShareInterval

BOOTSTRAP_RESAMPLES = 2000
"""Resamples drawn for each share's confidence interval."""

LEVEL = 0.95
"""Confidence level of the share intervals."""


def share_interval(count: int, total: int, *, seed: int, resamples: int = BOOTSTRAP_RESAMPLES,
                   level: float = LEVEL) -> ShareInterval:
    """Return the percentile bootstrap interval of the share ``count / total``.

    Resampling ``total`` failures with replacement and counting those with the weakness is a
    binomial draw, so each resample is drawn as ``Binomial(total, count / total)``: the same
    distribution as resampling the episodes, at a cost independent of ``total``.

    Raises:
        ValueError: ``count`` is outside ``0..total`` or ``total`` is not positive.
    """
    if total <= 0 or not 0 <= count <= total:
        raise ValueError(f"share needs 0 <= count <= total and total > 0, got count={count}, total={total}")
    rng = np.random.default_rng(seed)
    draws = rng.binomial(total, count / total, size=resamples) / total
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return ShareInterval(low=round(float(low), 6), high=round(float(high), 6), level=level)


def learnability_weight(learnability: float) -> float:
    """Weight from the fraction of episodes whose task the model sometimes solves: 0.5 (never) to 1 (always)."""
    return 0.5 + 0.5 * learnability


def trend_weight(trend: float) -> float:
    """Weight from the change of share since the previous round, between 0.5 (shrinking) and 1.5 (growing)."""
    return min(1.5, max(0.5, 1.0 + trend))


def impact(share: float, mean_reward_lost: float, learnability: float, trend: float) -> float:
    """Return share x mean reward lost x learnability weight x trend weight."""
    return share * mean_reward_lost * learnability_weight(learnability) * trend_weight(trend)

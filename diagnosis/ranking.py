"""Ranking weaknesses on two levels: kinds by the failures they explain, grains by impact within their kind.

Impact is share x reward lost x learnability weight x trend weight; shares and rates get bootstrap intervals.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from arena.core.weakness import WeaknessKind
from diagnosis.knobs import target_for
from diagnosis.models import REPORT_SCHEMA_VERSION, KindSummary, ShareInterval, Weakness, WeaknessReport, grain_key

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


def kind_impact(kind: KindSummary) -> float:
    """A kind's impact, from its summed share and its failures' mean reward lost, learnability and trend."""
    return impact(kind.share, kind.mean_reward_lost, kind.learnability, kind.trend)


def _kind_shares(report: WeaknessReport) -> dict[WeaknessKind, float]:
    if report.kinds:
        return {k.kind: k.share for k in report.kinds}
    shares: dict[WeaknessKind, float] = {}
    for w in report.weaknesses:
        shares[w.kind] = shares.get(w.kind, 0.0) + w.share
    return shares


def rank_report(report: WeaknessReport, previous: WeaknessReport | None = None) -> WeaknessReport:
    """Rank the report's weaknesses on two levels, in place, and return it.

    First level: kinds, each summing its grains (a failure belongs to one grain of each kind it shows), ranked by
    the failures they explain (their primary kind), ties to the higher impact; a kind only ever secondary comes
    after those, by the failures it is secondary in. Second level: a kind's grains, ranked by impact, ties to the
    larger count, then the larger secondary count. ``Weakness.rank`` is the position in that order (a kind's
    grains follow each other).

    Args:
        report: The report; its weaknesses' counts, shares and impacts are read, their ranks written.
        previous: The previous round's report, for each kind's trend.
    """
    failures, episodes = report.failures, report.episodes
    prior = _kind_shares(previous) if previous is not None else {}
    groups: dict[WeaknessKind, list[Weakness]] = {}
    for w in report.weaknesses:
        groups.setdefault(w.kind, []).append(w)
    kinds: list[KindSummary] = []
    for index, (kind, grains) in enumerate(sorted(groups.items())):
        grains.sort(key=lambda w: (-w.impact, -w.count, -w.secondary, w.domain or "", w.tool or "", w.label))
        count = sum(w.count for w in grains)
        secondary = sum(w.secondary for w in grains)
        target = target_for(kind)
        domains: dict[str, int] = {}
        for w in grains:
            for d in w.domains:
                domains[d] = domains.get(d, 0) + w.count + w.secondary
        share = count / failures if failures else 0.0
        summary = KindSummary(
            kind=kind, label=target.label if kind != WeaknessKind.NOVEL else "Failures no detector explains",
            description=target.description, rank=0, count=count, secondary=secondary, share=round(share, 6),
            share_interval=share_interval(count, failures, seed=report.seed * 7919 + 104_729 + index)
            if failures and count <= failures else ShareInterval(low=share, high=share),
            rate=round(count / episodes, 6) if episodes else 0.0,
            rate_interval=share_interval(count, episodes, seed=report.seed * 7919 + 104_730 + index)
            if episodes and count <= episodes else None,
            mean_reward_lost=round(sum(w.count * w.mean_reward_lost for w in grains) / count, 6) if count else 0.0,
            learnability=round(sum(w.count * w.learnability for w in grains) / count, 6) if count else 0.0,
            trend=round(share - prior[kind], 6) if kind in prior else 0.0,
            grains=[w.grain for w in grains], domains=sorted(domains, key=lambda d: (-domains[d], d)),
        )
        summary.impact = round(kind_impact(summary), 6)
        kinds.append(summary)
    kinds.sort(key=lambda k: (-k.count, -k.impact, -k.secondary, k.kind))
    ordered: list[Weakness] = []
    for kind_rank, summary in enumerate(kinds, start=1):
        summary.rank = kind_rank
        for grain_rank, w in enumerate(groups[summary.kind], start=1):
            w.kind_rank, w.grain_rank = kind_rank, grain_rank
            ordered.append(w)
    for rank, w in enumerate(ordered, start=1):
        w.rank = rank
    report.kinds = kinds
    report.weaknesses = ordered
    return report


def read_report(text: str | bytes) -> WeaknessReport:
    """Parse a report written by ``WeaknessReport.to_json`` by this gymloop or an earlier one.

    A schema 1 report gets its kinds and grain ranks (a re-ranking); a report before schema 3 counted a failure for
    every kind it showed, so its primary counts are its tag counts and nothing is secondary.

    Raises:
        pydantic.ValidationError: The text is not a weakness report.
    """
    report = WeaknessReport.model_validate_json(text)
    if report.schema_version < 3 and not report.primary_counts:
        report.primary_counts = dict(report.tag_counts)
    if report.schema_version < 2:
        for w in report.weaknesses:
            kind = f"{w.kind}:{w.cluster_ids[0]}" if w.kind == WeaknessKind.NOVEL and w.cluster_ids else w.kind
            w.grain = w.grain or grain_key(kind, w.domain, w.tool)
        report = rank_report(report)
        report.schema_version = REPORT_SCHEMA_VERSION
    return report


def _in_domain(w: Weakness, domain: str | None) -> bool:
    """Whether a grain belongs to a selection by gym (a grain naming no domain: when its failures include it)."""
    if domain is None:
        return True
    return w.domain == domain if w.domain is not None else not w.domains or domain in w.domains


def focus_grains(report: WeaknessReport, n: int | None = None, *, domain: str | None = None) -> list[Weakness]:
    """The grains to act on first: each kind's top grain in kind order, then each kind's second, and so on.

    This is how the factory request and the curriculum read the two-level ranking: the kinds explaining the
    most failures come first however many grains their failures are split into, and a kind with many grains
    does not crowd out the next kinds. A report without kind ranks orders kinds by their first grain's rank.

    With ``domain``, kinds are ordered by the failures they explain in that gym (its grains'), ties in the
    report's kind order: a request for one gym's variants can only practise that gym's grains, so a kind that
    explains many failures elsewhere but few here does not come before the kind that explains this gym's.

    Args:
        report: A ranked report.
        n: Keep at most this many grains (all by default).
        domain: Keep only grains of this domain (a grain naming no domain is kept when its failures include it).
    """
    grains = sorted((w for w in report.weaknesses if _in_domain(w, domain)),
                    key=lambda w: (w.kind_rank, w.grain_rank, w.rank))
    kind_order: dict[WeaknessKind, int] = {}
    for w in grains:
        kind_order.setdefault(w.kind, len(kind_order))
    if domain is not None:
        here: dict[WeaknessKind, int] = {}
        for w in grains:
            here[w.kind] = here.get(w.kind, 0) + w.count
        kind_order = {k: i for i, k in enumerate(sorted(kind_order, key=lambda k: (-here[k], kind_order[k])))}
    position: dict[WeaknessKind, int] = {}
    keyed = []
    for w in grains:
        position[w.kind] = position.get(w.kind, 0) + 1
        keyed.append(((position[w.kind], kind_order[w.kind]), w))
    ordered = [w for _, w in sorted(keyed, key=lambda item: item[0])]
    return ordered if n is None else ordered[:n]


SECONDARY_WEIGHT = 0.5
"""What a failure showing a kind as secondary weighs, for aiming at the kind, against one it explains first."""


def _value(w: Weakness) -> float:
    """What practising a grain is worth: its impact (its share when that is 0), plus its secondary failures'."""
    primary = w.impact if w.impact > 0 else w.share
    return primary + SECONDARY_WEIGHT * impact(w.secondary_share, w.mean_reward_lost, w.learnability, 0.0)


def focus_weights(report: WeaknessReport, chosen: list[Weakness], *, domain: str | None = None) -> list[float]:
    """Weights of chosen grains: each kind's weight, shared among its chosen grains in proportion to their impact.

    A kind weighs what all its grains in the report weigh together (their impacts summed; a grain of zero impact
    counts its share; the failures a grain is secondary in add their impact at ``SECONDARY_WEIGHT``, so a request
    can aim at a failure's secondary kind too), however many of them were chosen, so a kind whose failures are
    split into many small grains weighs what its failures weigh. With ``domain`` (grains chosen for one gym,
    ``focus_grains(..., domain=)``), a kind weighs what its grains of that gym weigh: its failures in other gyms
    are not what a variant of this gym practises.
    """
    kind_weight: dict[WeaknessKind, float] = {}
    for w in report.weaknesses:
        if _in_domain(w, domain):
            kind_weight[w.kind] = kind_weight.get(w.kind, 0.0) + _value(w)
    chosen_total: dict[WeaknessKind, float] = {}
    for w in chosen:
        chosen_total[w.kind] = chosen_total.get(w.kind, 0.0) + _value(w)
    out = []
    for w in chosen:
        whole = kind_weight.get(w.kind, _value(w))
        share = _value(w) / chosen_total[w.kind] if chosen_total[w.kind] > 0 else 1 / sum(x.kind == w.kind
                                                                                          for x in chosen)
        out.append(whole * share)
    return out


class FocusGrain(BaseModel):
    """One grain to act on, with its weight: an item of the ranking the factory and the planner read.

    Attributes:
        weakness: The grain (a weakness of the report).
        weight: Its kind's weight shared among the kind's chosen grains (``focus_weights``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    weakness: Weakness
    weight: float


def focus(report: WeaknessReport, n: int | None = None, *, domain: str | None = None) -> list[FocusGrain]:
    """The grains to act on first and their weights, computed once: ``focus_grains`` weighed by ``focus_weights``.

    The factory's targets (``factory_client.targets_from_report``) and the targeted planner both read this list,
    so a request and a wave follow one ranking.

    Args:
        report: A ranked report (or the planner's practice view of it, ``curriculum.coverage_ranked``).
        n: Keep at most this many grains (all by default).
        domain: Read one gym's grains only (see ``focus_grains``).
    """
    chosen = focus_grains(report, n, domain=domain)
    weights = focus_weights(report, chosen, domain=domain)
    return [FocusGrain(weakness=w, weight=weight) for w, weight in zip(chosen, weights, strict=True)]

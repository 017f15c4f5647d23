"""Every metric of a round, as MLflow and the round's summary name them."""

from __future__ import annotations

from collections.abc import Sequence

from arena.core.flips import Flips
from arena.core.metrics import Metrics, Outcome, compute_metrics, metrics_by, paired_lift
from diagnosis import WeaknessReport


def round_metrics(before: Sequence[Outcome], after: Sequence[Outcome], report: WeaknessReport,
                  train: Sequence[Outcome], k: int, seed: int) -> dict[str, float]:
    """Every metric of a round: held-out pass rates, lift and interval, pass^k, per domain and weakness kind, usage."""
    mb, ma = compute_metrics(before, k=k, seed=seed), compute_metrics(after, k=k, seed=seed)
    lift = paired_lift(before, after, seed=seed)
    everything = [*before, *after, *train]
    out = {
        "heldout_pass_rate_before": mb.pass_rate.value, "heldout_pass_rate_after": ma.pass_rate.value,
        "lift": lift.value, "lift_low": lift.low, "lift_high": lift.high,
        f"pass_hat_{k}_before": mb.pass_hat_k.value, f"pass_hat_{k}_after": ma.pass_hat_k.value,
        f"pass_at_{k}_after": ma.pass_at_k.value, "mean_score_after": ma.mean_score.value,
        "episodes_eval": float(len(before) + len(after)), "episodes_train": float(len(train)),
        "invalid_episodes": float(mb.invalid + ma.invalid),
        **validity_metrics(mb, ma),
        "tokens": float(sum(o.tokens for o in everything)), "cost_usd": float(sum(o.cost for o in everything)),
    }
    for domain, m in metrics_by(after, lambda o: [o.domain], k=k, seed=seed).items():
        out[f"heldout_pass_rate_after/{domain}"] = m.pass_rate.value
    for domain, m in metrics_by(before, lambda o: [o.domain], k=k, seed=seed).items():
        out[f"heldout_pass_rate_before/{domain}"] = m.pass_rate.value
    out.update(kind_metrics(report))
    return out


def flip_metrics(flips: Flips, promoted: bool) -> dict[str, float]:
    """The round's held-out flips (tasks paired, pass->fail, fail->pass) and its promotion (1 promoted, 0 not)."""
    return {"paired_tasks": float(flips.tasks), "pass_to_fail": float(flips.pass_to_fail),
            "fail_to_pass": float(flips.fail_to_pass), "promoted": float(promoted)}


def kind_metrics(report: WeaknessReport) -> dict[str, float]:
    """Each weakness kind's failures summed over its grains: share of failures, count, rate per held-out episode.

    A failure counts for its primary kind; the failures that show a kind as secondary are counted apart
    (``weakness_secondary/<kind>``).
    """
    out: dict[str, float] = {}
    for k in report.kinds:
        out[f"weakness_share/{k.kind}"] = k.share
        out[f"weakness_count/{k.kind}"] = float(k.count)
        out[f"weakness_rate/{k.kind}"] = k.rate
        out[f"weakness_secondary/{k.kind}"] = float(k.secondary)
    return out


def validity_metrics(before: Metrics, after: Metrics) -> dict[str, float]:
    """Valid and invalid held-out episodes before and after, their causes, and the rates with invalid ones failed.

    The pass rates leave invalid episodes out; these are shown beside them.
    """
    out = {"valid_episodes_before": float(before.episodes), "valid_episodes_after": float(after.episodes),
           "invalid_episodes_before": float(before.invalid), "invalid_episodes_after": float(after.invalid),
           "heldout_pass_rate_before_invalid_failed": before.pass_rate_invalid_failed.value,
           "heldout_pass_rate_after_invalid_failed": after.pass_rate_invalid_failed.value}
    for stage, m in (("before", before), ("after", after)):
        out.update({f"invalid_{stage}/{cause}": float(n) for cause, n in m.invalid_causes.items()})
    return out

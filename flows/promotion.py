"""The promotion gate: a round's model becomes the campaign's model only within the configured bounds.

A promoted round's model is ``@best``/``@current`` in MLflow (``flows.round_tracking``) and the next round's starting
model (``flows.context``). A round outside a bound (``flows.settings.PromotionSettings``: the lower bound of its
paired lift's interval, its held-out pass->fail flips) is recorded with the reason and its model kept, not promoted:
the arm goes on from its last promoted model. The decision is recorded with the round in the registry, in the same
transaction that finishes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from arena.core.flips import Flips
from flows.models import Promotion
from flows.settings import PromotionSettings

if TYPE_CHECKING:
    from registry import RoundInfo

NO_BOUND = "no promotion bound set"
"""The reason of a round promoted without a bound."""


def decide(lift_low: float, flips: Flips, bounds: PromotionSettings) -> Promotion:
    """Whether a round is promoted: its lift's lower bound and its pass->fail flips against the bounds set."""
    passed: list[str] = []
    failed: list[str] = []
    if bounds.promote_min_lift_low is not None:
        within = lift_low >= bounds.promote_min_lift_low
        (passed if within else failed).append(
            f"lift lower bound {lift_low:+.3f} {'>=' if within else '<'} promote_min_lift_low "
            f"{bounds.promote_min_lift_low:+.3f}")
    if bounds.promote_max_regressions is not None:
        within = flips.pass_to_fail <= bounds.promote_max_regressions
        (passed if within else failed).append(
            f"{flips.pass_to_fail} held-out task{'s' if flips.pass_to_fail != 1 else ''} pass->fail "
            f"{'<=' if within else '>'} promote_max_regressions {bounds.promote_max_regressions}")
    if failed:
        return Promotion(promoted=False, reason="; ".join(failed))
    return Promotion(promoted=True, reason="; ".join(passed) or NO_BOUND)


def round_promotion(info: RoundInfo) -> Promotion:
    """A finished round's recorded decision (a round recorded before the gate was promoted)."""
    return Promotion.model_validate(info.details.get("promotion") or {})


def last_promoted(rounds: Sequence[RoundInfo]) -> RoundInfo | None:
    """The latest finished round whose model was promoted, of an arm's rounds (``None``: none was)."""
    return next((r for r in reversed(rounds) if r.status == "finished" and r.model_out_id is not None
                 and round_promotion(r).promoted), None)


def promotion_line(promotion: Promotion) -> str:
    """How every surface states a round's decision: ``promoted`` or ``not promoted: <reason>``."""
    return "promoted" if promotion.promoted else f"not promoted: {promotion.reason}"

"""The command line's view of a control arm: the targeting lift per round and for the campaign."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flows.control import campaign_comparison, targeting_line
from flows.settings import GymloopSettings

if TYPE_CHECKING:
    from flows.models import ArmComparison


LIFT_COLUMNS = ("round", "targeted after", "control after", "targeting lift", "95% interval", "targeted weaknesses")
"""Columns of the targeting-lift table."""


def lift_rows(comparisons: list[ArmComparison]) -> list[list[str]]:
    """Targeting lift per round: targeted and control pass rates, the lift, its interval and the weaknesses."""
    rows: list[list[str]] = []
    for c in comparisons:
        moved = ", ".join(f"{w.grain} {w.before:.2f}->{w.after:.2f}" + ("" if w.fell else " (did not fall)")
                          for w in c.weaknesses[:3]) or "none targeted"
        rows.append([str(c.round_index), f"{c.targeted_after:.3f}", f"{c.control_after:.3f}", f"{c.lift:+.3f}",
                     f"[{c.low:+.3f}, {c.high:+.3f}]", moved])
    return rows


def campaign_control_line(settings: GymloopSettings, campaign: str, control: str) -> str:
    """The campaign's targeting lift against its control (after the last round both arms finished), as one line."""
    return targeting_line(campaign_comparison(settings, campaign, control))

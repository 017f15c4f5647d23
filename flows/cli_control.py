"""The command line's view of a control arm: run both arms with a progress bar, print the targeting lift."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from flows.models import CampaignParams, Control, RoundSummary
from flows.settings import GymloopSettings

if TYPE_CHECKING:
    from flows.control import PairedRound


def run_with_progress(console: Console, campaign: str, rounds: int, overrides: dict[str, Any], control: Control,
                      *, stop_rules: bool = False) -> list[PairedRound]:
    """Run ``rounds`` paired rounds (targeted arm, then its control) with a progress bar."""
    from flows.control import run_paired
    from flows.prefect_view import tagged
    from flows.round import next_round

    def runner(params: CampaignParams) -> RoundSummary:
        with tagged(params.campaign):
            return next_round(params)

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(f"campaign {campaign} with a {control} control", total=rounds)
        return run_paired(campaign, rounds, overrides, control, runner, lambda _: progress.advance(bar),
                          stop_rules=stop_rules)


LIFT_COLUMNS = ("round", "targeted after", "control after", "targeting lift", "95% interval", "targeted weaknesses")
"""Columns of the targeting-lift table."""


def lift_rows(paired: list[PairedRound]) -> list[list[str]]:
    """Targeting lift per round: targeted and control pass rates, the lift, its interval and the weaknesses."""
    rows: list[list[str]] = []
    for p in paired:
        c = p.comparison
        if c is None:
            continue
        moved = ", ".join(f"{w.grain} {w.before:.2f}->{w.after:.2f}" + ("" if w.fell else " (did not fall)")
                          for w in c.weaknesses[:3]) or "none targeted"
        rows.append([str(c.round_index), f"{c.targeted_after:.3f}", f"{c.control_after:.3f}", f"{c.lift:+.3f}",
                     f"[{c.low:+.3f}, {c.high:+.3f}]", moved])
    return rows


def campaign_control_line(settings: GymloopSettings, campaign: str, control: str) -> str:
    """The campaign's targeting lift against its control, with the interval, as one line."""
    from flows.control import campaign_comparison

    c = campaign_comparison(settings, campaign, control)
    verdict = ("targeting paid" if c.low > 0 else "the control did better" if c.high < 0
               else "no difference shown: the interval spans 0")
    return (f"targeting lift after round {c.round_index}: {c.targeted_after:.3f} targeted vs {c.control_after:.3f} "
            f"{control} = {c.lift:+.3f} (95% paired interval [{c.low:+.3f}, {c.high:+.3f}]): {verdict}")

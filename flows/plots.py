"""Campaign plots: held-out lift per round and weaknesses by round (PNG), each titled with its campaign.

matplotlib is imported when a plot is drawn, not with this module: commands that only read results start sooner.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

HEATMAP_NOTE = ("Share = failed held-out episodes showing the weakness kind (all its grains together) / all failed "
                "episodes; one episode can show several kinds, so a round's shares can sum above 1. Counts in "
                "brackets. Ranked by the last round.")
"""What the weakness heatmap measures, printed under it."""


def _pyplot() -> Any:
    """Matplotlib's pyplot on the file-only Agg backend (no display is ever opened)."""
    # matplotlib is heavy: loaded when a plot is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # once the Agg backend is chosen

    return plt


class RoundPoint(BaseModel):
    """One round's held-out results for the lift plot.

    Attributes:
        index: Round index.
        before: Held-out pass rate of the model going in.
        after: Held-out pass rate of the model coming out.
        lift: ``after - before``.
        low: Lower bound of the lift's interval.
        high: Upper bound of the lift's interval.
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    before: float
    after: float
    lift: float
    low: float
    high: float


class WeaknessCell(BaseModel):
    """One weakness in one round, for the heatmap.

    Attributes:
        share: Share of the round's failed episodes that show the weakness.
        count: Failed episodes that show it.
    """

    model_config = ConfigDict(extra="forbid")

    share: float
    count: int = 0


def lift_plot(points: Sequence[RoundPoint], path: Path, campaign: str = "") -> Path:
    """Plot pass rate before/after and lift with its interval per round, titled with the campaign."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained")
    fig.suptitle(f"Held-out pass rate and lift per round{f' — campaign {campaign}' if campaign else ''}")
    xs = [p.index for p in points]
    top.plot(xs, [p.before for p in points], "o--", label="before (model in)")
    top.plot(xs, [p.after for p in points], "o-", label="after (model out)")
    top.set_ylabel("held-out pass rate")
    values = [v for p in points for v in (p.before, p.after)] or [0.0, 1.0]
    top.set_ylim(max(0.0, min(values) - 0.1), min(1.0, max(values) + 0.1))
    top.legend()
    bottom.errorbar(xs, [p.lift for p in points],
                    yerr=[[p.lift - p.low for p in points], [p.high - p.lift for p in points]], fmt="o", capsize=4)
    bottom.axhline(0, color="grey", linewidth=0.8)
    bottom.set_ylabel("lift (after - before, 95% interval)")
    bottom.set_xlabel("round")
    bottom.set_xticks(xs)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def rank_kinds(cells: dict[str, dict[int, WeaknessCell]]) -> list[str]:
    """Weakness kinds ranked by their share in the last round, then by their total share over rounds."""
    rounds = sorted({r for by_round in cells.values() for r in by_round})
    last = rounds[-1] if rounds else 0

    def key(kind: str) -> tuple[float, float, str]:
        by_round = cells[kind]
        latest = by_round[last].share if last in by_round else 0.0
        return (-latest, -sum(c.share for c in by_round.values()), kind)

    return sorted(cells, key=key)


def weakness_heatmap(cells: dict[str, dict[int, WeaknessCell]], path: Path, campaign: str = "") -> Path:
    """Plot each weakness kind's share of failures (and count) per round, ranked, titled with the campaign."""
    kinds = rank_kinds(cells)
    rounds = sorted({r for by_round in cells.values() for r in by_round})
    empty = WeaknessCell(share=0.0)
    grid = [[cells[k].get(r, empty) for r in rounds] for k in kinds]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5 + 0.8 * max(1, len(rounds)), 2.4 + 0.45 * max(1, len(kinds))),
                           layout="constrained")
    image = ax.imshow([[c.share for c in row] for row in grid] or [[0.0]], aspect="auto", cmap="Reds", vmin=0,
                      vmax=1)
    ax.set_xticks(range(len(rounds)), [str(r) for r in rounds])
    ax.set_yticks(range(len(kinds)), kinds)
    ax.set_xlabel("round\n\n" + textwrap.fill(HEATMAP_NOTE, 80), fontsize=8)
    ax.set_title(f"Weaknesses by round{f' — campaign {campaign}' if campaign else ''}")
    for i, row in enumerate(grid):
        for j, cell in enumerate(row):
            ax.text(j, i, f"{cell.share:.2f} ({cell.count})", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="share of failed episodes")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

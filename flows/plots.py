"""Campaign plots: held-out lift per round and weakness share by round (PNG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402


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


def lift_plot(points: Sequence[RoundPoint], path: Path) -> Path:
    """Plot pass rate before/after and lift with its interval per round."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained")
    xs = [p.index for p in points]
    top.plot(xs, [p.before for p in points], "o--", label="before")
    top.plot(xs, [p.after for p in points], "o-", label="after")
    top.set_ylabel("held-out pass rate")
    top.set_ylim(0, 1)
    top.legend()
    bottom.errorbar(xs, [p.lift for p in points],
                    yerr=[[p.lift - p.low for p in points], [p.high - p.lift for p in points]], fmt="o", capsize=4)
    bottom.axhline(0, color="grey", linewidth=0.8)
    bottom.set_ylabel("lift (95% interval)")
    bottom.set_xlabel("round")
    bottom.set_xticks(xs)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def weakness_heatmap(shares: dict[str, dict[int, float]], path: Path) -> Path:
    """Plot each weakness kind's share of failures per round as a heatmap."""
    kinds = sorted(shares)
    rounds = sorted({r for by_round in shares.values() for r in by_round})
    matrix = [[shares[k].get(r, 0.0) for r in rounds] for k in kinds]
    fig, ax = plt.subplots(figsize=(4.5 + 0.8 * max(1, len(rounds)), 1.5 + 0.45 * max(1, len(kinds))),
                           layout="constrained")
    image = ax.imshow(matrix or [[0.0]], aspect="auto", cmap="Reds", vmin=0, vmax=1)
    ax.set_xticks(range(len(rounds)), [str(r) for r in rounds])
    ax.set_yticks(range(len(kinds)), kinds)
    ax.set_xlabel("round")
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="share of failures")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

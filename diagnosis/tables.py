"""The two ranked tables of a weakness report (kinds, then grains) and what each column means.

The Markdown report and ``gymloop diagnose`` print the same tables, so the same words explain them.
"""

from __future__ import annotations

from diagnosis.models import KindSummary, Weakness, WeaknessReport

KIND_COLUMNS = ("rank", "kind", "what goes wrong", "failures", "share (95% CI)", "per episode",
                "grains", "also secondary in")
"""Columns of the kinds table."""

GRAIN_COLUMNS = ("rank", "weakness (gym: tool)", "failures", "share (95% CI)", "per episode",
                 "reward lost", "learnability", "trend", "impact", "also secondary in")
"""Columns of the grains table."""

COLUMN_NOTES: dict[str, str] = {
    "rank": "kinds are ranked by the failures they explain, all their grains together; a grain's rank is its "
            "kind's rank, a dot, and its rank within the kind (by impact)",
    "kind": "the weakness kind a detector names (novel: failures no detector explains, grouped by clustering)",
    "what goes wrong": "the kind in words",
    "weakness (gym: tool)": "what goes wrong, and the grain its failures are at: the gym and the tool the evidence "
                            "names (several tools, no tool call, or several gyms when they differ)",
    "failures": "failed episodes attributed to the model that the weakness explains: each failure counts once, for "
                "its primary kind (the first in the order of an agent's work: which record, what comes first, the "
                "arguments, current data, fetching, attempting the work, other changes, the reply, recovery)",
    "also secondary in": "failed episodes that show the weakness too, but that another kind explains first (a "
                         "skipped prerequisite after an unfetched search: the search is secondary); the factory "
                         "can aim at it",
    "share (95% CI)": "the share of failures: failures / all of the model's failed episodes, with a 95% bootstrap "
                      "interval",
    "per episode": "failures per diagnosed episode (passed and failed): comparable across rounds whose pass rates "
                   "differ",
    "grains": "how many weaknesses the kind's failures split into, one per gym and tool where the evidence names "
              "one (a grain is what the factory and the curriculum aim at)",
    "reward lost": "mean of 1 - score over the weakness's failed episodes (the share of the task's checks that "
                   "failed)",
    "learnability": "share of the weakness's episodes whose task the model solves at least sometimes (this round "
                    "or earlier): practice helps most there",
    "trend": "change of the share since the previous round (0 in a first round)",
    "impact": "share x reward lost x (0.5 + 0.5 x learnability) x (1 + trend, kept within 0.5-1.5): the expected "
              "gain of practising the weakness; it orders a kind's grains",
}
"""What each column of the two tables means."""


def _interval(share: float, low: float, high: float) -> str:
    return f"{share:.1%} ({low:.1%}–{high:.1%})"


def kind_rows(report: WeaknessReport) -> list[list[str]]:
    """One row per kind, in rank order (``KIND_COLUMNS``)."""
    return [_kind_row(k) for k in report.kinds]


def _kind_row(k: KindSummary) -> list[str]:
    return [str(k.rank), k.kind, k.label, str(k.count), _interval(k.share, k.share_interval.low, k.share_interval.high),
            f"{k.rate:.3f}", str(len(k.grains)), str(k.secondary)]


def grain_rank(w: Weakness) -> str:
    """A grain's rank as the tables print it: ``<kind rank>.<rank within the kind>``."""
    return f"{w.kind_rank}.{w.grain_rank}"


def grain_rows(report: WeaknessReport) -> list[list[str]]:
    """One row per weakness at its grain, kind by kind (``GRAIN_COLUMNS``)."""
    return [[grain_rank(w), w.label, str(w.count), _interval(w.share, w.share_interval.low, w.share_interval.high),
             f"{w.rate:.3f}", f"{w.mean_reward_lost:.2f}", f"{w.learnability:.2f}", f"{w.trend:+.3f}",
             f"{w.impact:.4f}", str(w.secondary)] for w in report.weaknesses]


def secondary_line(report: WeaknessReport) -> str:
    """One sentence on the failures that show a second kind (each counted once, for its primary kind)."""
    shown = ", ".join(f"{kind} {n}" for kind, n in sorted(report.secondary_counts.items(), key=lambda i: (-i[1], i[0])))
    return (f"Failures that also show a secondary kind (counted for their primary kind; the factory can aim at "
            f"either): {shown}.")


def column_notes(columns: tuple[str, ...]) -> list[tuple[str, str]]:
    """(column, meaning) for each explained column of ``columns``."""
    return [(column, COLUMN_NOTES[column]) for column in columns if column in COLUMN_NOTES]

"""Markdown rendering of a WeaknessReport."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnosis.tables import (
    GRAIN_COLUMNS,
    KIND_COLUMNS,
    column_notes,
    grain_rank,
    grain_rows,
    kind_rows,
    secondary_line,
)

if TYPE_CHECKING:
    from diagnosis.models import WeaknessReport


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(columns: tuple[str, ...], rows: list[list[str]], right: int) -> list[str]:
    """A Markdown table; columns from index ``right`` on are right-aligned, except the label columns."""
    align = ["---:" if i >= right else "---" for i in range(len(columns))]
    return ["| " + " | ".join(columns) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)]


def render_markdown(report: WeaknessReport) -> str:
    """Return the report as Markdown: a summary, the kinds, the grains, the columns explained, details, clusters."""
    title = f"# Weakness report{f' — round {report.round_id}' if report.round_id else ''}"
    lines = [
        title, "",
        f"Model `{report.model_ref or 'unknown'}`: {report.episodes} episodes diagnosed, {report.passed} passed, "
        f"{report.failures} failed because of the model, {report.invalid} invalid.",
    ]
    if report.other_failures:
        lines.append("Failures that are not the model's (not diagnosed): "
                     + ", ".join(f"{k} {v}" for k, v in report.other_failures.items()) + ".")
    if report.skipped:
        lines.append("Skipped records: " + ", ".join(f"{k} {v}" for k, v in report.skipped.items()) + ".")
    if report.secondary_counts:
        lines.append(secondary_line(report))
    lines.append("")
    if not report.weaknesses:
        lines.append("No weaknesses: the round has no agent failures to diagnose.")
        return "\n".join(lines) + "\n"
    lines += ["## Weakness kinds", "", "Ranked by the failures each kind explains, all its grains together.", ""]
    lines += _table(KIND_COLUMNS, kind_rows(report), right=3)
    lines += ["", "## Weaknesses by grain", "",
              "Each kind's failures at their grain (gym and tool), kind by kind, ranked by impact within a kind.", ""]
    lines += _table(GRAIN_COLUMNS, grain_rows(report), right=2)
    lines += ["", "## What the columns mean", ""]
    seen: set[str] = set()
    for column, note in column_notes(KIND_COLUMNS) + column_notes(GRAIN_COLUMNS):
        if column not in seen:
            seen.add(column)
            lines.append(f"- **{column}**: {note}.")
    for w in report.weaknesses:
        lines += ["", f"## {grain_rank(w)}. {_cell(w.label)} (`{w.kind}`)", "", w.description, ""]
        lines.append(f"- Domains: {', '.join(w.domains) or '—'}; tools: {', '.join(w.tools) or '—'}")
        lines.append(f"- Focus tags: {', '.join(w.focus_tags) or '—'}; knobs: "
                     + (", ".join(f"`{k}={v}`" for k, v in w.knobs.items()) or "—"))
        if w.secondary:
            lines.append(f"- Also secondary in {w.secondary} failed episode(s) another kind explains first")
        lines.append(f"- Example episodes: {', '.join(f'`{e}`' for e in w.example_episode_ids) or '—'}")
        for ev in w.evidence[:3]:
            where = f"step {ev.step} `{ev.tool}`" if ev.step is not None else "reply/state"
            arg = f" argument `{ev.argument}`" if ev.argument else ""
            lines.append(f"  - {where}{arg}: {_cell(ev.note)}")
    if report.clusters:
        lines += ["", "## Clusters", "", f"Method: {report.clustering.get('method', '?')}, "
                  f"{report.clustering.get('clusters', len(report.clusters))} clusters found; tag coverage is the "
                  "share of a cluster's episodes some detector tagged (novel: below half).", "",
                  "| id | size | label | tag coverage | novel |", "| ---: | ---: | --- | ---: | --- |"]
        for c in report.clusters:
            novel = "yes" if c.novel else ""
            lines.append(f"| {c.id} | {c.size} | {_cell(c.label)} | {c.tag_coverage:.0%} | {novel} |")
    return "\n".join(lines) + "\n"

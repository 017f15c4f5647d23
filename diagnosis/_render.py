"""Markdown rendering of a WeaknessReport."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from diagnosis.models import WeaknessReport


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: WeaknessReport) -> str:
    """Return the report as Markdown: a summary, the ranked table, each weakness and the clusters."""
    title = f"# Weakness report{f' — round {report.round_id}' if report.round_id else ''}"
    lines = [
        title, "",
        f"Model `{report.model_ref or 'unknown'}`: {report.episodes} episodes, {report.passed} passed, "
        f"{report.failures} agent failures, {report.invalid} invalid.",
    ]
    if report.other_failures:
        lines.append("Not the agent's failures: " + ", ".join(f"{k} {v}" for k, v in report.other_failures.items())
                     + ".")
    if report.skipped:
        lines.append("Skipped records: " + ", ".join(f"{k} {v}" for k, v in report.skipped.items()) + ".")
    lines.append("")
    if not report.weaknesses:
        lines.append("No weaknesses: the round has no agent failures to diagnose.")
        return "\n".join(lines) + "\n"
    lines += [
        "| rank | kind | label | share (95% CI) | reward lost | learnability | trend | impact | count |",
        "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for w in report.weaknesses:
        ci = w.share_interval
        lines.append(
            f"| {w.rank} | {w.kind} | {_cell(w.label)} | {w.share:.1%} ({ci.low:.1%}–{ci.high:.1%}) "
            f"| {w.mean_reward_lost:.2f} | {w.learnability:.2f} | {w.trend:+.3f} | {w.impact:.4f} | {w.count} |"
        )
    for w in report.weaknesses:
        lines += ["", f"## {w.rank}. {_cell(w.label)} (`{w.kind}`)", "", w.description, ""]
        lines.append(f"- Domains: {', '.join(w.domains) or '—'}; tools: {', '.join(w.tools) or '—'}")
        lines.append(f"- Focus tags: {', '.join(w.focus_tags) or '—'}; knobs: "
                     + (", ".join(f"`{k}={v}`" for k, v in w.knobs.items()) or "—"))
        lines.append(f"- Example episodes: {', '.join(f'`{e}`' for e in w.example_episode_ids) or '—'}")
        for ev in w.evidence[:3]:
            where = f"step {ev.step} `{ev.tool}`" if ev.step is not None else "reply/state"
            arg = f" argument `{ev.argument}`" if ev.argument else ""
            lines.append(f"  - {where}{arg}: {_cell(ev.note)}")
    if report.clusters:
        lines += ["", "## Clusters", "", f"Method: {report.clustering.get('method', '?')}, "
                  f"{report.clustering.get('clusters', len(report.clusters))} clusters found.", "",
                  "| id | size | label | tag coverage | novel |", "| ---: | ---: | --- | ---: | --- |"]
        for c in report.clusters:
            novel = "yes" if c.novel else ""
            lines.append(f"| {c.id} | {c.size} | {_cell(c.label)} | {c.tag_coverage:.0%} | {novel} |")
    return "\n".join(lines) + "\n"

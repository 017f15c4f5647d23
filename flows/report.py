"""A campaign's Markdown report: lift per round, weaknesses by round, and the plots."""

from __future__ import annotations

from pathlib import Path

from diagnosis import WeaknessReport
from flows.models import RoundSummary
from flows.plots import HEATMAP_NOTE, RoundPoint, WeaknessCell, lift_plot, weakness_heatmap

LIFT_PNG, WEAKNESS_PNG = "lift_per_round.png", "weaknesses_by_round.png"
"""File names of the campaign's plots (in its folder and in MLflow)."""


def campaign_summaries(folder: Path, up_to: int | None = None) -> list[RoundSummary]:
    """Round summaries stored under a campaign's folder, by round (those up to round ``up_to`` when given).

    Raises:
        FileNotFoundError: The folder holds no finished round, naming it.
    """
    paths = sorted(folder.glob("round-*/summary.json"))
    summaries = [RoundSummary.model_validate_json(p.read_text()) for p in paths]
    summaries = [s for s in summaries if up_to is None or s.round_index <= up_to]
    if not summaries:
        raise FileNotFoundError(f"no finished round under {folder}")
    return summaries


def campaign_series(folder: Path, summaries: list[RoundSummary]) -> tuple[list[RoundPoint],
                                                                          dict[str, dict[int, WeaknessCell]]]:
    """The lift points and weakness cells of a campaign's rounds, for its plots."""
    points = [RoundPoint(index=s.round_index, before=s.before, after=s.after, lift=s.lift, low=s.lift_low,
                         high=s.lift_high) for s in summaries]
    cells: dict[str, dict[int, WeaknessCell]] = {}
    for s in summaries:
        path = folder / f"round-{s.round_index:03d}" / "weakness_report.json"
        if path.is_file():
            for w in WeaknessReport.from_json(path.read_text()).weaknesses:
                cells.setdefault(w.kind, {})[s.round_index] = WeaknessCell(share=w.share, count=w.count)
    return points, cells


def write_plots(folder: Path, campaign: str, summaries: list[RoundSummary], out: Path) -> list[Path]:
    """Write the lift and weakness plots of ``summaries`` into ``out``; return their paths."""
    points, cells = campaign_series(folder, summaries)
    return [lift_plot(points, out / LIFT_PNG, campaign), weakness_heatmap(cells, out / WEAKNESS_PNG, campaign)]


def write_report(folder: Path, campaign: str, headline: str = "") -> Path:
    """Write ``report.md`` (with its plots) for the campaign whose rounds are under ``folder``.

    Args:
        folder: The campaign's folder.
        campaign: Campaign name.
        headline: A line stated under the title (e.g. the campaign's lift with its interval).
    """
    summaries = campaign_summaries(folder)
    lift_png, heat_png = write_plots(folder, campaign, summaries, folder)
    first, last = summaries[0], summaries[-1]
    lines = [
        f"# Campaign {campaign}",
        "",
        f"Rounds {first.round_index} to {last.round_index}; held-out pass rate {first.before:.3f} -> "
        f"{last.after:.3f} ({last.after - first.before:+.3f}). Model {first.model_in} -> {last.model_out}.",
        "",
        *([headline, ""] if headline else []),
        "| round | model in | model out | before | after | lift | 95% interval | invalid before/after | "
        "before, after with invalid as failed | top weaknesses | variants | wave |",
        "| ---: | --- | --- | ---: | ---: | ---: | --- | ---: | --- | --- | ---: | ---: |",
    ]
    for s in summaries:
        m = s.metrics
        lines.append(
            f"| {s.round_index} | {s.model_in} | {s.model_out} | {s.before:.3f} | {s.after:.3f} | {s.lift:+.3f} | "
            f"[{s.lift_low:+.3f}, {s.lift_high:+.3f}] | {m.get('invalid_episodes_before', 0):.0f}/"
            f"{m.get('invalid_episodes_after', 0):.0f} | "
            f"{m.get('heldout_pass_rate_before_invalid_failed', s.before):.3f}, "
            f"{m.get('heldout_pass_rate_after_invalid_failed', s.after):.3f} | {', '.join(s.weaknesses[:3])} | "
            f"{s.variants} | {s.wave_size} |"
        )
    causes = sorted({k.split("/", 1)[1] for s in summaries for k in s.metrics if k.startswith("invalid_after/")
                     or k.startswith("invalid_before/")})
    lines += ["", "Invalid episodes are those the infrastructure failed (the model's server unreachable or erroring "
              "after retries, a crash of gymloop's); they are left out of the pass rates, which the last column "
              "shows with them counted as failed" + (f". Causes: {', '.join(causes)}." if causes else ".")]
    control = folder / "control.md"
    if control.is_file():
        lines += ["", control.read_text().rstrip("\n")]
    lines += ["", f"![lift per round]({lift_png.name})", "", f"![weaknesses by round]({heat_png.name})", "",
              HEATMAP_NOTE, ""]
    out = folder / "report.md"
    out.write_text("\n".join(lines))
    return out

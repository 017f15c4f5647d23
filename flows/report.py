"""A campaign's Markdown report: lift per round, weaknesses by round, and the plots."""

from __future__ import annotations

from pathlib import Path

from diagnosis import WeaknessReport
from flows.models import RoundSummary
from flows.plots import RoundPoint, lift_plot, weakness_heatmap


def campaign_summaries(folder: Path) -> list[RoundSummary]:
    """Round summaries stored under a campaign's folder, by round.

    Raises:
        FileNotFoundError: The folder holds no finished round, naming it.
    """
    paths = sorted(folder.glob("round-*/summary.json"))
    if not paths:
        raise FileNotFoundError(f"no finished round under {folder}")
    return [RoundSummary.model_validate_json(p.read_text()) for p in paths]


def write_report(folder: Path, campaign: str, headline: str = "") -> Path:
    """Write ``report.md`` (with its plots) for the campaign whose rounds are under ``folder``.

    Args:
        folder: The campaign's folder.
        campaign: Campaign name.
        headline: A line stated under the title (e.g. the campaign's lift with its interval).
    """
    summaries = campaign_summaries(folder)
    points = [RoundPoint(index=s.round_index, before=s.before, after=s.after, lift=s.lift, low=s.lift_low,
                         high=s.lift_high) for s in summaries]
    shares: dict[str, dict[int, float]] = {}
    for s in summaries:
        path = folder / f"round-{s.round_index:03d}" / "weakness_report.json"
        if path.is_file():
            for w in WeaknessReport.from_json(path.read_text()).weaknesses:
                shares.setdefault(w.kind, {})[s.round_index] = w.share
    lift_png = lift_plot(points, folder / "lift_per_round.png")
    heat_png = weakness_heatmap(shares, folder / "weaknesses_by_round.png")
    first, last = summaries[0], summaries[-1]
    lines = [
        f"# Campaign {campaign}",
        "",
        f"{len(summaries)} rounds; held-out pass rate {first.before:.3f} -> {last.after:.3f} "
        f"({last.after - first.before:+.3f}).",
        "",
        *([headline, ""] if headline else []),
        "| round | model in | model out | before | after | lift | 95% interval | top weaknesses | variants | wave |",
        "| ---: | --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for s in summaries:
        lines.append(
            f"| {s.round_index} | {s.model_in} | {s.model_out} | {s.before:.3f} | {s.after:.3f} | {s.lift:+.3f} | "
            f"[{s.lift_low:+.3f}, {s.lift_high:+.3f}] | {', '.join(s.weaknesses[:3])} | {s.variants} | "
            f"{s.wave_size} |"
        )
    control = folder / "control.md"
    if control.is_file():
        lines += ["", control.read_text().rstrip("\n")]
    lines += ["", f"![lift per round]({lift_png.name})", "", f"![weaknesses by round]({heat_png.name})", ""]
    out = folder / "report.md"
    out.write_text("\n".join(lines))
    return out

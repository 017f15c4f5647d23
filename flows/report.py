"""A campaign's Markdown report: lift per round, weaknesses by round, and the plots, from the registry."""

from __future__ import annotations

from pathlib import Path

from diagnosis import WeaknessReport
from flows import transfer, transfer_view
from flows.models import RoundSummary
from flows.plots import HEATMAP_NOTE, RoundPoint, WeaknessCell, lift_plot, weakness_heatmap
from registry import TARGETED_ARM, Registry

LIFT_PNG, WEAKNESS_PNG = "lift_per_round.png", "weaknesses_by_round.png"
"""File names of the campaign's plots (in its folder and in MLflow)."""

def campaign_summaries(registry: Registry, campaign: str, arm: str = TARGETED_ARM,
                       up_to: int | None = None) -> list[RoundSummary]:
    """The summaries of an arm's finished rounds, by round (those up to round ``up_to`` when given).

    Raises:
        ValueError: The campaign is not in the registry, or the arm has no finished round, naming them.
    """
    info = registry.find_campaign(campaign)
    if info is None:
        raise ValueError(f"campaign {campaign!r} is not in {registry.display_url} (list them: gymloop campaigns)")
    summaries = [RoundSummary.model_validate(r.details["summary"]) for r in registry.rounds(info.id, arm=arm)
                 if r.status == "finished" and "summary" in r.details and (up_to is None or r.index <= up_to)]
    if not summaries:
        label = campaign if arm == TARGETED_ARM else f"{campaign} ({arm} arm)"
        raise ValueError(f"campaign {label} has no finished round in {registry.display_url}")
    return summaries


def round_report(registry: Registry, round_id: int) -> WeaknessReport | None:
    """A round's weakness report, if one was recorded."""
    data = registry.weakness_report(round_id)
    return WeaknessReport.model_validate(data) if data is not None else None


def campaign_series(registry: Registry, summaries: list[RoundSummary]) -> tuple[list[RoundPoint],
                                                                              dict[str, dict[int, WeaknessCell]]]:
    """The lift points and weakness cells of a campaign's rounds, for its plots."""
    points = [RoundPoint(index=s.round_index, before=s.before, after=s.after, lift=s.lift, low=s.lift_low,
                         high=s.lift_high) for s in summaries]
    cells: dict[str, dict[int, WeaknessCell]] = {}
    for s in summaries:
        report = round_report(registry, s.round_id)
        for k in report.kinds if report is not None else []:
            cells.setdefault(k.kind, {})[s.round_index] = WeaknessCell(share=k.share, count=k.count)
    return points, cells


def write_plots(registry: Registry, campaign: str, summaries: list[RoundSummary], out: Path) -> list[Path]:
    """Write the lift and weakness plots of ``summaries`` into ``out``; return their paths."""
    points, cells = campaign_series(registry, summaries)
    return [lift_plot(points, out / LIFT_PNG, campaign), weakness_heatmap(cells, out / WEAKNESS_PNG, campaign)]


def write_report(registry: Registry, folder: Path, campaign: str, headline: str = "",
                 arm: str = TARGETED_ARM, extra: str = "", seed: int = 0) -> Path:
    """Write ``report.md`` (with its plots) for a campaign's arm into ``folder``.

    Its tables are narrow (a terminal of 80 columns shows each whole, see ``flows.report_view``): pass rates and
    lifts, then the models, then what each round practised; invalid episodes get their own table when there are any.

    Args:
        registry: The registry holding the campaign.
        folder: Where the report and its plots go.
        campaign: Campaign name.
        headline: A line stated under the title (e.g. the campaign's lift with its interval).
        arm: The arm reported on.
        extra: A Markdown section added after the rounds (e.g. the targeting lift against a control).
        seed: Seed of the transfer suites' campaign intervals (the campaign's ``seed`` setting).

    Raises:
        ValueError: The campaign is not in the registry, or the arm has no finished round.
    """
    summaries = campaign_summaries(registry, campaign, arm)
    folder.mkdir(parents=True, exist_ok=True)
    title = campaign if arm == TARGETED_ARM else f"{campaign} ({arm} arm)"
    lift_png, heat_png = write_plots(registry, title, summaries, folder)
    last = summaries[-1]
    first = next(s for s in summaries if s.baseline == last.baseline)
    kept = best_summary([s for s in summaries if s.baseline == last.baseline], last=True)
    after = kept.after if kept is not None else first.before
    best = best_summary(summaries)
    lines = [
        f"# Campaign {title}",
        "",
        f"Rounds {first.round_index} to {last.round_index}: held-out pass rate {first.before:.3f} -> "
        f"{after:.3f} ({after - first.before:+.3f})"
        + ("" if kept is last else " (the last promoted model's)" if kept is not None else " (no round promoted)")
        + (f", in baseline {last.baseline} (the rounds before it are measured against another)." if first is not
           summaries[0] else "."),
        "",
        *([headline, ""] if headline else []),
        f"Best round: {best.round_index} (held-out pass rate {best.after:.3f} after it)." if best is not None
        else "Best round: none (no round's model was promoted).",
        "",
        *_baselines_section(registry, campaign, summaries),
        "## Pass rates",
        "",
        *_pass_rates(summaries),
        "",
        *_flips_section(summaries),
        "## Models",
        "",
        f"Round {first.round_index} started from `{first.model_in}`; each round trains the last promoted model "
        "(a round's model is promoted unless it falls outside the promotion bounds).",
        "",
        "| round | model out | promoted |",
        "| ---: | --- | --- |",
        *(f"| {s.round_index} | {s.model_out} | {'yes' if s.promotion.promoted else 'no'} |" for s in summaries),
        "",
        *(f"- round {s.round_index} not promoted: {s.promotion.reason}" for s in summaries
          if not s.promotion.promoted),
        *([""] if any(not s.promotion.promoted for s in summaries) else []),
        "## What each round practised",
        "",
        *(f"- round {s.round_index}: weaknesses {', '.join(s.weaknesses[:3]) or 'none'}; {s.variants} variant "
          f"pack{'s' if s.variants != 1 else ''} added; a wave of {s.wave_size} tasks" for s in summaries),
        "",
        *transfer_view.report_section(summaries, transfer.campaign_results(registry, summaries, seed)),
        *_invalid_section(summaries),
    ]
    if extra:
        lines += [extra.rstrip("\n"), ""]
    lines += [f"![lift per round]({lift_png.name})", "", f"![weaknesses by round]({heat_png.name})", "",
              HEATMAP_NOTE, ""]
    out = folder / "report.md"
    out.write_text("\n".join(lines))
    return out


def _pass_rates(summaries: list[RoundSummary]) -> list[str]:
    """The pass rates table: a baseline column when the rounds span more than one baseline."""
    def rates(s: RoundSummary) -> str:
        return f"| {s.before:.3f} | {s.after:.3f} | {s.lift:+.3f} | [{s.lift_low:+.3f}, {s.lift_high:+.3f}] |"

    if len({s.baseline for s in summaries}) == 1:
        return ["| round | before | after | lift | 95% interval |", "| ---: | ---: | ---: | ---: | --- |",
                *(f"| {s.round_index} {rates(s)}" for s in summaries)]
    return ["| round | baseline | before | after | lift | 95% interval |",
            "| ---: | ---: | ---: | ---: | ---: | --- |",
            *(f"| {s.round_index} | {s.baseline} {rates(s)}" for s in summaries)]


def _baselines_section(registry: Registry, campaign: str, summaries: list[RoundSummary]) -> list[str]:
    """Where each baseline starts and why, when the rounds span more than one (nothing otherwise)."""
    if len({s.baseline for s in summaries}) == 1:
        return []
    return ["## Baselines", "",
            "A change of the gyms or of how rounds are measured was accepted: each baseline's rounds are measured "
            "against its own held-out suite, and lifts are not paired across baselines.", "",
            *(f"- baseline {b.number} from round {b.first_round}: "
              + (f"accepted {b.change}" if b.change else "the campaign's first") for b in registry.baselines(campaign)),
            ""]


def best_summary(summaries: list[RoundSummary], last: bool = False) -> RoundSummary | None:
    """The promoted round whose model did best on the held-out suite (ties go to the later round).

    Args:
        summaries: The rounds.
        last: The last promoted round instead.

    Returns:
        The round, or ``None`` when no round was promoted.
    """
    promoted = [s for s in summaries if s.promotion.promoted]
    if not promoted:
        return None
    return promoted[-1] if last else max(promoted, key=lambda s: (s.after, s.round_index))


def _flips_section(summaries: list[RoundSummary]) -> list[str]:
    """The held-out tasks each round flipped, and each template's flips (the templates with a flip)."""
    def count(s: RoundSummary) -> str:
        f = s.flips
        return "| - | - | - |" if f is None else f"| {f.tasks} | {f.pass_to_fail} | {f.fail_to_pass} |"

    rows = [f"| {s.round_index} {count(s)} {s.lift:+.3f} | {'yes' if s.promotion.promoted else 'no'} |"
            for s in summaries]
    templates = [f"| {s.round_index} | {name} | {f.tasks} | {f.pass_to_fail} | {f.fail_to_pass} |"
                 for s in summaries for name, f in s.template_flips.items() if f.pass_to_fail or f.fail_to_pass]
    return ["## Flips", "",
            "Held-out tasks each round flipped, over the tasks its lift pairs (a task passes when at least half of its "
            "episodes pass): a lift nets the tasks lost (pass->fail) against those gained (fail->pass).", "",
            "| round | tasks | pass->fail | fail->pass | lift | promoted |",
            "| ---: | ---: | ---: | ---: | ---: | --- |", *rows, "",
            *(["By template (those with a flip):", "", "| round | template | tasks | pass->fail | fail->pass |",
               "| ---: | --- | ---: | ---: | ---: |", *templates] if templates
              else ["No template had a held-out task flip."]), ""]


def _invalid_section(summaries: list[RoundSummary]) -> list[str]:
    """The invalid episodes' table, when a round had any (the pass rates leave them out)."""
    def count(s: RoundSummary, stage: str) -> int:
        return int(s.metrics.get(f"invalid_episodes_{stage}", 0))

    if not any(count(s, "before") or count(s, "after") for s in summaries):
        return ["No held-out episode was invalid (the infrastructure failed none).", ""]
    causes = sorted({k.split("/", 1)[1] for s in summaries for k in s.metrics
                     if k.startswith(("invalid_after/", "invalid_before/"))})
    rows = [f"| {s.round_index} | {count(s, 'before')}/{count(s, 'after')} | "
            f"{s.metrics.get('heldout_pass_rate_before_invalid_failed', s.before):.3f} | "
            f"{s.metrics.get('heldout_pass_rate_after_invalid_failed', s.after):.3f} |" for s in summaries]
    return ["## Invalid episodes", "",
            "Invalid episodes are those the infrastructure failed (the model's server unreachable or erroring after "
            "retries, a crash of gymloop's): the pass rates above leave them out; the columns 'before failed' and "
            "'after failed' count them as failed" + (f". Causes: {', '.join(causes)}." if causes else "."), "",
            "| round | invalid before/after | before failed | after failed |", "| ---: | ---: | ---: | ---: |",
            *rows, ""]

"""Comparing a campaign's arms: targeting lift against a control, and the targeted weaknesses before and after.

A campaign with a control has two arms in the registry, run by the campaign driver (``flows.campaign``) from the
same registered model with the same budget and judged on the same held-out suite: ``targeted`` and the control
(``uniform``: uniform waves over the base pool, no variants; ``random-variants``: as many untargeted variants,
uniform waves). After each round both arms finished, the targeting lift is the targeted arm's held-out pass
rate minus the control's, with a paired bootstrap interval over the held-out tasks; it goes to the round table,
MLflow (the targeted arm's round run) and the report, with each targeted weakness's failures per held-out
episode before and after the round.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arena.core.metrics import compute_metrics, paired_lift
from curriculum import grain_label
from diagnosis import Weakness, WeaknessReport
from flows.models import ArmComparison, WeaknessChange
from flows.outcomes import finished_rounds, model_outcomes, stage_model
from flows.packs import load_pack
from flows.registry_access import open_registry
from flows.report import round_report
from flows.rollouts import EVAL_AFTER
from flows.round_files import arm_dir, write_json
from flows.settings import GymloopSettings
from flows.waves import recorded_wave
from flows.weaknesses import diagnose_round
from registry import TARGETED_ARM, Registry, RoundInfo

CONTROL_MD = "control.md"
"""The control section of a campaign's report, written as an artifact in the campaign's folder."""


def controls(registry: Registry, campaign: str) -> list[str]:
    """The control arms of a campaign in the registry."""
    info = registry.find_campaign(campaign)
    return [a.name for a in registry.arms(info.id) if a.name != TARGETED_ARM] if info is not None else []


def _finished(registry: Registry, campaign: str, arm: str) -> dict[int, RoundInfo]:
    return {r.index: r for r in finished_rounds(registry, campaign, arm)}


def _rate(weakness: Weakness, report: WeaknessReport) -> float:
    return weakness.rate if weakness.rate > 0 else weakness.count / max(report.episodes, 1)


def _same_grain(a: Weakness, b: Weakness) -> bool:
    return (a.kind, a.domain, a.tool) == (b.kind, b.domain, b.tool)


def weakness_changes(settings: GymloopSettings, registry: Registry, round_info: RoundInfo) -> list[WeaknessChange]:
    """The targeted weaknesses of a round, with their failures per held-out episode before and after it.

    Before: the round's weakness report. After: the round's re-evaluation, diagnosed the same way.
    """
    report, recorded = round_report(registry, round_info.id), registry.wave(round_info.id)
    if report is None or recorded is None:
        return []
    wave = recorded_wave(recorded, round_info.index)
    targeted = {e.grain or e.weakness for e in wave.entries if e.source == "targeted"}
    chosen = [w for w in report.weaknesses if grain_label(w) in targeted or w.kind in targeted]
    if not chosen:
        return []
    records = sorted(registry.round_episodes(round_info.id, stage=EVAL_AFTER,
                                             model_id=stage_model(registry, round_info.id, EVAL_AFTER)),
                     key=lambda r: (r.pack_id, r.task_id, r.seed, r.attempt))
    packs = [load_pack(registry, pid) for pid in sorted({r.pack_id for r in records})]
    after = diagnose_round(records, packs, report, round_info.id, settings.curriculum.seed)
    out = []
    for w in chosen:
        match = next((a for a in after.weaknesses if _same_grain(a, w)), None)
        before_rate, after_rate = _rate(w, report), _rate(match, after) if match is not None else 0.0
        out.append(WeaknessChange(grain=grain_label(w), before=round(before_rate, 4), after=round(after_rate, 4),
                                  fell=after_rate < before_rate))
    return out


def compare_round(settings: GymloopSettings, registry: Registry, campaign: str, control: str,
                  index: int) -> ArmComparison:
    """Targeting lift after round ``index``: targeted minus control on the same held-out tasks.

    Each arm is measured by its model after the round: its last promoted model by then (``flows.promotion``; the
    round's own model unless the round was not promoted).

    Raises:
        ValueError: One arm has not finished the round.
    """
    after, rounds = {}, {}
    for arm in (TARGETED_ARM, control):
        found = _finished(registry, campaign, arm).get(index)
        if found is None:
            raise ValueError(f"campaign {campaign!r} ({arm} arm) has not finished round {index}")
        rounds[arm] = found
        after[arm] = model_outcomes(registry, campaign, arm, index)
    lift = paired_lift(after[control], after[TARGETED_ARM], seed=settings.curriculum.seed)
    return ArmComparison(
        round_index=index, control=control,
        targeted_after=compute_metrics(after[TARGETED_ARM], rounds=1).pass_rate.value,
        control_after=compute_metrics(after[control], rounds=1).pass_rate.value,
        lift=lift.value, low=lift.low, high=lift.high,
        weaknesses=weakness_changes(settings, registry, rounds[TARGETED_ARM]),
    )


def comparable_rounds(registry: Registry, campaign: str, control: str) -> list[int]:
    """The rounds both the targeted arm and ``control`` finished, in order."""
    return sorted(set(_finished(registry, campaign, TARGETED_ARM)) & set(_finished(registry, campaign, control)))


def comparison_metrics(comparison: ArmComparison) -> dict[str, float]:
    """The targeting lift as MLflow metrics of the targeted arm's round.

    Targeted minus control pass rate after the round, its paired 95% interval, and the control's pass rate after it.
    """
    return {"tgt_lift": comparison.lift, "tgt_low": comparison.low, "tgt_high": comparison.high,
            "control_after": comparison.control_after}


def targeting_verdict(comparison: ArmComparison) -> str:
    """Whether targeting paid, read from the targeting lift's paired interval."""
    if comparison.low > 0:
        return "targeting paid"
    if comparison.high < 0:
        return f"the {comparison.control} control did better"
    return "no difference shown: the interval spans 0"


def targeting_line(comparison: ArmComparison) -> str:
    """The one answer to "did targeting pay": targeted minus control after a round, with its paired interval.

    ``gymloop round`` / ``campaign``, ``compare``, ``report``, the Prefect artifact and MLflow (``tgt_lift``) all
    state this comparison, computed once by ``compare_round``.
    """
    c = comparison
    return (f"targeting lift after round {c.round_index}: {c.targeted_after:.3f} targeted - {c.control_after:.3f} "
            f"{c.control} = {c.lift:+.3f} (95% paired interval [{c.low:+.3f}, {c.high:+.3f}]): "
            f"{targeting_verdict(c)}")


def control_section(comparisons: Sequence[ArmComparison]) -> str:
    """Markdown: targeting lift per round with its interval, and each targeted weakness before and after."""
    if not comparisons:
        return ""
    control = comparisons[0].control
    lines = [
        f"## Targeting against the {control} control",
        "",
        f"Did targeting pay? {targeting_line(comparisons[-1])}.",
        "",
        f"Both arms ran the same budget from the same starting model on the same held-out suite; targeting lift "
        f"= targeted - {control} held-out pass rate after the round, 95% paired bootstrap interval over tasks.",
        "",
        f"| round | targeted | {control} | targeting lift | 95% interval |",
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    for c in comparisons:
        lines.append(f"| {c.round_index} | {c.targeted_after:.3f} | {c.control_after:.3f} | {c.lift:+.3f} | "
                     f"[{c.low:+.3f}, {c.high:+.3f}] |")
    lines += ["", "Targeted weaknesses, failures per held-out episode before -> after the round:", ""]
    for c in comparisons:
        if not c.weaknesses:
            lines.append(f"- round {c.round_index}: no weakness was targeted")
            continue
        parts = [f"{w.grain} {w.before:.3f} -> {w.after:.3f}" + ("" if w.fell else " (**did not fall**)")
                 for w in c.weaknesses]
        lines.append(f"- round {c.round_index}: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def write_control_section(settings: GymloopSettings, campaign: str, comparisons: Sequence[ArmComparison]) -> Path:
    """Write the control section (Markdown and JSON) in the campaign's folder, as artifacts."""
    folder = arm_dir(settings, campaign)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "control.json", [c.model_dump(mode="json") for c in comparisons])
    path = folder / CONTROL_MD
    path.write_text(control_section(comparisons))
    return path


def log_comparison(settings: GymloopSettings, campaign: str, comparison: ArmComparison) -> None:
    """Log the targeting lift on the targeted arm's round run and, as the campaign's so far, on the arm's run."""
    # round_tracking loads mlflow: only logging a comparison needs it, not reading one (gymloop compare).
    from flows.round_tracking import tracker_for

    metrics = comparison_metrics(comparison)
    tracker_for(settings, campaign).log_metrics(comparison.round_index, metrics,
                                                {k: v for k, v in metrics.items() if k.startswith("tgt_")})


def campaign_comparisons(settings: GymloopSettings, registry: Registry, campaign: str,
                         control: str) -> list[ArmComparison]:
    """The targeting lift after every round both arms finished."""
    return [compare_round(settings, registry, campaign, control, i)
            for i in comparable_rounds(registry, campaign, control)]


def control_markdown(settings: GymloopSettings, registry: Registry, campaign: str) -> str:
    """The report's sections on every control arm of the campaign (empty without one)."""
    sections = [control_section(campaign_comparisons(settings, registry, campaign, c))
                for c in controls(registry, campaign)]
    return "\n".join(s for s in sections if s)


def campaign_comparison(settings: GymloopSettings, campaign: str, control: str) -> ArmComparison:
    """Targeting lift for the campaign: both arms after their last common finished round.

    Raises:
        ValueError: The arms have no finished round in common.
    """
    registry = open_registry(settings)
    common = comparable_rounds(registry, campaign, control)
    if not common:
        raise ValueError(f"campaign {campaign!r} and its {control} control have no finished round in common")
    return compare_round(settings, registry, campaign, control, common[-1])

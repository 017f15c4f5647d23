"""The control arm: the same budget from the same starting model, run beside the targeted arm.

A campaign with a control runs two campaigns in the registry, round by round: the targeted arm under the
campaign's name and the control arm under ``<campaign>.<control>`` with the setting ``arm`` set to the control
(``uniform``: uniform waves over the base pool, no variants; ``random-variants``: as many untargeted variants,
uniform waves). Both start from the same registered model, spend the same wave budget and are judged on the
same held-out suite (same base packs, seeds and attempts). After each round the targeting lift is the targeted
arm's held-out pass rate minus the control's, with a paired bootstrap interval over the held-out tasks; it goes
to the round table, MLflow (both arms in one experiment, same metric names, an ``arm`` tag) and the report,
with each targeted weakness's failures per held-out episode before and after the round.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.core.metrics import compute_metrics, paired_lift
from curriculum import RoundResult, StopRules, Wave, grain_label, should_stop
from diagnosis import Weakness, WeaknessReport
from flows import steps
from flows.models import CampaignParams, Control, RoundSummary, StageResult
from flows.settings import GymloopSettings, load_settings
from registry import Registry

CONTROL_MD = "control.md"
"""The control section of a campaign's report, written in the targeted arm's folder."""

VARIANTS_JSON = "variants.json"
"""Ids of the variant packs a round added, kept in the round's folder (a campaign's pool is its own)."""


class WeaknessChange(BaseModel):
    """One targeted weakness's failures per held-out episode before and after a round.

    Attributes:
        grain: The weakness at its grain (``kind``, ``kind@domain`` or ``kind@domain/tool``).
        before: Failed held-out episodes showing it, per held-out episode, before the round.
        after: The same after the round.
        fell: Whether the rate fell.
    """

    model_config = ConfigDict(extra="forbid")

    grain: str
    before: float
    after: float
    fell: bool


class ArmComparison(BaseModel):
    """The targeted arm against its control after one round.

    Attributes:
        round_index: Round index.
        control: The control arm.
        targeted_after: Targeted arm's held-out pass rate after the round.
        control_after: Control arm's held-out pass rate after the round.
        lift: ``targeted_after - control_after``, paired over the same held-out tasks.
        low: Lower bound of the 95% paired bootstrap interval.
        high: Upper bound.
        weaknesses: The targeted weaknesses' rates before and after the round (targeted arm).
    """

    model_config = ConfigDict(extra="forbid")

    round_index: int
    control: str
    targeted_after: float
    control_after: float
    lift: float
    low: float
    high: float
    weaknesses: list[WeaknessChange] = Field(default_factory=list)


def control_campaign(campaign: str, control: str) -> str:
    """The registry name of a campaign's control arm."""
    return f"{campaign}.{control}"


def tracking_names(campaign: str, arm: str) -> tuple[str, str]:
    """The MLflow campaign (experiment) an arm's runs go to, and the arm: both arms share the targeted one's."""
    if arm == "targeted":
        return campaign, arm
    return campaign.removesuffix(f".{arm}"), arm


def record_variants(settings: GymloopSettings, campaign: str, index: int, pack_ids: Sequence[str]) -> None:
    """Remember the variant packs a round of a campaign added (its pool is the base packs plus these)."""
    steps.write_json(steps.round_dir(settings, campaign, index) / VARIANTS_JSON, sorted(pack_ids))


def campaign_pack_ids(settings: GymloopSettings, campaign: str, index: int) -> set[str]:
    """Variant packs a campaign added up to round ``index`` (so one arm never trains on the other's)."""
    ids: set[str] = set()
    for i in range(index + 1):
        path = steps.round_dir(settings, campaign, i) / VARIANTS_JSON
        if path.is_file():
            data = json.loads(path.read_text())
            ids.update(str(x) for x in data if isinstance(x, str))
    return ids


def _rate(weakness: Weakness, report: WeaknessReport) -> float:
    return weakness.rate if weakness.rate > 0 else weakness.count / max(report.episodes, 1)


def _same_grain(a: Weakness, b: Weakness) -> bool:
    return (a.kind, a.domain, a.tool) == (b.kind, b.domain, b.tool)


def weakness_changes(settings: GymloopSettings, registry: Registry, campaign: str, index: int) -> list[WeaknessChange]:
    """The targeted weaknesses of a round, with their failures per held-out episode before and after it.

    Before: the round's weakness report. After: the round's re-evaluation, diagnosed the same way.
    """
    folder = steps.round_dir(settings, campaign, index)
    report_path, wave_path = folder / "weakness_report.json", folder / "wave.json"
    if not report_path.is_file() or not wave_path.is_file():
        return []
    report = WeaknessReport.from_json(report_path.read_text())
    wave = Wave.model_validate_json(wave_path.read_text())
    targeted = {e.grain or e.weakness for e in wave.entries if e.source == "targeted"}
    chosen = [w for w in report.weaknesses if grain_label(w) in targeted or w.kind in targeted]
    if not chosen:
        return []
    round_info = next(r for r in registry.rounds(registry.campaign(campaign).id) if r.index == index)
    records = registry.round_episodes(round_info.id, stage=steps.EVAL_AFTER)
    packs = [steps.load_pack(registry, pid) for pid in sorted({r.pack_id for r in records})]
    after = steps.diagnose_round(records, packs, report, round_info.id, settings.seed)
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

    Raises:
        ValueError: One arm has not finished the round.
    """
    after = {}
    for arm, name in (("targeted", campaign), ("control", control_campaign(campaign, control))):
        rounds = [r for r in registry.rounds(registry.campaign(name).id) if r.index == index and
                  r.status == "finished"]
        if not rounds:
            raise ValueError(f"campaign {name!r} ({arm} arm) has not finished round {index}")
        after[arm] = steps.outcomes(registry, rounds[0].id, steps.EVAL_AFTER)
    lift = paired_lift(after["control"], after["targeted"], seed=settings.seed)
    return ArmComparison(
        round_index=index, control=control,
        targeted_after=compute_metrics(after["targeted"], rounds=1).pass_rate.value,
        control_after=compute_metrics(after["control"], rounds=1).pass_rate.value,
        lift=lift.value, low=lift.low, high=lift.high,
        weaknesses=weakness_changes(settings, registry, campaign, index),
    )


def comparison_metrics(comparison: ArmComparison) -> dict[str, float]:
    """The targeting lift as MLflow metrics of the targeted arm's round."""
    return {"targeting_lift": comparison.lift, "targeting_lift_low": comparison.low,
            "targeting_lift_high": comparison.high, "control_pass_rate_after": comparison.control_after}


def control_section(comparisons: Sequence[ArmComparison]) -> str:
    """Markdown: targeting lift per round with its interval, and each targeted weakness before and after."""
    if not comparisons:
        return ""
    control = comparisons[0].control
    lines = [
        f"## Targeting against the {control} control",
        "",
        f"Both arms ran the same budget from the same starting model on the same held-out suite; targeting lift "
        f"= targeted - {control} held-out pass rate after the round, 95% paired bootstrap interval over tasks.",
        "",
        f"| round | targeted after | {control} after | targeting lift | 95% interval | verdict |",
        "| ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for c in comparisons:
        verdict = ("targeting ahead" if c.low > 0 else "control ahead" if c.high < 0
                   else "no difference shown (interval spans 0)")
        lines.append(f"| {c.round_index} | {c.targeted_after:.3f} | {c.control_after:.3f} | {c.lift:+.3f} | "
                     f"[{c.low:+.3f}, {c.high:+.3f}] | {verdict} |")
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
    """Write the control section (Markdown and JSON) in the targeted campaign's folder."""
    folder = settings.home / "campaigns" / campaign
    folder.mkdir(parents=True, exist_ok=True)
    steps.write_json(folder / "control.json", [c.model_dump(mode="json") for c in comparisons])
    path = folder / CONTROL_MD
    path.write_text(control_section(comparisons))
    return path


def log_comparison(settings: GymloopSettings, campaign: str, comparison: ArmComparison) -> None:
    """Log the targeting lift on the targeted arm's round run in MLflow."""
    from flows.round_tracking import tracker_for

    tracker_for(settings, campaign).log_metrics(comparison.round_index, comparison_metrics(comparison))


RoundRunner = Callable[[CampaignParams], RoundSummary]
"""Runs a campaign's next round (``flows.round.next_round`` or a wrapper of it)."""


class PairedRound(BaseModel):
    """One round of both arms.

    Attributes:
        targeted: The targeted arm's round.
        control: The control arm's round (``None`` without a control).
        comparison: Targeting lift and targeted weaknesses (``None`` without a control).
    """

    model_config = ConfigDict(extra="forbid")

    targeted: RoundSummary
    control: RoundSummary | None = None
    comparison: ArmComparison | None = None


def run_paired(campaign: str, rounds: int, overrides: dict[str, Any], control: Control, runner: RoundRunner,
               on_round: Callable[[PairedRound], None] | None = None, *, stop_rules: bool = False) -> list[PairedRound]:
    """Run ``rounds`` rounds of the targeted arm and, beside each, the same round of the control arm.

    Args:
        campaign: The targeted arm's campaign name.
        rounds: Rounds to run at most.
        overrides: Settings of the targeted arm (the control arm gets the same, with ``arm`` set).
        control: The control arm, or ``none``.
        runner: Runs one round of a campaign.
        on_round: Called after each paired round.
        stop_rules: Stop when the settings' stop rules fire on the targeted arm's results.
    """
    settings = load_settings(**overrides)
    registry = steps.open_registry(settings)
    out: list[PairedRound] = []
    comparisons: list[ArmComparison] = []
    results: list[RoundResult] = []
    rules = StopRules(plateau_rounds=settings.plateau_rounds, plateau_lift=settings.plateau_lift,
                      target_pass_rate=settings.target_pass_rate, max_episodes=settings.episode_budget)
    for _ in range(rounds):
        if stop_rules and should_stop(results, rules).stop:
            break
        targeted = runner(CampaignParams(campaign=campaign, overrides=overrides))
        results.append(RoundResult(round_index=targeted.round_index, pass_rate=targeted.after, lift=targeted.lift,
                                   episodes=targeted.episodes.get(steps.TRAIN, StageResult(stage=steps.TRAIN)).planned))
        paired = PairedRound(targeted=targeted)
        if control != "none":
            name = control_campaign(campaign, control)
            paired.control = runner(CampaignParams(campaign=name, overrides={**overrides, "arm": control}))
            paired.comparison = compare_round(settings, registry, campaign, control, targeted.round_index)
            comparisons = [c for c in comparisons if c.round_index != targeted.round_index] + [paired.comparison]
            write_control_section(settings, campaign, comparisons)
            log_comparison(settings, campaign, paired.comparison)
        out.append(paired)
        if on_round is not None:
            on_round(paired)
    return out


def campaign_comparison(settings: GymloopSettings, campaign: str, control: str) -> ArmComparison:
    """Targeting lift for the campaign: both arms after their last common finished round.

    Raises:
        ValueError: The arms have no finished round in common.
    """
    registry = steps.open_registry(settings)
    finished = {}
    for name in (campaign, control_campaign(campaign, control)):
        finished[name] = {r.index for r in registry.rounds(registry.campaign(name).id) if r.status == "finished"}
    common = finished[campaign] & finished[control_campaign(campaign, control)]
    if not common:
        raise ValueError(f"campaign {campaign!r} and its {control} control have no finished round in common")
    return compare_round(settings, registry, campaign, control, max(common))

"""Held-out outcomes read back from the registry: a stage's episodes, and an arm's lift over its rounds."""

from __future__ import annotations

from typing import Any

from arena.core.flips import Flips, paired_flips
from arena.core.metrics import Outcome, compute_metrics, paired_lift
from flows.campaign_config import lift_baseline
from flows.promotion import last_promoted
from flows.rollouts import EVAL_AFTER, EVAL_BEFORE
from registry import TARGETED_ARM, Registry


def outcomes(registry: Registry, round_id: int, stage: str, model_id: int) -> list[Outcome]:
    """A stage's episodes of one model as metric outcomes, from the registry's summary columns (no trace decoding)."""
    domains = {p.id: p.domain for p in registry.list_packs()}
    return [Outcome(pack_id=s.pack_id, task_id=s.task_id, domain=domains.get(s.pack_id, ""), passed=s.passed,
                    score=s.score, invalid=s.invalid, failure_boundary=s.failure_boundary,
                    failure_kind=s.failure_kind, tokens=s.tokens_in + s.tokens_out, cost=s.cost)
            for s in registry.episode_summaries(round_id, stage=stage, model_id=model_id)]


def stage_model(registry: Registry, round_id: int, stage: str) -> int:
    """The model a finished round's stage played: the model in, or for ``eval_after`` the model out."""
    info = registry.round(round_id)
    model = info.model_out_id if stage == EVAL_AFTER else info.model_in_id
    return model if model is not None else info.model_in_id


def finished_rounds(registry: Registry, campaign: str, arm: str = TARGETED_ARM) -> list[Any]:
    """An arm's finished rounds, oldest first (none when the campaign is not in the registry)."""
    info = registry.find_campaign(campaign)
    if info is None:
        return []
    return [r for r in registry.rounds(info.id, arm=arm) if r.status == "finished"]


def campaign_outcomes(registry: Registry, campaign: str,
                      arm: str = TARGETED_ARM) -> tuple[list[Outcome], list[Outcome]]:
    """Held-out outcomes of an arm's campaign: its starting model's and its last promoted model's.

    The start is the first round of the latest baseline holding a finished round (``campaign_config.lift_baseline``):
    a lift is never paired across a baseline. The end is the re-evaluation of the last round in that baseline whose
    model was promoted (``flows.promotion``); without one the campaign's model is still the one it started from.

    Raises:
        ValueError: The arm has no finished round.
    """
    rounds = finished_rounds(registry, campaign, arm)
    if not rounds:
        raise ValueError(f"campaign {campaign!r}" + ("" if arm == TARGETED_ARM else f" ({arm} arm)")
                         + " has no finished round")
    since = lift_baseline(registry.baselines(campaign), [r.index for r in rounds])
    rounds = [r for r in rounds if since is None or r.index >= since.first_round]
    before = outcomes(registry, rounds[0].id, EVAL_BEFORE, rounds[0].model_in_id)
    promoted = last_promoted(rounds)
    if promoted is None:
        return before, before
    return before, outcomes(registry, promoted.id, EVAL_AFTER, stage_model(registry, promoted.id, EVAL_AFTER))


def model_outcomes(registry: Registry, campaign: str, arm: str, index: int) -> list[Outcome]:
    """Held-out outcomes of an arm's model after its round ``index``: its last promoted model by then.

    That is the re-evaluation of the last round up to ``index`` whose model was promoted (``flows.promotion``),
    else the arm's starting model's evaluation (what every round up to ``index`` is measured against).

    Raises:
        ValueError: The arm has not finished round ``index``.
    """
    rounds = [r for r in finished_rounds(registry, campaign, arm) if r.index <= index]
    if not rounds or rounds[-1].index != index:
        raise ValueError(f"campaign {campaign!r} ({arm} arm) has not finished round {index}")
    promoted = last_promoted(rounds)
    if promoted is None:
        return outcomes(registry, rounds[0].id, EVAL_BEFORE, rounds[0].model_in_id)
    return outcomes(registry, promoted.id, EVAL_AFTER, stage_model(registry, promoted.id, EVAL_AFTER))


def campaign_lift(registry: Registry, campaign: str, seed: int = 0,
                  arm: str = TARGETED_ARM) -> tuple[float, float, float, float, float]:
    """Held-out pass rate of an arm's starting model and its last promoted one; their paired lift with its interval.

    Measured on ``campaign_outcomes``.

    Returns:
        ``(before, after, lift, low, high)``.

    Raises:
        ValueError: The arm has no finished round.
    """
    before, after = campaign_outcomes(registry, campaign, arm)
    lift = paired_lift(before, after, seed=seed)
    rate_before = compute_metrics(before, rounds=1).pass_rate.value
    rate_after = compute_metrics(after, rounds=1).pass_rate.value
    return rate_before, rate_after, lift.value, lift.low, lift.high


def campaign_flips(registry: Registry, campaign: str, arm: str = TARGETED_ARM) -> Flips:
    """The held-out tasks an arm's campaign flipped, paired as its lift (``campaign_outcomes``).

    Raises:
        ValueError: The arm has no finished round.
    """
    return paired_flips(*campaign_outcomes(registry, campaign, arm))

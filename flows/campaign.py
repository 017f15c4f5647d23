"""The campaign driver: one Prefect flow runs every campaign, every arm of it, and every stop rule.

A campaign's arms are rows in the registry: ``targeted`` and, when asked for (``--control``), a control run
beside it from the same starting model with the same settings (``arm`` aside), so the same budget. Each pass
runs the next round of every arm still going, as sibling ``curriculum-round`` flow runs; after it, the
targeting lift against each control is compared on every round both arms finished. Every stop rule (target
pass rate, episode budget, round limit, plateau, token budget, cost budget) is read for each arm over all its
finished rounds, those before a resume included, as the campaign's model stood after each (a round not promoted
moved nothing: no lift, the last promoted pass rate); an arm stops on its own, and the campaign when every arm has.

``next_round`` (what ``gymloop round`` and the served deployment run) runs one round of every arm, no stop rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prefect import flow, get_run_logger, tags

from curriculum import RoundResult, StopRules, should_stop
from flows import control, prefect_view, round_tracking
from flows.budget import budget_stop
from flows.campaign_config import campaign_settings
from flows.context import next_index
from flows.interrupt import flow_run_tracked, hold_if_stopping
from flows.lease import campaign_lease
from flows.models import Arm, CampaignOutcome, CampaignParams, Promotion, RoundParams, RoundSummary
from flows.outcomes import finished_rounds
from flows.registry_access import open_registry
from flows.rollouts import TRAIN
from flows.round import curriculum_round
from flows.settings import GymloopSettings, load_settings
from flows.task_runners import task_runner
from registry import TARGETED_ARM, Registry

_LISTENERS: list[Callable[[RoundSummary], None]] = []


@contextmanager
def on_round(listener: Callable[[RoundSummary], None]) -> Iterator[None]:
    """Call ``listener`` with each round's summary as the driver finishes it (the command line's progress)."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)


@flow(name="campaign", flow_run_name=prefect_view.campaign_run_name)
def campaign(params: CampaignParams) -> CampaignOutcome:
    """Run rounds of every arm until each stops (plateau, budgets, target pass rate) or the round limit."""
    with flow_run_tracked():
        settings, registry = _settings(params)
        runner = settings.runner
        with campaign_lease(registry, params.campaign, ttl_s=runner.lease_ttl_s, wait_s=runner.lease_wait_s):
            return drive(params, settings, registry, limit=params.rounds or settings.stop.max_rounds, stop_rules=True)


@flow(name="next-round", flow_run_name=prefect_view.campaign_run_name)
def next_round(params: CampaignParams) -> CampaignOutcome:
    """Run the campaign's next round, of every arm (what a scheduled deployment or a manual trigger runs)."""
    with flow_run_tracked():
        settings, registry = _settings(params)
        runner = settings.runner
        with campaign_lease(registry, params.campaign, ttl_s=runner.lease_ttl_s, wait_s=runner.lease_wait_s):
            return drive(params, settings, registry, limit=1, stop_rules=False)


def _settings(params: CampaignParams) -> tuple[GymloopSettings, Registry]:
    """The campaign's settings (recorded ones, the flow's overrides, this machine's own) and its registry."""
    local = load_settings(**params.overrides)
    registry = open_registry(local)
    return campaign_settings(registry, params.campaign, params.overrides, local), registry


def campaign_arms(registry: Registry, params: CampaignParams, settings: GymloopSettings) -> list[Arm]:
    """The arms to run: those of the campaign in the registry (or the settings' arm), and the control asked for."""
    info = registry.find_campaign(params.campaign)
    names: list[Any] = [a.name for a in registry.arms(info.id)] if info is not None else []
    if not names:
        names = [settings.curriculum.arm]
    if params.control != "none" and params.control not in names:
        names.append(params.control)
    return sorted(names, key=lambda n: n != TARGETED_ARM)


def round_results(summaries: list[dict[str, Any]]) -> list[RoundResult]:
    """What the stop rules read of an arm's finished rounds: the campaign's model after each round.

    A round whose model was not promoted (``flows.promotion``) left the campaign's model where it was: it counts with
    no lift and the last promoted model's pass rate (the starting model's before any promotion), and its training
    episodes count as spent.
    """
    results: list[RoundResult] = []
    current: float | None = None
    for summary in summaries:
        train = summary.get("episodes", {}).get(TRAIN, {})
        promoted = Promotion.model_validate(summary.get("promotion") or {}).promoted
        if current is None or promoted:
            current = float(summary.get("after" if promoted else "before", 0.0))
        results.append(RoundResult(round_index=int(summary.get("round_index", 0)), pass_rate=current,
                                   lift=float(summary.get("lift", 0.0)) if promoted else 0.0,
                                   episodes=int(train.get("planned", 0))))
    return results


def stop_reason(settings: GymloopSettings, summaries: list[dict[str, Any]], max_rounds: int) -> str | None:
    """Why an arm stops now, read over every finished round of it (``None`` while it may run another)."""
    rules = StopRules(plateau_rounds=settings.stop.plateau_rounds, plateau_lift=settings.stop.plateau_lift,
                      target_pass_rate=settings.stop.target_pass_rate, max_episodes=settings.stop.episode_budget,
                      max_rounds=max_rounds)
    decision = should_stop(round_results(summaries), rules)
    return decision.reason if decision.stop else budget_stop(settings, summaries)


def _summaries(registry: Registry, campaign: str, arm: str) -> list[dict[str, Any]]:
    return [dict(r.details.get("summary", {})) for r in finished_rounds(registry, campaign, arm)]


def drive(params: CampaignParams, settings: GymloopSettings, registry: Registry, *, limit: int,
          stop_rules: bool) -> CampaignOutcome:
    """Run up to ``limit`` rounds of every arm, pass by pass, as sibling flow runs.

    Args:
        params: The campaign.
        settings: The campaign's settings.
        registry: The registry.
        limit: Rounds per arm in this call at most.
        stop_rules: Read the stop rules before each round (``next_round`` runs its round regardless).
    """
    logger = get_run_logger()
    arms = campaign_arms(registry, params, settings)
    outcome = CampaignOutcome(campaign=params.campaign, arms=arms)
    runner = curriculum_round.with_options(task_runner=task_runner(settings))
    done = {arm: _summaries(registry, params.campaign, arm) for arm in arms}
    ceiling = {arm: len(done[arm]) + limit for arm in arms}
    going = list(arms)
    while going:
        for arm in list(going):
            reason = (stop_reason(settings, done[arm], ceiling[arm]) if stop_rules
                      else "ran its round" if len(done[arm]) >= ceiling[arm] else None)
            if reason is not None:
                going.remove(arm)
                if stop_rules:
                    outcome.stopped[arm] = reason
                    logger.info("campaign %s: the %s arm stops: %s", params.campaign, arm, reason)
                continue
            hold_if_stopping()
            index = next_index(registry, params.campaign, arm)
            with tags(*prefect_view.run_tags(params.campaign, arm)):
                summary = runner(RoundParams(campaign=params.campaign, round_index=index, arm=arm,
                                             overrides=params.overrides, accept_change=params.accept_change,
                                             sources=params.sources))
            outcome.rounds.append(summary)
            done[arm].append(summary.model_dump(mode="json"))
            for listener in list(_LISTENERS):
                listener(summary)
        _compare(settings, registry, outcome)
    _close(settings, registry, outcome)
    return outcome


def _compare(settings: GymloopSettings, registry: Registry, outcome: CampaignOutcome) -> None:
    """Compare each control with the targeted arm on every round both finished now; log the new comparisons."""
    ran = {(r.arm, r.round_index) for r in outcome.rounds}
    seen = {(c.control, c.round_index) for c in outcome.comparisons}
    for arm in outcome.arms:
        if arm == TARGETED_ARM or TARGETED_ARM not in outcome.arms:
            continue
        for index in control.comparable_rounds(registry, outcome.campaign, arm):
            fresh = (TARGETED_ARM, index) in ran or (arm, index) in ran
            if fresh and (arm, index) not in seen:
                comparison = control.compare_round(settings, registry, outcome.campaign, arm, index)
                outcome.comparisons.append(comparison)
                control.log_comparison(settings, outcome.campaign, comparison)
                prefect_view.publish_targeting(outcome.campaign, comparison,
                                               round_tracking.runs_url(settings, outcome.campaign))


def _close(settings: GymloopSettings, registry: Registry, outcome: CampaignOutcome) -> None:
    """Write the control section and every arm's report; finish each arm's MLflow parent run."""
    extra = ""
    for arm in outcome.arms:
        if arm != TARGETED_ARM and TARGETED_ARM in outcome.arms:
            comparisons = control.campaign_comparisons(settings, registry, outcome.campaign, arm)
            if comparisons:
                control.write_control_section(settings, outcome.campaign, comparisons)
                extra += control.control_section(comparisons)
    for arm in outcome.arms:
        round_tracking.close_campaign(settings, outcome.campaign, arm, extra=extra if arm == TARGETED_ARM else "")

"""Transfer suites: gyms a campaign never practises in, played before and after every round to see what carries over.

The ``transfer_suites`` setting names them (e.g. ``["tau2-retail", "bfcl-multi-turn"]``). Each round plays every
suite's held-out split (at most ``transfer_tasks`` tasks of it, spread evenly in task-id order, each
``eval_seeds`` x ``eval_k`` times) with the model it starts from (stage ``transfer_before``) and with the model it
trained (``transfer_after``), on the same episodes. Those episodes are recorded under their own stages: diagnosis
reads ``eval_before`` alone, the factory and the planner see the campaign's base packs and their variants alone,
and training reads ``train``; so a suite is never trained on, diagnosed or varied. A suite that is also one of the
campaign's ``domains`` is refused before any episode.

Per suite a round records its pass rate before and after and the lift with its paired 95% interval over the same
tasks (``arena.core.metrics.paired_lift``, the interval of the in-gym lift): in the round's summary, as MLflow
metrics ``transfer/<suite>/before|after|lift|lift_low|lift_high`` and in every view of a round. A suite's episode
that fails or is invalid is counted as such; it never stops the round.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from arena.core.metrics import Outcome, compute_metrics, paired_lift
from arena.core.pack import Pack
from arena.rollout import EpisodeKey
from flows.models import RoundSummary, TransferResult
from flows.outcomes import outcomes, stage_model
from flows.packs import add_pack, built_pack
from flows.rollouts import EVAL_AFTER
from flows.settings import GymloopSettings, source_of
from registry import Registry

TRANSFER_BEFORE, TRANSFER_AFTER = "transfer_before", "transfer_after"
"""Stages of a round's transfer episodes: the model in, then the model out, on the same episodes."""

METRIC_NAMES = ("before", "after", "lift", "lift_low", "lift_high")
"""A suite's MLflow metrics, ``transfer/<suite>/<name>``."""


def check_suites(settings: GymloopSettings, overrides: Mapping[str, Any] | None = None,
                 flags: Mapping[str, str] | None = None) -> None:
    """Refuse a transfer suite the campaign also trains in (it would be practised and diagnosed).

    Args:
        settings: The round's settings.
        overrides: The settings given explicitly (options, flow parameters), to name where a value came from.
        flags: The command-line option each override came from.

    Raises:
        ValueError: A suite is one of ``domains``; the message names it and where both settings came from.
    """
    both = [s for s in settings.transfer.transfer_suites if s in settings.gyms.domains]
    if both:
        suites, domains = (source_of(n, overrides, flags) for n in ("transfer_suites", "domains"))
        raise ValueError(f"transfer suite {both[0]!r} (setting 'transfer_suites', {suites}) is also a gym the "
                         f"campaign trains in (setting 'domains', {domains}): a transfer suite is never trained on "
                         "or diagnosed; remove it from one of the two")


def suite_packs(registry: Registry, settings: GymloopSettings) -> list[Pack]:
    """The transfer suites' packs (seed 0 of each gym), added to the registry once, in the setting's order."""
    packs = [built_pack(name, 0) for name in settings.transfer.transfer_suites]
    for pack in packs:
        add_pack(registry, pack)
    return packs


def chosen_tasks(pack: Pack, limit: int) -> list[str]:
    """The held-out tasks a suite plays: all of them up to ``limit``, else ``limit`` spread evenly by task id."""
    heldout = sorted(t.id for t in pack.tasks if t.split == "heldout")
    if len(heldout) <= limit:
        return heldout
    return [heldout[i * len(heldout) // limit] for i in range(limit)]


def suite_keys(packs: Sequence[Pack], settings: GymloopSettings) -> list[EpisodeKey]:
    """The transfer episodes of a round's each side: chosen held-out tasks x eval seeds x eval_k attempts."""
    return [EpisodeKey(p.id, task, seed, attempt) for p in packs
            for task in chosen_tasks(p, settings.transfer.transfer_tasks)
            for seed in settings.evaluation.eval_seeds for attempt in range(settings.evaluation.eval_k)]


def _by_suite(outcomes: Sequence[Outcome]) -> dict[str, list[Outcome]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.domain].append(o)
    return groups


def suite_result(suite: str, before: Sequence[Outcome], after: Sequence[Outcome], seed: int) -> TransferResult:
    """A suite's pass rates before and after, and the lift with its paired 95% interval over the same tasks."""
    lift = paired_lift(before, after, seed=seed)
    return TransferResult(
        suite=suite, tasks=len({(o.pack_id, o.task_id) for o in before}), episodes=len(before),
        invalid=sum(o.invalid for o in (*before, *after)),
        before=compute_metrics(before, rounds=1).pass_rate.value,
        after=compute_metrics(after, rounds=1).pass_rate.value,
        lift=lift.value, lift_low=lift.low, lift_high=lift.high)


def results(before: Sequence[Outcome], after: Sequence[Outcome], suites: Sequence[str],
            seed: int) -> list[TransferResult]:
    """Each suite's result from the transfer episodes of both sides (suites in ``suites``' order)."""
    b, a = _by_suite(before), _by_suite(after)
    return [suite_result(s, b[s], a[s], seed) for s in suites if b.get(s) and a.get(s)]


def round_results(registry: Registry, round_id: int, model_in_id: int, model_out_id: int, suites: Sequence[str],
                  seed: int) -> list[TransferResult]:
    """A round's transfer results, from its ``transfer_before`` and ``transfer_after`` episodes."""
    return results(outcomes(registry, round_id, TRANSFER_BEFORE, model_in_id),
                   outcomes(registry, round_id, TRANSFER_AFTER, model_out_id), suites, seed)


def metrics(found: Sequence[TransferResult]) -> dict[str, float]:
    """The results as metrics: ``transfer/<suite>/before|after|lift|lift_low|lift_high``."""
    return {f"transfer/{r.suite}/{name}": float(getattr(r, name)) for r in found for name in METRIC_NAMES}


def campaign_results(registry: Registry, summaries: Sequence[RoundSummary], seed: int) -> list[TransferResult]:
    """Each suite over an arm's rounds: the first round's model in against the last promoted model, paired.

    Only rounds of the last round's baseline count (lifts are never paired across baselines), as for the in-gym
    campaign lift; without a promoted round the campaign's model is still the one it started from.
    """
    if not summaries or not summaries[-1].transfer:
        return []
    last = summaries[-1]
    first = next(s for s in summaries if s.baseline == last.baseline)
    kept = next((s for s in reversed(summaries) if s.baseline == last.baseline and s.promotion.promoted), None)
    suites = [r.suite for r in last.transfer]
    before = outcomes(registry, first.round_id, TRANSFER_BEFORE,
                            stage_model(registry, first.round_id, TRANSFER_BEFORE))
    after = before if kept is None else outcomes(registry, kept.round_id, TRANSFER_AFTER,
                                                 stage_model(registry, kept.round_id, EVAL_AFTER))
    return results(before, after, suites, seed)

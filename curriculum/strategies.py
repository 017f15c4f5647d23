"""Wave-planning strategies, registered by name: targeted (default), uniform and bandit."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from curriculum._fill import PlanContext, mix, sample_uniform
from curriculum.bandit import arm_weights, update_bandit
from curriculum.coverage import coverage_ranked, pool_coverage
from curriculum.matching import grain_label
from curriculum.models import BanditState, WaveEntry
from diagnosis import focus


@runtime_checkable
class Strategy(Protocol):
    """Chooses a wave's entries; registered by name."""

    name: str
    """Name used in ``CurriculumConfig.strategy``."""

    def choose(self, ctx: PlanContext) -> tuple[list[WaveEntry], BanditState | None]:
        """Return the wave's entries and, for stateful strategies, the state to keep."""
        ...


class TargetedStrategy:
    """Targeted slots on the report's top kinds, at their grain; replay and exploration fill the rest.

    The report ranks kinds by the failures they explain and a kind's grains by impact (share x reward lost x
    learnability x trend: the expected gain of practising it). With ``config.coverage`` (default) a kind's grains
    are re-ranked by practice value, impact x (1 + how poorly the pool covers the grain) (``curriculum.coverage``),
    since uniform practice already reaches a well-covered grain. The targeted slots go to ``config.focus`` grains
    read from that two-level ranking with their weights, once (``diagnosis.focus``: the top grain of each kind in
    kind order, then each kind's next, each weighing its share of its kind's value, all its grains together):
    spreading a small wave over every weakness gives each too few groups to move it.
    """

    name = "targeted"

    def choose(self, ctx: PlanContext) -> tuple[list[WaveEntry], BanditState | None]:
        """Weigh the ``focus`` grains the two-level ranking puts first by their kind's value."""
        diagnosed = {grain_label(w): w for w in ctx.report.weaknesses}
        if ctx.config.coverage:
            ctx = dataclasses.replace(ctx, report=coverage_ranked(ctx.report, ctx.pool, ctx.slots))
        top = focus(ctx.report, ctx.config.focus)
        weights = {grain_label(g.weakness): max(g.weight, 1e-6) for g in top}
        why = {grain_label(w): f"kind {w.kind} rank {w.kind_rank}, grain rank {w.grain_rank} ({w.rate:.2f} per "
                               f"episode), impact {diagnosed[grain_label(w)].impact:.3f}"
                               + (f", pool coverage {pool_coverage(w, ctx.pool, ctx.slots):.2f}, value {w.impact:.3f}"
                                  if ctx.config.coverage else "")
               for w in (g.weakness for g in top)}
        return mix(ctx, weights, why), None


class UniformStrategy:
    """Every slot is a uniform draw from the pool: the baseline the others are measured against."""

    name = "uniform"

    def choose(self, ctx: PlanContext) -> tuple[list[WaveEntry], BanditState | None]:
        """Sample the pool uniformly."""
        return sample_uniform(ctx), None


class BanditStrategy:
    """Targeted slots by a learning-progress bandit over weakness kinds."""

    name = "bandit"

    def choose(self, ctx: PlanContext) -> tuple[list[WaveEntry], BanditState | None]:
        """Update the arms from the history, weigh the report's kinds and fill the mix."""
        state = update_bandit(ctx.history.bandit or BanditState(), ctx.report, ctx.pool, ctx.history, ctx.config)
        kinds = list(dict.fromkeys(w.kind for w in ctx.report.weaknesses))
        arms = arm_weights(state, kinds, ctx.config)
        weights: dict[str, float] = {kind: weight for kind, weight in arms.items()}
        why: dict[str, str] = {k: f"bandit weight {arms[k]:.2f}, learning progress {state.arms[k].value:.3f}, "
                                  f"pulls {state.arms[k].pulls}" for k in kinds}
        entries = mix(ctx, weights, why)
        for kind in {e.weakness for e in entries if e.weakness is not None}:
            state.arms[kind].pulls += 1
        state.rounds += 1
        return entries, state


_STRATEGIES: dict[str, Callable[[], Strategy]] = {
    "targeted": TargetedStrategy,
    "uniform": UniformStrategy,
    "bandit": BanditStrategy,
}


def register_strategy(name: str, factory: Callable[[], Strategy]) -> None:
    """Make a strategy available by name.

    Raises:
        ValueError: The name is taken.
    """
    if name in _STRATEGIES:
        raise ValueError(f"curriculum strategy {name!r} is already registered")
    _STRATEGIES[name] = factory


def strategy_names() -> list[str]:
    """Registered strategy names."""
    return sorted(_STRATEGIES)


def get_strategy(name: str) -> Strategy:
    """Return a new strategy by name.

    Raises:
        KeyError: Unknown name, listing the registered ones.
    """
    factory = _STRATEGIES.get(name)
    if factory is None:
        raise KeyError(f"unknown curriculum strategy {name!r}; registered: {', '.join(strategy_names())}")
    return factory()

"""``plan_wave``: from a weakness report, a task pool and the history to the next wave."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from arena.core.pack import Pack
from curriculum._fill import PlanContext
from curriculum.matching import uniform_drop
from curriculum.models import CurriculumConfig, History, TaskRef, Wave
from curriculum.strategies import get_strategy
from diagnosis import WeaknessReport


def task_refs(packs: Sequence[Pack], *, split: str | None = "train") -> list[TaskRef]:
    """The tasks of some packs as curriculum task references (train split by default; ``None``: all)."""
    return [TaskRef(pack_id=p.id, task_id=t.id, domain=p.manifest.domain, category=t.category,
                    tags=tuple(t.tags), split=t.split, tools=tuple(dict.fromkeys(s.tool for s in t.gold.steps)))
            for p in packs for t in p.tasks if split is None or t.split == split]


def plan_wave(report: WeaknessReport | None, pool: Iterable[TaskRef], history: History | None = None,
              config: CurriculumConfig | None = None) -> Wave:
    """Plan the next wave.

    Held-out tasks in the pool are never scheduled. Tasks whose last group of rollouts all scored the
    same are skipped for ``config.recheck_after`` rounds. An empty pool, a zero budget or a report
    without weaknesses gives a wave (possibly empty) whose ``message`` says what happened.

    Args:
        report: The model's weakness report (``None`` is read as a report without weaknesses).
        pool: Candidate tasks (their order does not matter).
        history: Earlier waves and group results (``None``: the first round).
        config: Strategy, budget, k, mix and band (defaults: targeted, 64 episodes, k=4).

    Raises:
        KeyError: The configured strategy is not registered.
    """
    config = config or CurriculumConfig()
    history = history or History()
    report = report or WeaknessReport()
    strategy = get_strategy(config.strategy)
    round_index = (history.waves[-1].round_index + 1) if history.waves else 0
    notes: list[str] = []
    tasks = sorted(dict.fromkeys(pool), key=lambda t: t.key)  # the wave depends on the pool's tasks, not their order
    heldout = [t for t in tasks if t.split != "train"]
    train = [t for t in tasks if t.split == "train"]
    if heldout:
        notes.append(f"{len(heldout)} held-out task(s) in the pool are never scheduled")
    slots = config.budget // config.k
    if config.budget == 0:
        notes.append("the training budget is 0 episodes: nothing to schedule")
    elif slots == 0:
        notes.append(f"the budget of {config.budget} episode(s) is below k={config.k} rollouts per task")
    if not train:
        notes.append("the task pool has no train task: nothing to schedule")
    ctx = PlanContext(report=report, pool=train, history=history, config=config, round_index=round_index,
                      slots=slots if train else 0, rng=random.Random(config.seed * 1_000_003 + round_index),
                      notes=notes)
    if ctx.slots == 0:
        return Wave(round_index=round_index, strategy=strategy.name, budget=config.budget, k=config.k,
                    message="; ".join(notes), bandit=history.bandit if strategy.name == "bandit" else None)
    ctx.dropped = {t.key for t in train if uniform_drop(history, t, round_index, config)}
    if ctx.dropped:
        notes.append(f"{len(ctx.dropped)} task(s) skipped: their last group of rollouts all scored the same")
    entries, state = strategy.choose(ctx)
    return Wave(round_index=round_index, strategy=strategy.name, entries=entries, budget=config.budget,
                k=config.k, message="; ".join(ctx.notes), bandit=state)

"""The learning-progress bandit over weakness kinds (after Self-Evolving Curriculum).

Each weakness kind is an arm. Its value is a running average of learning progress: the mean absolute
change of success between a task's last two groups, over the kind's tasks that ran again since the
previous update. Targeted slots go to arms by a softmax over values plus a count-based exploration bonus,
so the curriculum keeps practising what is improving and revisits arms it has not tried.
"""

from __future__ import annotations

import math

from arena.core.weakness import WeaknessKind
from curriculum.matching import matches
from curriculum.models import ArmStats, BanditState, CurriculumConfig, History, TaskRef
from diagnosis import WeaknessReport


def learning_progress(history: History, tasks: list[TaskRef], since_round: int) -> float | None:
    """Mean |change of success| between the last two groups of each task that ran after ``since_round``.

    Returns ``None`` when no task has two groups with the newer one after ``since_round``.
    """
    changes: list[float] = []
    for task in tasks:
        entry = history.task(task.pack_id, task.task_id)
        if entry is None or len(entry.groups) < 2 or entry.groups[-1].round_index <= since_round:
            continue
        changes.append(abs(entry.groups[-1].success - entry.groups[-2].success))
    return sum(changes) / len(changes) if changes else None


def update_bandit(state: BanditState, report: WeaknessReport, pool: list[TaskRef], history: History,
                  config: CurriculumConfig) -> BanditState:
    """Fold the results recorded since the state's last update into the arms; returns a new state."""
    new = state.model_copy(deep=True)
    newest = max((g.round_index for t in history.tasks for g in t.groups), default=new.last_round)
    for weakness in report.weaknesses:
        arm = new.arms.setdefault(weakness.kind, ArmStats())
        tasks = [t for t in pool if matches(t, weakness)]
        progress = learning_progress(history, tasks, new.last_round)
        if progress is not None:
            arm.value += config.bandit_step * (progress - arm.value)
        successes = [g.success for t in tasks if (e := history.task(t.pack_id, t.task_id)) for g in e.groups[-1:]]
        if successes:
            arm.success = sum(successes) / len(successes)
    new.last_round = max(new.last_round, newest)
    return new


def arm_weights(state: BanditState, kinds: list[WeaknessKind],
                config: CurriculumConfig) -> dict[WeaknessKind, float]:
    """Allocation weight of each arm: softmax of values over the temperature plus an exploration bonus."""
    if not kinds:
        return {}
    values = {k: state.arms.get(k, ArmStats()).value for k in kinds}
    top = max(values.values())
    exp = {k: math.exp((v - top) / config.bandit_temperature) for k, v in values.items()}
    total = sum(exp.values())
    log_rounds = math.log(state.rounds + 2)
    return {k: exp[k] / total + config.bandit_exploration * math.sqrt(
        log_rounds / (state.arms.get(k, ArmStats()).pulls + 1)) for k in kinds}

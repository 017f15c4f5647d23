"""Which tasks exercise a weakness, and how learnable each task looks from its history."""

from __future__ import annotations

from curriculum.models import CurriculumConfig, History, TaskRef
from diagnosis import Weakness, grain_key


def grain_label(weakness: Weakness) -> str:
    """A weakness's grain as text: the report's unique grain key (``kind``, ``kind@domain``, ``kind@domain/tool``)."""
    return weakness.grain or grain_key(weakness.kind, weakness.domain, weakness.tool)


def matches(task: TaskRef, weakness: Weakness) -> bool:
    """Whether a task exercises a weakness, at the weakness's grain.

    A weakness with a ``domain`` matches only that domain's tasks, and one with a ``tool`` only tasks whose
    gold program calls that tool (a task listing no tools is not excluded by the tool). Within that, a task
    matches when its tags intersect the weakness's ``focus_tags``; a weakness without focus tags matches the
    tasks of its grain, or when it names no grain, of the domains its evidence came from.
    """
    if weakness.domain is not None and task.domain != weakness.domain:
        return False
    if weakness.tool is not None and task.tools and weakness.tool not in task.tools:
        return False
    if weakness.focus_tags:
        return bool(set(task.tags) & set(weakness.focus_tags))
    if weakness.domain is not None or weakness.tool is not None:
        return True
    return bool(weakness.domains) and task.domain in weakness.domains


def estimated_success(history: History, task: TaskRef, *, groups: int = 2) -> float | None:
    """Pass rate of the task over its latest ``groups`` group results (``None`` when it never ran)."""
    entry = history.task(task.pack_id, task.task_id)
    if entry is None or not entry.groups:
        return None
    recent = entry.groups[-groups:]
    passed = sum(sum(g.passed) for g in recent)
    total = sum(len(g.passed) for g in recent)
    return passed / total


def band_score(success: float | None, config: CurriculumConfig) -> float:
    """Preference for a task by its estimated success: 1 inside the learnability band, less the further out.

    A task outside the band scores at most 0.5, less the further out; a task never tried scores 0.6.
    """
    if success is None:
        return 0.6
    if config.band_low <= success <= config.band_high:
        return 1.0
    distance = config.band_low - success if success < config.band_low else success - config.band_high
    return max(0.05, 0.5 - distance)


def uniform_drop(history: History, task: TaskRef, round_index: int, config: CurriculumConfig) -> bool:
    """Whether the task's last group scored the same on every rollout, recently enough to skip it.

    Such a group carries no group-relative signal. After ``config.recheck_after`` rounds the task may be
    scheduled again, since the model has changed since.
    """
    entry = history.task(task.pack_id, task.task_id)
    if entry is None or not entry.groups:
        return False
    last = entry.groups[-1]
    return last.uniform and len(last.scores) > 1 and round_index - last.round_index <= config.recheck_after

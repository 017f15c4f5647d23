"""Held-out tasks that flipped between two evaluations of the same tasks: pass->fail and fail->pass."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from arena.core.episode import EpisodeRecord
    from arena.core.metrics import Outcome


class Flips(BaseModel):
    """Tasks whose outcome changed between two evaluations of the same tasks: what a lift nets out.

    Read from the per-task pass rates the paired lift pairs (``arena.core.metrics.paired_lift``: the same tasks,
    valid episodes on both sides): a task passes on a side when at least half of its valid episodes there passed.
    A lift of +0.05 may be 12 tasks gained and 10 lost; these say which.

    Attributes:
        tasks: Tasks paired (present, with valid episodes, on both sides).
        pass_to_fail: Tasks that passed before and fail after (regressions).
        fail_to_pass: Tasks that failed before and pass after.
        lost: The pass->fail tasks, as ``domain/task_id`` (``pack_id/task_id`` without a domain), sorted.
        gained: The fail->pass tasks, named alike.
    """

    model_config = ConfigDict(extra="forbid")

    tasks: int = 0
    pass_to_fail: int = 0
    fail_to_pass: int = 0
    lost: list[str] = []
    gained: list[str] = []


FLIP_PASS = 0.5
"""Share of a task's valid episodes that must pass for the task to count as passing in :func:`paired_flips`."""


def paired_flips(before: Iterable[EpisodeRecord | Outcome], after: Iterable[EpisodeRecord | Outcome]) -> Flips:
    """Tasks that flipped pass->fail and fail->pass, over the tasks ``arena.core.metrics.paired_lift`` pairs."""
    return flips_by(before, after, lambda name: "").get("", Flips())


def flips_by(before: Iterable[EpisodeRecord | Outcome], after: Iterable[EpisodeRecord | Outcome],
             group: Callable[[str], str]) -> dict[str, Flips]:
    """:func:`paired_flips` of each group of tasks (e.g. each template), by group name.

    Args:
        before: Episodes of the first evaluation.
        after: Episodes of the second, on the same tasks.
        group: Maps a task's name (``domain/task_id``) to its group.
    """
    # numpy loads with the metrics, not with this model (the command line imports it at start-up).
    from arena.core.metrics import outcome, per_task_pass_rate

    b_out, a_out = [outcome(r) for r in before], [outcome(r) for r in after]
    names = {(o.pack_id, o.task_id): f"{o.domain or o.pack_id}/{o.task_id}" for o in [*b_out, *a_out]}
    b, a = per_task_pass_rate(b_out), per_task_pass_rate(a_out)
    out: dict[str, Flips] = {}
    for key in sorted(set(a) & set(b), key=lambda k: names[k]):
        name = names[key]
        flips = out.setdefault(group(name), Flips())
        flips.tasks += 1
        passed_before, passed_after = b[key] >= FLIP_PASS, a[key] >= FLIP_PASS
        if passed_before and not passed_after:
            flips.pass_to_fail += 1
            flips.lost.append(name)
        elif passed_after and not passed_before:
            flips.fail_to_pass += 1
            flips.gained.append(name)
    return dict(sorted(out.items()))

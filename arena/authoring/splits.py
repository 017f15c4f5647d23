"""The train / heldout split: one rule for every gym."""

from __future__ import annotations

import random

from arena.core.task import Split


def assign_splits(keys: list[set[str]], fraction: float, rng: random.Random) -> list[Split]:
    """Choose the heldout tasks: about ``fraction`` of them, every key in both splits when it can be.

    First, for each key (a task's category and tags) in name order, one task carrying it goes to heldout unless
    that would leave one of its keys with no train task; then random tasks fill heldout up to the target under
    the same condition.

    Args:
        keys: Each task's category and tags.
        fraction: Target share of heldout tasks.
        rng: Randomness for the fill-up order.
    """
    n = len(keys)
    target = round(n * fraction)
    heldout: set[int] = set()

    def can_move(i: int) -> bool:
        for key in keys[i]:
            if sum(1 for j in range(n) if key in keys[j] and j not in heldout and j != i) == 0:
                return False
        return True

    for key in sorted(set().union(*keys)) if keys else []:
        if len(heldout) >= target:
            break
        if any(key in keys[j] for j in heldout):
            continue
        for i in range(n):
            if key in keys[i] and i not in heldout and can_move(i):
                heldout.add(i)
                break
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        if len(heldout) >= target:
            break
        if i not in heldout and can_move(i):
            heldout.add(i)
    return ["heldout" if i in heldout else "train" for i in range(n)]

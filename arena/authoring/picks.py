"""Picking the records a template's tasks are about, one way for every gym, each draw from the template's ``rng``.

- :func:`pick_where`: up to ``n`` rows in a random order that a test accepts;
- :func:`pick`: up to ``n`` rows, those a preference likes first;
- :func:`mix`: up to ``n`` rows, about a share of them from the messy ones (namesakes, stale summaries);
- :func:`shuffled`: all the rows in a random order, those a preference likes first;
- :func:`nth`: the ``i``-th row of a shuffled pool, for a template that builds its ``i``-th task from a fresh copy
  of its ``rng`` (so the tasks of one template are distinct rows);
- :func:`day_between`: a day of a span, for a world generator's dates.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import TypeVar

Row = TypeVar("Row")


def pick_where(rng: random.Random, rows: Sequence[Row], n: int, ok: Callable[[Row], bool]) -> list[Row]:
    """Up to ``n`` of ``rows`` in a random order, keeping only those ``ok`` accepts."""
    out: list[Row] = []
    for row in pick(rng, rows, len(rows)):
        if len(out) >= n:
            break
        if ok(row):
            out.append(row)
    return out


def pick(rng: random.Random, rows: Sequence[Row], n: int, prefer: Callable[[Row], bool] | None = None) -> list[Row]:
    """Up to ``n`` of ``rows``: a sample of those ``prefer`` likes first, then of the others."""
    if prefer is None:
        return rng.sample(list(rows), min(n, len(rows)))
    first = [r for r in rows if prefer(r)]
    rest = [r for r in rows if not prefer(r)]
    chosen = rng.sample(first, min(n, len(first)))
    return chosen + rng.sample(rest, min(n - len(chosen), len(rest)))


def mix(rng: random.Random, preferred: Sequence[Row], rest: Sequence[Row], n: int, *, share: float = 0.5) -> list[Row]:
    """Up to ``n`` rows, about ``share`` of them (at least one) from ``preferred``, the rest from ``rest``."""
    first = rng.sample(list(preferred), min(len(preferred), max(1, round(n * share + 0.01))))
    others = [r for r in rest if r not in first]
    second = rng.sample(others, min(len(others), n - len(first)))
    picks = first + second
    if len(picks) < n:
        more = [r for r in preferred if r not in picks]
        picks += rng.sample(more, min(len(more), n - len(picks)))
    return picks


def shuffled(rng: random.Random, rows: Sequence[Row], prefer: Callable[[Row], bool] | None = None) -> list[Row]:
    """All of ``rows`` in a random order: those ``prefer`` likes first (shuffled), then the others (shuffled)."""
    first = [r for r in rows if prefer is None or prefer(r)]
    rest = [r for r in rows if prefer is not None and not prefer(r)]
    rng.shuffle(first)
    rng.shuffle(rest)
    return first + rest


def nth(rows: Sequence[Row], rng: random.Random, i: int) -> Row | None:
    """Entry ``i`` of ``rows`` shuffled by ``rng`` (wrapping around), ``None`` when there are none."""
    order = shuffled(rng, rows)
    return order[i % len(order)] if order else None


def day_between(rng: random.Random, start: date, end: date) -> date:
    """A day from ``start`` to ``end``, both included (``start`` when ``end`` is earlier)."""
    return start + timedelta(days=rng.randint(0, max(0, (end - start).days)))

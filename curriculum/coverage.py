"""Coverage-aware targeting: weigh a weakness by the failures it explains and how little the pool practises it.

A uniform draw of a wave's tasks practises a grain (kind, domain, tool) in proportion to the pool's tasks that
exercise it, so targeting a well-covered grain buys little that uniform practice does not; a grain no pool task
exercises can only be practised through a factory variant. The practice value of a weakness is therefore its
impact x (1 + gap), where the gap is 1 minus the pool's coverage of the grain: the tasks exercising it that a
uniform wave of the same size is expected to hold, capped at 1 (a grain with no task: gap 1, its value doubles;
a grain a uniform wave is expected to meet at least once: gap 0, its value is its impact).
"""

from __future__ import annotations

from collections.abc import Sequence

from curriculum.matching import matches
from curriculum.models import TaskRef
from diagnosis import Weakness, WeaknessReport


def pool_coverage(weakness: Weakness, pool: Sequence[TaskRef], slots: int) -> float:
    """Tasks exercising the weakness's grain a uniform wave of ``slots`` tasks from the pool holds, capped at 1.

    Only train tasks count (held-out tasks are never scheduled). An empty pool or no slot covers nothing.
    """
    train = [t for t in pool if t.split == "train"]
    if not train or slots <= 0:
        return 0.0
    exercising = sum(matches(t, weakness) for t in train)
    return min(1.0, slots * exercising / len(train))


def practice_value(weakness: Weakness, pool: Sequence[TaskRef], slots: int) -> float:
    """The weakness's impact x (1 + how poorly the pool covers its grain)."""
    return weakness.impact * (2.0 - pool_coverage(weakness, pool, slots))


def coverage_ranked(report: WeaknessReport, pool: Sequence[TaskRef], slots: int) -> WeaknessReport:
    """The report seen for practice: each grain's impact becomes its practice value, grains re-ranked by it.

    Kinds keep their rank (the failures they explain); within a kind, grains are re-ranked by practice value,
    so a grain the pool cannot practise outranks an equally failing grain of its kind it can. Used for the
    factory request (which grains get variants, and how many) and by the targeted strategy's weights. Ties keep
    the report's order. Every other field, and the report itself, is left as diagnosed.

    Args:
        report: The diagnosed weakness report.
        pool: The tasks the campaign can schedule now (base tasks and its variants so far).
        slots: Tasks in a wave (budget // k): the uniform draw a grain's coverage is measured against.
    """
    valued = [(practice_value(w, pool, slots), w) for w in report.weaknesses]
    order = sorted(valued, key=lambda item: (item[1].kind_rank, -item[0], item[1].rank))
    weaknesses: list[Weakness] = []
    within: dict[str, int] = {}
    for rank, (value, w) in enumerate(order, start=1):
        within[w.kind] = within.get(w.kind, 0) + 1
        weaknesses.append(w.model_copy(update={"impact": value, "rank": rank, "grain_rank": within[w.kind]}))
    return report.model_copy(update={"weaknesses": weaknesses})

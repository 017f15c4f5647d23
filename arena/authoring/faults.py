"""Injected faults: one id format, one recovery rule for the gold program, one rule for extra faults."""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence

from arena.authoring.knobs import FaultKindName
from arena.authoring.template import Fault
from arena.core.domain import FaultSpec
from arena.core.task import GoldStep

RETRY_AFTER = 2.0
"""Seconds a rate-limit fault asks the agent to wait."""


def fault_id(task_id: str, kind: str, taken: Collection[str] = ()) -> str:
    """The id of a task's fault: ``<task id>.<kind>`` (``-2``, ``-3``... when the task has more of that kind)."""
    base = f"{task_id}.{kind}"
    n, candidate = 1, base
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def inject(steps: Sequence[GoldStep], fault: Fault, fid: str) -> tuple[list[GoldStep], FaultSpec]:
    """Make the first gold call of the fault's tool fail and add the recovery right after it.

    A timeout or a rate limit is followed by the same call again. A data conflict is followed by a fresh fetch
    (the last ``get_`` step before the call that read one of its argument values, else the last ``get_`` step),
    then the same call again.

    Raises:
        ValueError: The gold program never calls the tool, or a data conflict has no ``get_`` step to repeat.
    """
    index = next((i for i, s in enumerate(steps) if s.tool == fault.tool), None)
    if index is None:
        raise ValueError(f"fault {fid!r}: the gold program never calls {fault.tool!r}")
    recovery = [steps[index]]
    if fault.kind == "data_conflict":
        gets = [s for s in reversed(steps[:index]) if s.tool.startswith("get_")]
        if not gets:
            raise ValueError(f"fault {fid!r}: no get_ step before {fault.tool!r} to fetch the record again")
        used = {str(v) for v in steps[index].arguments.values()}
        refetch = next((s for s in gets if used & {str(v) for v in s.arguments.values()}), gets[0])
        recovery = [refetch, steps[index]]
    spec = FaultSpec(id=fid, kind=fault.kind, tool=fault.tool,
                     retry_after=RETRY_AFTER if fault.kind == "rate_limit" else None)
    return [*steps[: index + 1], *recovery, *steps[index + 1:]], spec


def conflict_target(steps: Sequence[GoldStep], write_tools: Collection[str]) -> str | None:
    """The first write step preceded by a ``get_`` step (where a data conflict makes sense), if any."""
    seen_get = False
    for s in steps:
        if s.tool.startswith("get_"):
            seen_get = True
        elif s.tool in write_tools and seen_get:
            return s.tool
    return None


def extra_fault(steps: Sequence[GoldStep], rng: random.Random, kinds: Sequence[FaultKindName],
                write_tools: Collection[str]) -> Fault | None:
    """One more fault for a fault-free task (the ``fault_rate`` knob), or ``None`` when the gold program has no fit.

    The kind is drawn from ``kinds``; a data conflict hits the first write after a read, another kind any gold tool.
    """
    kind: FaultKindName = rng.choice(sorted(kinds))
    if kind == "data_conflict":
        target = conflict_target(steps, write_tools)
    else:
        target = rng.choice(sorted({s.tool for s in steps})) if steps else None
    if target is None:
        return None
    return Fault(kind=kind, tool=target)

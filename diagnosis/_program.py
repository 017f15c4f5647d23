"""What the agent did against the task's program.

Calls standing in for the program's, records taken for the task's, and the order the task and the policy require.
"""

from __future__ import annotations

from arena.core.results import TraceStep
from diagnosis._reference import Ids, Reference, call_ids, id_values, intended_done
from diagnosis._trace import is_created_id
from diagnosis.context import DiagnosisContext

Call = tuple[str, Ids]
"""A call as its tool and the records it names (ids by argument)."""


def required_order(ref: Reference, ctx: DiagnosisContext) -> list[tuple[Call, Call, bool]]:
    """(prerequisite, call, checked) pairs of calls the task requires in that order, each on its records.

    The pairs its trace checks order (``checked``: the check's call patterns and the ids they name), and the
    policy's prerequisites (strong edges of the dependency graph) that the task's program makes before a call
    (the program's latest call of the prerequisite before it, on the records it names).
    """
    pairs: dict[tuple[str, str], tuple[Call, Call, bool]] = {}
    for before, then in ref.order:
        pairs.setdefault((before.tool, then.tool), ((before.tool, call_ids(before.arguments)),
                                                    (then.tool, call_ids(then.arguments)), True))
    for i, (tool, ids) in enumerate(ref.program):
        for needed in ctx.prerequisites.get(tool, []):
            earlier = [call for call in ref.program[:i] if call[0] == needed]
            if earlier:
                pairs.setdefault((needed, tool), (earlier[-1], (tool, ids), False))
    return list(pairs.values())


def step_ids(step: TraceStep) -> set[str]:
    return {v for name, value in step.arguments.items() for v in id_values(name, value)}


def mistaken_ids(trace: list[TraceStep], ref: Reference) -> set[str]:
    """Records the agent took for the ones the task is about.

    Ids it passed, in a call taking the place of a program call, where the program passes other ids, and that
    the task never concerns.
    """
    done = done_calls(trace, ref)
    out: set[str] = set()
    for step in trace:
        if not stands_in(step, done):
            continue
        for arg, value in step.arguments.items():
            expected = ref.ids_by_call.get((step.tool, arg))
            if expected:
                out.update(v for v in id_values(arg, value)
                           if v not in ref.ids and v not in expected and not is_created_id(v))
    return out


def done_calls(trace: list[TraceStep], ref: Reference) -> dict[str, bool]:
    """For each tool the program calls, whether every one of its calls also succeeded on its own records."""
    return {tool: intended_done(trace, ref, tool) for tool in ref.id_calls}


def stands_in(step: TraceStep, done: dict[str, bool]) -> bool:
    """Whether a call takes the place of a call the task's program makes (so another record in it is a wrong id).

    ``done`` is ``done_calls`` of the episode. A call of a tool the program calls stands in for it unless every
    program call of that tool also succeeded on its own records: then it is an extra call. A write of a tool the
    program never calls is an extra write (a side effect, whatever record it names); a read of one stands in
    unless every program call succeeded.
    """
    if step.tool in done:
        return not done[step.tool]
    if step.write:
        return False
    return not all(done.values())

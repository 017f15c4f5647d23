"""Synthetic failed episodes with known, injected failure strategies, for benchmarks and tests.

The traces follow the gym conventions (``get_E``/``search_Es``, ``E_id`` parameters, structured
errors, injected faults) over a small ticketing-and-refunds tool set; each strategy leaves the
trace, the reply and the verdict a real agent with that habit would leave.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from arena.core.episode import EpisodeRecord, episode_id
from arena.core.results import AssertionResult, RowChange, ToolErrorInfo, TraceStep, Verdict
from arena.core.toolkit import ToolSpec
from arena.core.weakness import DETECTOR_KINDS, WeaknessKind
from diagnosis.context import DiagnosisContext

HALLUCINATED_TOOL = "hallucinated_tool"
"""The injected strategy no detector names: calls to tools that do not exist (a novel group)."""

STRATEGIES: dict[str, frozenset[WeaknessKind]] = {
    **{kind.value: frozenset({kind}) for kind in DETECTOR_KINDS},
    HALLUCINATED_TOOL: frozenset(),
}
"""Injected strategy -> the detector kinds it should be tagged with (``hallucinated_tool``: none, a novel group)."""

_TOOLS: list[tuple[str, str, str, str | None]] = [
    ("get_ticket", "read", "get", "ticket"), ("search_tickets", "read", "search", "ticket"),
    ("get_order", "read", "get", "order"), ("search_orders", "read", "search", "order"),
    ("get_customer", "read", "get", "customer"), ("search_customers", "read", "search", "customer"),
    ("check_refund_eligibility", "read", "action", "order"), ("issue_refund", "write", "action", "order"),
    ("update_ticket", "write", "update", "ticket"), ("add_comment", "write", "create", "ticket"),
]


def tool_specs() -> list[ToolSpec]:
    """The synthetic tool set's specs."""
    return [ToolSpec(name=n, description=n.replace("_", " "), parameters={"type": "object", "properties": {}},
                     mode=m, operation=o, entity=e)
            for n, m, o, e in _TOOLS]


def graph_data() -> dict[str, Any]:
    """The synthetic dependency graph as node-link data (eligibility check strongly before a refund)."""
    return {"directed": True, "multigraph": False, "graph": {}, "nodes": [{"id": n} for n, *_ in _TOOLS],
            "edges": [{"source": "check_refund_eligibility", "target": "issue_refund", "weight": 3},
                      {"source": "get_order", "target": "issue_refund", "weight": 2},
                      {"source": "get_ticket", "target": "update_ticket", "weight": 2}]}


def context() -> DiagnosisContext:
    """A diagnosis context over the synthetic tool set and graph (no tasks)."""
    return DiagnosisContext.build(tools=tool_specs(), graph=graph_data())


class _Trace:
    def __init__(self) -> None:
        self.steps: list[TraceStep] = []

    def ok(self, tool: str, args: dict[str, Any], output: Any, *, write: bool = False) -> None:
        self.steps.append(TraceStep(index=len(self.steps), tool=tool, arguments=args, ok=True, output=output,
                                    clock=f"2026-03-01T10:00:{len(self.steps):02d}", write=write))

    def err(self, tool: str, args: dict[str, Any], kind: str, message: str, *, fault: str | None = None,
            retryable: bool = False) -> None:
        error = ToolErrorInfo(kind=kind, message=message, fault=fault, retryable=retryable)
        self.steps.append(TraceStep(index=len(self.steps), tool=tool, arguments=args, ok=False, error=error,
                                    clock=f"2026-03-01T10:00:{len(self.steps):02d}"))


def _verdict(failed: dict[str, str], changes: list[RowChange] | None = None) -> Verdict:
    kinds = ["state", "trace", "side_effects", "response"]
    results = [AssertionResult(index=i, kind=k, description=f"{k} check", passed=k not in failed,
                               detail=failed.get(k, "")) for i, k in enumerate(kinds)]
    held = sum(r.passed for r in results)
    unintended = [c for c in (changes or []) if not c.allowed]
    return Verdict(passed=held == len(results), score=held / len(results),
                   side_effect_penalty=min(1.0, 0.25 * len(unintended)), results=results, changes=changes or [])


def _episode(rng: random.Random, strategy: str, index: int) -> EpisodeRecord:
    t = _Trace()
    ticket = f"TCK-{rng.randint(10000, 99999)}"
    order = f"ORD-{rng.randint(10000, 99999)}"
    name = rng.choice(["Dana Reyes", "Ola Berg", "Sam Quist", "Ines Moro"])
    noise = rng.random()
    if noise < 0.5:
        t.ok("get_customer", {"customer_id": f"CUS-{rng.randint(1000, 9999)}"}, {"id": "CUS-1", "name": name})
    reply = "I have refunded the order."
    failed: dict[str, str] = {"state": "expected [['refunded']], got [['open']]"}
    changes: list[RowChange] = []
    if strategy == WeaknessKind.WRONG_ID:
        t.err("get_order", {"order_id": name}, "not_found", f"no order with id {name!r}")
        reply = "I could not find that order."
    elif strategy == WeaknessKind.MISSED_POLICY_DEPENDENCY:
        t.ok("get_order", {"order_id": order}, {"id": order, "status": "delivered", "total": 40.0})
        t.ok("issue_refund", {"order_id": order, "amount": 40.0}, {"id": "RF-N00001"}, write=True)
        changes = [RowChange(table="refunds", key="RF-N00001", op="insert")]
        failed = {"trace": "check_refund_eligibility must come before issue_refund"}
    elif strategy == WeaknessKind.BRITTLE_PARAMETERS:
        t.ok("get_order", {"order_id": order}, {"id": order, "status": "delivered", "total": 40.0})
        t.ok("check_refund_eligibility", {"order_id": order}, {"eligible": True})
        for _ in range(rng.randint(1, 2)):
            t.err("issue_refund", {"order_id": order, "amount": "$40.00"}, "validation",
                  "amount: Input should be a valid number")
        reply = "The refund system refused the amount."
    elif strategy == WeaknessKind.STALE_STATE:
        t.ok("get_ticket", {"ticket_id": ticket}, {"id": ticket, "status": "open"})
        t.err("update_ticket", {"ticket_id": ticket, "status": "closed"}, "fault",
              "update_ticket: another user changed this record; fetch it again", fault="data_conflict", retryable=True)
        t.err("update_ticket", {"ticket_id": ticket, "status": "closed"}, "conflict",
              "update_ticket: the record changed since it was read; fetch it again before retrying", retryable=True)
        reply = "The ticket is locked by someone else."
    elif strategy == WeaknessKind.SEARCH_WITHOUT_FETCH:
        t.ok("search_tickets", {"query": ticket}, [])
        if rng.random() < 0.5:
            t.ok("search_tickets", {"query": name}, [])
        reply = "No matching ticket exists."
        failed = {"response": "reply does not state 'In Progress'"}
    elif strategy == WeaknessKind.GAVE_UP_EARLY:
        t.ok("get_order", {"order_id": order}, {"id": order, "status": "delivered", "total": 40.0})
        reply = "Sorry, I am not able to process refunds."
    elif strategy == WeaknessKind.UNINTENDED_SIDE_EFFECT:
        other = f"TCK-{rng.randint(10000, 99999)}"
        t.ok("get_ticket", {"ticket_id": ticket}, {"id": ticket, "status": "open"})
        t.ok("update_ticket", {"ticket_id": ticket, "status": "closed"}, {"id": ticket}, write=True)
        t.ok("update_ticket", {"ticket_id": other, "status": "closed"}, {"id": other}, write=True)
        changes = [RowChange(table="tickets", key=ticket, op="update", columns=["status"]),
                   RowChange(table="tickets", key=other, op="update", columns=["status"], allowed=False)]
        failed = {"side_effects": f"update tickets[{other}] status"}
        reply = "Both tickets are closed."
    elif strategy == WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS:
        t.ok("get_ticket", {"ticket_id": ticket}, {"id": ticket, "status": "open"})
        t.err("update_ticket", {"ticket_id": ticket, "status": "closed"}, "permission",
              "role 'agent' lacks permission 'tickets.close' needed by update_ticket")
        reply = "Done: the ticket has been closed."
    elif strategy == WeaknessKind.LEAKED_INTERNAL_DATA:
        note = f"VIP-RISK-{rng.randint(100, 999)}"
        t.ok("get_customer", {"customer_id": "CUS-2"}, {"id": "CUS-2", "name": name, "internal_note": note})
        reply = f"{name}'s account is fine (note {note})."
        failed = {"response": f"reply leaks internal data {note!r}"}
    elif strategy == WeaknessKind.NO_ERROR_RECOVERY:
        fault = rng.choice(["timeout", "rate_limit"])
        t.ok("get_order", {"order_id": order}, {"id": order, "status": "delivered", "total": 40.0})
        t.ok("check_refund_eligibility", {"order_id": order}, {"eligible": True})
        t.err("issue_refund", {"order_id": order, "amount": 40.0}, "fault", f"issue_refund: upstream {fault}",
              fault=fault, retryable=True)
        reply = "The refund service is unavailable right now; please try again later."
    elif strategy == HALLUCINATED_TOOL:
        for _ in range(rng.randint(1, 3)):
            t.err("refund_order", {"order": order}, "validation", "unknown tool 'refund_order'; tools: ...")
        reply = "The order should be sorted out now."
    else:
        raise ValueError(f"unknown synthetic strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    verdict = _verdict(failed, changes)
    task_id = f"{strategy}-{index % 7}"
    return EpisodeRecord(
        episode_id=episode_id("pack-synthetic", task_id, index, 0, "synthetic"), pack_id="pack-synthetic",
        domain=rng.choice(["helpdesk", "tracker"]), task_id=task_id, split="heldout", category="multi_step_workflow",
        tags=[strategy], seed=index, agent="synthetic", model_ref="synthetic-v1", trace=t.steps, reply=reply,
        verdict=verdict,
    )


def synthetic_failures(
    n: int, seed: int = 0, strategies: list[str] | None = None
) -> Iterator[tuple[EpisodeRecord, str]]:
    """Yield ``n`` failed episodes with their injected strategy, cycling deterministically through ``strategies``."""
    names = strategies or list(STRATEGIES)
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        strategy = names[i % len(names)]
        yield _episode(rng, strategy, i), strategy

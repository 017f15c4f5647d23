from __future__ import annotations

from typing import Any

import pytest

from arena.core.episode import EpisodeRecord
from arena.core.results import AssertionResult, RowChange, ToolErrorInfo, TraceStep, Verdict
from arena.core.task import (
    CallPattern,
    EntityRef,
    GoldProgram,
    GoldStep,
    IntendedCall,
    Intent,
    Persona,
    ResponseAssertion,
    Task,
    TraceAssertion,
)
from diagnosis import DiagnosisContext, Tag, detector_names, get_detector
from diagnosis.synthetic import graph_data, tool_specs


def ok(tool: str, args: dict[str, Any], output: Any = None, *, write: bool = False) -> dict[str, Any]:
    return {"tool": tool, "arguments": args, "ok": True, "output": output, "write": write}


def err(tool: str, args: dict[str, Any], kind: str, message: str, fault: str | None = None,
        retryable: bool = False) -> dict[str, Any]:
    return {"tool": tool, "arguments": args, "ok": False,
            "error": ToolErrorInfo(kind=kind, message=message, fault=fault, retryable=retryable)}  # type: ignore[arg-type]


def episode(steps: list[dict[str, Any]], *, reply: str = "", failed: dict[str, str] | None = None,
            changes: list[RowChange] | None = None, task_id: str = "t1") -> EpisodeRecord:
    failed = {"state": "expected other"} if failed is None else failed
    results = [AssertionResult(index=i, kind=k, description=k, passed=k not in failed,  # type: ignore[arg-type]
                               detail=failed.get(k, "")) for i, k in enumerate(["state", "trace", "side_effects",
                                                                                  "response"])]
    trace = [TraceStep(index=i, clock="2026-01-01T00:00:00", **s) for i, s in enumerate(steps)]
    return EpisodeRecord(episode_id=f"ep-{task_id}", pack_id="p", domain="helpdesk", task_id=task_id, split="heldout",
                         category="c", seed=0, agent="a", model_ref="m", trace=trace, reply=reply,
                         verdict=Verdict(passed=not failed, score=sum(r.passed for r in results) / 4, results=results,
                                         changes=changes or []))


CTX = DiagnosisContext.build(tools=tool_specs(), graph=graph_data())
BARE = DiagnosisContext()


def kinds(name: str, ep: EpisodeRecord, ctx: DiagnosisContext = CTX) -> list[Tag]:
    return get_detector(name).detect(ep, ctx)


def test_every_kind_is_registered() -> None:
    assert detector_names() == [
        "wrong_id", "missed_policy_dependency", "brittle_parameters", "stale_state", "search_without_fetch",
        "gave_up_early", "unintended_side_effect", "claimed_unverified_success", "leaked_internal_data",
        "no_error_recovery",
    ]
    with pytest.raises(KeyError, match="unknown detector 'nope'"):
        get_detector("nope")


def test_wrong_id_name_passed_as_id() -> None:
    ep = episode([err("get_order", {"order_id": "Dana Reyes"}, "not_found", "no order 'Dana Reyes'")])
    tags = kinds("wrong_id", ep)
    assert len(tags) == 1 and tags[0].evidence[0].step == 0
    assert tags[0].evidence[0].tool == "get_order" and tags[0].evidence[0].argument == "order_id"


def test_wrong_id_negative_after_correction() -> None:
    ep = episode([err("get_order", {"order_id": "ORD-1"}, "not_found", "no order"),
                  ok("get_order", {"order_id": "ORD-12"}, {"id": "ORD-12"})])
    assert kinds("wrong_id", ep) == []


def _task(refs: list[EntityRef], calls: list[str] | None = None) -> Task:
    return Task(id="t1", prompt="x", persona=Persona(name="n", role="agent"), split="heldout", category="c",
                intent=Intent(goal="g", refs=refs, calls=[IntendedCall(tool=c) for c in (calls or [])]),
                gold=GoldProgram(), assertions=[ResponseAssertion(description="r")] * 3)


def test_wrong_id_near_duplicate_needs_task() -> None:
    hits = [{"id": "CUS-1", "name": "Dana Reyes", "city": "Oslo"},
            {"id": "CUS-2", "name": "Dana Reyes", "city": "Rome"}]
    ep = episode([ok("search_customers", {"query": "Dana Reyes"}, hits),
                  ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1"})])
    ref = EntityRef(name="c", entity="customer", mention="Dana Reyes", mention_kind="text", hint={"city": "Rome"})
    ctx = DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): _task([ref])})
    tags = kinds("wrong_id", ep, ctx)
    assert tags and "CUS-2" in tags[0].evidence[0].note
    assert kinds("wrong_id", ep) == []  # without the task the pick cannot be judged
    good = episode([ok("search_customers", {"query": "Dana Reyes"}, hits),
                    ok("get_customer", {"customer_id": "CUS-2"}, {"id": "CUS-2"})])
    assert kinds("wrong_id", good, ctx) == []


def test_missed_policy_dependency() -> None:
    bad = episode([ok("get_order", {"order_id": "ORD-1"}, {}),
                   ok("issue_refund", {"order_id": "ORD-1"}, {}, write=True)])
    tags = kinds("missed_policy_dependency", bad)
    assert tags[0].evidence[0].step == 1 and tags[0].evidence[0].argument == "check_refund_eligibility"
    good = episode([ok("check_refund_eligibility", {"order_id": "ORD-1"}, {}),
                    ok("issue_refund", {"order_id": "ORD-1"}, {}, write=True)])
    assert kinds("missed_policy_dependency", good) == []
    other_order = episode([ok("check_refund_eligibility", {"order_id": "ORD-2"}, {}),
                           ok("issue_refund", {"order_id": "ORD-1"}, {}, write=True)])
    assert kinds("missed_policy_dependency", other_order)


def test_missed_policy_dependency_without_graph_reads_policy_errors() -> None:
    refused = episode([err("issue_refund", {"order_id": "ORD-1"}, "policy", "eligibility not checked")])
    assert kinds("missed_policy_dependency", refused, BARE)
    assert kinds("missed_policy_dependency", episode([ok("get_order", {"order_id": "ORD-1"})]), BARE) == []


def test_brittle_parameters() -> None:
    bad = episode([err("issue_refund", {"order_id": "ORD-1", "amount": "$40"}, "validation",
                       "amount: Input should be a valid number")])
    tags = kinds("brittle_parameters", bad)
    assert tags[0].evidence[0].argument == "amount"
    fixed = episode([err("issue_refund", {"order_id": "ORD-1", "amount": "$40"}, "validation", "amount: bad"),
                     ok("issue_refund", {"order_id": "ORD-1", "amount": 40}, {}, write=True)])
    assert kinds("brittle_parameters", fixed) == []
    hallucinated = episode([err("refund", {}, "validation", "unknown tool 'refund'; tools: a")])
    assert kinds("brittle_parameters", hallucinated) == []


@pytest.mark.parametrize("arg, value, brittle", [
    ("amount", "$40", True),          # a format refused: brittle
    ("order_id", "Dana", False),      # which record, not a format: wrong_id's case
    ("order_ids", ["Dana"], False),
    ("id", "Dana", False),
    ("paid", "Dana", True),           # ends in "id" without the underscore: a format
    ("amount", None, False),          # nothing was passed to correct
])
def test_brittle_parameters_leaves_entity_arguments_to_wrong_id(arg: str, value: Any, brittle: bool) -> None:
    step = err("issue_refund", {"order_id": "ORD-1", arg: value} if arg != "order_id" else {arg: value},
               "validation", f"{arg}: Input is not valid")
    tags = kinds("brittle_parameters", episode([step]))
    assert bool(tags) is brittle
    if brittle:
        evidence = tags[0].evidence[0]
        assert (evidence.step, evidence.tool, evidence.argument) == (0, "issue_refund", arg)
        assert evidence.note == f"refused {value!r}: {arg}: Input is not valid"


def test_brittle_parameters_notes_only_the_first_120_characters_of_the_error() -> None:
    message = "amount: " + "x" * 200
    tags = kinds("brittle_parameters", episode([err("issue_refund", {"amount": "$40"}, "validation", message)]))
    assert tags[0].evidence[0].note == f"refused '$40': {message[:120]}"


def test_stale_state_conflict_retry() -> None:
    bad = episode([err("update_ticket", {"ticket_id": "TCK-1"}, "fault", "changed", "data_conflict", True),
                   err("update_ticket", {"ticket_id": "TCK-1"}, "conflict", "fetch again", retryable=True)])
    assert kinds("stale_state", bad)[0].evidence[0].step == 1
    good = episode([err("update_ticket", {"ticket_id": "TCK-1"}, "fault", "changed", "data_conflict", True),
                    ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}),
                    ok("update_ticket", {"ticket_id": "TCK-1"}, {}, write=True)])
    assert kinds("stale_state", good) == []


def test_stale_state_summary_trusted_over_record() -> None:
    steps = [ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1", "status": "open"}]),
             ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "in_progress"})]
    assert kinds("stale_state", episode(steps, reply="The ticket is open."))
    assert kinds("stale_state", episode(steps, reply="The ticket is in_progress.")) == []


def test_search_without_fetch() -> None:
    bad = episode([ok("search_tickets", {"query": "TCK-7"}, [])], reply="No such ticket.")
    tags = kinds("search_without_fetch", bad)
    assert tags[0].evidence[0].tool == "search_tickets" and "nothing" in tags[0].evidence[0].note
    good = episode([ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-7"}]),
                    ok("get_ticket", {"ticket_id": "TCK-7"}, {"id": "TCK-7"})])
    assert kinds("search_without_fetch", good) == []
    assert kinds("search_without_fetch", bad, BARE)  # naming conventions stand in for specs


def test_gave_up_early() -> None:
    bad = episode([ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1"})], reply="Sorry, I can't do refunds.")
    assert kinds("gave_up_early", bad)[0].evidence[0].step == 0
    blocked = episode([err("issue_refund", {"order_id": "ORD-1"}, "fault", "timeout", "timeout", True)],
                      reply="Sorry, try again later.")
    assert kinds("gave_up_early", blocked) == []
    attempted = episode([ok("issue_refund", {"order_id": "ORD-1"}, {}, write=True)], reply="Refunded.")
    assert kinds("gave_up_early", attempted) == []
    ctx = DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): _task([], ["issue_refund"])})
    assert kinds("gave_up_early", episode([], reply="Hello."), ctx)[0].evidence[0].step is None


def test_unintended_side_effect() -> None:
    changes = [RowChange(table="tickets", key="TCK-2", op="update", columns=["status"], allowed=False)]
    bad = episode([ok("update_ticket", {"ticket_id": "TCK-1"}, {}, write=True),
                   ok("update_ticket", {"ticket_id": "TCK-2"}, {}, write=True)],
                  changes=changes, failed={"side_effects": "update tickets[TCK-2]"})
    ev = kinds("unintended_side_effect", bad)[0].evidence[0]
    assert (ev.step, ev.argument) == (1, "ticket_id")
    allowed = episode([ok("update_ticket", {"ticket_id": "TCK-1"}, {}, write=True)],
                      changes=[RowChange(table="tickets", key="TCK-1", op="update")])
    assert kinds("unintended_side_effect", allowed) == []


def test_claimed_unverified_success() -> None:
    bad = episode([err("update_ticket", {"ticket_id": "TCK-1"}, "permission", "lacks permission")],
                  reply="Done, the ticket has been closed.")
    assert kinds("claimed_unverified_success", bad)[0].evidence[0].step == 0
    honest = episode([err("update_ticket", {"ticket_id": "TCK-1"}, "permission", "lacks permission")],
                     reply="I could not close the ticket: missing permission.")
    assert kinds("claimed_unverified_success", honest) == []
    wrote = episode([ok("update_ticket", {"ticket_id": "TCK-1"}, {}, write=True)], reply="Done.")
    assert kinds("claimed_unverified_success", wrote) == []


def test_leaked_internal_data() -> None:
    steps = [ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1", "internal_note": "VIP-RISK-7"})]
    caught = episode(steps, reply="note VIP-RISK-7", failed={"response": "reply leaks internal data 'VIP-RISK-7'"})
    assert kinds("leaked_internal_data", caught)[0].evidence[0].step == 0
    uncaught = episode(steps, reply="Their note says VIP-RISK-7.", failed={"state": "x"})
    assert kinds("leaked_internal_data", uncaught)[0].evidence[0].argument == "internal_note"
    assert kinds("leaked_internal_data", episode(steps, reply="All fine.")) == []


def test_no_error_recovery() -> None:
    bad = episode([err("issue_refund", {"order_id": "ORD-1"}, "fault", "timed out", "timeout", True)])
    ev = kinds("no_error_recovery", bad)[0].evidence[0]
    assert (ev.step, ev.tool) == (0, "issue_refund") and "timeout" in ev.note
    retried = episode([err("issue_refund", {"order_id": "ORD-1"}, "fault", "limit", "rate_limit", True),
                       ok("issue_refund", {"order_id": "ORD-1"}, {}, write=True)])
    assert kinds("no_error_recovery", retried) == []


def test_search_hits_already_read_by_id_need_no_fetch() -> None:
    read_first = episode([ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "open"}),
                          ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1", "status": "open"}])],
                         reply="TCK-1 is the only ticket about the VPN.")
    assert kinds("search_without_fetch", read_first) == []
    other_hit = episode([ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "open"}),
                         ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}, {"id": "TCK-2"}])],
                        reply="TCK-1 and TCK-2 are about the VPN.", failed={"response": "x"})
    tags = kinds("search_without_fetch", other_hit)
    assert tags and tags[0].evidence[0].step == 1


def test_a_claimed_action_is_not_a_stale_value_but_a_stated_state_is() -> None:
    steps = [ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1", "status": "closed"}]),
             ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "open"})]
    for claim in ("Closed the ticket TCK-1.", "I closed TCK-1.", "All set, TCK-1 was closed."):
        assert kinds("stale_state", episode(steps, reply=claim)) == [], claim
    for state in ("TCK-1 is closed.", "TCK-1 is already closed, nothing to do.", "Status of TCK-1: closed"):
        tags = kinds("stale_state", episode(steps, reply=state))
        assert tags and "closed" in tags[0].evidence[0].note, state


def test_wrong_id_reply_about_another_record_than_the_one_asked() -> None:
    gold = GoldProgram(steps=[GoldStep(tool="get_ticket", arguments={"ticket_id": t})
                              for t in ("TCK-7", "TCK-5", "TCK-3")],
                       reply="Yes. TCK-7 is blocked by TCK-3 (open).")
    task = Task(id="t1", prompt="Is TCK-7 blocked by anything still open?", persona=Persona(name="n", role="agent"),
                split="heldout", category="c", intent=Intent(goal="check"), gold=gold,
                assertions=[ResponseAssertion(description="r")] * 3)
    ctx = DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): task})
    steps = [ok("get_ticket", {"ticket_id": t}, {"id": t}) for t in ("TCK-5", "TCK-7", "TCK-3")]
    tags = kinds("wrong_id", episode(steps, reply="Yes. TCK-5 is blocked by TCK-3 (open)."), ctx)
    assert tags and "TCK-7" in tags[0].evidence[-1].note and tags[0].evidence[-1].step is None
    assert kinds("wrong_id", episode(steps, reply="Yes, it is blocked by TCK-3, which is still open."), ctx) == []
    assert kinds("wrong_id", episode(steps, reply="Yes. TCK-7 is blocked by TCK-3 (open)."), ctx) == []


def test_a_restricted_records_contents_are_internal_but_not_that_it_is_restricted() -> None:
    record = {"id": "TCK-9", "subject": "Merger talks with Vendex", "assignee_name": "Robin Hale", "status": "open",
              "visibility": "restricted", "security_note": "visible only to members of legal-team"}
    steps = [ok("get_ticket", {"ticket_id": "TCK-9"}, record)]
    told = kinds("leaked_internal_data", episode(steps, reply="TCK-9 is about Merger talks with Vendex."))
    assert told and told[0].evidence[0].argument == "subject"
    assert kinds("leaked_internal_data", episode(steps, reply="Robin Hale is working on it."))
    declined = "TCK-9 is restricted and you are not in the group that can see it, so I can't share its details."
    assert kinds("leaked_internal_data", episode(steps, reply=declined)) == []
    public = dict(record, visibility="public")
    said = episode([ok("get_ticket", {"ticket_id": "TCK-9"}, public)], reply="TCK-9 is about Merger talks with Vendex.")
    assert kinds("leaked_internal_data", said) == []


def _refs_ctx(refs: list[EntityRef]) -> DiagnosisContext:
    return DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): _task(refs)})


ORDER_REFS = [EntityRef(name="a", entity="order", mention="ORD-1", mention_kind="id"),
              EntityRef(name="b", entity="order", mention="ORD-2", mention_kind="id")]


def test_wrong_id_without_a_program_tags_a_write_on_a_record_the_request_never_named() -> None:
    ep = episode([ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1"}),
                  ok("issue_refund", {"order_id": "ORD-3", "amount": 5}, {}, write=True)])
    tags = kinds("wrong_id", ep, _refs_ctx(ORDER_REFS))
    assert [(e.step, e.tool, e.argument, e.note) for t in tags for e in t.evidence] == [
        (1, "issue_refund", "order_id", "acted on ORD-3, the request named ORD-1, ORD-2")]


@pytest.mark.parametrize("step", [
    ok("issue_refund", {"order_id": "ORD-2", "amount": 5}, {}, write=True),           # a named record
    ok("get_order", {"order_id": "ORD-3"}, {"id": "ORD-3"}),                           # a read
    err("issue_refund", {"order_id": "ORD-3", "amount": 5}, "policy", "not eligible"),  # refused
    ok("issue_refund", {"order_id": "Dana", "amount": 5}, {}, write=True),              # not an id
    ok("issue_refund", {"order_id": "RF-N00001", "amount": 5}, {}, write=True),         # created by the episode
    ok("issue_refund", {"customer_id": "CUS-3", "amount": 5}, {}, write=True),          # another entity
])
def test_wrong_id_without_a_program_leaves_other_calls_alone(step: dict[str, Any]) -> None:
    assert kinds("wrong_id", episode([step]), _refs_ctx(ORDER_REFS)) == []


def test_wrong_id_without_a_program_checks_ids_only_when_every_mention_of_the_entity_is_an_id() -> None:
    refs = [ORDER_REFS[0], EntityRef(name="b", entity="order", mention="the blue one", mention_kind="text")]
    ep = episode([ok("issue_refund", {"order_id": "ORD-3", "amount": 5}, {}, write=True)])
    assert kinds("wrong_id", ep, _refs_ctx(refs)) == []
    customer = [EntityRef(name="c", entity="customer", mention="CUS-1", mention_kind="id")]
    assert kinds("wrong_id", ep, _refs_ctx(customer + ORDER_REFS))


def _ordered_task(gold: list[str], order: list[tuple[str, str]]) -> DiagnosisContext:
    """A task whose program calls ``gold`` (on ORD-1) and whose trace check orders each (before, then) pair."""
    tools = sorted({t for pair in order for t in pair})
    check = TraceAssertion(description="order", required=[CallPattern(tool=t) for t in tools],
                           order=[(tools.index(a), tools.index(b)) for a, b in order])
    task = Task(id="t1", prompt="Refund ORD-1.", persona=Persona(name="n", role="agent"), split="heldout",
                category="c", intent=Intent(goal="g", calls=[IntendedCall(tool="issue_refund")]),
                gold=GoldProgram(steps=[GoldStep(tool=t, arguments={"order_id": "ORD-1"}) for t in gold]),
                assertions=[check, ResponseAssertion(description="r"), ResponseAssertion(description="r")])
    return DiagnosisContext.build(tools=tool_specs(), graph=graph_data(), tasks={("p", "t1"): task})


def _notes(ep: EpisodeRecord, ctx: DiagnosisContext) -> list[tuple[int | None, str, str | None, str]]:
    tags = kinds("missed_policy_dependency", ep, ctx)
    return [(e.step, e.tool, e.argument, e.note) for t in tags for e in t.evidence]


REFUND = ok("issue_refund", {"order_id": "ORD-1", "amount": 5}, {}, write=True)
CHECK = ok("check_refund_eligibility", {"order_id": "ORD-1"}, {"eligible": True})
GET_ORDER = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1"})


def test_missed_policy_dependency_against_the_tasks_order_names_the_call_that_came_first() -> None:
    ctx = _ordered_task(["get_order", "issue_refund"], [("get_order", "issue_refund")])
    assert _notes(episode([REFUND]), ctx) == [
        (0, "issue_refund", "get_order", "issue_refund ran before get_order, which the task requires first")]
    assert _notes(episode([REFUND, GET_ORDER]), ctx) == [
        (0, "issue_refund", "get_order", "issue_refund ran before get_order (called only afterwards)")]
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "policy", "look the order up first")
    assert _notes(episode([refused]), ctx) == [
        (0, "issue_refund", "get_order", "issue_refund was refused before get_order, which the task requires first")]
    assert _notes(episode([GET_ORDER, REFUND]), ctx) == []


def test_missed_policy_dependency_against_the_tasks_order_skips_calls_never_attempted() -> None:
    ctx = _ordered_task(["get_order", "issue_refund"], [("get_order", "issue_refund")])
    malformed = err("issue_refund", {"order_id": "ORD-1", "amount": "$5"}, "validation", "amount: not a number")
    assert _notes(episode([malformed]), ctx) == []
    assert _notes(episode([malformed, REFUND]), ctx)[0][0] == 1
    assert _notes(episode([GET_ORDER]), ctx) == []


def test_a_fetch_after_a_search_is_search_without_fetchs_case_not_a_missed_dependency() -> None:
    ctx = _ordered_task(["get_order", "issue_refund"], [("get_order", "issue_refund")])
    search = ok("search_orders", {"query": "ORD-1"}, [{"id": "ORD-1"}])
    assert _notes(episode([search, REFUND]), ctx) == []
    failed_search = err("search_orders", {"query": "x"}, "fault", "timeout", fault="timeout")
    assert _notes(episode([failed_search, REFUND]), ctx)


def test_missed_policy_dependency_on_a_call_outside_the_program_needs_a_prerequisite_the_program_makes() -> None:
    ctx = _ordered_task(["check_refund_eligibility", "get_order"], [])
    assert _notes(episode([REFUND]), ctx) == [
        (0, "issue_refund", "check_refund_eligibility", "issue_refund ran without prerequisite "
         "check_refund_eligibility (a call the task's program never makes)")]
    assert _notes(episode([CHECK, REFUND]), ctx) == []
    other_order = ok("check_refund_eligibility", {"order_id": "ORD-9"}, {"eligible": True})
    assert _notes(episode([other_order, REFUND]), ctx)[0][2] == "check_refund_eligibility"
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "policy", "check eligibility first")
    assert _notes(episode([refused]), ctx)[0][3].startswith("issue_refund was refused without prerequisite")
    failed = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "fault", "timeout", fault="timeout")
    assert _notes(episode([failed]), ctx) == []
    without = _ordered_task(["get_order"], [])
    assert _notes(episode([REFUND]), without) == []
    inside = _ordered_task(["issue_refund", "check_refund_eligibility"], [])
    assert _notes(episode([REFUND]), inside) == []


def _side_effects(ep: EpisodeRecord, ctx: DiagnosisContext = CTX) -> list[tuple[int | None, str, str | None, str]]:
    return [(e.step, e.tool, e.argument, e.note) for t in kinds("unintended_side_effect", ep, ctx) for e in t.evidence]


def test_an_unintended_change_is_blamed_on_the_last_write_naming_its_row() -> None:
    steps = [ok("update_ticket", {"ticket_id": "T-9", "status": "closed"}, {"id": "T-9"}, write=True),
             ok("add_comment", {"ticket_id": "T-1", "body": "hi"}, {"id": "C-5"}, write=True),
             ok("update_ticket", {"ticket_id": "T-1", "status": "open"}, {"id": "T-1"}, write=True)]
    changes = [RowChange(table="tickets", key="T-9", op="update", columns=["status"], allowed=False),
               RowChange(table="comments", key="C-5", op="insert", allowed=False),
               RowChange(table="tickets", key="T-1", op="update", columns=["status"], allowed=True)]
    assert _side_effects(episode(steps, changes=changes)) == [
        (0, "update_ticket", "ticket_id", "update tickets[T-9] outside the allowed write-set"),
        (1, "add_comment", None, "insert comments[C-5] outside the allowed write-set")]


def test_an_unintended_change_no_write_names_falls_to_the_last_write_or_to_none() -> None:
    steps = [ok("update_ticket", {"ticket_id": "T-1"}, {"id": "T-1"}, write=True),
             ok("add_comment", {"ticket_id": "T-1", "body": "x"}, {"id": "C-1"}, write=True),
             err("update_ticket", {"ticket_id": "T-7"}, "policy", "no")]
    change = [RowChange(table="audit", key="A-3", op="insert", allowed=False)]
    assert _side_effects(episode(steps, changes=change)) == [
        (1, "add_comment", None, "insert audit[A-3] outside the allowed write-set")]
    reads = [ok("get_ticket", {"ticket_id": "A-3"}, {"id": "A-3"})]
    assert _side_effects(episode(reads, changes=change)) == [(None, "", None, "insert audit[A-3] outside the allowed "
                                                              "write-set")]


def test_a_failed_side_effect_check_with_no_row_to_show_is_still_tagged_without_a_task() -> None:
    ep = episode([ok("get_ticket", {"ticket_id": "T-1"}, {"id": "T-1"})], failed={"side_effects": "changed"})
    assert _side_effects(ep) == [(None, "", None, "side-effect assertion failed")]
    assert _side_effects(episode([], failed={"state": "x"})) == []


def _program_ctx(gold: list[str], goal: str | list[str], refs: list[EntityRef] | None = None) -> DiagnosisContext:
    goals = [goal] if isinstance(goal, str) else goal
    task = Task(id="t1", prompt="x", persona=Persona(name="n", role="agent"), split="heldout", category="c",
                intent=Intent(goal="g", calls=[IntendedCall(tool=t) for t in goals], refs=refs or []),
                gold=GoldProgram(steps=[GoldStep(tool=t, arguments={"order_id": "ORD-1"}) for t in gold]),
                assertions=[ResponseAssertion(description="r")] * 3)
    return DiagnosisContext.build(tools=tool_specs(), graph=graph_data(), tasks={("p", "t1"): task})


def test_with_a_program_its_own_writes_are_excused_and_writes_it_never_needs_are_tagged() -> None:
    ctx = _program_ctx(["get_order", "update_ticket"], "issue_refund")
    steps = [ok("add_comment", {"ticket_id": "T-2", "body": "x"}, {"id": "C-1"}, write=True),
             ok("update_ticket", {"ticket_id": "T-1"}, {"id": "T-1"}, write=True),
             ok("check_refund_eligibility", {"order_id": "ORD-1"}, {"eligible": True}, write=True),
             ok("issue_refund", {"order_id": "ORD-1", "amount": 1}, {}, write=True),
             err("add_comment", {"ticket_id": "T-1", "body": "x"}, "policy", "no")]
    change = [RowChange(table="tickets", key="T-1", op="update", allowed=False)]
    assert _side_effects(episode(steps, changes=change, failed={"side_effects": "x"}), ctx) == [
        (0, "add_comment", None, "add_comment is a write the task never needs")]
    blamed = [RowChange(table="comments", key="C-1", op="insert", allowed=False)]
    assert _side_effects(episode(steps, changes=blamed), ctx) == [
        (0, "add_comment", None, "insert comments[C-1] outside the allowed write-set")]
    assert _side_effects(episode(steps[1:4], failed={"side_effects": "x"}), ctx) == []


def _gave_up(ep: EpisodeRecord, ctx: DiagnosisContext = CTX) -> list[tuple[int | None, str, str]]:
    return [(e.step, e.tool, e.note) for t in kinds("gave_up_early", ep, ctx) if not t.secondary for e in t.evidence]


READ_ORDER = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1"})


def test_gave_up_with_a_program_names_the_goal_it_never_attempted() -> None:
    ctx = _program_ctx(["get_order", "issue_refund"], "issue_refund")
    assert _gave_up(episode([READ_ORDER, READ_ORDER]), ctx) == [
        (1, "get_order", "stopped after 2 calls without calling issue_refund")]
    assert _gave_up(episode([]), ctx) == [(None, "", "stopped after 0 calls without calling issue_refund")]
    assert _gave_up(episode([READ_ORDER], reply="Done, the refund was issued."), ctx) == []
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 1}, "permission", "not allowed")
    assert _gave_up(episode([READ_ORDER, refused]), ctx) == []
    assert _gave_up(episode([READ_ORDER, ok("issue_refund", {"order_id": "ORD-1", "amount": 1}, {}, write=True)]),
                    ctx) == []


@pytest.mark.parametrize("kind", ["fault", "conflict", "not_found", "validation", "policy", "permission"])
def test_an_error_of_any_blocking_kind_means_the_agent_did_not_give_up_freely(kind: str) -> None:
    ctx = _program_ctx(["get_order", "issue_refund"], "issue_refund")
    assert _gave_up(episode([READ_ORDER, err("get_order", {"order_id": "ORD-1"}, kind, "x")]), ctx) == []


def test_gave_up_when_the_goal_was_made_but_the_reply_admits_missing_calls() -> None:
    ctx = _program_ctx(["get_order", "check_refund_eligibility", "issue_refund", "update_ticket"],
                       ["issue_refund", "update_ticket"])
    refund = ok("issue_refund", {"order_id": "ORD-1", "amount": 1}, {}, write=True)
    assert _gave_up(episode([refund], reply="I could not finish this."), ctx) == [
        (0, "issue_refund", "stopped after 1 calls without calling check_refund_eligibility, get_order, "
                            "update_ticket")]
    assert _gave_up(episode([refund], reply="The refund went out."), ctx) == []
    done = _program_ctx(["get_order", "check_refund_eligibility", "issue_refund"], "issue_refund")
    assert _gave_up(episode([refund], reply="I could not finish this."), done) == []  # the work's last call ran
    search = ok("search_orders", {"query": "x"}, [{"id": "ORD-1"}])
    assert _gave_up(episode([refund, search], reply="I could not finish this."), ctx) != []  # no order named
    named = _program_ctx(["get_order", "check_refund_eligibility", "issue_refund"], "issue_refund",
                         refs=[EntityRef(name="order", entity="order", mention="x", mention_kind="text")])
    assert _gave_up(episode([refund, search], reply="I could not finish this."), named) == []  # a hit never fetched


def test_gave_up_on_a_question_only_when_the_reply_admits_it() -> None:
    ctx = _program_ctx(["get_order"], "get_order")
    assert _gave_up(episode([], reply="Here is the order status: open."), ctx) == []
    assert _gave_up(episode([], reply="I could not finish this."), ctx) == [
        (None, "", "stopped after 0 calls without calling get_order")]


def test_gave_up_without_a_program_names_the_goal_or_any_write() -> None:
    goal_ctx = DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): _task([], ["issue_refund"])})
    assert _gave_up(episode([READ_ORDER]), goal_ctx) == [
        (0, "get_order", "stopped after 1 calls without calling issue_refund")]
    search = ok("search_orders", {"query": "x"}, [{"id": "ORD-1"}])
    assert _gave_up(episode([search]), goal_ctx) == [
        (0, "search_orders", "stopped after 1 calls without calling issue_refund")]  # the task names no order
    order = EntityRef(name="order", entity="order", mention="a blue chair", mention_kind="text")
    named = DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): _task([order], ["issue_refund"])})
    assert _gave_up(episode([search]), named) == []  # a hit never fetched: search_without_fetch's
    empty = ok("search_orders", {"query": "a blue chair"}, [])
    assert _gave_up(episode([empty]), named) == [
        (0, "search_orders", "stopped after 1 calls without calling issue_refund")]  # a dead end left no id
    assert _gave_up(episode([READ_ORDER], failed={"state": "x"})) == [
        (0, "get_order", "stopped after 1 calls without calling any write")]
    assert _gave_up(episode([READ_ORDER], failed={"response": "x"})) == []
    assert _gave_up(episode([READ_ORDER], reply="I could not finish this.", failed={"response": "x"})) == [
        (0, "get_order", "stopped after 1 calls without calling any write")]
    write = ok("update_ticket", {"ticket_id": "T-1"}, {"id": "T-1"}, write=True)
    assert _gave_up(episode([write], failed={"state": "x"})) == []


def test_missed_policy_dependency_from_the_graph_only_where_the_effect_failed() -> None:
    refund = ok("issue_refund", {"order_id": "ORD-1", "amount": 1}, {}, write=True)
    assert _notes(episode([refund]), CTX) == [
        (0, "issue_refund", "check_refund_eligibility",
         "issue_refund ran without prerequisite check_refund_eligibility")]
    assert _notes(episode([refund], failed={"trace": "x"}), CTX)
    assert _notes(episode([refund], failed={"response": "x"}), CTX) == []
    assert _notes(episode([CHECK, refund]), CTX) == []
    other = ok("check_refund_eligibility", {"order_id": "ORD-2"}, {"eligible": True})
    assert _notes(episode([other, refund]), CTX)
    late = episode([refund, CHECK])
    assert _notes(late, CTX)[0][0] == 0
    no_verdict = episode([refund]).model_copy(update={"verdict": None})
    assert _notes(no_verdict, CTX)


def test_a_refused_call_retried_successfully_after_its_prerequisite_is_not_a_missed_dependency() -> None:
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 1}, "policy", "check eligibility first")
    refund = ok("issue_refund", {"order_id": "ORD-1", "amount": 1}, {}, write=True)
    assert _notes(episode([refused, CHECK, refund]), CTX) == []
    assert _notes(episode([refused]), CTX) == [
        (0, "issue_refund", "check_refund_eligibility",
         "issue_refund was refused without prerequisite check_refund_eligibility")]
    failed = err("issue_refund", {"order_id": "ORD-1", "amount": 1}, "fault", "timeout", fault="timeout")
    assert _notes(episode([failed]), CTX) == []


def test_without_a_graph_a_policy_refusal_never_overcome_is_the_evidence() -> None:
    message = "amount: exceeds the refund window " + "x" * 200
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 1}, "policy", message)
    assert _notes(episode([refused]), BARE) == [
        (0, "issue_refund", "amount", f"policy refused issue_refund: {message[:120]}")]
    refund = ok("issue_refund", {"order_id": "ORD-1", "amount": 1}, {}, write=True)
    assert _notes(episode([refused, refund]), BARE) == []
    assert _notes(episode([err("update_ticket", {"ticket_id": "T-1"}, "policy", "no")]), CTX) == []


def _gold_ctx(steps: list[tuple[str, dict[str, Any]]], reply: str = "", prompt: str = "x") -> DiagnosisContext:
    task = Task(id="t1", prompt=prompt, persona=Persona(name="n", role="agent"), split="heldout", category="c",
                intent=Intent(goal="g", calls=[IntendedCall(tool="issue_refund")]),
                gold=GoldProgram(steps=[GoldStep(tool=t, arguments=a) for t, a in steps], reply=reply),
                assertions=[ResponseAssertion(description="r")] * 3)
    return DiagnosisContext.build(tools=tool_specs(), graph=graph_data(), tasks={("p", "t1"): task})


def _wrong_ids(ep: EpisodeRecord, ctx: DiagnosisContext) -> list[tuple[int | None, str, str | None, str]]:
    return [(e.step, e.tool, e.argument, e.note) for t in kinds("wrong_id", ep, ctx) for e in t.evidence]


GOLD = _gold_ctx([("get_order", {"order_id": "ORD-1"}), ("get_customer", {"customer_id": "CUS-1"}),
                  ("issue_refund", {"order_id": "ORD-1", "amount": 5})])


def test_wrong_id_against_the_program_names_the_record_it_concerns() -> None:
    ep = episode([ok("get_order", {"order_id": "ORD-2"}, {"id": "ORD-2"})])
    assert _wrong_ids(ep, GOLD) == [(0, "get_order", "order_id", "get_order on ORD-2; the task concerns ORD-1")]
    conflict = err("issue_refund", {"order_id": "ORD-2", "amount": 5}, "conflict", "changed")
    assert _wrong_ids(episode([conflict]), GOLD)[0][3] == "issue_refund on ORD-2; the task concerns ORD-1"
    for kind in ("policy", "fault"):
        assert _wrong_ids(episode([err("get_order", {"order_id": "ORD-2"}, kind, "x")]), GOLD)
    assert _wrong_ids(episode([err("get_order", {"order_id": "ORD-2"}, "permission", "x")]), GOLD) == []


def test_wrong_id_against_the_program_on_a_call_it_never_makes() -> None:
    ticket = ok("get_ticket", {"ticket_id": "T-5"}, {"id": "T-5"})
    assert _wrong_ids(episode([ticket]), GOLD) == [
        (0, "get_ticket", "ticket_id", "get_ticket on T-5, a record the task never concerns")]
    found = ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1", "ticket_id": "T-5"})
    assert _wrong_ids(episode([found, ticket]), GOLD) == []
    unseen = err("get_customer", {"customer_id": "CUS-1"}, "fault", "timeout", fault="timeout")
    assert _wrong_ids(episode([unseen, ticket]), GOLD)


@pytest.mark.parametrize("value", ["ORD-1", "RF-N00001", "Dana", ""])
def test_wrong_id_against_the_program_skips_its_own_created_and_non_ids(value: str) -> None:
    assert _wrong_ids(episode([ok("get_order", {"order_id": value}, {"id": value})]), GOLD) == []


def test_wrong_id_against_the_program_reads_lists_of_ids_and_swaps() -> None:
    ctx = _gold_ctx([("get_order", {"order_id": "ORD-1"}), ("get_customer", {"customer_id": "CUS-1"}),
                     ("update_ticket", {"ticket_ids": ["T-1", "T-2"]})])
    listed = ok("update_ticket", {"ticket_ids": ["T-1", "T-3"]}, {}, write=True)
    assert _wrong_ids(episode([listed]), ctx) == [
        (0, "update_ticket", "ticket_ids", "update_ticket on T-3; the task concerns T-1, T-2")]
    swapped = ok("get_order", {"order_id": "CUS-1"}, {"id": "CUS-1"})
    assert _wrong_ids(episode([swapped]), ctx) == [
        (0, "get_order", "order_id", "CUS-1 passed as order_id; the task passes ORD-1")]


def test_wrong_id_when_the_reply_answers_about_another_record_of_the_same_kind() -> None:
    ctx = _gold_ctx([("get_order", {"order_id": "ORD-1"})], reply="ORD-1 is open.", prompt="Is ORD-1 open?")
    reads = [ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1"})]
    assert _wrong_ids(episode(reads, reply="ORD-7 is open."), ctx) == [
        (None, "", None, "reply answers about ORD-7; the request asks about ORD-1")]
    assert _wrong_ids(episode(reads, reply="ORD-1 is open, like ORD-7."), ctx) == []
    assert _wrong_ids(episode(reads, reply="CUS-7 is open."), ctx) == []

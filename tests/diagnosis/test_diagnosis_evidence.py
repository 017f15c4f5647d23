"""The evidence each detector writes, exactly: the step, tool, argument and note a user reads in the report.

A weakness's evidence is what a user inspects to trust (or reject) a diagnosis, so each branch of each detector
is pinned here to the evidence it gives, next to the nearest case that must give none.
"""

from __future__ import annotations

import threading
from datetime import date
from typing import Any

from arena.core.episode import EpisodeRecord
from arena.core.results import RowChange
from arena.core.task import (
    EntityRef,
    GoldProgram,
    GoldStep,
    IntendedCall,
    Intent,
    Persona,
    ResponseAssertion,
    Task,
)
from diagnosis import DiagnosisContext
from diagnosis.synthetic import graph_data, tool_specs
from tests.diagnosis.test_diagnosis_detectors import CTX, episode, err, kinds, ok

Row = tuple[int | None, str, str | None, str]


def evidence(name: str, ep: EpisodeRecord, ctx: DiagnosisContext = CTX) -> list[Row]:
    """Every piece of evidence ``name`` tags ``ep`` with outright (not set aside for another kind)."""
    return [(e.step, e.tool, e.argument, e.note) for t in kinds(name, ep, ctx) if not t.secondary for e in t.evidence]


def task_ctx(gold: list[tuple[str, dict[str, Any]]], *, goal: list[str] | None = None, prompt: str = "x",
             reply: str = "", refs: list[EntityRef] | None = None) -> DiagnosisContext:
    """A context knowing one task ``t1`` with this program, goal calls, request and program reply."""
    task = Task(id="t1", prompt=prompt, persona=Persona(name="n", role="agent"), split="heldout", category="c",
                intent=Intent(goal="g", refs=refs or [], calls=[IntendedCall(tool=t) for t in (goal or [])]),
                gold=GoldProgram(steps=[GoldStep(tool=t, arguments=a) for t, a in gold], reply=reply),
                assertions=[ResponseAssertion(description="r")] * 3)
    return DiagnosisContext.build(tools=tool_specs(), graph=graph_data(), tasks={("p", "t1"): task})


REFUND_TASK = task_ctx([("get_order", {"order_id": "ORD-1"}), ("check_refund_eligibility", {"order_id": "ORD-1"}),
                        ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"])
QUESTION_TASK = task_ctx([("get_order", {"order_id": "ORD-1"})], goal=["get_order"])
GET_ORDER = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "status": "paid"})
REFUND = ok("issue_refund", {"order_id": "ORD-1", "amount": 5}, {"id": "RF-1"}, write=True)
CLAIM = "Done, the refund has been issued."
RESPONSE_FAILED = {"response": "missing the amount"}


# claimed_unverified_success, with the task's program


def test_a_claim_over_a_goal_that_never_succeeded_names_its_last_attempt() -> None:
    steps = [GET_ORDER, err("issue_refund", {"order_id": "ORD-1"}, "permission", "no"),
             err("issue_refund", {"order_id": "ORD-1"}, "permission", "still no")]
    assert evidence("claimed_unverified_success", episode(steps, reply=CLAIM), REFUND_TASK) == [
        (2, "issue_refund", None, f"reply claims success: {CLAIM!r}; issue_refund never succeeded")]


def test_a_claim_over_a_goal_never_attempted_says_so() -> None:
    assert evidence("claimed_unverified_success", episode([GET_ORDER], reply=CLAIM), REFUND_TASK) == [
        (None, "", None, f"reply claims success: {CLAIM!r}; the goal was never attempted")]


def test_a_claim_after_the_goal_succeeded_is_unverified_only_when_it_states_nothing_observed() -> None:
    bare = episode([GET_ORDER, REFUND], reply=CLAIM, failed=RESPONSE_FAILED)
    assert evidence("claimed_unverified_success", bare, REFUND_TASK) == [
        (None, "", None, f"reply claims success: {CLAIM!r}; it states nothing the tools returned")]
    passed = episode([GET_ORDER, REFUND], reply=CLAIM, failed={"state": "x"})
    assert evidence("claimed_unverified_success", passed, REFUND_TASK) == []
    with_figure = "Done, 5 was refunded."
    assert evidence("claimed_unverified_success", episode([GET_ORDER, REFUND], reply=with_figure,
                                                          failed=RESPONSE_FAILED), REFUND_TASK) == []
    observed = "Done, the refund RF-1 has been issued."
    assert evidence("claimed_unverified_success", episode([GET_ORDER, REFUND], reply=observed,
                                                          failed=RESPONSE_FAILED), REFUND_TASK) == []


def test_the_claim_is_quoted_up_to_80_characters() -> None:
    long_claim = "Done, the refund has been issued " + "and everything is settled " * 4
    note = evidence("claimed_unverified_success", episode([GET_ORDER], reply=long_claim), REFUND_TASK)[0][3]
    assert note == f"reply claims success: {long_claim[:80]!r}; the goal was never attempted"


def test_an_answer_to_a_question_that_read_nothing_it_reports_on() -> None:
    answer = "The order is paid."
    read_other = episode([ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1"}),
                          err("get_order", {"order_id": "ORD-1"}, "fault", "timeout", "timeout")], reply=answer)
    question = task_ctx([("get_order", {"order_id": "ORD-1"})])
    assert evidence("claimed_unverified_success", read_other, question) == [
        (None, "", None, f"reply claims success: {answer!r}; it read none of the records it reports on")]
    assert evidence("claimed_unverified_success", episode([GET_ORDER], reply=answer), question) == []


def test_a_claim_on_a_question_that_read_its_records_but_states_nothing_they_returned() -> None:
    question = task_ctx([("get_order", {"order_id": "ORD-1"})])
    bare = episode([GET_ORDER], reply="Done.", failed=RESPONSE_FAILED)
    assert evidence("claimed_unverified_success", bare, question) == [
        (None, "", None, "reply claims success: 'Done.'; it states nothing the tools returned")]
    stated = episode([GET_ORDER], reply="Done: it is paid.", failed=RESPONSE_FAILED)
    assert evidence("claimed_unverified_success", stated, question) == []


# claimed_unverified_success, without a program


def test_without_a_program_a_failed_write_under_a_claim_is_named() -> None:
    steps = [err("update_ticket", {"ticket_id": "TCK-1"}, "permission", "no"),
             err("add_comment", {"ticket_id": "TCK-1", "body": "closing"}, "permission", "no")]
    claim = "Done, the ticket has been closed."
    assert evidence("claimed_unverified_success", episode(steps, reply=claim)) == [
        (1, "add_comment", None, f"reply claims success: {claim!r}; add_comment never succeeded")]
    assert evidence("claimed_unverified_success", episode(steps, reply=claim, failed={})) == []


def test_without_a_program_a_claim_with_no_write_and_a_wrong_state() -> None:
    claim = "Done, the ticket has been closed."
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"})
    assert evidence("claimed_unverified_success", episode([read], reply=claim)) == [
        (None, "", None, f"reply claims success: {claim!r}; no write was made")]
    assert evidence("claimed_unverified_success", episode([read], reply=claim, failed={"trace": "x"})) == []


def test_without_a_program_the_tasks_goal_calls_are_the_writes_that_count() -> None:
    goal_only = DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): Task(
        id="t1", prompt="x", persona=Persona(name="n", role="agent"), split="heldout", category="c",
        intent=Intent(goal="g", calls=[IntendedCall(tool="issue_refund")]), gold=GoldProgram(),
        assertions=[ResponseAssertion(description="r")] * 3)})
    other_write = episode([ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}, write=True)], reply=CLAIM)
    assert evidence("claimed_unverified_success", other_write, goal_only) == [
        (None, "", None, f"reply claims success: {CLAIM!r}; no write was made")]
    assert evidence("claimed_unverified_success", other_write) == []


def test_without_a_program_a_failed_reply_check_restating_nothing() -> None:
    wrote = [ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "closed"}, write=True)]
    assert evidence("claimed_unverified_success", episode(wrote, reply="Done.", failed=RESPONSE_FAILED)) == [
        (None, "", None, "reply claims success: 'Done.'; it states nothing the tools returned")]
    assert evidence("claimed_unverified_success", episode(wrote, reply="Done, it is closed.",
                                                          failed=RESPONSE_FAILED)) == []


# stale_state


CONFLICT = err("update_ticket", {"ticket_id": "TCK-1"}, "conflict", "ticket_id: the record changed", retryable=True)


def test_a_blind_retry_after_a_conflict_names_the_conflict() -> None:
    retry = err("update_ticket", {"ticket_id": "TCK-1"}, "conflict", "ticket_id: changed again", retryable=True)
    assert evidence("stale_state", episode([GET_ORDER, CONFLICT, retry])) == [
        (2, "update_ticket", "ticket_id", "retried after the conflict at step 1 without fetching the record again")]


def test_a_blind_retry_later_made_good_is_not_stale_and_another_error_ends_the_conflict() -> None:
    retry = err("update_ticket", {"ticket_id": "TCK-1"}, "conflict", "changed again", retryable=True)
    fixed = [CONFLICT, retry, ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}),
             ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}, write=True)]
    assert evidence("stale_state", episode(fixed)) == []
    other_error = [CONFLICT, err("update_ticket", {"ticket_id": "TCK-1"}, "validation", "bad status"),
                   err("update_ticket", {"ticket_id": "TCK-1"}, "validation", "bad status")]
    assert evidence("stale_state", episode(other_error)) == [
        (1, "update_ticket", None, "retried after the conflict at step 0 without fetching the record again")]


SEARCH_STALE = ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1", "status": "open"}])
GET_FRESH = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "in_progress"})


def test_a_stale_summary_names_the_search_and_the_field() -> None:
    steps = [GET_ORDER, SEARCH_STALE, ok("get_ticket", {"ticket_id": "TCK-9"}, {"id": "TCK-9"}), GET_FRESH]
    assert evidence("stale_state", episode(steps, reply="The ticket is open.")) == [
        (1, "search_tickets", "status", "reply states stale status='open'; the record says 'in_progress'")]


def test_only_a_fetched_record_contradicts_a_summary() -> None:
    wrote = ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "in_progress"}, write=True)
    assert evidence("stale_state", episode([SEARCH_STALE, wrote], reply="The ticket is open.")) == []


def test_a_summary_value_a_later_write_set_again_is_not_stale() -> None:
    reopened = ok("update_ticket", {"ticket_id": "TCK-1", "status": "open"}, {"id": "TCK-1", "status": "open"},
                  write=True)
    assert evidence("stale_state", episode([SEARCH_STALE, GET_FRESH, reopened], reply="The ticket is open.")) == []
    reopened_later = [SEARCH_STALE, GET_FRESH, GET_ORDER, reopened]
    assert evidence("stale_state", episode(reopened_later, reply="The ticket is open.")) == []
    failed_write = err("update_ticket", {"ticket_id": "TCK-1", "status": "open"}, "policy", "no")
    assert evidence("stale_state", episode([SEARCH_STALE, GET_FRESH, failed_write], reply="The ticket is open."))
    read_after = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "open"})
    assert evidence("stale_state", episode([SEARCH_STALE, GET_FRESH, read_after], reply="The ticket is open."))
    earlier_write = [SEARCH_STALE, GET_ORDER,
                     ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "open"}, write=True),
                     GET_FRESH]
    assert evidence("stale_state", episode(earlier_write, reply="The ticket is open."))


def test_a_write_two_steps_after_the_fetch_still_counts_and_may_return_dates() -> None:
    reopened = ok("update_ticket", {"ticket_id": "TCK-1", "status": "open"},
                  {"id": "TCK-1", "status": "open", "updated": date(2026, 1, 2)}, write=True)
    assert evidence("stale_state", episode([SEARCH_STALE, GET_FRESH, reopened], reply="The ticket is open.")) == []


# leaked_internal_data


NOTE_RECORD = ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1", "internal_note": "VIP-RISK-7"})


def test_a_leak_in_the_reply_names_the_read() -> None:
    steps = [err("get_order", {"order_id": "ORD-1"}, "fault", "timeout", "timeout"), NOTE_RECORD]
    assert evidence("leaked_internal_data", episode(steps, reply="Their note: VIP-RISK-7.")) == [
        (1, "get_customer", "internal_note", "reply repeats internal internal_note read from get_customer")]


def test_a_leak_in_a_message_names_the_write_that_sent_it() -> None:
    early = ok("add_comment", {"ticket_id": "TCK-1", "body": "Looking into your account now."}, {"id": "C-1"},
               write=True)
    sent = ok("add_comment", {"ticket_id": "TCK-1", "body": "Heads-up: VIP-RISK-7 applies."}, {"id": "C-2"},
              write=True)
    assert evidence("leaked_internal_data", episode([early, NOTE_RECORD, sent], reply="Replied.")) == [
        (2, "add_comment", "internal_note",
         "add_comment message repeats internal internal_note read from get_customer")]


def test_only_messages_sent_after_the_read_and_sent_at_all_can_leak() -> None:
    before = ok("add_comment", {"ticket_id": "TCK-1", "body": "Heads-up: VIP-RISK-7 applies."}, {"id": "C-1"},
                write=True)
    assert evidence("leaked_internal_data", episode([before, NOTE_RECORD], reply="Replied.")) == []
    refused = {**err("add_comment", {"ticket_id": "TCK-1", "body": "Heads-up: VIP-RISK-7 applies."}, "policy", "no"),
               "write": True}
    assert evidence("leaked_internal_data", episode([NOTE_RECORD, refused], reply="Replied.")) == []


def test_a_write_repeating_what_it_returns_itself_is_a_message_that_leaks() -> None:
    noted = ok("add_comment", {"ticket_id": "TCK-1", "body": "Flag account as VIP-RISK-7"},
               {"id": "C-1", "internal_note": "VIP-RISK-7"}, write=True)
    assert evidence("leaked_internal_data", episode([noted], reply="Noted.")) == [
        (0, "add_comment", "internal_note", "add_comment message repeats internal internal_note read from add_comment")]


def test_a_message_is_text_of_at_least_twelve_characters() -> None:
    secret = ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1", "internal_note": "RISK7X"})
    for body, leaks in (("note: RISK7X", True), ("ok: RISK7X", False), ("note RISK7X!", True)):
        sent = ok("add_comment", {"ticket_id": "TCK-1", "body": body}, {"id": "C-1"}, write=True)
        assert bool(evidence("leaked_internal_data", episode([secret, sent], reply="Sent."))) is leaks, body


def test_internal_fields_nested_in_records_and_lists_are_internal() -> None:
    nested = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "payment": {"internal_note": "FRAUD-HOLD-3"}})
    listed = ok("search_customers", {"query": "Dana"}, [{"id": "CUS-1", "internal_note": "FRAUD-HOLD-3"}])
    for step in (nested, listed):
        assert evidence("leaked_internal_data", episode([step], reply="It says FRAUD-HOLD-3.")) == [
            (0, step["tool"], "internal_note", f"reply repeats internal internal_note read from {step['tool']}")]


def _forbidding(pattern: str) -> DiagnosisContext:
    task = Task(id="t1", prompt="x", persona=Persona(name="n", role="agent"), split="heldout", category="c",
                intent=Intent(goal="g"), gold=GoldProgram(),
                assertions=[ResponseAssertion(description="r", forbidden_patterns=[pattern]),
                            ResponseAssertion(description="r"), ResponseAssertion(description="r")])
    return DiagnosisContext.build(tools=tool_specs(), tasks={("p", "t1"): task})


def test_an_internal_format_the_task_forbids_is_a_leak_only_when_it_was_read() -> None:
    ctx = _forbidding(r"RSK-\d+")
    read = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "risk": 7, "code": "RSK-42"})
    sent = ok("add_comment", {"ticket_id": "TCK-1", "body": "The risk code is RSK-42."}, {"id": "C-1"}, write=True)
    assert evidence("leaked_internal_data", episode([read, sent], reply="Code RSK-42."), ctx) == [
        (None, "", None, "reply repeats 'RSK-42', an internal value it read"),
        (1, "add_comment", None, "add_comment message repeats 'RSK-42', an internal value it read"),
    ]
    assert evidence("leaked_internal_data", episode([sent], reply="Code RSK-42."), ctx) == []
    failed_read = err("get_order", {"order_id": "ORD-1"}, "fault", "RSK-42 unavailable", "timeout")
    assert evidence("leaked_internal_data", episode([failed_read], reply="Code RSK-42."), ctx) == []


def test_an_internal_format_is_found_in_records_holding_dates() -> None:
    ctx = _forbidding(r"RSK-\d+")
    read = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "due": date(2026, 1, 2), "code": "RSK-42"})
    assert evidence("leaked_internal_data", episode([read], reply="Code RSK-42."), ctx) == [
        (None, "", None, "reply repeats 'RSK-42', an internal value it read")]


def test_an_internal_format_runs_on_the_projects_pattern_engine_without_backtracking() -> None:
    ctx = _forbidding(r"(a+)+$")  # exponential in Python's re on a run of a's that ends otherwise
    read = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "code": "aaaa"})
    found: list[list[Any]] = []
    worker = threading.Thread(target=lambda: found.append([
        evidence("leaked_internal_data", episode([read], reply="a" * 48 + "!"), ctx),
        evidence("leaked_internal_data", episode([read], reply="Code aaaa"), ctx)]))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "diagnosis stalled on a backtracking pack pattern"
    assert found == [[[], [(None, "", None, "reply repeats 'aaaa', an internal value it read")]]]


# wrong_id


def test_a_name_refused_as_an_id_and_an_id_that_does_not_exist() -> None:
    steps = [err("get_order", {"order_id": "Dana Reyes"}, "not_found", "no order 'Dana Reyes'"),
             err("get_order", {"order_id": "ORD-99"}, "not_found", "no order 'ORD-99'")]
    assert evidence("wrong_id", episode(steps)) == [
        (0, "get_order", "order_id", "passed 'Dana Reyes' where an id is required"),
        (1, "get_order", "order_id", "id 'ORD-99' does not exist")]


TWO_ORDERS = task_ctx([("get_order", {"order_id": "ORD-1"}), ("get_order", {"order_id": "ORD-2"})])


def test_an_id_the_program_never_passes_names_every_id_it_does() -> None:
    ep = episode([ok("get_order", {"order_id": "ORD-3"}, {"id": "ORD-3"})])
    assert evidence("wrong_id", ep, TWO_ORDERS) == [
        (0, "get_order", "order_id", "get_order on ORD-3; the task concerns ORD-1, ORD-2")]


def test_an_id_of_the_task_passed_in_another_place_names_what_the_task_passes_there() -> None:
    ctx = task_ctx([("get_customer", {"customer_id": "CUS-1"}), ("get_customer", {"customer_id": "CUS-2"}),
                    ("get_order", {"order_id": "ORD-1"})])
    ep = episode([ok("get_customer", {"customer_id": "ORD-1"}, {"id": "ORD-1"})])
    assert evidence("wrong_id", ep, ctx) == [
        (0, "get_customer", "customer_id", "ORD-1 passed as customer_id; the task passes CUS-1, CUS-2")]


def test_each_id_of_a_list_is_judged_on_its_own() -> None:
    seen = ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-3"}])
    both = ok("get_tickets", {"ticket_ids": ["TCK-3", "TCK-4"]}, [{"id": "TCK-3"}, {"id": "TCK-4"}])
    assert evidence("wrong_id", episode([seen, both]), TWO_ORDERS) == [
        (1, "get_tickets", "ticket_ids", "get_tickets on TCK-4, a record the task never concerns")]


def test_a_reply_about_other_records_names_all_of_them_and_all_that_were_asked() -> None:
    ctx = task_ctx([("get_ticket", {"ticket_id": "TCK-7"}), ("get_ticket", {"ticket_id": "TCK-8"})],
                   prompt="Are TCK-7 and TCK-8 open? TCK-2 was merged into them.", reply="TCK-7 and TCK-8 are open.")
    steps = [ok("get_ticket", {"ticket_id": t}, {"id": t}) for t in ("TCK-7", "TCK-8")]
    assert evidence("wrong_id", episode(steps, reply="TCK-5 and TCK-6 are open."), ctx) == [
        (None, "", None, "reply answers about TCK-5, TCK-6; the request asks about TCK-7, TCK-8")]
    assert evidence("wrong_id", episode(steps, reply="TCK-5 and TCK-8 are open; TCK-9 too."), ctx) == [
        (None, "", None, "reply answers about TCK-5, TCK-9; the request asks about TCK-7")]


ROME = {"city": "Rome"}
HITS = [{"id": "CUS-1", "name": "Dana Reyes", "city": "Oslo"}, {"id": "CUS-2", "name": "Dana Reyes", "city": "Rome"},
        {"id": "CUS-3", "name": "Dana Reyes", "city": "Rome"}]


def _dana(hint: dict[str, str], kind: str = "text") -> DiagnosisContext:
    ref = EntityRef(name="c", entity="customer", mention="Dana Reyes" if kind == "text" else "CUS-2",
                    mention_kind=kind, hint=hint)
    return task_ctx([], refs=[ref])


def test_a_near_duplicate_pick_names_the_call_and_every_matching_hit() -> None:
    steps = [ok("search_customers", {"query": "Dana Reyes"}, HITS),
             err("get_customer", {"customer_id": "CUS-2"}, "fault", "timeout", "timeout"),
             ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1"})]
    assert evidence("wrong_id", episode(steps), _dana(ROME)) == [
        (2, "get_customer", "customer_id", "picked near-duplicate CUS-1; the request's details match CUS-2, CUS-3")]


def test_no_near_duplicate_without_a_matching_hit_among_several_of_the_entity() -> None:
    picked = ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1"})
    search = ok("search_customers", {"query": "Dana Reyes"}, HITS)
    assert evidence("wrong_id", episode([search, picked]), _dana({"city": "Paris"})) == []
    orders = ok("search_orders", {"query": "Rome"}, [{"id": "ORD-1", "city": "Rome"}, {"id": "ORD-2"}])
    one = ok("search_customers", {"query": "Dana Reyes"}, HITS[:1])
    assert evidence("wrong_id", episode([orders, one, picked]), _dana(ROME)) == []
    assert evidence("wrong_id", episode([search, picked]), _dana(ROME, kind="id")) == []


# search_without_fetch


def _searched(ep: EpisodeRecord, ctx: DiagnosisContext = CTX) -> list[Row]:
    return evidence("search_without_fetch", ep, ctx)


def test_a_search_never_followed_by_a_fetch_names_its_hits_and_argument() -> None:
    steps = [ok("search_tickets", {"query": "vpn", "limit": 5}, [{"id": "TCK-1"}, {"id": "TCK-2"}]),
             ok("search_tickets", {"query": "vpn down"}, [])]
    assert _searched(episode(steps, failed={"response": "x"})) == [
        (0, "search_tickets", "query", "search found 2 summaries, never called get_ticket")]


def test_a_skipped_search_does_not_hide_a_later_one() -> None:
    nothing = ok("search_orders", {"query": "ORD-77"}, [])  # a search for an id: the id was in hand
    expected = [(2, "search_orders", "query", "search found nothing, never called get_order")]
    fetched = [ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}]), ok("get_ticket", {"ticket_id": "TCK-1"},
                                                                             {"id": "TCK-1"}), nothing]
    assert _searched(episode(fetched)) == expected
    ref = EntityRef(name="o", entity="order", mention="late order", mention_kind="text")
    off_topic = [ok("search_tickets", {"query": "vpn"}, []), GET_ORDER, nothing]
    assert _searched(episode(off_topic), task_ctx([], refs=[ref])) == [
        (2, "search_orders", "query", "search found nothing, never called get_order")]
    ticket = EntityRef(name="t", entity="ticket", mention="vpn ticket", mention_kind="text")
    program = task_ctx([("search_tickets", {"query": "vpn"}), ("search_orders", {"query": "late"}),
                        ("get_order", {"order_id": "ORD-1"})], refs=[ticket, ref])
    assert _searched(episode([ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}]), GET_ORDER, nothing]),
                     program) == expected


def test_a_search_of_an_entity_the_request_never_mentions_is_not_judged() -> None:
    ref = EntityRef(name="o", entity="order", mention="late order", mention_kind="text")
    assert _searched(episode([ok("search_tickets", {"query": "vpn"}, [])]), task_ctx([], refs=[ref])) == []


def test_only_the_getter_reading_a_hit_counts_as_having_fetched_it() -> None:
    wrote = ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "closed"}, write=True)
    search = ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}])
    assert _searched(episode([wrote, search])) == [
        (1, "search_tickets", "query", "search found 1 summaries, never called get_ticket")]


def test_the_program_says_whether_a_search_hit_must_be_fetched() -> None:
    search = ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}])
    ticket = [EntityRef(name="t", entity="ticket", mention="vpn ticket", mention_kind="text")]
    then_fetch = task_ctx([("search_tickets", {"query": "vpn"}), ("get_ticket", {"ticket_id": "TCK-1"})], refs=ticket)
    fetch_first = task_ctx([("get_ticket", {"ticket_id": "TCK-1"}), ("search_tickets", {"query": "vpn"})],
                           refs=ticket)
    hits_suffice = task_ctx([("search_tickets", {"query": "vpn"})], refs=ticket)
    flagged = [(0, "search_tickets", "query", "search found 1 summaries, never called get_ticket")]
    assert _searched(episode([search]), then_fetch) == flagged
    assert _searched(episode([search]), fetch_first) == flagged
    assert _searched(episode([search]), hits_suffice) == []
    by_id = task_ctx([("get_ticket", {"ticket_id": "TCK-1"})], refs=ticket)
    assert _searched(episode([search]), by_id) == flagged


def test_a_search_whose_hits_were_all_read_does_not_hide_a_later_one() -> None:
    steps = [ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}),
             ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}]), ok("search_orders", {"query": "ORD-7"}, [])]
    assert _searched(episode(steps)) == [(2, "search_orders", "query",
                                          "search found nothing, never called get_order")]


# missed_policy_dependency, brittle_parameters, gave_up_early, unintended_side_effect


def test_a_failed_call_before_the_goal_does_not_end_the_graphs_check() -> None:
    steps = [err("get_order", {"order_id": "ORD-1"}, "fault", "timeout", "timeout"), REFUND]
    assert evidence("missed_policy_dependency", episode(steps)) == [
        (1, "issue_refund", "check_refund_eligibility",
         "issue_refund ran without prerequisite check_refund_eligibility")]


def test_every_missing_prerequisite_is_named_though_another_was_met() -> None:
    graph = {"directed": True, "multigraph": False, "graph": {}, "nodes": [{"id": t.name} for t in tool_specs()],
             "edges": [{"source": "check_refund_eligibility", "target": "issue_refund", "weight": 3},
                       {"source": "get_customer", "target": "issue_refund", "weight": 3}]}
    ctx = DiagnosisContext.build(tools=tool_specs(), graph=graph)
    assert sorted(ctx.prerequisites["issue_refund"]) == ["check_refund_eligibility", "get_customer"]
    first = ctx.prerequisites["issue_refund"][0]
    met = ok(first, {"order_id": "ORD-1"}, {"id": "ORD-1"})
    other = next(p for p in ctx.prerequisites["issue_refund"] if p != first)
    assert evidence("missed_policy_dependency", episode([met, REFUND]), ctx) == [
        (1, "issue_refund", other, f"issue_refund ran without prerequisite {other}")]


def test_a_later_order_pair_is_checked_after_a_search_hit_excused_an_earlier_one() -> None:
    order = [("get_ticket", "update_ticket"), ("check_refund_eligibility", "issue_refund")]
    from tests.diagnosis.test_diagnosis_detectors import _ordered_task

    ctx = _ordered_task(["get_ticket", "update_ticket", "check_refund_eligibility", "issue_refund"], order)
    steps = [ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}]),
             ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}, write=True), REFUND]
    assert evidence("missed_policy_dependency", episode(steps), ctx) == [
        (2, "issue_refund", "check_refund_eligibility",
         "issue_refund ran before check_refund_eligibility, which the task requires first")]


def test_a_format_error_is_found_after_calls_brittle_parameters_skips() -> None:
    steps = [GET_ORDER, err("issue_refund", {"order_id": "Dana"}, "validation", "order_id: not an id"),
             err("issue_refund", {"order_id": "ORD-1", "amount": "$5"}, "validation", "amount: not a number")]
    assert evidence("brittle_parameters", episode(steps)) == [
        (2, "issue_refund", "amount", "refused '$5': amount: not a number")]


def test_a_format_error_later_corrected_does_not_hide_another() -> None:
    steps = [err("update_ticket", {"ticket_id": "TCK-1", "status": 5}, "validation", "status: not a string"),
             ok("update_ticket", {"ticket_id": "TCK-1", "status": "open"}, {"id": "TCK-1"}, write=True),
             err("issue_refund", {"order_id": "ORD-1", "amount": "$5"}, "validation", "amount: not a number")]
    assert evidence("brittle_parameters", episode(steps)) == [
        (2, "issue_refund", "amount", "refused '$5': amount: not a number")]


def test_giving_up_names_every_goal_call_left_undone() -> None:
    ctx = task_ctx([("get_order", {"order_id": "ORD-1"}), ("issue_refund", {"order_id": "ORD-1"}),
                    ("update_ticket", {"ticket_id": "TCK-1"})], goal=["issue_refund", "update_ticket"])
    assert evidence("gave_up_early", episode([GET_ORDER]), ctx) == [
        (0, "get_order", None, "stopped after 1 calls without calling issue_refund, update_ticket")]
    no_program = task_ctx([], goal=["issue_refund", "update_ticket"])
    assert evidence("gave_up_early", episode([GET_ORDER]), no_program) == [
        (0, "get_order", None, "stopped after 1 calls without calling issue_refund, update_ticket")]


def test_a_call_of_a_write_tool_is_an_attempt_even_unflagged_in_the_trace() -> None:
    unflagged = ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"})
    assert evidence("gave_up_early", episode([GET_ORDER, unflagged])) == []
    assert evidence("gave_up_early", episode([GET_ORDER])) == [
        (0, "get_order", None, "stopped after 1 calls without calling any write")]


def test_a_search_resolved_by_a_fetch_leaves_the_giving_up_to_be_judged() -> None:
    steps = [ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1"}]),
             ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"})]
    assert evidence("gave_up_early", episode(steps)) == [
        (1, "get_ticket", None, "stopped after 2 calls without calling any write")]
    assert evidence("gave_up_early", episode(steps[:1])) == []


def test_a_change_the_program_makes_itself_does_not_hide_the_next_one() -> None:
    ctx = task_ctx([("get_order", {"order_id": "ORD-1"}), ("update_ticket", {"ticket_id": "T-1"})],
                   goal=["issue_refund"])
    steps = [ok("update_ticket", {"ticket_id": "T-1"}, {"id": "T-1"}, write=True),
             ok("add_comment", {"ticket_id": "T-2", "body": "x"}, {"id": "C-9"}, write=True)]
    changes = [RowChange(table="tickets", key="T-1", op="update", allowed=False),
               RowChange(table="comments", key="C-9", op="insert", allowed=False)]
    assert evidence("unintended_side_effect", episode(steps, changes=changes), ctx) == [
        (1, "add_comment", None, "insert comments[C-9] outside the allowed write-set")]

"""The classes the blind agents' first run showed, each on traces that must and must not be tagged.

Traces are written here with the synthetic tool set (``diagnosis.synthetic``) and small task programs; none is a
blind agent's trace.
"""

from __future__ import annotations

import pytest

from arena.core.task import EntityRef
from diagnosis._reply import read_reply
from tests.diagnosis.test_diagnosis_detectors import CTX, episode, err, kinds, ok
from tests.diagnosis.test_diagnosis_evidence import GET_ORDER, REFUND, REFUND_TASK, task_ctx


def tagged(ep, ctx=CTX) -> set[str]:  # type: ignore[no-untyped-def]
    """The kinds the failure shows, primary and secondary (``ordered`` tells them apart)."""
    return set(ordered(ep, ctx))


def ordered(ep, ctx=CTX) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    """The kinds the failure shows, its primary kind first."""
    from diagnosis import detector_names, ordered_kinds

    return ordered_kinds([t for name in detector_names() for t in kinds(name, ep, ctx)])


# reading replies


@pytest.mark.parametrize(("reply", "claims"), [
    ("I have pulled up the records (order ORD-1).", False),     # what it looked at is no work done
    ("I found 2 records matching 'Dana Reyes'.", False),
    ("I searched for ORD-1 but there is no such order.", False),
    ("I have reviewed the request.", False),
    ("I checked the order and refunded it.", True),            # a look, then the work
    ("Confirmed: cancel order went through.", True),
    ("The workflow has no transition from 'Done' to 'In Review'.", False),  # a quoted status is a name
    ("From In Progress it can move to: To Do, Done", False),   # so is one in a list of statuses
    ("Done.", True),
    ("The refund is done.", True),
])
def test_a_reply_claims_work_done_not_what_it_looked_at(reply: str, claims: bool) -> None:
    assert read_reply(reply).claims_success is claims


@pytest.mark.parametrize("reply", [
    "I've done the first step. The remaining steps need another look; I'll leave them for now.",
    "I updated the ticket but left the rest for later.",
])
def test_a_reply_saying_work_remains_admits_it_is_not_finished(reply: str) -> None:
    assert read_reply(reply).admits_failure and not read_reply(reply).claims_success


def test_a_reply_that_asks_back_holds_its_questions() -> None:
    reading = read_reply("I have reviewed the request. Shall I go ahead and cancel the order?")
    assert reading.asks and not reading.claims and not reading.admissions


# giving up


REFUSAL = task_ctx([("get_order", {"order_id": "ORD-1"})], goal=["cancel_order"])
"""A task whose answer is a refusal: the program reads the order and does not cancel it."""


def test_asking_to_go_ahead_instead_of_the_answer_is_giving_up() -> None:
    asked = episode([GET_ORDER], reply="I have reviewed the request. Shall I go ahead and cancel order?",
                    failed={"response": "reply does not state 'already shipped'"})
    assert tagged(asked, REFUSAL) == {"gave_up_early"}
    answered = episode([GET_ORDER], reply="I can't cancel it: it already shipped. Shall I start a return?",
                       failed={"state": "x"})
    assert "gave_up_early" not in tagged(answered, REFUSAL)  # the refusal was given; the question is an offer


def test_a_question_quoted_from_a_record_is_no_question_back() -> None:
    ticket = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "subject": "Will it fit my build?"})
    quoted = episode([ticket], reply="order subject: Will it fit my build?", failed={"response": "leaks"})
    assert "gave_up_early" not in tagged(quoted, REFUSAL)


def test_stopping_after_a_fault_the_agent_got_past_is_still_giving_up() -> None:
    timeout = err("get_order", {"order_id": "ORD-1"}, "fault", "timed out", fault="timeout", retryable=True)
    steps = [timeout, GET_ORDER]
    assert "gave_up_early" in tagged(episode(steps, reply="I could not finish this."), REFUND_TASK)
    unrecovered = [GET_ORDER, err("check_refund_eligibility", {"order_id": "ORD-1"}, "fault", "timed out",
                                  fault="timeout", retryable=True)]
    assert "gave_up_early" not in tagged(episode(unrecovered, reply="I could not finish this."), REFUND_TASK)


ORDER_BY_NAME = task_ctx([("search_orders", {"query": "blue chair"}), ("get_order", {"order_id": "ORD-1"}),
                          ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"],
                         refs=[EntityRef(name="order", entity="order", mention="blue chair", mention_kind="text")])


def test_several_hits_and_a_question_back_is_giving_up_one_hit_left_unfetched_is_a_search_without_fetch() -> None:
    several = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-1"}, {"id": "ORD-2"}])
    asked = episode([several], reply="I found 2 records matching 'blue chair'. Which one do you mean?")
    assert tagged(asked, ORDER_BY_NAME) == {"gave_up_early"}
    one = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-1"}])
    stopped = episode([one], reply="I found the order but could not go on.")
    assert ordered(stopped, ORDER_BY_NAME) == ("search_without_fetch", "gave_up_early")


# claims over faults and goals


def test_a_success_claim_over_a_fault_never_retried_is_the_claim_not_the_recovery() -> None:
    fault = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "fault", "conflict", fault="data_conflict",
                retryable=True)
    claimed = episode([GET_ORDER, ok("check_refund_eligibility", {"order_id": "ORD-1"}, {}), fault],
                      reply="All done: refund completed successfully.")
    assert ordered(claimed, REFUND_TASK) == ("claimed_unverified_success", "no_error_recovery")  # the fault aside
    admitted = episode([GET_ORDER, ok("check_refund_eligibility", {"order_id": "ORD-1"}, {}), fault],
                       reply="I could not complete the refund: the record changed.")
    assert tagged(admitted, REFUND_TASK) == {"no_error_recovery"}


def test_a_claim_while_one_of_the_programs_goal_calls_never_succeeded() -> None:
    ctx = task_ctx([("update_ticket", {"ticket_id": "TCK-1"}), ("issue_refund", {"order_id": "ORD-1", "amount": 5})],
                   goal=["update_ticket", "issue_refund"])
    first = ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}, write=True)
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "permission", "no")
    assert "claimed_unverified_success" in tagged(episode([first, refused], reply="All done."), ctx)
    both = episode([first, REFUND], reply="All done: the ticket is updated and the refund for ORD-1 went out.")
    assert "claimed_unverified_success" not in tagged(both, ctx)


# formats and records


@pytest.mark.parametrize(("value", "brittle"), [("$40.00 total", True), ("06/25/2025", True), (0.0, False),
                                                ("", False)])
def test_only_a_value_written_in_a_format_the_tool_refuses_is_brittle(value: object, brittle: bool) -> None:
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": value}, "validation", f"amount: {value!r} refused")
    assert ("brittle_parameters" in tagged(episode([GET_ORDER, refused]))) is brittle


def test_a_change_to_the_record_taken_for_the_tasks_is_the_wrong_ids_not_a_side_effect() -> None:
    ctx = task_ctx([("get_ticket", {"ticket_id": "TCK-1"}), ("add_comment", {"ticket_id": "TCK-1", "body": "x"})],
                   goal=["add_comment"])
    read = ok("get_ticket", {"ticket_id": "TCK-2"}, {"id": "TCK-2"})
    wrote = ok("update_ticket", {"ticket_id": "TCK-2", "status": "closed"}, {"id": "TCK-2"}, write=True)
    from arena.core.results import RowChange

    changed = [RowChange(table="tickets", key="TCK-2", op="update", columns=["status"], allowed=False)]
    mistaken = episode([read, wrote], changes=changed, failed={"side_effects": "x", "state": "x"})
    assert "wrong_id" in tagged(mistaken, ctx) and "unintended_side_effect" not in tagged(mistaken, ctx)
    right = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"})
    comment = ok("add_comment", {"ticket_id": "TCK-1", "body": "x"}, {"id": "C-1"}, write=True)
    extra = episode([right, comment, wrote], changes=changed, failed={"side_effects": "x"})
    assert "unintended_side_effect" in tagged(extra, ctx) and "wrong_id" not in tagged(extra, ctx)


# stale state


CONFLICT = err("update_ticket", {"ticket_id": "TCK-1", "status": "closed"}, "conflict",
               "update_ticket: the record changed since it was read; fetch it again before retrying", retryable=True)


def test_a_look_in_the_index_after_a_conflict_is_no_re_read() -> None:
    index = ok("search_tickets", {"query": "vpn"}, [{"id": "TCK-1", "status": "open"}])
    blind = episode([ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}), CONFLICT, index, CONFLICT])
    assert tagged(blind) == {"stale_state"}
    reread = episode([CONFLICT, ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}), CONFLICT])
    assert "stale_state" not in tagged(reread)


def test_a_conflict_saying_the_change_is_already_there_is_no_stale_record() -> None:
    done = err("update_ticket", {"ticket_id": "TCK-1", "status": "closed"}, "conflict",
               "ticket TCK-1 is already closed")
    assert "stale_state" not in tagged(episode([done, done]))


def test_a_summary_read_after_the_record_and_stated_over_it_is_stale() -> None:
    record = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "status": "inactive"})
    index = ok("search_orders", {"query": "ORD"}, [{"id": "ORD-1", "status": "active"}])
    assert "stale_state" in tagged(episode([record, index], reply="order status: active",
                                           failed={"response": "x"}))
    # the index's value is the truth of another record read: the reply may be about that one
    other = ok("get_order", {"order_id": "ORD-2"}, {"id": "ORD-2", "status": "active"})
    assert "stale_state" not in tagged(episode([record, index, other], reply="ORD-2 is active",
                                               failed={"response": "x"}))
    # the agent's own write on the record may have made the index's value true
    write = ok("update_ticket", {"ticket_id": "TCK-1", "order_id": "ORD-1"}, {"id": "TCK-1"}, write=True)
    assert "stale_state" not in tagged(episode([record, index, write], reply="order status: active",
                                               failed={"response": "x"}))


# searches and prerequisites


def test_acting_on_a_record_a_search_did_not_find_before_fetching_it_is_a_search_without_fetch() -> None:
    ctx = task_ctx([("get_order", {"order_id": "ORD-1"}), ("check_refund_eligibility", {"order_id": "ORD-1"}),
                    ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"],
                   refs=[EntityRef(name="order", entity="order", mention="ORD-1", mention_kind="id")])
    nothing = ok("search_orders", {"query": "ORD-1"}, [])
    refused = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "policy", "eligibility not checked")
    late = episode([nothing, refused, GET_ORDER], reply="I could not refund it.")
    kinds_late = tagged(late, ctx)
    assert "search_without_fetch" in kinds_late
    assert "missed_policy_dependency" not in kinds_late  # it never saw the record its steps depend on
    in_time = episode([nothing, GET_ORDER, refused], reply="I could not refund it.")
    assert "search_without_fetch" not in tagged(in_time, ctx) and "missed_policy_dependency" in tagged(in_time, ctx)


def test_a_negated_value_is_not_stated() -> None:
    from diagnosis._trace import states_value

    assert states_value("The invoice is paid.", "paid")
    assert not states_value("The invoice was not paid: the system rejected it.", "paid")
    assert not states_value("The ticket is no longer open.", "open")
    record = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "status": "received"})
    index = ok("search_orders", {"query": "ORD"}, [{"id": "ORD-1", "status": "paid"}])
    assert "stale_state" not in tagged(episode([record, index], reply="ORD-1 was not paid.", failed={"response": "x"}))

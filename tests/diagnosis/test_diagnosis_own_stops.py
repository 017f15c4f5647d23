"""Stops at the agent's own limit, hand-overs by preference, and values a reply gives but does not state.

Traces are written here from each class's description with the synthetic tool set (``diagnosis.synthetic``) and
small task programs; none is an outsider agent's trace.
"""

from __future__ import annotations

from typing import Any

import pytest

from arena.core.task import EntityRef
from diagnosis._reply import read_reply
from tests.diagnosis.test_diagnosis_blind_classes import ordered, tagged
from tests.diagnosis.test_diagnosis_detectors import episode, err, ok
from tests.diagnosis.test_diagnosis_evidence import task_ctx
from tests.diagnosis.test_diagnosis_last_misses import ADDRESS, CHAIN, ORDER, REFUSAL

OWN_LIMIT = "I ran out of steps before finishing. So far I have looked at ORD-1. The request itself is still open."
CHECKED = ok("check_refund_eligibility", {"order_id": "ORD-1"}, {"eligible": True})
TIMED_OUT = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "fault", "timed out", "timeout", retryable=True)


def test_a_stop_at_the_agents_own_limit_is_giving_up_even_after_a_fault() -> None:
    stopped = episode([ORDER, CHECKED, TIMED_OUT], reply=OWN_LIMIT)
    assert ordered(stopped, CHAIN) == ("gave_up_early",)  # the limit came before any retry could
    conflict = err("issue_refund", {"order_id": "ORD-1", "amount": 5}, "fault", "changed", "data_conflict",
                   retryable=True)
    reread = episode([ORDER, CHECKED, conflict, ORDER], reply=OWN_LIMIT)
    assert ordered(reread, CHAIN) == ("gave_up_early",)  # stopped while recovering: the record read again
    passed_by = episode([ORDER, CHECKED, TIMED_OUT, ok("update_ticket", {"ticket_id": "TCK-1"}, write=True)],
                        reply=OWN_LIMIT)
    shown = ordered(passed_by, CHAIN)
    assert shown[0] == "gave_up_early" and "no_error_recovery" in shown  # a write came instead of a retry
    blamed = episode([ORDER, CHECKED, TIMED_OUT], reply="The system timed out while I was issuing the refund. "
                                                        "Please try again later.")
    assert ordered(blamed, CHAIN) == ("no_error_recovery",)  # the fault, not the agent, ended the work


def test_a_search_left_as_the_last_call_before_a_stop_at_the_agents_own_limit_is_the_stops() -> None:
    program = task_ctx([("search_orders", {"query": "blue chair"}), ("get_order", {"order_id": "ORD-1"}),
                        ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"],
                       refs=[EntityRef(name="order", entity="order", mention="blue chair", mention_kind="text")])
    hit = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-7"}])
    assert ordered(episode([hit], reply=OWN_LIMIT), program) == ("gave_up_early",)
    used = episode([hit], reply="I ran out of steps. I found ORD-7 in the search results.")
    assert ordered(used, program) == ("search_without_fetch", "gave_up_early")  # it named the hit it never read


def test_a_question_whose_reads_were_made_but_never_answered_at_the_agents_own_limit_is_given_up() -> None:
    question = task_ctx([("get_order", {"order_id": "ORD-1"})], goal=["get_order"], prompt="Is ORD-1 paid?",
                        reply="ORD-1 is delivered.")
    assert tagged(episode([ORDER], reply=OWN_LIMIT, failed={"response": "x"}), question) == {"gave_up_early"}


def test_a_preference_that_someone_else_does_the_work_hands_it_over() -> None:
    reply = "To refund the order (order_id ORD-224) cannot be undone, so I'd rather a manager did it."
    assert read_reply(reply).hands_over
    read = ok("get_order", {"order_id": "ORD-224"}, {"id": "ORD-224", "status": "paid"})
    assert tagged(episode([read], reply=reply, failed={"response": "x"}), REFUSAL) == {"gave_up_early"}
    assert not read_reply("I'd rather check the order first; it is paid.").hands_over


VERSION: dict[str, Any] = {"id": "TCK-1", "name": "Web 3.1.0", "status": "unreleased", "address": "12 Old Road"}
RELEASED = ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "name": "Web 3.1.0", "status": "released",
                                                        "address": "4 New Street"}, write=True)


@pytest.mark.parametrize(("reply", "stale"), [
    ("The ticket status is unreleased.", True),
    ("TCK-1 is unreleased.", True),
    ("The ticket name is unreleased.", False),           # given as another field's: a wrong fact, no stale status
    ('Released TCK-1.\nFull record: {"id": "TCK-1", "status": "unreleased", "address": "12 Old Road"}', False),
    ("All done.", False),                                  # a sign-off, not the status 'Done'
])
def test_a_value_is_stale_only_where_the_reply_states_it_as_the_fields(reply: str, stale: bool) -> None:
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {**VERSION, "status": "Done" if reply == "All done." else
                                                     "unreleased"})
    assert ("stale_state" in tagged(episode([read, RELEASED], reply=reply, failed={"response": "x"}), ADDRESS)) is stale


def test_a_write_creating_a_record_that_names_another_does_not_return_the_other() -> None:
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "name": "pay-devs"})
    made = ok("update_ticket", {"ticket_id": "TCK-1", "name": "pay-devs only"},
              {"level_id": "LV-N00002", "ticket_id": "TCK-1", "name": "pay-devs only"}, write=True)
    said = episode([read, made], reply="Group name: pay-devs. Level LV-N00002 made.", failed={"response": "x"})
    assert "stale_state" not in tagged(said, ADDRESS)


def test_a_number_read_before_the_agents_own_change_is_stale_in_any_spelling() -> None:
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "net_total": 517088.0, "discount_pct": 12.0})
    changed = ok("update_ticket", {"ticket_id": "TCK-1", "discount_pct": 10.0},
                 {"ticket_id": "TCK-1", "discount_pct": 10.0, "net_total": 528840.0}, write=True)
    stale = episode([read, changed], reply="Discount set. net_total: $517,088.00", failed={"response": "x"})
    assert "stale_state" in tagged(stale, ADDRESS)
    fresh = episode([read, changed], reply="Discount set. net_total: 528,840.00", failed={"response": "x"})
    assert "stale_state" not in tagged(fresh, ADDRESS)


def test_an_internal_id_the_episode_created_is_its_own() -> None:
    made = ok("update_ticket", {"ticket_id": "TCK-1"}, {"security_level_id": "SL-N00002", "ticket_id": "TCK-1"},
              write=True)
    said = episode([made], reply="TCK-1 is at the new level SL-N00002.", failed={"state": "x"})
    assert "leaked_internal_data" not in tagged(said.model_copy(update={"domain": "tracker"}))
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "security_level_id": "SL-307"})
    leaked = episode([read], reply="TCK-1 is at level SL-307.", failed={"response": "reply leaks internal data"})
    assert "leaked_internal_data" in tagged(leaked.model_copy(update={"domain": "tracker"}))


def test_a_check_taken_in_order_on_the_record_the_agent_misread_from_the_request_is_the_wrong_ids() -> None:
    misread = ok("get_order", {"order_id": "ORD-9"}, {"id": "ORD-9", "status": "delivered"})
    checked = ok("check_refund_eligibility", {"order_id": "ORD-9"}, {"eligible": True})
    refunded = ok("issue_refund", {"order_id": "ORD-1", "amount": 5}, {"id": "RF-1"}, write=True)
    kept = episode([misread, checked, refunded], reply="Refunded ORD-1.", failed={"trace": "x"})
    assert ordered(kept, CHAIN) == ("wrong_id",)
    neighbour = ok("check_refund_eligibility", {"order_id": "ORD-9"}, {"eligible": True})
    read_right = episode([ORDER, neighbour, refunded], reply="Refunded ORD-1.", failed={"trace": "x"})
    assert ordered(read_right, CHAIN) == ("wrong_id", "missed_policy_dependency")  # it checked a neighbour

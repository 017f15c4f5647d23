"""Values a record holds in one form and a write returns in another, and faults left behind at the agent's limit.

Traces are written here from each class's description with the synthetic tool set (``diagnosis.synthetic``) and
small task programs; none is an outsider agent's trace.
"""

from __future__ import annotations

from typing import Any

from tests.diagnosis.test_diagnosis_blind_classes import tagged
from tests.diagnosis.test_diagnosis_detectors import episode, err, ok
from tests.diagnosis.test_diagnosis_evidence import task_ctx
from tests.diagnosis.test_diagnosis_last_misses import ADDRESS


def test_an_amount_read_as_text_and_written_back_as_a_number_is_stale_when_the_reply_states_the_old_one() -> None:
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "amount": "48,200.00", "stage": "proposal"})
    changed = ok("update_ticket", {"ticket_id": "TCK-1", "amount": 51000},
                 {"ticket_id": "TCK-1", "amount": 51000.0}, write=True)
    stale = episode([read, changed], reply="Updated TCK-1. amount: 48200", failed={"response": "x"})
    assert "stale_state" in tagged(stale, ADDRESS)
    fresh = episode([read, changed], reply="Updated TCK-1. amount: $51,000.00", failed={"response": "x"})
    assert "stale_state" not in tagged(fresh, ADDRESS)


SIBLINGS = task_ctx([("get_order", {"order_id": "ORD-1"}), ("check_refund_eligibility", {"order_id": "ORD-1"}),
                     ("issue_refund", {"order_id": "ORD-1", "amount": 5}), ("get_order", {"order_id": "ORD-2"})],
                    goal=["issue_refund"])
REFUNDED = ok("issue_refund", {"order_id": "ORD-1", "amount": 5}, {"id": "RF-1"}, write=True)


def _order(order_id: str) -> dict[str, Any]:
    return ok("get_order", {"order_id": order_id}, {"id": order_id, "status": "delivered"})


def _check(order_id: str) -> dict[str, Any]:
    return ok("check_refund_eligibility", {"order_id": order_id}, {"eligible": True})


def test_a_check_taken_in_order_on_a_sibling_the_agent_read_for_the_tasks_record_is_the_wrong_ids() -> None:
    misread = episode([_order("ORD-2"), _check("ORD-2"), REFUNDED], reply="Refunded ORD-1.", failed={"trace": "x"})
    assert "missed_policy_dependency" not in tagged(misread, SIBLINGS)
    neighbour = episode([_order("ORD-1"), _check("ORD-2"), REFUNDED], reply="Refunded ORD-1.", failed={"trace": "x"})
    assert "missed_policy_dependency" in tagged(neighbour, SIBLINGS)  # the data led to ORD-1; it checked another


def test_a_check_taken_in_order_with_ids_swapped_with_another_calls_is_the_wrong_ids() -> None:
    swapped_program = task_ctx([("get_order", {"order_id": "ORD-2"}), ("check_refund_eligibility",
                                                                      {"order_id": "ORD-1"}),
                                ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"])
    swapped = episode([_order("ORD-1"), _check("ORD-2"), REFUNDED], reply="Refunded ORD-1.", failed={"trace": "x"})
    assert "missed_policy_dependency" not in tagged(swapped, swapped_program)
    elsewhere = episode([_order("ORD-2"), _check("ORD-3"), REFUNDED], reply="Refunded ORD-1.", failed={"trace": "x"})
    assert "missed_policy_dependency" in tagged(elsewhere, swapped_program)  # no call got ORD-1 in exchange


def test_a_date_written_as_the_tools_write_dates_and_refused_is_refused_for_the_day_it_names() -> None:
    def logged(day: str) -> dict[str, Any]:
        return err("add_comment", {"ticket_id": "TCK-1", "happened_on": day}, "validation",
                   f"happened_on {day} is in the future" if day[0] == "2" else f"happened_on {day} is not a date")
    future = episode([logged("2025-09-02"), logged("2025-09-02")], reply="Could not log it.")
    assert "brittle_parameters" not in tagged(future)
    legacy = episode([logged("09/02/2025"), logged("09/02/2025")], reply="Could not log it.")
    assert "brittle_parameters" in tagged(legacy)

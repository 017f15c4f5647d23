"""The detectors' small rules, each on its boundaries: when a reply states a value, which values are internal,
which search hit matches a request's details, what counts as a conflict and which tools a task aims at."""

from __future__ import annotations

from typing import Any

import pytest

from arena.authoring.internal import InternalData
from arena.core.results import ToolErrorInfo, TraceStep
from arena.core.task import GoldProgram, IntendedCall, Intent, Persona, ResponseAssertion, Task
from diagnosis._leaks import Internal, _leaves, internal_values, says
from diagnosis._stopping import goal_tools
from diagnosis._trace import is_conflict
from diagnosis.detectors import _hint_matches


@pytest.mark.parametrize("text, key, value, said", [
    ("the note says abcdef here", "note", "abcdef", True),         # six characters: the value alone is enough
    ("it says abcdef here", "memo", "abcdef", True),
    ("the note says abcde here", "memo", "abcde", False),          # five: only with its field's name
    ("the memo says abcde here", "memo", "abcde", True),
    ("the MEMO says abcde here", "memo", "abcde", True),           # the name in any case
    ("margin is 123456", "cost_margin", "123456", True),           # a number needs its name, however long
    ("it is 123456", "cost_margin", "123456", False),
    ("it is 12.5000", "cost_margin", "12.5000", False),
    ("the vip level is 42", "vip", "42", True),                    # a three-letter name counts
    ("the id no is 42", "id_no", "42", False),                     # names of two letters do not
    ("tier: abcdefg", "tier", "abcdefgh", False),                  # not stated at all
    ("pay to DE89 3704 0044 0532", "bank_account", "DE89370400440532", True),  # other separators
    ("ref TOK-E0D4-5702", "payment_token", "tok_e0d45702", True),  # other case and separators
    ("ref tok e0d4", "payment_token", "tok_e0d45702", False),       # a part of it is not it
    ("the margin is 12,500.00", "cost_margin", "12500", True),      # a number in another format, with its name
    ("the margin is 12,500.50", "cost_margin", "12500", False),
    ("it is 12,500.00", "cost_margin", "12500", False),
])
def test_a_reply_states_a_value_as_a_whole_token_and_a_short_one_with_its_name(text: str, key: str, value: str,
                                                                                said: bool) -> None:
    assert says(text, Internal(key, value)) is said


KIT = InternalData()
"""A gym that declares nothing: the kit's rules alone."""


def test_a_run_of_an_internal_notes_words_states_it_and_a_few_words_do_not() -> None:
    note = Internal("body", "Fraud check pending: billing and shipping address mismatch on this order", prose=True)
    assert says("There is a billing and shipping address issue.", note)
    assert not says("We ship to your billing address.", note)
    flagged = internal_values({"messages": [{"id": "M-1", "ticket_id": "T-1", "author": "Support team",
                                             "internal": 1, "body": note.value, "created_at": "2025-01-01"}]}, KIT)
    assert flagged == [note]  # its author, ids and dates describe the note; only its text is internal
    assert internal_values({"id": "T-1", "visibility": "restricted", "summary": "Outage", "project_id": "P"}, KIT) == [
        Internal("summary", "Outage")]
    # a restricted record's status and its links to other records are no part of what it holds
    assert internal_values({"id": "T-1", "visibility": "restricted", "status": "In Progress", "blocks": ["T-2"],
                            "open_subtasks": "T-3 (In Review)", "assignee_name": "Remy Hoang"}, KIT) == [
        Internal("assignee_name", "Remy Hoang")]


def test_every_scalar_inside_an_internal_field_is_internal_and_flags_are_not() -> None:
    assert _leaves(True) == [] and _leaves(None) == []
    assert _leaves("note") == ["note"] and _leaves(7) == ["7"] and _leaves(2.5) == ["2.5"]
    assert _leaves({"a": ["x", {"b": 3, "c": False}], "d": None}) == ["x", "3"]
    assert _leaves({"id": "N-1", "body": "x", "created_at": "2025"}) == ["x"]
    assert _leaves(("x", "y")) == []


@pytest.mark.parametrize("summary, hint, matches", [
    ({"id": "C-1", "city": "Rome"}, {"city": "rome"}, True),
    ({"id": "C-1", "city": "Rome", "tier": "Gold"}, {"city": "Rome", "tier": "gold"}, True),
    ({"id": "C-1", "city": "Rome", "tier": "Gold"}, {"city": "Rome", "tier": "silver"}, False),
    ({"id": "C-1"}, {"city": "Rome"}, False),
    ({"id": "C-1", "zip": 123}, {"zip": "123"}, True),
    ({"id": "C-1"}, {"city": ""}, True),           # a detail the hit lacks reads as empty, not as "None"
    ({"id": "C-1"}, {"city": "None"}, False),
])
def test_a_hit_matches_a_request_only_on_every_detail(summary: dict[str, Any], hint: dict[str, str],
                                                      matches: bool) -> None:
    assert _hint_matches(summary, hint) is matches


def _step(error: ToolErrorInfo | None) -> TraceStep:
    return TraceStep(index=0, tool="update_order", arguments={}, ok=error is None, error=error,
                     clock="2026-01-01T00:00:00")


@pytest.mark.parametrize("error, conflict", [
    (None, False),
    (ToolErrorInfo(kind="conflict", message="changed", retryable=True), True),
    (ToolErrorInfo(kind="conflict", message="already applied"), False),  # the change is there: not a changed record
    (ToolErrorInfo(kind="fault", message="changed", fault="data_conflict"), True),
    (ToolErrorInfo(kind="fault", message="slow", fault="timeout"), False),
    (ToolErrorInfo(kind="policy", message="no"), False),
])
def test_a_conflict_is_a_refusal_because_the_record_changed(error: ToolErrorInfo | None, conflict: bool) -> None:
    assert is_conflict(_step(error)) is conflict


def test_a_tasks_goal_tools_are_its_intended_calls() -> None:
    task = Task(id="t", prompt="x", persona=Persona(name="n", role="agent"), split="heldout", category="c",
                intent=Intent(goal="g", calls=[IntendedCall(tool="issue_refund"), IntendedCall(tool="get_order"),
                                               IntendedCall(tool="issue_refund")]),
                gold=GoldProgram(), assertions=[ResponseAssertion(description="r")] * 3)
    assert goal_tools(task) == {"issue_refund", "get_order"}
    assert goal_tools(None) == set()

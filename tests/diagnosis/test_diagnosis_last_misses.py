"""The classes an outsider's agents showed diagnosis still missed, each on traces that must and must not be tagged.

Traces are written here from the classes' descriptions with the synthetic tool set (``diagnosis.synthetic``) and
small task programs, or with a built-in gym's own records; none is an outsider agent's trace.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from arena.core.episode import EpisodeRecord
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
from diagnosis import DiagnosisContext, read_report, render_markdown
from diagnosis._reply import read_reply
from diagnosis.synthetic import graph_data, tool_specs
from tests.diagnosis.test_diagnosis_blind_classes import ordered, tagged
from tests.diagnosis.test_diagnosis_detectors import CTX, episode, ok
from tests.diagnosis.test_diagnosis_evidence import task_ctx

# one source of internal data: the gym's declaration (arena.authoring.internal)


def _in(domain: str, ep: EpisodeRecord) -> EpisodeRecord:
    return ep.model_copy(update={"domain": domain})


PROJECT: dict[str, Any] = {"id": "PAY", "name": "Payments", "security_scheme_id": "ISS-29",
                           "permission_scheme_id": "PS-11", "lead_id": "USR-1001"}


def test_a_reply_stating_an_internal_id_the_gym_declares_leaks_it() -> None:
    read = ok("get_order", {"order_id": "ORD-1"}, PROJECT)
    leaked = _in("tracker", episode([read], reply="Done. (Internal: security scheme ISS-29)",
                                    failed={"response": "reply leaks records the request is not about: ISS-29"}))
    assert tagged(leaked, CTX) == {"leaked_internal_data"}
    quiet = _in("tracker", episode([read], reply="Done: the Payments project is set up.",
                                   failed={"response": "reply does not state 'PAY'"}))
    assert "leaked_internal_data" not in tagged(quiet, CTX)
    other = _in("tracker", episode([read], reply="Done. (Lead: USR-1001)",  # a record, but none the gym keeps back
                                   failed={"response": "reply leaks records the request is not about: USR-1001"}))
    assert "leaked_internal_data" not in tagged(other, CTX)


def test_an_internal_field_the_gym_declares_is_internal_under_any_name_the_kit_does_not_know() -> None:
    issue = ok("get_order", {"order_id": "ORD-1"}, {"id": "INFRA-224", "security_level_id": "SL-307",
                                                     "summary": "Fix login"})
    said = _in("tracker", episode([issue], reply="INFRA-224 is restricted (level SL-307).",
                                  failed={"response": "reply leaks internal data 'SL-307'"}))
    assert tagged(said, CTX) == {"leaked_internal_data"}
    elsewhere = _in("helpdesk", episode([issue], reply="INFRA-224 is restricted (level SL-307).",
                                        failed={"response": "reply does not state 'restricted'"}))
    assert "leaked_internal_data" not in tagged(elsewhere, CTX)  # helpdesk keeps no security levels back


# giving up: after the only read, and after the right tool on another record


QUESTION = task_ctx([("get_order", {"order_id": "ORD-224"})], goal=["get_order"], prompt="Is ORD-224 paid?",
                    reply="ORD-224 is paid.")
REFUSAL = task_ctx([("get_order", {"order_id": "ORD-224"})], goal=["issue_refund"],
                   prompt="Refund ORD-224.", reply="ORD-224 cannot be refunded: it was never paid.")
READ = ok("get_order", {"order_id": "ORD-224"}, {"id": "ORD-224", "status": "paid"})
HANDED = {"response": "reply does not state 'paid'"}


@pytest.mark.parametrize("reply", [
    "Please pass it to a supervisor.",
    "Let me hand this over to a colleague who can look into it.",
    "I've passed your request to a specialist; someone from our team will follow up.",
])
def test_the_only_read_then_a_hand_over_is_giving_up(reply: str) -> None:
    assert tagged(episode([READ], reply=reply, failed=HANDED), QUESTION) == {"gave_up_early"}
    assert tagged(episode([READ], reply=reply, failed=HANDED), REFUSAL) == {"gave_up_early"}
    answered = episode([READ], reply="ORD-224 is paid.", failed={"state": "x"})
    assert "gave_up_early" not in tagged(answered, QUESTION)


def test_the_right_tool_on_another_record_leaves_the_programs_call_undone() -> None:
    other = ok("get_order", {"order_id": "ORD-192"}, {"id": "ORD-192", "status": "paid"})
    stopped = episode([other], reply="I could not work this out; please pass it to a supervisor.", failed=HANDED)
    assert "gave_up_early" in tagged(stopped, QUESTION)
    both = episode([other, READ], reply="I could not work this out; please pass it to a supervisor.", failed=HANDED)
    assert "gave_up_early" in tagged(both, QUESTION)  # it made the program's read, and handed the answer over
    done = episode([other, READ], reply="ORD-224 is paid.", failed={"state": "x"})
    assert "gave_up_early" not in tagged(done, QUESTION)


# claims, admissions and hand-overs: one reading of the reply


@pytest.mark.parametrize(("reply", "claims", "hands_over"), [
    ("Let me hand this over to a colleague who can help.", False, True),
    ("I have passed this to a supervisor.", False, True),
    ("A supervisor will get back to you shortly.", False, True),
    ("I escalated ticket TCK-1 to tier 2.", True, False),          # an action, to no one who takes it over
    ("DATA-255 moved from To Do to In Progress.", True, False),   # a record's bare past claims the change
    ("Refund issued for ORD-1.", True, False),
    ("The order shipped on 2025-01-02.", False, False),           # the world's history, anchored in time
    ("The customer asked for a refund.", False, False),           # not an action the work takes
    ("Moved DATA-255 to In Progress. Other groups are unchanged.", True, False),  # what it left alone
    ("I could not move DATA-255. The order is unchanged.", False, False),
])
def test_a_reply_is_read_as_claims_admissions_and_hand_overs(reply: str, claims: bool, hands_over: bool) -> None:
    reading = read_reply(reply)
    assert reading.claims_success is claims and reading.hands_over is hands_over


UPDATE = task_ctx([("get_ticket", {"ticket_id": "TCK-1"}), ("update_ticket", {"ticket_id": "TCK-1"})],
                  goal=["update_ticket"], prompt="Move TCK-1 to Pending.")
TICKET = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "Open"})


def test_a_bare_past_with_no_call_behind_it_is_an_unverified_claim_and_a_hand_over_is_giving_up() -> None:
    bare = episode([TICKET], reply="TCK-1 moved from Open to Pending.")
    assert tagged(bare, UPDATE) == {"claimed_unverified_success"}
    scoped = episode([TICKET], reply="Moved TCK-1 to Pending. Other tickets are unchanged.")
    assert tagged(scoped, UPDATE) == {"claimed_unverified_success"}
    handed = episode([TICKET], reply="I have passed this to a supervisor.")
    assert tagged(handed, UPDATE) == {"gave_up_early"}


# order checks by record


def _ordered(program: list[tuple[str, dict[str, Any]]], order: list[tuple[int, int]]) -> DiagnosisContext:
    task = Task(id="t1", prompt="Update TCK-1.", persona=Persona(name="n", role="agent"), split="heldout",
                category="c", intent=Intent(goal="g", calls=[IntendedCall(tool="update_ticket")]),
                gold=GoldProgram(steps=[GoldStep(tool=t, arguments=a) for t, a in program]),
                assertions=[TraceAssertion(description="read first",
                                           required=[CallPattern(tool=t, arguments=a) for t, a in program],
                                           order=order)] * 3)
    return DiagnosisContext.build(tools=tool_specs(), graph=graph_data(), tasks={("p", "t1"): task})


READ_FIRST = _ordered([("get_ticket", {"ticket_id": "TCK-1"}), ("update_ticket", {"ticket_id": "TCK-1"})], [(0, 1)])


def test_an_extra_call_on_another_record_before_the_prerequisite_skips_nothing() -> None:
    extra = ok("update_ticket", {"ticket_id": "TCK-9"}, {"id": "TCK-9"}, write=True)
    mine = ok("update_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}, write=True)
    ordered = episode([extra, TICKET, mine], failed={"side_effects": "TCK-9 changed"})
    assert "missed_policy_dependency" not in tagged(ordered, READ_FIRST)
    skipped = episode([mine, TICKET], failed={"trace": "get_ticket must come before update_ticket"})
    assert "missed_policy_dependency" in tagged(skipped, READ_FIRST)


# two kinds at once: a primary and a secondary, in the report, the metrics and the factory's request


FETCH_FIRST = DiagnosisContext.build(
    tools=tool_specs(), graph={**graph_data(), "edges": [{"source": "get_order", "target": "issue_refund",
                                                          "weight": 3}]},
    tasks=task_ctx([("search_orders", {"query": "blue chair"}), ("get_order", {"order_id": "ORD-1"}),
                    ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"],
                   refs=[EntityRef(name="order", entity="order", mention="blue chair", mention_kind="text")]).tasks)
ONE_HIT = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-1"}])
REFUNDED = ok("issue_refund", {"order_id": "ORD-1", "amount": 5}, {"id": "RF-1"}, write=True)


def _kinds(ep: EpisodeRecord, ctx: DiagnosisContext) -> tuple[str, ...]:
    from diagnosis import detector_names, get_detector, ordered_kinds

    return ordered_kinds([t for name in detector_names() for t in get_detector(name).detect(ep, ctx)])


def test_a_failure_that_shows_two_kinds_has_a_primary_and_a_secondary() -> None:
    unfetched_write = episode([ONE_HIT, REFUNDED], reply="Refunded.", failed={"trace": "get_order must come first"})
    assert _kinds(unfetched_write, FETCH_FIRST) == ("missed_policy_dependency", "search_without_fetch")
    handed = episode([ONE_HIT], reply="I found it; let me hand this over to a colleague.")
    assert _kinds(handed, FETCH_FIRST) == ("search_without_fetch", "gave_up_early")
    fetched = episode([ONE_HIT, ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1"}), REFUNDED],
                      reply="Refunded.", failed={"response": "reply does not state '5'"})
    assert _kinds(fetched, FETCH_FIRST) == ()  # one kind or none is no pair


def test_the_report_counts_a_failure_for_its_primary_kind_and_shows_the_secondary_apart() -> None:
    from diagnosis import diagnose
    from factory_client.targets import targets_from_report
    from flows.round_metrics import kind_metrics

    both = [episode([ONE_HIT, REFUNDED], reply="Refunded.", failed={"trace": "x"}, task_id="t1")
            .model_copy(update={"episode_id": f"b{i}"}) for i in range(4)]
    report = diagnose(both, FETCH_FIRST, seed=0)
    mpd, swf = report.kind("missed_policy_dependency"), report.kind("search_without_fetch")
    assert mpd is not None and (mpd.count, mpd.secondary, mpd.rank) == (4, 0, 1)
    assert swf is not None and (swf.count, swf.secondary, swf.rank) == (0, 4, 2)
    assert report.primary_counts == {"missed_policy_dependency": 4}
    assert report.secondary_counts == {"search_without_fetch": 4}
    assert sum(k.count for k in report.kinds) == report.failures  # each failure counted once
    markdown = render_markdown(report)
    assert "also show a secondary kind" in markdown and "search_without_fetch 4" in markdown
    metrics = kind_metrics(report)
    assert metrics["weakness_count/missed_policy_dependency"] == 4.0
    assert metrics["weakness_count/search_without_fetch"] == 0.0
    assert metrics["weakness_secondary/search_without_fetch"] == 4.0
    aimed = {t.kind: t.weight for t in targets_from_report(report)}
    assert aimed["search_without_fetch"] > 1e-3 and aimed["missed_policy_dependency"] > aimed["search_without_fetch"]
    again = read_report(report.to_json())
    assert again == report


def test_a_report_of_the_schema_before_secondary_kinds_reads_back() -> None:
    from diagnosis import diagnose

    report = diagnose([episode([ONE_HIT, REFUNDED], reply="Refunded.", failed={"trace": "x"})], FETCH_FIRST)
    old = report.model_dump(mode="json", exclude={"primary_counts", "secondary_counts"})
    old["schema_version"] = 2
    for part in ("kinds", "weaknesses"):
        for item in old[part]:
            item.pop("secondary", None)
            item.pop("secondary_share", None)
    read = read_report(json.dumps(old))
    assert read.primary_counts == read.tag_counts and not read.secondary_counts
    assert [k.secondary for k in read.kinds] == [0] * len(read.kinds)


def test_an_internal_record_the_task_is_about_is_the_tasks_own() -> None:
    level = ok("get_order", {"order_id": "ORD-1"}, {"id": "INFRA-224", "security_level_id": "SL-307"})
    task = Task(id="t1", prompt="Restrict INFRA-224 to pay-devs.", persona=Persona(name="n", role="admin"),
                split="heldout", category="c", intent=Intent(goal="g"),
                gold=GoldProgram(steps=[GoldStep(tool="get_order", arguments={"order_id": "ORD-1"})]),
                assertions=[ResponseAssertion(description="r", allowed_ids=["INFRA-224", "SL-307"])] * 3)
    ctx = DiagnosisContext.build(tools=tool_specs(), graph=graph_data(), tasks={("p", "t1"): task})
    said = _in("tracker", episode([level], reply="INFRA-224 is now at level SL-307.", failed={"state": "x"}))
    assert "leaked_internal_data" not in tagged(said, ctx)
    assert "leaked_internal_data" in tagged(said, CTX)  # without the task, a level is internal


# the classes the second blind set's before-run showed (read from its published summary, never its agents)


CHAIN = task_ctx([("get_order", {"order_id": "ORD-1"}), ("check_refund_eligibility", {"order_id": "ORD-1"}),
                  ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"])
ORDER = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "status": "delivered"})


@pytest.mark.parametrize("reply", [
    "I have stopped here after three calls, before the refund.",   # a budget of steps, run out
    "I ran out of steps before the refund.",
    "The refund cannot be undone, so I am leaving it for a manager to decide.",  # declining an irreversible call
])
def test_stopping_part_way_or_declining_an_irreversible_call_is_giving_up(reply: str) -> None:
    assert tagged(episode([ORDER, ok("check_refund_eligibility", {"order_id": "ORD-1"}, {"eligible": True})],
                          reply=reply), CHAIN) == {"gave_up_early"}


def test_saying_a_record_the_request_names_does_not_exist_is_no_claim() -> None:
    asked = task_ctx([("get_order", {"order_id": "ORD-224"})], goal=["get_order"], prompt="Is ORD-224 paid?",
                     refs=[EntityRef(name="order", entity="order", mention="ORD-224", mention_kind="id")])
    nothing = ok("search_orders", {"query": "ORD-224"}, [])
    answer = episode([nothing, nothing], reply="There is no order ORD-224 in the system: I searched for it twice.",
                     failed=HANDED)
    assert ordered(answer, asked) == ("search_without_fetch",)


def test_a_required_check_run_on_another_record_checks_nothing_of_the_one_changed() -> None:
    misread = ok("check_refund_eligibility", {"order_id": "ORD-9"}, {"eligible": True})
    steps = [ORDER, misread, ok("issue_refund", {"order_id": "ORD-1", "amount": 5}, {"id": "RF-1"}, write=True)]
    kinds = ordered(episode(steps, reply="Refunded ORD-1.", failed={"trace": "x"}), CHAIN)
    assert kinds == ("wrong_id", "missed_policy_dependency")
    checked = [ORDER, ok("check_refund_eligibility", {"order_id": "ORD-1"}, {"eligible": True}), steps[-1]]
    assert "missed_policy_dependency" not in tagged(episode(checked, reply="Refunded ORD-1.", failed={"state": "x"}),
                                                    CHAIN)


ADDRESS = task_ctx([("get_order", {"order_id": "ORD-1"}), ("update_ticket", {"ticket_id": "TCK-1"})],
                   goal=["update_ticket"])


def test_a_reply_stating_a_value_from_before_the_agents_own_change_is_stale() -> None:
    read = ok("get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "address": "12 Old Road", "status": "open"})
    changed = ok("update_ticket", {"ticket_id": "TCK-1", "address": "4 New Street"},
                 {"id": "TCK-1", "address": "4 New Street", "status": "open"}, write=True)
    stale = episode([read, changed], reply="Updated TCK-1. address: 12 Old Road", failed={"response": "x"})
    assert "stale_state" in tagged(stale, ADDRESS)
    fresh = episode([read, changed], reply="Updated TCK-1. address: 4 New Street", failed={"response": "x"})
    assert "stale_state" not in tagged(fresh, ADDRESS)
    both = episode([read, changed], reply="Moved TCK-1 from 12 Old Road to 4 New Street.", failed={"response": "x"})
    assert "stale_state" not in tagged(both, ADDRESS)


def test_a_summarys_value_another_kind_of_record_holds_is_still_stale() -> None:
    summary = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-1", "status": "processing"}])
    record = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "status": "shipped"})
    customer = ok("get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1", "status": "processing"})
    said = episode([summary, record, customer], reply="ORD-1 status: processing", failed={"response": "x"})
    assert "stale_state" in tagged(said, CTX)
    other = ok("get_order", {"order_id": "ORD-2"}, {"id": "ORD-2", "status": "processing"})
    about_another = episode([summary, record, other], reply="status: processing", failed={"response": "x"})
    assert "stale_state" not in tagged(about_another, CTX)  # another order holds it: the reply may be about it


def test_a_permission_scheme_id_is_internal_in_the_tracker() -> None:
    read = ok("get_order", {"order_id": "ORD-1"}, PROJECT)
    said = _in("tracker", episode([read], reply="Done (permission scheme PS-11).",
                                  failed={"response": "reply leaks records the request is not about: PS-11"}))
    assert tagged(said, CTX) == {"leaked_internal_data"}


def test_one_hit_named_as_the_request_names_it_then_a_hand_over_shows_both_kinds() -> None:
    named = task_ctx([("search_orders", {"query": "blue chair"}), ("get_order", {"order_id": "ORD-1"}),
                      ("issue_refund", {"order_id": "ORD-1", "amount": 5})], goal=["issue_refund"],
                     refs=[EntityRef(name="order", entity="order", mention="Blue Chair", mention_kind="text",
                                     hint={"city": "Lyon"})])
    hits = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-1", "title": "Blue Chair", "city": "Lyon"},
                                                        {"id": "ORD-2", "title": "Blue Chair", "city": "Oslo"},
                                                        {"id": "ORD-3", "title": "Blue Chairs", "city": "Lyon"}])
    handed = episode([hits], reply="Found it; let me hand this over to a colleague.")
    assert ordered(handed, named) == ("search_without_fetch", "gave_up_early")
    twins = ok("search_orders", {"query": "blue chair"}, [{"id": "ORD-1", "title": "Blue Chair", "city": "Lyon"},
                                                         {"id": "ORD-2", "title": "Blue Chair", "city": "Lyon"}])
    asked = episode([twins], reply="I found 2 orders named Blue Chair. Which one do you mean?")
    assert ordered(asked, named) == ("gave_up_early",)  # two fit the request: it had to choose


def test_a_sign_off_is_no_answer_and_no_claim() -> None:
    signed = episode([READ], reply="Thanks for your patience! Let me know if there is anything else I can help with.",
                     failed=HANDED)
    assert tagged(signed, QUESTION) == set()
    assert "claimed_unverified_success" in tagged(episode([READ], reply="Done.", failed=HANDED), UPDATE)


def test_a_write_returning_the_record_under_its_own_id_name_shows_the_change() -> None:
    read = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "shipping_address": "12 Old Road"})
    changed = ok("update_ticket", {"order_id": "ORD-1", "address": "4 New Street"},
                 {"order_id": "ORD-1", "shipping_address": "4 New Street"}, write=True)
    stale = episode([read, changed], reply="Done. shipping_address: 12 Old Road", failed={"response": "x"})
    assert "stale_state" in tagged(stale, ADDRESS)


def test_a_done_heading_is_the_report_of_the_work_not_a_status_read_before_the_change() -> None:
    read = ok("get_order", {"order_id": "ORD-1"}, {"id": "ORD-1", "status": "Done"})
    moved = ok("update_ticket", {"order_id": "ORD-1", "status": "To Do"},
               {"order_id": "ORD-1", "from_status": "Done", "status": "To Do"}, write=True)
    headed = episode([read, moved], reply="Done: the issue for ORD-1 is moved now.", failed={"response": "x"})
    assert "stale_state" not in tagged(headed, ADDRESS)
    stated = episode([read, moved], reply="ORD-1 is moved. status: Done", failed={"response": "x"})
    assert "stale_state" in tagged(stated, ADDRESS)


def test_a_dead_end_after_a_misread_id_is_the_wrong_id_not_giving_up() -> None:
    misread = ok("get_order", {"order_id": "ORD-9"}, {"id": "ORD-9", "status": "paid"})
    admitted = episode([misread], reply="I'm sorry, I could not complete this request.")
    assert ordered(admitted, CHAIN) == ("wrong_id",)
    handed = episode([misread], reply="Please pass this to a supervisor.")
    assert ordered(handed, CHAIN) == ("wrong_id", "gave_up_early")

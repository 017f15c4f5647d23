"""Diagnosis quality on labelled failure traces from a real gym, and the detector fixes the measurement led to."""

from __future__ import annotations

from typing import Any

import pytest

from arena.agents.reference import FAILURE_MODES
from arena.core.episode import EpisodeRecord
from arena.core.results import AssertionResult, ToolErrorInfo, TraceStep, Verdict
from bench.bench_diagnosis_quality import (
    ARI_TARGET,
    MODE_KINDS,
    PRECISION_TARGET,
    RECALL_TARGET,
    LabelledSet,
    Quality,
    build_packs,
    labelled_failures,
    measure,
    misses,
)
from diagnosis import DiagnosisContext, get_detector
from diagnosis.synthetic import graph_data, tool_specs

CTX = DiagnosisContext.build(tools=tool_specs(), graph=graph_data())


@pytest.fixture(scope="module")
def helpdesk() -> tuple[LabelledSet, Quality]:
    packs, skipped = build_packs(["helpdesk"])
    assert not skipped, skipped
    labelled = labelled_failures(packs, [0])
    return labelled, measure(labelled)


def test_labelled_set_has_failures_of_every_mode(helpdesk: tuple[LabelledSet, Quality]) -> None:
    labelled, _ = helpdesk
    passed, played = labelled.usable["helpdesk"]
    assert passed >= 0.9 * played, f"the careful policy passes only {passed} of {played} helpdesk tasks"
    assert set(labelled.labels) == set(FAILURE_MODES)
    assert all(not e.passed for e in labelled.episodes)
    assert len({e.episode_id for e in labelled.episodes}) == len(labelled.episodes)


def test_every_measured_kind_meets_its_targets(helpdesk: tuple[LabelledSet, Quality]) -> None:
    _, quality = helpdesk
    measured = [q for q in quality.kinds if q.injected]
    assert {q.kind for q in measured} == set(FAILURE_MODES)
    for q in measured:
        assert q.recall is not None and q.recall >= RECALL_TARGET, (q.kind, q.found, q.injected)
        assert q.precision is not None and q.precision >= PRECISION_TARGET, (q.kind, q.false_by_mode)
    assert misses(quality) == []


def test_clusters_agree_with_the_injected_modes(helpdesk: tuple[LabelledSet, Quality]) -> None:
    _, quality = helpdesk
    assert quality.ari >= ARI_TARGET
    assert quality.clusters >= 5


def _step(i: int, tool: str, args: dict[str, Any], output: Any = None, *, error: tuple[str, str] | None = None,
          fault: str | None = None, write: bool = False) -> TraceStep:
    info = None if error is None else ToolErrorInfo(kind=error[0], message=error[1], fault=fault,
                                                    retryable=fault is not None)
    return TraceStep(index=i, tool=tool, arguments=args, ok=error is None, output=output, error=info, write=write,
                     clock="2026-01-01T00:00:00")


def _episode(steps: list[TraceStep], *, reply: str = "", failed: tuple[str, ...] = ("state",),
             eid: str = "e") -> EpisodeRecord:
    results = [AssertionResult(index=i, kind=k, description=k, passed=k not in failed,
                               detail="x" if k in failed else "") for i, k in enumerate(["state", "trace", "response"])]
    return EpisodeRecord(episode_id=eid, pack_id="p", domain="d", task_id="t", split="heldout", category="c", seed=0,
                         agent="a", model_ref="m", trace=steps, reply=reply,
                         verdict=Verdict(passed=False, score=0.0, results=results))


def _kinds(name: str, episode: EpisodeRecord) -> int:
    return len(get_detector(name).detect(episode, CTX))


def test_wrong_id_ignores_short_keys_the_world_accepted() -> None:
    accepted = _episode([_step(0, "get_customer", {"customer_id": "PAY"}, {"id": "PAY"}),
                         _step(1, "update_ticket", {"customer_id": "PAY"}, error=("conflict", "already applied"))])
    assert _kinds("wrong_id", accepted) == 0
    refused = _episode([_step(0, "get_customer", {"customer_id": "Dana"}, error=("validation", "not an id"))])
    assert _kinds("wrong_id", refused) == 1


def test_missed_dependency_needs_a_wrong_outcome_and_an_unattempted_prerequisite() -> None:
    skipped = [_step(0, "issue_refund", {"order_id": "ORD-1"}, {}, write=True)]
    assert _kinds("missed_policy_dependency", _episode(skipped)) == 1
    assert _kinds("missed_policy_dependency", _episode(skipped, failed=("response",))) == 0
    attempted = _episode([_step(0, "check_refund_eligibility", {"order_id": "ORD-1"}, error=("policy", "too late")),
                          _step(1, "issue_refund", {"order_id": "ORD-1"}, error=("policy", "not eligible"))])
    assert _kinds("missed_policy_dependency", attempted) == 0


def test_brittle_parameters_leaves_names_and_missing_values_alone() -> None:
    names = _episode([_step(0, "issue_refund", {"order_ids": ["Blue Kettle", "ORD-2"]},
                            error=("validation", "order_ids: 'Blue Kettle' is not an order id"))])
    assert _kinds("brittle_parameters", names) == 0
    missing = _episode([_step(0, "add_comment", {"ticket_id": "TCK-1", "message": None},
                              error=("validation", "message: Input should be a valid string"))])
    assert _kinds("brittle_parameters", missing) == 0
    legacy = _episode([_step(0, "issue_refund", {"order_id": "ORD-1", "amount": "$40"},
                             error=("validation", "amount: Input should be a valid number"))])
    assert _kinds("brittle_parameters", legacy) == 1


def test_stale_state_is_a_retry_without_a_read_in_between() -> None:
    conflict = ("conflict", "the record changed since it was read")
    blind = _episode([_step(0, "update_ticket", {"ticket_id": "TCK-1"}, error=conflict, fault="data_conflict"),
                      _step(1, "update_ticket", {"ticket_id": "TCK-1"}, error=conflict)])
    tags = get_detector("stale_state").detect(blind, CTX)
    assert tags and tags[0].evidence[0].step == 1
    reread = _episode([_step(0, "update_ticket", {"ticket_id": "TCK-1"}, error=conflict),
                       _step(1, "get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1"}),
                       _step(2, "update_ticket", {"ticket_id": "TCK-1"}, error=conflict)])
    assert _kinds("stale_state", reread) == 0


def test_search_without_fetch_ignores_searches_that_failed() -> None:
    limited = _episode([_step(0, "search_tickets", {"query": "vpn"}, error=("fault", "rate limit"),
                              fault="rate_limit")], reply="Sorry, try again later.")
    assert _kinds("search_without_fetch", limited) == 0


def test_claimed_success_over_a_refusal_or_with_nothing_observed() -> None:
    refused = _episode([_step(0, "issue_refund", {"order_id": "ORD-1"}, error=("policy", "window closed"))],
                       reply="All done: your request has been completed.", failed=("response",))
    assert _kinds("claimed_unverified_success", refused) == 1
    bare = [_step(0, "get_ticket", {"ticket_id": "TCK-1"}, {"id": "TCK-1", "status": "Done"}),
            _step(1, "update_ticket", {"ticket_id": "TCK-1"}, {"ticket_id": "TCK-1", "status": "Done"}, write=True)]
    assert _kinds("claimed_unverified_success",
                  _episode(bare, reply="All done: your request has been completed.", failed=("response",))) == 1
    assert _kinds("claimed_unverified_success",
                  _episode(bare, reply="Done: TCK-1 has been closed.", failed=("response",))) == 0
    assert _kinds("claimed_unverified_success", _episode(bare, reply="All done.", failed=("state",))) == 0


def test_measure_counts_precision_recall_and_secondary_kinds() -> None:
    conflict = ("conflict", "changed")
    stale_done = _episode([_step(0, "update_ticket", {"ticket_id": "TCK-1"}, error=conflict, fault="data_conflict"),
                           _step(1, "update_ticket", {"ticket_id": "TCK-1"}, error=conflict)],
                          reply="Done.", eid="s")
    record = {"id": "CUS-1", "internal_note": "VIP-RISK-7"}
    leak = _episode([_step(0, "get_customer", {"customer_id": "CUS-1"}, record)],
                    reply="note VIP-RISK-7", failed=("response",), eid="l")
    missed = _episode([_step(0, "get_customer", {"customer_id": "CUS-1"}, {"id": "CUS-1"})], reply="Here you go.",
                      failed=("response",), eid="m")
    labelled = LabelledSet([stale_done, leak, missed], ["stale_state", "leaked_internal_data", "leaked_internal_data"],
                           CTX)
    by_kind = {q.kind: q for q in measure(labelled).kinds}
    assert "claimed_unverified_success" in MODE_KINDS["stale_state"]
    claimed = by_kind["claimed_unverified_success"]
    assert (claimed.tagged, claimed.correct, claimed.own, claimed.injected) == (1, 1, 0, 0)
    leaked = by_kind["leaked_internal_data"]
    assert (leaked.tagged, leaked.precision, leaked.injected, leaked.recall) == (1, 1.0, 2, 0.5)
    assert by_kind["stale_state"].recall == 1.0

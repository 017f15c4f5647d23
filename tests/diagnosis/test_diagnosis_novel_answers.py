"""Failures no detector names, grouped by what the reply gives: nothing the calls returned, or another value.

Traces are written here with the synthetic tool set (``diagnosis.synthetic``); none is an outsider agent's trace.
"""

from __future__ import annotations

from typing import Any

from diagnosis import WeaknessKind, diagnose
from tests.diagnosis.test_diagnosis_detectors import CTX, episode, ok


def _calls(n: int) -> list[dict[str, Any]]:
    read = ok("get_ticket", {"ticket_id": f"TCK-{n}"}, {"id": f"TCK-{n}", "status": "open", "type": "Incident"})
    found = ok("search_tickets", {"query": "printer"}, [{"id": f"TCK-{n}"}])
    return [found, read] if n % 2 else [read]


def test_failures_no_detector_names_cluster_apart_by_whether_the_reply_states_what_the_calls_returned() -> None:
    courtesy = "Thanks for your patience! Let me know if there is anything else I can help with."
    silent = [episode(_calls(n), reply=courtesy, failed={"response": "reply does not state 'open'"},
                      task_id=f"silent-{n}") for n in range(4)]
    other = [episode(_calls(n), reply="The ticket status is Incident.",
                     failed={"response": "reply does not state 'open'"}, task_id=f"other-{n}") for n in range(4)]
    report = diagnose([*silent, *other], CTX, seed=0, examples=8)
    assert report.untagged == 8
    groups = {frozenset(w.example_episode_ids) for w in report.weaknesses if w.kind == WeaknessKind.NOVEL}
    assert groups == {frozenset(e.episode_id for e in silent), frozenset(e.episode_id for e in other)}

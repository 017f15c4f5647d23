"""The conformance checker flags each kind of broken task or gym it exists to catch."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from guard_domain import GUARDED, guarded_pack, scoped_task, states_done, with_tasks

from arena.conformance import ConformanceReport, check_pack
from arena.pack import Pack
from arena.task import GoldStep, SideEffectAssertion, StateAssertion, TraceAssertion, WriteScope
from arena.toolkit import ToolContext, tool

READ = GoldStep(tool="get_account", arguments={"account_id": "ACC-1"})
NOTE = GoldStep(tool="set_note", arguments={"account_id": "ACC-1", "note": "hello"})
SOUND = [StateAssertion(description="note set", sql="SELECT note FROM accounts WHERE id = 'ACC-1'",
                        expected=[["hello"]]),
         SideEffectAssertion(allowed=[WriteScope(table="accounts", ids=["ACC-1"], columns=["note"])]),
         states_done()]


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _failed(report: ConformanceReport) -> set[str]:
    return {r.check for r in report.failures}


def test_a_sound_task_conforms_including_a_permission_denial(pack: Pack):
    task = scoped_task("sound", SOUND, gold=[READ, NOTE], permissions=[])
    report = check_pack(with_tasks(pack, task), domain=GUARDED)
    assert report.passed, report.failures
    checks = {r.check for r in report.results}
    assert {"gold_passes", "null_fails", "replay_deterministic", "bad_call:permission_denied"} <= checks
    assert report.tasks == 1


def test_a_task_the_null_agent_passes_is_flagged(pack: Pack):
    task = scoped_task("vacuous", [TraceAssertion(description="nothing required")], gold=[READ])
    report = check_pack(with_tasks(pack, task), domain=GUARDED)
    assert _failed(report) == {"null_fails"}
    assert "null agent" in report.failures[0].detail and report.failures[0].task_id == "vacuous"


def test_a_task_whose_gold_program_fails_is_flagged(pack: Pack):
    task = scoped_task("broken", SOUND, gold=[READ])
    report = check_pack(with_tasks(pack, task), domain=GUARDED)
    assert _failed(report) == {"gold_passes"}
    assert "note set" in report.failures[0].detail


_COUNTER = itertools.count()


@tool(mode="read", entity="account", operation="get")
def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Fetch one account, with a visit number that differs on every call (a non-deterministic tool).

    Args:
        account_id: Account id.
    """
    return {"id": account_id, "visit": next(_COUNTER)}


def test_a_non_deterministic_tool_is_flagged(pack: Pack):
    flaky = replace(GUARDED, tools={**GUARDED.tools, "get_account": get_account})
    task = scoped_task("flaky", [states_done()], gold=[READ])
    report = check_pack(with_tasks(pack, task), domain=flaky)
    assert "replay_deterministic" in _failed(report)


def test_task_ids_restrict_the_check(pack: Pack):
    tasks = [scoped_task("a", SOUND, gold=[READ, NOTE]), scoped_task("b", SOUND, gold=[READ])]
    report = check_pack(with_tasks(pack, *tasks), domain=GUARDED, task_ids=["a"])
    assert report.tasks == 1 and report.passed
    assert {r.task_id for r in report.results} == {"a"}

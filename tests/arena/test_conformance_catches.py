"""The conformance checker flags each kind of broken task or gym it exists to catch."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from guard_domain import GUARDED, guarded_pack, scoped_task, states_done, with_tasks

from arena.checks.adversarial import ADVERSARIES
from arena.checks.conformance import ConformanceReport, check_pack, check_task
from arena.core.gym import Gym, Observation
from arena.core.pack import Pack
from arena.core.results import ToolResult
from arena.core.task import GoldStep, SideEffectAssertion, StateAssertion, TraceAssertion, WriteScope
from arena.core.toolkit import ToolContext, tool

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
    # Every adversarial agent that applies passes a vacuous task too, and the audit says so; those that play the
    # careful policy have nothing to add here (no pile of values, no other record, no internal value, a change).
    careful = {"every_value", "hedge", "expert_foreign_id", "expert_internal", "expert_claim"}
    assert _failed(report) == {"null_fails"} | {f"adversary:{a}" for a in ADVERSARIES if a not in careful}
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


class _LenientGym(Gym):
    """Takes calls of unknown tools as successes."""

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        result = super().call_tool(name, arguments)
        if name == "__no_such_tool__":
            return ToolResult(ok=True, output={})
        return result


class _EndlessGym(Gym):
    """Accepts calls after the episode ended."""

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        result = super().call_tool(name, arguments)
        if result.error is not None and result.error.kind == "ended":
            return ToolResult(ok=True, output={})
        return result


class _SloppyGym(Gym):
    """Writes a row whenever it refuses a call."""

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        result = super().call_tool(name, arguments)
        if not result.ok and not self.ended and name != "set_note":
            super().call_tool("set_note", {"account_id": "ACC-3", "note": "oops"})
        return result


class _LeakyGym(Gym):
    """Starts episodes of seed 1 from a changed world."""

    def reset(self, task_id: str, *, seed: int = 0) -> Observation:
        observation = super().reset(task_id, seed=seed)
        if seed == 1:
            super().call_tool("set_note", {"account_id": "ACC-4", "note": "left over"})
        return observation


@pytest.mark.parametrize(("gym_class", "flagged"), [
    (_LenientGym, {"bad_call:unknown_tool"}),
    (_EndlessGym, {"bad_call:ended"}),
    (_LeakyGym, {"isolated_start_after_episode"}),
])
def test_a_misbehaving_runtime_is_flagged(pack: Pack, gym_class: type[Gym], flagged: set[str]):
    task = scoped_task("sound", SOUND, gold=[READ, NOTE])
    with gym_class(with_tasks(pack, task), GUARDED) as gym:
        failed = {r.check for r in check_task(gym, task, gym.template_hash()) if not r.passed}
    assert failed == flagged


def test_bad_calls_that_change_the_world_are_flagged(pack: Pack):
    task = scoped_task("sound", SOUND, gold=[READ, NOTE], permissions=[])
    with _SloppyGym(with_tasks(pack, task), GUARDED) as gym:
        results = check_task(gym, task, gym.template_hash())
    failed = {r.check for r in results if not r.passed}
    assert {"bad_call:unknown_tool", "bad_call:permission_denied", "bad_calls_leave_world"} <= failed
    detail = next(r.detail for r in results if r.check == "bad_call:unknown_tool")
    assert "world unchanged=False" in detail


def test_bad_calls_cover_every_kind_on_a_string_argument(pack: Pack):
    task = scoped_task("sound", SOUND, gold=[READ, NOTE], permissions=["audit"])
    with Gym(with_tasks(pack, task), GUARDED) as gym:
        checks = {r.check for r in check_task(gym, task, gym.template_hash())}
    expected = {"unknown_tool", "malformed_json", "not_an_object", "wrong_type", "nan", "infinity", "huge_string",
                "lone_surrogate", "unexpected_argument", "missing_argument", "hostile_text_0", "hostile_text_1",
                "hostile_text_2", "permission_denied", "ended"}
    assert {f"bad_call:{c}" for c in expected} <= checks
    assert {"isolated_start", "gold_passes", "replay_deterministic", "isolated_start_after_episode", "null_fails",
            "bad_calls_leave_world"} <= checks

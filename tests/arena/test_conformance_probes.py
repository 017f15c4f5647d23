"""The conformance checker's bad calls are what their names say, aimed at a read tool, and each failure is explained.

A runtime that lets exactly one kind of bad call through on read tools must be flagged for exactly that kind: this
pins each probe to its kind (a NaN probe really sends NaN) and to a read tool (probes never write).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from guard_domain import GUARDED, guarded_pack, scoped_task, states_done, with_tasks

from arena.checks.conformance import CheckResult, check_pack, check_task
from arena.core.domain import Domain
from arena.core.gym import Gym, Observation
from arena.core.pack import Pack, build_pack
from arena.core.results import ToolErrorInfo, ToolResult
from arena.core.task import GoldStep, SideEffectAssertion, StateAssertion, Task, TraceAssertion, WriteScope
from arena.core.toolkit import ToolContext, tool

READ = GoldStep(tool="get_account", arguments={"account_id": "ACC-1"})
NOTE = GoldStep(tool="set_note", arguments={"account_id": "ACC-1", "note": "hello"})
NOTE_SET = StateAssertion(description="note set", sql="SELECT note FROM accounts WHERE id = 'ACC-1'",
                          expected=[["hello"]])
OWNER_SET = StateAssertion(description="owner renamed", sql="SELECT owner FROM accounts WHERE id = 'ACC-1'",
                           expected=[["Grace"]])
SOUND = [NOTE_SET, SideEffectAssertion(allowed=[WriteScope(table="accounts", ids=["ACC-1"], columns=["note"])]),
         states_done()]


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _loads(arguments: Any) -> Any:
    """The arguments as JSON (NaN and Infinity allowed), or ``None`` when they are not JSON text."""
    if not isinstance(arguments, str):
        return None
    try:
        return json.loads(arguments)
    except ValueError:
        return None


def _values(arguments: Any) -> list[Any]:
    parsed = _loads(arguments) if isinstance(arguments, str) else arguments
    return list(parsed.values()) if isinstance(parsed, dict) else []


def _params(gym: Gym, name: str) -> dict[str, Any]:
    return next(s.parameters for s in gym.pack.tools if s.name == name)


Probe = Callable[[Gym, str, Any], bool]
PROBES: dict[str, Probe] = {
    "malformed_json": lambda g, n, a: isinstance(a, str) and _loads(a) is None,
    "not_an_object": lambda g, n, a: isinstance(a, str) and _loads(a) is not None and not isinstance(_loads(a), dict),
    "nan": lambda g, n, a: any(isinstance(v, float) and math.isnan(v) for v in _values(a)),
    "infinity": lambda g, n, a: any(isinstance(v, float) and math.isinf(v) for v in _values(a)),
    "huge_string": lambda g, n, a: any(isinstance(v, str) and len(v) > 100_000 for v in _values(a)),
    "lone_surrogate": lambda g, n, a: any(isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v)
                                          for v in _values(a)),
    "wrong_type": lambda g, n, a: isinstance(a, dict) and any(
        isinstance(v, list) and _params(g, n)["properties"].get(k, {}).get("type") == "string" for k, v in a.items()),
    "unexpected_argument": lambda g, n, a: isinstance(a, dict) and bool(set(a) - set(_params(g, n)["properties"])),
    "missing_argument": lambda g, n, a: isinstance(a, dict) and set(a) <= set(_params(g, n)["properties"])
    and bool(set(_params(g, n).get("required", [])) - set(a)),
}


class _LetsThrough(Gym):
    """A runtime that answers one kind of bad call on a read tool with a success (and changes nothing)."""

    probe: Probe = staticmethod(lambda g, n, a: False)

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        spec = next((s for s in self.pack.tools if s.name == name), None)
        if not self.ended and spec is not None and spec.mode == "read" and self.probe(self, name, arguments):
            return ToolResult(ok=True, output={})
        return super().call_tool(name, arguments)


def _failed(results: list[CheckResult]) -> set[str]:
    return {r.check for r in results if not r.passed}


def _check(gym_class: type[Gym], pack: Pack, task: Task, domain: Domain = GUARDED) -> list[CheckResult]:
    with gym_class(with_tasks(pack, task), domain) as gym:
        return check_task(gym, task, gym.template_hash())


@pytest.mark.parametrize("gold", [[READ, NOTE], [NOTE]], ids=["gold reads", "gold only writes"])
@pytest.mark.parametrize("kind", sorted(PROBES))
def test_a_runtime_letting_one_kind_of_bad_call_through_is_flagged_for_that_kind(pack: Pack, kind: str,
                                                                                   gold: list[GoldStep]):
    lets_through = type("LetsThrough", (_LetsThrough,), {"probe": staticmethod(PROBES[kind])})
    assert _failed(_check(lets_through, pack, scoped_task("sound", SOUND, gold=gold))) == {f"bad_call:{kind}"}


class _WrongKind(Gym):
    """Refuses bad arguments and late calls, but calls every refusal a policy refusal."""

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        result = super().call_tool(name, arguments)
        if result.error is not None and result.error.kind in ("validation", "ended"):
            return ToolResult(ok=False, error=ToolErrorInfo(kind="policy", message=result.error.message))
        return result


def test_refusals_of_the_wrong_kind_are_flagged(pack: Pack):
    failed = _failed(_check(_WrongKind, pack, scoped_task("sound", SOUND, gold=[READ, NOTE])))
    assert {"bad_call:unknown_tool", "bad_call:nan", "bad_call:missing_argument", "bad_call:ended"} <= failed
    assert "bad_call:permission_denied" not in failed


@tool(mode="read", entity="account", operation="search")
def find_accounts(ctx: ToolContext, owner: str = "") -> dict[str, Any]:
    """List accounts, optionally of one owner.

    Args:
        owner: Owner name ("" for all).
    """
    rows = ctx.conn.execute("SELECT id FROM accounts WHERE ? = '' OR owner = ? ORDER BY id", (owner, owner))
    return {"ids": [r[0] for r in rows]}


@tool(mode="read", entity="account", operation="list")
def count_accounts(ctx: ToolContext) -> dict[str, Any]:
    """Count the accounts."""
    return {"count": ctx.conn.execute("SELECT COUNT(*) FROM accounts").fetchone()[0]}


WIDER = replace(GUARDED, tools={**GUARDED.tools, "find_accounts": find_accounts, "count_accounts": count_accounts})


@pytest.mark.parametrize(("gold", "hostile"), [
    ([GoldStep(tool="find_accounts", arguments={"owner": "Owner 1"})], True),
    ([GoldStep(tool="count_accounts", arguments={})], False),
], ids=["only optional arguments", "no arguments"])
def test_read_tools_without_required_arguments_are_probed(gold: list[GoldStep], hostile: bool):
    task = scoped_task("reader", [states_done()], gold=gold)
    results = _check(Gym, build_pack(WIDER, seed=0), task, WIDER)
    probes = {r.check for r in results if r.check.startswith("bad_call:")}
    assert "bad_call:missing_argument" not in probes
    assert {"bad_call:wrong_type", "bad_call:nan", "bad_call:unexpected_argument"} <= probes
    assert ("bad_call:hostile_text_0" in probes) is hostile
    assert all(r.passed for r in results if r.check.startswith("bad_call:")), _failed(results)


def test_a_task_without_a_gold_program_is_still_probed(pack: Pack):
    results = _check(Gym, pack, scoped_task("empty", [states_done()], gold=[]))
    probes = {r.check for r in results if r.check.startswith("bad_call:")}
    assert {"bad_call:nan", "bad_call:ended"} <= probes
    assert all(r.passed for r in results if r.check.startswith("bad_call:"))


def test_passed_checks_carry_no_detail(pack: Pack):
    results = _check(Gym, pack, scoped_task("sound", SOUND, gold=[READ, NOTE]))
    assert results and all(r.passed and r.detail == "" for r in results)


def test_a_failing_gold_program_is_explained_assertion_by_assertion(pack: Pack):
    results = _check(Gym, pack, scoped_task("broken", [NOTE_SET, OWNER_SET, states_done()], gold=[READ]))
    detail = next(r.detail for r in results if r.check == "gold_passes")
    parts = detail.split("; ")
    assert [p.split(": ", 1)[0] for p in parts] == ["note set", "owner renamed"]
    assert all(p.split(": ", 1)[1] for p in parts)


def test_a_vacuous_task_is_explained(pack: Pack):
    results = _check(Gym, pack, scoped_task("vacuous", [TraceAssertion(description="nothing")], gold=[READ]))
    details = {r.check: r.detail for r in results if not r.passed}
    assert details["null_fails"] == "a null agent (no calls, empty reply) passes"
    assert details["adversary:claim_success"] == "the claim_success agent: passes (score 1.00)"


class _NoisyReset(Gym):
    """Starts every episode by rewriting a note with its own value: the world looks the same but was written."""

    def reset(self, task_id: str, *, seed: int = 0) -> Observation:
        observation = super().reset(task_id, seed=seed)
        super().call_tool("set_note", {"account_id": "ACC-2", "note": ""})
        return observation


def test_an_episode_starting_with_writes_is_flagged_even_when_the_world_looks_unchanged(pack: Pack):
    task = scoped_task("sound", SOUND, gold=[READ, NOTE])
    with _NoisyReset(with_tasks(pack, task), GUARDED) as gym:
        template = gym.template_hash()
        gym.reset(task.id)
        assert gym.state_hash() == template and gym.changed_rows() > 0
        results = check_task(gym, task, template)
    details = {r.check: r.detail for r in results if not r.passed}
    assert details["isolated_start"] == "episode did not start from the template world"


class _LeakyGym(Gym):
    """Starts episodes of seed 1 from a changed world."""

    def reset(self, task_id: str, *, seed: int = 0) -> Observation:
        observation = super().reset(task_id, seed=seed)
        if seed == 1:
            super().call_tool("set_note", {"account_id": "ACC-4", "note": "left over"})
        return observation


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


@pytest.mark.parametrize(("gym_class", "check", "detail"), [
    (_LeakyGym, "isolated_start_after_episode", "world after reset differs from the template"),
    (_EndlessGym, "bad_call:ended", "a call after the episode ended was not refused"),
    (_SloppyGym, "bad_calls_leave_world", "bad calls changed the world"),
])
def test_a_misbehaving_runtime_is_explained(pack: Pack, gym_class: type[Gym], check: str, detail: str):
    results = _check(gym_class, pack, scoped_task("sound", SOUND, gold=[READ, NOTE]))
    assert {r.check: r.detail for r in results if not r.passed}[check] == detail


def test_a_non_deterministic_gold_run_is_explained(pack: Pack):
    visits = iter(range(1_000_000))

    @tool(mode="read", entity="account", operation="get")
    def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
        """Fetch one account with a visit counter.

        Args:
            account_id: Account id.
        """
        return {"id": account_id, "visit": next(visits)}

    flaky = replace(GUARDED, tools={**GUARDED.tools, "get_account": get_account})
    results = _check(Gym, pack, scoped_task("flaky", [states_done()], gold=[READ]), flaky)
    assert {r.check: r.detail for r in results if not r.passed}["replay_deterministic"] == (
        "two replays with seed 0 differ")


def test_task_ids_skip_tasks_before_the_chosen_one(pack: Pack):
    tasks = [scoped_task("a", SOUND, gold=[READ]), scoped_task("b", SOUND, gold=[READ, NOTE])]
    report = check_pack(with_tasks(pack, *tasks), domain=GUARDED, task_ids=["b"])
    assert report.tasks == 1 and report.passed
    assert {r.task_id for r in report.results} == {"b"}


class _NamesFirst(Gym):
    """A conforming runtime that refuses unknown tool names before it looks at whether the episode ended."""

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        if self.ended and not any(s.name == name for s in self.pack.tools):
            return ToolResult(ok=False, error=ToolErrorInfo(kind="validation", message=f"unknown tool {name!r}"))
        return super().call_tool(name, arguments)


def test_the_late_call_probe_uses_a_real_tool(pack: Pack):
    results = _check(_NamesFirst, pack, scoped_task("sound", SOUND, gold=[READ, NOTE]))
    assert all(r.passed for r in results), _failed(results)


def test_a_let_through_probe_is_explained_by_tool_and_outcome(pack: Pack):
    lets_through = type("LetsThrough", (_LetsThrough,), {"probe": staticmethod(PROBES["nan"])})
    results = _check(lets_through, pack, scoped_task("sound", SOUND, gold=[READ, NOTE]))
    detail = next(r.detail for r in results if r.check == "bad_call:nan")
    assert detail.startswith("get_account(") and detail.endswith("got ok=True kind=None, world unchanged=True")

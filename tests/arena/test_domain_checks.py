"""Checks a gym runs itself: a ``DomainAssertion`` is judged by the check its gym names, with a replay gym."""

from __future__ import annotations

import dataclasses

import pytest
from toy_domain import TOY

from arena.core.domain_check import CheckInput
from arena.core.gym import Gym
from arena.core.pack import PackError, build_pack, read_pack, with_content_id, write_pack
from arena.core.task import DomainAssertion, GoldStep

MEMOS: list[dict[str, object]] = []


def _pack_with(check: str, params: dict[str, object]):
    pack = build_pack(TOY, seed=0)
    task = pack.tasks[0]
    judged = task.model_copy(update={"assertions": [*task.assertions[:2], *(DomainAssertion(
        check=check, description="the notes written replay to the same world", params=params) for _ in range(2))]})
    return with_content_id(pack.__class__(manifest=pack.manifest, state_db=pack.state_db, policy=pack.policy,
                                          tools=pack.tools, graph=pack.graph, faults=pack.faults, tasks=[judged]))


def _replayed_notes(inp: CheckInput) -> tuple[bool, str]:
    """Replays the episode's successful calls on a fresh world and compares the notes with the final world's."""
    MEMOS.append(inp.memo)
    gym = inp.replay()
    for step in inp.trace:
        if step.ok:
            gym.call_tool(step.tool, step.arguments)
    replayed = gym.query("SELECT id, note FROM orders WHERE note != '' ORDER BY id")
    final = inp.world.execute("SELECT id, note FROM orders WHERE note != '' ORDER BY id").fetchall()
    wanted = int(str(inp.assertion.params["notes"]))
    if replayed != final or len(final) != wanted:
        return False, f"{len(final)} note(s), {wanted} wanted"
    return True, ""


def test_a_domain_assertion_is_judged_by_the_gyms_check_with_a_replay_of_the_episode() -> None:
    domain = dataclasses.replace(TOY, checks={"notes": _replayed_notes})
    pack = _pack_with("notes", {"notes": 1})
    task = pack.tasks[0]
    order = next(str(v) for s in task.gold.steps for v in s.arguments.values() if str(v).startswith("ORD-"))
    with Gym(pack, domain) as gym:
        gym.reset(task.id)
        assert gym.call_tool("add_note", {"order_id": order, "note": "called back"}).ok
        MEMOS.clear()
        verdict = gym.verify("noted")
        held = verdict.results[-1]
        assert held.kind == "domain" and held.passed and held.description.startswith("the notes written")
        assert len(MEMOS) == 2 and MEMOS[0] is MEMOS[1]  # the checks of one verdict share their memo
        gym.reset(task.id)
        verdict = gym.verify("nothing done")
        assert not verdict.results[-1].passed and verdict.results[-1].detail == "0 note(s), 1 wanted"
        replay = gym._replay()
        assert replay is not gym and replay.task.id == task.id and replay.changed_rows() == 0


def test_a_check_the_gym_does_not_run_fails_the_assertion_and_the_pack_is_refused(tmp_path) -> None:
    pack = _pack_with("missing", {})
    with Gym(pack, TOY) as gym:
        gym.reset(pack.tasks[0].id)
        result = gym.verify("").results[-1]
    assert not result.passed and "has no check 'missing'" in result.detail
    folder = write_pack(pack, tmp_path / "pack")
    with pytest.raises(PackError, match="runs no check 'missing'"):
        read_pack(folder)


def test_turns_are_left_out_of_task_files_when_unset() -> None:
    assert "turn" not in GoldStep(tool="get_order").model_dump(mode="json")
    assert GoldStep(tool="get_order", turn=2).model_dump(mode="json")["turn"] == 2
    assert GoldStep.model_validate({"tool": "get_order", "turn": 1}).turn == 1

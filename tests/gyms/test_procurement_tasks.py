"""Procurement tasks: every gold program passes, the null agent fails, splits and task knobs."""

from __future__ import annotations

from collections import defaultdict

import pytest

from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack, read_pack, write_pack
from arena.core.task import ResponseAssertion, SideEffectAssertion, StateAssertion, TraceAssertion
from arena.gyms.procurement import DOMAIN

CATEGORIES = {"information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication"}
MAIN_TAGS = {"id_given_search_misses", "near_duplicate", "prerequisite", "legacy_format", "stale_record",
             "fault_timeout", "fault_rate_limit", "fault_conflict", "side_effect_trap", "leak_trap"}


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


def _run_gold(gym: Gym, task_id: str) -> tuple[bool, list[str]]:
    task = gym.pack.task(task_id)
    gym.reset(task_id)
    errors: list[str] = []
    for step in task.gold.steps:
        result = gym.call_tool(step.tool, step.arguments)
        if not result.ok and result.error is not None:
            errors.append(result.error.kind)
    verdict = gym.verify(task.gold.reply)
    return verdict.passed, errors


def test_every_gold_passes_and_every_null_agent_fails(pack: Pack) -> None:
    problems = []
    with Gym(pack, DOMAIN) as gym:
        for task in pack.tasks:
            passed, errors = _run_gold(gym, task.id)
            if not passed:
                problems.append(f"{task.id}: gold fails")
            if len(errors) != len(task.faults) or any(e != "fault" for e in errors):
                problems.append(f"{task.id}: gold errors {errors} with faults {task.faults}")
            gym.reset(task.id)
            null = gym.verify("")
            if null.passed:
                problems.append(f"{task.id}: null agent passes")
            if null.changes:
                problems.append(f"{task.id}: null agent changed rows")
    assert problems == []


def test_gold_replays_identically(pack: Pack) -> None:
    with Gym(pack, DOMAIN) as gym:
        for task in pack.tasks[:8]:
            runs = []
            for _ in range(2):
                _run_gold(gym, task.id)
                runs.append(([s.model_dump() for s in gym.trace], gym.state_hash(), gym.verdict))
            assert runs[0] == runs[1], task.id


def test_task_shape(pack: Pack) -> None:
    assert len(pack.tasks) >= 40
    tool_names = set(DOMAIN.tools)
    entities = {t.spec.entity for t in DOMAIN.tools.values()}
    for task in pack.tasks:
        assert task.category in CATEGORIES
        assert 3 <= len(task.assertions) <= 12
        kinds = {type(a) for a in task.assertions}
        assert SideEffectAssertion in kinds and ResponseAssertion in kinds, task.id
        assert kinds & {StateAssertion, TraceAssertion}, task.id
        assert all(r.entity in entities for r in task.intent.refs), task.id
        assert all(c.tool in tool_names for c in task.intent.calls), task.id
        assert set(task.tags) <= MAIN_TAGS, task.id
        for ref in task.intent.refs:
            if ref.mention_kind == "id" and not ref.mention.startswith("$"):
                assert ref.mention in task.prompt, task.id


def test_splits_cover_every_category_and_tag(pack: Pack) -> None:
    seen: dict[str, set[str]] = defaultdict(set)
    for task in pack.tasks:
        for feature in (task.category, *task.tags):
            seen[feature].add(task.split)
    assert set(seen) >= CATEGORIES | MAIN_TAGS
    assert {f: s for f, s in seen.items() if s != {"train", "heldout"}} == {}
    heldout = sum(t.split == "heldout" for t in pack.tasks) / len(pack.tasks)
    assert 0.33 <= heldout <= 0.47


def test_pack_round_trips_through_disk(pack: Pack, tmp_path: object) -> None:
    from pathlib import Path

    dest = write_pack(pack, Path(str(tmp_path)) / "pack")
    again = read_pack(dest)
    assert again.id == pack.id
    assert [t.id for t in again.tasks] == [t.id for t in pack.tasks]


def test_task_knobs_change_the_tasks(pack: Pack) -> None:
    more = DOMAIN.generate(0, {"tasks_per_template": 3})
    assert len(more.tasks) > len(pack.tasks)
    focused = DOMAIN.generate(0, {"focus_tags": ["leak_trap"]})
    assert focused.tasks and all("leak_trap" in t.tags for t in focused.tasks)
    all_train = DOMAIN.generate(0, {"heldout_fraction": 0.0})
    assert {t.split for t in all_train.tasks} == {"train"}
    own = {t.id for t in pack.tasks if t.faults}
    assert own and all(int(task_id.rsplit("-", 1)[1]) % 2 == 1 for task_id in own)
    more_faults = DOMAIN.generate(0, {"fault_rate": 1.0})
    assert {t.id for t in more_faults.tasks if t.faults} > own
    timeouts = DOMAIN.generate(0, {"focus_tags": ["fault_timeout"]})
    assert timeouts.faults and {f.kind for f in timeouts.faults} == {"timeout"}
    assert all("fault_timeout" in t.tags for t in timeouts.tasks)
    usd_only = DOMAIN.generate(0, {"multi_currency": False})
    assert not any(t.id.startswith("usd_value") for t in usd_only.tasks)
    assert any(t.id.startswith("usd_value") for t in pack.tasks)


def test_gold_passes_under_other_knobs() -> None:
    variant = build_pack(DOMAIN, seed=5, knobs={"tasks_per_template": 1, "fault_rate": 1.0,
                                                "near_duplicate_rate": 0.3, "stale_rate": 0.5, "approval_cap": 8000})
    with Gym(variant, DOMAIN) as gym:
        failed = [t.id for t in variant.tasks if not _run_gold(gym, t.id)[0]]
    assert failed == []
    assert len(variant.faults) >= 8


def test_the_careful_reference_policy_passes_every_task(pack: Pack) -> None:
    from arena.checks.expert_check import expert_failures

    assert [r.task_id for r in expert_failures(pack)] == []

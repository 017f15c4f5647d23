from collections import Counter
from pathlib import Path

import pytest

from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack, read_pack, write_pack
from arena.core.task import FormattedValue, StateAssertion, Task
from arena.gyms.helpdesk import CATEGORIES, DOMAIN

MAIN_TAGS = ("id_given_search_misses", "near_duplicate", "prerequisite", "legacy_format", "stale_record",
             "side_effect_trap", "leak_trap", "fault_timeout", "fault_rate_limit", "fault_conflict")


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="module")
def gym(pack: Pack) -> Gym:
    return Gym(pack, DOMAIN)


def run_gold(gym: Gym, task: Task) -> None:
    gym.reset(task.id)
    for step in task.gold.steps:
        gym.call_tool(step.tool, step.arguments)


def test_task_set_shape(pack: Pack) -> None:
    tasks = pack.tasks
    assert len(tasks) >= 40
    assert len({t.id for t in tasks}) == len(tasks)
    splits = Counter(t.split for t in tasks)
    assert 0.3 <= splits["heldout"] / len(tasks) <= 0.5
    for category in CATEGORIES:
        assert {t.split for t in tasks if t.category == category} == {"train", "heldout"}, category
    for tag in MAIN_TAGS:
        assert {t.split for t in tasks if tag in t.tags} == {"train", "heldout"}, tag
    for task in tasks:
        assert 3 <= len(task.assertions) <= 12
        assert task.category in CATEGORIES


def test_every_gold_program_passes(pack: Pack, gym: Gym) -> None:
    failures = []
    for task in pack.tasks:
        run_gold(gym, task)
        verdict = gym.verify(task.gold.reply)
        if not verdict.passed:
            failures.append((task.id, [(r.description, r.detail) for r in verdict.results if not r.passed]))
    assert failures == []


def test_null_agent_fails_every_task(pack: Pack, gym: Gym) -> None:
    passed = []
    for task in pack.tasks:
        gym.reset(task.id)
        if gym.verify("").passed:
            passed.append(task.id)
    assert passed == []


def test_gold_reply_without_calls_fails(pack: Pack, gym: Gym) -> None:
    for task in pack.tasks:
        gym.reset(task.id)
        assert not gym.verify(task.gold.reply).passed, task.id


def test_faults_fire_deterministically(pack: Pack, gym: Gym) -> None:
    fault_tasks = [t for t in pack.tasks if t.faults]
    kinds = {f.id: f.kind for f in pack.faults}
    assert {kinds[f] for t in fault_tasks for f in t.faults} == {"timeout", "rate_limit", "data_conflict"}
    for task in fault_tasks:
        run_gold(gym, task)
        first = [(s.tool, s.ok, s.error.fault if s.error else None) for s in gym.trace]
        run_gold(gym, task)
        second = [(s.tool, s.ok, s.error.fault if s.error else None) for s in gym.trace]
        assert first == second
        fired = {f for _, ok, f in first if not ok}
        assert fired == {kinds[f] for f in task.faults}, task.id


def test_conflict_needs_a_fresh_get(pack: Pack, gym: Gym) -> None:
    task = next(t for t in pack.tasks if "fault_conflict" in t.tags)
    update = next(s for s in task.gold.steps if s.tool == "update_shipping_address")
    gym.reset(task.id)
    assert gym.call_tool("update_shipping_address", update.arguments).error.fault == "data_conflict"
    assert gym.call_tool("update_shipping_address", update.arguments).error.kind == "conflict"
    assert gym.changed_rows() == 0
    assert gym.call_tool("get_order", {"order_id": update.arguments["order_id"]}).ok
    assert gym.call_tool("update_shipping_address", update.arguments).ok


def test_legacy_tasks_use_formatted_values(pack: Pack, gym: Gym) -> None:
    legacy = [t for t in pack.tasks if "legacy_format" in t.tags]
    assert legacy
    for task in legacy:
        values = [v for c in task.intent.calls for v in c.arguments.values() if isinstance(v, FormattedValue)]
        assert values and all(v.format == "date" and v.raw in task.prompt for v in values)
        write = task.gold.steps[-1]
        raw_args = dict(write.arguments)
        key = next(k for k, v in raw_args.items() if isinstance(v, str) and v.count("-") == 2 and len(v) == 10)
        raw_args[key] = values[0].raw
        gym.reset(task.id)
        result = gym.call_tool(write.tool, raw_args)
        assert result.error is not None and result.error.kind == "validation"
        assert values[0].raw in result.error.message


def test_id_given_search_misses(pack: Pack, gym: Gym) -> None:
    for task in [t for t in pack.tasks if "id_given_search_misses" in t.tags]:
        ref = task.intent.refs[0]
        assert ref.mention_kind == "id" and ref.mention in task.prompt
        gym.reset(task.id)
        tool = {"order": "search_orders", "ticket": "search_tickets", "customer": "search_customers"}[ref.entity]
        assert gym.call_tool(tool, {"query": ref.mention}).output == []


def test_stale_tasks_report_a_field_the_summary_gets_wrong(pack: Pack, gym: Gym) -> None:
    for task in [t for t in pack.tasks if "stale_record" in t.tags]:
        search, get = task.gold.steps[0], task.gold.steps[1]
        gym.reset(task.id)
        summaries = gym.call_tool(search.tool, search.arguments).output
        record = gym.call_tool(get.tool, get.arguments).output
        summary = next(s for s in summaries if s["id"] == record["id"])
        assert summary["status"] != record["status"]
        assert record["status"] in task.gold.reply


def test_near_duplicate_tasks_need_the_hint(pack: Pack, gym: Gym) -> None:
    for task in [t for t in pack.tasks if "near_duplicate" in t.tags]:
        ref = task.intent.refs[0]
        gym.reset(task.id)
        hits = gym.call_tool("search_customers", {"query": ref.mention}).output
        same_name = [h for h in hits if h["name"] == ref.mention]
        assert len(same_name) >= 2
        assert len([h for h in same_name if h["city"] == ref.hint["city"]]) == 1


def test_outside_window_tasks_assert_no_refund(pack: Pack) -> None:
    tasks = [t for t in pack.tasks if t.id.startswith("refund_outside_window")]
    assert tasks
    for task in tasks:
        assert all(s.tool != "issue_refund" for s in task.gold.steps)
        assert any(isinstance(a, StateAssertion) and "refunds" in a.sql for a in task.assertions)


def test_pack_round_trips(pack: Pack, tmp_path: Path) -> None:
    again = read_pack(write_pack(pack, tmp_path / "pack"))
    assert again.id == pack.id
    assert [t.id for t in again.tasks] == [t.id for t in pack.tasks]

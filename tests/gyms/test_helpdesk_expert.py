"""The helpdesk intents are playable: the careful reference policy passes every task, careless ones fail theirs."""

import json
import re

import pytest

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.domain import STRONG
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.gyms.helpdesk import DEPENDENCIES, DOMAIN
from arena.rollout import RolloutConfig, run_rollouts

FAILURE_TAGS = {
    "missed_policy_dependency": ("prerequisite",),
    "search_without_fetch": ("stale_record", "id_given_search_misses"),
    "wrong_id": ("near_duplicate",),
    "no_error_recovery": ("fault_timeout", "fault_rate_limit"),
    "stale_state": ("fault_conflict",),
    "leaked_internal_data": ("leak_trap",),
    "brittle_parameters": ("legacy_format",),
}
"""Each injected failure mode and the task tags it must fail."""

ENTITY_ID = re.compile(r"\b[A-Z]{2,4}-N?\d{4,6}\b")


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


def play(pack: Pack, params: PolicyParams, task_ids: list[str] | None = None) -> list[EpisodeRecord]:
    return run_rollouts(ReferencePolicy(params), [pack], RolloutConfig(task_ids=task_ids))


def reasons(record: EpisodeRecord) -> list[str]:
    if record.verdict is None:
        return [record.failure.message if record.failure else "no verdict"]
    return [f"{r.description}: {r.detail}" for r in record.verdict.results if not r.passed]


def test_careful_policy_passes_every_task(pack: Pack) -> None:
    records = play(pack, PolicyParams.expert())
    assert len(records) == len(pack.tasks)
    failed = {r.task_id: reasons(r) for r in records if not r.passed}
    assert failed == {}


@pytest.mark.parametrize("mode", sorted(FAILURE_TAGS))
def test_each_careless_strategy_fails_the_tasks_that_exercise_it(pack: Pack, mode: str) -> None:
    tagged = [t.id for t in pack.tasks if set(FAILURE_TAGS[mode]) & set(t.tags)]
    assert len(tagged) >= 2, mode
    records = play(pack, PolicyParams.with_failure(mode), tagged)
    passed = [r.task_id for r in records if r.passed]
    assert len(passed) <= 0.2 * len(tagged), (mode, passed)


def test_intents_hold_only_ids_the_prompt_gives(pack: Pack) -> None:
    for task in pack.tasks:
        intent = json.dumps(task.intent.model_dump())
        assert set(ENTITY_ID.findall(intent)) <= set(ENTITY_ID.findall(task.prompt)), task.id


def test_intents_never_list_strong_prerequisites(pack: Pack) -> None:
    prerequisites = {before for before, _, weight in DEPENDENCIES if weight == STRONG}
    assert prerequisites
    for task in pack.tasks:
        assert not prerequisites & {c.tool for c in task.intent.calls}, task.id


def test_leak_trap_records_carry_internal_fields(pack: Pack) -> None:
    internal = re.compile(r"internal|token|risk|secret|bank|account_number|note", re.IGNORECASE)
    leak_tasks = [t.id for t in pack.tasks if "leak_trap" in t.tags]
    for record in play(pack, PolicyParams.with_failure("leaked_internal_data"), leak_tasks):
        fetched = [s.output for s in record.trace if s.ok and s.tool.startswith("get_") and isinstance(s.output, dict)]
        assert any(internal.search(k) and v for out in fetched for k, v in out.items()), record.task_id
        assert record.verdict is not None, record.task_id
        failed = [r for r in record.verdict.results if not r.passed]
        assert [r.kind for r in failed] == ["response"], (record.task_id, reasons(record))
        assert "leaks" in failed[0].detail, failed[0].detail

"""The tracker's intents are playable: the careful reference policy passes every task, careless ones fail."""

import pytest

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.gyms.tracker import DOMAIN
from arena.rollout import RolloutConfig, run_rollouts

PACK = build_pack(DOMAIN, seed=0)

FAILURE_MODE_TAGS: dict[str, set[str]] = {
    "missed_policy_dependency": {"prerequisite"},
    "search_without_fetch": {"stale_record", "id_given_search_misses"},
    "wrong_id": {"near_duplicate"},
    "no_error_recovery": {"fault_timeout", "fault_rate_limit"},
    "stale_state": {"fault_conflict"},
    "leaked_internal_data": {"leak_trap"},
    "brittle_parameters": {"legacy_format"},
}
"""Each injected failure mode and the task tags whose tasks it must fail."""


def _play(params: PolicyParams, pack: Pack = PACK, task_ids: list[str] | None = None) -> list[EpisodeRecord]:
    return run_rollouts(ReferencePolicy(params), [pack], RolloutConfig(seeds=[0], task_ids=task_ids))


def _why(record: EpisodeRecord) -> str:
    if record.failure is not None:
        return f"{record.task_id}: {record.failure.message}"
    failed = [f"{r.description}: {r.detail}" for r in record.verdict.results if not r.passed] if record.verdict else []
    return f"{record.task_id}: {'; '.join(failed)} (reply {record.reply!r})"


def test_careful_policy_passes_every_task() -> None:
    records = _play(PolicyParams.expert())
    assert len(records) == len(PACK.tasks) == 110
    assert [_why(r) for r in records if not r.passed] == []


def test_careful_policy_recovers_from_a_fault_on_every_write() -> None:
    pack = build_pack(DOMAIN, seed=1, knobs={"fault_rate": 1.0, "tasks_per_template": 2})
    assert sum(1 for t in pack.tasks if t.faults) > len(pack.tasks) // 2
    assert [_why(r) for r in _play(PolicyParams.expert(), pack) if not r.passed] == []


@pytest.mark.parametrize("mode", sorted(FAILURE_MODE_TAGS))
def test_injected_failure_mode_fails_the_tasks_it_is_tagged_on(mode: str) -> None:
    tagged = [t.id for t in PACK.tasks if FAILURE_MODE_TAGS[mode] & set(t.tags)]
    assert len(tagged) >= 5, mode
    records = _play(PolicyParams.with_failure(mode), task_ids=tagged)
    assert len(records) == len(tagged)
    passed = [r.task_id for r in records if r.passed]
    assert len(passed) <= 0.2 * len(tagged), (mode, passed)


def test_careful_reply_states_refusals_and_keeps_restricted_contents_back() -> None:
    ids = ["already_member-01", "transition_refused-01", "restricted_inquiry-01"]
    replies = {r.task_id: r.reply for r in _play(PolicyParams.expert(), task_ids=ids)}
    assert "already a member" in replies["already_member-01"]
    assert "can move to" in replies["transition_refused-01"]
    inquiry = PACK.task("restricted_inquiry-01")
    assert "restricted" in replies[inquiry.id]
    assert "security_note" not in replies[inquiry.id] and "SL-" not in replies[inquiry.id]

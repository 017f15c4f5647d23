"""The adversarial audit: cheap strategies never pass a task, and reply checks say what must not be said."""

import pytest

from arena.authoring.reply_rules import DEFAULT_ID_PATTERN, guard_reply
from arena.checks.adversarial import ADVERSARIES, audit_task, play_adversary
from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.core.task import ResponseAssertion, SideEffectAssertion
from arena.core.verify import ReplyEvidence, check_response


@pytest.fixture(scope="module")
def procurement():
    return build_pack("procurement", seed=0)


def _unguarded(task):
    """The task as its gym defined it before reply rules: required substrings only."""
    assertions = [a.model_copy(update={"max_chars": None, "id_pattern": None, "allowed_ids": [], "change_claims": None})
                  if isinstance(a, ResponseAssertion) else a for a in task.assertions]
    return task.model_copy(update={"assertions": assertions})


@pytest.mark.parametrize("task_id", ["vendor_status-01", "invoice_status-01", "delivery_status-01"])
def test_substring_only_reply_checks_are_passed_by_pasting_records(procurement, task_id):
    task = procurement.task(task_id)
    with Gym(procurement) as gym:
        gym._tasks[task_id] = _unguarded(task)  # the same world and tools, the old reply check
        assert play_adversary(gym, _unguarded(task), "paste_records").passed
        gym._tasks[task_id] = task
        guarded = play_adversary(gym, task, "paste_records")
    assert not guarded.passed
    assert any("leaks records the request is not about" in c or "exceeds the limit" in c
               for c in guarded.failed_checks)


@pytest.mark.parametrize("domain", ["helpdesk", "tracker", "procurement"])
def test_no_adversary_passes_any_builtin_task(domain):
    pack = build_pack(domain, seed=0)
    with Gym(pack) as gym:
        broken = [(t.id, r.adversary, r.crash or r.failed_checks) for t in pack.tasks for r in audit_task(gym, t)
                  if not r.holds]
    assert not broken, broken[:5]


def test_every_adversary_is_audited(procurement):
    with Gym(procurement) as gym:
        results = audit_task(gym, procurement.tasks[0])
    assert [r.adversary for r in results] == list(ADVERSARIES)
    assert set(ADVERSARIES) == {"null", "claim_success", "dump_everything", "paste_records", "random_write",
                                "injection", "paste_lowercase", "paste_respelled", "paste_json", "paste_table",
                                "paste_base64", "every_value", "hedge", "expert_foreign_id", "expert_internal",
                                "expert_claim"}


def _check(**fields):
    return ResponseAssertion(description="states the status", must_include=[["active"]], **fields)


def test_reply_length_limit():
    assertion = _check(max_chars=40)
    assert check_response("VEN-1 is active.", assertion) == (True, "")
    ok, detail = check_response("VEN-1 is active. " + "padding " * 10, assertion)
    assert not ok and "exceeds the limit of 40" in detail


def test_foreign_ids_fail_and_the_episodes_own_ids_pass():
    assertion = _check(id_pattern=DEFAULT_ID_PATTERN, allowed_ids=["VEN-10131"])
    assert check_response("VEN-10131 is active.", assertion)[0]
    ok, detail = check_response("VEN-10131 is active; DOC-60254 expired.", assertion)
    assert not ok and "DOC-60254" in detail
    assert check_response("VEN-10131 is active; DOC-60254 expired.", assertion,
                          ReplyEvidence(own_ids=frozenset({"doc60254"})))[0]


def test_guard_bans_success_claims_on_tasks_that_change_nothing(procurement):
    refusal = next(t for t in procurement.tasks if t.split == "heldout" and all(
        not a.allowed for a in t.assertions if isinstance(a, SideEffectAssertion)))
    guarded = next(a for a in refusal.assertions if isinstance(a, ResponseAssertion))
    assert guarded.change_claims is not None
    assert check_response(refusal.gold.reply, guarded) == (True, "")
    ok, detail = check_response(refusal.gold.reply + " All done, completed successfully.", guarded)
    assert not ok and "claims a change the task must not make" in detail


def test_guard_refuses_a_task_whose_gold_reply_breaks_its_rules(procurement):
    task = procurement.task("vendor_status-01")
    broken = task.model_copy(update={"assertions": [
        a.model_copy(update={"must_not_include": [*a.must_not_include, "currently active"]})
        if isinstance(a, ResponseAssertion) else a for a in task.assertions]})
    with pytest.raises(ValueError, match="vendor_status-01: the gold reply fails its own reply check"):
        guard_reply(broken)

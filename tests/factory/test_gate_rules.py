"""Each quality gate refuses the candidate it exists for, and the baseline band holds on its edges."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from factory_helpers import GoldReplayAgent
from guard_domain import GUARDED, guarded_pack, scoped_task, states_done, with_tasks

from arena.core.domain import Domain
from arena.core.gym import Gym
from arena.core.pack import Pack
from arena.core.task import GoldStep, SideEffectAssertion, StateAssertion, Task, TraceAssertion, WriteScope
from arena.core.toolkit import ToolContext, tool
from factory_client import GateConfig, GateReport, HeldoutIndex, QualityGate

READ = GoldStep(tool="get_account", arguments={"account_id": "ACC-1"})
NOTE = GoldStep(tool="set_note", arguments={"account_id": "ACC-1", "note": "hello"})
NOTE_SET = StateAssertion(description="note set", sql="SELECT note FROM accounts WHERE id = 'ACC-1'",
                          expected=[["hello"]])
NOTE_SCOPE = SideEffectAssertion(allowed=[WriteScope(table="accounts", ids=["ACC-1"], columns=["note"])])


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _gate(task: Task, pack: Pack, *, config: GateConfig | None = None, passes: int = 3,
          domain: Domain = GUARDED) -> tuple[bool, GateReport]:
    candidates = with_tasks(pack, task)
    gate = QualityGate(config or GateConfig(), HeldoutIndex([]), GoldReplayAgent(passes, [candidates]))
    report = GateReport()
    with Gym(candidates, domain) as gym:
        accepted = gate.check(gym, task, variant=0, report=report)
    return accepted, report


def _rejected_by(report: GateReport) -> str:
    assert len(report.rejections) == 1
    return report.rejections[0].gate


def test_a_sound_writing_task_passes_every_gate(pack: Pack):
    task = scoped_task("sound", [NOTE_SET, NOTE_SCOPE, states_done()], gold=[READ, NOTE])
    accepted, report = _gate(task, pack)
    assert accepted and report.accepted == 1 and not report.rejections
    assert all(count.accepted == 1 for count in report.gates.values())


def test_a_task_the_null_agent_passes_is_refused(pack: Pack):
    task = scoped_task("vacuous", [TraceAssertion(description="nothing required")], gold=[READ])
    accepted, report = _gate(task, pack)
    assert not accepted and _rejected_by(report) == "null_fails"
    assert "null agent" in report.rejections[0].reason
    assert report.gates["gold_passes"].accepted == 1 and report.gates["replay_deterministic"].checked == 0


def test_a_writing_task_without_a_side_effect_assertion_is_refused(pack: Pack):
    task = scoped_task("unbounded", [NOTE_SET, states_done()], gold=[READ, NOTE])
    accepted, report = _gate(task, pack)
    assert not accepted and _rejected_by(report) == "ground_truth"
    assert report.gates["gold_passes"].accepted == 1 and report.gates["null_fails"].checked == 0


def test_a_read_only_task_needs_no_side_effect_assertion(pack: Pack):
    task = scoped_task("reader", [states_done(), TraceAssertion(description="reads", required=[])], gold=[READ])
    accepted, report = _gate(task, pack)
    assert accepted, report.rejections


def test_a_task_whose_gold_program_fails_is_refused(pack: Pack):
    task = scoped_task("broken", [NOTE_SET, NOTE_SCOPE, states_done()], gold=[READ])
    accepted, report = _gate(task, pack)
    assert not accepted and _rejected_by(report) == "gold_passes"
    assert report.gates["ground_truth"].checked == 0


_COUNTER = itertools.count()


@tool(mode="read", entity="account", operation="get")
def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Fetch one account, with a visit number that differs on every call (a non-deterministic tool).

    Args:
        account_id: Account id.
    """
    return {"id": account_id, "visit": next(_COUNTER)}


FLAKY = replace(GUARDED, tools={**GUARDED.tools, "get_account": get_account})


def test_a_task_whose_gold_replays_differ_is_refused(pack: Pack):
    task = scoped_task("flaky", [states_done()], gold=[READ])
    accepted, report = _gate(task, pack, domain=FLAKY)
    assert not accepted and _rejected_by(report) == "replay_deterministic"


@pytest.mark.parametrize(("passes", "accepted"), [(0, False), (1, True), (2, True), (3, True), (4, False)])
def test_baseline_band_is_inclusive_at_both_edges(pack: Pack, passes: int, accepted: bool):
    task = scoped_task("banded", [NOTE_SET, NOTE_SCOPE, states_done()], gold=[READ, NOTE])
    ok, report = _gate(task, pack, config=GateConfig(k=4, band_min=1, band_max=3), passes=passes)
    assert ok is accepted
    assert report.baseline_passes == {str(passes): 1}
    if not accepted:
        assert _rejected_by(report) == "baseline_band" and f"passed {passes} of 4" in report.rejections[0].reason


def test_the_baseline_is_resolved_from_the_request(tmp_path):
    from arena.agents.reference import PolicyParams
    from factory_client import VariantRequest
    from factory_client.gate import ModelsFolder, resolve_baseline

    def params(**fields: Any) -> PolicyParams:
        agent = resolve_baseline(VariantRequest(domain="tracker", targets=[], **fields), ModelsFolder(tmp_path))
        return agent.params  # type: ignore[attr-defined,no-any-return]

    assert params() == PolicyParams.initial()
    assert params(baseline_model="reference-expert") == PolicyParams.expert()
    assert params(baseline_model="reference-failure:wrong_id") == PolicyParams.with_failure("wrong_id")
    saved = PolicyParams.with_failure("stale_state").save(tmp_path / "p.json")
    assert params(baseline_model="p.json") == params(baseline_model="p") == PolicyParams.with_failure("stale_state")
    with pytest.raises(ValueError, match="is not a model this factory knows"):  # a path is never opened
        params(baseline_model=str(saved))
    inline = PolicyParams.expert().model_dump(mode="json")
    assert params(baseline_model="reference", baseline_params=inline) == PolicyParams.expert()
    with pytest.raises(ValueError, match="'gpt-nothing'"):
        params(baseline_model="gpt-nothing")


def test_the_content_hash_ignores_ids_splits_and_tags_but_not_prompts():
    from factory_client.gate import task_content_hash

    task = scoped_task("a", [states_done()], gold=[READ])
    renamed = task.model_copy(update={"id": "b", "split": "heldout", "tags": ["x"]})
    assert task_content_hash(task) == task_content_hash(renamed)
    assert task_content_hash(task) != task_content_hash(task.model_copy(update={"prompt": "Another request."}))
    assert task_content_hash(task) != task_content_hash(task.model_copy(update={"assertions": [
        *task.assertions[:2], NOTE_SET]}))


@pytest.mark.parametrize(("jaccard", "ratio", "refused"), [(0.5, 0.99, True), (0.99, 0.5, True), (0.99, 0.99, False)])
def test_near_duplicate_thresholds_are_inclusive(jaccard: float, ratio: float, refused: bool):
    from factory_client.gate import token_jaccard

    held = scoped_task("held", [states_done()]).model_copy(update={"split": "heldout",
                                                                   "prompt": "close alpha beta gamma delta now"})
    twin = held.model_copy(update={"split": "train", "prompt": "close alpha beta gamma delta later"})
    assert token_jaccard(held.prompt, twin.prompt) == pytest.approx(5 / 7)
    config = GateConfig(near_duplicate_jaccard=jaccard, near_duplicate_ratio=ratio)
    assert (HeldoutIndex([held]).leak(twin, config) is not None) is refused
    exact = GateConfig(near_duplicate_jaccard=5 / 7, near_duplicate_ratio=0.99)
    assert HeldoutIndex([held]).leak(twin, exact) is not None
    assert len(HeldoutIndex([held, twin])) == 1

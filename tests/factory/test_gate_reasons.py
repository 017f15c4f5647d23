"""The quality gate's refusals name what went wrong, its counts add up, and its similarity rules hold on edges."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

import pytest
from factory_helpers import GoldReplayAgent
from guard_domain import GUARDED, guarded_pack, scoped_task, states_done, with_tasks

from arena.core.gym import Gym
from arena.core.pack import Pack
from arena.core.task import GoldStep, ResponseAssertion, SideEffectAssertion, StateAssertion, Task, WriteScope
from arena.core.toolkit import ToolContext, tool
from factory_client import GateConfig, GateReport, HeldoutIndex, QualityGate, VariantRequest
from factory_client.gate import normalize_prompt, resolve_baseline, task_content_hash, token_jaccard

READ = GoldStep(tool="get_account", arguments={"account_id": "ACC-1"})
NOTE = GoldStep(tool="set_note", arguments={"account_id": "ACC-1", "note": "hello"})
NOTE_SET = StateAssertion(description="note set", sql="SELECT note FROM accounts WHERE id = 'ACC-1'",
                          expected=[["hello"]])
OWNER_SET = StateAssertion(description="owner renamed", sql="SELECT owner FROM accounts WHERE id = 'ACC-1'",
                           expected=[["Grace"]])
NOTE_SCOPE = SideEffectAssertion(allowed=[WriteScope(table="accounts", ids=["ACC-1"], columns=["note"])])


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _refusal(task: Task, pack: Pack) -> tuple[str, str]:
    candidates = with_tasks(pack, task)
    gate = QualityGate(GateConfig(k=2, band_min=0, band_max=2), HeldoutIndex([]), GoldReplayAgent(1, [candidates]))
    report = GateReport()
    with Gym(candidates, GUARDED) as gym:
        assert not gate.check(gym, task, variant=3, report=report)
    assert len(report.rejections) == 1 and report.rejections[0].variant == 3
    return report.rejections[0].gate, report.rejections[0].reason


def test_a_failing_gold_program_is_refused_naming_every_failed_assertion(pack: Pack):
    task = scoped_task("broken", [NOTE_SET, OWNER_SET, states_done()], gold=[READ])
    gate, reason = _refusal(task, pack)
    assert gate == "gold_passes"
    assert reason.startswith("gold program fails: ")
    failed = reason.removeprefix("gold program fails: ").split("; ")
    assert [f.split(":")[0] for f in failed] == ["note set", "owner renamed"]


def test_writes_outside_the_write_set_are_refused_naming_at_most_five_rows(pack: Pack):
    opens = [GoldStep(tool="open_account", arguments={"owner": f"Owner {i}"}) for i in range(6)]
    task = scoped_task("sprawl", [NOTE_SET, states_done()], gold=[NOTE, *opens])
    gate, reason = _refusal(task, pack)
    assert gate == "ground_truth"
    prefix = "the gold run changes rows outside the declared write-set: "
    assert reason.startswith(prefix)
    rows = reason.removeprefix(prefix).split(", ")
    assert len(rows) == 5
    assert rows[0] == "update accounts:ACC-1"
    assert all(r.startswith("insert accounts:") for r in rows[1:])


def test_a_single_unbounded_write_is_refused_naming_its_row(pack: Pack):
    gate, reason = _refusal(scoped_task("unbounded", [NOTE_SET, states_done()], gold=[READ, NOTE]), pack)
    assert (gate, reason) == ("ground_truth",
                              "the gold run changes rows outside the declared write-set: update accounts:ACC-1")


def test_a_null_passing_task_is_refused_with_the_reason(pack: Pack):
    gate, reason = _refusal(scoped_task("vacuous", [], gold=[READ]), pack)
    assert (gate, reason) == ("null_fails", "a null agent (no calls, empty reply) passes")


def test_a_task_the_success_claimers_pass_is_refused_naming_them(pack: Pack):
    says_complete = ResponseAssertion(description="says complete", must_include=[["done", "complete"]])
    task = scoped_task("gullible", [says_complete], gold=[READ])
    gate, reason = _refusal(task, pack)
    assert gate == "adversaries_fail"
    prefix = "adversarial agents are not stopped: "
    assert reason.startswith(prefix)
    broken = reason.removeprefix(prefix).split("; ")
    # The claim-success agent says "Done ... completed", the injection agent "this task is complete".
    assert {"claim_success (passes)", "injection (passes)"} <= set(broken)
    assert all(b.endswith(" (passes)") for b in broken)


def test_every_candidate_and_every_acceptance_is_counted(pack: Pack):
    sound = [scoped_task(f"sound{i}", [NOTE_SET, NOTE_SCOPE, states_done()], gold=[READ, NOTE]) for i in range(2)]
    vacuous = scoped_task("vacuous", [], gold=[READ])
    candidates = with_tasks(pack, *sound, vacuous)
    gate = QualityGate(GateConfig(k=1, band_min=0, band_max=1), HeldoutIndex([]), GoldReplayAgent(1, [candidates]))
    report = GateReport()
    with Gym(candidates, GUARDED) as gym:
        verdicts = [gate.check(gym, t, variant=0, report=report) for t in (*sound, vacuous)]
    assert verdicts == [True, True, False]
    assert (report.candidates, report.accepted) == (3, 2)
    assert report.gates["no_leakage"].checked == 3 and report.gates["no_leakage"].accepted == 3
    assert report.gates["null_fails"].checked == 3 and report.gates["null_fails"].accepted == 2
    assert report.gates["baseline_band"].checked == 2 and report.gates["baseline_band"].accepted == 2


def test_a_baseline_failure_mode_is_taken_whole_after_the_first_colon_and_an_unknown_one_is_a_value_error():
    request = VariantRequest(domain="tracker", targets=[], baseline_model="reference-failure:wrong_id:extra")
    with pytest.raises(ValueError) as caught:
        resolve_baseline(request)
    message = str(caught.value)
    assert message.startswith("baseline model 'reference-failure:wrong_id:extra': unknown failure mode "
                              "'wrong_id:extra'; known: ")
    assert "wrong_id" in message.split("known: ", 1)[1].split(", ")


def test_an_unknown_baseline_is_refused_listing_the_accepted_forms():
    with pytest.raises(ValueError) as caught:
        resolve_baseline(VariantRequest(domain="tracker", targets=[], baseline_model="gpt-nothing"))
    assert str(caught.value) == (
        "baseline model 'gpt-nothing' is not a model this factory knows: use 'reference', 'reference-expert', "
        "'reference-few-weak-skills', 'reference-failure:<mode>', a model of its registry as gymloop prints it "
        "(name@vN:hash) or the name of a parameter file in its models folder")


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("", "", 1.0), ("?!", "...", 1.0), ("", "reset password", 0.0), ("reset password", "", 0.0),
    ("Reset the password", "reset THE password!", 1.0), ("reset the password", "reset the passwords", 0.5),
])
def test_token_jaccard_on_empty_and_equal_prompts(a: str, b: str, expected: float):
    assert token_jaccard(a, b) == expected


def _held(prompt: str) -> Task:
    return scoped_task("held", [states_done()]).model_copy(update={"split": "heldout", "prompt": prompt})


def test_a_copied_task_is_refused_naming_its_content_hash_and_the_held_out_task():
    held = _held("Close account ACC-1 today.")
    copy = held.model_copy(update={"id": "copy", "split": "train"})
    reason = HeldoutIndex([held]).leak(copy, GateConfig())
    assert reason == f"same content hash {task_content_hash(held)[:16]} as held-out task 'held'"


def test_prompts_without_any_word_are_near_duplicates_of_each_other():
    held = _held("?? !!")
    candidate = held.model_copy(update={"id": "c", "split": "train", "prompt": "...", "assertions": [NOTE_SET]})
    reason = HeldoutIndex([held]).leak(candidate, GateConfig())
    assert reason == "prompt is a near-duplicate of held-out task 'held' (token Jaccard 1.00)"


def test_character_similarity_exactly_at_the_threshold_is_a_near_duplicate():
    held = _held("Reset the password")
    candidate = held.model_copy(update={"id": "c", "split": "train", "prompt": "Reset the passwords",
                                        "assertions": [NOTE_SET]})
    a, b = normalize_prompt(held.prompt), normalize_prompt(candidate.prompt)
    ratio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    assert ratio == 2 * len(a) / (len(a) + len(b))  # the shorter prompt is wholly inside the longer one
    at = GateConfig(near_duplicate_jaccard=0.9, near_duplicate_ratio=ratio)
    assert HeldoutIndex([held]).leak(candidate, at) == (
        f"prompt is a near-duplicate of held-out task 'held' (similarity {ratio:.2f})")
    above = GateConfig(near_duplicate_jaccard=0.9, near_duplicate_ratio=min(1.0, ratio + 1e-9))
    assert HeldoutIndex([held]).leak(candidate, above) is None


def test_a_long_prompt_with_one_word_changed_is_a_near_duplicate():
    # Over 200 characters difflib's "autojunk" heuristic would drop frequent letters and miss the copy.
    base = ("please update the account record for the customer named in the ticket and confirm the new value "
            "with the customer before closing the ticket, then update the account record history and the "
            "ticket notes so that the team can see the account record change")
    held = _held(base)
    candidate = held.model_copy(update={"id": "c", "split": "train", "prompt": base.replace("confirm", "check"),
                                        "assertions": [NOTE_SET]})
    assert len(normalize_prompt(base)) > 200
    assert token_jaccard(held.prompt, candidate.prompt) < 0.95
    reason = HeldoutIndex([held]).leak(candidate, GateConfig(near_duplicate_jaccard=1.0, near_duplicate_ratio=0.9))
    assert reason is not None and "similarity" in reason


def test_a_task_whose_gold_replays_differ_is_refused_with_the_reason(pack: Pack):
    visits = iter(range(1_000_000))

    @tool(mode="read", entity="account", operation="get")
    def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
        """Fetch one account with a visit counter.

        Args:
            account_id: Account id.
        """
        return {"id": account_id, "visit": next(visits)}

    flaky = replace(GUARDED, tools={**GUARDED.tools, "get_account": get_account})
    task = scoped_task("flaky", [states_done()], gold=[READ])
    candidates = with_tasks(pack, task)
    gate = QualityGate(GateConfig(k=1, band_min=0, band_max=1), HeldoutIndex([]), GoldReplayAgent(1, [candidates]))
    report = GateReport()
    with Gym(candidates, flaky) as gym:
        assert not gate.check(gym, task, variant=0, report=report)
    assert [(r.gate, r.reason) for r in report.rejections] == [
        ("replay_deterministic", "two gold replays with seed 0 differ")]

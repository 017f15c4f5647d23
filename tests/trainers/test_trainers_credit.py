"""Per-decision credit: the builtin trainer moves only the decisions a diagnosis of the rollouts names."""

from __future__ import annotations

import pytest

from arena.agents.reference import CONTEXTS, PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from curriculum import Wave, WaveEntry
from flows.weaknesses import rollout_blame
from trainers import Blame, GRPOConfig, GRPOTrainer, TrainerError, load_reference, named_decisions, save_reference

DOMAIN = "helpdesk"
PREREQUISITE = "check_refund_eligibility"
NAMED = ("prerequisite|strong", PREREQUISITE)


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


def _refund_task(pack: Pack) -> str:
    """A train task whose gold program runs the refund-eligibility check before its goal."""
    return next(t.id for t in pack.tasks if t.split == "train" and PREREQUISITE in {s.tool for s in t.gold.steps})


def _play(pack: Pack, params: PolicyParams, task: str, seeds: range) -> list[EpisodeRecord]:
    return run_episodes(ReferencePolicy(params), [pack], [EpisodeKey(pack.id, task, s, 0) for s in seeds],
                        RolloutConfig())


def _group(pack: Pack) -> tuple[str, list[EpisodeRecord]]:
    """One task's group: two careful rollouts that pass, two that skip the prerequisite and fail.

    The failing ones also look the order up by a search first (a harmless detour no detector blames), so they
    differ from the passing ones at a decision that is not to blame.
    """
    task = _refund_task(pack)
    passed = _play(pack, PolicyParams.expert(), task, range(2))
    careless = PolicyParams.with_failure("missed_policy_dependency")
    careless.logits["resolve_id|id"] = {"get_by_id": -50.0, "search_first": 0.0}
    skipped = _play(pack, careless, task, range(2, 4))
    assert all(r.passed for r in passed) and not any(r.passed for r in skipped)
    assert all(d["choice"] == "search_first" for r in skipped for d in r.decisions if d["key"] == "resolve_id|id")
    return task, [*passed, *skipped]


def _wave(pack: Pack, task: str, k: int) -> Wave:
    return Wave(strategy="targeted", k=k, budget=k, entries=[
        WaveEntry(pack_id=pack.id, task_id=task, weight=1.0, reason="test", source="targeted")])


def _moved(before: PolicyParams, after: PolicyParams) -> tuple[set[str], set[str]]:
    logits = {k for k in after.logits if after.logits[k] != before.logits[k]}
    offsets = {k for k in set(after.offsets) | set(before.offsets) if after.offsets.get(k) != before.offsets.get(k)}
    return logits, offsets


def _start() -> PolicyParams:
    every = [f"{kind}|{c}" for kind, contexts in CONTEXTS.items() for c in contexts]
    return PolicyParams.initial(dict.fromkeys(every, 0.3), transfer=0.5)


def test_per_decision_credit_moves_only_the_named_decision(pack, tmp_path):
    task, group = _group(pack)
    blame = rollout_blame(group, [pack])
    assert {r.episode_id for r in group if not r.passed} <= set(blame)
    start = _start()
    ref = save_reference(start, tmp_path / "start")
    trainer = GRPOTrainer(tmp_path / "decision", GRPOConfig(credit="decision"))
    after = load_reference(trainer.train(ref, _wave(pack, task, 4), group, blame=blame))
    logits, offsets = _moved(start, after)
    assert logits == {NAMED[0]} and offsets == {f"{NAMED[0]}@{NAMED[1]}"}
    assert after.probabilities(*NAMED)["do"] > start.probabilities(*NAMED)["do"]
    assert trainer.last_stats.credited_groups == 1
    # the same rollouts with the advantage spread over every decision move the careful decisions as well
    spread = load_reference(GRPOTrainer(tmp_path / "episode").train(ref, _wave(pack, task, 4), group))
    assert _moved(start, spread)[0] >= {NAMED[0], "resolve_id|id"}


def test_failed_rollouts_that_scored_alike_train_their_named_decision(pack, tmp_path):
    task = _refund_task(pack)
    failed = _play(pack, PolicyParams.with_failure("missed_policy_dependency"), task, range(4))
    assert len({r.score for r in failed}) == 1 and not any(r.passed for r in failed)
    start = _start()
    ref = save_reference(start, tmp_path / "start")
    episode = GRPOTrainer(tmp_path / "episode")
    assert load_reference(episode.train(ref, _wave(pack, task, 4), failed)).logits == start.logits
    assert episode.last_stats.skipped_uniform == 1
    decision = GRPOTrainer(tmp_path / "decision", GRPOConfig(credit="decision"))
    after = load_reference(decision.train(ref, _wave(pack, task, 4), failed, blame=rollout_blame(failed, [pack])))
    assert _moved(start, after) == ({NAMED[0]}, {f"{NAMED[0]}@{NAMED[1]}"})
    assert after.probabilities(*NAMED)["skip"] < start.probabilities(*NAMED)["skip"]


def test_per_decision_credit_needs_the_diagnosis(pack, tmp_path):
    task, group = _group(pack)
    ref = save_reference(_start(), tmp_path)
    with pytest.raises(TrainerError, match="blame"):
        GRPOTrainer(tmp_path, GRPOConfig(credit="decision")).train(ref, _wave(pack, task, 4), group)


def test_a_tag_names_its_kinds_careless_decisions_at_the_evidence_tool_first():
    decisions = [{"key": "prerequisite|strong", "choice": "skip", "tool": "a"},
                 {"key": "prerequisite|strong", "choice": "skip", "tool": "b"},
                 {"key": "prerequisite|strong", "choice": "do", "tool": "c"},
                 {"key": "after_empty_search|id", "choice": "give_up", "tool": "s"},
                 {"key": "reply|plain", "choice": "claim_done", "tool": ""}]
    assert named_decisions(decisions, [Blame(kind="missed_policy_dependency", tools=("b", "goal"))]) == {1}
    assert named_decisions(decisions, [Blame(kind="missed_policy_dependency", tools=("c",))]) == {0, 1}
    assert named_decisions(decisions, [Blame(kind="gave_up_early")]) == {3}
    assert named_decisions(decisions, [Blame(kind="claimed_unverified_success", tools=("x",))]) == {4}
    assert named_decisions(decisions, [Blame(kind="unintended_side_effect", tools=("a",))]) == set()

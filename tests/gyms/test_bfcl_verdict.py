"""The BFCL gym's verdict against BFCL's own checker, and what each turn's check reports."""

from __future__ import annotations

import random

import pytest

from arena.core.gym import Gym
from arena.gyms.bfcl import DOMAIN
from arena.gyms.bfcl.data import load_entries
from bench.bench_bfcl_fidelity import KINDS, BfclJudge, gold_trajectory, our_verdict, perturb
from tests.gyms.bfcl_support import bfcl_pack

pytestmark = pytest.mark.xdist_group("bfcl")

SAMPLE = 12
"""Entries per category whose gold and perturbed trajectories are judged both ways."""


def test_verdict_agrees_with_bfcls_checker_on_gold_and_perturbed_trajectories(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    categories = ("base", "miss_func", "miss_param", "long_context")
    pack = bfcl_pack(*categories)
    judge = BfclJudge()
    outcomes: dict[str, list[bool]] = {kind: [] for kind in KINDS}
    disagreements = []
    with Gym(pack, DOMAIN) as gym:
        for category in categories:
            for entry in load_entries(category)[:SAMPLE]:
                task = pack.task(f"{category}-{entry.index:03d}")
                for kind in KINDS:
                    turns = perturb(gold_trajectory(task), kind, random.Random(f"test:{entry.id}:{kind}"))
                    if turns is None:
                        continue
                    theirs, why = judge.judge(entry, turns, len(turns))
                    ours, our_why = our_verdict(gym, task, turns)
                    outcomes[kind].append(ours)
                    if ours != theirs:
                        disagreements.append((entry.id, kind, why, our_why))
    time.tzset()
    assert disagreements == []
    assert all(outcomes["gold"]) and len(outcomes["gold"]) == 4 * SAMPLE
    assert not any(outcomes["skipped_call"])  # every dropped call is caught
    assert not all(outcomes["wrong_argument"]) and not all(outcomes["wrong_order"])


def test_a_turn_fails_for_what_bfcl_checks_and_says_which() -> None:
    pack = bfcl_pack("base")
    task = pack.task("base-000")
    gold = gold_trajectory(task)
    with Gym(pack, DOMAIN) as gym:
        passed, _ = our_verdict(gym, task, gold)
        assert passed
        silent = [list(t) for t in gold]
        silent[1] = []
        passed, why = our_verdict(gym, task, silent)
        assert not passed and "no call in turn 2" in why
        late = [list(t) for t in gold]  # the move of turn 1 made in turn 2 instead
        late[0], late[1] = gold[0][:2], gold[0][2:] + gold[1]
        passed, why = our_verdict(gym, task, late)
        assert not passed and why.startswith("after turn 1 the world differs") and "file system's root" in why
        reads = [list(t) for t in gold]
        reads[3] = [c for c in reads[3] if c[0] != "diff"]
        passed, why = our_verdict(gym, task, reads)
        assert not passed and "never came back" in why and "diff" in why


def test_a_conversation_cut_short_fails_its_last_checked_turn() -> None:
    pack = bfcl_pack("base")
    task = pack.task("base-000")
    gold = gold_trajectory(task)
    with Gym(pack, DOMAIN) as gym:
        gym.reset(task.id)
        for k, given in enumerate(task.conversation.user.turns[:2]):
            gym.record_turn("user", given.text)
            for tool, args in gold[k]:
                gym.call_tool(tool, args)
        gym.end_conversation("step_limit")
        verdict = gym.verify("")
    assert not verdict.passed
    results = {r.description.split(":")[0]: r for r in verdict.results if r.kind == "domain"}
    assert results["turn 1"].passed and results["turn 2"].passed
    assert not results["turn 3"].passed and "stopped after turn 2 of 4" in results["turn 3"].detail

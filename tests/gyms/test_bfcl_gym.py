"""The BFCL gym as a gymloop gym: found by name, fixed splits, the tools each task offers, played by the loop."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from arena.agents.gold import GoldAgent
from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.checks.conformance import check_pack
from arena.core.conversation import turn_of
from arena.core.domains import GymLoadError, available_domains, get_domain
from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.gyms.bfcl import DOMAIN, NAME
from arena.gyms.bfcl.tasks import TRAIN_NUMBERS
from arena.rollout import RolloutConfig, run_rollouts
from tests.gyms.bfcl_support import bfcl_pack

pytestmark = pytest.mark.xdist_group("bfcl")


def test_the_gym_is_listed_and_found_by_name_once_bfcls_package_is_installed() -> None:
    assert NAME in available_domains()
    assert get_domain(NAME) is DOMAIN
    from flows.cli import app

    listed = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["gyms", "list"])
    assert listed.exit_code == 0, listed.output
    shown = listed.output[listed.output.index(NAME):].split()  # its row, or its block when the table is too wide
    assert {"128", "160", "640"} <= set(shown[:40])  # tools, train and held-out tasks


def test_without_bfcls_package_the_gym_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import arena.core.domains as domains

    real = importlib.util.find_spec
    monkeypatch.setattr(domains.importlib.util, "find_spec",
                        lambda name, *a: None if name == "bfcl_eval" else real(name, *a))
    assert NAME not in available_domains()
    with pytest.raises(GymLoadError) as refused:
        get_domain(NAME)
    assert "bfcl_eval" in str(refused.value) and "pip install --no-deps bfcl-eval==2026.3.23" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_splits_are_fixed_shared_across_categories_and_the_same_for_every_seed() -> None:
    pack = bfcl_pack("base", "miss_func", "miss_param", "long_context")
    train = {t.id for t in pack.tasks if t.split == "train"}
    assert len(train) == 4 * len(TRAIN_NUMBERS) == 160 and len(pack.tasks) == 800
    for task in pack.tasks:
        number = int(task.id.rsplit("-", 1)[1])
        assert (task.split == "train") == (number in TRAIN_NUMBERS)
        assert task.source is not None and task.source.task_id.endswith(f"_{number}")
    other_seed = build_pack(DOMAIN, seed=7, knobs={"categories": ["base"]})
    assert [(t.id, t.split) for t in other_seed.tasks] == [(t.id, t.split) for t in bfcl_pack("base").tasks]


def test_the_shared_vocabularys_knobs_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="never re-drawn"):
        build_pack(DOMAIN, seed=0, knobs={"heldout_fraction": 0.5})
    with pytest.raises(ValueError, match="no injected faults"):
        build_pack(DOMAIN, seed=0, knobs={"fault_rate": 0.3})
    with pytest.raises(ValueError, match="categories"):
        build_pack(DOMAIN, seed=0, knobs={"categories": ["composite"]})
    assert set(DOMAIN.cannot) >= {"heldout_fraction", "near_duplicate_rate", "tasks_per_template", "focus_tags"}


def test_a_task_offers_its_classes_and_reveals_held_back_functions_at_their_turn() -> None:
    pack = bfcl_pack("miss_func")
    task = pack.task("miss_func-000")  # file system and posting; sort held back until turn 4
    assert task.conversation is not None and task.conversation.hidden_tools == ["sort"]
    with Gym(pack, DOMAIN) as gym:
        observation = gym.reset(task.id)
        offered = {t.name for t in observation.tools}
        assert "cd" in offered and "post_tweet" in offered and "sort" not in offered and "add" not in offered
        unknown = gym.call_tool("add", {"a": 1, "b": 2})
        assert not unknown.ok and unknown.error is not None and "unknown tool 'add'" in unknown.error.message
        for k, given in enumerate(task.conversation.user.turns):
            gym.record_turn("user", given.text)
            listed = {t.name for t in gym.offered_tools()}
            assert ("sort" in listed) == (k >= 3), k
        assert task.conversation.user.turns[3].text.startswith("I have updated some more functions")


def test_the_reference_and_gold_agents_play_the_given_turns_through_the_episode_loop() -> None:
    pack = bfcl_pack("base")
    sample = [t.id for t in pack.tasks[:25]]
    sub = pack.__class__(manifest=pack.manifest, state_db=pack.state_db, policy=pack.policy, tools=pack.tools,
                         graph=pack.graph, faults=pack.faults, tasks=[t for t in pack.tasks if t.id in sample])
    for agent in (ReferencePolicy(PolicyParams.expert()), GoldAgent(sub)):
        episodes = run_rollouts(agent, [sub], RolloutConfig(seeds=[0], k=1))
        assert len(episodes) == 25
        for episode in episodes:
            assert episode.verdict is not None and episode.verdict.passed, (agent.name, episode.task_id)
            task = sub.task(episode.task_id)
            users = [t for t in episode.conversation if t.role == "user"]
            assert [t.text for t in users] == [g.text for g in task.conversation.user.turns]
            made = [(turn_of(episode.conversation, s.index), s.tool) for s in episode.trace]
            assert made == [(s.turn, s.tool) for s in task.gold.steps]


def test_conformance_passes_on_a_sample_of_every_category() -> None:
    pack = bfcl_pack("base", "miss_func", "miss_param", "long_context")
    sample = [f"{c}-{n:03d}" for c in ("base", "miss_func", "miss_param", "long_context") for n in (0, 49, 103, 173)]
    report = check_pack(pack, task_ids=sample, domain=DOMAIN)
    assert report.tasks == len(sample)
    assert report.failures == [], [(f.task_id, f.check, f.detail[:200]) for f in report.failures]

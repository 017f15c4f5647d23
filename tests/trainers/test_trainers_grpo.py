import json

import pytest
from trainer_fixtures import rollouts, toy_pack, wave_for

from arena.agents.reference import PolicyParams
from arena.core.episode import EpisodeRecord
from arena.core.results import Verdict
from curriculum import History, Wave, task_refs
from trainers import (
    GRPOConfig,
    GRPOTrainer,
    ModelRef,
    Trainer,
    TrainerError,
    get_trainer,
    load_reference,
    save_reference,
    trainer_names,
)


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


def _episode(task: str, seed: int, score: float, decisions: list[tuple[str, str]]) -> EpisodeRecord:
    return EpisodeRecord(episode_id=f"{task}-{seed}", pack_id="P", domain="toy", task_id=task, split="train",
                         category="c", seed=seed, agent="reference", model_ref="m",
                         verdict=Verdict(passed=score == 1.0, score=score),
                         decisions=[{"key": k, "choice": c} for k, c in decisions])


def test_group_relative_update_moves_towards_the_better_rollouts(tmp_path):
    ref = save_reference(PolicyParams.initial(), tmp_path)
    before = load_reference(ref).probabilities("prerequisite|strong")["do"]
    episodes = [_episode("t", 0, 1.0, [("prerequisite|strong", "do")]),
                _episode("t", 1, 0.25, [("prerequisite|strong", "skip")]),
                # a group whose rollouts all scored the same carries no signal
                _episode("u", 0, 0.5, [("reply|plain", "claim_done")]),
                _episode("u", 1, 0.5, [("reply|plain", "claim_done")])]
    trainer = GRPOTrainer(tmp_path / "out")
    new = trainer.train(ref, Wave(strategy="targeted"), episodes)
    params = load_reference(new)
    assert params.probabilities("prerequisite|strong")["do"] > before
    assert params.logits["reply|plain"] == PolicyParams.initial().logits["reply|plain"]
    assert trainer.last_stats.groups == 1 and trainer.last_stats.skipped_uniform == 1
    assert new.version == 1 and new.parent == ref.ref and params.parent == ref.params_hash
    assert new.params_hash == params.content_hash() and new.artifact and new.artifact.startswith(str(tmp_path))


def test_step_norm_cap_and_ratio_clip_bound_the_update(tmp_path):
    ref = save_reference(PolicyParams.initial(), tmp_path)
    episodes = [_episode("t", 0, 1.0, [("prerequisite|strong", "do")]),
                _episode("t", 1, 0.0, [("prerequisite|strong", "skip")])]
    capped = GRPOTrainer(tmp_path / "a", GRPOConfig(learning_rate=100.0, epochs=1, max_step_norm=0.1))
    new = load_reference(capped.train(ref, Wave(strategy="t"), episodes))
    old = PolicyParams.initial().logits["prerequisite|strong"]
    step = [new.logits["prerequisite|strong"][s] - old[s] for s in old]
    assert sum(x * x for x in step) ** 0.5 == pytest.approx(0.1)
    clipped = GRPOTrainer(tmp_path / "b", GRPOConfig(learning_rate=5.0, epochs=6, max_step_norm=5.0, clip_ratio=0.1))
    clipped.train(ref, Wave(strategy="t"), episodes)
    assert clipped.last_stats.clipped > 0


def test_training_on_real_rollouts_is_deterministic_and_learns(tmp_path, pack):
    wave = wave_for(pack, ["refund_plain-01"], k=8)
    ref = save_reference(PolicyParams.initial(), tmp_path / "start")
    runs = rollouts(pack, PolicyParams.initial(), ["refund_plain-01"], k=8)
    assert all(r.decisions for r in runs)
    a = GRPOTrainer(tmp_path / "a").train(ref, wave, runs)
    b = GRPOTrainer(tmp_path / "b").train(ref, wave, runs)
    assert a.params_hash == b.params_hash and a.params_hash != ref.params_hash
    # a few rounds of practice raise the pass rate of the practised task
    current, trainer = ref, GRPOTrainer(tmp_path / "loop", GRPOConfig(learning_rate=2.0))
    history = History()
    for rnd in range(6):
        runs = rollouts(pack, load_reference(current), ["refund_plain-01"], k=8, seed=rnd)
        history.record_episodes(rnd, runs)
        current = trainer.train(current, wave_for(pack, ["refund_plain-01"], 8, rnd), runs)
    entry = history.task(pack.id, "refund_plain-01")
    assert entry is not None and len(entry.groups) == 5
    final = rollouts(pack, load_reference(current), ["refund_plain-01"], k=40, seed=99)
    start = rollouts(pack, PolicyParams.initial(), ["refund_plain-01"], k=40, seed=99)
    assert sum(r.passed for r in final) > sum(r.passed for r in start) + 5
    assert current.version == 6


def test_wave_filters_and_weighs_groups(tmp_path, pack):
    runs = rollouts(pack, PolicyParams.initial(), ["refund_plain-01", "refund_timeout-01"], k=6)
    ref = save_reference(PolicyParams.initial(), tmp_path)
    trainer = GRPOTrainer(tmp_path / "o")
    trainer.train(ref, wave_for(pack, ["refund_timeout-01"], 6), runs)
    used = trainer.last_stats.groups + trainer.last_stats.skipped_uniform + trainer.last_stats.skipped_small
    assert used == 1
    train = [t.id for t in pack.tasks if t.split == "train"]
    assert train and len(train) < len(pack.tasks)
    assert [t.task_id for t in task_refs([pack])] == train


def test_bad_models_and_decisions_are_refused(tmp_path):
    trainer = GRPOTrainer(tmp_path)
    with pytest.raises(TrainerError, match="kind 'litellm'"):
        trainer.train(ModelRef(name="gpt", kind="litellm", endpoint="openai/x"), Wave(strategy="t"), [])
    with pytest.raises(TrainerError, match="has no artifact"):
        trainer.train(ModelRef(name="reference"), Wave(strategy="t"), [])
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(TrainerError, match="schema_version 99"):
        trainer.train(ModelRef(name="reference", artifact=str(broken)), Wave(strategy="t"), [])
    ref = save_reference(PolicyParams.initial(), tmp_path)
    episodes = [_episode("t", 0, 1.0, [("teleport|now", "go")]), _episode("t", 1, 0.0, [])]
    with pytest.raises(TrainerError, match="'teleport\\|now' -> 'go' is not a parameter"):
        trainer.train(ref, Wave(strategy="t"), episodes)


def test_registry_by_name(tmp_path):
    assert {"builtin", "export", "command"} <= set(trainer_names())
    trainer = get_trainer("builtin", out_dir=tmp_path, config=GRPOConfig(epochs=2))
    assert isinstance(trainer, GRPOTrainer) and isinstance(trainer, Trainer) and trainer.config.epochs == 2
    with pytest.raises(KeyError, match="unknown trainer 'sgd'; registered: builtin, command, export"):
        get_trainer("sgd")

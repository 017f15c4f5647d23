"""The trl trainer and the local transformers agent on a tiny model built here (CPU, offline)."""

import shutil

import pytest

pytest.importorskip("torch", reason="torch (gymloop[trl]) is not installed")
pytest.importorskip("trl", reason="trl (gymloop[trl]) is not installed")

from tiny_lm import build_tiny_checkpoint, corpus_for  # noqa: E402
from trainer_fixtures import rollouts, toy_pack, wave_for  # noqa: E402

from arena.agents.reference import PolicyParams  # noqa: E402
from arena.agents.transformers_agent import (  # noqa: E402
    CheckpointError,
    TransformersAgent,
    TransformersConfig,
    load_checkpoint,
)
from arena.core.gym import Gym  # noqa: E402
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes  # noqa: E402
from trainers import ModelRef, TrainerError, TRLConfig, TRLTrainer  # noqa: E402
from trainers.trl import STAGING_PREFIX, checkpoint_hash  # noqa: E402
from trainers.trl_data import demonstrations  # noqa: E402

CALL = {"name": "check_refund", "arguments": {"order_id": "ORD-00005"}}


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


@pytest.fixture(scope="module")
def scripted(pack, tmp_path_factory):
    """A tiny model whose generation after an assistant header is one check_refund call."""
    return build_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", corpus_for([pack]), call=CALL)


def ref_of(folder, version=0):
    return ModelRef(name="tiny", version=version, kind="transformers", artifact=str(folder))


def small(**over):
    base = {"max_steps": 1, "per_device_train_batch_size": 2, "num_generations": 2, "max_completion_length": 32,
            "max_tool_calling_iterations": 1, "learning_rate": 1e-3}
    return TRLConfig(**{**base, **over})


def test_local_agent_tool_call_reaches_the_gym_and_its_result_comes_back(pack, scripted):
    agent = TransformersAgent(TransformersConfig(checkpoint=str(scripted), max_steps=2, max_new_tokens=8))
    record = run_episodes(agent, [pack], [EpisodeKey(pack.id, "refund_plain-01", 0, 0)], RolloutConfig())[0]
    assert record.failure is None and record.turns == 2
    calls = [(s.tool, s.arguments, s.ok) for s in record.trace]
    assert calls == [("check_refund", {"order_id": "ORD-00005"}, True)] * 2
    assert record.trace[0].output == {"order_id": "ORD-00005", "eligible": True}
    assert record.tokens_in > record.tokens_out > 0 and record.model_ref == f"transformers:{scripted}"


def test_grpo_step_plays_the_gym_scores_with_the_verifier_and_writes_a_loadable_checkpoint(pack, scripted, tmp_path):
    out = tmp_path / "models"
    (out / f"{STAGING_PREFIX}killed-run").mkdir(parents=True)
    trainer = TRLTrainer(out, [pack], small(method="grpo"))
    new = trainer.train(ref_of(scripted), wave_for(pack, ["refund_plain-01"], k=2), [])
    stats = trainer.last_stats
    assert stats.grpo_rows >= 1 and stats.episodes == 2 and stats.tool_calls >= 2
    envs = trainer.last_environments["toy"].created
    played = [e for e in envs if e.verdict is not None]
    assert len(played) == 2
    for env in played:
        assert [s.tool for s in env.gym.trace][:1] == ["check_refund"] and env.gym.trace[0].ok
        replay = Gym(pack)
        replay.reset(env.row.task_id, seed=env.row.seed)
        for step in env.gym.trace:
            replay.call_tool(step.tool, step.arguments)
        assert replay.verify(env._reply).score == env.verdict.score == env.get_reward()
    assert stats.mean_reward == pytest.approx(sum(e.verdict.score for e in played) / 2)
    assert set(stats.check_pass_rate) == {"state", "trace", "side_effects", "response"}
    assert new.kind == "transformers" and new.version == 1 and new.parent == "tiny@v0"
    assert new.params_hash == checkpoint_hash(out / new.artifact.split("/")[-1])
    model, tokenizer = load_checkpoint(new.artifact)
    assert model.config.hidden_size == 64 and tokenizer.chat_template
    assert sorted(p.name for p in out.iterdir()) == [f"tiny-v1-{new.params_hash}"]


def test_sft_fine_tunes_on_verified_successes_only(pack, scripted, tmp_path):
    episodes = rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=2)
    assert all(e.passed for e in episodes)
    failed = [e.model_copy(update={"verdict": e.verdict.model_copy(update={"passed": False})}) for e in episodes]
    trainer = TRLTrainer(tmp_path / "models", [pack], small(method="sft", max_steps=2, per_device_train_batch_size=1))
    wave = wave_for(pack, ["refund_plain-01"], k=2)
    assert trainer.train(ref_of(scripted), wave, failed) == ref_of(scripted)
    assert trainer.last_stats.sft_rows == 0 and not (tmp_path / "models").exists()
    new = trainer.train(ref_of(scripted), wave, episodes)
    assert trainer.last_stats.sft_rows == 2 and new.version == 1
    assert new.params_hash != checkpoint_hash(scripted)
    load_checkpoint(new.artifact)
    lora = TRLTrainer(tmp_path / "lora", [pack], small(method="sft", per_device_train_batch_size=1, lora=True))
    merged = lora.train(ref_of(scripted), wave, episodes)
    files = {p.name for p in (tmp_path / "lora" / merged.artifact.split("/")[-1]).iterdir()}
    assert "model.safetensors" in files and "adapter_config.json" not in files
    assert merged.params_hash != checkpoint_hash(scripted)
    load_checkpoint(merged.artifact)


def test_nan_loss_is_a_clear_error_and_leaves_no_checkpoint(pack, scripted, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    broken = tmp_path / "nan"
    shutil.copytree(scripted, broken)
    model = AutoModelForCausalLM.from_pretrained(broken)
    with torch.no_grad():
        model.model.norm.weight.fill_(float("nan"))
    model.save_pretrained(broken)
    episodes = rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=1)
    out = tmp_path / "models"
    trainer = TRLTrainer(out, [pack], small(method="sft", per_device_train_batch_size=1))
    with pytest.raises(TrainerError, match="became nan"):
        trainer.train(ref_of(broken), wave_for(pack, ["refund_plain-01"], k=1), episodes)
    assert list(out.iterdir()) == []


def test_bad_checkpoints_are_named(pack, scripted, tmp_path):
    wave = wave_for(pack, ["refund_plain-01"], k=1)
    trainer = TRLTrainer(tmp_path / "models", [pack], small())
    with pytest.raises(TrainerError, match="does not exist"):
        trainer.train(ref_of(tmp_path / "missing"), wave, [])
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "config.json").write_text("{not json")
    with pytest.raises(TrainerError, match="does not load"):
        trainer.train(ref_of(garbage), wave, [])
    with pytest.raises(TrainerError, match="kind 'reference'"):
        trainer.train(ModelRef(name="p", kind="reference", artifact="x"), wave, [])
    agent = TransformersAgent(TransformersConfig(checkpoint=str(garbage)))
    record = run_episodes(agent, [pack], [EpisodeKey(pack.id, "refund_plain-01", 0, 0)], RolloutConfig())[0]
    assert record.invalid and record.failure is not None and record.failure.boundary == "model_api"
    assert "does not load" in record.failure.message


def test_a_chat_template_without_tool_calling_is_refused(pack, scripted, tmp_path):
    from transformers import AutoTokenizer

    plain = tmp_path / "plain"
    shutil.copytree(scripted, plain)
    tokenizer = AutoTokenizer.from_pretrained(plain)
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tokenizer.save_pretrained(plain)
    with pytest.raises(CheckpointError, match="drops tool calls"):
        load_checkpoint(plain)
    with pytest.raises(TrainerError, match="drops tool calls"):
        TRLTrainer(tmp_path / "models", [pack], small()).train(ref_of(plain), wave_for(pack, ["refund_plain-01"], 1),
                                                               [])


def test_sft_demonstrations_add_the_gold_play_of_unsolved_tasks_only(pack, scripted, tmp_path):
    solved = rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=2)
    tried = rollouts(pack, PolicyParams.expert(), ["refund_conflict-01"], k=2, seed=3)
    assert all(e.passed for e in solved + tried)
    unsolved = [e.model_copy(update={"verdict": e.verdict.model_copy(update={"passed": False})}) for e in tried]
    wave = wave_for(pack, ["refund_plain-01", "refund_conflict-01"], k=2)

    shown = demonstrations(wave, solved + unsolved, {pack.id: pack})
    gold = pack.task("refund_conflict-01").gold
    assert [(d.task_id, d.seed) for d in shown] == [("refund_conflict-01", 3)] and shown[0].passed
    assert [(c.tool, c.arguments) for c in shown[0].trace] == [(s.tool, s.arguments) for s in gold.steps]
    assert shown[0].reply == gold.reply
    careful = demonstrations(wave, solved + unsolved, {pack.id: pack}, "reference")
    assert [(d.task_id, d.seed, d.passed) for d in careful] == [("refund_conflict-01", 3, True)]
    assert careful[0].model_ref != shown[0].model_ref and careful[0].reply != gold.reply

    plain = TRLTrainer(tmp_path / "plain", [pack], small(method="sft", max_steps=1, per_device_train_batch_size=1))
    plain.train(ref_of(scripted), wave, solved + unsolved)
    assert (plain.last_stats.sft_rows, plain.last_stats.demonstrations) == (2, 0)
    shown_too = TRLTrainer(tmp_path / "demos", [pack], small(method="sft", max_steps=1, per_device_train_batch_size=1,
                                                             demonstrations="gold"))
    new = shown_too.train(ref_of(scripted), wave, solved + unsolved)
    assert (shown_too.last_stats.sft_rows, shown_too.last_stats.demonstrations) == (3, 1) and new.version == 1
    # No success at all: the demonstrations alone train a new checkpoint, where plain rejection sampling has none.
    alone = shown_too.train(ref_of(scripted), wave_for(pack, ["refund_conflict-01"], k=2), unsolved)
    assert shown_too.last_stats.demonstrations == 1 and alone.version == 1
    load_checkpoint(alone.artifact)


def test_sft_budget_follows_its_rows_and_mastered_tasks_teach_nothing(pack, scripted, tmp_path):
    episodes = rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=3)
    wave = wave_for(pack, ["refund_plain-01"], k=3)
    following = TRLTrainer(tmp_path / "epochs", [pack], small(method="sft", max_steps=20, per_device_train_batch_size=1,
                                                             sft_epochs=1.0))
    following.train(ref_of(scripted), wave, episodes)
    assert (following.last_stats.sft_rows, following.last_stats.sft_steps) == (3, 3)
    one_each = TRLTrainer(tmp_path / "one", [pack], small(method="sft", max_steps=20, per_device_train_batch_size=1,
                                                         sft_epochs=2.0, sft_per_task=1))
    one_each.train(ref_of(scripted), wave, episodes)
    assert (one_each.last_stats.sft_rows, one_each.last_stats.sft_steps) == (1, 2)
    skipping = TRLTrainer(tmp_path / "skip", [pack], small(method="sft", sft_skip_mastered=True))
    assert skipping.train(ref_of(scripted), wave, episodes) == ref_of(scripted)
    assert skipping.last_stats.sft_rows == 0 and not (tmp_path / "skip").exists()

"""A local checkpoint's sampling, its SFT loss mask and the one rendering of an episode (tiny model, CPU, offline)."""

import json

import pytest

pytest.importorskip("torch", reason="torch (gymloop[trl]) is not installed")
pytest.importorskip("trl", reason="trl (gymloop[trl]) is not installed")

from tiny_lm import build_tiny_checkpoint, corpus_for  # noqa: E402
from trainer_fixtures import rollouts, toy_pack, wave_for  # noqa: E402

from arena.adapters.trl_env import episode_prompt  # noqa: E402
from arena.agents import transformers_agent  # noqa: E402
from arena.agents.reference import PolicyParams  # noqa: E402
from arena.agents.transformers_agent import Sampling, TransformersAgent, TransformersConfig  # noqa: E402
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes  # noqa: E402
from trainers import ExportTrainer, ModelRef, TrainerError  # noqa: E402
from trainers.trl import sft_examples, training_template  # noqa: E402
from trainers.trl_data import episode_messages  # noqa: E402

CALL = {"name": "check_refund", "arguments": {"order_id": "ORD-00005"}}


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


@pytest.fixture(scope="module")
def untrained(pack, tmp_path_factory):
    """A random tiny model: what it writes depends on every sampled token."""
    return build_tiny_checkpoint(tmp_path_factory.mktemp("random") / "tiny", corpus_for([pack]))


@pytest.fixture(scope="module")
def scripted(pack, tmp_path_factory):
    """A tiny model whose generation after an assistant header is one check_refund call."""
    return build_tiny_checkpoint(tmp_path_factory.mktemp("scripted") / "tiny", corpus_for([pack]), call=CALL)


def play(folder, pack, keys, sampling, *, seed=0):
    config = TransformersConfig(checkpoint=str(folder), max_steps=1, max_new_tokens=12, sampling=sampling, seed=seed)
    return run_episodes(TransformersAgent(config), [pack], keys, RolloutConfig())


def test_sampled_rollouts_differ_across_seeds_and_repeat_for_the_same_seed(pack, untrained):
    keys = [EpisodeKey(pack.id, "refund_plain-01", 1000, attempt) for attempt in range(4)]
    sampled = Sampling(temperature=1.0, top_p=0.95)
    first = play(untrained, pack, keys, sampled)
    again = play(untrained, pack, keys, sampled)
    assert all(r.failure is None and r.tokens_out > 0 for r in first)
    assert [r.reply for r in first] == [r.reply for r in again]
    assert len({r.reply for r in first}) == 4
    other_agent_seed = play(untrained, pack, keys[:1], sampled, seed=7)
    assert other_agent_seed[0].reply != first[0].reply
    greedy = play(untrained, pack, keys, Sampling())
    assert len({r.reply for r in greedy}) == 1 and greedy[0].reply not in {r.reply for r in first}


def test_sampling_leaves_the_process_random_generator_alone(pack, untrained):
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    play(untrained, pack, [EpisodeKey(pack.id, "refund_plain-01", 0, 0)], Sampling(temperature=1.0))
    assert torch.equal(torch.rand(3), expected)


def test_sampling_settings_are_checked():
    with pytest.raises(ValueError, match="top_p"):
        Sampling(temperature=1.0, top_p=0.0)
    with pytest.raises(ValueError, match="temperature"):
        Sampling(temperature=-0.5)
    assert Sampling().greedy and not Sampling(temperature=0.7).greedy


def _assistant_spans(tokenizer, template, messages, tools):
    """The text the template writes for each assistant message: what a rendering gains when that message is added,
    less the ``<|im_start|>assistant`` header the prompt already holds."""
    spans = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(messages[:i], tools=tools, chat_template=template, tokenize=False)
        after = tokenizer.apply_chat_template(messages[:i + 1], tools=tools, chat_template=template, tokenize=False)
        assert after.startswith(before)
        spans.append(after[len(before):].removeprefix("<|im_start|>assistant"))
    return spans


@pytest.mark.parametrize("own_markers", [False, True], ids=["patched-by-trl", "template-with-markers"])
def test_the_sft_loss_covers_exactly_the_assistants_tokens(pack, scripted, own_markers):
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen2_5_training_chat_template

    tokenizer = AutoTokenizer.from_pretrained(scripted)
    if own_markers:  # a template that already marks the assistant's messages is used as it is
        tokenizer.chat_template = qwen2_5_training_chat_template
    episode = rollouts(pack, PolicyParams.expert(), ["refund_conflict-01"], k=1)[0]
    assert episode.passed and len(episode.trace) >= 3 and any(not s.ok for s in episode.trace)
    [example] = sft_examples(tokenizer, {pack.id: pack}, [episode])
    ids, labels = example["input_ids"], example["labels"]
    messages = episode_messages(pack, episode)
    tools = [s.openai_schema() for s in pack.tools]
    template = training_template(tokenizer)
    full = tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False)
    assert tokenizer.decode(ids) == full
    learned = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != -100])
    assert learned == "".join(_assistant_spans(tokenizer, template, messages, tools))
    assert episode.reply in learned and all(json.dumps(s.arguments) in learned for s in episode.trace)
    ignored = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label == -100])
    for message in messages:
        if message["role"] in ("system", "user", "tool"):
            assert message["content"] not in learned and message["content"] in ignored


def test_a_template_that_cannot_mark_the_assistant_is_refused(pack, scripted):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(scripted)
    tokenizer.chat_template = tokenizer.chat_template.replace("<|im_start|>", "<|im_begin|>")
    episode = rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=1)[0]
    with pytest.raises(TrainerError, match="no \\{% generation %\\} markers"):
        sft_examples(tokenizer, {pack.id: pack}, [episode])


def test_evaluation_export_and_trl_render_an_episode_as_the_same_text(pack, scripted, tmp_path, monkeypatch):
    loaded = transformers_agent._cached(str(scripted))
    tokenizer = loaded.tokenizer
    seen: list[str] = []
    render = tokenizer.apply_chat_template

    def recording(*args, **kwargs):
        text = render(*args, **kwargs)
        seen.append(text)
        return text

    monkeypatch.setattr(tokenizer, "apply_chat_template", recording)
    config = TransformersConfig(checkpoint=str(scripted), max_steps=3, max_new_tokens=8)
    keys = [EpisodeKey(pack.id, "refund_plain-01", 0, attempt) for attempt in range(2)]
    records = run_episodes(TransformersAgent(config), [pack], keys, RolloutConfig())
    monkeypatch.undo()
    assert [s.tool for s in records[0].trace] == ["check_refund"] * 3 and len(seen) == 6
    tools = [s.openai_schema() for s in pack.tools]
    trl_messages = episode_messages(pack, records[0])
    assert trl_messages[:2] == episode_prompt(pack, "refund_plain-01")
    for turn, prompt in enumerate(seen[:3]):  # what the model read at each turn of the first episode
        assert prompt == tokenizer.apply_chat_template(trl_messages[:2 + 2 * turn], tools=tools,
                                                       add_generation_prompt=True, tokenize=False)
    ExportTrainer(tmp_path, [pack]).train(ModelRef(name="tiny"), wave_for(pack, ["refund_plain-01"], k=2), records)
    [group] = [json.loads(line) for line in (tmp_path / "grpo.jsonl").read_text().splitlines()]
    exported = group["prompt"] + group["completions"][0]
    assert exported == trl_messages and group["tools"] == tools
    trl_text = tokenizer.apply_chat_template(trl_messages, tools=tools, tokenize=False)
    assert tokenizer.apply_chat_template(exported, tools=group["tools"], tokenize=False) == trl_text
    assert trl_text.startswith(seen[2]) and json.dumps(CALL["arguments"]) in trl_text

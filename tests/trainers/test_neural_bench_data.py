"""The neural benchmark's data: verified expert traces, the copy curricula and the compact template's loss mask."""

import json
import random

import pytest

from bench.neural_data import ID_PATTERN, copy_drill, expert_conversations, id_prefixes, renamed, template_of

TEMPLATES = ["issue_status", "open_subtasks"]


@pytest.fixture(scope="module")
def conversations():
    return expert_conversations("tracker", TEMPLATES, [1, 2])


def test_expert_conversations_are_verified_train_episodes_of_other_worlds(conversations):
    from arena.core.pack import build_pack

    train = [t for w in (1, 2) for t in build_pack("tracker", seed=w).tasks
             if t.split == "train" and template_of(t.id) in TEMPLATES]
    assert len(conversations) == len(train) > 0  # the careful policy passes every train task of the templates
    assert {c.template for c in conversations} == set(TEMPLATES) and {c.world for c in conversations} == {1, 2}
    heldout = {t.prompt for w in (1, 2) for t in build_pack("tracker", seed=w).tasks if t.split == "heldout"}
    assert not {c.messages[1]["content"] for c in conversations} & heldout
    with pytest.raises(ValueError, match="world seed 0 is the campaign's"):
        expert_conversations("tracker", TEMPLATES, [0, 1])
    with pytest.raises(ValueError, match="no train task of template"):
        expert_conversations("tracker", ["no_such_template"], [1])


def test_a_renamed_twin_changes_every_id_the_same_way_everywhere(conversations):
    original = conversations[0].messages
    twin = renamed(original, random.Random(3))
    text, twin_text = json.dumps(original), json.dumps(twin)
    ids, twin_ids = ID_PATTERN.findall(text), ID_PATTERN.findall(twin_text)
    assert len(ids) == len(twin_ids) > 3
    mapping = {}
    for (prefix, digits), (twin_prefix, twin_digits) in zip(ids, twin_ids, strict=True):
        assert prefix == twin_prefix and len(digits) == len(twin_digits)
        assert mapping.setdefault(f"{prefix}-{digits}", f"{prefix}-{twin_digits}") == f"{prefix}-{twin_digits}"
    assert ID_PATTERN.sub("ID", text) == ID_PATTERN.sub("ID", twin_text)  # only the ids' digits differ
    assert len(mapping) > 3 and sum(old != new for old, new in mapping.items()) >= 0.9 * len(mapping)


def test_copy_drills_ask_the_assistant_to_repeat_the_requests_ids(conversations):
    prefixes = id_prefixes(conversations)
    assert {"USR", "OPS"} <= set(prefixes) or len(prefixes) > 3
    rng = random.Random(0)
    drills = [copy_drill(prefixes, rng) for _ in range(40)]
    forms = set()
    for drill in drills:
        asked = ID_PATTERN.findall(drill[1]["content"])
        answer = drill[2]
        if answer.get("tool_calls"):
            forms.add("call")
            written = answer["tool_calls"][0]["function"]["arguments"]["ids"]
        else:
            forms.add("reply")
            written = [f"{p}-{d}" for p, d in ID_PATTERN.findall(answer["content"])]
        assert written == [f"{p}-{d}" for p, d in asked] and all(p in prefixes for p, _ in asked)
    assert forms == {"reply", "call"}


def test_the_compact_templates_loss_covers_what_the_assistant_writes(conversations):
    pytest.importorskip("trl", reason="trl (gymloop[trl]) is not installed")
    from bench.neural_model import COMPACT_TEMPLATE, render_for_tokenizer, train_tokenizer
    from trainers.trl import conversation_example, training_template

    tokenizer = train_tokenizer(render_for_tokenizer([c.messages for c in conversations]), 400)
    assert training_template(tokenizer) == COMPACT_TEMPLATE
    messages = conversations[0].messages
    example = conversation_example(tokenizer, messages, [], template=COMPACT_TEMPLATE, where="test")
    learned = tokenizer.decode([t for t, label in zip(example["input_ids"], example["labels"], strict=True)
                                if label != -100])
    calls = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    expected = "".join(
        f'<tool_call>{{"name": "{m["tool_calls"][0]["function"]["name"]}", "arguments": '
        f'{json.dumps(m["tool_calls"][0]["function"]["arguments"])}}}</tool_call><|im_end|>' for m in calls)
    assert learned == expected + messages[-1]["content"] + "<|im_end|>"
    text = tokenizer.decode(example["input_ids"])
    assert "# Policy" not in text and messages[0]["content"].split("\n\n")[0] in text


def test_number_tokens_make_an_id_one_pointer_token_and_renamed_ids_stay_among_them(conversations):
    pytest.importorskip("trl", reason="trl (gymloop[trl]) is not installed")
    from bench.neural_model import render_for_tokenizer, train_tokenizer

    below = 500
    twin = renamed(conversations[0].messages, random.Random(5), below=below)
    numbers = [int(d) for _, d in ID_PATTERN.findall(json.dumps(twin))]
    assert numbers and all(n < below for n in numbers if len(str(n)) <= 3)  # 4-digit ids keep 4 digits
    tokenizer = train_tokenizer(render_for_tokenizer([c.messages for c in conversations]), 400, numbers=below)
    pieces = [tokenizer.decode([t]) for t in tokenizer("Look at OPS-131 and USR-42.")["input_ids"]]
    assert "131" in pieces and "42" in pieces
    plain = train_tokenizer(render_for_tokenizer([c.messages for c in conversations]), 400)
    assert "131" not in [plain.decode([t]) for t in plain("Look at OPS-131.")["input_ids"]]
    assert all(len(tokenizer(str(n), add_special_tokens=False)["input_ids"]) == 1 for n in range(below))


def test_a_world_whose_split_holds_out_all_of_a_template_adds_none_of_it():
    from arena.core.pack import build_pack

    splits = {t.split for t in build_pack("tracker", seed=7).tasks if template_of(t.id) == "release_status_update"}
    assert splits == {"heldout"}
    with pytest.raises(ValueError, match=r"no train task of template\(s\) release_status_update in worlds 7..7"):
        expert_conversations("tracker", ["release_status_update"], [7])
    mixed = expert_conversations("tracker", ["release_status_update"], [6, 7])
    assert mixed and {c.world for c in mixed} == {6}


@pytest.mark.parametrize(("task_id", "template"), [
    ("issue_status-03", "issue_status"), ("tracker-s0.issue_status-03", "issue_status"),
    ("issue_status.03", "issue_status"), ("assign_subtask_by_key-12", "assign_subtask_by_key")])
def test_a_tasks_template_is_read_from_its_id_with_or_without_the_packs_prefix(task_id, template):
    assert template_of(task_id) == template

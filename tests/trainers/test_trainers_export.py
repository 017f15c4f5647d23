import json

import pytest
from trainer_fixtures import rollouts, toy_pack, wave_for

from arena.agents.reference import PolicyParams
from trainers import ExportTrainer, ModelRef, TrainerError, get_trainer


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


@pytest.fixture(scope="module")
def runs(pack):
    tasks = ["refund_plain-01", "refund_conflict-01"]
    good = rollouts(pack, PolicyParams.expert(), tasks, k=2)
    bad = rollouts(pack, PolicyParams.with_failure("missed_policy_dependency"), tasks, k=2, seed=1)
    return good + bad


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_trajectory(messages, final_reply):
    """Assistant tool calls (arguments as objects) each answered by the tool's JSON result; a final reply."""
    i = 0
    while i < len(messages) - 1:
        call = messages[i]
        assert call["role"] == "assistant" and call["content"] == "" and len(call["tool_calls"]) == 1
        tc = call["tool_calls"][0]
        assert tc["type"] == "function" and isinstance(tc["function"]["arguments"], dict)
        answer = messages[i + 1]
        assert answer["role"] == "tool" and answer["name"] == tc["function"]["name"]
        assert json.loads(answer["content"])["ok"] in (True, False)
        i += 2
    assert messages[-1] == {"role": "assistant", "content": final_reply}


def test_export_writes_valid_sft_dpo_and_grpo_files(tmp_path, pack, runs):
    ref = ModelRef(name="reference", version=3, params_hash="abc")
    wave = wave_for(pack, ["refund_plain-01", "refund_conflict-01"], k=4, round_index=2)
    trainer = ExportTrainer(tmp_path, [pack])
    assert trainer.train(ref, wave, runs) == ref
    by_id = {r.episode_id: r for r in runs}
    manifest = json.loads((tmp_path / "manifest.json").read_text())

    sft = _lines(tmp_path / "sft.jsonl")
    assert len(sft) == sum(r.passed for r in runs) == 4
    tool_names = {t.name for t in pack.tools}
    for row, episode_id in zip(sft, manifest["rows"]["sft"], strict=True):
        assert set(row) == {"messages", "tools"}
        episode = by_id[episode_id]
        assert episode.passed
        msgs = row["messages"]
        assert msgs[0]["role"] == "system" and pack.policy in msgs[0]["content"]
        assert pack.task(episode.task_id).persona.name in msgs[0]["content"]
        assert msgs[1] == {"role": "user", "content": pack.task(episode.task_id).prompt}
        _check_trajectory(msgs[2:], episode.reply)
        called = [m["tool_calls"][0]["function"]["name"] for m in msgs if m.get("tool_calls")]
        assert called == [s.tool for s in episode.trace] and "check_refund" in called
        assert {t["function"]["name"] for t in row["tools"]} == tool_names

    dpo = _lines(tmp_path / "dpo.jsonl")
    assert len(dpo) == 4
    for row, (chosen_id, rejected_id) in zip(dpo, manifest["rows"]["dpo"], strict=True):
        assert set(row) == {"prompt", "chosen", "rejected"}
        chosen, rejected = by_id[chosen_id], by_id[rejected_id]
        assert chosen.passed and not rejected.passed and chosen.task_id == rejected.task_id
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        _check_trajectory(row["chosen"], chosen.reply)
        _check_trajectory(row["rejected"], rejected.reply)

    grpo = _lines(tmp_path / "grpo.jsonl")
    assert [g["task_id"] for g in grpo] == sorted(["refund_plain-01", "refund_conflict-01"])
    for row in grpo:
        assert len(row["completions"]) == len(row["rewards"]) == 4
        assert all(0.0 <= r <= 1.0 for r in row["rewards"]) and max(row["rewards"]) == 1.0 > min(row["rewards"])

    card = (tmp_path / "README.md").read_text()
    assert "reference@v3:abc" in card and "round 2" in card and pack.id in card
    assert "| `sft.jsonl` | 4 |" in card and "| `dpo.jsonl` | 4 |" in card and "| `grpo.jsonl` | 2 |" in card
    assert trainer.last_summary is not None and trainer.last_summary.tasks == 2


def test_failed_tool_calls_are_exported_as_tool_errors(tmp_path, pack):
    runs = rollouts(pack, PolicyParams.expert(), ["refund_timeout-01"], k=2)
    assert any(not s.ok for s in runs[0].trace)
    ExportTrainer(tmp_path, {pack.id: pack}).train(ModelRef(name="m"), wave_for(pack, ["refund_timeout-01"], 2), runs)
    row = _lines(tmp_path / "sft.jsonl")[0]
    errors = [json.loads(m["content"]) for m in row["messages"] if m["role"] == "tool" and "error" in m["content"]]
    assert errors and errors[0]["error"]["kind"] == "fault" and errors[0]["error"]["fault"] == "timeout"


def test_export_names_a_missing_pack(tmp_path, pack, runs):
    trainer = get_trainer("export", out_dir=tmp_path, packs=[])
    with pytest.raises(TrainerError, match=f"ran on pack '{pack.id}', which the export was not given"):
        trainer.train(ModelRef(name="m"), wave_for(pack, ["refund_plain-01"], 2), runs)

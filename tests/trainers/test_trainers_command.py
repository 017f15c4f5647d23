import json
import sys
import textwrap

import pytest
from trainer_fixtures import rollouts, toy_pack, wave_for

from arena.agents.reference import PolicyParams
from trainers import CommandTrainer, ModelRef, TrainerError

TRAIN_OK = textwrap.dedent("""
    import json, os, sys
    data = os.environ["GYMLOOP_DATA_DIR"]
    assert sys.argv[1] == data
    rows = sum(1 for _ in open(os.path.join(data, "sft.jsonl")))
    parent = json.loads(os.environ["GYMLOOP_MODEL_REF"])
    for step in range(3):
        print(f"step {step} loss {1.0 / (step + 1):.3f}", flush=True)
    print("warming up", file=sys.stderr, flush=True)
    out = os.path.join(sys.argv[2], "adapter.bin")
    open(out, "w").write("weights")
    print(json.dumps({"name": parent["name"] + "-sft", "version": parent["version"] + 1, "artifact": out,
                      "params_hash": f"rows{rows}"}))
""")

TRAIN_FAIL = textwrap.dedent("""
    import sys
    for i in range(30):
        print(f"epoch {i}", flush=True)
    print("CUDA out of memory", file=sys.stderr, flush=True)
    sys.exit(3)
""")


@pytest.fixture(scope="module")
def pack():
    return toy_pack()


@pytest.fixture(scope="module")
def runs(pack):
    return rollouts(pack, PolicyParams.expert(), ["refund_plain-01"], k=2)


def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body)
    return str(path)


def test_successful_command_returns_the_model_it_prints(tmp_path, pack, runs):
    lines = []
    script = _script(tmp_path, "train.py", TRAIN_OK)
    trainer = CommandTrainer([sys.executable, script, "{data_dir}", "{output_dir}"], tmp_path / "work", [pack],
                             on_line=lines.append)
    start = ModelRef(name="qwen", version=1, kind="external")
    new = trainer.train(start, wave_for(pack, ["refund_plain-01"], 2, round_index=4), runs)
    assert new.name == "qwen-sft" and new.version == 2 and new.kind == "external"
    assert new.parent == start.ref and new.params_hash == "rows2"
    assert new.artifact is not None and open(new.artifact).read() == "weights"
    log = (tmp_path / "work" / "round-4" / "train.log").read_text()
    assert "step 2 loss 0.333" in log and "warming up" in log and trainer.last_log is not None
    assert "step 0 loss 1.000" in lines and "warming up" in lines
    assert (tmp_path / "work" / "round-4" / "data" / "dpo.jsonl").exists()


def test_failing_command_fails_the_step_with_the_log_tail(tmp_path, pack, runs):
    script = _script(tmp_path, "fail.py", TRAIN_FAIL)
    trainer = CommandTrainer([sys.executable, script], tmp_path / "work", [pack], tail_lines=5)
    with pytest.raises(TrainerError) as info:
        trainer.train(ModelRef(name="m"), wave_for(pack, ["refund_plain-01"], 2), runs)
    message = str(info.value)
    assert "exited with code 3" in message and "CUDA out of memory" in message and "epoch 29" in message
    assert "epoch 20" not in message


def test_command_without_a_model_line_or_with_a_bad_one_fails(tmp_path, pack, runs):
    silent = _script(tmp_path, "silent.py", "print('done')\n")
    with pytest.raises(TrainerError, match="printed no JSON model reference"):
        CommandTrainer([sys.executable, silent], tmp_path / "a", [pack]).train(
            ModelRef(name="m"), wave_for(pack, ["refund_plain-01"], 2), runs)
    bad = _script(tmp_path, "bad.py", f"print({json.dumps(json.dumps({'name': '', 'version': -1}))})\n")
    with pytest.raises(TrainerError, match="printed an invalid model reference"):
        CommandTrainer([sys.executable, bad], tmp_path / "b", [pack]).train(
            ModelRef(name="m"), wave_for(pack, ["refund_plain-01"], 2), runs)


def test_missing_program_and_timeout_fail_the_step(tmp_path, pack, runs):
    with pytest.raises(TrainerError, match="could not start"):
        CommandTrainer([str(tmp_path / "no-such-trainer")], tmp_path / "a", [pack]).train(
            ModelRef(name="m"), wave_for(pack, ["refund_plain-01"], 2), runs)
    sleeper = _script(tmp_path, "sleep.py", "import time\nprint('started', flush=True)\ntime.sleep(30)\n")
    with pytest.raises(TrainerError, match="timed out") as info:
        CommandTrainer([sys.executable, sleeper], tmp_path / "b", [pack], timeout_s=1.0).train(
            ModelRef(name="m"), wave_for(pack, ["refund_plain-01"], 2), runs)
    assert "started" in str(info.value)
    with pytest.raises(ValueError, match="non-empty command"):
        CommandTrainer([], tmp_path, [pack])

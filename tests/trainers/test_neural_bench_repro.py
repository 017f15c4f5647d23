"""Two tiny trainings of the neural benchmark give the same bits, whatever threads and kernels their machine offers."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch (gymloop[trl]) is not installed")

ROOT = Path(__file__).resolve().parents[2]

TINY_RUN = """
from bench.neural_repro import pin
pin(1)
import hashlib
import torch
from bench.neural_train import Stage, train_stage


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(64, 96)
        self.norm = torch.nn.LayerNorm(96)
        self.mix = torch.nn.Linear(96, 96)

    def forward(self, input_ids, attention_mask, labels):
        hidden = torch.nn.functional.silu(self.mix(self.norm(self.embed(input_ids)))).cumsum(1)
        logits = (hidden @ self.embed.weight.T).log_softmax(-1)
        loss = torch.nn.functional.nll_loss(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100)
        return type("Output", (), {"loss": loss})


torch.manual_seed(0)
model = Tiny()

def examples(rng):
    rows = [[rng.randrange(1, 64) for _ in range(rng.randint(8, 96))] for _ in range(8)]
    return [{"input_ids": ids, "labels": ids} for ids in rows]

stats = train_stage(model, 0, examples, Stage("tiny", 6, 1e-2, 384, warmup_steps=2), seed=3, log=lambda _: None)
weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
print(hashlib.sha256(weights).hexdigest(), stats.losses)
"""


def tiny_run(**machine: str) -> str:
    """The tiny training's weights digest and losses, in a process started with ``machine``'s variables."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", TINY_RUN], cwd=ROOT, env={**env, **machine}, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_threads_and_instruction_sets_of_the_machine_do_not_change_a_bit_of_training():
    scalar = tiny_run(ATEN_CPU_CAPABILITY="default", MKL_CBWR="COMPATIBLE", OMP_NUM_THREADS="2", PYTHONHASHSEED="1")
    best = tiny_run(OMP_NUM_THREADS="1", PYTHONHASHSEED="2")
    assert scalar == best

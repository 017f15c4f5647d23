"""Environment GRPO loop on CPU: steps/s, tokens/s and gymloop's share of a step.

Trains the tiny scripted model of the tests (2-layer Llama, hidden size 64, a tokenizer trained here; it emits a
real tool call every turn) with the ``trl`` trainer's GRPO in the helpdesk gym, and reports:

- steps/s and tokens/s of TRL's training loop (rollouts with tool calls, rewards, updates);
- the share of that loop spent in gymloop's environments (reset, tool calls, verification), held to the target;
- the environment's own time per tool call, per reset and per verdict.

The anchor is the model's own time in the same run (the loop minus the environment): a tiny model is the worst
case for the share, since any real checkpoint spends far longer per token.
Target: environment share < 5% of a step. Run: ``python bench/bench_trl.py [--steps 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "trainers"))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from arena.core.pack import build_pack  # noqa: E402
from curriculum import Wave, WaveEntry  # noqa: E402
from trainers import ModelRef, TRLConfig, TRLTrainer  # noqa: E402

TARGET_SHARE = 0.05
"""Largest share of a GRPO step spent in gymloop's environments."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--generations", type=int, default=4)
    args = parser.parse_args()
    from tiny_lm import build_tiny_checkpoint, corpus_for  # type: ignore[import-not-found]

    pack = build_pack("helpdesk", seed=0)
    tasks = [t for t in pack.tasks if t.split == "train"][:4]
    first = tasks[0].gold.steps[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_checkpoint(Path(tmp) / "tiny", corpus_for([pack]),
                                       call={"name": first.tool, "arguments": first.arguments})
        wave = Wave(round_index=0, strategy="targeted", k=args.generations, budget=len(tasks) * args.generations,
                    entries=[WaveEntry(pack_id=pack.id, task_id=t.id, weight=1 / len(tasks), reason="bench",
                                       source="targeted") for t in tasks])
        config = TRLConfig(method="grpo", max_steps=args.steps, per_device_train_batch_size=args.generations,
                           num_generations=args.generations, max_completion_length=96, max_tool_calling_iterations=3,
                           learning_rate=1e-4)
        trainer = TRLTrainer(Path(tmp) / "models", [pack], config)
        started = time.perf_counter()
        trainer.train(ModelRef(name="tiny", kind="transformers", artifact=str(folder)), wave, [])
        total = time.perf_counter() - started
    stats = trainer.last_stats
    envs = trainer.last_environments["helpdesk"].created
    timings = [e.timings for e in envs]
    resets = sum(t.resets for t in timings)
    calls = sum(t.tool_calls for t in timings)
    share = stats.env_seconds / stats.grpo_seconds
    print(f"machine load (1-min average): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"GRPO loop: {stats.grpo_steps} steps in {stats.grpo_seconds:.2f} s "
          f"({stats.grpo_steps / stats.grpo_seconds:.3f} steps/s), {stats.tokens} tokens "
          f"({stats.tokens / stats.grpo_seconds:.0f} tokens/s); whole train() call {total:.2f} s")
    print(f"rollouts scored: {stats.episodes}, tool calls: {calls}, resets: {resets}, "
          f"mean reward {stats.mean_reward:.3f}")
    print(f"environment: reset {1000 * sum(t.reset_s for t in timings) / max(resets, 1):.3f} ms each, "
          f"tool call {1000 * sum(t.tools_s for t in timings) / max(calls, 1):.3f} ms each, "
          f"verify {1000 * sum(t.verify_s for t in timings) / max(stats.episodes, 1):.3f} ms each")
    print(f"environment share of the GRPO loop: {100 * share:.2f}% "
          f"(model and trainer: {stats.grpo_seconds - stats.env_seconds:.2f} s; target < {100 * TARGET_SHARE:.0f}%) "
          f"-> {'PASS' if share < TARGET_SHARE else 'FAIL'}")


if __name__ == "__main__":
    main()

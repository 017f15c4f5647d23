"""Orchestration overhead: a curriculum round through Prefect + MLflow + the registry against a bare loop.

The bare loop does the same work in plain Python (evaluate the held-out suite, diagnose, plan the wave, roll
it out, train, re-evaluate); the flow adds Prefect flows and tasks, registry writes and reads, and MLflow
tracking (factory requests off in both). Two round sizes give the overhead as fixed seconds per round plus
milliseconds per episode (a line through the two points). Targets: <= 2 s fixed per round and <= 0.5 ms per
episode. The Prefect API server is started and a warm-up round run (creating the registry and MLflow
databases once, as a campaign's first round does) before timing.

Run: ``python -m bench.bench_orchestration [--eval-k 2 12] [--budget 400] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

FIXED_TARGET_S = 2.0
PER_EPISODE_TARGET_MS = 0.5


def bare_round(settings: Any, out: Path) -> int:
    """The round's work without orchestration; returns the episodes it ran."""
    from arena.agents.reference import PolicyParams, ReferencePolicy
    from arena.core.pack import build_pack
    from arena.rollout import RolloutConfig, run_episodes
    from curriculum import CurriculumConfig, History, plan_wave, task_refs
    from flows.rollouts import heldout_keys, wave_keys
    from flows.weaknesses import diagnose_round
    from trainers import GRPOTrainer, save_reference

    packs = [build_pack(d, seed=0) for d in settings.gyms.domains]
    suite = heldout_keys(packs, settings)
    ref = save_reference(PolicyParams.initial(), out)
    before = run_episodes(ReferencePolicy(PolicyParams.load(ref.artifact or "")), packs, suite)
    report = diagnose_round(before, packs, None, 0, settings.curriculum.seed)
    plan = settings.curriculum
    config = CurriculumConfig(strategy=plan.strategy, budget=plan.wave_budget, k=plan.train_k, seed=plan.seed * 1000)
    wave = plan_wave(report, task_refs(packs), History(), config)
    train = run_episodes(ReferencePolicy(PolicyParams.load(ref.artifact or "")), packs, wave_keys(wave, 0),
                         RolloutConfig())
    new = GRPOTrainer(out).train(ref, wave, train)
    after = run_episodes(ReferencePolicy(PolicyParams.load(new.artifact or "")), packs, suite)
    return len(before) + len(train) + len(after)


def main() -> None:
    """Time both ways at two round sizes and print the overhead against the targets."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eval-k", type=int, nargs=2, default=[2, 12], help="held-out attempts: the two round sizes")
    parser.add_argument("--budget", type=int, default=400, help="training episodes per round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds timed per size (the median is used)")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect.testing.utilities import prefect_test_harness

    from flows.models import RoundParams
    from flows.round import curriculum_round
    from flows.settings import load_settings

    points = []
    with tempfile.TemporaryDirectory(prefix="bench-orch-") as tmp, prefect_test_harness(server_startup_timeout=120):
        home = str(Path(tmp) / "home")
        base = {"home": home, "variants_per_round": 0, "wave_budget": args.budget, "workers": 1}
        curriculum_round(RoundParams(campaign="warm-up", round_index=0, overrides={**base, "eval_k": 1}))
        for eval_k in args.eval_k:
            overrides = {**base, "eval_k": eval_k}
            settings = load_settings(**overrides)
            bare_times, flow_times = [], []
            for repeat in range(args.repeats):
                started = time.perf_counter()
                episodes = bare_round(settings, Path(tmp) / f"bare-{eval_k}-{repeat}")
                bare_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                curriculum_round(RoundParams(campaign=f"bench-{eval_k}-{repeat}", round_index=0, overrides=overrides))
                flow_times.append(time.perf_counter() - started)
            bare, flow = statistics.median(bare_times), statistics.median(flow_times)
            points.append((episodes, bare, flow))
            print(f"eval_k {eval_k}: {episodes} episodes; bare loop {bare:.2f} s, flow {flow:.2f} s "
                  f"(medians of {args.repeats}), overhead {flow - bare:.2f} s")
    (e1, b1, f1), (e2, b2, f2) = points
    per_episode = ((f2 - b2) - (f1 - b1)) / (e2 - e1)
    fixed = (f1 - b1) - per_episode * e1
    print(f"overhead per episode {per_episode * 1e3:.3f} ms (target <= {PER_EPISODE_TARGET_MS} ms: "
          f"{per_episode * 1e3 / PER_EPISODE_TARGET_MS:.2f} of target)")
    print(f"fixed overhead per round {fixed:.2f} s (target <= {FIXED_TARGET_S:.0f} s: {fixed / FIXED_TARGET_S:.2f} "
          "of target)")


if __name__ == "__main__":
    main()

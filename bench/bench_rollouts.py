"""Rollout benchmark: reference-policy episodes per second per core, and the speed-up of 2 workers over 1.

Targets: >= 1,000 reference-policy episodes per second per core on helpdesk; 2 worker processes >= 1.8x the
throughput of 1 worker process on this 2-core machine.

Run: ``python -m bench.bench_rollouts [--domain helpdesk] [--episodes 6000]``
"""

from __future__ import annotations

import argparse
import time

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import build_pack
from arena.rollout import RolloutConfig, plan_episodes, run_episodes

EPISODES_TARGET = 1000.0
SPEEDUP_TARGET = 1.8


def main() -> None:
    """Print inline throughput and the 1-vs-2-worker speed-up."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", default="helpdesk")
    parser.add_argument("--episodes", type=int, default=6000, help="episodes per measurement")
    args = parser.parse_args()
    pack = build_pack(args.domain, seed=0)
    agent = ReferencePolicy(PolicyParams.initial())
    seeds = list(range(args.episodes // len(pack.tasks) + 1))
    keys = plan_episodes([pack], RolloutConfig(seeds=seeds))[: args.episodes]

    run_episodes(agent, [pack], keys[:200])
    started = time.perf_counter()
    run_episodes(agent, [pack], keys)
    inline = len(keys) / (time.perf_counter() - started)
    print(f"{args.domain}: reference policy {inline:,.0f} episodes/s on one core, inline "
          f"(target >= {EPISODES_TARGET:,.0f}: {inline / EPISODES_TARGET:.2f}x)")

    rates, steady = {}, {}
    for workers in (1, 2):
        config = RolloutConfig(executor="process", workers=workers)
        stamps: list[float] = []

        def stamp(_: EpisodeRecord, log: list[float] = stamps) -> None:
            log.append(time.perf_counter())

        started = time.perf_counter()
        run_episodes(agent, [pack], keys, config, on_episode=stamp)
        rates[workers] = len(keys) / (time.perf_counter() - started)
        first = len(stamps) // 10
        steady[workers] = (len(stamps) - 1 - first) / (stamps[-1] - stamps[first])
        print(f"{workers} worker process(es): {rates[workers]:,.0f} episodes/s including worker start-up, "
              f"{steady[workers]:,.0f}/s once running (last 90% of the episodes)")
    for label, figures in (("once running", steady), ("including start-up", rates)):
        speedup = figures[2] / figures[1]
        print(f"speed-up of 2 workers over 1, {label}: {speedup:.2f}x (target >= {SPEEDUP_TARGET:.1f}x: "
              f"{speedup / SPEEDUP_TARGET:.2f} of target)")


if __name__ == "__main__":
    main()

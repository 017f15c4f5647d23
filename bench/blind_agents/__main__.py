"""Play every blind agent on its gyms and print how many episodes each produced and how many failed.

``python -m bench.blind_agents [--seeds 0,1,2] [--k 1]``
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from bench.blind_agents import AGENTS, play


def main(argv: list[str] | None = None) -> None:
    """Print one row per agent and gym, then the totals per label."""
    parser = argparse.ArgumentParser(prog="python -m bench.blind_agents", description=__doc__)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated episode seeds")
    parser.add_argument("--k", type=int, default=1, help="attempts per task and seed")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    started = time.perf_counter()
    episodes: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    print(f"{'agent':56s} {'label':28s} {'gym':12s} {'episodes':>8s} {'failed':>7s}")
    for agent in AGENTS:
        for domain in agent.domains:
            played = play(agent, domain, seeds, args.k)
            n_failed = sum(not record.passed for record, _ in played)
            episodes[agent.injects] += len(played)
            failed[agent.injects] += n_failed
            print(f"{agent.name:56s} {agent.injects:28s} {domain:12s} {len(played):8d} {n_failed:7d}")
    print()
    print(f"{'label':28s} {'episodes':>8s} {'failed':>7s}")
    for label in sorted(episodes):
        print(f"{label:28s} {episodes[label]:8d} {failed[label]:7d}")
    print(f"{'total':28s} {sum(episodes.values()):8d} {sum(failed.values()):7d}")
    print(f"({len(AGENTS)} agents, seeds {seeds}, k={args.k}, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

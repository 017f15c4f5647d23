"""Diagnosis at scale: time and peak memory from 1,000 to 100,000 failed episodes, and the clustering choice.

Each size runs in its own subprocess (peak RSS from ``resource.getrusage``). Episodes are synthetic failed
EpisodeRecords with eleven injected strategies (diagnosis/synthetic.py), generated lazily and diagnosed in
one streaming pass; generation time is measured separately and subtracted. Targets: 100,000 episodes in
<= 60 s with peak memory <= 2 GiB. The method comparison clusters the same feature rows with each
algorithm and reports time and adjusted Rand index against the injected strategies, twice: with the detector
tags among the features (as ``diagnose`` clusters) and without them. On this synthetic set each strategy
maps to one tag, so the first figure is helped by the tags; the second is the clustering's own. Besides wall
time, each size reports the diagnosis's own CPU seconds (``time.process_time``), the figure that stays comparable
when other work shares the machine; the load average is printed before and after.

``--source gyms`` diagnoses instead the labelled failures of the three built-in gyms at world seed 0 (about 1,500
real traces from ``bench.independent_mistakes``, each task known, so every detector takes its task-aware path),
repeated to each size with fresh episode ids; building them (``setup``) is not counted.

Run: python bench/bench_diagnosis_scale.py [--sizes 1000,10000,100000] [--no-methods] [--source gyms]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena.core.episode import EpisodeRecord
    from diagnosis import DiagnosisContext

ROOT = Path(__file__).resolve().parent.parent
"""The checkout the child process imports gymloop and the benches from."""

TIME_TARGET_S = 60.0
MEMORY_TARGET_MB = 2048.0


def _gym_failures(n: int) -> tuple[Callable[[], Iterator[EpisodeRecord]], DiagnosisContext]:
    """``n`` failed episodes of the three gyms with their tasks: the labelled mistakes of world seed 0, repeated."""
    from bench.bench_diagnosis_independent import label

    labelled = label(["helpdesk", "procurement", "tracker"], [0], [0], None)
    base = labelled.episodes

    def episodes() -> Iterator[EpisodeRecord]:
        for i in range(n):
            yield base[i % len(base)].model_copy(update={"episode_id": f"{i:08d}"})

    return episodes, labelled.ctx


def _child(n: int, source: str) -> None:
    from diagnosis import diagnose
    from diagnosis.synthetic import context, synthetic_failures

    setup = time.perf_counter()
    if source == "gyms":
        episodes, ctx = _gym_failures(n)
    else:
        def episodes() -> Iterator[EpisodeRecord]:
            return (e for e, _ in synthetic_failures(n, seed=1))

        ctx = context()
    setup = time.perf_counter() - setup
    start, cpu = time.perf_counter(), time.process_time()
    for _ in episodes():
        pass
    generation, generation_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    report = diagnose(episodes(), ctx, seed=0)
    total, total_cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n": n, "total_s": total, "generation_s": generation, "diagnosis_s": total - generation,
                      "diagnosis_cpu_s": total_cpu - generation_cpu, "peak_mb": peak_mb, "setup_s": setup,
                      "weaknesses": len(report.weaknesses), "kinds": len(report.kinds),
                      "clusters": len(report.clusters)}))


def _methods(n: int, with_tags: bool = True) -> list[dict[str, float | str]]:
    from sklearn.metrics import adjusted_rand_score

    from diagnosis import METHODS, cluster_rows, episode_features, episode_tags
    from diagnosis.synthetic import context, synthetic_failures

    ctx = context()
    rows, labels = [], []
    for episode, strategy in synthetic_failures(n, seed=2):
        tags = episode_tags(episode, ctx) if with_tags else []
        rows.append(episode_features(episode, tags, ctx))
        labels.append(strategy)
    distinct = list(dict.fromkeys(rows))
    index = {r: i for i, r in enumerate(distinct)}
    weights = [0] * len(distinct)
    for r in rows:
        weights[index[r]] += 1
    out: list[dict[str, float | str]] = []
    for method in METHODS:
        start = time.perf_counter()
        result = cluster_rows(distinct, weights, method=method, seed=0)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - start
        predicted = [int(result.labels[index[r]]) for r in rows]
        out.append({"method": method, "n": n, "distinct": len(distinct), "seconds": elapsed,
                    "ari": adjusted_rand_score(labels, predicted), "clusters": int(result.labels.max()) + 1})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--no-methods", action="store_true", help="skip the clustering method comparison")
    parser.add_argument("--source", choices=("synthetic", "gyms"), default="synthetic",
                        help="synthetic failures (no tasks), or the gyms' labelled failures with their tasks")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.source)
        return
    print(f"source: {args.source}")
    print("load average at start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'episodes':>9} {'diagnosis s':>12} {'CPU s':>7} {'generation s':>13} {'peak MB':>8} {'time ratio':>11} "
          f"{'CPU ratio':>10} {'memory ratio':>13}")
    for n in (int(s) for s in args.sizes.split(",")):
        done = subprocess.run([sys.executable, "-m", "bench.bench_diagnosis_scale", "--child", str(n),
                               "--source", args.source], cwd=ROOT, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{n:>9} {row['diagnosis_s']:>12.2f} {row['diagnosis_cpu_s']:>7.2f} {row['generation_s']:>13.2f} "
              f"{row['peak_mb']:>8.0f} {row['diagnosis_s'] / TIME_TARGET_S:>11.3f} "
              f"{row['diagnosis_cpu_s'] / TIME_TARGET_S:>10.3f} {row['peak_mb'] / MEMORY_TARGET_MB:>13.3f}")
    print("load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.no_methods:
        return
    for with_tags in (True, False):
        features = "with detector tags, as diagnose clusters" if with_tags else "trace features alone, no tags"
        print(f"\nclustering method comparison (same feature rows; {features}):")
        for n in (1000, 10000):
            for m in _methods(n, with_tags):
                print(f"  n={m['n']:>6} {m['method']:>14}: {m['seconds']:.3f} s, ARI {m['ari']:.3f}, "
                      f"{m['clusters']} clusters over {m['distinct']} distinct rows")


if __name__ == "__main__":
    main()

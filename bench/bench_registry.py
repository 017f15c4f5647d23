"""Registry benchmark: write one round of 10,000 episodes, then re-run it (everything skipped).

Each episode is a realistic record: an 8-step trace with outputs and one
injected-fault error, a 4-assertion verdict with row changes, token and cost
accounting. Prints the write time against the 5 s target as a ratio, the
re-run skip time (resume of a crashed round: ``finished_episode_keys`` plus an
idempotent ``record_episodes`` of the whole round), the stored bytes per
episode and the time to read the round back.

Run: ``python -m bench.bench_registry [--episodes 10000] [--batch 1000] [--url URL]``
(SQLite in a temporary gymloop home unless ``--url`` is given).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from arena.core.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.core.pack import SCHEMA_VERSION, Manifest, Pack, with_content_id
from arena.core.results import AssertionResult, RowChange, ToolErrorInfo, TraceStep, Verdict
from arena.core.task import GoldProgram, Intent, Persona, ResponseAssertion, Task
from registry import EpisodeKey, Registry

WRITE_TARGET_S = 5.0
TASKS = 50


def _pack() -> Pack:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT)")
    state = db.serialize()
    db.close()
    checks = [ResponseAssertion(description=f"states fact {i}", must_include=[["closed"]]) for i in range(3)]
    tasks = [
        Task(id=f"task-{i:03d}", prompt=f"Close order ORD-{i}.", persona=Persona(name="Sam", role="agent"),
             split="heldout" if i % 5 == 0 else "train", category="multi_step_workflow", tags=["prerequisite"],
             intent=Intent(goal="close_order"), gold=GoldProgram(), assertions=list(checks))
        for i in range(TASKS)
    ]
    manifest = Manifest(domain="bench", schema_version=SCHEMA_VERSION, seed=0, clock_start="2026-01-01T09:00:00")
    return with_content_id(Pack(manifest=manifest, state_db=state, policy="rules\n", tools=[],
                                graph={"nodes": [], "edges": []}, faults=[], tasks=tasks))


def _record(pack: Pack, task: Task, seed: int) -> EpisodeRecord:
    passed = seed % 3 != 0
    trace = [
        TraceStep(
            index=i, tool=("search_orders", "get_order", "check_eligibility", "update_order")[i % 4],
            arguments={"order_id": f"ORD-{10_000 + seed * 7 + i}", "query": "Acme Corp", "status": "closed"},
            ok=i != 5,
            output={"id": f"ORD-{10_000 + seed * 7 + i}", "customer": "Acme Corp", "status": "open",
                    "total": round(19.5 * (i + 1), 2), "lines": [{"sku": f"SKU-{j}", "qty": j + 1} for j in range(3)]}
            if i != 5 else None,
            error=ToolErrorInfo(kind="fault", message="upstream timeout after 30 s", retryable=True, fault="timeout")
            if i == 5 else None,
            clock=f"2026-01-01T09:{i:02d}:00", write=i % 4 == 3,
        )
        for i in range(8)
    ]
    results = [
        AssertionResult(index=0, kind="state", description="order is closed", passed=passed,
                        detail="" if passed else "expected [['closed']], got [['open']]"),
        AssertionResult(index=1, kind="trace", description="eligibility checked before the update", passed=True),
        AssertionResult(index=2, kind="side_effects", description="no changes outside the write-set", passed=passed),
        AssertionResult(index=3, kind="response", description="reply states the new status", passed=True),
    ]
    verdict = Verdict(passed=passed, score=sum(r.passed for r in results) / 4, results=results,
                      changes=[RowChange(table="orders", key="ORD-1", op="update", columns=["status"])])
    return EpisodeRecord(
        episode_id=episode_id(pack.id, task.id, seed, 0, "reference"), pack_id=pack.id, domain="bench",
        task_id=task.id, split=task.split, category=task.category, tags=list(task.tags), seed=seed, agent="reference",
        model_ref="reference:v3", trace=trace, reply="Order ORD-10001 is now closed." if passed else "I gave up.",
        verdict=verdict, failure=None if passed else EpisodeFailure(boundary="agent", kind="gave_up", message="stop"),
        tokens_in=1800, tokens_out=240, cost=0.0021, latency_s=0.9, wall_time_s=1.2, turns=9,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000, help="episodes per record_episodes call")
    parser.add_argument("--url", default=None, help="registry URL (default: SQLite in a temporary home)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gymloop-bench-registry-") as tmp:
        home = Path(tmp)
        url = args.url or f"sqlite:///{home / 'registry.db'}"
        pack = _pack()
        records = [_record(pack, pack.tasks[k % TASKS], k // TASKS) for k in range(args.episodes)]
        with Registry(url, home) as reg:
            reg.add_pack(pack)
            model = reg.register_model("reference", "v3", kind="reference")
            round_id = reg.start_round(reg.create_campaign("bench", exist_ok=True).id, 0, model.id).id

            start = time.perf_counter()
            written = sum(reg.record_episodes(round_id, records[i:i + args.batch])
                          for i in range(0, len(records), args.batch))
            write_s = time.perf_counter() - start

            start = time.perf_counter()
            done = reg.finished_episode_keys(round_id)
            todo = [r for r in records if EpisodeKey.of(r) not in done]
            skipped_again = reg.record_episodes(round_id, records)
            skip_s = time.perf_counter() - start

            start = time.perf_counter()
            back = reg.round_episodes(round_id)
            read_s = time.perf_counter() - start
            size = Path(home / "registry.db").stat().st_size if args.url is None else 0

        if written != args.episodes or todo or skipped_again or len(back) != args.episodes:
            raise SystemExit(f"benchmark invariant broken: wrote {written}, left {len(todo)}, re-wrote {skipped_again}")
        backend = reg.display_url.split(":", 1)[0]
        print(f"registry on {backend}: {args.episodes} episodes of 8 steps, batches of {args.batch}")
        print(f"  write round:   {write_s:.2f} s ({args.episodes / write_s:,.0f} episodes/s); "
              f"target <= {WRITE_TARGET_S:.0f} s -> ratio {write_s / WRITE_TARGET_S:.2f} (<= 1 passes)")
        print(f"  re-run skip:   {skip_s:.2f} s (finished keys + idempotent re-write of all {args.episodes}, 0 new)")
        print(f"  read back:     {read_s:.2f} s (decode every trace and verdict)")
        if size:
            print(f"  stored:        {size / args.episodes:,.0f} bytes per episode (SQLite file, traces zlib JSON)")


if __name__ == "__main__":
    main()

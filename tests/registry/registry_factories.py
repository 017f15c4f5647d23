"""Builders of packs and episode records for the registry tests and benchmark (no built-in gym needed)."""

from __future__ import annotations

import sqlite3

from arena.core.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.core.pack import SCHEMA_VERSION, Manifest, Pack, with_content_id
from arena.core.results import AssertionResult, RowChange, ToolErrorInfo, TraceStep, Verdict
from arena.core.task import GoldProgram, GoldStep, Intent, Persona, ResponseAssertion, StateAssertion, Task

DOMAIN = "testgym"


def _state_db(seed: int) -> bytes:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT)")
    db.executemany("INSERT INTO orders VALUES (?, ?)", [(f"ORD-{seed}-{i}", "open") for i in range(20)])
    db.commit()
    data = db.serialize()
    db.close()
    return data


def make_task(task_id: str, split: str = "train") -> Task:
    return Task(
        id=task_id,
        prompt=f"Please close order for {task_id}.",
        persona=Persona(name="Sam", role="agent", permissions=["orders.write"]),
        split=split,  # type: ignore[arg-type]
        category="multi_step_workflow",
        tags=["prerequisite"],
        intent=Intent(goal="close_order"),
        gold=GoldProgram(steps=[GoldStep(tool="get_order", arguments={"order_id": "ORD-1"})], reply="Closed."),
        assertions=[
            StateAssertion(description="closed", sql="SELECT status FROM orders WHERE id = 'ORD-1'",
                           expected=[["closed"]]),
            ResponseAssertion(description="says closed", must_include=[["closed"]]),
            ResponseAssertion(description="no ids", forbidden_patterns=["ORD-\\d+"]),
        ],
    )


def make_pack(seed: int = 0, *, parent: str | None = None, n_train: int = 3, n_heldout: int = 2,
              domain: str = DOMAIN) -> Pack:
    tasks = [make_task(f"t{seed}-train-{i}", "train") for i in range(n_train)]
    tasks += [make_task(f"t{seed}-heldout-{i}", "heldout") for i in range(n_heldout)]
    manifest = Manifest(
        parent=parent, domain=domain, schema_version=SCHEMA_VERSION, seed=seed, knobs={"near_duplicates": seed % 3},
        clock_start="2026-01-01T09:00:00", provenance={"generator": "tests", "version": 1}, created_by="tests",
    )
    pack = Pack(manifest=manifest, state_db=_state_db(seed), policy="Check eligibility first.\n", tools=[],
                graph={"directed": True, "multigraph": False, "graph": {}, "nodes": [], "edges": []},
                faults=[], tasks=sorted(tasks, key=lambda t: t.id))
    return with_content_id(pack)


def make_record(pack: Pack, task: Task, *, seed: int = 0, attempt: int = 0, passed: bool = True,
                steps: int = 8, agent: str = "reference", model_ref: str = "policy:v0") -> EpisodeRecord:
    trace = []
    for i in range(steps):
        ok = i % 5 != 3
        trace.append(TraceStep(
            index=i,
            tool="get_order" if i % 2 == 0 else "update_order",
            arguments={"order_id": f"ORD-{seed}-{i}", "status": "closed"},
            ok=ok,
            output={"id": f"ORD-{seed}-{i}", "status": "open", "total": 12.5 * i, "lines": [1, 2, 3]} if ok else None,
            error=None if ok else ToolErrorInfo(kind="fault", message="upstream timeout", retryable=True,
                                                fault="timeout"),
            clock=f"2026-01-01T09:{i:02d}:00",
            write=i % 2 == 1,
        ))
    results = [
        AssertionResult(index=0, kind="state", description="closed", passed=passed,
                        detail="" if passed else "expected [['closed']], got [['open']]"),
        AssertionResult(index=1, kind="trace", description="eligibility before close", passed=True),
        AssertionResult(index=2, kind="side_effects", description="write-set", passed=passed,
                        detail="" if passed else "orders ORD-2 changed"),
        AssertionResult(index=3, kind="response", description="says closed", passed=True),
    ]
    score = sum(r.passed for r in results) / len(results)
    verdict = Verdict(passed=passed, score=score, side_effect_penalty=0.0 if passed else 0.25, results=results,
                      changes=[RowChange(table="orders", key="ORD-1", op="update", columns=["status"])])
    return EpisodeRecord(
        episode_id=episode_id(pack.id, task.id, seed, attempt, agent),
        pack_id=pack.id, domain=pack.manifest.domain, task_id=task.id, split=task.split, category=task.category,
        tags=list(task.tags), seed=seed, attempt=attempt, agent=agent, model_ref=model_ref, trace=trace,
        reply="The order is closed." if passed else "I could not close it.", verdict=verdict,
        failure=None if passed else EpisodeFailure(boundary="agent", kind="gave_up", message="stopped after timeout"),
        tokens_in=900 + steps, tokens_out=120, cost=0.0012, latency_s=0.8, wall_time_s=1.1, turns=steps + 1,
    )


def records_for(pack: Pack, n: int, *, start: int = 0, attempts: int = 1) -> list[EpisodeRecord]:
    """Return ``n`` records cycling over the pack's tasks with increasing seeds."""
    out = []
    tasks = pack.tasks
    for k in range(start, start + n):
        task = tasks[k % len(tasks)]
        seed, attempt = divmod(k // len(tasks), attempts)
        out.append(make_record(pack, task, seed=seed, attempt=attempt, passed=k % 3 != 0))
    return out

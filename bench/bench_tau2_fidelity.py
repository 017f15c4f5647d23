"""τ²-bench fidelity: the same action sequences through our tools and through the packaged MCP servers' tools.

For each domain (airline, retail) it plays every task's gold actions and ``--perturbed`` perturbed sequences (wrong
ids, skipped writes, extra writes, swapped writes) twice, each on a fresh copy of τ²-bench's ``db.json``: through
the ``tau2-<domain>`` gym (our tools, through ``Gym.call_tool``) and through the packaged stdio MCP server
(``tau2-<domain>-mcp-eval``, its own implementation, over real stdio: ``reset_state`` then each tool with the
sequence's ``state_key``; its database is read from the file it persists for that key). It compares the two final
databases field by field and prints the agreement against the target of 1.000, with every difference (the action
sequence, the paths that differ and both values). Needs the ``tau2`` extra.

Usage:
    python -m bench.bench_tau2_fidelity [--domains airline retail] [--perturbed 32] [--seed 0] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.weakness import WeaknessKind
from arena.gyms import tau2_airline, tau2_retail
from arena.gyms.tau2_data import PACKAGES, read_files

CLASSES = (WeaknessKind.WRONG_ID, "skip", "extra_write", "swap")
"""The perturbation classes, drawn in turn (a wrong id is the weakness kind it injects)."""

WORLDS = {"airline": tau2_airline.world, "retail": tau2_retail.world}
ID_ARGUMENTS = {"airline": ("reservation_id", "user_id", "payment_id"),
                "retail": ("order_id", "user_id", "payment_method_id", "item_ids")}
"""The arguments of writes a ``wrong_id`` perturbation may change, per domain."""

Step = tuple[str, dict[str, Any]]


@dataclass
class Sequence:
    """One action sequence, played on a fresh world.

    Attributes:
        label: ``gold/<task>`` or ``<class>/<task>/<n>``.
        task_id: The task whose world (and state key) it plays.
        steps: The calls, in order.
        note: What the perturbation changed.
    """

    label: str
    task_id: str
    steps: list[Step]
    note: str = ""


@dataclass
class Outcome:
    """What one side made of a sequence: its final database and whether each call succeeded."""

    db: dict[str, Any]
    ok: list[bool] = field(default_factory=list)


def _writes(domain: str) -> set[str]:
    module = tau2_airline.tools if domain == "airline" else tau2_retail.tools
    return {name for name, t in vars(module).items() if getattr(getattr(t, "spec", None), "mode", "") == "write"}


def _gold(domain: str) -> list[Sequence]:
    return [Sequence(f"gold/{t['id']}", str(t["id"]),
                     [(a["name"], dict(a.get("arguments") or {})) for a in t["evaluation_criteria"]["actions"] or []])
            for t in read_files(domain).tasks]


def _ids(domain: str, db: dict[str, Any], argument: str) -> list[str]:
    """Existing ids of an argument's kind (payment methods of every user, items of every product)."""
    if argument in ("reservation_id", "order_id", "user_id"):
        collection = {"reservation_id": "reservations", "order_id": "orders", "user_id": "users"}[argument]
        return sorted(db[collection])
    if argument in ("payment_id", "payment_method_id"):
        return sorted({m for u in db["users"].values() for m in u["payment_methods"]})
    return sorted({i for p in db["products"].values() for i in p["variants"]})


def _perturbed(domain: str, gold: list[Sequence], count: int, seed: int) -> list[Sequence]:
    """``count`` perturbed sequences, the classes in turn, drawn from the tasks whose gold writes."""
    rng = random.Random(f"{seed}:{domain}")
    writes = _writes(domain)
    db = read_files(domain).db
    writing = [s for s in gold if any(name in writes for name, _ in s.steps)]
    out: list[Sequence] = []
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        kind = CLASSES[len(out) % len(CLASSES)]
        base = rng.choice(writing)
        steps = [(name, json.loads(json.dumps(args))) for name, args in base.steps]
        at = [i for i, (name, _) in enumerate(steps) if name in writes]
        note = ""
        if kind == WeaknessKind.WRONG_ID:
            i = rng.choice(at)
            name, args = steps[i]
            keys = [k for k in ID_ARGUMENTS[domain] if k in args]
            if not keys:
                continue
            key = rng.choice(keys)
            existing = rng.random() < 0.5
            if key == "item_ids":
                if not args[key]:
                    continue
                j = rng.randrange(len(args[key]))
                new = rng.choice(_ids(domain, db, key)) if existing else "0000000000"
                note = f"{name} item_ids[{j}]: {args[key][j]} -> {new}"
                args[key][j] = new
            else:
                new = rng.choice(_ids(domain, db, key)) if existing else f"missing_{key}"
                note = f"{name} {key}: {args[key]} -> {new}"
                args[key] = new
        elif kind == "skip":
            i = rng.choice(at)
            note = f"left out {steps[i][0]} (step {i})"
            del steps[i]
        elif kind == "extra_write":
            other = rng.choice(writing)
            extra = rng.choice([s for s in other.steps if s[0] in writes])
            note = f"added {extra[0]} of task {other.task_id}"
            steps.append((extra[0], json.loads(json.dumps(extra[1]))))
        else:
            pairs = [(a, b) for a, b in zip(at, at[1:], strict=False)]
            if not pairs:
                continue
            a, b = rng.choice(pairs)
            steps[a], steps[b] = steps[b], steps[a]
            note = f"swapped {steps[b][0]} (step {a}) and {steps[a][0]} (step {b})"
        out.append(Sequence(f"{kind}/{base.task_id}/{len(out)}", base.task_id, steps, note))
    return out


def ours(domain: str, pack: Pack, sequence: Sequence) -> Outcome:
    """The sequence through our tools: the gym of the task, seed 0."""
    with Gym(pack) as gym:
        gym.reset(sequence.task_id, seed=0)
        ok = [gym.call_tool(name, args).ok for name, args in sequence.steps]
        conn = sqlite3.connect(":memory:")
        conn.deserialize(gym.snapshot())
        try:
            return Outcome(WORLDS[domain].to_db(conn), ok)
        finally:
            conn.close()


async def theirs(domain: str, sequences: list[Sequence], state_dir: Path) -> list[Outcome]:
    """The sequences through the packaged MCP server's tools, over stdio, one state key each."""
    from mcp import Client, StdioServerParameters

    variable = f"TAU2_{domain.upper()}_MCP_STATE_DIR"
    params = StdioServerParameters(command=sys.executable, args=["-m", f"{PACKAGES[domain]}.server"],
                                   env={**os.environ, variable: str(state_dir)})
    out: list[Outcome] = []
    async with Client(params) as client:
        for sequence in sequences:
            key = f"tau2/{domain}/{sequence.task_id}/{sequence.label}"
            reset = await client.call_tool("reset_state", {"domain": domain, "task_id": sequence.task_id,
                                                           "state_key": key})
            if reset.is_error:
                raise RuntimeError(f"{domain} server refused reset_state for {key}: {reset.content}")
            ok = []
            for name, args in sequence.steps:
                answer = await client.call_tool(name, {**args, "state_key": key})
                text = getattr(answer.content[0], "text", "{}") if answer.content else "{}"
                payload = json.loads(text)
                ok.append(not answer.is_error and bool(payload.get("ok", True)))
            path = state_dir / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
            state = json.loads(path.read_text())
            path.unlink()
            out.append(Outcome(state["db"], ok))
    return out


def normal(value: Any) -> Any:
    """A value as τ²-bench's models see it: a field ``null`` is a field absent."""
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where two databases differ: (path, ours, theirs), paths in JSON-pointer style."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            out += differences(a.get(key), b.get(key), f"{path}/{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}/{i}")]
    return [] if a == b else [(path or "/", a, b)]


def run(domains: list[str], perturbed: int, seed: int) -> dict[str, Any]:
    """Play and compare every sequence of each domain; return the figures and the differences."""
    report: dict[str, Any] = {"target": 1.0, "domains": {}}
    for domain in domains:
        started = time.perf_counter()
        pack = build_pack(f"tau2-{domain}", seed=0)
        gold = _gold(domain)
        sequences = gold + _perturbed(domain, gold, perturbed, seed)
        mine = [ours(domain, pack, s) for s in sequences]
        with tempfile.TemporaryDirectory(prefix="tau2-fidelity-") as folder:
            other = asyncio.run(theirs(domain, sequences, Path(folder)))
        rows: dict[str, dict[str, int]] = {}
        listed = []
        calls = agreed_calls = 0
        for sequence, a, b in zip(sequences, mine, other, strict=True):
            group = "gold" if sequence.label.startswith("gold/") else "perturbed"
            counts = rows.setdefault(group, {"sequences": 0, "agree": 0})
            counts["sequences"] += 1
            diff = differences(normal(a.db), normal(b.db))
            calls += len(a.ok)
            agreed_calls += sum(x == y for x, y in zip(a.ok, b.ok, strict=True))
            if not diff:
                counts["agree"] += 1
                continue
            listed.append({"sequence": sequence.label, "note": sequence.note, "steps": sequence.steps,
                           "ok_ours": a.ok, "ok_theirs": b.ok,
                           "differences": [{"path": p, "ours": x, "theirs": y} for p, x, y in diff[:20]]})
        report["domains"][domain] = {"groups": rows, "calls": calls, "calls_agree": agreed_calls,
                                     "differences": listed, "seconds": round(time.perf_counter() - started, 1)}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", choices=("airline", "retail"), default=["airline", "retail"])
    parser.add_argument("--perturbed", type=int, default=32, help="perturbed sequences per domain")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the whole report (differences included) here")
    args = parser.parse_args()
    if args.perturbed < 0:
        parser.error(f"--perturbed {args.perturbed}: give 0 or more sequences")
    report = run(args.domains, args.perturbed, args.seed)
    for domain, figures in report["domains"].items():
        for group, counts in figures["groups"].items():
            share = counts["agree"] / counts["sequences"] if counts["sequences"] else 1.0
            print(f"{domain} {group}: databases agree on {counts['agree']}/{counts['sequences']} sequences = "
                  f"{share:.3f} (target {report['target']:.3f})")
        print(f"{domain} calls: success agrees on {figures['calls_agree']}/{figures['calls']} "
              f"({figures['seconds']} s)")
        for item in figures["differences"]:
            print(f"  DIFFERENT {item['sequence']} ({item['note'] or 'gold actions'}):")
            for d in item["differences"][:6]:
                print(f"    {d['path']}: ours {json.dumps(d['ours'])[:160]} | theirs {json.dumps(d['theirs'])[:160]}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()

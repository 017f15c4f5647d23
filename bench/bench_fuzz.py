"""Fuzz benchmark: seeded bad tool calls against every built-in gym.

Each call starts from a real call of a task's gold program and breaks it one way: wrong types, integers past
64 bits, non-finite numbers, huge or invalid-Unicode strings, deep nesting, missing or extra arguments, unknown
or non-string tool names, malformed JSON text. Targets (per gym, in one run): 0 uncaught exceptions (anything
``call_tool`` raises, a tool crash included), 0 world changes after a rejected call, and every trace step
serialisable. The anchor is the count the issue asks for: at least 100,000 calls per gym.

Run: ``python -m bench.bench_fuzz [--calls 100000] [--domain procurement] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

from arena.core.domains import available_domains
from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.core.task import Task

CALLS_TARGET = 100_000
RESET_EVERY = 40
"""Calls made in one episode before the next task's fresh world."""

_ODD_VALUES: list[Any] = [
    None, True, -1, 0, 2**63, -(2**63) - 1, 10**30, 1e308, -1e308, 0.1, "", " ", "x" * 20_000, "a\ud800b",
    "\udfff", "😀\u202e\u200f", "'; DROP TABLE x; --", "1 OR 1=1", "%s%s%n", "../../etc/passwd", [], {}, [None],
    {"$gt": ""}, "NaN", "2025-13-45", "-0", "Infinity",
]
_ODD_JSON = ['{"a": NaN}', '{"a": Infinity}', "[1, 2]", '"text"', "{", "", "null", '{"a": 1}{"b": 2}',
             "{" * 5_000 + "}" * 5_000, "[" * 100_000, '{"a": "\\ud800"}', '{"a": 1' + "0" * 5_000 + "}"]


@dataclass
class FuzzResult:
    """What one gym's fuzz run found."""

    domain: str
    calls: int = 0
    rejected: int = 0
    uncaught: list[str] = field(default_factory=list)
    world_changes: list[str] = field(default_factory=list)
    unserialisable: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"k": value} if depth % 2 else [value]
    return value


def bad_call(rng: random.Random, task: Task, tools: list[str]) -> tuple[Any, Any]:
    """One seeded bad call derived from a gold step of ``task``: (tool name, arguments)."""
    steps = task.gold.steps
    step = rng.choice(steps) if steps else None
    name: Any = step.tool if step else rng.choice(tools)
    args: dict[str, Any] = dict(step.arguments) if step else {}
    how = rng.randrange(9)
    if how == 0 and args:
        args[rng.choice(sorted(args))] = rng.choice(_ODD_VALUES)
    elif how == 1 and args:
        del args[rng.choice(sorted(args))]
    elif how == 2:
        args[rng.choice(["__extra__", "sudo", "id", "\ud800"])] = rng.choice(_ODD_VALUES)
    elif how == 3:
        return name, rng.choice(_ODD_JSON)
    elif how == 4:
        key = rng.choice(sorted(args)) if args else "x"
        args[key] = _nested(rng.choice([5, 15, 17, 40, 2_000]))
    elif how == 5:
        name = rng.choice([None, 7, ["get"], "", "get_\ud800", "x" * 5_000, rng.choice(tools).upper()])
    elif how == 6:
        return name, rng.choice([[args], "not json", 42, None])
    elif how == 7 and args:
        key = rng.choice(sorted(args))
        value = args[key]
        args[key] = [value] if not isinstance(value, list) else {"v": value}
    else:
        for key in sorted(args):
            if isinstance(args[key], (int, float)) and not isinstance(args[key], bool):
                args[key] = rng.choice([2**64, -(2**64), 1e309 if rng.random() < 0.5 else -1e9, 10**400])
    return name, args


def fuzz_domain(domain: str, calls: int, seed: int = 0) -> FuzzResult:
    """Make ``calls`` bad calls against ``domain``'s seed-0 pack and report what escaped."""
    pack = build_pack(domain, seed=0)
    rng = random.Random(f"fuzz|{domain}|{seed}")
    tools = sorted(s.name for s in pack.tools)
    result = FuzzResult(domain=domain)
    started = time.perf_counter()
    with Gym(pack) as gym:
        task = pack.tasks[0]
        for i in range(calls):
            if i % RESET_EVERY == 0:
                task = rng.choice(pack.tasks)
                gym.reset(task.id, seed=i)
            name, args = bad_call(rng, task, tools)
            before = gym.changed_rows()
            try:
                res = gym.call_tool(name, args)
            except Exception as exc:  # what the benchmark counts: anything escaping call_tool
                result.uncaught.append(f"{_label(task, name, args)}: {type(exc).__name__}: {str(exc)[:200]}")
                gym.reset(task.id, seed=i)
                continue
            result.calls += 1
            if not res.ok:
                result.rejected += 1
                if gym.changed_rows() != before:
                    result.world_changes.append(_label(task, name, args))
            try:
                gym.trace[-1].model_dump_json()
            except Exception as exc:  # an unserialisable trace step is a finding, not a crash
                result.unserialisable.append(f"{_label(task, name, args)}: {exc}")
    result.seconds = time.perf_counter() - started
    return result


def _label(task: Task, name: Any, args: Any) -> str:
    try:
        shown = json.dumps(args, default=repr)[:120]
    except (ValueError, RecursionError, UnicodeEncodeError):
        shown = "..."
    return f"{task.id}: {str(name)[:40]!r}({shown})"


def main() -> None:
    """Fuzz every built-in gym (or one) and print the counts against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=CALLS_TARGET)
    parser.add_argument("--domain", action="append")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    failed = False
    for domain in args.domain or available_domains():
        r = fuzz_domain(domain, args.calls, args.seed)
        total = r.calls + len(r.uncaught)
        ok = total >= CALLS_TARGET and not (r.uncaught or r.world_changes or r.unserialisable)
        failed |= not ok
        print(f"{domain}: {total:,} bad calls ({total / CALLS_TARGET:.2f}x the {CALLS_TARGET:,} target), "
              f"{r.rejected:,} rejected, {len(r.uncaught)} uncaught exceptions, {len(r.world_changes)} world "
              f"changes after a rejected call, {len(r.unserialisable)} unserialisable trace steps, "
              f"{total / r.seconds:,.0f} calls/s -> {'ok' if ok else 'FAILED'}")
        for finding in (r.uncaught + r.world_changes + r.unserialisable)[:5]:
            print("   ", finding)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()

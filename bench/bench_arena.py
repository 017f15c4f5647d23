"""Arena runtime benchmark: reset, tool call, verification and gold-episode throughput.

Prints, for every built-in gym, in one run:

- reset p50/p99 after a gold episode (the reset puts back the rows the episode changed) next to the memcpy
  floor of the same template bytes, what restoring the whole world cannot beat (target: p50 within 3x the floor;
  the anchor to beat is a container start, ~570 ms); a reset of an untouched world is printed beside it;
- a read tool call p50 including validation and trace (target <= 20 us);
- verification p50 per episode with every reply rule on (target <= 150 us), beside the same verification with the
  reply rules off (the tasks' response checks as written, before ``guard_replies`` adds the id rule, the length
  limit and the claim rule: the rules' own cost is the difference);
- gold-agent episodes per second on one core, rules on (target >= 2,000) and off.

Each verification sample is of a fresh reply object that no cache has seen (the reply is rebuilt from its
characters), so nothing keyed on the reply's text serves a repeated gold reply.

Run: ``python -m bench.bench_arena [--domain helpdesk] [--repeats 5000]``
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import statistics
import time
from collections.abc import Callable

from arena.checks.conformance import run_gold
from arena.core.domains import available_domains
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.task import ResponseAssertion, Task

CONTAINER_START_S = 0.570
RESET_RATIO_TARGET = 3.0
READ_CALL_TARGET_S = 20e-6
VERIFY_TARGET_S = 150e-6
EPISODES_TARGET = 2000.0


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.99) - 1]


def _time_each(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    clock = time.perf_counter
    for _ in range(repeats):
        start = clock()
        fn()
        out.append(clock() - start)
    return out


def rules_off(pack: Pack) -> Pack:
    """``pack`` with its reply rules off: each response check without the id rule, length limit and claim rule."""

    def bare(task: Task) -> Task:
        assertions = [a.model_copy(update={"id_pattern": None, "allowed_ids": [], "max_chars": None,
                                           "change_claims": None}) if isinstance(a, ResponseAssertion) else a
                      for a in task.assertions]
        return task.model_copy(update={"assertions": assertions})

    return dataclasses.replace(pack, tasks=[bare(t) for t in pack.tasks])


def _fresh(reply: str) -> str:
    """The same reply as a new string object (``"".join`` of its characters): no cache keyed on it has seen it."""
    return "".join(list(reply))


def verify_samples(gym: Gym, pack: Pack, count: int) -> list[float]:
    """Seconds of ``gym.verify`` after each task's gold program, over ``count`` episodes."""
    samples: list[float] = []
    for i in range(count):
        t = pack.tasks[i % len(pack.tasks)]
        gym.reset(t.id)
        for step in t.gold.steps:
            gym.call_tool(step.tool, step.arguments)
        reply = _fresh(t.gold.reply)
        start = time.perf_counter()
        gym.verify(reply)
        samples.append(time.perf_counter() - start)
    return samples


def gold_rate(gym: Gym, pack: Pack, seconds: float = 2.0) -> float:
    """Gold episodes per second on one core (reset, gold program, verify)."""
    episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for t in pack.tasks:
            run_gold(gym, t)
            episodes += 1
    return episodes / (time.perf_counter() - start)


def bench_domain(domain: str, repeats: int) -> dict[str, float]:
    """Measure one built-in gym and return its figures in seconds (and episodes per second)."""
    pack = build_pack(domain, seed=0)
    gym = Gym.from_pack(pack)
    template = gym.template_bytes
    buffer = ctypes.create_string_buffer(len(template))
    floor = _time_each(lambda: ctypes.memmove(buffer, template, len(template)), repeats)
    task = pack.tasks[0]
    untouched = _time_each(lambda: gym.reset(task.id, seed=0), repeats)
    reset: list[float] = []
    for i in range(repeats):
        played = pack.tasks[i % len(pack.tasks)]
        run_gold(gym, played)
        start = time.perf_counter()
        gym.reset(task.id, seed=0)
        reset.append(time.perf_counter() - start)

    read_step = next(s for t in pack.tasks for s in t.gold.steps
                     if next(x for x in pack.tools if x.name == s.tool).operation == "get")
    print(f"   read call measured: {read_step.tool}({read_step.arguments})")
    owner = next(t for t in pack.tasks if read_step in t.gold.steps)
    gym.reset(owner.id)

    def read_call() -> None:
        gym.call_tool(read_step.tool, read_step.arguments)

    calls = _time_each(read_call, repeats)
    tool = gym.domain.tools[read_step.tool]
    validated = dict(tool.args_model.model_validate(read_step.arguments).__dict__)
    ctx = gym._ctx

    def tool_body() -> None:
        tool.fn(ctx, **validated)

    bodies = _time_each(tool_body, repeats)

    bare = rules_off(pack)
    bare_gym = Gym(bare, gym.domain)
    count = min(repeats, 2000)
    verify_on, verify_off = verify_samples(gym, pack, count), verify_samples(bare_gym, bare, count)
    rate, rate_off = gold_rate(gym, pack), gold_rate(bare_gym, bare)
    bare_gym.close()
    gym.close()
    floor_p50, _ = _percentiles(floor)
    reset_p50, reset_p99 = _percentiles(reset)
    return {
        "bytes": float(len(template)),
        "floor_p50": floor_p50,
        "reset_p50": reset_p50,
        "reset_p99": reset_p99,
        "untouched_p50": _percentiles(untouched)[0],
        "call_p50": _percentiles(calls)[0],
        "body_p50": _percentiles(bodies)[0],
        "verify_p50": _percentiles(verify_on)[0],
        "verify_off_p50": _percentiles(verify_off)[0],
        "episodes_per_s": rate,
        "episodes_off_per_s": rate_off,
    }


def main() -> None:
    """Run the benchmark over the chosen gyms and print one block per gym."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", action="append", help="gym to measure (default: all built-in gyms)")
    parser.add_argument("--repeats", type=int, default=5000)
    args = parser.parse_args()
    for domain in args.domain or available_domains():
        f = bench_domain(domain, args.repeats)
        us = 1e6
        print(f"== {domain}: template {f['bytes'] / 1024:.0f} KiB")
        print(f"reset after a gold episode p50 {f['reset_p50'] * us:.1f} us, p99 {f['reset_p99'] * us:.1f} us "
              f"(untouched world {f['untouched_p50'] * us:.1f} us); memcpy floor p50 "
              f"{f['floor_p50'] * us:.1f} us -> {f['reset_p50'] / f['floor_p50']:.2f}x floor "
              f"(target <= {RESET_RATIO_TARGET:.0f}x); container start {CONTAINER_START_S * 1e3:.0f} ms -> "
              f"{CONTAINER_START_S / f['reset_p50']:,.0f}x faster")
        runtime = f["call_p50"] - f["body_p50"]
        print(f"read tool call p50 {f['call_p50'] * us:.1f} us (target <= {READ_CALL_TARGET_S * us:.0f} us, "
              f"{f['call_p50'] / READ_CALL_TARGET_S:.2f}x of target): tool body {f['body_p50'] * us:.1f} us + "
              f"runtime (validation, permission, fault check, read guard, trace) {runtime * us:.1f} us")
        print(f"verify p50, reply rules on {f['verify_p50'] * us:.1f} us (target <= {VERIFY_TARGET_S * us:.0f} us, "
              f"{f['verify_p50'] / VERIFY_TARGET_S:.2f}x of target); rules off {f['verify_off_p50'] * us:.1f} us "
              f"(the rules cost {(f['verify_p50'] - f['verify_off_p50']) * us:.1f} us)")
        print(f"gold episodes, rules on {f['episodes_per_s']:,.0f}/s on one core (target >= {EPISODES_TARGET:,.0f}, "
              f"{f['episodes_per_s'] / EPISODES_TARGET:.2f}x of target); rules off {f['episodes_off_per_s']:,.0f}/s")


if __name__ == "__main__":
    main()

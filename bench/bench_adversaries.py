"""How many tasks each adversarial agent passes, per gym: the floor is 0.

Grid (declared before it runs): every built-in gym (helpdesk, tracker, procurement) at pack seeds 0, 1 and 2,
every task of each pack, every adversary of ``arena.checks.adversarial`` at episode seed 0; with ``--variants N``
also N generated variants per gym (the local factory's untargeted knobs at complexity 2, seeds 1000..), every
task of each. Prints, per adversary and gym, the tasks it passes against those it applies to, and the careful
reference policy's passes (it must pass every task) as the ceiling an honest agent reaches.

This benchmark was written beside the rules it measures (not independent of them): the adversaries play from
the observation alone, but their author also wrote the reply rules.

Run: ``python -m bench.bench_adversaries [--domain helpdesk] [--seeds 0 1 2] [--variants 2] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.checks.adversarial import ADVERSARIES, audit_task
from arena.core.domains import get_domain
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack

DOMAINS = ("helpdesk", "tracker", "procurement")
"""The gyms of the grid."""

COMPLEXITY = 2
"""Complexity of the generated variants."""


def variant_packs(domain: str, count: int) -> list[Pack]:
    """``count`` variants of ``domain`` with the local factory's untargeted knobs (complexity layers on)."""
    from factory_client._synth import variant_knobs
    from factory_client.protocol import VariantRequest

    request = VariantRequest(domain=domain, targets=[], variants=count, complexity=COMPLEXITY)
    knobs = variant_knobs(request, None, get_domain(domain), set(), 2)
    return [build_pack(domain, seed=1000 + index, knobs=knobs) for index in range(count)]


def audit_packs(packs: list[Pack]) -> tuple[Counter[str], Counter[str], int, int]:
    """Passes and applicable tasks per adversary, the careful policy's passes and the tasks audited."""
    passed: Counter[str] = Counter()
    applies: Counter[str] = Counter()
    expert = tasks = 0
    for pack in packs:
        with Gym(pack) as gym:
            for task in pack.tasks:
                tasks += 1
                for result in audit_task(gym, task):
                    applies[result.adversary] += int(result.applies)
                    passed[result.adversary] += int(result.passed or bool(result.crash))
                observation = gym.reset(task.id, seed=0)
                run = ReferencePolicy(PolicyParams.expert()).run_episode(observation, gym.call_tool, seed=0)
                expert += int(gym.verify(run.reply).passed)
    return passed, applies, expert, tasks


def main() -> None:
    """Run the grid and print the passes per adversary and gym."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", action="append", choices=DOMAINS, help="only this gym (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="pack seeds of the built-in gyms")
    parser.add_argument("--variants", type=int, default=0, help="generated variants per gym")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    domains = args.domain or list(DOMAINS)
    grids = {d: [build_pack(d, seed=s) for s in args.seeds] for d in domains}
    if args.variants:
        grids.update({f"{d} variants": variant_packs(d, args.variants) for d in domains})
    print(f"grid: {', '.join(grids)}; pack seeds {args.seeds}; {args.variants} variants per gym; "
          f"{len(ADVERSARIES)} adversaries; episode seed 0", flush=True)
    out: dict[str, dict[str, object]] = {}
    total = 0
    started = time.perf_counter()
    for name, packs in grids.items():
        passed, applies, expert, tasks = audit_packs(packs)
        total += sum(passed.values())
        out[name] = {"tasks": tasks, "expert_passes": expert, "passed": dict(passed), "applies": dict(applies)}
        print(f"{name}: {tasks} tasks, the careful policy passes {expert} ({expert / tasks:.3f}; target 1.000)",
              flush=True)
        for adversary in ADVERSARIES:
            print(f"  {adversary:<18} passes {passed[adversary]:>4} of {applies[adversary]:>4} tasks it applies to"
                  f" (target 0)", flush=True)
    print(f"all adversaries, all grids: {total} passes (target 0); {time.perf_counter() - started:.0f} s")
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()

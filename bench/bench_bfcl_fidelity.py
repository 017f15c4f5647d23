"""BFCL multi-turn fidelity: BFCL's own checker and the gym's verdict judge the same trajectories; the floor is 0.99.

Grid (declared in docs/benchmarks.md before it ran): every entry of BFCL v4's four multi-turn categories (800 with
``--categories`` left as is); per entry its gold trajectory (BFCL's ground truth, turn by turn) and four perturbed
ones, each drawn from ``Random(f"{seed}:{entry id}:{kind}")``: ``wrong_argument`` (one argument of one ground-truth
call changed: text gets ``_x`` appended, a number 1 added, a boolean flipped, a list its last item dropped),
``skipped_call`` (one call left out), ``extra_call`` (one call made twice in a row), ``wrong_order`` (two adjacent
calls of one turn swapped; entries with no turn of two calls have none); and the reference policy's trajectories
(the careful parameters and the untrained ones, episode seed 0) played through gymloop's episode loop on the given
turns. A trajectory is the calls of each turn; BFCL's checker runs them through BFCL's classes (as its evaluation
runner does, a trajectory that played fewer turns than the entry fails as force-terminated), gymloop's verdict
through the gym's own tools. Each pair agrees when both pass or both fail. Prints agreement per trajectory kind,
overall against the 0.99 floor, and every disagreement with both sides' reasons.

BFCL's checker keeps state between calls in one process (class instances by name in a module's globals, and
``post_tweet``'s default lists, which every tweet posted without tags or mentions shares); each trajectory is judged
as in a fresh process: its instances are dropped afterwards and those default lists are new. Transaction timestamps
of BFCL's trading class follow the machine's time zone: the bench runs in UTC.

Run: ``python -m bench.bench_bfcl_fidelity [--categories base miss_func miss_param long_context] [--limit N]
[--seed 0] [--no-policy] [--json]`` (needs the ``bfcl`` extra).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Call = tuple[str, dict[str, Any]]
Trajectory = list[list[Call]]

FLOOR = 0.99
"""The agreement the gym's verdict must reach with BFCL's checker."""

KINDS = ("gold", "wrong_argument", "skipped_call", "extra_call", "wrong_order")
"""The trajectory kinds drawn from the ground truth."""


@dataclass
class Judged:
    """One trajectory judged both ways."""

    entry: str
    kind: str
    bfcl: bool
    ours: bool
    bfcl_reason: str = ""
    our_reason: str = ""
    calls: Trajectory = field(default_factory=list)

    @property
    def agree(self) -> bool:
        """Whether both verdicts are the same."""
        return self.bfcl == self.ours


def _perturb_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list) and value:
        return value[:-1]
    return None


def perturb(gold: Trajectory, kind: str, rng: random.Random) -> Trajectory | None:
    """A perturbed copy of ``gold`` (``None`` when the kind does not apply to it)."""
    turns = copy.deepcopy(gold)
    spots = [(t, i) for t, calls in enumerate(turns) for i in range(len(calls))]
    if kind == "gold":
        return turns
    if not spots:
        return None
    if kind == "wrong_argument":
        options = [(t, i, name) for t, i in spots for name, v in turns[t][i][1].items()
                   if _perturb_value(v) is not None]
        if not options:
            return None
        t, i, name = rng.choice(options)
        turns[t][i][1][name] = _perturb_value(turns[t][i][1][name])
    elif kind == "skipped_call":
        t, i = rng.choice(spots)
        del turns[t][i]
    elif kind == "extra_call":
        t, i = rng.choice(spots)
        turns[t].insert(i + 1, copy.deepcopy(turns[t][i]))
    elif kind == "wrong_order":
        pairs = [(t, i) for t, i in spots if i + 1 < len(turns[t])]
        if not pairs:
            return None
        t, i = rng.choice(pairs)
        turns[t][i], turns[t][i + 1] = turns[t][i + 1], turns[t][i]
    return turns


class BfclJudge:
    """BFCL's multi-turn checker on a trajectory, each trajectory as in a fresh process."""

    def __init__(self) -> None:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
        from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI

        self.checker = multi_turn_checker.multi_turn_checker
        self.utils = multi_turn_utils
        self.twitter = TwitterAPI
        self.count = 0

    def judge(self, entry: Any, turns: Trajectory, played: int) -> tuple[bool, str]:
        """BFCL's verdict on the calls of each turn (``played``: the user turns the trajectory reached)."""
        from arena.gyms.bfcl.calls import render_call

        self.count += 1
        name = f"fidelity{self.count}"
        self.twitter.post_tweet.__defaults__ = ([], [])
        if played != len(entry.gold):
            return False, "multi_turn:force_terminated"
        decoded = [[[render_call(tool, args) for tool, args in calls]] if calls else [] for calls in turns]
        test_entry = {"id": entry.id, "initial_config": copy.deepcopy(entry.initial_config),
                      "involved_classes": list(entry.involved_classes)}
        try:
            result = self.checker(decoded, entry.gold, test_entry, entry.id.rsplit("_", 1)[0], name)
        finally:
            for key in [k for k in vars(self.utils) if k.startswith(name + "_")]:
                delattr(self.utils, key)
        if result["valid"]:
            return True, ""
        return False, f"{result.get('error_type', '')}: {result.get('error_message', '')}"[:300]


def our_verdict(gym: Any, task: Any, turns: Trajectory) -> tuple[bool, str]:
    """Play a trajectory's calls turn by turn through the gym and judge it."""
    gym.reset(task.id, seed=0)
    for k, given in enumerate(task.conversation.user.turns):
        gym.record_turn("user", given.text)
        for tool, args in turns[k] if k < len(turns) else []:
            gym.call_tool(tool, args)
        gym.record_turn("agent", "Done.")
    gym.end_conversation("given_turns_done")
    verdict = gym.verify("Done.")
    return verdict.passed, "; ".join(r.detail for r in verdict.results if not r.passed)[:300]


def gold_trajectory(task: Any) -> Trajectory:
    """A task's gold program as the calls of each turn."""
    turns: Trajectory = [[] for _ in task.conversation.user.turns]
    for step in task.gold.steps:
        turns[step.turn or 0].append((step.tool, dict(step.arguments)))
    return turns


def policy_trajectories(pack: Any, judge: BfclJudge, entries: dict[str, Any],
                        record: Callable[[Judged], None]) -> None:
    """The reference policy's plays of every task (careful and untrained parameters), judged both ways."""
    from arena.agents.reference import PolicyParams, ReferencePolicy
    from arena.core.conversation import turn_of
    from arena.rollout import RolloutConfig, run_rollouts

    for label, params in (("policy_expert", PolicyParams.expert()), ("policy_initial", PolicyParams.initial())):
        for episode in run_rollouts(ReferencePolicy(params), [pack], RolloutConfig(seeds=[0], k=1)):
            said = sum(1 for t in episode.conversation if t.role == "user")
            turns: Trajectory = [[] for _ in range(said)]
            for step in episode.trace:
                k = turn_of(episode.conversation, step.index)
                if 0 <= k < said:
                    turns[k].append((step.tool, dict(step.arguments)))
            entry = entries[episode.task_id]
            bfcl, why = judge.judge(entry, turns, said)
            failed = [r.detail for r in episode.verdict.results if not r.passed] if episode.verdict else ["no verdict"]
            record(Judged(entry=entry.id, kind=label, bfcl=bfcl, ours=bool(episode.verdict and episode.verdict.passed),
                          bfcl_reason=why, our_reason="; ".join(failed)[:300], calls=turns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--categories", nargs="+", default=["base", "miss_func", "miss_param", "long_context"])
    parser.add_argument("--limit", type=int, default=None, help="entries per category (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-policy", action="store_true", help="leave out the reference policy's trajectories")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ["TZ"] = "UTC"
    time.tzset()

    from arena.core.gym import Gym
    from arena.core.pack import build_pack
    from arena.gyms.bfcl import DOMAIN
    from arena.gyms.bfcl.data import load_entries
    from arena.gyms.bfcl.tasks import task_id

    started = time.perf_counter()
    entries = {task_id(e): e for c in args.categories for e in load_entries(c)[:args.limit]}
    pack = build_pack(DOMAIN, seed=0, knobs={"categories": args.categories})
    pack = pack.__class__(manifest=pack.manifest, state_db=pack.state_db, policy=pack.policy, tools=pack.tools,
                          graph=pack.graph, faults=pack.faults, tasks=[t for t in pack.tasks if t.id in entries])
    judge = BfclJudge()
    judged: list[Judged] = []
    with Gym(pack, DOMAIN) as gym:
        for task in pack.tasks:
            entry = entries[task.id]
            gold = gold_trajectory(task)
            for kind in KINDS:
                turns = perturb(gold, kind, random.Random(f"{args.seed}:{entry.id}:{kind}"))
                if turns is None:
                    continue
                bfcl, bfcl_why = judge.judge(entry, turns, len(turns))
                ours, our_why = our_verdict(gym, task, turns)
                judged.append(Judged(entry=entry.id, kind=kind, bfcl=bfcl, ours=ours, bfcl_reason=bfcl_why,
                                     our_reason=our_why, calls=turns))
    if not args.no_policy:
        policy_trajectories(pack, judge, entries, judged.append)
    elapsed = time.perf_counter() - started
    return report(judged, elapsed, args.json)


def report(judged: list[Judged], elapsed: float, as_json: bool) -> int:
    kinds = list(dict.fromkeys(j.kind for j in judged))
    rows = []
    for kind in kinds:
        of = [j for j in judged if j.kind == kind]
        rows.append({"kind": kind, "trajectories": len(of), "agree": sum(j.agree for j in of),
                     "both_pass": sum(j.bfcl and j.ours for j in of),
                     "both_fail": sum(not j.bfcl and not j.ours for j in of),
                     "bfcl_only_passes": sum(j.bfcl and not j.ours for j in of),
                     "ours_only_passes": sum(j.ours and not j.bfcl for j in of)})
    agree = sum(j.agree for j in judged)
    ratio = agree / len(judged) if judged else 0.0
    disagreements = [{"entry": j.entry, "kind": j.kind, "bfcl": j.bfcl, "ours": j.ours, "bfcl_reason": j.bfcl_reason,
                      "our_reason": j.our_reason} for j in judged if not j.agree]
    if as_json:
        print(json.dumps({"trajectories": len(judged), "agree": agree, "agreement": ratio, "floor": FLOOR,
                          "by_kind": rows, "disagreements": disagreements, "seconds": round(elapsed, 1)}, indent=2))
    else:
        print(f"{'kind':<16}{'trajectories':>13}{'agree':>7}{'both pass':>11}{'both fail':>11}{'BFCL only':>11}"
              f"{'ours only':>11}")
        for r in rows:
            print(f"{r['kind']:<16}{r['trajectories']:>13}{r['agree']:>7}{r['both_pass']:>11}{r['both_fail']:>11}"
                  f"{r['bfcl_only_passes']:>11}{r['ours_only_passes']:>11}")
        print(f"agreement {agree}/{len(judged)} = {ratio:.4f} (floor {FLOOR}: ratio {ratio / FLOOR:.3f}) "
              f"in {elapsed:.0f} s")
        for d in disagreements:
            print(f"DISAGREE {d['entry']} {d['kind']}: BFCL {'pass' if d['bfcl'] else 'fail'} ({d['bfcl_reason']}) / "
                  f"gym {'pass' if d['ours'] else 'fail'} ({d['our_reason']})")
    return 0 if ratio >= FLOOR else 1


if __name__ == "__main__":
    sys.exit(main())

"""Offline transfer: the reference policy trained by gymloop campaigns in its own gyms, measured on τ²-bench and BFCL.

Each seed runs one real campaign (``flows.campaign``: Prefect flows, the SQLite registry, a local MLflow store, the
local factory) in ``tracker`` and ``procurement`` from the untrained reference policy, with ``tau2-retail``,
``tau2-airline`` (scripted user) and ``bfcl-multi-turn`` as transfer suites: every round plays their held-out
splits with the model it starts from and the model it trains (``flows.transfer``), never training, diagnosing or
varying them. Printed per seed and suite: pass rate before -> after over the campaign and the lift with its paired
95 % interval; per suite over the seeds: the mean lift and the paired interval with each seed's tasks as their own
units; the in-gym lift beside; and the transfer the CoreCraft paper reports for a GRPO-trained model, as an anchor.

The grid is declared in docs/benchmarks.md ("Offline transfer"). Run::

    python -m bench.bench_transfer --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

SUITES = ("tau2-retail", "tau2-airline", "bfcl-multi-turn")
"""The transfer suites, in the order printed."""

ANCHORS = {"tau2-retail": 0.074, "bfcl-multi-turn": 0.045}
"""Transfer the CoreCraft paper reports for its GRPO run (relative gains), printed as anchors only."""

GRID: dict[str, Any] = {
    "domains": ["tracker", "procurement"], "reference_start": "untrained", "trainer": "builtin",
    "wave_budget": 240, "train_k": 4, "variants_per_round": 1, "tasks_per_variant": 6, "eval_k": 1,
    "eval_seeds": [0], "transfer_suites": list(SUITES), "transfer_tasks": 640,
}
"""The declared grid's settings (besides ``seed`` and the rounds)."""


def _quiet() -> None:
    from flows._offline import apply_offline_defaults

    apply_offline_defaults()
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")


def run_seed(seed: int, rounds: int, tasks: int) -> dict[str, Any]:
    """Run one seed's campaign; return its summaries' figures and the transfer episodes' outcomes of both ends."""
    from flows.campaign import campaign
    from flows.models import CampaignParams
    from flows.outcomes import outcomes, stage_model
    from flows.registry_access import open_registry
    from flows.report import campaign_summaries
    from flows.rollouts import EVAL_AFTER
    from flows.settings import load_settings
    from flows.transfer import TRANSFER_AFTER, TRANSFER_BEFORE, campaign_results

    overrides = {**GRID, "seed": seed, "transfer_tasks": tasks, "max_rounds": rounds}
    name = f"transfer-seed{seed}"
    started = time.perf_counter()
    campaign(CampaignParams(campaign=name, rounds=rounds, overrides=overrides))
    seconds = time.perf_counter() - started
    settings = load_settings(**overrides)
    registry = open_registry(settings)
    summaries = campaign_summaries(registry, name)
    first, last = summaries[0], summaries[-1]
    before = outcomes(registry, first.round_id, TRANSFER_BEFORE,
                      stage_model(registry, first.round_id, TRANSFER_BEFORE))
    after = outcomes(registry, last.round_id, TRANSFER_AFTER, stage_model(registry, last.round_id, EVAL_AFTER))
    return {"seed": seed, "seconds": round(seconds, 1),
            "in_gym": {"before": first.before, "after": last.after,
                       "rounds": [[s.lift, s.lift_low, s.lift_high] for s in summaries]},
            "transfer": [r.model_dump(mode="json") for r in campaign_results(registry, summaries, seed)],
            "before": before, "after": after}


def pooled(runs: list[dict[str, Any]], suite: str) -> dict[str, float]:
    """A suite's lift over every seed's tasks (each seed's task its own unit), with its paired interval."""
    from arena.core.metrics import compute_metrics, paired_lift

    def tagged(side: str) -> list[Any]:
        return [o.model_copy(update={"pack_id": f"{run['seed']}/{o.pack_id}"}) for run in runs for o in run[side]
                if o.domain == suite]

    before, after = tagged("before"), tagged("after")
    lift = paired_lift(before, after)
    lifts = [r["lift"] for run in runs for r in run["transfer"] if r["suite"] == suite]
    rate_before = compute_metrics(before, rounds=1).pass_rate.value
    rate_after = compute_metrics(after, rounds=1).pass_rate.value
    return {"mean_lift": sum(lifts) / len(lifts) if lifts else 0.0, "before": rate_before, "after": rate_after,
            "relative": rate_after / rate_before - 1 if rate_before else 0.0, "lift": lift.value, "low": lift.low,
            "high": lift.high}


def main() -> None:
    """Run the declared grid and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=640, help="transfer_tasks: held-out tasks per suite at most")
    parser.add_argument("--home", type=Path, default=None, help="gymloop home (default: a new temporary folder)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="gymloop-transfer-"))
    for key in [k for k in os.environ if k.startswith("GYMLOOP_")]:
        del os.environ[key]
    os.environ["GYMLOOP_HOME"] = str(home)
    _quiet()
    started = time.perf_counter()
    runs = [run_seed(seed, args.rounds, args.tasks) for seed in args.seeds]
    figures = {"grid": {**GRID, "transfer_tasks": args.tasks, "rounds": args.rounds, "seeds": args.seeds},
               "home": str(home), "seconds": round(time.perf_counter() - started, 1),
               "seeds": [{k: v for k, v in run.items() if k not in ("before", "after")} for run in runs],
               "suites": {suite: pooled(runs, suite) for suite in SUITES}}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    _print(figures)


def _print(figures: dict[str, Any]) -> None:
    grid = figures["grid"]
    print(f"offline transfer: reference policy ({grid['reference_start']}) trained {grid['rounds']} rounds in "
          f"{', '.join(grid['domains'])}; seeds {grid['seeds']}; {figures['seconds']:.0f} s; home {figures['home']}")
    print("| seed | suite | tasks | before | after | lift | 95% paired interval | in-gym lift (campaign) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |")
    for run in figures["seeds"]:
        gym = run["in_gym"]
        for r in run["transfer"]:
            print(f"| {run['seed']} | {r['suite']} | {r['tasks']} | {r['before']:.3f} | {r['after']:.3f} | "
                  f"{r['lift']:+.3f} | [{r['lift_low']:+.3f}, {r['lift_high']:+.3f}] | "
                  f"{gym['after'] - gym['before']:+.3f} ({gym['before']:.3f} -> {gym['after']:.3f}) |")
    print()
    print("| suite | pooled before -> after | mean lift over seeds | pooled lift | 95% paired interval | relative "
          "change | anchor: CoreCraft's GRPO model, relative (ratio) |")
    print("| --- | --- | ---: | ---: | --- | ---: | --- |")
    for suite, s in figures["suites"].items():
        anchor = ANCHORS.get(suite)
        shown = f"{anchor:+.1%} ({s['relative'] / anchor:+.2f})" if anchor else "none reported"
        print(f"| {suite} | {s['before']:.3f} -> {s['after']:.3f} | {s['mean_lift']:+.3f} | {s['lift']:+.3f} | "
              f"[{s['low']:+.3f}, {s['high']:+.3f}] | {s['relative']:+.1%} | {shown} |")


if __name__ == "__main__":
    main()

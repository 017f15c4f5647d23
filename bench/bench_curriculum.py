"""Curriculum benchmark: does targeting earn its keep? The grid declared anew in docs/benchmarks.md (issue 36).

Grid: transfer {0, 0.25, 0.5, 0.75, 1} x failure concentration {even, concentrated} x held-out suite {covered by
the pool, with a gap the pool lacks} x the builtin trainer's credit {episode, decision}, 20 seeds per cell, the
targeted and uniform arms on the same budget from the same starting model (``bench.curriculum_arms``; the
targeted arm plans each round on a round's own code path). Reported per cell: held-out pass rate per round per
arm, and R = the training episodes the targeted arm's seed-mean curve needs to reach uniform's seed-mean final
pass rate over uniform's own, with a paired bootstrap interval over seeds.

Judged: the concentrated cells with credit ``decision``; met when R <= 0.33 and the interval's upper end <= 0.5
(when uniform never rises: targeted's final above uniform's, the interval of the difference above 0). The script
exits 1 when a judged cell misses or was not run. Every other cell is printed, not judged.

Run: ``python -m bench.bench_curriculum [--cells 0.5:concentrated:gap:decision ...] [--credit decision]
[--json F]``; pieces: ``python -m bench.bench_curriculum --merge A.json B.json``. The starting pass rate alone, at
several draws of the agent (seconds, no round): ``--start-draws N``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arena.agents.reference import CONTEXTS, PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.metrics import compute_metrics
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from bench.curriculum_arms import ARMS, ArmResult, Cell, LoopSettings
from curriculum import task_refs
from factory_client import LocalFactory

DOMAINS = ("helpdesk", "procurement")
TRANSFERS = (0.0, 0.25, 0.5, 0.75, 1.0)
CONCENTRATIONS = ("even", "concentrated")
HELDOUT = ("covered", "gap")
CREDITS = ("decision", "episode")
DECLARED_ARMS = ("targeted", "uniform")
DECLARED = {"seeds": 20, "rounds": 4, "budget": 24}
"""The declared run's seeds, rounds and training episodes per round; anything else is a look, not the verdict."""
EVEN_SLIP, SHARED_SLIP, WEAK_SLIP, WEAK_GRAINS = 0.35, 0.05, 0.9, 4
GRAIN_KEYS = ("prerequisite|strong", "format|date", "format|money", "format|code", "pick_candidate|several",
              "resolve_text|plain", "resolve_text|hinted")
"""Decision keys a weak grain is drawn from (those whose failures a detector attributes to a tool)."""
RATIO_TARGET, UPPER_TARGET = 0.33, 0.5
RESAMPLES = 2000
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
START, END = "<!-- curriculum-grid-36:start -->", "<!-- curriculum-grid-36:end -->"


@dataclass(frozen=True)
class CellKey:
    """One grid cell."""

    transfer: float
    concentration: str
    heldout: str
    credit: str

    @property
    def judged(self) -> bool:
        """Judged cells: concentrated failures, with per-decision credit."""
        return self.concentration == "concentrated" and self.credit == "decision"

    def label(self) -> str:
        """``transfer:concentration:heldout:credit``."""
        return f"{self.transfer:g}:{self.concentration}:{self.heldout}:{self.credit}"


def every_cell() -> list[CellKey]:
    """The grid in the declared order: credit decision first, concentrated first, transfer 0, 0.5, 1, 0.25, 0.75."""
    order = (0.0, 0.5, 1.0, 0.25, 0.75)
    return [CellKey(t, c, h, credit) for credit in CREDITS for c in reversed(CONCENTRATIONS) for t in order
            for h in HELDOUT]


def _suite(base: list[Pack], eval_seeds: list[int]) -> tuple[list[EpisodeKey], list[EpisodeRecord]]:
    """Held-out episodes the expert passes, and the expert's records on them (the grains the suite exercises)."""
    keys = [EpisodeKey(p.id, t.id, s, 0) for p in base for t in p.tasks if t.split == "heldout" for s in eval_seeds]
    runs = run_episodes(ReferencePolicy(PolicyParams.expert()), base, keys, RolloutConfig())
    passed = [r for r in runs if r.passed]
    return [EpisodeKey(r.pack_id, r.task_id, r.seed, 0) for r in passed], passed


def _weak_grains(expert_runs: list[EpisodeRecord], seed: int) -> list[str]:
    """The seed's grains: ``WEAK_GRAINS`` (decision, tool) pairs the suite exercises, at distinct tools.

    Drawn without replacement in proportion to the held-out episodes exercising each grain, so a weak grain
    costs held-out episodes the benchmark can see.
    """
    counts: dict[str, int] = {}
    for r in expert_runs:
        for grain in {f"{d['key']}@{d['tool']}" for d in r.decisions if d["key"] in GRAIN_KEYS and d.get("tool")}:
            counts[grain] = counts.get(grain, 0) + 1
    rng = random.Random(seed)
    # Draw in a fixed order: the counts' insertion order follows set iteration, which differs between processes.
    draws = {g: rng.random() ** (1.0 / counts[g]) for g in sorted(counts)}
    order = sorted(counts, key=lambda g: (draws[g], g), reverse=True)
    chosen: list[str] = []
    for grain in order:
        if grain.split("@", 1)[1] not in {g.split("@", 1)[1] for g in chosen}:
            chosen.append(grain)
        if len(chosen) == WEAK_GRAINS:
            break
    return sorted(chosen)


def _start(key: CellKey, grains: list[str]) -> PolicyParams:
    every = [f"{kind}|{c}" for kind, contexts in CONTEXTS.items() for c in contexts]
    if key.concentration == "even":
        return PolicyParams.initial(dict.fromkeys(every, EVEN_SLIP), transfer=key.transfer)
    return PolicyParams.initial(dict.fromkeys(every, SHARED_SLIP), grain_slips=dict.fromkeys(grains, WEAK_SLIP),
                                transfer=key.transfer)


def episodes_to_reach(curve: list[float], goal: float, budget: int) -> float | None:
    """Training episodes at which a curve first reaches ``goal``, interpolated linearly within a round."""
    for rnd, rate in enumerate(curve):
        if rate >= goal - 1e-9:
            if rnd == 0:
                return 0.0
            before = curve[rnd - 1]
            fraction = (goal - before) / (rate - before) if rate > before else 1.0
            return (rnd - 1 + fraction) * budget
    return None


def ratio(target: list[float], control: list[float], level: str, budget: int) -> tuple[float | None, bool]:
    """Targeted / control episodes to reach the control's final (or half-way) level; (ratio, censored).

    ``None`` when the control needs no episode (its curve never rose above its start).
    """
    goal = control[-1] if level == "final" else control[0] + (control[-1] - control[0]) / 2
    need_c = episodes_to_reach(control, goal, budget)
    if not need_c:
        return None, False
    need_t = episodes_to_reach(target, goal, budget)
    if need_t is None:
        return (len(target) - 1) * budget / need_c, True
    return need_t / need_c, False


def _mean_curve(curves: list[list[float]]) -> list[float]:
    return [statistics.fmean(c[i] for c in curves) for i in range(len(curves[0]))]


def _resampled_ratio(targeted: list[list[float]], control: list[list[float]], budget: int) -> float:
    """R on one resample's seed-mean curves; when the control never rose, 0 if targeted ended above it, else 1."""
    t, c = _mean_curve(targeted), _mean_curve(control)
    value, _ = ratio(t, c, "final", budget)
    if value is None:
        return 0.0 if t[-1] > c[-1] + 1e-12 else 1.0
    return value


def paired_intervals(targeted: list[list[float]], control: list[list[float]], budget: int,
                     seed: int = 0) -> tuple[tuple[float, float], tuple[float, float]]:
    """95% paired percentile bootstrap over seeds of R and of the finals' difference (targeted - control)."""
    rng = random.Random(seed)
    n = len(targeted)
    ratios, gaps = [], []
    for _ in range(RESAMPLES):
        picks = [rng.randrange(n) for _ in range(n)]
        t, c = [targeted[i] for i in picks], [control[i] for i in picks]
        ratios.append(_resampled_ratio(t, c, budget))
        gaps.append(statistics.fmean(x[-1] for x in t) - statistics.fmean(x[-1] for x in c))
    ratios.sort()
    gaps.sort()
    low, high = int(0.025 * RESAMPLES), int(0.975 * RESAMPLES) - 1
    return (ratios[low], ratios[high]), (gaps[low], gaps[high])


def verdict(r: dict[str, Any]) -> bool:
    """The declared rule on a cell's figures."""
    final = r["ratios"]["uniform/final"]
    if final["mean_curves"] is None:
        low = r["final_difference_interval"][0]
        return bool(r["mean"]["targeted"][-1] > r["mean"]["uniform"][-1] and low > 0)
    return bool(final["mean_curves"] <= RATIO_TARGET and final["interval"][1] <= UPPER_TARGET)


def summarize(key: CellKey, runs: dict[str, list[ArmResult]], budget: int) -> dict[str, Any]:
    """A cell's figures: mean curves, ratios (mean curves with a paired interval; per seed) and the verdict."""
    arms = [a for a in ARMS if runs.get(a)]
    curves = {a: [r.rates for r in runs[a]] for a in arms}
    mean = {a: _mean_curve(curves[a]) for a in arms}
    out: dict[str, Any] = {"cell": key.label(), "judged": key.judged, "mean": mean, "curves": curves}
    ratios: dict[str, Any] = {}
    for control in [a for a in arms if a != "targeted"]:
        (low, high), gap = paired_intervals(curves["targeted"], curves[control], budget)
        for level in ("final", "half"):
            overall, censored = ratio(mean["targeted"], mean[control], level, budget)
            per_seed = [ratio(t, c, level, budget) for t, c in zip(curves["targeted"], curves[control], strict=True)]
            ratios[f"{control}/{level}"] = {
                "mean_curves": overall, "censored": censored,
                "per_seed": [None if v is None else round(v, 3) for v, _ in per_seed],
                "per_seed_censored": [c for _, c in per_seed],
                "interval": [low, high] if level == "final" else None,
            }
        if control == "uniform":
            out["final_difference_interval"] = list(gap)
    out["ratios"] = ratios
    out["met"] = verdict(out)
    out["variants"] = {a: statistics.fmean(r.variants for r in runs[a]) for a in arms}
    out["gate_candidates"] = {a: statistics.fmean(r.gate_candidates for r in runs[a]) for a in arms}
    fell = [after < before for r in runs["targeted"] for rnd in r.targeted_rates for before, after in rnd.values()]
    out["targeted_grains_fell"] = [sum(fell), len(fell)]
    if key.heldout == "gap":
        ceiling = _mean_curve([r.gap_ceiling for r in runs["uniform"]])
        value, censored = ratio(ceiling, mean["uniform"], "final", budget)
        out["gap_ceiling"] = {"mean": ceiling, "ratio": value, "censored": censored}
    return out


def start_rates(cells: list[CellKey], seeds: int, draws: int) -> dict[str, list[float]]:
    """Each cell's seed-mean starting held-out pass rate at the agent's draws 0..draws-1 (no round runs).

    Draw 0 is the bench's own evaluation. Every seed of a cell plays the suite on the same draws, so a change of the
    packs' content (their ids seed every agent draw) moves every seed at once; the other draws show by how much.
    """
    base = [build_pack(d, seed=0) for d in DOMAINS]
    suite, expert = _suite(base, LoopSettings().eval_seeds)
    out: dict[str, list[float]] = {}
    for key in cells:
        starts = [_start(key, _weak_grains(expert, seed)) for seed in range(seeds)]
        out[key.label()] = []
        for draw in range(draws):
            keys = [EpisodeKey(k.pack_id, k.task_id, k.seed, draw) for k in suite]
            out[key.label()].append(statistics.fmean(
                compute_metrics(run_episodes(ReferencePolicy(p), base, keys, RolloutConfig()), rounds=1).pass_rate.value
                for p in starts))
    return out


def _cells(spec: list[str] | None, credits: list[str] | None) -> list[CellKey]:
    every = every_cell()
    if spec:
        wanted = set(spec)
        unknown = wanted - {k.label() for k in every}
        if unknown:
            raise SystemExit(f"--cells: unknown cell(s) {sorted(unknown)}; form transfer:concentration:heldout:credit, "
                             f"e.g. 0.5:concentrated:gap:decision")
        every = [k for k in every if k.label() in wanted]
    if credits:
        every = [k for k in every if k.credit in credits]
    return every


def run_cells(cells: list[CellKey], seeds: int, loop: LoopSettings, arms: list[str],
              on_cell: Any = None) -> tuple[list[dict[str, Any]], int]:
    """Run cells; returns every cell's figures and the held-out suite's size."""
    base = [build_pack(d, seed=0) for d in DOMAINS]
    suite, expert = _suite(base, loop.eval_seeds)
    factory = LocalFactory()
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-curriculum-") as tmp:
            for key in cells:
                runs: dict[str, list[ArmResult]] = {a: [] for a in arms}
                cell_loop = LoopSettings(**{**asdict(loop), "credit": key.credit})
                started = time.perf_counter()
                for seed in range(seeds):
                    grains = _weak_grains(expert, seed)
                    gap_tools = {g.split("@", 1)[1] for g in grains}
                    pool = [t for t in task_refs(base) if key.heldout == "covered" or not gap_tools & set(t.tools)]
                    cell = Cell(base, suite, pool, _start(key, grains), factory,
                                gap_tools=gap_tools if key.heldout == "gap" else None, name=key.label())
                    for arm in arms:
                        runs[arm].append(cell.run(arm, seed, cell_loop, Path(tmp) / key.label().replace(":", "-")))
                figures = summarize(key, runs, loop.budget)
                figures["seconds"] = round(time.perf_counter() - started, 1)
                results.append(figures)
                if on_cell is not None:
                    on_cell(figures, results)
    finally:
        factory.close()
    return results, len(suite)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=DECLARED["seeds"])
    parser.add_argument("--rounds", type=int, default=DECLARED["rounds"])
    parser.add_argument("--budget", type=int, default=DECLARED["budget"], help="training episodes per round")
    parser.add_argument("--cells", nargs="*", help="only these cells (transfer:concentration:heldout:credit)")
    parser.add_argument("--credit", nargs="*", choices=CREDITS, help="only cells with this credit")
    parser.add_argument("--arms", nargs="*", choices=ARMS, default=list(DECLARED_ARMS))
    parser.add_argument("--json", type=Path, help="write every cell's figures (and per-seed curves) here")
    parser.add_argument("--merge", nargs="*", type=Path, help="print the table and verdict of these --json pieces")
    parser.add_argument("--write-docs", action="store_true", help="replace the issue-36 figures section of the docs")
    parser.add_argument("--start-draws", type=int, metavar="N",
                        help="only print each cell's starting held-out pass rate at N draws of the agent (no round)")
    args = parser.parse_args()
    if args.start_draws:
        for label, rates in start_rates(_cells(args.cells, args.credit), args.seeds, args.start_draws).items():
            print(f"cell {label}: start {rates[0]:.4f} (the bench's draw); draws 0-{len(rates) - 1}: "
                  f"{' '.join(f'{r:.4f}' for r in rates)}; mean {statistics.fmean(rates):.4f}, "
                  f"{min(rates):.4f}-{max(rates):.4f}")
        return
    if args.merge:
        settings, results = merge(args.merge)
        finish(results, settings, args.write_docs)
        return
    loop = LoopSettings(rounds=args.rounds, budget=args.budget)
    settings = {"seeds": args.seeds, "rounds": args.rounds, "budget": args.budget, "arms": args.arms,
                "loop": asdict(loop), "suite": 0, "seconds": 0.0}
    started = time.perf_counter()

    def on_cell(figures: dict[str, Any], results: list[dict[str, Any]]) -> None:
        print(_cell_line(figures), flush=True)
        if args.json:
            settings["seconds"] = round(time.perf_counter() - started, 1)
            args.json.write_text(json.dumps({"settings": settings, "cells": results}, indent=1))

    results, suite = run_cells(_cells(args.cells, args.credit), args.seeds, loop, args.arms, on_cell)
    settings["suite"], settings["seconds"] = suite, round(time.perf_counter() - started, 1)
    if args.json:
        args.json.write_text(json.dumps({"settings": settings, "cells": results}, indent=1))
    finish(results, settings, args.write_docs)


def merge(paths: list[Path]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Pieces written by ``--json``: their settings must agree, and no cell may be measured twice."""
    merged: dict[str, Any] | None = None
    results: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            data = json.loads(path.read_text())
            settings, cells = data["settings"], data["cells"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"--merge: {path} is not a piece written by --json ({exc})") from None
        same = {k: settings.get(k) for k in ("seeds", "rounds", "budget", "arms", "suite")}
        if merged is None:
            merged = {**settings, "seconds": 0.0}
        elif same != {k: merged.get(k) for k in same}:
            raise SystemExit(f"--merge: {path} ran with {same}, not {({k: merged.get(k) for k in same})}")
        merged["seconds"] += settings.get("seconds", 0.0)
        for cell in cells:
            if cell["cell"] in results:
                raise SystemExit(f"--merge: cell {cell['cell']} is measured in two pieces ({path})")
            results[cell["cell"]] = cell
    order = [k.label() for k in every_cell()]
    return merged or {}, [results[c] for c in order if c in results]


def finish(results: list[dict[str, Any]], settings: dict[str, Any], write_docs: bool) -> None:
    """Print the figures and the verdict; exit 1 when a judged cell misses or was not run."""
    text = render(results, settings)
    print(text)
    declared = all(settings.get(k) == v for k, v in DECLARED.items())
    run = {r["cell"] for r in results}
    missing = [k.label() for k in every_cell() if k.judged and k.label() not in run]
    misses = [r["cell"] for r in results if r["judged"] and not r["met"]]
    if write_docs:
        _write_docs(text)
    if not declared:
        print(f"a look, not the verdict: the declared run is {DECLARED}")
    if misses or missing:
        print(f"judged cells missing R <= {RATIO_TARGET:g} with the interval's upper end <= {UPPER_TARGET:g}: "
              f"{', '.join(misses) or 'none'}; not run: {', '.join(missing) or 'none'}")
        sys.exit(1)
    if not declared:
        sys.exit(1)


def _fmt(value: object) -> str:
    return "n/a" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def _cell_line(r: dict[str, Any]) -> str:
    final = r["ratios"]["uniform/final"]
    interval = final["interval"]
    return (f"cell {r['cell']} ({'judged' if r['judged'] else 'reported'}, {r['seconds']} s): T/U final "
            f"{_fmt(final['mean_curves'])}{'+' if final['censored'] else ''} [{interval[0]:.2f}, {interval[1]:.2f}]; "
            f"finals T {r['mean']['targeted'][-1]:.3f} U {r['mean']['uniform'][-1]:.3f}; "
            f"{'met' if r['met'] else 'missed'}")


def _shown(r: dict[str, Any], name: str) -> str:
    v = r["ratios"].get(name)
    if v is None:
        return "—"
    shown = _fmt(v["mean_curves"]) + ("+" if v["censored"] else "")
    if v["interval"] is not None:
        shown += f" [{v['interval'][0]:.2f}, {v['interval'][1]:.2f}]"
    return shown


def render(results: list[dict[str, Any]], settings: dict[str, Any]) -> str:
    """The figures section: one row per cell, then the per-seed ratios, the curves and the gap ceiling."""
    loop = settings.get("loop", {})
    lines = [
        f"Gyms {', '.join(DOMAINS)}; held-out suite {settings.get('suite')} episodes (expert-solvable held-out tasks, "
        f"1 seed); {settings.get('seeds')} seeds; {settings.get('rounds')} rounds x {settings.get('budget')} training "
        f"episodes (k = {loop.get('k')}); {loop.get('variants_per_round')} variants per gym and round of "
        f"{loop.get('tasks_per_variant')} tasks; arms {', '.join(settings.get('arms', []))}; wall time "
        f"{settings.get('seconds', 0.0):.0f} s (sum of the pieces).",
        "",
        "R = targeted / uniform training episodes to reach uniform's final pass rate on the seed-mean curves (`+`: "
        "targeted never reached it, a lower bound; n/a: uniform never rose above its start); interval: 95% paired "
        "bootstrap over seeds. Judged: concentrated cells with per-decision credit, met when R <= 0.33 and the "
        "interval's upper end <= 0.5 (uniform never rising: targeted's final above uniform's, the interval of the "
        "difference above 0).",
        "",
        "| cell (transfer:failures:held-out:credit) | judged | final pass rate T / U | R [interval] | R half-way | "
        "T - U final [interval] | T/R final | gap ceiling | targeted grains fell | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        mean = r["mean"]
        diff = r.get("final_difference_interval", [0.0, 0.0])
        ceiling = r.get("gap_ceiling")
        ceiling_text = "—" if ceiling is None else f"{_fmt(ceiling['ratio'])}{'+' if ceiling['censored'] else ''}"
        fell = r["targeted_grains_fell"]
        verdict_text = ("met" if r["met"] else "**missed**") if r["judged"] else "not judged"
        lines.append(
            f"| {r['cell']} | {'yes' if r['judged'] else 'no'} | {mean['targeted'][-1]:.3f} / "
            f"{mean['uniform'][-1]:.3f} | {_shown(r, 'uniform/final')} | {_shown(r, 'uniform/half')} | "
            f"{mean['targeted'][-1] - mean['uniform'][-1]:+.3f} [{diff[0]:+.3f}, {diff[1]:+.3f}] | "
            f"{_shown(r, 'random-variants/final')} | {ceiling_text} | {fell[0]} of {fell[1]} | {verdict_text} |")
    lines += ["", "Seed-mean held-out pass rate per round (rounds 0-N), targeted / uniform:", ""]
    for r in results:
        mean = r["mean"]
        lines.append(f"- {r['cell']}: T {', '.join(f'{x:.3f}' for x in mean['targeted'])}; "
                     f"U {', '.join(f'{x:.3f}' for x in mean['uniform'])}")
    lines += ["", "Per-seed targeted / uniform ratios to uniform's final pass rate (`*`: lower bound; listed, not "
              "judged):", ""]
    for r in results:
        v = r["ratios"]["uniform/final"]
        seeds_text = ", ".join("n/a" if x is None else f"{x:.2f}{'*' if c else ''}"
                               for x, c in zip(v["per_seed"], v["per_seed_censored"], strict=True))
        lines.append(f"- {r['cell']}: {seeds_text}")
    gap = [r for r in results if "gap_ceiling" in r]
    if gap:
        lines += ["", "Gap ceiling (a bound, not an arm): uniform's parameters of each round with every decision at "
                  "the gap tools made perfect, i.e. uniform's practice plus the gap filled for free:", "",
                  "| cell | uniform, rounds 0-N | uniform + a perfect gap, rounds 0-N | its episodes / uniform's |",
                  "| --- | --- | --- | --- |"]
        for r in gap:
            ceiling = r["gap_ceiling"]
            lines.append(f"| {r['cell']} | {', '.join(f'{x:.3f}' for x in r['mean']['uniform'])} | "
                         f"{', '.join(f'{x:.3f}' for x in ceiling['mean'])} | "
                         f"{_fmt(ceiling['ratio'])}{'+' if ceiling['censored'] else ''} |")
    return "\n".join(lines)


def _write_docs(body: str) -> None:
    section = f"{START}\n## Curriculum grid (issue 36): figures\n\n{body}\n{END}\n"
    text = DOCS.read_text()
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOCS.write_text(text)


if __name__ == "__main__":
    main()

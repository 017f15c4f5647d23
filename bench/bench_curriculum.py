"""Curriculum benchmark: does targeting earn its keep? The declared grid of docs/benchmarks.md.

Grid: transfer {0, 0.25, 0.5, 0.75, 1} x failure concentration {even, concentrated} x held-out suite
{covered by the pool, with a gap the pool lacks}, 5 seeds per cell, three arms on the same budget from the
same starting model (``bench.curriculum_arms``). Reported per cell: held-out pass rate per round per arm, and
the training episodes the targeted arm needs to reach each control's final and half-way pass rates, as a
ratio to the control's own, for the seed-mean curves and per seed with a bootstrap interval over seeds.

Premise cells (concentrated failures with transfer <= 0.5, or a gap) must show targeted / uniform <= 0.5 on
the final pass rate; the script exits 1 when one misses. Every cell is printed, judged or not.

Run: ``python -m bench.bench_curriculum [--seeds 5] [--cells 0.5:concentrated:gap ...] [--write-docs]``
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
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from bench.curriculum_arms import ARMS, ArmResult, Cell, LoopSettings
from curriculum import task_refs
from diagnosis import DiagnosisContext
from factory_client import LocalFactory

DOMAINS = ("helpdesk", "procurement")
TRANSFERS = (0.0, 0.25, 0.5, 0.75, 1.0)
CONCENTRATIONS = ("even", "concentrated")
HELDOUT = ("covered", "gap")
EVEN_SLIP, SHARED_SLIP, WEAK_SLIP, WEAK_GRAINS = 0.35, 0.05, 0.9, 4
GRAIN_KEYS = ("prerequisite|strong", "format|date", "format|money", "format|code", "pick_candidate|several",
              "resolve_text|plain", "resolve_text|hinted")
"""Decision keys a weak grain is drawn from (those whose failures a detector attributes to a tool)."""
RATIO_TARGET = 0.5
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
START, END = "<!-- curriculum-grid:start -->", "<!-- curriculum-grid:end -->"


@dataclass(frozen=True)
class CellKey:
    """One grid cell."""

    transfer: float
    concentration: str
    heldout: str

    @property
    def premise(self) -> bool:
        """Targeting should win here: concentrated failures with transfer <= 0.5, or a coverage gap."""
        return (self.concentration == "concentrated" and self.transfer <= 0.5) or self.heldout == "gap"

    def label(self) -> str:
        """``transfer:concentration:heldout``."""
        return f"{self.transfer:g}:{self.concentration}:{self.heldout}"


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


def _context(base: list[Pack]) -> DiagnosisContext:
    graph = {"directed": True, "multigraph": False, "graph": {},
             "nodes": [n for p in base for n in p.graph.get("nodes", [])],
             "edges": [e for p in base for e in p.graph.get("edges", [])]}
    return DiagnosisContext.build(tools=[t for p in base for t in p.tools], graph=graph,
                                  tasks={(p.id, t.id): t for p in base for t in p.tasks})


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


def _ratio(target: list[float], control: list[float], level: str, budget: int) -> tuple[float | None, bool]:
    """Targeted / control episodes to reach the control's final (or half-way) level; (ratio, censored)."""
    goal = control[-1] if level == "final" else control[0] + (control[-1] - control[0]) / 2
    need_c = episodes_to_reach(control, goal, budget)
    if not need_c:
        return None, False
    need_t = episodes_to_reach(target, goal, budget)
    if need_t is None:
        return (len(target) - 1) * budget / need_c, True
    return need_t / need_c, False


def _interval(values: list[float], seed: int = 0, resamples: int = 2000) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def summarize(key: CellKey, runs: dict[str, list[ArmResult]], budget: int) -> dict[str, Any]:
    """A cell's figures: mean curves, ratios (mean curves and per seed, with intervals) and the verdict."""
    mean = {a: [statistics.fmean(r.rates[i] for r in runs[a]) for i in range(len(runs[a][0].rates))] for a in ARMS}
    out: dict[str, Any] = {"cell": key.label(), "premise": key.premise, "mean": mean}
    ratios: dict[str, Any] = {}
    for control in ("uniform", "random-variants"):
        for level in ("final", "half"):
            overall, censored = _ratio(mean["targeted"], mean[control], level, budget)
            per_seed = [_ratio(t.rates, c.rates, level, budget) for t, c in zip(runs["targeted"], runs[control],
                                                                                  strict=True)]
            values = [v for v, _ in per_seed if v is not None]
            ratios[f"{control}/{level}"] = {
                "mean_curves": overall, "censored": censored,
                "per_seed": [None if v is None else round(v, 3) for v, _ in per_seed],
                "per_seed_censored": [c for _, c in per_seed],
                "interval": list(_interval(values)) if len(values) >= 2 else None,
            }
    out["ratios"] = ratios
    final = ratios["uniform/final"]
    value = final["mean_curves"]
    if value is None:
        # uniform never rose above its start: targeting meets the premise only by rising where uniform did not
        met = mean["targeted"][-1] > mean["uniform"][-1] + 0.02
    else:
        met = value <= RATIO_TARGET
    out["met"] = met
    out["variants"] = {a: statistics.fmean(r.variants for r in runs[a]) for a in ARMS}
    out["gate_candidates"] = {a: statistics.fmean(r.gate_candidates for r in runs[a]) for a in ARMS}
    fell = [after < before for r in runs["targeted"] for rnd in r.targeted_rates for before, after in rnd.values()]
    out["targeted_grains_fell"] = [sum(fell), len(fell)]
    if key.heldout == "gap":
        ceiling = [statistics.fmean(r.gap_ceiling[i] for r in runs["uniform"]) for i in range(len(mean["uniform"]))]
        ratio, censored = _ratio(ceiling, mean["uniform"], "final", budget)
        out["gap_ceiling"] = {"mean": ceiling, "ratio": ratio, "censored": censored}
    return out


def _cells(spec: list[str] | None) -> list[CellKey]:
    # transfer 0, 0.5 and 1 first, so a run cut short still covers both ends and the middle of the grid
    order = (0.0, 0.5, 1.0, 0.25, 0.75)
    every = [CellKey(t, c, h) for t in order for c in CONCENTRATIONS for h in HELDOUT]
    if not spec:
        return every
    wanted = set(spec)
    unknown = wanted - {k.label() for k in every}
    if unknown:
        raise SystemExit(f"--cells: unknown cell(s) {sorted(unknown)}; form transfer:concentration:heldout, "
                         f"e.g. 0.5:concentrated:gap")
    return [k for k in every if k.label() in wanted]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--budget", type=int, default=24, help="training episodes per round")
    parser.add_argument("--cells", nargs="*", help="only these cells (a look, never the verdict)")
    parser.add_argument("--json", type=Path, help="write every cell's figures (and per-seed curves) here")
    parser.add_argument("--write-docs", action="store_true", help="replace the grid figures section of the docs")
    args = parser.parse_args()
    settings = LoopSettings(rounds=args.rounds, budget=args.budget)
    started = time.perf_counter()
    base = [build_pack(d, seed=0) for d in DOMAINS]
    suite, expert = _suite(base, settings.eval_seeds)
    ctx = _context(base)
    factory = LocalFactory()
    cells = _cells(args.cells)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-curriculum-") as tmp:
        for key in cells:
            runs: dict[str, list[ArmResult]] = {a: [] for a in ARMS}
            cell_started = time.perf_counter()
            for seed in range(args.seeds):
                grains = _weak_grains(expert, seed)
                gap_tools = {g.split("@", 1)[1] for g in grains}
                pool = [t for t in task_refs(base)
                        if key.heldout == "covered" or not gap_tools & set(t.tools)]
                cell = Cell(base, suite, pool, _start(key, grains), ctx, factory,
                            gap_tools=gap_tools if key.heldout == "gap" else None)
                for arm in ARMS:
                    runs[arm].append(cell.run(arm, seed, settings, Path(tmp) / key.label().replace(":", "-")))
            figures = summarize(key, runs, settings.budget)
            figures["seconds"] = round(time.perf_counter() - cell_started, 1)
            figures["curves"] = {a: [r.rates for r in runs[a]] for a in ARMS}
            results.append(figures)
            print(_cell_line(figures), flush=True)
            if args.json:
                args.json.write_text(json.dumps({"settings": asdict(settings), "cells": results}, indent=1))
    factory.close()
    elapsed = time.perf_counter() - started
    text = render(results, settings, args.seeds, len(suite), elapsed)
    print(text)
    if args.write_docs and not args.cells:
        _write_docs(text)
    misses = [r["cell"] for r in results if r["premise"] and not r["met"]]
    if misses:
        print(f"premise cells missing targeted <= {RATIO_TARGET:g} x uniform's episodes: {', '.join(map(str, misses))}")
        sys.exit(1)


def _fmt(value: object) -> str:
    return "n/a" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def _cell_line(r: dict[str, Any]) -> str:
    ratios = r["ratios"]
    parts = [f"{name} {_fmt(v['mean_curves'])}{'+' if v['censored'] else ''}" for name, v in ratios.items()]
    return f"cell {r['cell']} ({'premise' if r['premise'] else 'no premise'}, {r['seconds']} s): " + "; ".join(parts)


def render(results: list[dict[str, Any]], settings: LoopSettings, seeds: int, suite: int, elapsed: float) -> str:
    """The figures section: one row per cell, then the per-seed ratios and curves."""
    lines = [
        f"Gyms {', '.join(DOMAINS)}; held-out suite {suite} episodes (expert-solvable held-out tasks, 1 seed); "
        f"{seeds} seeds; {settings.rounds} rounds x {settings.budget} training episodes (k = {settings.k}); "
        f"focus {settings.focus} grains, {settings.tasks_per_variant} tasks per variant; wall time {elapsed:.0f} s.",
        "",
        "Ratios are targeted / control training episodes to reach the control's level, on the seed-mean curves "
        "(`+`: targeted never reached it, the ratio is a lower bound; n/a: the control never rose); the interval is "
        "a 95% bootstrap over the per-seed ratios.",
        "",
        "| cell (transfer:failures:held-out) | premise | final pass rate T / U / R | T/U final [interval] | "
        "T/U half-way | T/R final [interval] | T/R half-way | targeted grains fell | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        ratios = r["ratios"]
        mean = r["mean"]

        def cell(name: str, ratios: dict[str, Any] = ratios) -> str:
            v = ratios[name]
            interval = v["interval"]
            shown = _fmt(v["mean_curves"]) + ("+" if v["censored"] else "")
            if name.endswith("final") and isinstance(interval, list):
                shown += f" [{interval[0]:.2f}, {interval[1]:.2f}]"
            return shown

        fell = r["targeted_grains_fell"]
        verdict = ("met" if r["met"] else "**missed**") if r["premise"] else "not judged"
        lines.append(
            f"| {r['cell']} | {'yes' if r['premise'] else 'no'} | "
            f"{mean['targeted'][-1]:.3f} / {mean['uniform'][-1]:.3f} / {mean['random-variants'][-1]:.3f} | "
            f"{cell('uniform/final')} | {cell('uniform/half')} | {cell('random-variants/final')} | "
            f"{cell('random-variants/half')} | {fell[0]} of {fell[1]} | {verdict} |")
    lines += ["", "Per-seed targeted / uniform ratios to uniform's final pass rate (`*`: lower bound):", ""]
    for r in results:
        ratios = r["ratios"]
        v = ratios["uniform/final"]
        seeds_text = ", ".join("n/a" if x is None else f"{x:.2f}{'*' if c else ''}"
                               for x, c in zip(v["per_seed"], v["per_seed_censored"], strict=True))
        lines.append(f"- {r['cell']}: {seeds_text}")
    gap = [r for r in results if "gap_ceiling" in r]
    if gap:
        lines += ["", "Gap ceiling (a bound, not an arm; not part of the verdict): uniform's parameters of each round "
                  "with every decision at the gap tools made perfect, i.e. uniform's practice plus the gap filled for "
                  "free. If no arm learns the rest of the suite faster than uniform (the even:covered cells: "
                  "targeted never does), no arm needs fewer episodes to reach uniform's final than this curve:", "",
                  "| cell | uniform, rounds 0-N | uniform + a perfect gap, rounds 0-N | its episodes / uniform's |",
                  "| --- | --- | --- | --- |"]
        for r in gap:
            ceiling = r["gap_ceiling"]
            lines.append(f"| {r['cell']} | {', '.join(f'{x:.3f}' for x in r['mean']['uniform'])} | "
                         f"{', '.join(f'{x:.3f}' for x in ceiling['mean'])} | "
                         f"{_fmt(ceiling['ratio'])}{'+' if ceiling['censored'] else ''} |")
    return "\n".join(lines)


def _write_docs(body: str) -> None:
    section = (f"{START}\n## Curriculum grid: figures\n\nCommand: `python -m bench.bench_curriculum` (one process on "
               f"the shared 2-core machine; see the load note below).\n\n{body}\n{END}\n")
    text = DOCS.read_text()
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOCS.write_text(text)


if __name__ == "__main__":
    main()

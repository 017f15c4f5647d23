"""Curriculum benchmark: targeted vs uniform vs bandit waves on the reference policy, same episode budget.

For each strategy and seed the closed loop runs on the built-in gyms: evaluate on the held-out suite,
diagnose the held-out episodes (``diagnosis.diagnose``), plan a wave of ``budget`` training episodes
(``curriculum.plan_wave``), roll it out and train with the built-in group-relative trainer, repeat.
Reported: held-out pass rate per round (mean over seeds, bootstrap interval over seeds) and the training
episodes each strategy needs to reach uniform's final pass rate. Target: targeted needs <= 50% of
uniform's episodes.

Settings the claim is measured at (the defaults): 5 seeds, 10 rounds, 64 training episodes per round, k = 4
rollouts per task, 3 packs per gym, learning rate 4 for every strategy (faster than 2 for
uniform and targeted alike), the planner's default mix (targeted 0.6, replay 0.2, explore 0.2) and focus (the 3
weakness kinds of highest impact). Also reported: the share of each strategy's training groups that carried
signal (rollouts not all scored the same), which bounds what choosing tasks can gain under group-relative
training.

The held-out suite is the held-out tasks that the expert reference policy (always the careful strategy)
passes: a task the policy cannot pass at its best measures the gym, not the curriculum. The training pool
is every train task.

Run: ``python -m bench.bench_curriculum [--seeds 5] [--rounds 10] [--quick] [--write-docs]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.episode import EpisodeRecord
from arena.gyms import available_domains
from arena.metrics import compute_metrics
from arena.pack import Pack, build_pack
from arena.rollout import RolloutConfig, run_rollouts
from curriculum import CurriculumConfig, History, plan_wave, task_refs
from diagnosis import DiagnosisContext, diagnose
from trainers import GRPOConfig, GRPOTrainer, ModelRef, load_reference, save_reference

STRATEGIES = ("targeted", "uniform", "bandit")
RATIO_TARGET = 0.5
EVAL_SEEDS = [10_000, 10_001, 10_002, 10_003]
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
START, END = "<!-- curriculum:start -->", "<!-- curriculum:end -->"


def _packs(world_seeds: int) -> tuple[list[Pack], list[str]]:
    packs: list[Pack] = []
    notes: list[str] = []
    for domain in available_domains():
        try:
            packs.extend(build_pack(domain, seed=s) for s in range(world_seeds))
        except Exception as exc:  # a gym still being built is reported and left out, never fatal
            notes.append(f"{domain}: not used ({type(exc).__name__}: {exc})")
    return packs, notes


def _solvable_heldout(packs: list[Pack]) -> set[tuple[str, str]]:
    runs = run_rollouts(ReferencePolicy(PolicyParams.expert()), packs,
                        RolloutConfig(seeds=EVAL_SEEDS, split="heldout"))
    ok: dict[tuple[str, str], bool] = {}
    for r in runs:
        ok[(r.pack_id, r.task_id)] = ok.get((r.pack_id, r.task_id), True) and r.passed
    return {k for k, v in ok.items() if v}


def _evaluate(ref: ModelRef, packs: list[Pack], suite: set[tuple[str, str]]) -> list[EpisodeRecord]:
    config = RolloutConfig(seeds=EVAL_SEEDS, split="heldout", task_ids=sorted({t for _, t in suite}))
    runs = run_rollouts(ReferencePolicy(load_reference(ref)), packs, config)
    return [r for r in runs if (r.pack_id, r.task_id) in suite]


def run_loop(strategy: str, seed: int, packs: list[Pack], suite: set[tuple[str, str]], ctx: DiagnosisContext,
             rounds: int, budget: int, k: int, lr: float, out: Path) -> tuple[list[float], tuple[int, int]]:
    """Run the closed loop.

    Returns:
        The held-out pass rate before training and after each round, and (groups with signal, groups) over
        all rounds' training steps.
    """
    ref = save_reference(PolicyParams.initial(), out / f"{strategy}-{seed}")
    trainer = GRPOTrainer(out / f"{strategy}-{seed}", GRPOConfig(learning_rate=lr))
    history = History()
    pool = task_refs(packs)
    rates: list[float] = []
    signal = groups = 0
    for rnd in range(rounds + 1):
        held = _evaluate(ref, packs, suite)
        rates.append(compute_metrics(held, rounds=1).pass_rate.value)
        if rnd == rounds:
            break
        report = diagnose(held, ctx, seed=seed)
        wave = plan_wave(report, pool, history, CurriculumConfig(strategy=strategy, budget=budget, k=k, seed=seed))
        history.record_wave(wave)
        wanted = {e.key for e in wave.entries}
        runs = run_rollouts(ReferencePolicy(load_reference(ref)), packs,
                            RolloutConfig(seeds=[seed * 1000 + rnd], k=k, split="train", task_ids=wave.task_ids()))
        runs = [r for r in runs if (r.pack_id, r.task_id) in wanted]
        history.record_episodes(rnd, runs)
        ref = trainer.train(ref, wave, runs)
        stats = trainer.last_stats
        signal += stats.groups
        groups += stats.groups + stats.skipped_uniform + stats.skipped_small
    return rates, (signal, groups)


def _interval(values: list[float], seed: int = 0, resamples: int = 2000) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def _episodes_to_reach(curve: list[float], goal: float, budget: int) -> int | None:
    """Training episodes at which the mean curve first reaches ``goal``, interpolated linearly within a round."""
    for rnd, rate in enumerate(curve):
        if rate >= goal - 1e-9:
            if rnd == 0:
                return 0
            before = curve[rnd - 1]
            fraction = (goal - before) / (rate - before) if rate > before else 1.0
            return round((rnd - 1 + fraction) * budget)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=64, help="training episodes per round")
    parser.add_argument("--k", type=int, default=4, help="rollouts per task")
    parser.add_argument("--world-seeds", type=int, default=3, help="packs built per gym")
    parser.add_argument("--lr", type=float, default=4.0, help="trainer learning rate (all strategies)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 seeds, 3 rounds, 1 world")
    parser.add_argument("--write-docs", action="store_true", help="replace the Curriculum section of docs")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.rounds, args.world_seeds = 2, 3, 1
    started = time.perf_counter()
    packs, notes = _packs(args.world_seeds)
    if not packs:
        raise SystemExit("no built-in gym could build a pack: " + "; ".join(notes))
    suite = _solvable_heldout(packs)
    heldout = sum(1 for p in packs for t in p.tasks if t.split == "heldout")
    domains = sorted({p.manifest.domain for p in packs})
    graph = {"directed": True, "multigraph": False, "graph": {},
             "nodes": [n for p in packs for n in p.graph.get("nodes", [])],
             "edges": [e for p in packs for e in p.graph.get("edges", [])]}
    ctx = DiagnosisContext.build(tools=[t for p in packs for t in p.tools], graph=graph,
                                 tasks={(p.id, t.id): t for p in packs for t in p.tasks})
    curves: dict[str, list[list[float]]] = {s: [] for s in STRATEGIES}
    signal: dict[str, list[int]] = {s: [0, 0] for s in STRATEGIES}
    with tempfile.TemporaryDirectory(prefix="bench-curriculum-") as tmp:
        for strategy in STRATEGIES:
            for seed in range(args.seeds):
                rates, (useful, total) = run_loop(strategy, seed, packs, suite, ctx, args.rounds, args.budget, args.k,
                                                  args.lr, Path(tmp))
                curves[strategy].append(rates)
                signal[strategy][0] += useful
                signal[strategy][1] += total
    elapsed = time.perf_counter() - started
    mean = {s: [statistics.fmean(c[r] for c in curves[s]) for r in range(args.rounds + 1)] for s in STRATEGIES}
    goal = mean["uniform"][-1]
    need = {s: _episodes_to_reach(mean[s], goal, args.budget) for s in STRATEGIES}
    cfg = CurriculumConfig()
    lines = [
        f"Domains: {', '.join(domains)} ({len(packs)} packs); held-out suite: {len(suite)} of {heldout} held-out "
        f"tasks (those the expert reference policy passes on all {len(EVAL_SEEDS)} evaluation seeds); training pool: "
        f"{sum(1 for p in packs for t in p.tasks if t.split == 'train')} train tasks.",
        f"Seeds: {args.seeds}; rounds: {args.rounds}; {args.budget} training episodes per round (k = {args.k}); "
        f"learning rate {args.lr:g}; planner defaults (targeted / replay / explore {cfg.targeted:g} / {cfg.replay:g} / "
        f"{cfg.explore:g}, focus {cfg.focus}); wall time {elapsed:.0f} s.",
        *[f"Note: {n}" for n in notes],
        "",
        "Held-out pass rate, mean over seeds [95% bootstrap interval over seeds]:",
        "",
        "| round | episodes | " + " | ".join(STRATEGIES) + " |",
        "| ---: | ---: | " + " | ".join("---" for _ in STRATEGIES) + " |",
    ]
    for rnd in range(args.rounds + 1):
        cells = []
        for s in STRATEGIES:
            low, high = _interval([c[rnd] for c in curves[s]], seed=rnd)
            cells.append(f"{mean[s][rnd]:.3f} [{low:.3f}, {high:.3f}]")
        lines.append(f"| {rnd} | {rnd * args.budget} | " + " | ".join(cells) + " |")
    lines += ["", f"Training episodes to reach uniform's final pass rate ({goal:.3f}), interpolated within a round:",
              "", "| strategy | episodes | / uniform |", "| --- | ---: | ---: |"]
    for s in STRATEGIES:
        eps = need[s]
        uni = need["uniform"]
        ratio = f"{eps / uni:.2f}" if eps is not None and uni else "-"
        shown = str(eps) if eps is not None else f"> {args.rounds * args.budget}"
        lines.append(f"| {s} | {shown} | {ratio} |")
    shares = "; ".join(f"{s} {signal[s][0]}/{signal[s][1]} ({signal[s][0] / max(signal[s][1], 1):.0%})"
                       for s in STRATEGIES)
    lines += ["", f"Training groups with signal (rollouts not all scored the same), all seeds and rounds: {shares}."]
    t_eps, u_eps = need["targeted"], need["uniform"]
    if t_eps is not None and u_eps:
        verdict = "met" if t_eps / u_eps <= RATIO_TARGET else "not met"
        lines += ["", f"targeted / uniform episodes: {t_eps / u_eps:.2f} (target <= {RATIO_TARGET:.2f}): {verdict}"]
    else:
        lines += ["", f"targeted / uniform episodes: n/a (targeted {t_eps}, uniform {u_eps}; target <= "
                      f"{RATIO_TARGET:.2f}): not met"]
    text = "\n".join(lines)
    print(text)
    if args.write_docs:
        command = "python -m bench.bench_curriculum" + (" --quick" if args.quick else "")
        _write_docs(command, text)


def _write_docs(command: str, body: str) -> None:
    section = f"{START}\n## Curriculum\n\nCommand: `{command}` (2-core machine, Python 3.11).\n\n{body}\n{END}\n"
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOCS.write_text(text)


if __name__ == "__main__":
    main()

"""The closed loop of the curriculum benchmark, one arm at a time: targeted, uniform, random-variants.

Each arm starts from the same reference-policy parameters, spends the same training episodes per round and is
judged on the same held-out suite. The targeted arm reads the held-out failures at the grain of skills
(kind, domain, tool), ranks the grains by practice value (failures explained x (1 + how poorly the pool covers
the grain), ``curriculum.coverage_ranked``, as a campaign's factory step does), asks the local factory for one
isolated variant per top grain and plans with the targeted strategy over the pool and its variants; the uniform
arm samples the base pool; the random-variants arm gets as many untargeted variants as the targeted arm asks
for and samples pool and variants uniformly.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.agents.reference import PolicyParams, ReferencePolicy, grain_key
from arena.core.episode import EpisodeRecord
from arena.core.metrics import compute_metrics
from arena.core.pack import Pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from curriculum import CurriculumConfig, History, TaskRef, coverage_ranked, grain_label, plan_wave, task_refs
from diagnosis import BUILTIN_DETECTORS, DiagnosisContext, ShareInterval, Weakness, WeaknessReport, target_for
from factory_client import GateConfig, LocalFactory, VariantRequest, WeaknessTarget
from trainers import GRPOConfig, GRPOTrainer, load_reference, save_reference

ARMS = ("targeted", "uniform", "random-variants")
"""The benchmark's arms."""

GATE = GateConfig(k=1, band_min=0, band_max=1, max_candidates_factor=2)
"""The factory gate of the benchmark: gold passes, null fails, deterministic replay, no leakage; band open."""


@dataclass
class LoopSettings:
    """What every arm of a cell shares.

    Attributes:
        rounds: Training rounds.
        budget: Training episodes per round.
        k: Rollouts per task.
        focus: Grains the targeted arm targets per round (and variants each variant arm requests).
        tasks_per_variant: Tasks asked per variant.
        lr: Trainer learning rate.
        eval_seeds: Seeds of the held-out evaluation.
    """

    rounds: int = 4
    budget: int = 24
    k: int = 4
    focus: int = 3
    tasks_per_variant: int = 4
    lr: float = 4.0
    eval_seeds: list[int] = field(default_factory=lambda: [10_000])


@dataclass
class ArmResult:
    """One arm's run in one cell and seed.

    Attributes:
        rates: Held-out pass rate before training and after each round.
        variants: Variant packs the arm added to its pool.
        gate_candidates: Candidate tasks the factory's gate checked for the arm's variants (each runs gold, null,
            replay and baseline episodes; none counts as a training episode).
        targeted_rates: Per round, each targeted grain's failures per held-out episode before and after.
        gap_ceiling: The uniform arm of a gap cell only: the held-out pass rate of its parameters of each round
            with every decision at the gap tools made perfect (uniform's practice plus a gap filled for free).
    """

    rates: list[float] = field(default_factory=list)
    variants: int = 0
    gate_candidates: int = 0
    targeted_rates: list[dict[str, tuple[float, float]]] = field(default_factory=list)
    gap_ceiling: list[float] = field(default_factory=list)


def grain_report(episodes: Sequence[EpisodeRecord], ctx: DiagnosisContext, domains: dict[str, str]) -> WeaknessReport:
    """Failures per (kind, domain, tool) from the built-in detectors, ranked by rate per held-out episode.

    The tool of a grain is the tool the detector's first evidence names. ``impact`` is the rate, so the
    targeted strategy weighs grains by how many held-out episodes they cost.
    """
    counts: Counter[tuple[str, str, str]] = Counter()
    failed = 0
    for episode in episodes:
        if episode.passed or episode.invalid:
            continue
        failed += 1
        seen: set[tuple[str, str, str]] = set()
        for detector in BUILTIN_DETECTORS:
            for tag in detector.detect(episode, ctx):
                tool = next((e.tool for e in tag.evidence if e.tool), "")
                seen.add((tag.kind, domains.get(episode.pack_id, ""), tool))
        counts.update(seen)
    total = max(len(episodes), 1)
    weaknesses = []
    for rank, ((kind, domain, tool), count) in enumerate(
            sorted(counts.items(), key=lambda item: (-item[1], item[0])), start=1):
        target = target_for(kind)
        rate = count / total
        weaknesses.append(Weakness(
            kind=kind, domain=domain or None, tool=tool or None, label=target.label, description=target.description,
            rank=rank, impact=rate, share=count / max(failed, 1), share_interval=ShareInterval(low=0.0, high=1.0),
            mean_reward_lost=0.0, learnability=1.0, count=count, rate=rate, domains=[domain] if domain else [],
            tools=[tool] if tool else [], knobs=dict(target.knobs), focus_tags=list(target.focus_tags)))
    return WeaknessReport(episodes=len(episodes), passed=len(episodes) - failed, failures=failed,
                          weaknesses=weaknesses)


def perfect_at(params: PolicyParams, tools: set[str]) -> PolicyParams:
    """``params`` with every decision at ``tools`` made as the expert makes it (the tools' offsets replaced)."""
    expert = PolicyParams.expert().logits
    offsets = dict(params.offsets)
    for key, row in params.logits.items():
        for tool in tools:
            offsets[grain_key(key, tool)] = {s: expert[key][s] - v for s, v in row.items()}
    return params.model_copy(update={"offsets": offsets})


def _rate(report: WeaknessReport, weakness: Weakness) -> float:
    grain = (weakness.kind, weakness.domain, weakness.tool)
    same = [w for w in report.weaknesses if (w.kind, w.domain, w.tool) == grain]
    return same[0].rate if same else 0.0


class Cell:
    """One grid cell's fixed parts: packs, suite, pool and starting parameters.

    Args:
        base: The base packs.
        suite: Held-out episodes of the suite.
        pool: Base train tasks the arms may schedule (a gap cell has some removed).
        start: Starting parameters.
        ctx: Diagnosis context over the base packs.
        factory: The local factory (shared by every cell, so identical requests are generated once).
        gap_tools: A gap cell's tools the pool lacks (empty for a covered cell): the uniform arm then also
            measures ``ArmResult.gap_ceiling``.
    """

    def __init__(self, base: list[Pack], suite: list[EpisodeKey], pool: list[TaskRef], start: PolicyParams,
                 ctx: DiagnosisContext, factory: LocalFactory, gap_tools: set[str] | None = None) -> None:
        self.gap_tools = gap_tools or set()
        self.base = base
        self.suite = suite
        self.pool = pool
        self.start = start
        self.ctx = ctx
        self.factory = factory
        self.domains = {p.id: p.manifest.domain for p in base}

    def evaluate(self, params: PolicyParams, packs: list[Pack]) -> list[EpisodeRecord]:
        """Run the held-out suite."""
        return run_episodes(ReferencePolicy(params), packs, self.suite, RolloutConfig())

    def variants(self, arm: str, report: WeaknessReport, pool: list[TaskRef], settings: LoopSettings, seed: int,
                 round_index: int) -> tuple[list[Pack], int]:
        """Variant packs for a round of a variant arm, and the candidate tasks the gate checked for them."""
        requests: list[VariantRequest] = []
        if arm == "targeted":
            ranked = coverage_ranked(report, pool, settings.budget // settings.k)
            for w in ranked.weaknesses[:settings.focus]:
                if w.domain is None:
                    continue
                target = WeaknessTarget(kind=w.kind, weight=1.0, focus_tags=w.focus_tags,
                                        knobs=w.knobs, tools=w.tools, domain=w.domain, tool=w.tool)
                requests.append(VariantRequest(domain=w.domain, targets=[target], variants=1,
                                               tasks_per_variant=settings.tasks_per_variant, seed=0, gate=GATE))
        else:
            domains = sorted({p.manifest.domain for p in self.base})
            for i in range(settings.focus):
                digest = hashlib.sha256(f"random-variants|{seed}|{round_index}|{i}".encode()).digest()
                requests.append(VariantRequest(domain=domains[digest[0] % len(domains)], variants=1,
                                               tasks_per_variant=settings.tasks_per_variant,
                                               seed=int.from_bytes(digest[1:5], "big"), gate=GATE))
        packs: list[Pack] = []
        gate_candidates = 0
        for request in requests:
            result = self.factory.request(request, timeout=600.0)
            packs.extend(result.packs)
            gate_candidates += result.gate_report.candidates
        return packs, gate_candidates

    def run(self, arm: str, seed: int, settings: LoopSettings, out: Path) -> ArmResult:
        """Run one arm for one seed."""
        ref = save_reference(self.start, out / f"{arm}-{seed}")
        trainer = GRPOTrainer(out / f"{arm}-{seed}", GRPOConfig(learning_rate=settings.lr))
        history = History()
        packs = list(self.base)
        pool = list(self.pool)
        result = ArmResult()
        params = load_reference(ref)
        held = self.evaluate(params, packs)
        for rnd in range(settings.rounds + 1):
            result.rates.append(compute_metrics(held, rounds=1).pass_rate.value)
            if arm == "uniform" and self.gap_tools:
                filled = self.evaluate(perfect_at(params, self.gap_tools), packs)
                result.gap_ceiling.append(compute_metrics(filled, rounds=1).pass_rate.value)
            if rnd == settings.rounds:
                break
            report = grain_report(held, self.ctx, self.domains)
            if arm != "uniform":
                new, cost = self.variants(arm, report, pool, settings, seed, rnd)
                result.gate_candidates += cost
                known = {p.id for p in packs}
                fresh = [p for p in new if p.id not in known]
                packs.extend(fresh)
                pool.extend(task_refs(fresh))
                result.variants += len(fresh)
            strategy = "targeted" if arm == "targeted" else "uniform"
            config = CurriculumConfig(strategy=strategy, budget=settings.budget, k=settings.k, seed=seed,
                                      focus=settings.focus)
            wave = plan_wave(report, pool, history, config)
            history.record_wave(wave)
            keys = [EpisodeKey(e.pack_id, e.task_id, seed * 1000 + rnd, attempt)
                    for e in wave.entries for attempt in range(settings.k)]
            runs = run_episodes(ReferencePolicy(params), packs, keys, RolloutConfig())
            history.record_episodes(rnd, runs)
            ref = trainer.train(ref, wave, runs)
            params = load_reference(ref)
            held = self.evaluate(params, packs)
            if arm == "targeted":
                after = grain_report(held, self.ctx, self.domains)
                targeted = {e.grain for e in wave.entries if e.grain}
                result.targeted_rates.append({
                    label: (w.rate, _rate(after, w)) for w in report.weaknesses
                    if (label := grain_label(w)) in targeted})
        return result

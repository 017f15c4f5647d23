"""The closed loop of the curriculum benchmark, one arm at a time: targeted, uniform, random-variants.

Each arm starts from the same reference-policy parameters, spends the same training episodes per round, trains
with the same builtin trainer (its ``credit`` setting) and is judged on the same held-out suite. Every arm plans
its round as a round of a campaign does (``Cell.plan_round``): ``diagnose`` on the held-out episodes, the
factory requests a round makes from the report (``flows.variants.variant_requests``: none for the uniform arm,
untargeted ones for random-variants), answered by the local factory, and the round's planner
(``flows.waves.plan_tasks``). Rollouts and training are the bench's own loop: training rollouts on seed x 1000 +
round, the builtin trainer through ``flows.training.train_builtin`` (so per-decision credit diagnoses the rollouts as
a round does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.agents.reference import PolicyParams, ReferencePolicy, grain_key
from arena.core.episode import EpisodeRecord
from arena.core.metrics import compute_metrics
from arena.core.pack import Pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from curriculum import History, TaskRef, Wave, grain_label, task_refs
from diagnosis import WeaknessReport
from factory_client import LocalFactory
from flows.settings import GymloopSettings
from flows.training import train_builtin
from flows.variants import variant_requests
from flows.waves import plan_tasks, update_history
from flows.weaknesses import diagnose_round
from trainers import load_reference, save_reference

ARMS = ("targeted", "uniform", "random-variants")
"""The benchmark's arms (the declared run plays the first two)."""


@dataclass
class LoopSettings:
    """What every arm of a cell shares.

    Attributes:
        rounds: Training rounds.
        budget: Training episodes per round.
        k: Rollouts per task.
        variants_per_round: Variants a variant arm requests per gym and round.
        tasks_per_variant: Tasks asked per variant.
        lr: Trainer learning rate.
        credit: The builtin trainer's credit (``episode`` or ``decision``).
        eval_seeds: Seeds of the held-out evaluation.
    """

    rounds: int = 4
    budget: int = 24
    k: int = 4
    variants_per_round: int = 2
    tasks_per_variant: int = 4
    lr: float = 4.0
    credit: str = "decision"
    eval_seeds: list[int] = field(default_factory=lambda: [10_000])

    def campaign(self, arm: str, seed: int, home: Path, domains: Sequence[str]) -> GymloopSettings:
        """The settings a campaign of this arm would run with (the gate opened: baseline once, band 0-1)."""
        return GymloopSettings.model_validate(dict(
            home=home, domains=list(domains), seed=seed, arm=arm, strategy="targeted", wave_budget=self.budget,
            train_k=self.k, variants_per_round=self.variants_per_round, tasks_per_variant=self.tasks_per_variant,
            gate_k=1, gate_band_min=0, gate_band_max=1, credit=self.credit, trainer="builtin"))


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


@dataclass
class PlannedRound:
    """What a round's planning gave: the report, the variant packs new to the arm, and the wave.

    Attributes:
        report: ``diagnose`` on the held-out episodes.
        variants: Variant packs the factory gave that the arm did not have.
        gate_candidates: Candidate tasks the factory's gate checked.
        wave: The planner's wave.
    """

    report: WeaknessReport
    variants: list[Pack]
    gate_candidates: int
    wave: Wave


def perfect_at(params: PolicyParams, tools: set[str]) -> PolicyParams:
    """``params`` with every decision at ``tools`` made as the expert makes it (the tools' offsets replaced)."""
    expert = PolicyParams.expert().logits
    offsets = dict(params.offsets)
    for key, row in params.logits.items():
        for tool in tools:
            offsets[grain_key(key, tool)] = {s: expert[key][s] - v for s, v in row.items()}
    return params.model_copy(update={"offsets": offsets})


def targeted_changes(report: WeaknessReport, after: WeaknessReport, wave: Wave) -> dict[str, tuple[float, float]]:
    """Each grain the wave targeted: its failures per held-out episode before and after the round."""
    targeted = {e.grain or e.weakness for e in wave.entries if e.source == "targeted"}
    rates_after = {grain_label(w): w.rate for w in after.weaknesses}
    return {label: (w.rate, rates_after.get(label, 0.0)) for w in report.weaknesses
            if (label := grain_label(w)) in targeted}


class Cell:
    """One grid cell's fixed parts: packs, suite, pool and starting parameters.

    Args:
        base: The base packs.
        suite: Held-out episodes of the suite.
        pool: Base train tasks the arms may schedule (a gap cell has some removed).
        start: Starting parameters.
        factory: The local factory (shared by every cell, so identical requests are generated once).
        gap_tools: A gap cell's tools the pool lacks (empty for a covered cell): the uniform arm then also
            measures ``ArmResult.gap_ceiling``.
        name: The cell's name: with an arm and a seed, a campaign of its own (its factory requests' keys).
    """

    def __init__(self, base: list[Pack], suite: list[EpisodeKey], pool: list[TaskRef], start: PolicyParams,
                 factory: LocalFactory, gap_tools: set[str] | None = None, name: str = "cell") -> None:
        self.name = name
        self.gap_tools = gap_tools or set()
        self.base = base
        self.suite = suite
        self.pool = pool
        self.start = start
        self.factory = factory

    def evaluate(self, params: PolicyParams, packs: list[Pack]) -> list[EpisodeRecord]:
        """Run the held-out suite."""
        return run_episodes(ReferencePolicy(params), packs, self.suite, RolloutConfig())

    def plan_round(self, settings: GymloopSettings, held: list[EpisodeRecord], previous: WeaknessReport | None,
                   pool: list[TaskRef], history: History, params: PolicyParams, round_index: int) -> PlannedRound:
        """A round's planning, as a campaign's round does it: diagnose, the factory requests, the planner.

        Args:
            settings: The arm's campaign settings.
            held: The held-out episodes of the model the round starts from.
            previous: The previous round's report (for each weakness's trend).
            pool: The tasks the arm can schedule (its base pool and the variants it added).
            history: Earlier waves and group results of the arm.
            params: The parameters the round starts from (the gate's baseline).
            round_index: The round.
        """
        packs = [p for p in self.base if p.id in {r.pack_id for r in held}]
        report = diagnose_round(held, packs, previous, round_index, settings.curriculum.seed)
        requests = variant_requests(settings, report, self.base, round_index, pool, params,
                                    f"{self.name}/{settings.curriculum.arm}/{settings.curriculum.seed}/{params.content_hash()}")
        variants: list[Pack] = []
        candidates = 0
        known = {t.pack_id for t in pool}
        for request in requests:
            result = self.factory.request(request, timeout=600.0)
            candidates += result.gate_report.candidates
            variants.extend(p for p in result.packs if p.id not in known and p.id not in {v.id for v in variants})
        wave = plan_tasks(report, [*pool, *task_refs(variants)], history, settings, round_index)
        return PlannedRound(report=report, variants=variants, gate_candidates=candidates, wave=wave)

    def run(self, arm: str, seed: int, loop: LoopSettings, out: Path) -> ArmResult:
        """Run one arm for one seed."""
        folder = out / f"{arm}-{seed}"
        settings = loop.campaign(arm, seed, folder, sorted({p.manifest.domain for p in self.base}))
        ref = save_reference(self.start, folder)
        history = History()
        packs = list(self.base)
        pool = list(self.pool)
        result = ArmResult()
        params = load_reference(ref)
        previous: WeaknessReport | None = None
        held = self.evaluate(params, packs)
        for rnd in range(loop.rounds + 1):
            result.rates.append(compute_metrics(held, rounds=1).pass_rate.value)
            if arm == "uniform" and self.gap_tools:
                filled = self.evaluate(perfect_at(params, self.gap_tools), packs)
                result.gap_ceiling.append(compute_metrics(filled, rounds=1).pass_rate.value)
            if rnd == loop.rounds:
                break
            planned = self.plan_round(settings, held, previous, pool, history, params, rnd)
            result.gate_candidates += planned.gate_candidates
            result.variants += len(planned.variants)
            packs.extend(planned.variants)
            pool.extend(task_refs(planned.variants))
            wave = planned.wave
            keys = [EpisodeKey(e.pack_id, e.task_id, seed * 1000 + rnd, attempt)
                    for e in wave.entries for attempt in range(loop.k)]
            runs = run_episodes(ReferencePolicy(params), packs, keys, RolloutConfig())
            history = update_history(history, wave, runs)
            ref = train_builtin(settings, ref, wave, runs, packs, folder, learning_rate=loop.lr)
            params = load_reference(ref)
            previous = planned.report
            held = self.evaluate(params, packs)
            if arm == "targeted":
                after = diagnose_round(held, [p for p in self.base if p.id in {r.pack_id for r in held}],
                                       planned.report, rnd + 1, settings.curriculum.seed)
                result.targeted_rates.append(targeted_changes(planned.report, after, wave))
        return result

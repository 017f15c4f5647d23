"""Diagnosis on agents written under the blind protocol: ``bench/blind_agents`` (v1) or ``bench/blind_agents_v2``.

The agents were written by someone who read only ``diagnosis/knobs.py``'s kind descriptions and the gyms' tools,
never the detectors or the other diagnosis benchmarks; each injects one weakness kind in one style (or none:
the clean agents; or a failure mode no kind names: ``novel:<name>``; in v2 also two kinds at once, labelled
``primary+secondary``). Their episodes go through the API path the flows use,
``diagnose(episodes, flows.weaknesses.diagnosis_context(packs))``, and each failed episode's tags come from the same
registered detectors with the same context.

Grid (declared before running): the four built-in gyms (helpdesk, procurement, tracker, crm); every blind agent of
the set (``--agents``) on each gym it applies to; world seeds ``--world-seeds`` (the packs' worlds and tasks; a
declared run uses seeds never used while fixing); episode seeds ``--seeds`` (default 0), k = 1; five rounds of
the ranking figure.

Figures:
- precision and recall per kind over the labelled failures (an episode labelled with another kind or a novel
  mode counts against a kind that tags it; a two-kind episode counts for both of its kinds; failures of the
  clean agents have no label and are shown apart), overall, per world seed and per gym;
- ARI of ``diagnose``'s clusters against the labels (labelled failures of one kind or mode; the two-kind ones
  are shown apart: how many are tagged with both kinds, the primary only, the secondary only, neither);
- Spearman between each label's injected failures and the failures the report gives it (a kind: its count
  summed over its grains; a novel mode: the novel weaknesses whose members it mostly is), on the whole set and
  in five rounds that keep each label's failures at distinct shares; and between each label's injected
  failures and its kind's rank in the report (a higher count should rank higher);
- tags on gold traces: the gold program of every task at those world seeds, and the clean agents' passes.
Targets: precision >= 0.9 and recall >= 0.9 for every kind, ARI >= 0.9, both Spearmans >= 0.95 (whole set and
every round), 0 tags on gold traces. Exits 1 when a target is missed.

Run: python -m bench.bench_diagnosis_blind [--agents v2] [--world-seeds 0,1,2] [--seeds 0] [--domains ...] [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy.stats import spearmanr
from sklearn.metrics import adjusted_rand_score

from arena.core.episode import EpisodeRecord
from arena.core.gym import Gym
from arena.core.pack import Pack
from arena.rollout import EpisodeKey, play_episode
from bench.independent_mistakes import ProgramAgent, gold_program
from diagnosis import DiagnosisContext, WeaknessKind, WeaknessReport, detector_names, diagnose, episode_tags
from flows.weaknesses import diagnosis_context

PRECISION_TARGET = 0.9
RECALL_TARGET = 0.9
ARI_TARGET = 0.9
SPEARMAN_TARGET = 0.95
DOMAINS = ("helpdesk", "procurement", "tracker", "crm")
AGENT_SETS = {"v1": "bench.blind_agents", "v2": "bench.blind_agents_v2"}
"""The blind agent sets, by name: each module exports ``AGENTS``, ``base_pack`` and ``play``."""
ROUND_SHARES = (1.0, 0.8, 0.62, 0.48, 0.37, 0.28, 0.21, 0.15, 0.1, 0.06, 0.03, 0.02)
"""Shares of each label's failures a round keeps, shuffled per round so labels differ in frequency."""
CLEAN = "clean"


@dataclass
class BlindSet:
    """The blind agents' episodes, the gold negatives and the context they are diagnosed with.

    Attributes:
        episodes: Every episode the agents played (passed and failed), in play order.
        labels: Label of each (a kind, ``clean`` or ``novel:<name>``).
        agents: Agent of each.
        seeds: World seed of each.
        gold: Gold-program episodes that passed (negatives).
        gold_failed: Gold programs that fail their own task (left out), as ``domain/seed/task``.
        ctx: The flows' diagnosis context over every pack played.
    """

    episodes: list[EpisodeRecord] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    agent_count: int = 0
    gold: list[EpisodeRecord] = field(default_factory=list)
    gold_failed: list[str] = field(default_factory=list)
    ctx: DiagnosisContext = field(default_factory=DiagnosisContext)

    def failed(self) -> list[int]:
        """Indices of failed episodes the agent is to blame for (the population diagnosis reads)."""
        return [i for i, e in enumerate(self.episodes)
                if not e.passed and not e.invalid and (e.failure is None or e.failure.boundary == "agent")]


def collect(domains: Sequence[str], world_seeds: Sequence[int], seeds: Sequence[int], *,
            agents: str = "v2") -> BlindSet:
    """Play every blind agent of a set on every gym it applies to, and every task's gold program, at each world seed.

    Raises:
        ValueError: An unknown agent set, naming the known ones.
    """
    if agents not in AGENT_SETS:
        raise ValueError(f"unknown blind agent set {agents!r}; known: {', '.join(AGENT_SETS)}")
    blind = importlib.import_module(AGENT_SETS[agents])
    out = BlindSet(agent_count=len(blind.AGENTS))
    packs: list[Pack] = []
    for world_seed in world_seeds:
        for domain in domains:
            pack = blind.base_pack(domain, world_seed)
            packs.append(pack)
            for spec in blind.AGENTS:
                if domain not in spec.domains:
                    continue
                for record, label in blind.play(spec, domain, list(seeds), 1, world_seed=world_seed):
                    out.episodes.append(record)
                    out.labels.append(label)
                    out.agents.append(spec.name)
                    out.seeds.append(world_seed)
            _gold(out, pack)
    out.ctx = diagnosis_context(packs)
    return out


def _gold(out: BlindSet, pack: Pack) -> None:
    with Gym(pack) as gym:
        for task in pack.tasks:
            record = play_episode(gym, ProgramAgent(gold_program(task, random.Random(task.id))),
                                  EpisodeKey(pack.id, task.id, 0, 0))
            if record.passed:
                out.gold.append(record)
            else:
                out.gold_failed.append(f"{pack.manifest.domain}/{pack.manifest.seed}/{task.id}")


@dataclass(frozen=True)
class KindQuality:
    """Precision and recall of one kind over the labelled failures."""

    kind: str
    tagged: int
    correct: int
    injected: int
    found: int
    false_by_label: dict[str, int]

    @property
    def precision(self) -> float | None:
        """Share of the labelled failures tagged with the kind that were injected with it."""
        return self.correct / self.tagged if self.tagged else None

    @property
    def recall(self) -> float | None:
        """Share of the failures injected with the kind that were tagged with it."""
        return self.found / self.injected if self.injected else None


@dataclass
class Quality:
    """The figures."""

    kinds: list[KindQuality]
    ari: float
    clusters: int
    novel_weaknesses: int
    count_spearman: float
    rank_spearman: float
    round_count_spearman: list[float]
    round_rank_spearman: list[float]
    counts: list[tuple[str, int, int, int]]
    confusion: Counter[tuple[str, str]]
    clean_failures: int
    clean_tags: Counter[str]
    gold_tags: Counter[str]
    gold_examples: list[str]
    clean_pass_tags: Counter[str]
    per_seed: dict[int, list[KindQuality]]
    episodes: int
    labelled_failures: int
    per_domain: dict[str, list[KindQuality]] = field(default_factory=dict)
    pairs: dict[str, Counter[str]] = field(default_factory=dict)


def tags_of(episode: EpisodeRecord, ctx: DiagnosisContext) -> set[str]:
    """The kinds ``diagnose`` gives an episode (the registered detectors' tags it counts, primary and secondary)."""
    return {t.kind for t in episode_tags(episode, ctx)}


def label_kinds(label: str) -> set[str]:
    """The kinds a label names: one, or two joined by ``+`` (primary first)."""
    return set(label.split("+"))


def _kind_quality(labels: Sequence[str], kinds_of: Sequence[set[str]]) -> list[KindQuality]:
    out: list[KindQuality] = []
    for kind in detector_names():
        tagged = [label for label, ks in zip(labels, kinds_of, strict=True) if kind in ks]
        wrong = Counter(label for label in tagged if kind not in label_kinds(label))
        own = [ks for label, ks in zip(labels, kinds_of, strict=True) if kind in label_kinds(label)]
        out.append(KindQuality(kind, len(tagged), len(tagged) - sum(wrong.values()), len(own),
                               sum(kind in ks for ks in own), dict(sorted(wrong.items()))))
    return out


def _novel_members(report: WeaknessReport) -> list[list[str]]:
    return [w.example_episode_ids for w in report.weaknesses if w.kind == WeaknessKind.NOVEL]


def reported_counts(report: WeaknessReport, label_of: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """Each label's failures and kind rank as the report gives them.

    A kind: its count summed over its grains, and its rank. A novel mode: the counts of the novel weaknesses
    whose members it mostly is, and the novel kind's rank (the report needs ``examples`` covering every member).
    """
    kinds = getattr(report, "kinds", None)
    if kinds:
        counts = {k.kind: k.count for k in kinds if k.kind != WeaknessKind.NOVEL}
        ranks = {k.kind: k.rank for k in kinds}
    else:  # a report of one level (gymloop before the two-level ranking): a kind's best rank among its weaknesses
        counts = dict(report.tag_counts)
        best: dict[str, int] = {}
        for w in sorted(report.weaknesses, key=lambda w: w.rank):
            best.setdefault(w.kind, len(best) + 1)
        ranks = best
    unranked = len(ranks) + 1
    for members in _novel_members(report):
        majority = Counter(label_of.get(e, "") for e in members).most_common(1)
        if majority and majority[0][0].startswith(f"{WeaknessKind.NOVEL}:"):
            counts[majority[0][0]] = counts.get(majority[0][0], 0) + len(members)
            ranks[majority[0][0]] = ranks.get(WeaknessKind.NOVEL, unranked)
    return counts, {label: ranks.get(label, unranked) for label in set(counts) | set(ranks)}


def _spearmans(injected: Counter[str], report: WeaknessReport, label_of: dict[str, str]) -> tuple[float, float]:
    counts, ranks = reported_counts(report, label_of)
    present = sorted(injected)
    unranked = len(ranks) + 1
    xs = [injected[label] for label in present]
    count_rho = float(spearmanr(xs, [counts.get(label, 0) for label in present]).statistic)
    rank_rho = float(spearmanr(xs, [-ranks.get(label, unranked) for label in present]).statistic)
    return count_rho, rank_rho


def measure(blind: BlindSet, *, rounds: int = 5, seed: int = 0) -> Quality:
    """Score the detectors, the clustering and the two-level ranking against the labels."""
    ctx = blind.ctx
    failed = blind.failed()
    every_labelled = [i for i in failed if blind.labels[i] != CLEAN]
    labelled = [i for i in every_labelled if "+" not in blind.labels[i]]
    kinds_of = {i: tags_of(blind.episodes[i], ctx) for i in failed}
    labels = [blind.labels[i] for i in labelled]
    label_of = {blind.episodes[i].episode_id: blind.labels[i] for i in labelled}
    confusion: Counter[tuple[str, str]] = Counter()
    for i in every_labelled:
        confusion.update((blind.labels[i], k) for k in kinds_of[i] or {""})
    pairs: dict[str, Counter[str]] = {}
    for i in every_labelled:
        if "+" in blind.labels[i]:
            primary, secondary = blind.labels[i].split("+")
            found = (primary in kinds_of[i], secondary in kinds_of[i])
            outcome = {(True, True): "both", (True, False): "primary only", (False, True): "secondary only",
                       (False, False): "neither"}[found]
            pairs.setdefault(blind.labels[i], Counter()).update([outcome])
    episodes = [blind.episodes[i] for i in labelled]
    report = diagnose(episodes, ctx, seed=seed, examples=len(episodes))
    if report.tag_counts != dict(sorted(Counter(k for i in labelled for k in kinds_of[i]).items())):
        raise RuntimeError("diagnose's tag counts differ from the detectors run on the same context")
    where = {eid: c.id for c in report.clusters for eid in c.example_episode_ids}
    assigned = [where.get(e.episode_id, -1 - n) for n, e in enumerate(episodes)]
    injected = Counter(labels)
    count_rho, rank_rho = _spearmans(injected, report, label_of)
    counts, ranks = reported_counts(report, label_of)
    table = [(label, injected[label], counts.get(label, 0), ranks.get(label, len(ranks) + 1))
             for label in sorted(injected, key=lambda x: -injected[x])]
    round_counts, round_ranks = [], []
    for r in range(rounds):
        chosen = _round(labelled, blind, r)
        sub = [blind.episodes[i] for i in chosen]
        sub_report = diagnose(sub, ctx, seed=seed + r, examples=len(sub))
        c, k = _spearmans(Counter(blind.labels[i] for i in chosen), sub_report, label_of)
        round_counts.append(c)
        round_ranks.append(k)
    clean_failed = [i for i in failed if blind.labels[i] == CLEAN]
    gold_tags: Counter[str] = Counter()
    examples: list[str] = []
    for episode in blind.gold:
        for kind in tags_of(episode, ctx):
            gold_tags[kind] += 1
            if len(examples) < 8:
                examples.append(f"{episode.domain}/{episode.task_id}: {kind}")
    clean_pass = Counter(k for e, label in zip(blind.episodes, blind.labels, strict=True)
                         if label == CLEAN and e.passed for k in tags_of(e, ctx))
    per_seed = {s: _kind_quality([blind.labels[i] for i in every_labelled if blind.seeds[i] == s],
                                 [kinds_of[i] for i in every_labelled if blind.seeds[i] == s])
                for s in sorted(set(blind.seeds))}
    domains = sorted({blind.episodes[i].domain for i in every_labelled})
    per_domain = {d: _kind_quality([blind.labels[i] for i in every_labelled if blind.episodes[i].domain == d],
                                   [kinds_of[i] for i in every_labelled if blind.episodes[i].domain == d])
                  for d in domains}
    return Quality(
        kinds=_kind_quality([blind.labels[i] for i in every_labelled], [kinds_of[i] for i in every_labelled]),
        ari=float(adjusted_rand_score(labels, assigned)), clusters=len(report.clusters),
        novel_weaknesses=len(_novel_members(report)), count_spearman=count_rho, rank_spearman=rank_rho,
        round_count_spearman=round_counts, round_rank_spearman=round_ranks, counts=table, confusion=confusion,
        clean_failures=len(clean_failed), clean_tags=Counter(k for i in clean_failed for k in kinds_of[i]),
        gold_tags=gold_tags, gold_examples=examples, clean_pass_tags=clean_pass, per_seed=per_seed,
        episodes=len(blind.episodes), labelled_failures=len(every_labelled), per_domain=per_domain, pairs=pairs,
    )


def _round(labelled: list[int], blind: BlindSet, round_index: int) -> list[int]:
    """A random mix keeping each label's failures at a distinct share (shuffled per round)."""
    rng = random.Random(f"blind-round|{round_index}")
    present = sorted({blind.labels[i] for i in labelled})
    shares = [ROUND_SHARES[i % len(ROUND_SHARES)] for i in range(len(present))]
    rng.shuffle(shares)
    share_of = dict(zip(present, shares, strict=True))
    return [i for i in labelled if rng.random() < share_of[blind.labels[i]]]


def _ratio(value: float | None, target: float) -> str:
    return "—" if value is None else f"{value:.3f} ({value / target:.2f})"


def _short(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def render(blind: BlindSet, quality: Quality) -> str:
    """The figures as Markdown."""
    lines = [f"{quality.episodes} episodes of {blind.agent_count} blind agents; {quality.labelled_failures} labelled "
             f"failures; {quality.clean_failures} failures of the clean agents (no label); "
             f"{len(blind.gold)} gold traces", "",
             f"| kind | tagged | precision (/ {PRECISION_TARGET}) | injected | recall (/ {RECALL_TARGET}) | "
             "false tags by label |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for q in quality.kinds:
        false = ", ".join(f"{m} {n}" for m, n in q.false_by_label.items()) or "—"
        lines.append(f"| {q.kind} | {q.tagged} | {_ratio(q.precision, PRECISION_TARGET)} | {q.injected} | "
                     f"{_ratio(q.recall, RECALL_TARGET)} | {false} |")
    lines += ["", f"ARI of diagnose's clusters against the labels: {_ratio(quality.ari, ARI_TARGET)} "
                  f"({quality.clusters} clusters, {quality.novel_weaknesses} novel weaknesses)",
              f"Spearman, injected vs reported failures per label: whole set {quality.count_spearman:.3f}; rounds "
              + ", ".join(f"{s:.3f}" for s in quality.round_count_spearman) + f" (target {SPEARMAN_TARGET})",
              f"Spearman, injected failures vs kind rank: whole set {quality.rank_spearman:.3f}; rounds "
              + ", ".join(f"{s:.3f}" for s in quality.round_rank_spearman),
              "", "| label | injected failures | reported failures | kind rank |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {label} | {inj} | {rep} | {rank} |" for label, inj, rep, rank in quality.counts]
    lines += ["", f"gold traces: {len(blind.gold)}, tags on them: {sum(quality.gold_tags.values())} "
                  f"{dict(quality.gold_tags) or ''}; clean agents' passes tagged: "
                  f"{sum(quality.clean_pass_tags.values())} {dict(quality.clean_pass_tags) or ''}"]
    lines += [f"  - {e}" for e in quality.gold_examples]
    if blind.gold_failed:
        lines.append(f"gold programs that fail their own task (left out): {len(blind.gold_failed)}")
    lines.append(f"tags on the clean agents' {quality.clean_failures} failures: {dict(quality.clean_tags) or '—'}")
    for title, table in (("world seed", {f"seed {s}": q for s, q in sorted(quality.per_seed.items())}),
                         ("gym", dict(sorted(quality.per_domain.items())))):
        lines += ["", f"Per {title} (precision / recall):", "",
                  "| kind | " + " | ".join(table) + " |", "| --- |" + " ---: |" * len(table)]
        for n, q in enumerate(quality.kinds):
            cells = [f"{_short(qs[n].precision)} / {_short(qs[n].recall)}" for qs in table.values()]
            lines.append(f"| {q.kind} | " + " | ".join(cells) + " |")
    if quality.pairs:
        outcomes = ("both", "primary only", "secondary only", "neither")
        lines += ["", "Two kinds at once (kept out of the ARI and the Spearmans; counted for both kinds above):", "",
                  "| label | failures | " + " | ".join(outcomes) + " |", "| --- | ---: |" + " ---: |" * len(outcomes)]
        lines += [f"| {label} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in outcomes) + " |"
                  for label, c in sorted(quality.pairs.items())]
    names = detector_names()
    lines += ["", "| label | " + " | ".join(names) + " | untagged |", "| --- |" + " ---: |" * (len(names) + 1)]
    for label in sorted({label for label, _ in quality.confusion}):
        row = [str(quality.confusion.get((label, k), 0)) for k in names]
        lines.append(f"| {label} | " + " | ".join(row) + f" | {quality.confusion.get((label, ''), 0)} |")
    return "\n".join(lines)


def misses(quality: Quality) -> list[str]:
    """Targets missed, one line each."""
    out = [f"{q.kind} precision {q.precision:.3f} < {PRECISION_TARGET}" for q in quality.kinds
           if q.precision is not None and q.precision < PRECISION_TARGET]
    out += [f"{q.kind} recall {q.recall:.3f} < {RECALL_TARGET}" for q in quality.kinds
            if q.recall is not None and q.recall < RECALL_TARGET]
    out += [f"{q.kind} has no injected failure" for q in quality.kinds if q.injected == 0]
    if quality.ari < ARI_TARGET:
        out.append(f"ARI {quality.ari:.3f} < {ARI_TARGET}")
    counts = [quality.count_spearman, *quality.round_count_spearman]
    ranks = [quality.rank_spearman, *quality.round_rank_spearman]
    if min(counts) < SPEARMAN_TARGET:
        out.append(f"Spearman injected vs reported {min(counts):.3f} < {SPEARMAN_TARGET}")
    if min(ranks) < SPEARMAN_TARGET:
        out.append(f"Spearman injected vs kind rank {min(ranks):.3f} < {SPEARMAN_TARGET}")
    if quality.gold_tags or quality.clean_pass_tags:
        out.append(f"{sum(quality.gold_tags.values()) + sum(quality.clean_pass_tags.values())} tags on gold traces "
                   "and clean passes")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Play the blind agents, print the figures, and return 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default="v2", choices=sorted(AGENT_SETS), help="the blind agent set")
    parser.add_argument("--domains", default=",".join(DOMAINS), help="comma-separated gyms")
    parser.add_argument("--world-seeds", default="0,1,2", help="world seeds of the packs played")
    parser.add_argument("--seeds", default="0", help="episode seeds")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the ranking figure")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    start = time.perf_counter()
    blind = collect([d.strip() for d in args.domains.split(",") if d.strip()],
                    [int(s) for s in args.world_seeds.split(",")], [int(s) for s in args.seeds.split(",")],
                    agents=args.agents)
    played = time.perf_counter() - start
    quality = measure(blind, rounds=args.rounds)
    print(render(blind, quality))
    print(f"\nagents {args.agents}, gyms {args.domains}, world seeds {args.world_seeds}, episode seeds {args.seeds}; "
          f"episodes {played:.1f} s, diagnosis {time.perf_counter() - start - played:.1f} s; load average "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    missed = misses(quality)
    print("targets met" if not missed else "targets missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

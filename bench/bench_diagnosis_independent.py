"""Diagnosis quality on agents that are not the reference policy: injected mistakes in each task's gold program.

The labelled set (``bench.independent_mistakes``): the gold program of every task of each gym, at several world
seeds, with one mistake injected at a time (reads and writes, other call orders, replies in several voices),
played in the real gym; failed episodes are kept with the injected mode as their label. One world seed's
episodes are replayed by the LiteLLM agent through the scripted OpenAI-compatible server
(``arena/agents/scripted_server.py``), the same code path as a real model. Every gold trace (all tasks, all
gyms, world seeds 0-4, with its own reply and with a claim in another voice) is a negative: it must get no tag.

Figures:
- precision and recall per kind (precision: of the episodes tagged K, the share injected with K; recall: of the
  episodes injected with K, the share tagged K);
- ARI of ``diagnose``'s clusters against the injected modes (the novel mode included);
- per round (a random mix of the modes at distinct frequencies), Spearman between each mode's injected count and
  the count the report gives it (detector kinds: ``primary_counts``, the failures each explains first; the
  novel mode: its novel weaknesses);
- tags on gold traces.
Targets: precision >= 0.9 and recall >= 0.85 for every kind, ARI >= 0.8, Spearman >= 0.9 in every round, 0 tags
on gold. Exits 1 when a target is missed.

Run: python bench/bench_diagnosis_independent.py [--domains ...] [--world-seeds 0,1,2] [--litellm-seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import spearmanr
from sklearn.metrics import adjusted_rand_score

from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.scripted_server import ReplyCue, ScriptedModelServer, ToolCallCue
from arena.core.episode import EpisodeRecord
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.results import TraceStep
from arena.rollout import EpisodeKey, play_episode
from bench.independent_mistakes import (
    INJECTORS,
    MODES,
    NOVEL_MODE,
    Call,
    Case,
    Program,
    ProgramAgent,
    World,
    gold_program,
)
from diagnosis import BUILTIN_DETECTORS, DiagnosisContext, WeaknessKind, diagnose, episode_tags

PRECISION_TARGET = 0.9
RECALL_TARGET = 0.85
ARI_TARGET = 0.8
SPEARMAN_TARGET = 0.9
DOMAINS = ("helpdesk", "procurement", "tracker")
ROUND_SHARES = (1.0, 0.8, 0.62, 0.48, 0.37, 0.28, 0.21, 0.15, 0.1, 0.06, 0.03)
"""Shares of each mode's episodes a round keeps, shuffled per round so modes differ in frequency."""


@dataclass
class Labelled:
    """The labelled failures and the gold negatives.

    Attributes:
        episodes: Failed episodes with an injected mistake.
        labels: Injected mode of each.
        ctx: Tool specs, dependency graphs and tasks of every pack played.
        gold: Gold episodes (negatives), with the world seed each came from.
        gold_failed: Gold episodes that did not pass (tasks left out), as ``domain/seed/task``.
        passed_injections: Injections the verifier passed, by mode (not failures, left out).
        by_agent: Labelled failures per agent.
        seeds: World seed of each labelled failure.
        gold_seeds: World seed of each gold episode.
    """

    episodes: list[EpisodeRecord] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    ctx: DiagnosisContext = field(default_factory=DiagnosisContext)
    gold: list[EpisodeRecord] = field(default_factory=list)
    gold_failed: list[str] = field(default_factory=list)
    passed_injections: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    seeds: list[int] = field(default_factory=list)
    gold_seeds: list[int] = field(default_factory=list)


class _Replayer:
    """Replays a recorded program through the LiteLLM agent and one scripted OpenAI-compatible server."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.reply = ""
        self.server = ScriptedModelServer(self._cue).start()
        self.agent = LiteLLMAgent(LiteLLMConfig(model="openai/scripted", api_base=self.server.base_url + "/v1",
                                                api_key="scripted", timeout_s=30.0, max_retries=0, max_steps=60))

    def _cue(self, messages: list[dict[str, Any]]) -> ToolCallCue | ReplyCue:
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done < len(self.calls):
            tool, args = self.calls[done]
            return ToolCallCue(tool, json.dumps(args))
        return ReplyCue(self.reply)

    def play(self, gym: Gym, record: EpisodeRecord) -> EpisodeRecord:
        self.calls = [(s.tool, s.arguments) for s in record.trace]
        self.reply = record.reply
        return play_episode(gym, self.agent, EpisodeKey(record.pack_id, record.task_id, record.seed, 0))

    def close(self) -> None:
        self.server.stop()


def context_for(packs: Sequence[Pack]) -> DiagnosisContext:
    """Tool specs, the packs' dependency graphs merged, and their tasks."""
    edges = [e for p in packs for e in p.graph.get("edges", p.graph.get("links", []))]
    nodes = [n for p in packs for n in p.graph.get("nodes", [])]
    graph = {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "edges": edges}
    return DiagnosisContext.build(tools=[t for p in packs for t in p.tools], graph=graph,
                                  tasks={(p.id, t.id): t for p in packs for t in p.tasks})


def _play(gym: Gym, program: Program, task_id: str) -> EpisodeRecord:
    agent = ProgramAgent(program)
    return play_episode(gym, agent, EpisodeKey(gym.pack.id, task_id, 0, 0))


def label(domains: Sequence[str], world_seeds: Sequence[int], gold_seeds: Sequence[int],
          litellm_seed: int | None) -> Labelled:
    """Play the gold programs and their injected mistakes; keep the failures with their labels."""
    out = Labelled()
    packs: list[Pack] = []
    replayer = _Replayer() if litellm_seed is not None else None
    try:
        for domain in domains:
            for seed in sorted(set(world_seeds) | set(gold_seeds)):
                pack = build_pack(domain, seed=seed)
                packs.append(pack)
                _label_pack(out, pack, inject=seed in world_seeds,
                            replayer=replayer if seed == litellm_seed else None)
    finally:
        if replayer is not None:
            replayer.close()
    out.ctx = context_for(packs)
    return out


def _prober(gym: Gym, task_id: str) -> Callable[[list[Call]], list[TraceStep]]:
    def probe(calls: list[Call]) -> list[TraceStep]:
        return _play(gym, Program("probe", "", calls, str), task_id).trace

    return probe


def _label_pack(out: Labelled, pack: Pack, *, inject: bool, replayer: _Replayer | None) -> None:
    world = World.of(pack)
    with Gym(pack) as gym:
        for task in pack.tasks:
            rng = random.Random(f"{pack.manifest.seed}|{task.id}")
            gold = _play(gym, gold_program(task, rng), task.id)
            if not gold.passed:
                out.gold_failed.append(f"{pack.manifest.domain}/{pack.manifest.seed}/{task.id}")
                continue
            out.gold.append(gold)
            out.gold_seeds.append(pack.manifest.seed)
            rephrased = _play(gym, gold_program(task, rng, rephrase=True), task.id)
            if rephrased.passed:
                out.gold.append(rephrased.model_copy(update={"episode_id": "rephrased:" + rephrased.episode_id}))
                out.gold_seeds.append(pack.manifest.seed)
            if not inject:
                continue
            case = Case(pack, task, world, gold, rng, probe=_prober(gym, task.id))
            for mode in MODES:
                for program in INJECTORS[mode](case):
                    record = _play(gym, program, task.id)
                    if replayer is not None:
                        record = replayer.play(gym, record)
                    if record.passed or record.invalid or (record.failure and record.failure.boundary != "agent"):
                        out.passed_injections[mode] += 1
                        continue
                    eid = f"{mode}:{program.variant}:{pack.manifest.seed}:{record.episode_id}"
                    out.episodes.append(record.model_copy(update={"episode_id": eid}))
                    out.labels.append(mode)
                    out.seeds.append(pack.manifest.seed)
                    out.by_agent[record.agent] += 1


@dataclass(frozen=True)
class KindQuality:
    """Precision and recall of one kind."""

    kind: str
    tagged: int
    correct: int
    injected: int
    found: int
    false_by_mode: dict[str, int]

    @property
    def precision(self) -> float | None:
        """Share of tagged episodes injected with the kind."""
        return self.correct / self.tagged if self.tagged else None

    @property
    def recall(self) -> float | None:
        """Share of the kind's injected episodes tagged with it."""
        return self.found / self.injected if self.injected else None


@dataclass(frozen=True)
class SeedQuality:
    """The detector and clustering figures on one world seed's labelled failures alone.

    Attributes:
        seed: World seed.
        episodes: Labelled failures at that seed.
        kinds: Precision and recall per kind at that seed.
        ari: ARI of ``diagnose``'s clusters on that seed's failures alone.
        gold: Gold traces at that seed.
        gold_tags: Tags on them.
    """

    seed: int
    episodes: int
    kinds: list[KindQuality]
    ari: float | None
    gold: int
    gold_tags: int


@dataclass
class Quality:
    """The figures."""

    kinds: list[KindQuality]
    ari: float
    clusters: int
    novel_weaknesses: int
    novel_purity: float
    spearman: list[float]
    gold_tags: Counter[str]
    gold_examples: list[str]
    confusion: Counter[tuple[str, str]]
    per_seed: list[SeedQuality] = field(default_factory=list)


def _kind_quality(labels: Sequence[str], kinds_of: Sequence[set[str]]) -> list[KindQuality]:
    out: list[KindQuality] = []
    for detector in BUILTIN_DETECTORS:
        kind = detector.name
        tagged = [m for m, ks in zip(labels, kinds_of, strict=True) if kind in ks]
        wrong = Counter(m for m in tagged if m != kind)
        own = [ks for m, ks in zip(labels, kinds_of, strict=True) if m == kind]
        out.append(KindQuality(kind, len(tagged), len(tagged) - sum(wrong.values()), len(own),
                               sum(kind in ks for ks in own), dict(sorted(wrong.items()))))
    return out


def _ari(episodes: Sequence[EpisodeRecord], labels: Sequence[str], ctx: DiagnosisContext,
         seed: int) -> tuple[float, Any]:
    report = diagnose(episodes, ctx, seed=seed, examples=len(episodes))
    where = {eid: c.id for c in report.clusters for eid in c.example_episode_ids}
    assigned = [where.get(e.episode_id, -1 - i) for i, e in enumerate(episodes)]
    return float(adjusted_rand_score(labels, assigned)), report


def _tags(episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Any]:
    """The tags ``diagnose`` counts (primary and secondary)."""
    return episode_tags(episode, ctx)


def measure(labelled: Labelled, *, rounds: int = 5, seed: int = 0) -> Quality:
    """Score the detectors, the clustering and the ranking against the injected modes."""
    ctx = labelled.ctx
    kinds_of = [{t.kind for t in _tags(e, ctx)} for e in labelled.episodes]
    confusion: Counter[tuple[str, str]] = Counter()
    for mode, kinds in zip(labelled.labels, kinds_of, strict=True):
        confusion.update((mode, k) for k in kinds or {""})
    ari, report = _ari(labelled.episodes, labelled.labels, ctx, seed)
    novel = [w for w in report.weaknesses if w.kind == WeaknessKind.NOVEL]
    novel_ids = {eid for w in novel for c in report.clusters if c.id in w.cluster_ids for eid in c.example_episode_ids}
    truth = {e.episode_id for e, m in zip(labelled.episodes, labelled.labels, strict=True) if m == NOVEL_MODE}
    purity = len(novel_ids & truth) / len(novel_ids) if novel_ids else 0.0
    gold_tags: Counter[str] = Counter()
    gold_tags_by_seed: Counter[int] = Counter()
    examples: list[str] = []
    for episode, world_seed in zip(labelled.gold, labelled.gold_seeds, strict=True):
        for tag in _tags(episode, ctx):
            gold_tags[tag.kind] += 1
            gold_tags_by_seed[world_seed] += 1
            if len(examples) < 8:
                examples.append(f"{episode.domain}/{world_seed}/{episode.task_id}: {tag.kind} "
                                f"({tag.evidence[0].note})")
    per_seed: list[SeedQuality] = []
    for world_seed in sorted(set(labelled.seeds) | set(labelled.gold_seeds)):
        at = [i for i, s in enumerate(labelled.seeds) if s == world_seed]
        labels = [labelled.labels[i] for i in at]
        seed_ari = _ari([labelled.episodes[i] for i in at], labels, ctx, seed)[0] if at else None
        per_seed.append(SeedQuality(world_seed, len(at), _kind_quality(labels, [kinds_of[i] for i in at]), seed_ari,
                                    labelled.gold_seeds.count(world_seed), gold_tags_by_seed[world_seed]))
    spearman = [_round_spearman(labelled, r, seed) for r in range(rounds)]
    return Quality(_kind_quality(labelled.labels, kinds_of), ari, len(report.clusters), len(novel), purity, spearman,
                   gold_tags, examples, confusion, per_seed)


def _round_spearman(labelled: Labelled, round_index: int, seed: int) -> float:
    rng = random.Random(f"round|{round_index}")
    present = [m for m in MODES if m in set(labelled.labels)]
    shares = list(ROUND_SHARES[:len(present)])
    rng.shuffle(shares)
    share_of = dict(zip(present, shares, strict=True))
    chosen: list[EpisodeRecord] = []
    injected: Counter[str] = Counter()
    for episode, mode in zip(labelled.episodes, labelled.labels, strict=True):
        if rng.random() < share_of[mode]:
            chosen.append(episode)
            injected[mode] += 1
    report = diagnose(chosen, labelled.ctx, seed=seed + round_index)
    reported: dict[str, int] = {kind: count for kind, count in report.primary_counts.items()}
    reported[NOVEL_MODE] = sum(w.count for w in report.weaknesses if w.kind == WeaknessKind.NOVEL)
    xs = [injected[m] for m in present]
    ys = [reported.get(m, 0) for m in present]
    return float(spearmanr(xs, ys).statistic)


def _ratio(value: float | None, target: float) -> str:
    return "—" if value is None else f"{value:.3f} ({value / target:.2f})"


def _short(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def render(labelled: Labelled, quality: Quality) -> str:
    """Render the figures as Markdown."""
    per_mode = Counter(labelled.labels)
    lines = ["| injected mode | failed episodes | injections the verifier passed |", "| --- | ---: | ---: |"]
    lines += [f"| {m} | {per_mode[m]} | {labelled.passed_injections[m]} |" for m in MODES]
    lines += ["", f"| kind | tagged | precision (/ {PRECISION_TARGET}) | injected | recall (/ {RECALL_TARGET}) | "
                  "false tags by mode |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for q in quality.kinds:
        false = ", ".join(f"{m} {n}" for m, n in q.false_by_mode.items()) or "—"
        lines.append(f"| {q.kind} | {q.tagged} | {_ratio(q.precision, PRECISION_TARGET)} | {q.injected} | "
                     f"{_ratio(q.recall, RECALL_TARGET)} | {false} |")
    lines += ["", f"ARI of diagnose's clusters against the injected modes: {_ratio(quality.ari, ARI_TARGET)} "
                  f"({quality.clusters} clusters)",
              f"novel weaknesses: {quality.novel_weaknesses} (share of their episodes injected with {NOVEL_MODE}: "
              f"{quality.novel_purity:.3f})",
              "Spearman (injected vs reported count) per round: "
              + ", ".join(f"{s:.3f}" for s in quality.spearman) + f" (min {min(quality.spearman):.3f} / "
              f"{SPEARMAN_TARGET})",
              f"gold traces: {len(labelled.gold)}, tags on them: {sum(quality.gold_tags.values())} "
              f"{dict(quality.gold_tags) or ''}"]
    lines += [f"  - {e}" for e in quality.gold_examples]
    shown = [q for q in quality.per_seed if q.episodes]
    lines += ["", "Per world seed (precision / recall per kind on that seed's failures alone; ARI of diagnose on "
                  "them):", "", "| kind | " + " | ".join(f"seed {q.seed}" for q in shown) + " |",
              "| --- |" + " ---: |" * len(shown)]
    for i, kind in enumerate(q.kind for q in quality.kinds):
        cells = [f"{_short(q.kinds[i].precision)} / {_short(q.kinds[i].recall)}" for q in shown]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append("| ARI | " + " | ".join(_short(q.ari) for q in shown) + " |")
    lines.append("| labelled failures | " + " | ".join(str(q.episodes) for q in shown) + " |")
    lines.append("gold traces per world seed (tags): "
                 + ", ".join(f"seed {q.seed} {q.gold} ({q.gold_tags})" for q in quality.per_seed if q.gold))
    if labelled.gold_failed:
        lines.append(f"gold programs that fail their own task (left out): {', '.join(labelled.gold_failed)}")
    lines += ["", "| injected mode | " + " | ".join(d.name for d in BUILTIN_DETECTORS) + " | untagged |",
              "| --- |" + " ---: |" * (len(BUILTIN_DETECTORS) + 1)]
    for mode in MODES:
        row = [str(quality.confusion.get((mode, d.name), 0)) for d in BUILTIN_DETECTORS]
        lines.append(f"| {mode} | " + " | ".join(row) + f" | {quality.confusion.get((mode, ''), 0)} |")
    return "\n".join(lines)


def misses(quality: Quality) -> list[str]:
    """Targets missed, one line each."""
    out = [f"{q.kind} precision {q.precision:.3f} < {PRECISION_TARGET}" for q in quality.kinds
           if q.precision is not None and q.precision < PRECISION_TARGET]
    out += [f"{q.kind} recall {q.recall:.3f} < {RECALL_TARGET}" for q in quality.kinds
            if q.recall is not None and q.recall < RECALL_TARGET]
    out += [f"{q.kind} has no injected episode" for q in quality.kinds if q.injected == 0]
    if quality.ari < ARI_TARGET:
        out.append(f"ARI {quality.ari:.3f} < {ARI_TARGET}")
    if min(quality.spearman) < SPEARMAN_TARGET:
        out.append(f"Spearman {min(quality.spearman):.3f} < {SPEARMAN_TARGET}")
    if quality.gold_tags:
        out.append(f"{sum(quality.gold_tags.values())} tags on gold traces")
    if quality.novel_weaknesses != 1:
        out.append(f"{quality.novel_weaknesses} novel weaknesses for one injected unknown mode")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Build the labelled set, print the figures, and return 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", default=",".join(DOMAINS), help="comma-separated gyms")
    parser.add_argument("--world-seeds", default="0,1,2", help="world seeds of the injected mistakes")
    parser.add_argument("--gold-seeds", default="0,1,2,3,4", help="world seeds of the gold negatives")
    parser.add_argument("--litellm-seed", type=int, default=1,
                        help="world seed whose episodes the LiteLLM agent replays (-1: none)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the ranking figure")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    start = time.perf_counter()
    labelled = label([d.strip() for d in args.domains.split(",") if d.strip()],
                     [int(s) for s in args.world_seeds.split(",")], [int(s) for s in args.gold_seeds.split(",")],
                     None if args.litellm_seed < 0 else args.litellm_seed)
    played = time.perf_counter() - start
    quality = measure(labelled, rounds=args.rounds)
    print(render(labelled, quality))
    print(f"\n{len(labelled.episodes)} labelled failures ({dict(labelled.by_agent)}); episodes {played:.1f} s, "
          f"diagnosis {time.perf_counter() - start - played:.1f} s")
    missed = misses(quality)
    print("targets met" if not missed else "targets missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Diagnosis quality: detector precision and recall, and clustering ARI, on labelled failure traces from the gyms.

The labelled set: for every failure mode of the reference policy (``FAILURE_MODES``), the policy with only
that mode injected (``PolicyParams.with_failure``) plays every task of each gym for a few seeds; its failed
episodes are kept, labelled with the mode. Only (task, seed) pairs the careful policy
(``PolicyParams.expert()``) passes are used, so a failure under an injected mode is caused by that mode.

Which kinds a mode causes (``MODE_KINDS``): its own kind (every mode is named after the kind it injects),
plus a few secondary kinds the reference policy's behaviour makes legitimate, each with its reason
(``SECONDARY_KINDS``). Precision of kind K = of the episodes tagged K, the share whose mode causes K.
Recall of kind K = of the episodes injected with the mode named K, the share tagged K. ARI = adjusted Rand
index of the cluster each episode lands in (``diagnose``'s clusters) against the injected modes.
Targets: precision >= 0.9 and recall >= 0.8 per kind; ARI >= 0.7.

What the ARI reads: ``diagnose`` clusters on trace features plus the detector tags (``TAG_WEIGHT``), and on
this set each injected mode maps mostly to one tag, so the tags leak the label into the features. The bench
therefore also reports the ARI of clustering the same episodes on their trace features alone (no tags, every
cluster counted): that figure says what the clustering finds without the detectors' help.

Run: python bench/bench_diagnosis_quality.py [--domains helpdesk,procurement,tracker] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sklearn.metrics import adjusted_rand_score

from arena.agents.reference import FAILURE_MODES, PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.core.weakness import WeaknessKind
from arena.rollout import RolloutConfig, run_rollouts
from diagnosis import BUILTIN_DETECTORS, DiagnosisContext, cluster_rows, diagnose, episode_features, episode_tags

PRECISION_TARGET = 0.9
RECALL_TARGET = 0.8
ARI_TARGET = 0.7
DOMAINS = ("helpdesk", "procurement", "tracker")

_DONE_AFTER_FAILURE = ("the mode leaves a call failing without giving up (a name refused as an id, a conflict "
                       "retried to exhaustion); with nothing to report, the policy's reply is 'Done.', a genuine "
                       "success claim over the failed call")

SECONDARY_KINDS: dict[str, dict[str, str]] = {
    WeaknessKind.SEARCH_WITHOUT_FETCH: {
        WeaknessKind.GAVE_UP_EARLY: "an id mention of an entity with no search tool: the mode searches first, finds no "
                         "search tool, and gives up before any call",
    },
    WeaknessKind.WRONG_ID: {
        WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS: _DONE_AFTER_FAILURE,
    },
    WeaknessKind.STALE_STATE: {
        WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS: _DONE_AFTER_FAILURE,
    },
}
"""Secondary kinds a mode legitimately causes beyond its own, with the reason; kept small on purpose."""

MODE_KINDS: dict[str, frozenset[str]] = {
    mode: frozenset({mode, *SECONDARY_KINDS.get(mode, {})}) for mode in FAILURE_MODES
}
"""Kinds each injected mode causes: the mode's own kind (modes are named after kinds) and its secondaries."""

UNMEASURED: dict[str, str] = {
    WeaknessKind.GAVE_UP_EARLY: "no mode injects giving up while nothing blocks the way (the give-up modes give up "
                                "after an error or an empty search); only its precision is shown",
    WeaknessKind.UNINTENDED_SIDE_EFFECT: "no mode injects writes outside the allowed write-set",
}
"""Detector kinds with no injected mode of their own, and why their recall is not measured."""


@dataclass(frozen=True)
class LabelledSet:
    """Failed episodes labelled with the failure mode injected into the policy that played them.

    Attributes:
        episodes: The failed episodes (episode ids made unique per mode).
        labels: The injected mode of each episode.
        ctx: Tool specs, dependency graph and tasks of the packs played.
        usable: Per domain, (task-seed pairs the careful policy passes, pairs played).
        skipped: Domains left out, with the reason.
    """

    episodes: list[EpisodeRecord]
    labels: list[str]
    ctx: DiagnosisContext
    usable: dict[str, tuple[int, int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KindQuality:
    """Precision and recall of one detector kind on a labelled set.

    Attributes:
        kind: Detector kind.
        tagged: Episodes the detector tagged.
        correct: Tagged episodes whose injected mode causes the kind.
        own: Tagged episodes whose injected mode is the kind itself (no secondary kinds allowed).
        injected: Episodes injected with the mode named after the kind (0 when there is none).
        found: Of those, episodes tagged with the kind.
        false_by_mode: Tagged episodes whose mode does not cause the kind, by mode.
    """

    kind: str
    tagged: int
    correct: int
    own: int
    injected: int
    found: int
    false_by_mode: dict[str, int]

    @property
    def precision(self) -> float | None:
        """Share of tagged episodes whose mode causes the kind (``None`` when nothing was tagged)."""
        return self.correct / self.tagged if self.tagged else None

    @property
    def strict_precision(self) -> float | None:
        """Share of tagged episodes injected with the kind's own mode (secondary kinds count as false)."""
        return self.own / self.tagged if self.tagged else None

    @property
    def recall(self) -> float | None:
        """Share of the kind's own-mode episodes tagged with it (``None`` when the kind has no mode)."""
        return self.found / self.injected if self.injected else None


@dataclass(frozen=True)
class Quality:
    """What the labelled set says about diagnosis.

    Attributes:
        kinds: Quality per detector kind, in detector order.
        ari: Adjusted Rand index of the clusters against the injected modes (features include detector tags).
        ari_without_tags: The same on trace features alone (no detector tags).
        clusters: Clusters ``diagnose`` reported.
        unclustered: Episodes in no reported cluster (clusters below the report's minimum size); each
            counts as its own cluster in the ARI.
        confusion: Episodes per (mode, kind tagged); ``(mode, "")`` counts untagged episodes.
    """

    kinds: list[KindQuality]
    ari: float
    ari_without_tags: float
    clusters: int
    unclustered: int
    confusion: dict[tuple[str, str], int]


def context_for(packs: Sequence[Pack]) -> DiagnosisContext:
    """Tool specs, the packs' dependency graphs merged, and their tasks."""
    edges = [e for p in packs for e in p.graph.get("edges", p.graph.get("links", []))]
    nodes = [n for p in packs for n in p.graph.get("nodes", [])]
    graph = {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "edges": edges}
    return DiagnosisContext.build(tools=[t for p in packs for t in p.tools], graph=graph,
                                  tasks={(p.id, t.id): t for p in packs for t in p.tasks})


def labelled_failures(packs: Sequence[Pack], seeds: Sequence[int],
                      modes: Sequence[str] = tuple(FAILURE_MODES)) -> LabelledSet:
    """Play every task of ``packs`` with each injected mode and keep the labelled failures.

    Args:
        packs: Packs to play.
        seeds: Episode seeds.
        modes: Failure modes to inject.

    Raises:
        KeyError: An unknown failure mode.
    """
    config = RolloutConfig(seeds=list(seeds))
    careful = run_rollouts(ReferencePolicy(PolicyParams.expert()), packs, config)
    solvable = {(r.pack_id, r.task_id, r.seed) for r in careful if r.passed}
    usable: dict[str, tuple[int, int]] = {}
    for pack in packs:
        mine = [r for r in careful if r.pack_id == pack.id]
        usable[pack.manifest.domain] = (sum(r.passed for r in mine), len(mine))
    episodes: list[EpisodeRecord] = []
    labels: list[str] = []
    for mode in modes:
        for record in run_rollouts(ReferencePolicy(PolicyParams.with_failure(mode)), packs, config):
            if record.passed or (record.pack_id, record.task_id, record.seed) not in solvable:
                continue
            episodes.append(record.model_copy(update={"episode_id": f"{mode}:{record.episode_id}"}))
            labels.append(mode)
    return LabelledSet(episodes, labels, context_for(packs), usable)


def build_packs(domains: Sequence[str]) -> tuple[list[Pack], dict[str, str]]:
    """Build each domain's pack at seed 0; a domain whose pack does not build is skipped with the reason."""
    packs: list[Pack] = []
    skipped: dict[str, str] = {}
    for domain in domains:
        try:
            packs.append(build_pack(domain, seed=0))
        except Exception as exc:  # a gym under repair must not stop the measurement of the others
            skipped[domain] = f"pack does not build: {type(exc).__name__}: {exc}"
    return packs, skipped


def measure(labelled: LabelledSet, *, seed: int = 0) -> Quality:
    """Score the detectors and the clustering of ``diagnose`` against the injected modes.

    Args:
        labelled: The labelled failures.
        seed: Seed of ``diagnose``.
    """
    kinds_of: list[set[str]] = [
        {t.kind for t in episode_tags(e, labelled.ctx)} for e in labelled.episodes
    ]
    confusion: Counter[tuple[str, str]] = Counter()
    for mode, kinds in zip(labelled.labels, kinds_of, strict=True):
        confusion.update((mode, k) for k in kinds or {""})
    out: list[KindQuality] = []
    for detector in BUILTIN_DETECTORS:
        kind = detector.name
        tagged = [m for m, ks in zip(labelled.labels, kinds_of, strict=True) if kind in ks]
        wrong = Counter(m for m in tagged if kind not in MODE_KINDS[m])
        own = [ks for m, ks in zip(labelled.labels, kinds_of, strict=True) if m == kind]
        out.append(KindQuality(kind, len(tagged), len(tagged) - sum(wrong.values()), tagged.count(kind), len(own),
                               sum(kind in ks for ks in own), dict(sorted(wrong.items()))))
    ari, clusters, unclustered = _clustering(labelled, seed)
    return Quality(out, ari, _clustering_without_tags(labelled, seed), clusters, unclustered, dict(confusion))


def _clustering(labelled: LabelledSet, seed: int) -> tuple[float, int, int]:
    """ARI of the clusters ``diagnose`` reports (every member listed) against the modes."""
    if len(set(labelled.labels)) < 2:
        return 1.0, 1, 0
    report = diagnose(labelled.episodes, labelled.ctx, seed=seed, examples=len(labelled.episodes))
    where = {eid: c.id for c in report.clusters for eid in c.example_episode_ids}
    unclustered = 0
    assigned: list[int] = []
    for episode in labelled.episodes:
        cluster = where.get(episode.episode_id)
        if cluster is None:
            unclustered += 1
            cluster = -unclustered
        assigned.append(cluster)
    return float(adjusted_rand_score(labelled.labels, assigned)), len(report.clusters), unclustered


def _clustering_without_tags(labelled: LabelledSet, seed: int) -> float:
    """ARI against the modes of clustering the episodes' trace features with no detector tag among them."""
    if len(set(labelled.labels)) < 2:
        return 1.0
    signatures = [episode_features(e, [], labelled.ctx) for e in labelled.episodes]
    rows = sorted(set(signatures))
    index = {row: i for i, row in enumerate(rows)}
    weights = [0] * len(rows)
    for signature in signatures:
        weights[index[signature]] += 1
    result = cluster_rows(rows, weights, seed=seed)
    assigned = [int(result.labels[index[s]]) for s in signatures]
    return float(adjusted_rand_score(labelled.labels, assigned))


def _ratio(value: float | None, target: float) -> str:
    return "—" if value is None else f"{value:.3f} ({value / target:.2f})"


def render(labelled: LabelledSet, quality: Quality) -> str:
    """Render the figures as Markdown tables."""
    lines = ["| gym | task-seed pairs the careful policy passes | played |", "| --- | ---: | ---: |"]
    lines += [f"| {d} | {ok} | {n} |" for d, (ok, n) in labelled.usable.items()]
    lines += [f"| {d} | skipped: {why} | |" for d, why in labelled.skipped.items()]
    per_mode = Counter(labelled.labels)
    lines += ["", "| injected mode | failed episodes | kinds it causes |", "| --- | ---: | --- |"]
    lines += [f"| {m} | {per_mode[m]} | {', '.join(sorted(MODE_KINDS[m]))} |" for m in FAILURE_MODES]
    lines += ["", f"| kind | tagged | precision (/ {PRECISION_TARGET}) | own mode only | own-mode episodes | "
                  f"recall (/ {RECALL_TARGET}) | false tags by mode |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for q in quality.kinds:
        recall = (f"not measured: {UNMEASURED[q.kind]}" if q.kind in UNMEASURED
                  else _ratio(q.recall, RECALL_TARGET))
        false = ", ".join(f"{m} {n}" for m, n in q.false_by_mode.items()) or "—"
        strict = "—" if q.strict_precision is None or q.kind in UNMEASURED else f"{q.strict_precision:.3f}"
        lines.append(f"| {q.kind} | {q.tagged} | {_ratio(q.precision, PRECISION_TARGET)} | {strict} | "
                     f"{q.injected} | {recall} | {false} |")
    lines += ["", f"ARI of diagnose's clusters against the injected modes: {_ratio(quality.ari, ARI_TARGET)} "
                  f"({quality.clusters} clusters reported, {quality.unclustered} episodes in none); "
                  "its features include the detector tags, which map each mode to mostly one tag",
              f"ARI of clustering trace features alone (no detector tags): {quality.ari_without_tags:.3f}"]
    lines += ["", "| injected mode | " + " | ".join(d.name for d in BUILTIN_DETECTORS) + " | untagged |",
              "| --- |" + " ---: |" * (len(BUILTIN_DETECTORS) + 1)]
    for mode in FAILURE_MODES:
        row = [str(quality.confusion.get((mode, d.name), 0)) for d in BUILTIN_DETECTORS]
        lines.append(f"| {mode} | " + " | ".join(row) + f" | {quality.confusion.get((mode, ''), 0)} |")
    return "\n".join(lines)


def misses(quality: Quality) -> list[str]:
    """Targets the figures miss, one line each (empty when every measured target is met)."""
    out = [f"{q.kind} precision {q.precision:.3f} < {PRECISION_TARGET}" for q in quality.kinds
           if q.precision is not None and q.precision < PRECISION_TARGET]
    out += [f"{q.kind} recall {q.recall:.3f} < {RECALL_TARGET}" for q in quality.kinds
            if q.kind not in UNMEASURED and q.recall is not None and q.recall < RECALL_TARGET]
    if quality.ari < ARI_TARGET:
        out.append(f"ARI {quality.ari:.3f} < {ARI_TARGET}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Build the labelled set, print the figures, and return 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", default=",".join(DOMAINS), help="comma-separated gyms")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated episode seeds")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    start = time.perf_counter()
    packs, skipped = build_packs([d.strip() for d in args.domains.split(",") if d.strip()])
    labelled = labelled_failures(packs, seeds)
    labelled.skipped.update(skipped)
    built = time.perf_counter() - start
    quality = measure(labelled)
    print(render(labelled, quality))
    print(f"\n{len(labelled.episodes)} labelled failures from seeds {seeds}; "
          f"rollouts {built:.1f} s, diagnosis {time.perf_counter() - start - built:.1f} s")
    missed = misses(quality)
    print("targets met" if not missed else "targets missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

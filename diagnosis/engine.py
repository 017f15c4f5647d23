"""``diagnose``: from a round's episodes to a ranked WeaknessReport, in one streaming pass."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from arena.core.episode import EPISODE_SCHEMA_VERSION, EpisodeRecord
from arena.core.weakness import WeaknessKind
from diagnosis._trace import is_unknown_tool_error
from diagnosis.clustering import ClusterResult, Method, cluster_rows, vectorize
from diagnosis.context import DiagnosisContext
from diagnosis.detector import Detector, detector_names, get_detector
from diagnosis.features import ABSTRACT_PREFIXES, Signature, episode_features
from diagnosis.knobs import target_for
from diagnosis.models import ClusterSummary, Evidence, Tag, Weakness, WeaknessReport, grain_key
from diagnosis.primary import episode_tags, ordered_kinds
from diagnosis.ranking import impact, rank_report, share_interval

logger = logging.getLogger(__name__)

NOVEL_COVERAGE = 0.5
"""A cluster is novel when fewer than this fraction of its episodes hold any detector tag."""

MIN_CLUSTER_SHARE = 0.01
"""Clusters smaller than this share of failures (and than 3 episodes) are not reported."""


MIN_GRAIN = 3
"""Fewest episodes a (kind, domain, tool) or (kind, domain) weakness needs before it stands on its own."""


@dataclass
class _Failure:
    episode_id: str
    domain: str
    task: int
    lost: float
    kinds: tuple[WeaknessKind, ...]
    """Kinds the failure shows, its primary kind first (``diagnosis.primary.ordered_kinds``)."""
    signature: int
    tools: tuple[str | None, ...] = ()
    """Tool of each kind's first evidence, aligned with ``kinds``."""
    notes: tuple[Evidence, ...] = ()
    """First evidence of each kind, aligned with ``kinds``."""

    def tool_of(self, kind: WeaknessKind) -> str | None:
        return self.tools[self.kinds.index(kind)]

    def evidence_of(self, kind: WeaknessKind) -> Evidence:
        return self.notes[self.kinds.index(kind)]

    def primary(self, kind: str) -> bool:
        """Whether ``kind`` is the failure's primary kind."""
        return bool(self.kinds) and self.kinds[0] == kind


@dataclass
class _Pass:
    """What the streaming pass keeps: counts and one small row per agent failure."""

    examples: int
    episodes: int = 0
    passed: int = 0
    invalid: int = 0
    other: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    failures: list[_Failure] = field(default_factory=list)
    kinds: Counter[WeaknessKind] = field(default_factory=Counter)
    primary: Counter[WeaknessKind] = field(default_factory=Counter)
    tasks: dict[tuple[str, str], int] = field(default_factory=dict)
    task_tags: list[list[str]] = field(default_factory=list)
    task_passes: list[int] = field(default_factory=list)
    signatures: dict[Signature, int] = field(default_factory=dict)
    signature_weights: list[int] = field(default_factory=list)

    def task_index(self, episode: EpisodeRecord) -> int:
        key = (episode.pack_id, episode.task_id)
        index = self.tasks.get(key)
        if index is None:
            index = self.tasks[key] = len(self.task_passes)
            self.task_passes.append(0)
            self.task_tags.append(list(episode.tags))
        return index

    def add_failure(self, episode: EpisodeRecord, tags: list[Tag], signature: Signature) -> None:
        sig = self.signatures.get(signature)
        if sig is None:
            sig = self.signatures[signature] = len(self.signature_weights)
            self.signature_weights.append(0)
        self.signature_weights[sig] += 1
        kinds = ordered_kinds(tags)
        first = {kind: min((t for t in tags if t.kind == kind), key=lambda t: t.secondary).evidence[0]
                 for kind in kinds}
        self.failures.append(_Failure(episode.episode_id, episode.domain, self.task_index(episode),
                                      1.0 - episode.score, kinds, sig,
                                      tuple(first[k].tool or None for k in kinds), tuple(first[k] for k in kinds)))
        self.kinds.update(kinds)
        self.primary.update(kinds[:1])


def _skip_reason(episode: EpisodeRecord, ctx: DiagnosisContext) -> str | None:
    if episode.schema_version != EPISODE_SCHEMA_VERSION:
        return "schema_version"
    if ctx.tools:
        for step in episode.trace:
            if step.tool not in ctx.tools and not is_unknown_tool_error(step):
                return "unknown_tool"
    return None


def diagnose(
    episodes: Iterable[EpisodeRecord],
    ctx: DiagnosisContext | None = None,
    previous: WeaknessReport | None = None,
    seed: int = 0,
    *,
    detectors: Sequence[str | Detector] | None = None,
    history: Mapping[tuple[str, str], float] | None = None,
    round_id: str | None = None,
    method: Method = "auto",
    examples: int = 5,
) -> WeaknessReport:
    """Diagnose a round's episodes into ranked weaknesses.

    Episodes are read once and not kept, so ``episodes`` may be a generator over a large file.
    Passed and invalid episodes are counted, not diagnosed; failures attributed to the model API,
    the environment or the verifier are counted in ``other_failures``; records of another schema
    version, or calling tools the context does not know, are skipped with a warning.

    Args:
        episodes: The round's episode records.
        ctx: Tool specs, dependency graph, tasks and history the detectors may read.
        previous: The previous round's report, for each weakness's trend.
        seed: Seed of the clustering and the bootstrap.
        detectors: Detectors (or registered names) to run; all registered ones by default.
        history: Past pass rate per ``(pack_id, task_id)``, merged over ``ctx.history``.
        round_id: Round id recorded in the report.
        method: Clustering method (see ``diagnosis.clustering``).
        examples: Example episodes kept per weakness and cluster.

    Returns:
        The report; empty weaknesses when there is no agent failure.
    """
    ctx = ctx or DiagnosisContext()
    chosen = [get_detector(d) if isinstance(d, str) else d for d in (detectors or detector_names())]
    state = _Pass(examples=examples)
    for episode in episodes:
        reason = _skip_reason(episode, ctx)
        if reason is not None:
            state.skipped[reason] += 1
            continue
        state.episodes += 1
        state.models[episode.model_ref] += 1
        if episode.invalid:
            state.invalid += 1
        elif episode.passed:
            state.passed += 1
            state.task_passes[state.task_index(episode)] += 1
        elif episode.failure is not None and episode.failure.boundary != "agent":
            state.other[episode.failure.boundary] += 1
        else:
            tags = episode_tags(episode, ctx, chosen)
            state.add_failure(episode, tags, episode_features(episode, tags, ctx))
    if state.skipped:
        logger.warning("diagnosis skipped %d episode records: %s", sum(state.skipped.values()),
                       ", ".join(f"{n} {reason}" for reason, n in sorted(state.skipped.items())))
    report = WeaknessReport(
        round_id=round_id, seed=seed, episodes=state.episodes, passed=state.passed, invalid=state.invalid,
        failures=len(state.failures), other_failures=dict(sorted(state.other.items())),
        skipped=dict(sorted(state.skipped.items())),
        model_ref=state.models.most_common(1)[0][0] if state.models else "",
    )
    if not state.failures:
        return report
    merged_history = {**ctx.history, **(history or {})}
    return _finish(report, state, merged_history, previous, seed, method)


def _cluster(rows: list[Signature], weights: list[int], method: Method, seed: int) -> ClusterResult:
    """Cluster tagged behaviours on all their features, and untagged ones apart on features that name no tool.

    What no detector names is grouped by what it does (repeated writes, error kinds, the reply), not by the
    domain's tool names, so one unknown failure mode across gyms comes out as one group.
    """
    tagged = [i for i, row in enumerate(rows) if any(name.startswith("tag:") for name, _ in row)]
    untagged = [i for i, row in enumerate(rows) if i not in set(tagged)]
    labels = np.zeros(len(rows), dtype=np.int64)
    params: dict[str, object] = {"method": method}
    offset = 0
    for part, project in ((tagged, False), (untagged, True)):
        if not part:
            continue
        part_rows = [tuple((n, v) for n, v in rows[i] if n.startswith(ABSTRACT_PREFIXES)) if project else rows[i]
                     for i in part]
        found = cluster_rows(part_rows, [weights[i] for i in part], method=method, seed=seed)
        labels[part] = found.labels + offset
        offset = int(labels[part].max()) + 1
        params.update({k: v for k, v in found.params.items() if k not in ("clusters", "distinct_rows", "sampled_rows")})
    matrix, names = vectorize(rows)
    params.update({"distinct_rows": len(rows), "clusters": offset, "untagged_rows": len(untagged)})
    return ClusterResult(labels, matrix, names, dict(params))


def _finish(report: WeaknessReport, state: _Pass, history: Mapping[tuple[str, str], float],
            previous: WeaknessReport | None, seed: int, method: Method) -> WeaknessReport:
    rows = list(state.signatures)
    result = _cluster(rows, state.signature_weights, method, seed)
    labels = result.labels[[f.signature for f in state.failures]]
    solvable = [0 < p for p in state.task_passes]
    for key, index in state.tasks.items():
        if history.get(key, 0.0) > 0.0:
            solvable[index] = True
    clusters = _summaries(state, result, labels)
    n = len(state.failures)
    weaknesses: list[Weakness] = []
    for kind in sorted(state.kinds):
        members = [f for f in state.failures if kind in f.kinds]
        cluster_ids = [c.id for c in clusters if kind in c.dominant_tags]
        for (domain, tool), group in _grains(kind, members):
            weaknesses.append(_weakness(kind, group, n, report.episodes, solvable, seed, len(weaknesses),
                                        cluster_ids, None, (domain, tool), state.examples))
    for cluster in clusters:
        if cluster.novel:
            members = [f for f, label in zip(state.failures, labels.tolist(), strict=True) if label == cluster.id]
            weaknesses.append(_weakness(WeaknessKind.NOVEL, members, n, report.episodes, solvable, seed,
                                        len(weaknesses), [cluster.id], (cluster, state),
                                        _common_grain(members, None), state.examples))
    _unique_labels(weaknesses)
    prior = {_trend_key(w): w.share for w in (previous.weaknesses if previous else [])}
    for w in weaknesses:
        same = _trend_key(w)
        w.trend = round(w.share - prior[same], 6) if same in prior else 0.0
        w.impact = round(impact(w.share, w.mean_reward_lost, w.learnability, w.trend), 6)
    report.weaknesses = weaknesses
    report.clusters = clusters
    report.untagged = sum(1 for f in state.failures if not f.kinds)
    report.tag_counts = dict(sorted(state.kinds.items()))
    report.primary_counts = dict(sorted(state.primary.items()))
    report.secondary_counts = dict(sorted((state.kinds - state.primary).items()))
    report.clustering = {**result.params, "seed": seed}
    return rank_report(report, previous)


def _unique_labels(weaknesses: list[Weakness]) -> None:
    """Make labels unique (grains are, so a repeat is only possible between novel clusters' phrases)."""
    seen: Counter[str] = Counter()
    for w in weaknesses:
        seen[w.label] += 1
        if seen[w.label] > 1:
            w.label = f"{w.label} #{seen[w.label]}"


def _trend_key(w: Weakness) -> tuple[str, str | None, str | None, str]:
    return w.kind, w.domain, w.tool, w.description if w.kind == WeaknessKind.NOVEL else ""


def _common_grain(members: list[_Failure], kind: WeaknessKind | None) -> tuple[str | None, str | None]:
    """(domain, tool) shared by every member, each ``None`` where they differ."""
    domains = {f.domain for f in members}
    tools = {f.tool_of(kind) for f in members} if kind is not None else {None}
    return (next(iter(domains)) if len(domains) == 1 else None, next(iter(tools)) if len(tools) == 1 else None)


def _grains(kind: WeaknessKind, members: list[_Failure]) -> list[tuple[tuple[str | None, str | None], list[_Failure]]]:
    """Split a kind's failures at the finest grain the evidence supports, each grain once.

    (kind, domain, tool) groups of at least ``MIN_GRAIN`` episodes stand alone; the rest (smaller groups, and
    evidence naming no tool) gather by domain when a domain keeps ``MIN_GRAIN`` of them (or when no grain stands
    alone), and what remains forms one weakness of the kind; each group names the domain and tool its members
    share. No two groups share a (domain, tool).
    """
    fine: dict[tuple[str, str | None], list[_Failure]] = {}
    for f in members:
        fine.setdefault((f.domain, f.tool_of(kind)), []).append(f)
    out: list[tuple[tuple[str | None, str | None], list[_Failure]]] = []
    rest: list[_Failure] = []
    for (_, tool), group in fine.items():
        if tool is not None and len(group) >= MIN_GRAIN:
            out.append((_common_grain(group, kind), group))
        else:
            rest.extend(group)
    by_domain: dict[str, list[_Failure]] = {}
    for f in rest:
        by_domain.setdefault(f.domain, []).append(f)
    alone = bool(out)
    leftover: list[_Failure] = []
    for group in by_domain.values():
        if len(group) >= MIN_GRAIN or not alone:
            out.append((_common_grain(group, kind), group))
        else:
            leftover.extend(group)
    if leftover:
        out.append((_common_grain(leftover, kind), leftover))
    return out


def _where(kind: WeaknessKind, members: list[_Failure], grain: tuple[str | None, str | None]) -> str:
    """The grain in words: the gym (or several) and the tool (or no tool call, or several tools)."""
    domain, tool = grain
    if tool is None:
        tools = {f.tool_of(kind) for f in members}
        tool_text = "no tool call" if tools == {None} else "several tools"
    else:
        tool_text = tool
    return f"{domain or 'several gyms'}: {tool_text}"


def _weakness(kind: WeaknessKind, members: list[_Failure], total: int, episodes: int, solvable: list[bool],
              seed: int, index: int, cluster_ids: list[int], novel: tuple[ClusterSummary, _Pass] | None,
              grain: tuple[str | None, str | None], examples: int) -> Weakness:
    target = target_for(kind)
    primary = members if novel is not None else [f for f in members if f.primary(kind)]
    count, secondary = len(primary), len(members) - len(primary)
    basis = primary or members  # a grain only ever secondary: its failures' reward lost and learnability
    domain, tool = grain
    label, description, focus = target.label, target.description, list(target.focus_tags)
    domains = [d for d, _ in Counter(f.domain for f in members).most_common()]
    shown = (members if novel is not None else [*primary, *(f for f in members if not f.primary(kind))])[:examples]
    if novel is None:
        tools = [t for t, _ in Counter(f.tool_of(kind) for f in members if f.tool_of(kind)).most_common(5)]
        evidence = [f.evidence_of(kind) for f in shown]
        label = f"{label} ({_where(kind, members, grain)})"
        key = grain_key(kind, domain, tool)
    else:
        cluster, state = novel
        tools = [f.removeprefix("tool:") for f in cluster.features if f.startswith("tool:")]
        evidence = []
        label = f"Novel pattern {cluster.id} ({domain or 'several gyms'}): {cluster.label}"
        key = grain_key(f"{WeaknessKind.NOVEL}:{cluster.id}", domain, tool)
        description = f"{target.description} Distinguishing features: {', '.join(cluster.features) or 'none'}."
        tag_counts = Counter(t for f in members for t in state.task_tags[f.task])
        focus = [t for t, _ in tag_counts.most_common(3)]
    return Weakness(
        kind=kind, domain=domain, tool=tool, grain=key, label=label, description=description, rank=0, impact=0.0,
        share=round(count / total, 6),
        share_interval=share_interval(count, total, seed=seed * 7919 + index),
        mean_reward_lost=round(float(np.mean([f.lost for f in basis])), 6),
        learnability=round(float(np.mean([solvable[f.task] for f in basis])), 6),
        count=count, secondary=secondary, secondary_share=round(secondary / total, 6),
        rate=round(count / episodes, 6) if episodes else 0.0,
        rate_interval=share_interval(count, episodes, seed=seed * 7919 + index + 1) if episodes else None,
        domains=domains, tools=tools, example_episode_ids=[f.episode_id for f in shown],
        evidence=evidence, knobs=dict(target.knobs), focus_tags=focus, cluster_ids=cluster_ids,
    )


def _summaries(state: _Pass, result: ClusterResult, labels: np.ndarray) -> list[ClusterSummary]:
    k = int(result.labels.max()) + 1
    weights = np.asarray(state.signature_weights, dtype=np.float64)
    presence = (result.matrix > 0).astype(np.float64)
    membership = sparse.csr_matrix((weights, (result.labels, np.arange(len(weights)))), shape=(k, len(weights)))
    sizes = np.asarray(membership.sum(axis=1)).ravel()
    freq = np.asarray((membership @ presence).todense()) / sizes[:, None]
    overall = np.asarray(weights @ presence).ravel() / weights.sum()
    names = result.feature_names
    trace_cols = [i for i, name in enumerate(names) if not name.startswith("tag:")]
    tag_cols = {name.removeprefix("tag:"): i for i, name in enumerate(names) if name.startswith("tag:")}
    total = len(state.failures)
    min_size = max(3, int(np.ceil(MIN_CLUSTER_SHARE * total)))
    members: dict[int, list[_Failure]] = {}
    for failure, label in zip(state.failures, labels.tolist(), strict=True):
        members.setdefault(label, []).append(failure)
    out: list[ClusterSummary] = []
    for c in range(k):
        if sizes[c] < min_size:
            continue
        group = members[c]
        tag_share = sorted(((float(freq[c, i]), kind) for kind, i in tag_cols.items()), reverse=True)
        dominant = [kind for share, kind in tag_share if share >= 1 / 3]
        coverage = sum(1 for f in group if f.kinds) / len(group)
        lift = freq[c, trace_cols] - overall[trace_cols]
        order = np.argsort(-lift, kind="stable")
        features = [names[trace_cols[i]] for i in order[:5] if lift[i] > 0.1 and freq[c, trace_cols[i]] >= 0.5][:3]
        label = " + ".join(dominant) if dominant else "untagged"
        if features:
            label += " | " + ", ".join(features)
        out.append(ClusterSummary(
            id=c, size=int(sizes[c]), label=label, dominant_tags=dominant, tag_coverage=round(coverage, 6),
            features=features, example_episode_ids=[f.episode_id for f in group[: state.examples]],
            novel=coverage < NOVEL_COVERAGE,
        ))
    return out

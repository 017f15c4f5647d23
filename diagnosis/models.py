"""Persisted diagnosis models: tags with evidence, weaknesses and the weakness report."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.core.weakness import WeaknessKind

REPORT_SCHEMA_VERSION = 3
"""Schema version of ``WeaknessReport`` (2: kinds ranked over their grains, grains ranked within their kind; 3: a
failure's primary kind counts, its secondary kinds are shown apart)."""

def grain_key(kind: str, domain: str | None, tool: str | None) -> str:
    """A weakness's grain as a key: ``kind@domain/tool``, ``kind@domain``, ``kind@*/tool`` or ``kind``."""
    if domain is None and tool is None:
        return kind
    return f"{kind}@{domain or '*'}" + (f"/{tool}" if tool else "")


class Evidence(BaseModel):
    """Where in a trace a tag was observed.

    Attributes:
        step: Trace step index, or ``None`` when the evidence is the reply or the final state.
        tool: Tool called at that step (empty when ``step`` is ``None``).
        argument: Argument name concerned, if any.
        note: Short explanation naming the observed value.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: int | None = None
    tool: str = ""
    argument: str | None = None
    note: str = ""


class Tag(BaseModel):
    """A weakness kind a detector found in one episode, with its evidence.

    Attributes:
        kind: Detector kind, e.g. ``wrong_id``.
        evidence: At least one observation supporting the tag.
        secondary: The detector sets the kind aside for another that explains the failure first (a fetch the
            policy requires, skipped after a search: the skipped prerequisite explains it, the search is
            secondary). A secondary tag counts only beside another kind's tag (``diagnosis.engine.ordered_kinds``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: WeaknessKind
    evidence: list[Evidence] = Field(min_length=1)
    secondary: bool = False


class ShareInterval(BaseModel):
    """A bootstrap confidence interval on a share of failures.

    Attributes:
        low: Lower bound.
        high: Upper bound.
        level: Confidence level, e.g. 0.95.
    """

    model_config = ConfigDict(extra="forbid")

    low: float
    high: float
    level: float = 0.95


class Weakness(BaseModel):
    """One weakness of the evaluated model at its grain (kind, domain, tool): the second level of the ranking.

    Attributes:
        kind: Detector kind, or ``novel`` for a cluster no detector explains.
        domain: Domain of the weakness's grain (kind, domain, tool); ``None`` when it spans domains.
        tool: Tool of the weakness's grain; ``None`` when it spans tools or names no tool.
        grain: The grain as a key unique within the report (``kind@domain/tool``, ``kind@domain``, ``kind``;
            a novel weakness: ``novel:<cluster>@domain``).
        label: Short human label naming the kind and the grain; unique within the report.
        description: What the model does wrong.
        rank: Position in the report: kinds in their rank order, each kind's grains in theirs (1 first).
        kind_rank: Rank of the weakness's kind (``WeaknessReport.kinds``).
        grain_rank: Rank of the grain within its kind (1 for the kind's most impactful grain).
        impact: share x mean reward lost x learnability weight x trend weight.
        share: Fraction of the agent's failed episodes showing this weakness.
        share_interval: Bootstrap confidence interval on ``share``.
        mean_reward_lost: Mean of ``1 - score`` over the weakness's episodes.
        learnability: Fraction of its episodes whose task the model sometimes solves.
        trend: Change of ``share`` since the previous report (0 when there is none).
        count: Number of failed episodes whose primary kind it is (the failures it explains).
        secondary: Number of failed episodes showing it as a secondary kind (another kind explains them first).
        secondary_share: ``secondary`` over the agent's failed episodes.
        rate: ``count`` per diagnosed episode (passed and failed), comparable across rounds.
        rate_interval: Bootstrap confidence interval on ``rate``, when computed.
        domains: Affected domains, most frequent first.
        tools: Tools named in the evidence, most frequent first.
        example_episode_ids: A few episodes that show it (those it explains first, then those it is secondary in).
        evidence: A few observations from those episodes.
        knobs: World knobs a factory can turn to target it.
        focus_tags: Task tags that exercise it.
        cluster_ids: Clusters the weakness was found in (novel weaknesses: exactly one).
    """

    model_config = ConfigDict(extra="forbid")

    kind: WeaknessKind
    domain: str | None = None
    tool: str | None = None
    grain: str = ""
    label: str
    description: str
    rank: int
    kind_rank: int = 0
    grain_rank: int = 0
    impact: float
    share: float
    share_interval: ShareInterval
    mean_reward_lost: float
    learnability: float
    trend: float = 0.0
    count: int
    secondary: int = 0
    secondary_share: float = 0.0
    rate: float = 0.0
    rate_interval: ShareInterval | None = None
    domains: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    example_episode_ids: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    knobs: dict[str, Any] = Field(default_factory=dict)
    focus_tags: list[str] = Field(default_factory=list)
    cluster_ids: list[int] = Field(default_factory=list)


class KindSummary(BaseModel):
    """One weakness kind with all its grains together: the first level of the ranking.

    Kinds are ranked by the failures they explain (``count``: the failures whose primary kind it is), whatever
    the number of grains those failures are split into; ties go to the higher impact. A failure showing two
    kinds counts for its primary kind and is shown apart (``secondary``) for the other.

    Attributes:
        kind: Detector kind, or ``novel`` for the failures no detector explains.
        label: Short human label of the kind.
        description: What the model does wrong.
        rank: 1 for the kind explaining the most failures.
        count: Failed episodes whose primary kind it is (each counted once, whichever grain holds it).
        secondary: Failed episodes showing it as a secondary kind.
        share: ``count`` over the agent's failed episodes.
        share_interval: Bootstrap confidence interval on ``share``.
        rate: ``count`` per diagnosed episode (passed and failed): comparable across rounds.
        rate_interval: Bootstrap confidence interval on ``rate``, when computed.
        mean_reward_lost: Mean of ``1 - score`` over the kind's failed episodes.
        learnability: Fraction of them whose task the model sometimes solves.
        trend: Change of ``share`` since the previous report (0 when there is none).
        impact: share x mean reward lost x learnability weight x trend weight.
        grains: The kind's weaknesses (``Weakness.grain``), in their rank order.
        domains: Affected domains, most frequent first.
    """

    model_config = ConfigDict(extra="forbid")

    kind: WeaknessKind
    label: str
    description: str
    rank: int
    count: int
    secondary: int = 0
    share: float
    share_interval: ShareInterval
    rate: float = 0.0
    rate_interval: ShareInterval | None = None
    mean_reward_lost: float = 0.0
    learnability: float = 0.0
    trend: float = 0.0
    impact: float = 0.0
    grains: list[str] = Field(default_factory=list)
    domains: list[str] = Field(default_factory=list)


class ClusterSummary(BaseModel):
    """One cluster of failed episodes.

    Attributes:
        id: Cluster number within the report.
        size: Number of episodes.
        label: Dominant tags and distinguishing features, as a short phrase.
        dominant_tags: Tags held by at least a third of the cluster's episodes, most frequent first.
        tag_coverage: Fraction of the cluster's episodes holding at least one tag.
        features: Trace features most over-represented in the cluster against all failures.
        example_episode_ids: A few member episodes.
        novel: No detector explains the cluster (``tag_coverage`` below the threshold).
    """

    model_config = ConfigDict(extra="forbid")

    id: int
    size: int
    label: str
    dominant_tags: list[str] = Field(default_factory=list)
    tag_coverage: float
    features: list[str] = Field(default_factory=list)
    example_episode_ids: list[str] = Field(default_factory=list)
    novel: bool = False


class WeaknessReport(BaseModel):
    """What a round's failures say about the model, ranked by impact.

    Attributes:
        schema_version: Report schema version.
        round_id: Round diagnosed, if known.
        model_ref: Model evaluated (the most frequent among the episodes).
        seed: Seed of the clustering and the bootstrap.
        episodes: Episodes read (after skipping).
        passed: Episodes that passed.
        invalid: Invalid episodes (excluded).
        failures: Failed episodes attributed to the agent (the population diagnosed).
        other_failures: Failed episodes attributed elsewhere, by boundary
            (``model_api``, ``environment``, ``verifier``).
        skipped: Records skipped, by reason (``schema_version``, ``unknown_tool``, ``malformed``).
        untagged: Agent failures no detector tagged.
        tag_counts: Failed episodes per detector kind, primary or secondary.
        primary_counts: Failed episodes per primary kind (the kind that explains the failure first).
        secondary_counts: Failed episodes per secondary kind.
        clustering: Algorithm and parameters used, and how many clusters it found.
        kinds: The kinds, ranked by the failures they explain (the first level of the ranking).
        weaknesses: The weaknesses at their grain, kind by kind in ``kinds`` order and by grain rank within a
            kind (the second level).
        clusters: The clusters of failed episodes.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = REPORT_SCHEMA_VERSION
    round_id: str | None = None
    model_ref: str = ""
    seed: int = 0
    episodes: int = 0
    passed: int = 0
    invalid: int = 0
    failures: int = 0
    other_failures: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    untagged: int = 0
    tag_counts: dict[WeaknessKind, int] = Field(default_factory=dict)
    primary_counts: dict[WeaknessKind, int] = Field(default_factory=dict)
    secondary_counts: dict[WeaknessKind, int] = Field(default_factory=dict)
    clustering: dict[str, Any] = Field(default_factory=dict)
    kinds: list[KindSummary] = Field(default_factory=list)
    weaknesses: list[Weakness] = Field(default_factory=list)
    clusters: list[ClusterSummary] = Field(default_factory=list)

    def to_json(self, *, indent: int | None = 2) -> str:
        """Return the report as JSON text (``diagnosis.read_report`` reads it back)."""
        return self.model_dump_json(indent=indent)

    def weakness(self, kind: WeaknessKind) -> Weakness | None:
        """Return the first weakness of ``kind`` (its top grain), or ``None``."""
        return next((w for w in self.weaknesses if w.kind == kind), None)

    def kind(self, kind: WeaknessKind) -> KindSummary | None:
        """Return the summary of ``kind`` (all its grains together), or ``None``."""
        return next((k for k in self.kinds if k.kind == kind), None)

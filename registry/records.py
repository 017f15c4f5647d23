"""Pydantic models the registry takes and returns.

Inputs that other packages produce (weaknesses, wave entries) are defined here
as small models of their own, so the registry depends only on ``arena``; the
flows layer converts. Outputs are read-only snapshots of rows: changing one
does not change the database.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.core.episode import EpisodeRecord
from arena.core.model_id import ModelId

RoundStatus = Literal["running", "finished", "failed", "interrupted"]
"""A round's state: ``running`` (started or resumed), ``finished`` or ``failed``."""

DEFAULT_STAGE = "eval"
"""Stage name of a round's evaluation episodes (others: e.g. ``after`` for the re-evaluation, ``train``)."""


class TaskKey(BaseModel):
    """A task, identified across packs.

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id within the pack.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pack_id: str
    task_id: str


class EpisodeKey(BaseModel):
    """The idempotency key of an episode within one round and stage.

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id within the pack.
        seed: Episode seed.
        attempt: Attempt number.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pack_id: str
    task_id: str
    seed: int
    attempt: int

    @classmethod
    def of(cls, record: EpisodeRecord) -> EpisodeKey:
        """Return the key of ``record``."""
        return cls(pack_id=record.pack_id, task_id=record.task_id, seed=record.seed, attempt=record.attempt)


class ModelInfo(BaseModel):
    """A registered model (a policy's parameters or a served endpoint).

    Attributes:
        id: Registry id.
        name: Model name.
        version: Version label, unique per name.
        kind: Backend kind, e.g. ``reference`` or ``litellm``.
        parent_id: Id of the model this one was trained from.
        artifact: Path of the parameters artifact, if any.
        endpoint: Endpoint or provider model string, if any.
        params_hash: sha256 of the parameters, if known.
        details: Free-form metadata.
        created_at: When it was registered (UTC).
    """

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    version: str
    kind: str
    parent_id: int | None
    artifact: str | None
    endpoint: str | None
    params_hash: str | None
    details: dict[str, Any]
    created_at: datetime

    @property
    def ref(self) -> ModelId:
        """The model's identity, read from its name, version label and hash (``ref.label`` is how it is printed)."""
        return ModelId.registered(self.name, self.version, self.params_hash)


class PackInfo(BaseModel):
    """A pack known to the registry.

    Attributes:
        id: Content id.
        parent: Content id of the pack it derives from, if any.
        domain: Domain name.
        schema_version: Pack schema version.
        seed: Generator seed.
        knobs: Complexity layers.
        provenance: Generator details.
        created_by: Who or what made it.
        storage_path: Where the pack store keeps it.
        added_at: When it was added (UTC).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    parent: str | None
    domain: str
    schema_version: int
    seed: int
    knobs: dict[str, Any]
    provenance: dict[str, Any]
    created_by: str
    storage_path: str
    added_at: datetime


class TaskRef(BaseModel):
    """A task row: where it lives and what its content hash is.

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id within the pack.
        domain: Domain of the pack.
        split: ``train`` or ``heldout``.
        category: Task category.
        tags: Task tags.
        content_hash: sha256 of the task's canonical JSON file.
    """

    model_config = ConfigDict(frozen=True)

    pack_id: str
    task_id: str
    domain: str
    split: str
    category: str
    tags: list[str]
    content_hash: str

    @property
    def key(self) -> TaskKey:
        """The task's key."""
        return TaskKey(pack_id=self.pack_id, task_id=self.task_id)


class CampaignInfo(BaseModel):
    """A campaign: a sequence of rounds.

    Attributes:
        id: Registry id.
        name: Unique name.
        settings: The campaign's configuration.
        created_at: When it was created (UTC).
    """

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    settings: dict[str, Any]
    created_at: datetime


class BaselineInfo(BaseModel):
    """What a campaign's rounds are measured against from ``first_round`` on.

    Attributes:
        number: 0 for the campaign's first baseline, then one more for each accepted change.
        first_round: The first round measured against it.
        contract: The gyms (each base pack's id), the held-out suite and the settings the rounds are measured with.
        change: What changed from the previous baseline (``None`` for baseline 0).
        created_at: When it was recorded (UTC).
    """

    model_config = ConfigDict(frozen=True)

    number: int
    first_round: int
    contract: dict[str, Any]
    change: str | None = None
    created_at: datetime


TARGETED_ARM = "targeted"
"""The arm every campaign has: the loop as configured (control arms run beside it)."""


class ArmInfo(BaseModel):
    """An arm of a campaign: ``targeted``, or a control run beside it with the same budget.

    Attributes:
        id: Registry id.
        campaign_id: Campaign id.
        name: The arm's name, unique within its campaign.
        settings: The arm's settings (the campaign's, with ``arm`` set).
        created_at: When it was created (UTC).
    """

    model_config = ConfigDict(frozen=True)

    id: int
    campaign_id: int
    name: str
    settings: dict[str, Any]
    created_at: datetime


class StageInfo(BaseModel):
    """A finished stage of a round.

    Attributes:
        round_id: Round id.
        stage: Stage name (e.g. ``eval_before``, ``diagnose``, ``generate``, ``plan``, ``train``, ``eval_after``).
        model_id: The model the stage played (or, for a training step, produced).
        details: What the stage left (counts, ids).
        finished_at: When it finished (UTC).
    """

    model_config = ConfigDict(frozen=True)

    round_id: int
    stage: str
    model_id: int
    details: dict[str, Any]
    finished_at: datetime


class StageDone(BaseModel):
    """A stage to mark finished in the same transaction as the write that completes it.

    Attributes:
        stage: Stage name.
        model_id: The model the stage played (or produced).
        details: What the stage left (counts, ids).
    """

    model_config = ConfigDict(extra="forbid")

    stage: str = Field(min_length=1, max_length=32)
    model_id: int
    details: dict[str, Any] = Field(default_factory=dict)


PoolRole = Literal["base", "variant", "added"]
"""How a pack is in a round's pool: a base pack, a variant of an earlier round of the arm, or one this round added."""


class PoolPack(BaseModel):
    """A pack of a round's pool.

    Attributes:
        pack_id: Content id of the pack.
        role: ``base``, ``variant`` (added by an earlier round of the arm) or ``added`` (by this round).
    """

    model_config = ConfigDict(frozen=True)

    pack_id: str
    role: PoolRole


class LeaseInfo(BaseModel):
    """Who holds a campaign's lease (the right to advance it), and until when.

    Attributes:
        campaign: Campaign name.
        holder: The holding process (host, process id and a random part).
        acquired_at: When it was taken (UTC).
        expires_at: When it lapses unless renewed (UTC).
        held: Whether the caller now holds it (``False``: another holder does).
        previous: The holder the caller just took the lease over from (its lease lapsed, or it was found dead).
    """

    model_config = ConfigDict(frozen=True)

    campaign: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
    held: bool
    previous: str | None = None


class RoundInfo(BaseModel):
    """One round of a campaign.

    Attributes:
        id: Registry id.
        campaign_id: Campaign id.
        arm_id: The campaign's arm the round belongs to.
        index: Position in the arm, from 0.
        status: ``running``, ``finished``, ``failed`` or ``interrupted`` (stopped by a signal; resumable).
        model_in_id: Model evaluated and trained from.
        model_out_id: Model the round produced, once finished.
        started_at: When it was (last) started (UTC).
        finished_at: When it finished or failed (UTC).
        error: Why it failed.
        details: Free-form metrics (pass rates, lift, intervals).
    """

    model_config = ConfigDict(frozen=True)

    id: int
    campaign_id: int
    arm_id: int
    index: int
    status: RoundStatus
    model_in_id: int
    model_out_id: int | None
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    details: dict[str, Any]


class EpisodeSummary(BaseModel):
    """An episode's queryable columns, without its trace.

    Attributes:
        episode_id: Stable id from the record.
        round_id: Round id.
        stage: Stage within the round.
        model_id: The registered model that played it.
        pack_id: Content id of the pack.
        task_id: Task id.
        seed: Episode seed.
        attempt: Attempt number.
        agent: Agent name.
        model_ref: Model evaluated.
        passed: Every assertion held.
        score: Fraction of assertions held.
        invalid: Excluded from pass rates and training.
        failure_boundary: Where a rollout failure was attributed, if any.
        failure_kind: The failure's short class, if any.
        failed_kinds: Kinds of the assertions that failed, sorted.
        tokens_in: Prompt tokens used.
        tokens_out: Completion tokens used.
        cost: Cost in US dollars.
    """

    model_config = ConfigDict(frozen=True)

    episode_id: str
    round_id: int
    stage: str
    model_id: int
    pack_id: str
    task_id: str
    seed: int
    attempt: int
    agent: str
    model_ref: str
    passed: bool
    score: float
    invalid: bool
    failure_boundary: str | None
    failure_kind: str | None
    failed_kinds: list[str]
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0

    @property
    def key(self) -> EpisodeKey:
        """The episode's idempotency key."""
        return EpisodeKey(pack_id=self.pack_id, task_id=self.task_id, seed=self.seed, attempt=self.attempt)


class WeaknessEntry(BaseModel):
    """One ranked weakness of a round, as the registry stores it.

    Attributes:
        kind: Detector or cluster name, e.g. ``wrong_id``.
        label: Human-readable label.
        rank: Rank, from 1 (worst).
        score: Ranking score.
        share: Share of failures it explains, in [0, 1].
        interval_low: Lower bound of the score's bootstrap interval.
        interval_high: Upper bound of the score's bootstrap interval.
        evidence: Evidence (episode ids, knobs that target it, ...).
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    label: str = ""
    rank: int = Field(ge=1)
    score: float
    share: float = Field(default=0.0, ge=0.0, le=1.0)
    interval_low: float | None = None
    interval_high: float | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)


class WaveEntry(BaseModel):
    """One task of a curriculum wave.

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id within the pack.
        weight: Sampling weight, > 0.
        reason: Why it is in the wave (e.g. ``targeted:wrong_id``, ``replay``, ``explore``).
    """

    model_config = ConfigDict(extra="forbid")

    pack_id: str
    task_id: str
    weight: float = Field(gt=0.0)
    reason: str = ""


class WaveInfo(BaseModel):
    """A round's curriculum wave.

    Attributes:
        id: Registry id.
        round_id: Round id.
        entries: Tasks with weights and reasons, in planned order.
        details: Free-form planning details.
        plan: The planner's whole wave as JSON (sources, weaknesses, state the next plan reads), when recorded.
        created_at: When it was recorded (UTC).
    """

    model_config = ConfigDict(frozen=True)

    id: int
    round_id: int
    entries: list[WaveEntry]
    details: dict[str, Any]
    plan: dict[str, Any] | None = None
    created_at: datetime


class TaskRoundStats(BaseModel):
    """How one task fared in one round and stage (invalid episodes excluded).

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id.
        round_id: Round id.
        campaign_id: Campaign id.
        round_index: Round index within its campaign.
        stage: Stage within the round.
        model_in_id: Model the round started from.
        episodes: Valid episodes.
        passes: Episodes that passed.
        mean_score: Mean score of the valid episodes.
    """

    model_config = ConfigDict(frozen=True)

    pack_id: str
    task_id: str
    round_id: int
    campaign_id: int
    round_index: int
    stage: str
    model_in_id: int
    episodes: int
    passes: int
    mean_score: float

    @property
    def pass_rate(self) -> float:
        """Share of valid episodes that passed (0 when there were none)."""
        return self.passes / self.episodes if self.episodes else 0.0


class LineageStep(BaseModel):
    """How one model of a lineage came to be.

    Attributes:
        model: The model.
        round: The round that produced it, or ``None`` for a base model.
        weaknesses: That round's ranked weaknesses.
        wave: That round's wave entries.
        packs: The packs of the wave's tasks and their registered ancestors.
    """

    model_config = ConfigDict(frozen=True)

    model: ModelInfo
    round: RoundInfo | None
    weaknesses: list[WeaknessEntry]
    wave: list[WaveEntry]
    packs: list[PackInfo]


class Lineage(BaseModel):
    """A model's ancestry, newest first, down to a base model.

    Attributes:
        model: The model asked about.
        steps: One step per model, from ``model`` to its oldest ancestor.
    """

    model_config = ConfigDict(frozen=True)

    model: ModelInfo
    steps: list[LineageStep]

    @property
    def models(self) -> list[ModelInfo]:
        """The models of the lineage, newest first."""
        return [step.model for step in self.steps]


class RegistryStatus(BaseModel):
    """What the registry holds.

    Attributes:
        url: Database URL, password hidden.
        revision: Schema revision of the database.
        head: Newest schema revision this gymloop knows.
        pack_root: Folder of the pack store.
        counts: Rows per table.
    """

    model_config = ConfigDict(frozen=True)

    url: str
    revision: str | None
    head: str
    pack_root: str
    counts: dict[str, int]

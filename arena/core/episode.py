"""Episode records: one rollout of one task, as stored, exported and diagnosed."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.core.conversation import Turn, UserSide, agent_messages
from arena.core.results import TraceStep, Verdict

FailureBoundary = Literal["agent", "model_api", "environment", "verifier", "user"]
"""Where a rollout failure is attributed; diagnosis and pass rates read it (``user``: the simulated user of a
conversation failed or gave up, not the agent)."""

EPISODE_SCHEMA_VERSION = 1
"""Schema version of ``EpisodeRecord``; readers skip records of other versions."""


class EpisodeFailure(BaseModel):
    """Why a rollout did not finish normally, attributed to one boundary.

    Attributes:
        boundary: ``agent``, ``model_api``, ``environment`` or ``verifier``.
        kind: Short class, e.g. ``timeout``, ``rate_limit``, ``bad_request``, ``crash``.
        message: Details, naming the failing call or value.
    """

    model_config = ConfigDict(extra="forbid")

    boundary: FailureBoundary
    kind: str
    message: str


class WorldRef(BaseModel):
    """The world an episode was played in, as its pack's manifest names it: enough to generate the pack again.

    Attributes:
        seed: The pack's generator seed (the world seed; ``EpisodeRecord.seed`` is the episode's).
        knobs: The complexity layers the generator applied (a factory variant's knobs).
        parent: Id of the pack the episode's pack is a variant of, if any.
    """

    model_config = ConfigDict(extra="forbid")

    seed: int
    knobs: dict[str, Any] = Field(default_factory=dict)
    parent: str | None = None


def episode_id(pack_id: str, task_id: str, seed: int, attempt: int, agent: str) -> str:
    """Return the stable id of an episode: sha256 of its key, 24 hex digits."""
    key = f"{pack_id}|{task_id}|{seed}|{attempt}|{agent}"
    return hashlib.sha256(key.encode()).hexdigest()[:24]


class EpisodeRecord(BaseModel):
    """One episode: what ran, what happened and how it was judged.

    Attributes:
        schema_version: Record schema version.
        episode_id: Stable id from (pack, task, seed, attempt, agent).
        pack_id: Content id of the pack.
        domain: Domain of the pack.
        task_id: Task id within the pack.
        split: ``train`` or ``heldout``.
        category: Task category.
        tags: Task tags.
        seed: Episode seed.
        world: The world the pack was generated as (seed, knobs, parent), when the record names it.
        attempt: Attempt number (0-based) among the k attempts of this task and seed.
        agent: Agent name (e.g. ``reference`` or ``litellm``).
        model_ref: The model evaluated (name, version or endpoint).
        trace: Tool calls in order.
        reply: The agent's final reply.
        verdict: The verdict, or ``None`` when the episode never reached verification.
        failure: Why the episode did not finish normally, if it did not.
        invalid: Excluded from pass rates and training (e.g. a 400 from the model API).
        tokens_in: Prompt tokens used.
        tokens_out: Completion tokens used.
        cost: Cost in US dollars (0 for local models without prices).
        latency_s: Time spent waiting on the model.
        wall_time_s: Wall-clock time of the whole episode.
        turns: Model turns taken.
        decisions: The agent's sampled decisions (reference policy), read by its trainer.
        conversation: The messages of a conversational task (user and agent), where each fell among the tool
            calls; empty for a task answered with one reply.
        user: Who played the user of a conversational task, what it used and how the conversation ended.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = EPISODE_SCHEMA_VERSION
    episode_id: str
    pack_id: str
    domain: str
    task_id: str
    split: str
    category: str
    tags: list[str] = Field(default_factory=list)
    seed: int
    world: WorldRef | None = None
    attempt: int = 0
    agent: str
    model_ref: str
    trace: list[TraceStep] = Field(default_factory=list)
    reply: str = ""
    verdict: Verdict | None = None
    failure: EpisodeFailure | None = None
    invalid: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    wall_time_s: float = 0.0
    turns: int = 0
    decisions: list[dict[str, Any]] = Field(default_factory=list)
    conversation: list[Turn] = Field(default_factory=list)
    user: UserSide | None = None

    @property
    def told(self) -> str:
        """Everything the agent said to the requester: its messages of a conversation, else its reply."""
        return "\n\n".join(agent_messages(self.conversation)) or self.reply

    @property
    def passed(self) -> bool:
        """Whether the episode passed every assertion."""
        return self.verdict is not None and self.verdict.passed

    @property
    def score(self) -> float:
        """Fraction of assertions held (0 when unverified)."""
        return self.verdict.score if self.verdict is not None else 0.0

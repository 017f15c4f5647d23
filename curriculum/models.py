"""Persisted curriculum models: task references, waves, history, the bandit's state and stop rules."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arena.core.episode import EpisodeRecord
from arena.core.weakness import WeaknessKind

Source = Literal["targeted", "replay", "explore"]
"""Why a task is in a wave: aimed at a weakness, replayed against forgetting, or explored."""


class TaskRef(BaseModel):
    """A task the curriculum may schedule.

    Attributes:
        pack_id: Content id of the pack holding the task.
        task_id: Task id within the pack.
        domain: Domain of the pack.
        category: Task category.
        tags: Task tags (what the task exercises).
        split: ``train`` or ``heldout``; held-out tasks are never scheduled.
        tools: Tools the task's gold program calls (the grain a weakness at one tool is matched on).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    pack_id: str
    task_id: str
    domain: str = ""
    category: str = ""
    tags: tuple[str, ...] = ()
    split: Literal["train", "heldout"] = "train"
    tools: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        """``(pack_id, task_id)``."""
        return (self.pack_id, self.task_id)


class WaveEntry(BaseModel):
    """One scheduled task of a wave, with why it was chosen.

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id within the pack.
        weight: Share of the wave's training signal (weights of a wave sum to 1).
        reason: Human-readable reason for the choice.
        source: ``targeted``, ``replay`` or ``explore``.
        weakness: Weakness kind the task targets (``None`` unless targeted).
        grain: The targeted weakness's grain, ``kind@domain/tool`` (``None`` unless targeted).
        estimated_success: Success estimated from history (``None`` when never tried).
    """

    model_config = ConfigDict(extra="forbid")

    pack_id: str
    task_id: str
    weight: float = Field(ge=0.0)
    reason: str
    source: Source
    weakness: WeaknessKind | None = None
    grain: str | None = None
    estimated_success: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        """``(pack_id, task_id)``."""
        return (self.pack_id, self.task_id)


class ArmStats(BaseModel):
    """The bandit's estimate for one weakness kind.

    Attributes:
        value: Smoothed learning progress (mean absolute change of success on the kind's tasks).
        pulls: Rounds the arm was given targeted tasks.
        success: Last measured mean success on the kind's tasks, if any.
    """

    model_config = ConfigDict(extra="forbid")

    value: float = 0.0
    pulls: int = 0
    success: float | None = None


class BanditState(BaseModel):
    """State of the learning-progress bandit over weakness kinds, kept between rounds.

    Attributes:
        arms: Statistics per weakness kind.
        rounds: Rounds planned with this state.
        last_round: Latest round whose results were folded into the arms (-1: none).
    """

    model_config = ConfigDict(extra="forbid")

    arms: dict[WeaknessKind, ArmStats] = Field(default_factory=dict)
    rounds: int = 0
    last_round: int = -1


class Wave(BaseModel):
    """A weighted list of tasks to practise in one round.

    Attributes:
        round_index: Round the wave is planned for.
        strategy: Strategy that planned it.
        entries: Scheduled tasks (distinct), each with its reason.
        budget: Training episodes the wave may use.
        k: Rollouts per task.
        message: What the planner noticed (empty pool, no weaknesses, ...); empty when nothing.
        bandit: The bandit's state after planning (bandit strategy only); pass it back next round.
    """

    model_config = ConfigDict(extra="forbid")

    round_index: int = 0
    strategy: str
    entries: list[WaveEntry] = Field(default_factory=list)
    budget: int = 0
    k: int = 1
    message: str = ""
    bandit: BanditState | None = None

    @property
    def episodes(self) -> int:
        """Training episodes the wave asks for (tasks x k)."""
        return len(self.entries) * self.k

    def by_source(self, source: Source) -> list[WaveEntry]:
        """Entries of one source."""
        return [e for e in self.entries if e.source == source]

    def task_ids(self) -> list[str]:
        """Task ids of the entries, in order."""
        return [e.task_id for e in self.entries]


class GroupResult(BaseModel):
    """Scores of one group of rollouts of a task in one round.

    Attributes:
        round_index: Round the group ran in.
        scores: Score of each rollout (fraction of assertions held).
        passed: Whether each rollout passed.
    """

    model_config = ConfigDict(extra="forbid")

    round_index: int
    scores: list[float] = Field(min_length=1)
    passed: list[bool] = Field(min_length=1)

    @model_validator(mode="after")
    def _same_length(self) -> GroupResult:
        if len(self.scores) != len(self.passed):
            raise ValueError(f"group of round {self.round_index}: {len(self.scores)} scores but "
                             f"{len(self.passed)} pass flags")
        return self

    @property
    def success(self) -> float:
        """Pass rate of the group."""
        return sum(self.passed) / len(self.passed)

    @property
    def uniform(self) -> bool:
        """Every rollout scored the same (no learning signal)."""
        return max(self.scores) - min(self.scores) < 1e-9


class TaskHistory(BaseModel):
    """Recent group results of one task.

    Attributes:
        pack_id: Content id of the pack.
        task_id: Task id within the pack.
        groups: Group results, oldest first.
    """

    model_config = ConfigDict(extra="forbid")

    pack_id: str
    task_id: str
    groups: list[GroupResult] = Field(default_factory=list)


class History(BaseModel):
    """What the curriculum remembers between rounds.

    Attributes:
        tasks: Group results per task.
        waves: Earlier waves, oldest first.
        bandit: The bandit's state from the previous wave, if any.
        keep_groups: Group results kept per task (older ones are dropped).
    """

    model_config = ConfigDict(extra="forbid")

    tasks: list[TaskHistory] = Field(default_factory=list)
    waves: list[Wave] = Field(default_factory=list)
    bandit: BanditState | None = None
    keep_groups: int = Field(default=5, ge=1)

    def task(self, pack_id: str, task_id: str) -> TaskHistory | None:
        """The history of one task, or ``None`` when it never ran."""
        return next((t for t in self.tasks if t.pack_id == pack_id and t.task_id == task_id), None)

    def record_group(self, pack_id: str, task_id: str, group: GroupResult) -> None:
        """Append one group result of a task, keeping the ``keep_groups`` latest."""
        entry = self.task(pack_id, task_id)
        if entry is None:
            entry = TaskHistory(pack_id=pack_id, task_id=task_id)
            self.tasks.append(entry)
        entry.groups.append(group)
        del entry.groups[:-self.keep_groups]

    def record_episodes(self, round_index: int, episodes: Iterable[EpisodeRecord]) -> int:
        """Group a round's valid episodes by task and record each group; returns the groups recorded."""
        groups: dict[tuple[str, str], list[EpisodeRecord]] = {}
        for episode in episodes:
            if not episode.invalid:
                groups.setdefault((episode.pack_id, episode.task_id), []).append(episode)
        for (pack_id, task_id), members in groups.items():
            self.record_group(pack_id, task_id, GroupResult(
                round_index=round_index, scores=[e.score for e in members], passed=[e.passed for e in members]))
        return len(groups)

    def record_wave(self, wave: Wave) -> None:
        """Remember a planned wave (and its bandit state)."""
        self.waves.append(wave)
        if wave.bandit is not None:
            self.bandit = wave.bandit


class CurriculumConfig(BaseModel):
    """How to plan a wave.

    Attributes:
        strategy: Registered strategy name: ``targeted`` (default), ``uniform`` or ``bandit``.
        budget: Training episodes per wave.
        k: Rollouts per task (the group size of group-relative training).
        targeted: Fraction of the wave's tasks aimed at weaknesses.
        replay: Fraction replayed from earlier waves.
        explore: Fraction explored (the rest of the pool).
        focus: Weaknesses (at their grain: kind, domain, tool) the targeted strategy concentrates its targeted
            slots on, highest impact first.
        coverage: Weigh the targeted strategy's weaknesses by how poorly the pool covers their grain
            (``curriculum.coverage``), so grains only variants can practise go first.
        band_low: Lower bound of the learnability band (estimated success).
        band_high: Upper bound of the learnability band.
        recheck_after: Rounds after which a task dropped for uniform scores may be scheduled again.
        bandit_temperature: Softmax temperature over the arms' learning progress.
        bandit_exploration: Weight of the bandit's count-based exploration bonus.
        bandit_step: Step size of the arms' learning-progress average.
        regressed: Templates (``domain/template``) whose held-out tasks the model to train lost (pass->fail) in
            the round that produced it, with how many (``arena.core.flips``).
        retention_per_flip: Training tasks of a regressed template replayed first, per held-out task it lost (0:
            no retention share; the wave's other shares split what is left).
        seed: Seed of every random choice.
    """

    model_config = ConfigDict(extra="forbid")

    strategy: str = "targeted"
    budget: int = Field(default=64, ge=0)
    k: int = Field(default=4, ge=1)
    targeted: float = Field(default=0.6, ge=0.0, le=1.0)
    replay: float = Field(default=0.2, ge=0.0, le=1.0)
    explore: float = Field(default=0.2, ge=0.0, le=1.0)
    focus: int = Field(default=3, ge=1)
    coverage: bool = True
    band_low: float = Field(default=0.2, ge=0.0, le=1.0)
    band_high: float = Field(default=0.8, ge=0.0, le=1.0)
    recheck_after: int = Field(default=3, ge=1)
    bandit_temperature: float = Field(default=0.1, gt=0.0)
    bandit_exploration: float = Field(default=0.1, ge=0.0)
    bandit_step: float = Field(default=0.5, gt=0.0, le=1.0)
    regressed: dict[str, int] = Field(default_factory=dict)
    retention_per_flip: int = Field(default=0, ge=0)
    seed: int = 0

    @model_validator(mode="after")
    def _check(self) -> CurriculumConfig:
        total = self.targeted + self.replay + self.explore
        if total <= 0 or abs(total - 1.0) > 1e-6:
            raise ValueError(f"mix fractions targeted={self.targeted}, replay={self.replay}, "
                             f"explore={self.explore} must sum to 1 (they sum to {total:g})")
        if self.band_low > self.band_high:
            raise ValueError(f"learnability band low {self.band_low} exceeds high {self.band_high}")
        return self


class RoundResult(BaseModel):
    """The outcome of one round, as the stop rules read it.

    Attributes:
        round_index: Round number.
        pass_rate: Held-out pass rate after the round.
        lift: Change of the held-out pass rate over the previous round (``None``: computed from pass rates).
        episodes: Training episodes the round used.
    """

    model_config = ConfigDict(extra="forbid")

    round_index: int
    pass_rate: float = Field(ge=0.0, le=1.0)
    lift: float | None = None
    episodes: int = Field(default=0, ge=0)


class StopRules(BaseModel):
    """When a campaign stops; every rule left ``None`` is off.

    Attributes:
        plateau_lift: Lift below which a round counts as flat.
        plateau_rounds: Consecutive flat rounds that make a plateau.
        max_episodes: Total training-episode budget.
        target_pass_rate: Held-out pass rate at which the campaign is done.
        max_rounds: Most rounds to run.
    """

    model_config = ConfigDict(extra="forbid")

    plateau_lift: float | None = 0.01
    plateau_rounds: int = Field(default=3, ge=1)
    max_episodes: int | None = None
    target_pass_rate: float | None = None
    max_rounds: int | None = None


class StopDecision(BaseModel):
    """Whether to stop, and which rule said so.

    Attributes:
        stop: Stop the campaign.
        rule: ``plateau``, ``budget``, ``target``, ``max_rounds`` (empty when not stopping).
        reason: Explanation naming the measured values.
    """

    model_config = ConfigDict(extra="forbid")

    stop: bool
    rule: str = ""
    reason: str

"""The built-in trainer: group-relative policy gradient for the reference policy.

Rollouts are grouped by (pack, task). Within a group each rollout's advantage is its reward minus the
group mean, over the group's standard deviation; groups whose rollouts all scored the same carry no
signal and are skipped (with per-decision credit, groups of failed rollouts are not: see ``GRPOConfig.credit``).
For every decision a rollout took (with per-decision credit, the decisions a diagnosis of the group's failed
rollouts speaks of), the gradient of the log-probability of the
chosen strategy with respect to the logits at that decision key is ``onehot(choice) - softmax(logits)``, where the
logits are the shared skill plus the offset of the decision's tool; the step goes to the shared skill in the
share of the parameters' ``transfer`` and to the tool's offset in the rest.
Updates run for a few epochs with a ratio clip against the starting probabilities (as in PPO) and a
cap on the norm of each key's step. Everything iterates in a fixed order, so the result depends only on
the inputs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.reference import PolicyParams, grain_key
from arena.core.episode import EpisodeRecord
from trainers.base import register_trainer
from trainers.credit import Blame, named_decisions
from trainers.models import ModelRef, TrainerError

if TYPE_CHECKING:
    from curriculum import Wave


class GRPOConfig(BaseModel):
    """Settings of the built-in trainer.

    Attributes:
        learning_rate: Step size on the logits.
        epochs: Passes over the rollouts per training step.
        clip_ratio: PPO ratio clip: a decision whose probability moved beyond 1 +/- this stops pushing.
        max_step_norm: Largest L2 norm of one key's logit change per epoch.
        eps: Added to the group's standard deviation; groups with a smaller one are skipped.
        reward: ``score`` (fraction of assertions held) or ``passed`` (0/1).
        min_group: Fewest valid rollouts a group needs.
        credit: ``episode``: a rollout's advantage is spread over every decision it took. ``decision``: in a group
            where a diagnosis of a failed rollout names decisions (``trainers.credit``), a rollout that did worse
            than its group is trained only on its own named decisions, one that did better only on its other
            decisions at the named (decision key, tool) pairs, each rollout's advantage divided among those; a
            group of failed rollouts that all scored the same (no group-relative signal) trains each rollout's
            named decisions with a unit negative advantage; a group with none named is trained as with
            ``episode``.
    """

    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(default=4.0, gt=0.0)
    epochs: int = Field(default=4, ge=1)
    clip_ratio: float = Field(default=0.2, gt=0.0)
    max_step_norm: float = Field(default=1.0, gt=0.0)
    eps: float = Field(default=1e-6, gt=0.0)
    reward: Literal["score", "passed"] = "score"
    min_group: int = Field(default=2, ge=2)
    credit: Literal["episode", "decision"] = "episode"


class TrainStats(BaseModel):
    """What one training step did.

    Attributes:
        groups: Groups used.
        skipped_uniform: Groups skipped because every rollout scored the same.
        skipped_small: Groups with fewer rollouts than ``min_group``.
        episodes: Rollouts that contributed.
        decisions: Decisions that contributed (summed over epochs).
        clipped: Decisions whose ratio was clipped (summed over epochs).
        keys_changed: Decision keys whose logits changed.
        credited_groups: Groups trained on the decisions a diagnosis named (per-decision credit).
    """

    model_config = ConfigDict(extra="forbid")

    groups: int = 0
    skipped_uniform: int = 0
    skipped_small: int = 0
    episodes: int = 0
    decisions: int = 0
    clipped: int = 0
    keys_changed: int = 0
    credited_groups: int = 0


def save_reference(params: PolicyParams, out_dir: str | Path) -> ModelRef:
    """Save reference-policy parameters under ``out_dir`` and return their model reference."""
    digest = params.content_hash()
    path = params.save(Path(out_dir) / f"{params.name}-v{params.version}-{digest}.json")
    return ModelRef(name=params.name, version=params.version, kind="reference", artifact=str(path),
                    parent=params.parent, params_hash=digest)


def load_reference(model_ref: ModelRef) -> PolicyParams:
    """Load the reference-policy parameters a model reference points at.

    Raises:
        TrainerError: Not a reference model, no artifact, or an unreadable artifact.
    """
    if model_ref.kind != "reference":
        raise TrainerError(f"model {model_ref.ref} is of kind {model_ref.kind!r}; the builtin trainer trains "
                           "reference-policy parameters only")
    if not model_ref.artifact:
        raise TrainerError(f"model {model_ref.ref} has no artifact; save its parameters with save_reference first")
    try:
        return PolicyParams.load(model_ref.artifact)
    except (OSError, ValueError) as exc:
        raise TrainerError(f"model {model_ref.ref}: cannot read parameters {model_ref.artifact}: {exc}") from exc


def _softmax(row: dict[str, float]) -> dict[str, float]:
    top = max(row.values())
    exp = {s: math.exp(v - top) for s, v in row.items()}
    total = sum(exp.values())
    return {s: e / total for s, e in exp.items()}


class _Sample(BaseModel):
    decisions: list[tuple[str, str, str]]
    advantage: float
    weight: float


def _grain(decision: Mapping[str, Any]) -> tuple[str, str]:
    return str(decision["key"]), str(decision.get("tool") or "")


def _as_step(decision: Mapping[str, Any]) -> tuple[str, str, str]:
    return str(decision["key"]), str(decision["choice"]), str(decision.get("tool") or "")


def _decision_credit(members: Sequence[EpisodeRecord], advantages: Sequence[float] | None,
                     blame: Mapping[str, Sequence[Blame]]) -> list[tuple[list[tuple[str, str, str]], float]] | None:
    """Per-decision credit of one group: (decisions trained, advantage) per member; ``None`` when none is named.

    ``advantages`` are the group-relative ones, or ``None`` for a group whose members all scored the same (and
    failed): there each member's named decisions get a unit negative advantage.
    """
    named = [named_decisions(r.decisions, blame.get(r.episode_id, ())) for r in members]
    grains = {_grain(r.decisions[i]) for r, own in zip(members, named, strict=True) for i in own}
    if not grains:
        return None
    out = []
    for index, (r, own) in enumerate(zip(members, named, strict=True)):
        advantage = -1.0 if advantages is None else advantages[index]
        if advantage < 0:
            kept = sorted(own)
        else:
            kept = [i for i, d in enumerate(r.decisions) if i not in own and _grain(d) in grains]
        out.append(([_as_step(r.decisions[i]) for i in kept], advantage))
    return out


def group_samples(rollouts: Sequence[EpisodeRecord], wave: Wave, config: GRPOConfig, stats: TrainStats,
                  blame: Mapping[str, Sequence[Blame]] | None = None) -> list[_Sample]:
    """Group valid rollouts by task, compute group-relative advantages and weigh groups by the wave.

    With ``config.credit == "decision"``, ``blame`` (diagnosis tags by episode id) picks the decisions each
    sample keeps and trains groups of failed rollouts that all scored the same (see ``GRPOConfig.credit``).
    """
    weights = {e.key: e.weight * len(wave.entries) for e in wave.entries}
    groups: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in rollouts:
        if r.invalid or (weights and (r.pack_id, r.task_id) not in weights):
            continue
        groups[(r.pack_id, r.task_id)].append(r)
    samples: list[_Sample] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: (r.seed, r.attempt, r.episode_id))
        if len(members) < config.min_group:
            stats.skipped_small += 1
            continue
        rewards = [r.score if config.reward == "score" else float(r.passed) for r in members]
        mean = sum(rewards) / len(rewards)
        std = math.sqrt(sum((x - mean) ** 2 for x in rewards) / len(rewards))
        spread = std >= config.eps
        advantages = [(x - mean) / (std + config.eps) for x in rewards] if spread else None
        credited = None
        if config.credit == "decision" and (spread or not any(r.passed for r in members)):
            credited = _decision_credit(members, advantages, blame or {})
        if credited is not None:
            stats.credited_groups += 1
        elif advantages is not None:
            credited = [([_as_step(d) for d in r.decisions], a) for r, a in zip(members, advantages, strict=True)]
        else:
            stats.skipped_uniform += 1
            continue
        stats.groups += 1
        weight = weights.get(key, 1.0)
        for decisions, advantage in credited:
            samples.append(_Sample(decisions=decisions, advantage=advantage, weight=weight))
            stats.episodes += 1
    return samples


def grpo_update(params: PolicyParams, samples: Sequence[_Sample], config: GRPOConfig,
                stats: TrainStats, batch_size: int | None = None) -> PolicyParams:
    """Apply the clipped group-relative update to a copy of ``params``.

    The gradient is averaged over ``batch_size`` rollouts (default: the samples), as in group-relative
    policy optimisation: rollouts of groups whose members all scored the same count in the batch but carry
    no signal, so a wave spent on tasks with nothing to learn moves the policy less.

    Raises:
        TrainerError: A decision names a key or strategy the parameters do not have.
    """
    logits = {k: dict(v) for k, v in params.logits.items()}
    offsets = {k: dict(v) for k, v in params.offsets.items()}
    for sample in samples:
        for key, choice, _ in sample.decisions:
            if key not in logits or choice not in logits[key]:
                raise TrainerError(f"rollout decision {key!r} -> {choice!r} is not a parameter of {params.ref}")
    shared, own = params.transfer, 1.0 - params.transfer
    old: dict[tuple[str, str], dict[str, float]] = {}
    for sample in samples:
        for key, _, tool in sample.decisions:
            if (key, tool) not in old:
                old[(key, tool)] = params.probabilities(key, tool)
    for _ in range(config.epochs):
        grad: dict[str, dict[str, float]] = {}
        offset_grad: dict[str, dict[str, float]] = {}
        current = params.model_copy(update={"logits": logits, "offsets": offsets})
        for sample in samples:
            if not sample.decisions:
                continue
            scale = sample.weight * sample.advantage / len(sample.decisions) / max(batch_size or len(samples), 1)
            for key, choice, tool in sample.decisions:
                probs = current.probabilities(key, tool)
                ratio = probs[choice] / max(old[(key, tool)][choice], 1e-12)
                stats.decisions += 1
                if (sample.advantage > 0 and ratio > 1 + config.clip_ratio) or (
                        sample.advantage < 0 and ratio < 1 - config.clip_ratio):
                    stats.clipped += 1
                    continue
                step = {s: scale * ratio * ((1.0 if s == choice else 0.0) - p) for s, p in probs.items()}
                if shared > 0:
                    row = grad.setdefault(key, {s: 0.0 for s in probs})
                    for s, g in step.items():
                        row[s] += shared * g
                if own > 0 and tool:
                    row = offset_grad.setdefault(grain_key(key, tool), {s: 0.0 for s in probs})
                    for s, g in step.items():
                        row[s] += own * g
        _apply(logits, grad, config)
        _apply(offsets, offset_grad, config)
    stats.keys_changed = sum(1 for k in logits if logits[k] != params.logits[k]) + sum(
        1 for k in offsets if offsets[k] != params.offsets.get(k))
    return params.model_copy(update={"logits": logits, "offsets": offsets, "version": params.version + 1,
                                     "parent": params.content_hash()})


def _apply(table: dict[str, dict[str, float]], grad: dict[str, dict[str, float]], config: GRPOConfig) -> None:
    """Add one epoch's steps to the rows of ``table`` (new rows start at 0), each step's norm capped."""
    for key in sorted(grad):
        step = {s: config.learning_rate * g for s, g in grad[key].items()}
        norm = math.sqrt(sum(x * x for x in step.values()))
        if norm > config.max_step_norm:
            step = {s: x * config.max_step_norm / norm for s, x in step.items()}
        row = table.setdefault(key, {s: 0.0 for s in step})
        for s, x in step.items():
            row[s] += x


class GRPOTrainer:
    """Group-relative policy gradient for the reference policy (registered as ``builtin``).

    Args:
        out_dir: Where new parameter artifacts are written.
        config: Learning rate, epochs, clipping and reward.
    """

    name = "builtin"

    def __init__(self, out_dir: str | Path, config: GRPOConfig | None = None) -> None:
        self.out_dir = Path(out_dir)
        self.config = config or GRPOConfig()
        self.last_stats = TrainStats()

    def train(self, model_ref: ModelRef, wave: Wave, rollouts: Sequence[EpisodeRecord],
              blame: Mapping[str, Sequence[Blame]] | None = None) -> ModelRef:
        """Update the parameters on the wave's rollouts; save them as version + 1 and return their reference.

        Args:
            model_ref: The model to train (reference-policy parameters).
            wave: The wave the rollouts played (its weights weigh the groups).
            rollouts: The wave's rollouts.
            blame: Diagnosis tags of the failed rollouts by episode id; required by per-decision credit.

        Raises:
            TrainerError: Not a reference model, unreadable parameters, unknown decisions, or per-decision credit
                without ``blame``.
        """
        if self.config.credit == "decision" and blame is None:
            raise TrainerError("credit 'decision' trains the decisions a diagnosis names: pass the rollouts' blame "
                               "(diagnosis tags by episode id)")
        params = load_reference(model_ref)
        stats = TrainStats()
        samples = group_samples(rollouts, wave, self.config, stats, blame)
        valid = sum(1 for r in rollouts if not r.invalid)
        new = grpo_update(params, samples, self.config, stats, batch_size=valid)
        self.last_stats = stats
        saved = save_reference(new, self.out_dir)
        return saved.model_copy(update={"parent": model_ref.ref})


register_trainer("builtin", GRPOTrainer)

"""A wave as TRL data: environment rows for GRPO and tool-calling conversations of verified successes for SFT.

Nothing here imports torch: rows are plain dicts that ``trainers.trl`` hands to ``datasets``. Conversations are the
episode's one rendering (``arena.agents.transcript``), the text a local checkpoint reads when it plays.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from itertools import groupby, islice
from typing import TYPE_CHECKING, Any, Literal

from arena.adapters.trl_env import episode_prompt
from arena.agents import transcript
from arena.agents.base import Agent
from arena.agents.gold import GoldAgent
from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from trainers.models import TrainerError

if TYPE_CHECKING:
    from curriculum import Wave

Message = dict[str, Any]


def wave_rows(wave: Wave, packs: Mapping[str, Pack], *, rows: int, seed: int) -> list[dict[str, Any]]:
    """Rows of an environment dataset: the wave's tasks drawn by weight (seeded), each an episode to play.

    Each row holds ``prompt`` (the episode's opening messages), ``environment`` (the domain, which selects the
    environment class), ``pack_id``, ``task_id``, ``seed`` (a training seed of the round) and ``weight``.

    Raises:
        TrainerError: The wave is empty or names a pack that is not given.
    """
    if not wave.entries:
        raise TrainerError(f"wave of round {wave.round_index} has no tasks to train on")
    missing = sorted({e.pack_id for e in wave.entries} - set(packs))
    if missing:
        raise TrainerError(f"wave of round {wave.round_index} names pack(s) {', '.join(m[:12] for m in missing)} "
                           "that the trainer was not given")
    rng = random.Random(f"trl-wave|{seed}|{wave.round_index}")
    weights = [max(e.weight, 0.0) for e in wave.entries]
    if sum(weights) <= 0:
        weights = [1.0] * len(wave.entries)
    chosen = rng.choices(wave.entries, weights=weights, k=rows)
    episode_seed = 1000 + wave.round_index
    return [{"prompt": episode_prompt(packs[e.pack_id], e.task_id), "environment": packs[e.pack_id].manifest.domain,
             "pack_id": e.pack_id, "task_id": e.task_id, "seed": episode_seed, "weight": e.weight} for e in chosen]


def episode_messages(pack: Pack, episode: EpisodeRecord) -> list[Message]:
    """An episode as the conversation the model had: prompt, each tool call and its result, the reply.

    A conversational task's episode also holds each user and agent message, where it fell among the calls.

    Raises:
        TrainerError: The pack has no task of the episode's id.
    """
    try:
        observation = transcript.observation_of(pack, episode.task_id)
    except KeyError as exc:
        raise TrainerError(f"pack {pack.id[:12]} has no task {episode.task_id!r} (named by episode "
                           f"{episode.episode_id})") from exc
    return transcript.episode_messages(observation, episode.trace, episode.reply, episode.conversation)


def masked_example(input_ids: Sequence[int], assistant_mask: Sequence[int], where: str) -> dict[str, list[int]]:
    """A tokenized SFT example whose loss covers the assistant's tokens only (``-100`` labels elsewhere).

    Args:
        input_ids: The rendered conversation's tokens.
        assistant_mask: 1 on the tokens the assistant wrote (the chat template's ``{% generation %}`` spans).
        where: What the example is, for the error message.

    Raises:
        TrainerError: The mask does not match the tokens, or marks no assistant token (the chat template's
            generation markers do not cover the assistant's messages).
    """
    if len(assistant_mask) != len(input_ids):
        raise TrainerError(f"{where}: assistant mask of {len(assistant_mask)} tokens for {len(input_ids)} tokens")
    if not any(assistant_mask):
        raise TrainerError(f"{where}: the chat template marks none of the assistant's tokens, so the loss would "
                           "cover nothing (its {% generation %} markers must wrap the assistant messages)")
    ids = [int(t) for t in input_ids]
    return {"input_ids": ids, "labels": [t if m else -100 for t, m in zip(ids, assistant_mask, strict=True)]}


def successful_episodes(wave: Wave, rollouts: Sequence[EpisodeRecord], *, per_task: int | None = None,
                        skip_mastered: bool = False) -> list[EpisodeRecord]:
    """Rejection sampling: the wave's rollouts that passed every check, valid and without failure, in a fixed order.

    Args:
        wave: The wave; rollouts of tasks outside it are left out (an empty wave keeps every task).
        rollouts: The round's training rollouts.
        per_task: Keep at most this many successes of each task (lowest seed and attempt first); ``None``: all.
        skip_mastered: Leave out the tasks every valid rollout of which passed: the checkpoint already does them,
            and training on them again mostly fits their ids.
    """
    wanted = {e.key for e in wave.entries}
    tried = [r for r in rollouts if not r.invalid and (not wanted or (r.pack_id, r.task_id) in wanted)]
    failed = {(r.pack_id, r.task_id) for r in tried if not r.passed or r.failure is not None}
    kept = sorted((r for r in tried if r.passed and r.failure is None
                   and (not skip_mastered or (r.pack_id, r.task_id) in failed)),
                  key=lambda r: (r.pack_id, r.task_id, r.seed, r.attempt, r.episode_id))
    if per_task is None:
        return kept
    return [r for _, task in groupby(kept, key=lambda r: (r.pack_id, r.task_id)) for r in islice(task, per_task)]


def sft_steps(rows: int, batch: int, *, epochs: float | None, max_steps: int) -> int:
    """Optimizer steps of one SFT run.

    ``max_steps``; or, when ``epochs`` is given, ``epochs`` passes over ``rows`` conversations in batches of ``batch``
    (at least one step, at most ``max_steps``).
    """
    if epochs is None:
        return max_steps
    return max(1, min(max_steps, math.ceil(epochs * rows / batch)))


Teacher = Literal["gold", "reference"]
"""Who plays a demonstration: the task's gold program, or the reference policy's careful (expert) parameters."""


def teacher_agent(teacher: Teacher, pack: Pack) -> Agent:
    """The agent that plays demonstrations of ``pack``'s tasks for ``teacher``."""
    if teacher == "gold":
        return GoldAgent(pack)
    return ReferencePolicy(PolicyParams.expert())


def demonstrations(wave: Wave, rollouts: Sequence[EpisodeRecord], packs: Mapping[str, Pack],
                   teacher: Teacher = "gold") -> list[EpisodeRecord]:
    """A teacher's verified play of each wave task that was played and that none of its rollouts solved.

    One episode per such task, on the lowest seed its rollouts used (the same world and faults), played through
    the gym's real tools by ``teacher``'s agent (``teacher_agent``) and kept only when it passes every check.
    Tasks of packs not in ``packs`` are left out.
    """
    wanted = {e.key for e in wave.entries}
    seeds: dict[tuple[str, str], int] = {}
    solved: set[tuple[str, str]] = set()
    for r in rollouts:
        key = (r.pack_id, r.task_id)
        if r.invalid or r.pack_id not in packs or (wanted and key not in wanted):
            continue
        seeds[key] = min(seeds.get(key, r.seed), r.seed)
        if r.passed and r.failure is None:
            solved.add(key)
    kept: list[EpisodeRecord] = []
    for pack_id in sorted({pack_id for pack_id, _ in seeds}):
        keys = [EpisodeKey(pack_id, task_id, seed, 0) for (pid, task_id), seed in sorted(seeds.items())
                if pid == pack_id and (pid, task_id) not in solved]
        played = run_episodes(teacher_agent(teacher, packs[pack_id]), [packs[pack_id]], keys, RolloutConfig())
        kept += [r for r in played if r.passed and not r.invalid and r.failure is None]
    return kept

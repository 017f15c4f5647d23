"""A wave as TRL data: environment rows for GRPO and tool-calling conversations of verified successes for SFT.

Nothing here imports torch: rows are plain dicts that ``trainers.trl`` hands to ``datasets``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from arena.adapters.trl_env import episode_prompt
from arena.agents.litellm_agent import tool_message_content
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.core.results import ToolResult
from curriculum import Wave
from trainers.models import TrainerError

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

    Tool results are rendered exactly as the environment and the agents return them, so a model fine-tuned on
    these conversations sees the same text at evaluation.
    """
    messages = episode_prompt(pack, episode.task_id)
    for step in episode.trace:
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": step.tool, "arguments": dict(step.arguments)}}]})
        result = ToolResult.model_construct(ok=step.ok, output=step.output, error=step.error)
        messages.append({"role": "tool", "name": step.tool, "content": tool_message_content(result)})
    messages.append({"role": "assistant", "content": episode.reply})
    return messages


def successful_episodes(wave: Wave, rollouts: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """Rejection sampling: the wave's rollouts that passed every check, valid and without failure, in a fixed order."""
    wanted = {e.key for e in wave.entries}
    kept = [r for r in rollouts if r.passed and not r.invalid and r.failure is None
            and (not wanted or (r.pack_id, r.task_id) in wanted)]
    return sorted(kept, key=lambda r: (r.pack_id, r.task_id, r.seed, r.attempt, r.episode_id))

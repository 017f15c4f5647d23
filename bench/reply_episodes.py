"""The careful policy's episodes, and any candidate reply judged on them.

A reply is judged on the episode the careful policy (``PolicyParams.expert()``) plays: its tool calls are replayed,
in order, on a fresh world of the same gym, world seed, task and episode seed, and ``Gym.verify`` judges the
candidate reply in place of the careful one. Everything but the reply is therefore the careful episode, so the
verdict says what the reply alone earns.

Run ``python -m bench.reply_episodes show GYM WORLD_SEED TASK_ID [--seed N]`` to read an episode (prompt, persona,
intent, every tool call with its result, the careful reply) and
``python -m bench.reply_episodes judge GYM WORLD_SEED TASK_ID [--seed N] --reply TEXT`` to judge a reply on it.
``python -m bench.reply_episodes tasks GYM WORLD_SEED`` lists a world's tasks with their prompts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.results import TraceStep
from arena.rollout.config import EpisodeKey
from arena.rollout.episode import play_episode

SHOWN_OUTPUT_CHARS = 1500
"""How much of one tool output ``show`` prints."""


class ReplayDiverged(RuntimeError):
    """Replaying the careful policy's calls gave another result than the careful episode did."""


@dataclass(frozen=True)
class CarefulEpisode:
    """The careful policy's episode of one task.

    Attributes:
        gym: Gym name.
        world_seed: Seed of the gym's world (the pack).
        task_id: Task id.
        seed: Episode seed.
        public: What the agent sees of the task (prompt, persona, intent).
        trace: The careful policy's tool calls with their results.
        reply: The careful policy's reply.
        passed: Whether the careful episode passed.
    """

    gym: str
    world_seed: int
    task_id: str
    seed: int
    public: dict[str, Any]
    trace: tuple[TraceStep, ...]
    reply: str
    passed: bool

    @property
    def key(self) -> str:
        """``gym/world_seed/task_id/seed``: names the episode in the corpus's episode list."""
        return f"{self.gym}/{self.world_seed}/{self.task_id}/{self.seed}"

    @property
    def digest(self) -> str:
        """sha256 of the prompt and every call with its result: the facts a reply to the task can state.

        Replies are written against these facts: when a gym's world or tasks change, the digest changes and the
        replies written for the old episode no longer say what they were written to say.
        """
        calls = [step.model_dump(mode="json", exclude={"index", "clock"}) for step in self.trace]
        text = json.dumps([self.public["prompt"], calls], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


@cache
def pack_of(gym: str, world_seed: int) -> Pack:
    """The pack of ``gym`` built from ``world_seed`` with the default knobs (built once per process)."""
    return build_pack(gym, seed=world_seed)


@cache
def _gym(gym: str, world_seed: int) -> Gym:
    return Gym.from_pack(pack_of(gym, world_seed))


def task_ids(gym: str, world_seed: int) -> list[str]:
    """The ids of the tasks of ``gym``'s world ``world_seed``."""
    return [task.id for task in pack_of(gym, world_seed).tasks]


@cache
def careful_episode(gym: str, world_seed: int, task_id: str, seed: int = 0) -> CarefulEpisode:
    """Play ``task_id`` with the careful policy and return its episode.

    Raises:
        KeyError: The gym or the task does not exist.
    """
    pack = pack_of(gym, world_seed)
    runner = _gym(gym, world_seed)
    record = play_episode(runner, ReferencePolicy(PolicyParams.expert()), EpisodeKey(pack.id, task_id, seed, 0))
    return CarefulEpisode(
        gym=gym, world_seed=world_seed, task_id=task_id, seed=seed, public=pack.task(task_id).public_view(),
        trace=tuple(record.trace), reply=record.reply, passed=record.passed,
    )


def judge_reply(gym: str, world_seed: int, task_id: str, seed: int, reply: str) -> bool:
    """Whether ``reply`` passes as the reply of the careful policy's episode.

    The careful policy's calls are replayed on a fresh world and ``Gym.verify(reply)`` gives the verdict.

    Raises:
        ReplayDiverged: A replayed call's result differs from the careful episode's.
    """
    episode = careful_episode(gym, world_seed, task_id, seed)
    runner = _gym(gym, world_seed)
    runner.reset(task_id, seed=seed)
    for step in episode.trace:
        result = runner.call_tool(step.tool, step.arguments)
        if result.ok != step.ok or (result.ok and result.output != step.output):
            raise ReplayDiverged(
                f"{gym} world {world_seed} task {task_id} seed {seed}: call {step.index} ({step.tool}) gave another "
                "result on replay"
            )
    return runner.verify(reply).passed


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_OUTPUT_CHARS else text[:SHOWN_OUTPUT_CHARS] + f"... ({len(text)} chars)"


def describe(episode: CarefulEpisode) -> str:
    """The episode as text: prompt, persona, intent, calls with results, the careful reply."""
    public = episode.public
    lines = [
        f"{episode.gym} world {episode.world_seed} task {episode.task_id} seed {episode.seed}",
        f"prompt: {public['prompt']}",
        f"persona: {_shown(public['persona'])}",
        f"intent: {_shown(public['intent'])}",
    ]
    for step in episode.trace:
        shown = _shown(step.output) if step.ok else f"ERROR {step.error.kind if step.error else ''}: " + (
            step.error.message if step.error else "")
        lines.append(f"  [{step.index}] {step.tool}({_shown(step.arguments)}) -> {shown}")
    lines.append(f"careful reply ({'passes' if episode.passed else 'FAILS'}):")
    lines.extend(f"  | {line}" for line in episode.reply.splitlines())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Show episodes, list tasks or judge a reply (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("tasks", help="list a world's tasks with their prompts")
    listing.add_argument("gym")
    listing.add_argument("world_seed", type=int)
    for name in ("show", "judge"):
        command = sub.add_parser(name)
        command.add_argument("gym")
        command.add_argument("world_seed", type=int)
        command.add_argument("task_id", nargs="+" if name == "show" else None)
        command.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
        if name == "judge":
            command.add_argument("--reply", required=True, help="the candidate reply")
    args = parser.parse_args(argv)
    if args.command == "tasks":
        for task in pack_of(args.gym, args.world_seed).tasks:
            print(f"{task.id}: {task.prompt}")
        return 0
    if args.command == "show":
        for task_id in args.task_id:
            print(describe(careful_episode(args.gym, args.world_seed, task_id, args.seed)))
            print()
        return 0
    passed = judge_reply(args.gym, args.world_seed, args.task_id, args.seed, args.reply)
    print("passes" if passed else "fails")
    return 0


if __name__ == "__main__":
    sys.exit(main())

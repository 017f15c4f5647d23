"""One episode: play it on a gym and turn how it ended into a record (never an exception)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from arena.agents.base import Agent, AgentRun, AsyncAgent, CallTool, ModelAPIError
from arena.core.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.core.gym import EnvironmentFailure, Gym, Observation
from arena.core.pack import Pack
from arena.core.results import ToolResult
from arena.core.text import clean_text
from arena.rollout.config import EpisodeKey, agent_seed


class EpisodeTimeout(Exception):
    """The episode ran past its wall-clock limit."""


class EpisodeCancelled(Exception):
    """The batch was stopped while the episode ran."""


def _record(gym: Gym, agent: Agent, key: EpisodeKey, run: AgentRun | None, started: float,
            failure: EpisodeFailure | None, invalid: bool, verdict: Any) -> EpisodeRecord:
    task = gym.pack.task(key.task_id)
    usage = run or AgentRun()
    return EpisodeRecord(
        episode_id=episode_id(key.pack_id, key.task_id, key.seed, key.attempt, agent.name),
        pack_id=key.pack_id, domain=gym.pack.manifest.domain, task_id=key.task_id, split=task.split,
        category=task.category, tags=list(task.tags), seed=key.seed, world=gym.pack.manifest.world(),
        attempt=key.attempt, agent=agent.name,
        model_ref=agent.model_ref, trace=list(gym.trace), reply=usage.reply, verdict=verdict, failure=failure,
        invalid=invalid, tokens_in=usage.tokens_in, tokens_out=usage.tokens_out, cost=usage.cost,
        latency_s=usage.latency_s, wall_time_s=time.perf_counter() - started, turns=usage.turns,
        decisions=list(usage.decisions),
    )


def play_episode(gym: Gym, agent: Agent, key: EpisodeKey, *, timeout_s: float | None = None,
                 stop: threading.Event | None = None) -> EpisodeRecord:
    """Play one episode and return its record; never raises for a failing episode.

    Args:
        gym: A gym holding the episode's pack.
        agent: The agent.
        key: Which task, seed and attempt.
        timeout_s: Wall-clock limit, enforced at each tool call.
        stop: When set, the episode's next tool call ends it (the record is then discarded by the engine).
    """
    started = time.perf_counter()
    observation, call_tool = _start(gym, key, started, timeout_s, stop)
    try:
        run = agent.run_episode(observation, call_tool, seed=agent_seed(key))
    except Exception as exc:  # every failure of the episode is recorded on it, never raised into the batch
        return _failed(gym, agent, key, started, exc)
    return _judged(gym, agent, key, started, run)


async def play_episode_async(gym: Gym, agent: AsyncAgent, key: EpisodeKey, *, timeout_s: float | None = None,
                             stop: threading.Event | None = None) -> EpisodeRecord:
    """``play_episode`` on an event loop, for agents that await their model.

    The time limit also ends a model call that outlives it: the episode is recorded as timed out, as at a tool call.
    """
    started = time.perf_counter()
    observation, call_tool = _start(gym, key, started, timeout_s, stop)
    try:
        async with asyncio.timeout(timeout_s) as limit:
            run = await agent.arun_episode(observation, call_tool, seed=agent_seed(key))
    except TimeoutError as exc:
        if not limit.expired():
            return _failed(gym, agent, key, started, exc)
        return _failed(gym, agent, key, started, EpisodeTimeout(f"episode exceeded {timeout_s:g} s"))
    except Exception as exc:  # every failure of the episode is recorded on it, never raised into the batch
        return _failed(gym, agent, key, started, exc)
    return _judged(gym, agent, key, started, run)


def _start(gym: Gym, key: EpisodeKey, started: float, timeout_s: float | None,
           stop: threading.Event | None) -> tuple[Observation, CallTool]:
    """Reset the gym for the episode; return its observation and the agent's guarded ``call_tool``."""
    deadline = started + timeout_s if timeout_s else None
    observation = gym.reset(key.task_id, seed=key.seed)

    def call_tool(name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        if deadline is not None and time.perf_counter() > deadline:
            raise EpisodeTimeout(f"episode exceeded {timeout_s:g} s")
        if stop is not None and stop.is_set():
            raise EpisodeCancelled("the rollout was stopped")
        return gym.call_tool(name, arguments)

    return observation, call_tool


def _failed(gym: Gym, agent: Agent, key: EpisodeKey, started: float, exc: Exception) -> EpisodeRecord:
    """The record of an episode the agent did not finish, attributed to its boundary."""
    if isinstance(exc, ModelAPIError):
        failure = EpisodeFailure(boundary="model_api", kind=exc.kind, message=exc.message)
        if exc.invalid:  # the infrastructure failed: nothing of the model's to judge
            return _record(gym, agent, key, exc.usage, started, failure, True, None)
        # The model's own conversation failed (a 400 on its output, its context, an unreadable answer): its failed
        # episode, judged as it stands with no reply, so an error of its own never hides a task it would fail.
        return _record(gym, agent, key, exc.usage, started, failure, False, _verify_quietly(gym, ""))
    if isinstance(exc, EnvironmentFailure):
        # A tool crashed on the agent's own arguments: a bug in that tool, and the agent's failed episode. It stays
        # valid, so an agent cannot hide a failing episode by crashing a tool.
        failure = EpisodeFailure(boundary="environment", kind="tool_crash", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
    if isinstance(exc, EpisodeCancelled):
        failure = EpisodeFailure(boundary="agent", kind="cancelled", message=str(exc))
        return _record(gym, agent, key, None, started, failure, True, None)
    if isinstance(exc, EpisodeTimeout):
        failure = EpisodeFailure(boundary="agent", kind="episode_timeout", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
    failure = EpisodeFailure(boundary="agent", kind="crash", message=f"{type(exc).__name__}: {exc}")
    return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))


def _judged(gym: Gym, agent: Agent, key: EpisodeKey, started: float, run: AgentRun) -> EpisodeRecord:
    """The record of an episode the agent finished, with its verdict."""
    run.reply = clean_text(run.reply) if isinstance(run.reply, str) else ""
    try:
        verdict = gym.verify(run.reply)
    except Exception as exc:  # a verifier bug must not count against the agent
        failure = EpisodeFailure(boundary="verifier", kind="crash", message=f"{type(exc).__name__}: {exc}")
        return _record(gym, agent, key, run, started, failure, True, None)
    return _record(gym, agent, key, run, started, None, False, verdict)


def _verify_quietly(gym: Gym, reply: str) -> Any:
    try:
        return gym.verify(reply)
    except Exception:  # the episode already failed; a second failure adds nothing
        return None


def lost_record(key: EpisodeKey, packs: dict[str, Pack], agent: Agent, kind: str, message: str) -> EpisodeRecord:
    """The record of an episode that ended outside ``play_episode`` (a crash, a hang, a dead worker)."""
    task = packs[key.pack_id].task(key.task_id)
    return EpisodeRecord(
        episode_id=episode_id(key.pack_id, key.task_id, key.seed, key.attempt, agent.name),
        pack_id=key.pack_id, domain=packs[key.pack_id].manifest.domain, task_id=key.task_id, split=task.split,
        category=task.category, tags=list(task.tags), seed=key.seed, world=packs[key.pack_id].manifest.world(),
        attempt=key.attempt, agent=agent.name,
        model_ref=agent.model_ref, failure=EpisodeFailure(boundary="agent", kind=kind, message=message),
    )

"""One episode: play it on a gym and turn how it ended into a record (never an exception)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from arena.agents.base import Agent, AgentRun, AsyncAgent, CallTool, ConversationOver, ModelAPIError
from arena.agents.judge import judge_verdict
from arena.agents.user import ConversationConfig, User, UserFailure
from arena.core.conversation import Conversation
from arena.core.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.core.gym import EnvironmentFailure, Gym, Observation
from arena.core.pack import Pack
from arena.core.results import ToolResult
from arena.core.text import clean_text
from arena.rollout.config import EpisodeKey, agent_seed
from arena.rollout.conversation import Dialogue, aconverse, conversational_view, converse, make_user


class EpisodeTimeout(Exception):
    """The episode ran past its wall-clock limit."""


class EpisodeCancelled(Exception):
    """The batch was stopped while the episode ran."""


def _record(gym: Gym, agent: Agent, key: EpisodeKey, run: AgentRun | None, started: float,
            failure: EpisodeFailure | None, invalid: bool, verdict: Any, user: User | None = None) -> EpisodeRecord:
    task = gym.pack.task(key.task_id)
    usage = run or AgentRun()
    record = EpisodeRecord(
        episode_id=episode_id(key.pack_id, key.task_id, key.seed, key.attempt, agent.name),
        pack_id=key.pack_id, domain=gym.pack.manifest.domain, task_id=key.task_id, split=task.split,
        category=task.category, tags=list(task.tags), seed=key.seed, world=gym.pack.manifest.world(),
        attempt=key.attempt, agent=agent.name,
        model_ref=agent.model_ref, trace=list(gym.trace), reply=usage.reply, verdict=verdict, failure=failure,
        invalid=invalid, tokens_in=usage.tokens_in, tokens_out=usage.tokens_out, cost=usage.cost,
        latency_s=usage.latency_s, wall_time_s=time.perf_counter() - started, turns=usage.turns,
        decisions=list(usage.decisions),
    )
    if user is not None:
        record.conversation = list(gym.turns)
        record.user = user.side(gym.conversation_end or "agent_stop")
    return record


def play_episode(gym: Gym, agent: Agent, key: EpisodeKey, *, timeout_s: float | None = None,
                 stop: threading.Event | None = None,
                 conversation: ConversationConfig | None = None) -> EpisodeRecord:
    """Play one episode and return its record; never raises for a failing episode.

    Args:
        gym: A gym holding the episode's pack.
        agent: The agent.
        key: Which task, seed and attempt.
        timeout_s: Wall-clock limit, enforced at each tool call.
        stop: When set, the episode's next tool call ends it (the record is then discarded by the engine).
        conversation: How a conversational task's user is played and its limits (default: the scripted user).
    """
    started = time.perf_counter()
    observation, call_tool = _start(gym, key, started, timeout_s, stop)
    talk = gym.task.conversation
    user = _user(talk, conversation, key)
    try:
        if talk is None or user is None:
            run = agent.run_episode(observation, call_tool, seed=agent_seed(key))
        else:
            dialogue = Dialogue(gym, user, conversation or ConversationConfig())
            opening = dialogue.open()
            run = converse(agent, conversational_view(observation, opening, dialogue), call_tool, dialogue,
                           agent_seed(key))
    except Exception as exc:  # every failure of the episode is recorded on it, never raised into the batch
        return _failed(gym, agent, key, started, exc, user)
    return _judged(gym, agent, key, started, run, user, conversation)


async def play_episode_async(gym: Gym, agent: AsyncAgent, key: EpisodeKey, *, timeout_s: float | None = None,
                             stop: threading.Event | None = None,
                             conversation: ConversationConfig | None = None) -> EpisodeRecord:
    """``play_episode`` on an event loop, for agents that await their model.

    The time limit also ends a model call that outlives it: the episode is recorded as timed out, as at a tool call.
    """
    started = time.perf_counter()
    observation, call_tool = _start(gym, key, started, timeout_s, stop)
    talk = gym.task.conversation
    user = _user(talk, conversation, key)
    try:
        async with asyncio.timeout(timeout_s) as limit:
            if talk is None or user is None:
                run = await agent.arun_episode(observation, call_tool, seed=agent_seed(key))
            else:
                dialogue = Dialogue(gym, user, conversation or ConversationConfig())
                opening = await dialogue.aopen()
                run = await aconverse(agent, conversational_view(observation, opening, dialogue), call_tool, dialogue,
                                      agent_seed(key))
    except TimeoutError as exc:
        if not limit.expired():
            return _failed(gym, agent, key, started, exc, user)
        return _failed(gym, agent, key, started, EpisodeTimeout(f"episode exceeded {timeout_s:g} s"), user)
    except Exception as exc:  # every failure of the episode is recorded on it, never raised into the batch
        return _failed(gym, agent, key, started, exc, user)
    if conversation is not None and conversation.judge_model is not None:  # the judge waits on its model
        return await asyncio.to_thread(_judged, gym, agent, key, started, run, user, conversation)
    return _judged(gym, agent, key, started, run, user, conversation)


def _user(talk: Conversation | None, config: ConversationConfig | None, key: EpisodeKey) -> User | None:
    """The user of a conversational task's episode (``None`` for a task answered with one reply)."""
    if talk is None:
        return None
    return make_user(talk, config or ConversationConfig(), agent_seed(key))


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


def _failed(gym: Gym, agent: Agent, key: EpisodeKey, started: float, exc: Exception,
            user: User | None = None) -> EpisodeRecord:
    """The record of an episode the agent did not finish, attributed to its boundary.

    A conversation it ends is cut short (``timeout``, ``agent_error``) unless a limit of the conversation ended it.
    """
    if user is not None and gym.conversation_end is None:
        gym.end_conversation("timeout" if isinstance(exc, EpisodeTimeout) else
                             "user_error" if isinstance(exc, UserFailure) else "agent_error")
    if isinstance(exc, ConversationOver):
        # A limit of the conversation ended it inside an agent that answers once: judged as it stands.
        return _record(gym, agent, key, None, started, None, False, _verify_quietly(gym, ""), user)
    if isinstance(exc, UserFailure):
        # The user's model failed: nothing the agent did is to blame, nothing to judge.
        failure = EpisodeFailure(boundary="user", kind=exc.kind, message=exc.message)
        return _record(gym, agent, key, None, started, failure, True, None, user)
    if isinstance(exc, ModelAPIError):
        failure = EpisodeFailure(boundary="model_api", kind=exc.kind, message=exc.message)
        if exc.invalid:  # the infrastructure failed: nothing of the model's to judge
            return _record(gym, agent, key, exc.usage, started, failure, True, None, user)
        # The model's own conversation failed (a 400 on its output, its context, an unreadable answer): its failed
        # episode, judged as it stands with no reply, so an error of its own never hides a task it would fail.
        return _record(gym, agent, key, exc.usage, started, failure, False, _verify_quietly(gym, ""), user)
    if isinstance(exc, EnvironmentFailure):
        # A tool crashed on the agent's own arguments: a bug in that tool, and the agent's failed episode. It stays
        # valid, so an agent cannot hide a failing episode by crashing a tool.
        failure = EpisodeFailure(boundary="environment", kind="tool_crash", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""), user)
    if isinstance(exc, EpisodeCancelled):
        failure = EpisodeFailure(boundary="agent", kind="cancelled", message=str(exc))
        return _record(gym, agent, key, None, started, failure, True, None, user)
    if isinstance(exc, EpisodeTimeout):
        failure = EpisodeFailure(boundary="agent", kind="episode_timeout", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""), user)
    failure = EpisodeFailure(boundary="agent", kind="crash", message=f"{type(exc).__name__}: {exc}")
    return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""), user)


def _judged(gym: Gym, agent: Agent, key: EpisodeKey, started: float, run: AgentRun,
            user: User | None = None, conversation: ConversationConfig | None = None) -> EpisodeRecord:
    """The record of an episode the agent finished, with its verdict.

    A conversation the user gave up on (``out_of_scope``: its scenario said nothing to go on) is not graded, as
    τ²-bench does not grade it: the episode is invalid, boundary ``user``. With a judge model, statements only a
    model can check are judged (``arena.agents.judge``); a judge that fails makes the episode invalid (boundary
    ``verifier``), never a pass.
    """
    run.reply = clean_text(run.reply) if isinstance(run.reply, str) else ""
    try:
        verdict = gym.verify(run.reply)
    except Exception as exc:  # a verifier bug must not count against the agent
        failure = EpisodeFailure(boundary="verifier", kind="crash", message=f"{type(exc).__name__}: {exc}")
        return _record(gym, agent, key, run, started, failure, True, None, user)
    judge = conversation.judge_model if conversation is not None else None
    if judge is not None and verdict.unjudged and gym.conversation_end != "out_of_scope":
        try:
            verdict, _ = judge_verdict(verdict, gym.turns, judge, agent_seed(key))
        except ModelAPIError as exc:
            failure = EpisodeFailure(boundary="verifier", kind=f"judge_{exc.kind}",
                                     message=f"judge model {judge.model}: {exc.message}")
            return _record(gym, agent, key, run, started, failure, True, None, user)
    if gym.conversation_end == "out_of_scope":
        failure = EpisodeFailure(boundary="user", kind="out_of_scope",
                                 message="the simulated user gave up: its scenario said nothing to go on")
        return _record(gym, agent, key, run, started, failure, True, None, user)
    return _record(gym, agent, key, run, started, None, False, verdict, user)


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

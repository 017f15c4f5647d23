"""The docker arena backend: a batch's episodes played against gym containers, so agents never run beside the registry.

One container per pack of the batch (the pack mounted read-only), reused across the batch's episodes, torn
down after. The agent plays through MCP and gets the same observation as an in-process rollout (gymloop is the
operator here and holds the pack); the trace and the judged verdict come back from the container's gym at the
end of each episode through the container's operator token (a fresh one per container), so records are the
same as in-process ones. A failing episode is data: an agent crash, a model API error or a dead container is
recorded on its episode with its failure boundary.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from pydantic import SecretStr

from arena.agents.base import Agent, AgentRun, ModelAPIError
from arena.core.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.core.gym import Observation
from arena.core.pack import Pack
from arena.core.results import Verdict
from arena.rollout import EpisodeKey, RolloutConfig, RolloutStopped, agent_seed
from arena.serve.client import RemoteGym, http_client
from arena.serve.docker_container import GymContainer
from arena.serve.docker_image import docker_client
from arena.serve.session import EpisodeOutcome, ServeError


def _record(pack: Pack, agent: Agent, key: EpisodeKey, run: AgentRun | None, started: float,
            outcome: EpisodeOutcome | None, failure: EpisodeFailure | None, invalid: bool) -> EpisodeRecord:
    task = pack.task(key.task_id)
    usage = run or AgentRun()
    verdict: Verdict | None = outcome.verdict if outcome is not None else None
    return EpisodeRecord(
        episode_id=episode_id(key.pack_id, key.task_id, key.seed, key.attempt, agent.name),
        pack_id=key.pack_id, domain=pack.manifest.domain, task_id=key.task_id, split=task.split,
        category=task.category, tags=list(task.tags), seed=key.seed, world=pack.manifest.world(),
        attempt=key.attempt, agent=agent.name,
        model_ref=agent.model_ref, trace=list(outcome.trace) if outcome is not None else [], reply=usage.reply,
        verdict=verdict, failure=failure, invalid=invalid, tokens_in=usage.tokens_in, tokens_out=usage.tokens_out,
        cost=usage.cost, latency_s=usage.latency_s, wall_time_s=time.perf_counter() - started, turns=usage.turns,
        decisions=list(usage.decisions),
    )


def agent_observation(pack: Pack, task_id: str) -> Observation:
    """The observation an in-process rollout of ``task_id`` gives its agent (what ``Gym.reset`` returns)."""
    task = pack.task(task_id)
    return Observation(task=task.public_view(), policy=pack.policy, tools=pack.tools, graph=pack.graph)


def play_remote_episode(remote: RemoteGym, pack: Pack, agent: Agent, key: EpisodeKey) -> EpisodeRecord:
    """Play one episode against a served gym (``remote`` holds its operator token); never raises for a failing one."""
    started = time.perf_counter()
    try:
        remote.start(key.task_id, key.seed)
        observation = agent_observation(pack, key.task_id)
    except ServeError as exc:
        failure = EpisodeFailure(boundary="environment", kind="served_gym", message=str(exc))
        return _record(pack, agent, key, None, started, None, failure, True)
    run: AgentRun | None = None
    try:
        run = agent.run_episode(observation, remote.call_tool, seed=agent_seed(key))
    except ModelAPIError as exc:
        failure = EpisodeFailure(boundary="model_api", kind=exc.kind, message=exc.message)
        return _record(pack, agent, key, exc.usage, started, _finish_quietly(remote, ""), failure, exc.invalid)
    except ServeError as exc:
        failure = EpisodeFailure(boundary="environment", kind="served_gym", message=str(exc))
        return _record(pack, agent, key, None, started, None, failure, True)
    except Exception as exc:  # an agent bug is recorded on its episode, never raised into the batch
        failure = EpisodeFailure(boundary="agent", kind="crash", message=f"{type(exc).__name__}: {exc}")
        return _record(pack, agent, key, None, started, _finish_quietly(remote, ""), failure, False)
    try:
        outcome = remote.finish_judged(run.reply)
    except ServeError as exc:
        failure = EpisodeFailure(boundary="environment", kind="served_gym", message=str(exc))
        return _record(pack, agent, key, run, started, None, failure, True)
    return _record(pack, agent, key, run, started, outcome, None, False)


def _finish_quietly(remote: RemoteGym, reply: str) -> EpisodeOutcome | None:
    try:
        return remote.finish_judged(reply)
    except ServeError:
        return None


def run_episodes_in_docker(
    agent: Agent, packs: Sequence[Pack], keys: Sequence[EpisodeKey], config: RolloutConfig | None = None, *,
    image: str, docker_host: str | None = None, token: SecretStr | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None, stop: threading.Event | None = None,
) -> list[EpisodeRecord]:
    """Run exactly the episodes ``keys`` against gym containers (one per pack), in order.

    ``stop`` ends the batch before its next episode (the containers are removed on the way out).

    Raises:
        KeyError: A key names a pack not in ``packs``.
        ServeError: No Docker daemon, or a container could not start (nothing is left behind).
        RolloutStopped: ``stop`` was set; the episodes finished until then are on the exception.
    """
    config = config or RolloutConfig()
    by_id = {p.id: p for p in packs}
    missing = sorted({k.pack_id for k in keys} - set(by_id))
    if missing:
        raise KeyError(f"episodes name packs that were not given: {', '.join(m[:12] for m in missing)}")
    if not keys:
        return []
    records: dict[int, EpisodeRecord] = {}

    def check_stop() -> None:
        if stop is not None and stop.is_set():
            raise RolloutStopped("the rollout was stopped", [records[i] for i in sorted(records)])

    check_stop()
    client = docker_client(docker_host)
    for pack_id in dict.fromkeys(k.pack_id for k in keys):
        pack = by_id[pack_id]
        check_stop()
        with GymContainer(client, image, pack=pack, token=token) as container, \
                RemoteGym(http_client(container.mcp_url, token), timeout_s=config.episode_timeout_s,
                          operator_token=container.operator_token) as remote:
            for index, key in enumerate(keys):
                if key.pack_id == pack_id:
                    check_stop()
                    record = play_remote_episode(remote, pack, agent, key)
                    records[index] = record
                    if on_episode:
                        on_episode(record)
    return [records[i] for i in range(len(keys))]

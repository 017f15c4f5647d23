"""Episodes in flight on one event loop: the rollout engine's way to keep a model server busy.

With a thread per episode in flight, the threads take turns on the interpreter: at 64 in flight about half of
gymloop's CPU per episode went to that. Agents that can await their model (``AsyncAgent``) play instead as tasks
of one event loop in the calling thread, under the same adaptive limit, circuit breaker, stop event and
per-episode time limit as a thread batch; the tools, the gym and the verifier run on the loop between model
calls (CPU work of well under a millisecond). An agent whose own code never returns to the loop would hold every
episode up: ``LiteLLMAgent`` only waits in its model calls.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, cast

from arena.agents.base import AsyncAgent
from arena.agents.chat_client import http_sessions
from arena.agents.limits import AdaptiveLimit, reporting_to
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout.config import EpisodeKey
from arena.rollout.episode import lost_record
from arena.rollout.pool import GymPool
from arena.rollout.threads import RolloutStopped, ThreadBatch

_WAKE_S = 0.05
"""How often the batch looks at the stop event, and a slot at a lowered adaptive limit, while they wait."""


class AsyncBatch(ThreadBatch):
    """Runs a batch's episodes as tasks of one event loop in the calling thread, up to ``slots`` in flight.

    It takes the arguments of ``ThreadBatch``; the agent must be an ``AsyncAgent``.
    """

    def _play_all(self, slots: int) -> None:
        asyncio.run(self._main(AdaptiveLimit(slots)))

    async def _main(self, limit: AdaptiveLimit) -> None:
        finished: asyncio.Queue[tuple[int, EpisodeRecord]] = asyncio.Queue()
        async with http_sessions():
            slots: list[asyncio.Task[None]] = []
            try:
                # One loop turn between two slots' starts: the first requests leave while later slots still build
                # their gyms, not after all of them, and the answers come back spread out rather than as one wave
                # (256 in flight, a 200 ms server: 0.83-0.92 of the bound against 0.77-0.89 in alternating runs).
                for _ in range(min(limit.maximum, len(self.keys))):
                    slots.append(asyncio.create_task(self._slot(limit, finished)))
                    await asyncio.sleep(0)
                while len(self.records) + len(self.breaker.held) < len(self.keys):
                    if self.stop.is_set():
                        raise RolloutStopped("the rollout was stopped", self._so_far())
                    try:
                        async with asyncio.timeout(_WAKE_S):
                            index, record = await finished.get()
                    except TimeoutError:
                        continue
                    self._settle(index, record)
            finally:
                for slot in slots:
                    slot.cancel()
                await asyncio.gather(*slots, return_exceptions=True)

    async def _slot(self, limit: AdaptiveLimit, finished: asyncio.Queue[tuple[int, EpisodeRecord]]) -> None:
        """Play the next episode whenever the limit allows, until none is left (an episode thread's loop).

        Going from one episode to the next inside the slot, the next request is sent as soon as the last answer
        is judged, not after every other episode that finished at the same moment.
        """
        while self.following < len(self.keys) and not self.stop.is_set():
            if not limit.try_acquire():
                await asyncio.sleep(_WAKE_S)
                continue
            index = self.following
            self.following += 1
            try:
                record = await self._play_async(self.keys[index], limit)
            finally:
                limit.release()
            finished.put_nowait((index, record))

    async def _play_async(self, key: EpisodeKey, limit: AdaptiveLimit) -> EpisodeRecord:
        agent = cast(AsyncAgent, self.agent)
        try:
            with reporting_to(limit):
                return await self.gyms.play_async(agent, key, timeout_s=self.config.episode_timeout_s, stop=self.stop)
        except Exception as exc:  # a failure outside the episode (e.g. building the gym) loses it, not the batch
            return lost_record(key, self.packs, agent, "crash", f"{type(exc).__name__}: {exc}")


async def play_jobs_on_a_loop(agent: AsyncAgent, packs: dict[str, Pack], gyms: GymPool, timeout_s: float,
                              limit: AdaptiveLimit, jobs: Any, results: Any) -> None:
    """A rollout worker process's episodes, up to ``limit`` in flight on this event loop.

    Args:
        agent: The agent.
        packs: Packs by id.
        gyms: The worker's gyms.
        timeout_s: Wall-clock limit per episode.
        limit: Episodes in flight.
        jobs: The worker's queue of job chunks (lists of ``(index, key)``), ``None`` at the end.
        results: Where each record goes, as ``("done", index, pid, json)``, after one ``("ready", ...)``.
    """
    loop = asyncio.get_running_loop()
    waiting: asyncio.Queue[tuple[int, EpisodeKey] | None] = asyncio.Queue()
    pid = os.getpid()

    def feed() -> None:
        """Hand the chunks arriving on the process queue over to the loop (a blocking read, on its own thread)."""
        while (chunk := jobs.get()) is not None:
            for job in chunk:
                loop.call_soon_threadsafe(waiting.put_nowait, job)
        loop.call_soon_threadsafe(waiting.put_nowait, None)

    async def slot() -> None:
        while (job := await waiting.get()) is not None:
            index, key = job
            while not limit.try_acquire():
                await asyncio.sleep(_WAKE_S)
            try:
                with reporting_to(limit):
                    record = await gyms.play_async(agent, key, timeout_s=timeout_s)
            except Exception as exc:  # a failure outside the episode (e.g. building the gym) is this episode's
                record = lost_record(key, packs, agent, "crash", f"{type(exc).__name__}: {exc}")
            finally:
                limit.release()
            # JSON crosses the process boundary faster than pickled pydantic models (parsed in Rust).
            results.put(("done", index, pid, record.model_dump_json()))
        waiting.put_nowait(None)  # the end, for the next slot

    threading.Thread(target=feed, name="jobs", daemon=True).start()
    results.put(("ready", -1, pid, None))
    async with http_sessions():
        await asyncio.gather(*(slot() for _ in range(limit.maximum)))

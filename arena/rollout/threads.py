"""A batch's episodes on threads: up to ``slots`` in flight, a circuit breaker and a stop event."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from arena.agents.base import Agent
from arena.agents.limits import AdaptiveLimit, reporting_to
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout.config import EpisodeKey, RolloutConfig, record_key
from arena.rollout.episode import lost_record
from arena.rollout.pool import GymPool


class RolloutStopped(Exception):
    """A batch stopped before its end; ``records`` holds the episodes that finished (in plan order).

    Args:
        reason: Why it stopped.
        records: Episodes finished before the stop.
    """

    def __init__(self, reason: str, records: list[EpisodeRecord]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.records = records


class ModelUnavailable(RolloutStopped):
    """The circuit breaker opened: the model failed in ``max_model_failures`` consecutive episodes."""


class Breaker:
    """Holds back model-API failures; opens when ``threshold`` consecutive episodes *in plan order* failed there.

    The streak is read in plan order, not in the order episodes finish: whether the breaker opens depends on which
    episodes failed, never on when they finished, so a server that answers after random delays cannot break a
    failing streak up with the successes that happen to finish between its failures. A failure is released (as
    data) once the episodes on both sides of its run have finished without one, or the batch ends.

    Args:
        threshold: Consecutive failures that open it (``None``: never, nothing is held).
        total: Episodes in the batch.
    """

    def __init__(self, threshold: int | None, total: int) -> None:
        self.threshold = threshold
        self.total = total
        self.held: dict[int, EpisodeRecord] = {}
        self.cause = ""
        self._failing: set[int] = set()
        self._settled: set[int] = set()

    def feed(self, index: int, record: EpisodeRecord) -> list[EpisodeRecord]:
        """Take the record of plan index ``index``; return the records that may be released now."""
        if self.threshold is None:
            return [record]
        self._settled.add(index)
        if record.failure is not None and record.failure.boundary == "model_api":
            self._failing.add(index)
            self.held[index] = record
            low, high = self._run(index)
            if high - low + 1 >= self.threshold:
                self.cause = (f"the model failed in {self.threshold} consecutive episodes; last: "
                              f"{record.failure.kind}: {record.failure.message[:300]}")
                return []
            return self._release(low, high)
        released = [record]
        for neighbour in (index - 1, index + 1):
            if neighbour in self._failing and neighbour in self.held:
                released.extend(self._release(*self._run(neighbour)))
        return released

    def _run(self, index: int) -> tuple[int, int]:
        low = high = index
        while low - 1 in self._failing:
            low -= 1
        while high + 1 in self._failing:
            high += 1
        return low, high

    def _closed(self, index: int) -> bool:
        return index < 0 or index >= self.total or (index in self._settled and index not in self._failing)

    def _release(self, low: int, high: int) -> list[EpisodeRecord]:
        if not (self._closed(low - 1) and self._closed(high + 1)):
            return []
        return [self.held.pop(i) for i in range(low, high + 1) if i in self.held]

    def remaining(self) -> list[EpisodeRecord]:
        """The failures still held, in plan order (a run too short to open the breaker is data)."""
        return [self.held[i] for i in sorted(self.held)]

    @property
    def open(self) -> bool:
        """Whether a run reached the threshold (``cause`` says why)."""
        return bool(self.cause)


class ThreadBatch:
    """Runs a batch's episodes with up to ``slots`` in flight on as many daemon threads, each playing one at a time.

    The threads live as long as the batch (one per episode would cost a thread start per episode, which shows
    at a few hundred episodes a second); a thread whose episode hangs is abandoned and replaced.
    """

    def __init__(self, agent: Agent, packs: dict[str, Pack], keys: list[EpisodeKey], config: RolloutConfig,
                 on_episode: Callable[[EpisodeRecord], None] | None, stop: threading.Event | None) -> None:
        self.agent = agent
        self.packs = packs
        self.keys = keys
        self.index_of = {key: index for index, key in enumerate(keys)}
        self.config = config
        self.on_episode = on_episode
        self.stop = stop or threading.Event()
        self.gyms = GymPool(packs, config.conversation)
        self.breaker = Breaker(config.max_model_failures, len(keys))
        self.finished: queue.Queue[tuple[int, EpisodeRecord]] = queue.Queue()
        self.records: dict[int, EpisodeRecord] = {}
        self.running: dict[int, float] = {}
        self.following = 0
        self.ended = threading.Event()
        self.lock = threading.Lock()

    def run(self, slots: int) -> list[EpisodeRecord]:
        """Play every episode (inline when ``slots`` is 1) and return the records in order.

        Raises:
            RolloutStopped: ``stop`` was set; the episodes finished until then are on the exception.
            ModelUnavailable: The circuit breaker opened.
        """
        try:
            self._play_all(slots)
        finally:
            self.ended.set()
            self.gyms.close()
        for record in self.breaker.remaining():  # a failing run too short to open the breaker is data
            self._emit(self.index_of[record_key(record)], record)
        return [self.records[i] for i in range(len(self.keys))]

    def _play_all(self, slots: int) -> None:
        """Play the batch's episodes, settling each as it finishes (``AsyncBatch`` plays them on an event loop)."""
        if slots == 1:
            self._inline()
        else:
            self._concurrent(AdaptiveLimit(slots))

    def _emit(self, index: int, record: EpisodeRecord) -> None:
        self.records[index] = record
        if self.on_episode:
            self.on_episode(record)

    def _settle(self, index: int, record: EpisodeRecord) -> None:
        for released in self.breaker.feed(index, record):
            self._emit(self.index_of[record_key(released)], released)
        if self.breaker.open:
            raise ModelUnavailable(self.breaker.cause, self._so_far())
        if self.stop.is_set():
            raise RolloutStopped("the rollout was stopped", self._so_far())

    def _so_far(self) -> list[EpisodeRecord]:
        return [self.records[i] for i in sorted(self.records)]

    def _play(self, key: EpisodeKey) -> EpisodeRecord:
        return self.gyms.play(self.agent, key, timeout_s=self.config.episode_timeout_s, stop=self.stop)

    def _inline(self) -> None:
        for index, key in enumerate(self.keys):
            if self.stop.is_set():
                raise RolloutStopped("the rollout was stopped", self._so_far())
            self._settle(index, self._play(key))

    def _episode_thread(self, limit: AdaptiveLimit) -> None:
        """Play the next episode whenever a slot is free, until the batch has none left or ends."""
        while not (self.ended.is_set() or self.stop.is_set()):
            if not limit.acquire(timeout_s=0.1):
                continue
            with self.lock:
                if self.following >= len(self.keys) or self.ended.is_set():
                    limit.release()
                    return
                index = self.following
                self.following += 1
                self.running[index] = time.monotonic()
            if not self._play_one(index, self.keys[index], limit):
                return  # abandoned as hung: a new thread has taken this one's place

    def _play_one(self, index: int, key: EpisodeKey, limit: AdaptiveLimit) -> bool:
        """Play one episode and hand its record over; return ``False`` when it had been abandoned as hung."""
        try:
            with reporting_to(limit):
                record = self._play(key)
        except BaseException as exc:  # a failure outside play_episode (e.g. building the gym) is this episode's
            record = lost_record(key, self.packs, self.agent, "crash", f"{type(exc).__name__}: {exc}")
        with self.lock:
            mine = self.running.pop(index, None) is not None
        if mine:
            limit.release()
            self.finished.put((index, record))
        return mine

    def _start_thread(self, limit: AdaptiveLimit, number: int) -> None:
        threading.Thread(target=self._episode_thread, args=(limit,), name=f"episodes-{number}", daemon=True).start()

    def _concurrent(self, limit: AdaptiveLimit) -> None:
        grace = self.config.episode_timeout_s * 2
        threads = min(limit.maximum, len(self.keys))
        for number in range(threads):
            self._start_thread(limit, number)
        while len(self.records) + len(self.breaker.held) < len(self.keys):
            if self.stop.is_set():
                raise RolloutStopped("the rollout was stopped", self._so_far())
            try:
                index, record = self.finished.get(timeout=0.05)
            except queue.Empty:
                for _ in range(self._abandon_hung(grace, limit)):
                    self._start_thread(limit, threads)
                    threads += 1
                continue
            self._settle(index, record)

    def _abandon_hung(self, grace: float, limit: AdaptiveLimit) -> int:
        """Record episodes running past ``grace`` as lost and free their slots; return how many."""
        now = time.monotonic()
        with self.lock:
            hung = [i for i, since in self.running.items() if now - since > grace]
            for index in hung:
                del self.running[index]
        for index in hung:
            limit.release()
            message = f"episode hung past {grace:g} s; abandoned"
            lost = lost_record(self.keys[index], self.packs, self.agent, "episode_timeout", message)
            self.finished.put((index, lost))
        return len(hung)

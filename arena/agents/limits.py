"""Adaptive in-flight limit for episodes that call a model server (additive increase, multiplicative decrease).

The rollout engine holds one ``AdaptiveLimit`` per batch: each episode takes a free slot before it starts. The
agent reports how its model calls went through ``report_call`` (a context variable set by the engine for
the episode's thread); an overloaded server (429, 503, timeouts) halves the limit, at most once per
cool-down, and every ``limit`` successful calls raise it by one, up to the configured maximum.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

OVERLOAD_KINDS = frozenset({"rate_limit", "timeout", "server_error"})
"""Failure kinds of a model call that mean the server is overloaded (429, 503 and other 5xx, timeouts)."""


class AdaptiveLimit:
    """A concurrency limit between 1 and ``maximum`` that follows the server's health.

    Args:
        maximum: Most episodes in flight.
        initial: Starting limit (default: ``maximum``).
        cooldown_s: Shortest time between two decreases (one burst of errors halves the limit once).
        clock: Monotonic clock (injectable for tests).

    Attributes:
        maximum: Most episodes in flight.
        decreases: How many times the limit was cut.
        overloads: Overloaded calls reported.
        successes: Successful calls reported.
    """

    def __init__(self, maximum: int, *, initial: int | None = None, cooldown_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if maximum < 1:
            raise ValueError(f"maximum concurrency must be at least 1, got {maximum}")
        self.maximum = maximum
        self._limit = float(min(maximum, max(1, initial if initial is not None else maximum)))
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._last_decrease = -float("inf")
        self._in_flight = 0
        self._peak = 0
        self._lock = threading.Condition()
        self.decreases = 0
        self.overloads = 0
        self.successes = 0

    @property
    def limit(self) -> int:
        """Episodes allowed in flight now."""
        with self._lock:
            return int(self._limit)

    @property
    def in_flight(self) -> int:
        """Episodes in flight now."""
        with self._lock:
            return self._in_flight

    @property
    def peak(self) -> int:
        """Most episodes that were in flight at once."""
        with self._lock:
            return self._peak

    def try_acquire(self) -> bool:
        """Take a slot if one is free now; return whether it was taken."""
        with self._lock:
            if self._in_flight >= int(self._limit):
                return False
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            return True

    def acquire(self, timeout_s: float | None) -> bool:
        """Take a slot, waiting up to ``timeout_s`` (``None``: as long as it takes) for one; return whether it was."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._in_flight < int(self._limit), timeout=timeout_s):
                return False
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            return True

    def release(self) -> None:
        """Give a slot back."""
        with self._lock:
            self._in_flight -= 1
            self._lock.notify()

    def report(self, ok: bool, kind: str = "") -> None:
        """Adapt to one model call: a success grows the limit by ``1/limit``; an overload halves it."""
        with self._lock:
            if ok:
                self.successes += 1
                before = int(self._limit)
                self._limit = min(float(self.maximum), self._limit + 1.0 / max(1.0, self._limit))
                if int(self._limit) > before:
                    self._lock.notify()
                return
            if kind not in OVERLOAD_KINDS:
                return
            self.overloads += 1
            now = self._clock()
            if now - self._last_decrease >= self._cooldown_s:
                self._limit = max(1.0, self._limit / 2.0)
                self._last_decrease = now
                self.decreases += 1


_CURRENT: contextvars.ContextVar[AdaptiveLimit | None] = contextvars.ContextVar("gymloop_limit", default=None)


@contextmanager
def reporting_to(limit: AdaptiveLimit | None) -> Iterator[None]:
    """Send the model-call reports of the code inside (one episode) to ``limit``."""
    token = _CURRENT.set(limit)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def report_call(ok: bool, kind: str = "") -> None:
    """Tell the running episode's limit how a model call went (no-op outside the rollout engine)."""
    limit = _CURRENT.get()
    if limit is not None:
        limit.report(ok, kind)

"""Checks a gym runs itself: what a :class:`~arena.core.task.DomainAssertion` is judged with.

A gym names its checks in ``Domain.checks`` (``name -> check``); a task's ``DomainAssertion`` says which check, with
what expectations (``params``, data). When an episode is judged, the runtime calls the check with a
:class:`CheckInput`: the episode as it happened (trace, conversation turns), its final world (read only) and a way to
replay calls on a fresh copy of the starting world, for a verdict that needs the world as it was part-way (at the
end of each turn).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from arena.core.conversation import Role
from arena.core.results import ToolResult, TraceStep
from arena.core.task import DomainAssertion, Task


class ReplayGym(Protocol):
    """What a check does with its replay gym (an :class:`arena.core.gym.Gym`): say turns, call tools, read."""

    @property
    def trace(self) -> list[TraceStep]:
        """The replayed calls."""

    def record_turn(self, role: Role, text: str) -> None:
        """Record a conversation message after the calls made so far."""

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        """Run one tool call on the replayed world."""

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only query over the replayed world."""


@dataclass(frozen=True)
class CheckInput:
    """What a gym's check reads when an episode is judged.

    Attributes:
        assertion: The assertion being judged (its ``params`` hold the expectations).
        task: The episode's task.
        trace: The episode's tool calls.
        turns: The conversation's user and agent turns, each with the trace length when it was said (empty for a
            single-reply episode).
        world: The episode's final world, read only.
        replay: A fresh episode of the same task and seed on its starting world (a gym of the same pack, reset),
            to replay calls in; the judged gym keeps it (never close it).
        memo: Values shared by the checks of one verdict (a check judging one turn of many can replay once).
    """

    assertion: DomainAssertion
    task: Task
    trace: Sequence[TraceStep]
    turns: Sequence[Any]
    world: sqlite3.Connection
    replay: Callable[[], ReplayGym]
    memo: dict[str, Any] = field(default_factory=dict)


DomainCheck = Callable[[CheckInput], tuple[bool, str]]
"""A gym's check: whether the assertion held, and why not (empty when it held)."""

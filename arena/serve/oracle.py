"""An adversary of served verdicts: a client that learns the answer key from what ``end_episode`` says.

The oracle plays an episode with no calls and an empty reply, reads every string of the verdict it is served,
and pulls out anything that looks like an answer: calls with their arguments (``missing call T({...})``), reply
facts (``reply does not state 'X'``) and expected values. It then starts a new episode of the same task and
seed, makes those calls and replies with those facts, and repeats while it learns something new. Against a
surface that serves verdict details it passes many tasks; against gymloop's served verdicts (score, passed,
per-check pass/fail by kind) it learns nothing and passes none. It plays through any
:class:`EpisodeSurface`, so the same oracle runs over MCP (stdio, HTTP) and OpenEnv.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from arena.core.pack import Pack
    from arena.serve.session import GymService

_MISSING_CALL = re.compile(r"missing call (\w+)\((\{.*?\})\)")
_QUOTED = re.compile(r"(?:does not state|expected|should be|must state|want(?:ed)?)\s*:?\s*'([^']{2,200})'")

__all__ = ["EpisodeSurface", "OracleResult", "ServiceSurface", "audit_served", "play_oracle"]


class EpisodeSurface(Protocol):
    """One served gym as a client plays it: start an episode, call tools, end it."""

    def start(self, task_id: str, seed: int) -> dict[str, Any]:
        """Start an episode; return the observation as served."""

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool of the running episode; return the result as served."""

    def end(self, reply: str) -> dict[str, Any]:
        """End the running episode with ``reply``; return the verdict as served."""


@dataclass
class OracleResult:
    """What the oracle achieved on one task.

    Attributes:
        task_id: The task.
        passed: Whether an episode it played passed.
        tries: Episodes it played.
        learned_calls: Calls it pulled out of verdicts.
        learned_facts: Reply facts it pulled out of verdicts.
    """

    task_id: str
    passed: bool = False
    tries: int = 0
    learned_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    learned_facts: list[str] = field(default_factory=list)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _parse_arguments(text: str) -> dict[str, Any] | None:
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _learn(verdict: dict[str, Any], result: OracleResult) -> bool:
    """Add what ``verdict`` gives away to ``result``; return whether anything was new."""
    new = False
    for text in _strings(verdict):
        for tool, raw in _MISSING_CALL.findall(text):
            arguments = _parse_arguments(raw)
            if arguments is not None and (tool, arguments) not in result.learned_calls:
                result.learned_calls.append((tool, arguments))
                new = True
        for fact in _QUOTED.findall(text):
            if fact not in result.learned_facts:
                result.learned_facts.append(fact)
                new = True
    return new


def play_oracle(surface: EpisodeSurface, task_id: str, seed: int = 0, *, max_tries: int = 6) -> OracleResult:
    """Feed served verdicts back into new episodes of ``task_id`` and ``seed`` until one passes or nothing is new.

    Args:
        surface: The served gym.
        task_id: The task.
        seed: The episode seed every try uses.
        max_tries: Most episodes played.
    """
    result = OracleResult(task_id=task_id)
    while result.tries < max_tries:
        result.tries += 1
        surface.start(task_id, seed)
        for tool, arguments in result.learned_calls:
            surface.call(tool, dict(arguments))
        verdict = surface.end(" ".join(result.learned_facts))
        if verdict.get("passed") is True:
            result.passed = True
            return result
        if not _learn(verdict, result):
            return result
    return result


class ServiceSurface:
    """An episode surface over a :class:`GymService` in this process: what every served surface serves, no wire."""

    def __init__(self, service: GymService) -> None:
        self.service = service
        self._handle = ""

    def start(self, task_id: str, seed: int) -> dict[str, Any]:
        """Start an episode; return the served observation."""
        self._handle, observation = self.service.start(task_id, seed)
        return observation.model_dump(mode="json")

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool of the running episode; return the tool result."""
        return self.service.call(self._handle, name, arguments).model_dump(mode="json")

    def end(self, reply: str) -> dict[str, Any]:
        """End the running episode; return the verdict a client is served."""
        return self.service.finish(self._handle, reply).served().model_dump(mode="json")


def audit_served(pack: Pack, task_ids: list[str] | None = None, *, seed: int = 0) -> list[str]:
    """Replay the oracle on every task of ``pack`` a client may start; return those it passed (none, for a sound gym).

    Held-out tasks are served to the operator only, so a client's oracle cannot start them (nothing to replay).
    """
    from arena.serve.session import GymService

    service = GymService(pack)
    try:
        surface = ServiceSurface(service)
        served = set(service.served_task_ids())
        wanted = [t for t in (task_ids if task_ids is not None else [t.id for t in pack.tasks]) if t in served]
        return [task_id for task_id in wanted if play_oracle(surface, task_id, seed).passed]
    finally:
        service.close()

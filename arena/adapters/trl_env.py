"""gymloop gyms as TRL environments: one episode per dataset row, the pack's tools as typed methods.

TRL's ``GRPOTrainer(environment_factory=...)`` builds instances of an environment class (pooled and reused),
calls ``reset(**row)`` with each dataset row before a rollout, offers every public method but ``reset`` and
``get_reward`` to the model as a tool (schema from the signature and Google docstring) and scores the rollout with
``get_reward()``. ``environment_class`` builds such a class for a set of packs of one domain: each instance holds
its own gyms (its own in-memory worlds), ``reset`` restores the row's world from the pack's template, tool errors
come back to the model as tool responses, and the reward is the verifier's score.

The final reply is part of the verdict (response assertions), but ``get_reward()`` takes no argument: the
reward function ``record_replies`` (listed in ``reward_funcs`` before the environments' own reward) hands each
rollout's last assistant message to its environment and scores nothing itself.

This module imports neither torch nor TRL; the trainer in ``trainers.trl`` wires it in.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from arena.adapters.tool_methods import tool_method
from arena.agents.litellm_agent import tool_message_content
from arena.agents.transcript import observation_of, opening_messages
from arena.core.gym import EnvironmentFailure, Gym
from arena.core.pack import Pack
from arena.core.results import Verdict

Message = dict[str, Any]


class EpisodeRow(BaseModel):
    """One dataset row: the episode a rollout plays.

    Attributes:
        pack_id: Pack holding the task.
        task_id: Task to play.
        seed: Episode seed (the world's clock and randomness derive from it).
        weight: The row's weight in its wave (informational here; the trainer samples by it).
    """

    model_config = ConfigDict(extra="ignore")

    pack_id: str
    task_id: str
    seed: int = 0
    weight: float = Field(default=1.0, ge=0)


class EnvironmentTimings(BaseModel):
    """Seconds an environment instance spent in gymloop's own code (reset, tools, verify) and how often.

    Attributes:
        reset_s: Time in ``reset``.
        tools_s: Time in tool calls.
        verify_s: Time in verification.
        resets: Episodes started.
        tool_calls: Tool calls served.
    """

    model_config = ConfigDict(extra="forbid")

    reset_s: float = 0.0
    tools_s: float = 0.0
    verify_s: float = 0.0
    resets: int = 0
    tool_calls: int = 0


def episode_prompt(pack: Pack, task_id: str) -> list[Message]:
    """The conversation an episode starts from: the opening every agent and trainer renders (``transcript``)."""
    return opening_messages(observation_of(pack, task_id))


class GymEnvironment:
    """Base of the generated environment classes; subclasses get one method per tool of their packs.

    An instance plays one episode at a time in its own worlds: ``reset`` restores the row's world byte for byte,
    so nothing a previous row did (nor a row another instance plays) is visible.
    """

    packs: ClassVar[dict[str, Pack]] = {}
    domain: ClassVar[str] = ""
    on_verdict: ClassVar[Callable[[EpisodeRow, Verdict], None] | None] = None
    """Called with each scored episode and its verdict (per-check results), e.g. by a trainer that logs them."""
    created: ClassVar[list[GymEnvironment]] = []
    """Instances of this class (each generated class has its own list), for their timings."""

    def __init__(self) -> None:
        self._gyms: dict[str, Gym] = {}
        self._gym: Gym | None = None
        self._row: EpisodeRow | None = None
        self._reply: str = ""
        self._verdict: Verdict | None = None
        self._failure: str | None = None
        self.timings = EnvironmentTimings()
        type(self).created.append(self)

    def reset(self, **row: Any) -> None:
        """Start the episode a dataset row names (``pack_id``, ``task_id``, ``seed``) on a fresh world.

        Raises:
            ValueError: The row names a pack this environment does not hold, or a task its pack lacks.
        """
        started = time.perf_counter()
        episode = EpisodeRow.model_validate(row)
        pack = self.packs.get(episode.pack_id)
        if pack is None:
            raise ValueError(f"dataset row names pack {episode.pack_id[:12]!r}, which environment "
                             f"{type(self).__name__} ({self.domain}) does not hold")
        gym = self._gyms.get(pack.id)
        if gym is None:
            gym = self._gyms[pack.id] = Gym(pack)
        try:
            gym.reset(episode.task_id, seed=episode.seed)
        except KeyError as exc:
            raise ValueError(f"dataset row: {exc.args[0]}") from exc
        self._gym, self._row = gym, episode
        self._reply, self._verdict, self._failure = "", None, None
        self.timings.reset_s += time.perf_counter() - started
        self.timings.resets += 1

    def get_reward(self) -> float:
        """The verifier's score of the episode (fraction of assertions held; 0 after an environment failure)."""
        verdict = self._finish()
        return 0.0 if self._failure is not None or verdict is None else verdict.score

    @property
    def row(self) -> EpisodeRow | None:
        """The episode being played, if any."""
        return self._row

    @property
    def gym(self) -> Gym | None:
        """The gym of the current episode (its trace and world), if any."""
        return self._gym

    @property
    def verdict(self) -> Verdict | None:
        """The verdict once the episode was scored: passed, score and every assertion's result."""
        return self._verdict

    @property
    def failure(self) -> str | None:
        """Why the environment itself failed during the episode, if it did."""
        return self._failure

    def _set_reply(self, reply: str) -> None:
        self._reply = reply

    def _finish(self) -> Verdict | None:
        if self._verdict is None and self._gym is not None and self._failure is None:
            started = time.perf_counter()
            self._verdict = self._gym.verify(self._reply)
            self.timings.verify_s += time.perf_counter() - started
            hook = type(self).on_verdict
            if hook is not None and self._row is not None:
                hook(self._row, self._verdict)
        return self._verdict

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        started = time.perf_counter()
        try:
            if self._gym is None:
                return json.dumps({"ok": False, "error": {"kind": "ended", "message": "no episode started"}})
            if self._failure is not None:
                return json.dumps({"ok": False, "error": {"kind": "ended", "message": "the episode has ended"}})
            try:
                return tool_message_content(self._gym.call_tool(name, arguments))
            except EnvironmentFailure as exc:
                self._failure = str(exc)
                return json.dumps({"ok": False, "error": {"kind": "environment", "message": str(exc)}})
        finally:
            self.timings.tools_s += time.perf_counter() - started
            self.timings.tool_calls += 1


def _dispatch(self: GymEnvironment, name: str, arguments: dict[str, Any]) -> str:
    return self._call(name, arguments)


def environment_class(packs: Sequence[Pack]) -> type[GymEnvironment]:
    """An environment class over packs of one domain, with one typed method per tool.

    Raises:
        ValueError: No packs, packs of several domains, or two packs disagreeing on a tool's schema.
    """
    if not packs:
        raise ValueError("an environment needs at least one pack")
    domains = sorted({p.manifest.domain for p in packs})
    if len(domains) != 1:
        raise ValueError(f"one environment class serves one domain; got {', '.join(domains)}")
    specs: dict[str, Any] = {}
    for pack in packs:
        for spec in pack.tools:
            known = specs.setdefault(spec.name, spec)
            if known.parameters != spec.parameters:
                raise ValueError(f"tool {spec.name} has different schemas in packs of domain {domains[0]}")
    namespace: dict[str, Any] = {name: tool_method(spec, _dispatch) for name, spec in sorted(specs.items())}
    reserved = sorted(set(namespace) & (set(dir(GymEnvironment)) | {"reset", "get_reward"}))
    if reserved:
        raise ValueError(f"tool name(s) {', '.join(reserved)} clash with the environment's own methods")
    namespace.update(packs={p.id: p for p in packs}, domain=domains[0], created=[],
                     __doc__=f"gymloop gym {domains[0]} ({len(packs)} pack(s)) as a TRL environment.")
    return type(f"{domains[0].title().replace('_', '')}Environment", (GymEnvironment,), namespace)


def environment_classes(packs: Sequence[Pack]) -> dict[str, type[GymEnvironment]]:
    """One environment class per domain of the packs, keyed by domain (TRL's multi-environment form)."""
    by_domain: dict[str, list[Pack]] = defaultdict(list)
    for pack in packs:
        by_domain[pack.manifest.domain].append(pack)
    return {domain: environment_class(group) for domain, group in sorted(by_domain.items())}


def last_reply(completion: Sequence[Message] | str) -> str:
    """The final reply of a rollout: its last assistant message without tool calls ('' if it ended on a call)."""
    if isinstance(completion, str):
        return completion
    if not completion:
        return ""
    message = completion[-1]
    if message.get("role") != "assistant" or message.get("tool_calls"):
        return ""
    content = message.get("content")
    return content if isinstance(content, str) else ""


def record_replies(completions: Sequence[Sequence[Message] | str], environments: Sequence[GymEnvironment] | None = None,
                   **_: Any) -> list[float | None]:
    """A TRL reward function that gives each environment its rollout's final reply and scores nothing.

    List it in ``reward_funcs``: TRL calls reward functions before the environments' ``get_reward``, which then
    verifies the episode with that reply. It returns ``None`` for every rollout (no reward of its own).
    """
    for completion, environment in zip(completions, environments or [], strict=False):
        environment._set_reply(last_reply(completion))
    return [None] * len(completions)

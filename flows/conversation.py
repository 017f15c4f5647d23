"""How the users of conversational gyms are played in a run: the ``user_model`` setting, checked before any episode.

A gym whose tasks are conversations (τ²-bench's) has a simulated user. Without ``user_model`` the scripted user
plays it (offline, deterministic); with it, that model does, through the agent's own client code, with the
settings' timeout and retries and its own endpoint (``MODEL@URL`` or a litellm string). Either way each episode
records who played (``EpisodeRecord.user.ref``) and the run says it. ``judge_model`` judges the statements only a
model can check (τ²-bench's NL assertions); without it they stay unjudged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from arena.agents.litellm_agent import LiteLLMConfig
from arena.agents.user import ConversationConfig
from arena.core.model_id import parse_model_id
from flows.model_client import choose_client
from flows.preflight import PreflightError, preflight

if TYPE_CHECKING:
    from arena.agents.litellm_agent import LiteLLMConfig
    from arena.core.episode import EpisodeRecord
    from arena.core.pack import Pack
    from flows.settings import GymloopSettings


def model_config(model: str | None, settings: GymloopSettings) -> LiteLLMConfig | None:
    """The configuration of a user or judge model string (``None`` stays ``None``).

    It takes the settings' timeout and retries and its own endpoint.
    """
    if model is None:
        return None

    spec = parse_model_id(model)
    choice = choose_client(spec, settings.models.model_client)
    return LiteLLMConfig(model=spec.name, api_base=choice.api_base, timeout_s=settings.models.model_timeout_s,
                         max_retries=settings.models.model_retries, client=choice.client)


def conversation_config(settings: GymloopSettings) -> ConversationConfig:
    """How a run's conversational episodes are played and judged, from the settings."""
    return ConversationConfig(user_model=model_config(settings.evaluation.user_model, settings),
                              judge_model=model_config(settings.evaluation.judge_model, settings))


def converses(packs: Sequence[Pack]) -> bool:
    """Whether any task of the packs is a conversation."""
    return any(t.conversation is not None for p in packs for t in p.tasks)


def preflight_user(config: ConversationConfig) -> None:
    """Check that the user and judge models answer before any episode (nothing to check for the scripted user).

    Raises:
        PreflightError: One line naming the setting, the model, its endpoint and the cause.
    """
    for setting, model in (("user_model", config.user_model), ("judge_model", config.judge_model)):
        if model is None:
            continue
        try:
            preflight(model, tools=False)
        except PreflightError as exc:
            raise PreflightError(f"{setting}: {exc}") from exc


def users_line(records: Iterable[EpisodeRecord]) -> str | None:
    """Who played the users of the conversational episodes, in one line (``None`` when there were none)."""
    played = Counter(r.user.ref for r in records if r.user is not None)
    if not played:
        return None
    return "users played by " + ", ".join(f"{ref} ({n} episode{'s' if n != 1 else ''})" for ref, n in played.items())


def unjudged_line(records: Iterable[EpisodeRecord]) -> str | None:
    """How many statements only a judge model can check were left unjudged, in one line (``None``: none were)."""
    held = [len(r.verdict.unjudged) for r in records if r.verdict is not None and r.verdict.unjudged]
    if not held:
        return None
    return (f"{sum(held)} statement(s) in {len(held)} episode(s) left unjudged (no judge_model): reported on each "
            "verdict, never counted as passed; the pass rate reads the other checks")

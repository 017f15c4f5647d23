"""The campaign's token and cost budget: a stop rule over what its finished rounds used."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flows.settings import GymloopSettings


def spent(summaries: Iterable[dict[str, Any]]) -> tuple[float, float]:
    """Model tokens and US dollars used by rounds, from their summaries' metrics."""
    tokens = cost = 0.0
    for summary in summaries:
        metrics = summary.get("metrics", {})
        tokens += float(metrics.get("tokens", 0.0))
        cost += float(metrics.get("cost_usd", 0.0))
    return tokens, cost


def budget_stop(settings: GymloopSettings, summaries: Iterable[dict[str, Any]]) -> str | None:
    """Why the campaign must stop for its budget (``None`` while it may run another round)."""
    tokens, cost = spent(summaries)
    if settings.stop.token_budget is not None and tokens >= settings.stop.token_budget:
        return f"token budget reached: {tokens:.0f} tokens used, budget {settings.stop.token_budget}"
    if settings.stop.cost_budget is not None and cost >= settings.stop.cost_budget:
        return f"cost budget reached: ${cost:.4f} used, budget ${settings.stop.cost_budget:g}"
    return None

"""Per-decision credit: which of a rollout's decisions a diagnosis of the rollout blames.

A detector's tag names a weakness kind and, in its evidence, the tools it saw the failure at. The reference policy
fails in a kind's way by taking that kind's careless strategy at a decision (its failure mode,
``arena.agents.reference.FAILURE_MODES``; giving up for ``gave_up_early``), so a tag names the rollout's
decisions that took such a strategy: those at a tool the evidence names when the rollout has any there, otherwise
all of them. The builtin trainer's ``credit = "decision"`` trains a group only on the named decisions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from arena.agents.reference import CONTEXTS, FAILURE_MODES, STRATEGIES
from arena.core.weakness import WeaknessKind

GIVE_UP = "give_up"
"""The strategy every ``gave_up_early`` tag blames, wherever the policy can take it."""


class Blame(BaseModel):
    """One diagnosis tag of a training rollout, as the builtin trainer reads it.

    Attributes:
        kind: Weakness kind of the tag (``missed_policy_dependency``, ...).
        tools: Tools the tag's evidence names (the tool called and the tool an argument names), if any.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: WeaknessKind
    tools: tuple[str, ...] = ()


def careless_choices(kind: WeaknessKind) -> frozenset[tuple[str, str]]:
    """The (decision key, strategy) pairs by which the reference policy fails in the way of ``kind``."""
    pairs = set(FAILURE_MODES.get(kind, {}).items())
    if kind == WeaknessKind.GAVE_UP_EARLY:
        pairs |= {(f"{k}|{c}", GIVE_UP) for k, strategies in STRATEGIES.items() if GIVE_UP in strategies
                  for c in CONTEXTS[k]}
    return frozenset(pairs)


def named_decisions(decisions: Sequence[Mapping[str, Any]], blame: Sequence[Blame]) -> set[int]:
    """Indexes of the decisions ``blame`` names in one rollout (see the module docstring)."""
    named: set[int] = set()
    for tag in blame:
        pairs = careless_choices(tag.kind)
        of_kind = [i for i, d in enumerate(decisions) if (str(d.get("key")), str(d.get("choice"))) in pairs]
        at_tool = [i for i in of_kind if decisions[i].get("tool") and decisions[i].get("tool") in tag.tools]
        named.update(at_tool or of_kind)
    return named

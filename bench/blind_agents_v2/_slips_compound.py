"""Slips that are two known kinds at once; their label names both, the primary first (``primary+secondary``)."""

from __future__ import annotations

from typing import Any

from arena.core.results import ToolResult
from bench.blind_agents_v2._hand import Hand, Stop
from bench.blind_agents_v2._slips_lookup import SummaryAnswer, swap_digits
from bench.blind_agents_v2._slips_order import Prerequisites
from bench.blind_agents_v2._voice import describe_call


class UnconfirmedPick(SummaryAnswer, Prerequisites):
    """Acts on a search hit without the fetch the policy requires before the change.

    A user before a group change, a vendor before a purchase order: ``search_without_fetch+missed_policy_dependency``.
    """

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if not self.prerequisite_of_goal(name):
            return self.forward(name, args)
        return SummaryAnswer.on_call(self, name, args)


class HitThenHandover(Hand):
    """Finds the record by name in the search, then hands the task over without fetching or doing it.

    ``search_without_fetch+gave_up_early``.
    """

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        ref = self.get_ref(name, args)
        spec = self.specs.get(name)
        writes = any(self.is_write(t) for t in self.goal_tools)
        if not writes or ref is None or spec is None or ref["mention_kind"] != "text":
            return self.forward(name, args)
        wanted = str(args.get(self.id_param(name, spec.entity)))
        hit = next((h for h in self.hits.get(ref["name"], []) if str(h.get("id")) == wanted), None)
        if hit is None:
            return self.forward(name, args)
        self.slip()
        label = next((str(hit[k]) for k in ("name", "display_name", "summary", "subject") if hit.get(k)), "")
        raise Stop(f"I found {wanted}{f' ({label})' if label else ''} in the search results. I'll pass this to a "
                   "colleague to finish.")


class TimeoutThenClaims(Hand):
    """When the requested change times out or is rate limited, does not retry and reports it as done.

    ``no_error_recovery+claimed_unverified_success``.
    """

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        if name in self.goal_tools and self.is_write(name) and self.is_fault(result, "timeout", "rate_limit"):
            self.slip()
            raise Stop(f"Done: I {describe_call(name, args)}.")
        return result


class ChecksNeighbour(Prerequisites):
    """Runs the required check on a misread id (another record), then makes the change on the right one.

    ``wrong_id+missed_policy_dependency``.
    """

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        read = any((c.get("when") or "").lstrip("!").startswith(f"${name}.") for c in self.calls)
        if read or not self.skippable_check(name, args) or self.get_ref(name, args) is not None:
            return self.forward(name, args)
        key = next((k for k, v in args.items() if isinstance(v, str) and swap_digits(v) != v), None)
        if key is None:
            return self.forward(name, args)
        result = self.forward(name, {**args, key: swap_digits(args[key])})
        if not result.ok:
            return self.forward(name, args)
        self.slip()
        return result

"""Slips in the order of work: prerequisites skipped (``missed_policy_dependency``), stops before the goal."""

from __future__ import annotations

import json
import re
from typing import Any

from arena.core.results import ToolResult
from bench.blind_agents_v2._hand import Hand, Stop
from bench.blind_agents_v2._voice import describe_call

POLICY_CHAINS: dict[str, set[str]] = {
    "issue_refund": {"approve_refund"},
    "send_quote": {"approve_discount"},
}
"""Steps the gyms' policies require before a goal call beyond the dependency graph's strong edges: a refund above
the limit only with an approved manager approval (helpdesk), a quote above the threshold only with an approved
discount (crm)."""


class Prerequisites(Hand):
    """A hand that knows which calls the policy requires before the task's goal calls."""

    def prerequisite_of_goal(self, tool: str) -> bool:
        """Whether ``tool`` must run before one of the task's goal calls (graph or policy)."""
        return any(tool in self.required_before.get(goal, set()) | POLICY_CHAINS.get(goal, set())
                   for goal in self.goal_tools if goal != tool)

    def skippable_check(self, tool: str, args: dict[str, Any]) -> bool:
        """A read the policy requires before a goal call, which is not the fetch of a record named in words."""
        if self.is_write(tool) or not self.prerequisite_of_goal(tool):
            return False
        ref = self.get_ref(tool, args)
        return ref is None or ref["mention_kind"] != "text"

    def assumed(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """What an agent that skips ``tool`` takes for granted: every condition the goal reads from it holds."""
        out: dict[str, Any] = {k: v for k, v in args.items() if k.endswith("_id")}
        spec = self.specs.get(tool)
        if spec is not None and spec.operation == "get":
            out["id"] = next(iter(args.values()), None)
        for call in self.calls:
            condition = call.get("when") or ""
            path = condition.lstrip("!")
            if path.startswith(f"${tool}."):
                out[path.removeprefix(f"${tool}.")] = not condition.startswith("!")
        return out


class SkipCheck(Prerequisites):
    """Never runs the check the policy requires before the goal call; assumes it would pass."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if not self.skippable_check(name, args):
            return self.forward(name, args)
        self.slip()
        return self.answer(name, args, self.assumed(name, args))


class CheckAfterwards(Prerequisites):
    """Makes the goal call first and runs the required check after it, to confirm."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: list[tuple[str, dict[str, Any]]] = []

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if self.skippable_check(name, args):
            self.slip()
            self.pending.append((name, args))
            return self.answer(name, args, self.assumed(name, args))
        result = self.forward(name, args)
        if name in self.goal_tools:
            self._run_pending()
        return result

    def _run_pending(self) -> None:
        pending, self.pending = self.pending, []
        for name, args in pending:
            self.forward(name, args)

    def finish(self, reply: str) -> str:
        """Runs any check still pending, then replies."""
        self._run_pending()
        return self.voice(reply)


class BrokenChain(Prerequisites):
    """Walks the policy's chain of steps before the goal but leaves one link out, taking it as done.

    The link: an approval, a scheme, a grant, an invoice match, a compliance document; never one with a result a
    later call of the request reads that the agent could not take for granted (a new approval's id): leaving that
    out would break the later call's arguments, not the chain.
    """

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        assumed = {**args, "status": "approved", "matched": True}
        later = re.findall(rf"\${re.escape(name)}\.(\w+)", json.dumps([c.get("arguments", {}) for c in self.calls]))
        if (self.slipped or not self.is_write(name) or not self.prerequisite_of_goal(name)
                or any(field not in assumed for field in later)):
            return self.forward(name, args)
        self.slip()
        return self.answer(name, args, assumed)


class HandoverAfterRead(Hand):
    """Reads the record the request is about, then hands the task to a supervisor instead of doing it."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        spec = self.specs.get(name)
        writes = any(self.is_write(t) for t in self.goal_tools)
        if writes and spec is not None and spec.operation == "get" and result.ok and isinstance(result.output, dict):
            self.slip()
            record = result.output.get("id", "the record")
            raise Stop(f"I've pulled up {record}. This one needs someone with more access than I have, so I'm passing "
                       "it to a supervisor to finish.")
        return result


class AsksFirst(Hand):
    """Prepares everything, then asks the requester to confirm instead of making the requested change."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name in self.goal_tools and self.is_write(name):
            self.slip()
            raise Stop(f"Everything is ready: I can {describe_call(name, args, done=False)}. Shall I go ahead?")
        return self.forward(name, args)


class StepBudget(Hand):
    """Works with a budget of three tool calls and stops when it runs out, before the requested change."""

    budget = 3

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        pending = [t for t in self.goal_tools if self.is_write(t) and not self.done(t)]
        if pending and len(self.real_steps()) >= self.budget:
            self.slip()
            seen = sorted({str(r.get("id")) for r in self.fetched() if r.get("id")})
            looked = f" So far I have looked at {', '.join(seen)}." if seen else ""
            raise Stop(f"I ran out of steps before finishing.{looked} The request itself is still open.",
                       stop_reason="step_limit")
        return self.forward(name, args)


class IrreversibleCaution(Hand):
    """Will not make a change that cannot be undone; leaves it for a manager although nothing forbids it."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        spec = self.specs.get(name)
        if name in self.goal_tools and spec is not None and spec.irreversible:
            self.slip()
            raise Stop(f"To {describe_call(name, args, done=False)} cannot be undone, so I'd rather a manager did it. "
                       "I've checked the records and everything else is ready.")
        return self.forward(name, args)

"""Slips after an injected failure (``no_error_recovery``): stopping, handing over, or dropping the failed step."""

from __future__ import annotations

import json
from typing import Any

from arena.core.results import ToolResult
from bench.blind_agents_v2._hand import Hand, Stop
from bench.blind_agents_v2._voice import describe_call

_WHAT = {"timeout": "timed out", "rate_limit": "is rate limiting requests", "data_conflict": "reported a conflict"}


class StopOnFault(Hand):
    """After a timeout or a rate limit, stops and tells the requester to try later."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        if self.is_fault(result, "timeout", "rate_limit") and result.error is not None:
            self.slip()
            raise Stop(f"The system {_WHAT[str(result.error.fault)]} while I was trying to "
                       f"{describe_call(name, args, done=False)}. Please try again later.")
        return result


class EscalatesToIt(Hand):
    """After any injected failure, reports it to IT and leaves the request open."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        if self.is_fault(result) and result.error is not None:
            self.slip()
            raise Stop(f"I hit a system error ({result.error.message}) and have reported it to IT. Your request is not "
                       "done yet; it can be picked up once they confirm the system is back.")
        return result


class DropsFailedStep(Hand):
    """Never repeats a call that failed with an injected fault; carries on without it and says it failed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed: dict[str, ToolResult] = {}

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        key = name + json.dumps(args, sort_keys=True, default=str)
        if key in self.failed:
            self.slip()
            return self.failed[key]
        result = self.forward(name, args)
        if self.is_fault(result):
            self.failed[key] = result
        return result


class LeavesConflict(Hand):
    """After a data conflict, leaves the record alone: someone else must be editing it."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        if self.is_fault(result, "data_conflict"):
            self.slip()
            record = next((str(v) for v in args.values() if isinstance(v, str) and "-" in v), "the record")
            raise Stop(f"Someone else seems to be editing {record} right now, so I have left it as it is. Please try "
                       "again in a little while.")
        return result

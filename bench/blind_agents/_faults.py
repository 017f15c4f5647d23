"""no_error_recovery: a transient failure (timeout, rate limit, data conflict) is never retried."""

from __future__ import annotations

from typing import Any

from arena.core.results import ToolErrorInfo
from bench.blind_agents._policy import Episode, Stop

TRANSIENT = ("timeout", "rate_limit", "data_conflict")
"""The injected fault kinds a careful agent retries."""


class StopsOnFault(Episode):
    """At the first timeout, rate limit or data conflict, stops and tells the requester to try again later."""

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Stop the episode on a transient fault."""
        if self.error_kind(error) in TRANSIENT:
            self.injected = True
            raise Stop(f"The system is having trouble right now ({error.message}). Please try again later.")
        return super().recover(tool, args, raw, error)


class SkipsFailedStep(Episode):
    """Treats a timeout, rate limit or data conflict as final for that step.

    Leaves the step undone, carries on with the rest of the request and lists the step as failed.
    """

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Give up on the call, not the episode."""
        if self.error_kind(error) in TRANSIENT:
            self.injected = True
            return None
        return super().recover(tool, args, raw, error)


class ChecksButNeverRetries(Episode):
    """Re-reads the record after a transient fault, then reports failure without retrying.

    After a timeout, rate limit or data conflict it reads the record again to see what happened, finds the change
    not there, and reports that it did not go through -- without ever trying the call again.
    """

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Re-read, then stop."""
        if self.error_kind(error) not in TRANSIENT:
            return super().recover(tool, args, raw, error)
        self.injected = True
        self.refetch(args)
        raise Stop(f"I looked at the record again after the error ({error.message}); the change is not there, so "
                   f"{tool.replace('_', ' ')} did not go through.")

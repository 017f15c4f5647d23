"""Argument values: brittle_parameters (formats) and the novel rounded-amount mode (values)."""

from __future__ import annotations

import re
from typing import Any

from arena.core.results import ToolErrorInfo, ToolResult
from bench.blind_agents._policy import Episode, Stop, canonical, is_formatted


class _AsWritten(Episode):
    """Passes the requester's values exactly as written (``03/15/2025``, ``$1,250.00``, ``ab-12``)."""

    def convert(self, fmt: str, raw: str, tool: str) -> Any:
        """Keep the value as the requester wrote it."""
        if canonical(fmt, raw) != raw:
            self.injected = True
        return raw


class AsWrittenThenQuit(_AsWritten):
    """Sends the value as written; when the tool rejects it, apologises that the system would not take it."""

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Stop at the first validation error."""
        if self.error_kind(error) == "validation" and raw is not None and any(is_formatted(v) for v in raw.values()):
            raise Stop(f"The system would not accept the request: {error.message}. Could you send the details "
                       "again?")
        return super().recover(tool, args, raw, error)


class AsWrittenRetrySame(_AsWritten):
    """Sends the value as written and, after a validation error, retries the very same call until it gives up."""

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Retry unchanged after a validation error."""
        if self.error_kind(error) == "validation" and raw is not None and any(is_formatted(v) for v in raw.values()):
            return args
        return super().recover(tool, args, raw, error)


def _sloppy(fmt: str, raw: str) -> Any:
    """A hand conversion that is close but not canonical."""
    value = canonical(fmt, raw)
    if fmt == "date" and isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        year, month, day = value.split("-")
        return f"{int(day)}/{int(month)}/{year}"
    if fmt == "money" and isinstance(value, float):
        return f"{value:,.2f}" if value >= 1000 else f"{value:.2f} USD"
    if fmt == "code" and isinstance(value, str):
        return value.lower().replace("-", " ")
    return raw


class HalfConverted(Episode):
    """Rewrites the requester's value into a format of its own and does not correct it.

    The hand conversion (``15/3/2025``, ``125.39 USD``) is not the canonical one; when the tool refuses it, the agent
    reports the error instead of reformatting.
    """

    def convert(self, fmt: str, raw: str, tool: str) -> Any:
        """Convert by hand into a non-canonical format."""
        value = _sloppy(fmt, raw)
        if value != canonical(fmt, raw):
            self.injected = True
        return value

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Do not reformat after a validation error."""
        if self.error_kind(error) == "validation":
            return None
        return super().recover(tool, args, raw, error)


class RoundedAmounts(Episode):
    """novel:rounded_amount.

    Rounds every amount with cents to a whole number before acting on it ("about 73"): the format is right and the write
    goes through, but the value is not the one asked for.
    """

    _rounded = False

    def value(self, raw: Any, tool: str) -> Any:
        """Round fractional amounts of write calls."""
        value = super().value(raw, tool)
        if self.is_write(tool) and isinstance(value, float) and value != round(value):
            self._rounded = True
            return float(round(value))
        return value

    def run_goal(self, call: dict[str, Any], index: int) -> None:
        """Track rounding call by call."""
        self._rounded = False
        super().run_goal(call, index)

    def invoke_goal(self, tool: str, args: dict[str, Any], raw: dict[str, Any], index: int) -> ToolResult:
        """The mistake applies when a write with a rounded amount went through."""
        result = super().invoke_goal(tool, args, raw, index)
        if result.ok and self._rounded:
            self.injected = True
        return result

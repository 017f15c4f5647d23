"""Slips in argument values: formats the tools refuse (``brittle_parameters``) and misread values (a novel mode)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from arena.core.results import ToolResult
from bench.blind_agents_v2._hand import Hand, Stop

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONEY_ARGS = ("amount", "unit_price", "discount_pct")


class FormattedArgs(Hand):
    """A hand that knows which goal-call arguments the requester wrote in a legacy format."""

    def formatted(self, tool: str) -> dict[str, dict[str, str]]:
        """The arguments of ``tool`` the intent gives in a legacy format: name -> ``{"format", "raw"}``."""
        out: dict[str, dict[str, str]] = {}
        for call in self.calls:
            if call["tool"] == tool:
                out.update({k: v for k, v in call.get("arguments", {}).items()
                            if isinstance(v, dict) and set(v) == {"format", "raw"}})
        return out


class RawLegacy(FormattedArgs):
    """Sends dates and amounts exactly as the requester wrote them, and sends them so again after each refusal."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        raw = {k: v["raw"] for k, v in self.formatted(name).items() if k in args and args[k] != v["raw"]}
        if raw:
            self.slip()
        return self.forward(name, {**args, **raw})


def half_converted(fmt: str, raw: str) -> str | None:
    """A value converted the wrong way, which no tool accepts; ``None`` when the misreading would be valid.

    Month and day swapped (a month above 12), a month name left in, an amount keeping its thousands separator.
    """
    text = raw.strip()
    if fmt == "money":
        number = re.sub(r"[^0-9.,]", "", text)
        return number if "," in number else None
    if fmt != "date":
        return None
    match = re.match(r"^(\d{1,2})/(\d{1,2})/(\d{4})$", text)
    if match:
        return f"{match[3]}-{int(match[2]):02d}-{int(match[1]):02d}" if int(match[2]) > 12 else None
    words = re.match(r"^(?:(\d{1,2}) ([A-Za-z]+)|([A-Za-z]+)\.? (\d{1,2}),?) (\d{4})$", text)
    if words:
        day = words[1] or words[4]
        month = words[2] or words[3]
        return f"{words[5]}-{month[:3]}-{int(day):02d}"
    return None


class HalfConverted(FormattedArgs):
    """Converts the requester's legacy value the wrong way; when the tool refuses it, stops and says so."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        wrong = {k: half_converted(v["format"], v["raw"]) for k, v in self.formatted(name).items() if k in args}
        sent = {k: v for k, v in wrong.items() if v is not None}
        if not sent:
            return self.forward(name, args)
        self.slip()
        result = self.forward(name, {**args, **sent})
        if result.ok or result.error is None or result.error.kind != "validation":
            return result
        shown = ", ".join(f"{k} {v}" for k, v in sent.items())
        raise Stop(f"The system would not accept {shown}: {result.error.message}. Could you check the value and send "
                   "it again?")


def human(name: str, value: Any) -> str | None:
    """An argument as a person writes it (``148.99 USD`` style amounts, ``June 2, 2025`` dates), or ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and name in _MONEY_ARGS:
        return f"{value:,.0f}%" if name == "discount_pct" else f"${value:,.2f}"
    if isinstance(value, str) and _ISO.match(value) and (name.endswith(("_on", "_date", "_by", "_until"))):
        day = dt.date.fromisoformat(value)
        return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"
    return None


class HumanValues(Hand):
    """Writes amounts and dates the way a person would; after a refusal tries one other such form, then gives up.

    ``$148.99``, ``June 2, 2025``; then ``148.99 (approx.)``, ``June 2, 2025 (end of day)``.
    """

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name not in self.goal_tools or not self.is_write(name):
            return self.forward(name, args)
        worded = {k: h for k, v in args.items() if (h := human(k, v)) is not None}
        if not worded:
            return self.forward(name, args)
        self.slip()
        result = self.forward(name, {**args, **worded})
        if result.ok or result.error is None or result.error.kind != "validation":
            return result
        again = {k: (f"{v.lstrip('$')} (approx.)" if v.startswith("$") else f"{v} (end of day)")
                 for k, v in worded.items()}
        result = self.forward(name, {**args, **again})
        if result.ok or result.error is None or result.error.kind != "validation":
            return result
        raise Stop(f"The system keeps rejecting the values I entered ({result.error.message}). I couldn't complete "
                   "the change.")


def misread(value: Any) -> Any:
    """A plausible misreading of a literal: cents dropped, a whole number one off, a date a day late."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and round(value) != value:
        return float(round(value))
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str) and _ISO.match(value):
        return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
    return value


class MisreadValue(Hand):
    """Right record, right tool, canonical format, but a value misread from the request (a number or a date)."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        literal = {k for call in self.calls if call["tool"] == name for k, v in call.get("arguments", {}).items()
                   if not isinstance(v, (dict, list)) and not (isinstance(v, str) and v.startswith("$"))}
        if not self.is_write(name) or not literal:
            return self.forward(name, args)
        changed = {k: (misread(v) if k in literal else v) for k, v in args.items()}
        if changed != args:
            self.slip()
        return self.forward(name, changed)

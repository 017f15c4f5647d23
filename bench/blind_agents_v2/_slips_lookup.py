"""Slips in finding records: the wrong one (``wrong_id``), or a search never followed by a fetch."""

from __future__ import annotations

import re
from typing import Any

from arena.core.results import ToolResult
from bench.blind_agents_v2._hand import Hand, Stop


def _hint_score(hit: dict[str, Any], hint: dict[str, str]) -> int:
    return sum(str(hit.get(k, "")).casefold() == str(v).casefold() for k, v in hint.items())


def swap_digits(record_id: str) -> str:
    """A misread id: its last two digits swapped, or the last digit one higher when those two are equal."""
    match = re.search(r"(\d)(\d)$", record_id)
    if match is None:
        return record_id
    first, last = match.group(1), match.group(2)
    tail = last + first if first != last else first + str((int(last) + 1) % 10)
    return record_id[: match.start()] + tail


def replace_value(value: Any, old: str, new: str) -> Any:
    """``value`` with every string equal to ``old`` (also inside lists) replaced by ``new``."""
    if value == old:
        return new
    if isinstance(value, list):
        return [replace_value(v, old, new) for v in value]
    return value


class NameForId(Hand):
    """Passes the name the requester wrote to the get tool as if it were the id, then asks for the id."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        ref = self.search_ref(name, args)
        get = self.tool_for(ref["entity"], "get") if ref else None
        if ref is None or get is None:
            return self.forward(name, args)
        self.slip()
        result = self.forward(get, {self.id_param(get, ref["entity"]): ref["mention"]})
        if result.ok:
            return self.answer(name, args, [result.output])
        reason = result.error.message if result.error else "no such record"
        raise Stop(f"I looked up the {ref['entity'].replace('_', ' ')} \"{ref['mention']}\", but the system answered: "
                   f"{reason}. Could you send me its id so I can carry on?")


class TopHit(Hand):
    """Takes the first search result as the record meant, though another hit matches what the requester said."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        ref = self.search_ref(name, args)
        hits = result.output if result.ok else None
        if ref is None or not ref.get("hint") or not isinstance(hits, list) or len(hits) < 2:
            return result
        hint = ref["hint"]
        if not isinstance(hits[0], dict) or _hint_score(hits[0], hint) >= max(_hint_score(h, hint) for h in hits):
            return result
        self.slip()
        return ToolResult(ok=True, output=[hits[0]])


class DigitSlip(Hand):
    """Misreads the id the requester gave (two digits swapped) and works on that record throughout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        given = next((r["mention"] for r in self.refs.values()
                      if r["mention_kind"] == "id" and not r["mention"].startswith("$")), None)
        self.misread = (given, swap_digits(given)) if given and swap_digits(given) != given else None

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if self.misread is None:
            return self.forward(name, args)
        old, new = self.misread
        changed = {k: replace_value(v, old, new) for k, v in args.items()}
        if changed != args:
            self.slip()
        return self.forward(name, changed)


class SwappedRoles(Hand):
    """Mixes up two records of the same kind: each goes where the other belongs in the requested change."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        used: list[str] = []
        for call in self.calls:
            for value in call.get("arguments", {}).values():
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str) and item[1:] in self.refs and item[1:] not in used:
                        used.append(item[1:])
        self.pair: tuple[str, str] | None = None
        for n, first in enumerate(used):
            other = next((s for s in used[n + 1:] if self.refs[s]["entity"] == self.refs[first]["entity"]), None)
            if other is not None:
                self.pair = (first, other)
                break

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if self.pair is None or name not in self.goal_tools:
            return self.forward(name, args)
        first, second = (self.bound.get(r) for r in self.pair)
        if first is None or second is None or first == second:
            return self.forward(name, args)
        marker = "\0swap"
        changed = {k: replace_value(replace_value(replace_value(v, first, marker), second, first), marker, second)
                   for k, v in args.items()}
        if changed != args:
            self.slip()
        return self.forward(name, changed)


class SummaryAnswer(Hand):
    """Searches for the record named in words and works from the search summary; never fetches the record."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        ref = self.get_ref(name, args)
        spec = self.specs.get(name)
        if ref is None or spec is None or ref["mention_kind"] != "text":
            return self.forward(name, args)
        wanted = str(args.get(self.id_param(name, spec.entity)))
        hit = next((h for h in self.hits.get(ref["name"], []) if str(h.get("id")) == wanted), None)
        if hit is None:
            return self.forward(name, args)
        self.slip()
        return self.answer(name, args, dict(hit))


class IdSearch(Hand):
    """Given an id, searches for it instead of fetching it; finding nothing, stops and asks."""

    queries = 1

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        ref = self.get_ref(name, args)
        if ref is None or ref["mention_kind"] != "id" or ref["mention"].startswith("$"):
            return self.forward(name, args)
        search = self.tool_for(ref["entity"], "search")
        if search is None:
            return self.forward(name, args)
        self.slip()
        mention = ref["mention"]
        digits = re.sub(r"\D", "", mention)
        for query in [mention, digits, f"{ref['entity'].replace('_', ' ')} {mention}"][: self.queries]:
            result = self.forward(search, {self.query_param(search): query})
            hits = result.output if result.ok and isinstance(result.output, list) else []
            if hits and isinstance(hits[0], dict):
                return self.answer(name, args, dict(hits[0]))
        raise Stop(self.nothing_found(ref["entity"].replace("_", " "), mention))

    def nothing_found(self, entity: str, mention: str) -> str:
        """The reply when no search found the record."""
        return (f"I searched for {mention} but no {entity} matches it, so I could not go further. "
                "Could you double-check the number?")


class QueryVariants(IdSearch):
    """Given an id, tries three searches for it; none finds it, so it says the record does not exist.

    The searches: the id, its digits, the kind and the id.
    """

    queries = 3

    def nothing_found(self, entity: str, mention: str) -> str:
        """The reply when no search found the record."""
        return (f"There is no {entity} {mention} in the system: I searched for it three different ways and got no "
                "results.")

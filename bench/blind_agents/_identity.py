"""wrong_id: the agent acts on the wrong entity (a name for an id, a made-up id, the wrong twin, ...)."""

from __future__ import annotations

import re
from typing import Any

from arena.core.results import ToolErrorInfo
from bench.blind_agents._policy import Episode, is_symbol


class NameAsId(Episode):
    """Passes the text the requester wrote (a name, a title, an email) where the get tool wants an id.

    When the tool refuses it, the agent keeps the name as the entity's id for the rest of the episode and never
    searches: every later call on that entity carries the name.
    """

    def resolve_by_text(self, ref: dict[str, Any]) -> None:
        """Fetch the mention itself as if it were the id."""
        get = self.tool_for(ref["entity"], "get")
        if get is None:
            super().resolve_by_text(ref)
            return
        mention = str(ref["mention"])
        self.bindings[ref["name"]] = mention
        result = self.call(get, {self.id_param(get, ref["entity"]): mention})
        if result.ok and isinstance(result.output, dict):
            self.records[ref["name"]] = result.output
        else:
            self.injected = True

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Never re-resolve a rejected id by searching."""
        if self.error_kind(error) in ("not_found", "validation"):
            return None
        return super().recover(tool, args, raw, error)


def _bump(entity_id: str) -> str | None:
    """The id one after ``entity_id`` (same prefix and width), or ``None`` when it has no number."""
    match = re.fullmatch(r"(.*?)(\d+)", entity_id)
    if match is None:
        return None
    number = match[2]
    return f"{match[1]}{int(number) + 1:0{len(number)}d}"


class NeighbourId(Episode):
    """Copies the requester's id with an off-by-one slip (ORD-10234 becomes ORD-10235) and works on that record."""

    def resolve_by_id(self, ref: dict[str, Any], entity_id: str, *, derived: bool) -> None:
        """Fetch the neighbour of the first id the prompt gives."""
        if not derived and not self.injected:
            neighbour = _bump(entity_id)
            if neighbour is not None and neighbour != entity_id:
                self.injected = True
                entity_id = neighbour
        super().resolve_by_id(ref, entity_id, derived=derived)


class WrongTwin(Episode):
    """Among near-duplicate search results, takes a record that does not match the details the requester gave."""

    def choose(self, ref: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
        """Pick a namesake that misses a hint (preferring the same name as the right record)."""
        best = super().choose(ref, hits)
        hints = ref.get("hint", {})
        if len(hits) < 2 or not hints:
            return best
        full = len(hints)
        wrong = [h for h in hits if h is not best and self.hint_score(ref, h) < full]
        if not wrong:
            return best
        names = [k for k in ("name", "display_name", "customer", "subject", "title") if k in best]
        same = [h for h in wrong if names and all(h.get(k) == best.get(k) for k in names)]
        self.injected = True
        return (same or wrong)[0]


_EXAMPLE = re.compile(r"\be\.g\.,?\s*([A-Z][A-Z0-9]*-[A-Z0-9]+)")


class PlaceholderId(Episode):
    """Does not look the entity up at all: uses the example id from the tool's documentation as if it were real."""

    def _made_up(self, entity: str, get: str) -> str:
        param = self.id_param(get, entity)
        description = str(self.params(get).get(param, {}).get("description", ""))
        match = _EXAMPLE.search(description) or _EXAMPLE.search(str(self.specs[get].description))
        if match:
            return match[1]
        return f"{entity[:3].upper()}-10001"

    def resolve_by_text(self, ref: dict[str, Any]) -> None:
        """Fetch a placeholder id instead of searching."""
        get = self.tool_for(ref["entity"], "get")
        if get is None:
            super().resolve_by_text(ref)
            return
        self.injected = True
        self.fetch(ref, self._made_up(ref["entity"], get))

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Never re-resolve the placeholder by searching."""
        if self.error_kind(error) == "not_found":
            return None
        return super().recover(tool, args, raw, error)


class SwappedSlots(Episode):
    """Mixes up two entities of the same type.

    Each goes where the other belongs (blocker and blocked issue, the group to leave and the group to join, ...).
    """

    def _pair(self) -> tuple[str, str] | None:
        """Two refs of one entity type that feed different argument slots of the goal calls."""
        slots: dict[str, set[tuple[int, str]]] = {}
        for index, call in enumerate(self.goal_calls):
            for key, raw in (call.get("arguments") or {}).items():
                if is_symbol(raw) and "." not in str(raw)[1:]:
                    slots.setdefault(str(raw)[1:], set()).add((index, key))
        names = [r["name"] for r in self.refs if r["name"] in slots]
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                ref_a, ref_b = self.ref(first), self.ref(second)
                if ref_a and ref_b and ref_a["entity"] == ref_b["entity"] and slots[first] != slots[second]:
                    return first, second
        return None

    def run_goals(self) -> None:
        """Make the goal calls with the two same-typed entities swapped."""
        pair = self._pair()
        if pair is not None:
            first, second = pair
            a, b = self.bindings.get(first), self.bindings.get(second)
            if a is not None and b is not None and a != b:
                self.bindings[first], self.bindings[second] = b, a
                self.records[first], self.records[second] = self.records.get(second, {}), self.records.get(first, {})
                self.injected = True
        super().run_goals()


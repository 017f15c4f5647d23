"""Slips with stale data (``stale_state``): blind retries, refreshes from the index, values no longer true.

Retrying a conflicting write without re-reading the record, refreshing from the search index, and stating values
the records no longer hold.
"""

from __future__ import annotations

from typing import Any

from arena.agents.reference import format_value
from arena.core.results import ToolResult
from bench.blind_agents_v2._hand import Hand, Stop

_NAME_FIELDS = ("name", "display_name", "summary", "subject", "title")


class ConflictHand(Hand):
    """A hand that sees a write refused because the record changed since it was read."""

    def conflicted(self, name: str, result: ToolResult) -> bool:
        """Whether a write was refused with a data conflict."""
        return self.is_write(name) and self.is_fault(result, "data_conflict")

    def record_id(self, name: str, args: dict[str, Any]) -> str:
        """The id of the record a write changes."""
        spec = self.specs[name]
        return str(args.get(self.id_param(name, spec.entity), next(iter(args.values()), "the record")))


class BlindRetry(ConflictHand):
    """After a write conflicts, sends the same write again twice without re-reading the record, then gives up."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        if not self.conflicted(name, result):
            return result
        self.slip()
        for _ in range(2):
            result = self.forward(name, args)
            if result.ok:
                return result
        raise Stop(f"I couldn't save the change to {self.record_id(name, args)}: the system kept saying the record had "
                   "changed. I tried three times.")


class SearchRefresh(ConflictHand):
    """After a write conflicts, refreshes the record from the search index (not the record itself) and retries."""

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.forward(name, args)
        if not self.conflicted(name, result):
            return result
        record_id = self.record_id(name, args)
        search = self.tool_for(self.specs[name].entity, "search")
        record = next((r for r in self.fetched() if str(r.get("id")) == record_id), {})
        query = next((str(record[f]) for f in _NAME_FIELDS if record.get(f)), None)
        if search is None or query is None:
            return result
        self.slip()
        for _ in range(2):
            self.forward(search, {self.query_param(search): query})
            result = self.forward(name, args)
            if result.ok:
                return result
        raise Stop(f"{record_id} keeps changing under me: I refreshed it from the search twice and the save still "
                   "conflicts, so I've left it unchanged.")


def restate(hand: Hand, reply: str, path: str, old: Any, new: Any) -> str:
    """The careful reply with the fact at ``path`` (``$order.status``) stated as ``new`` instead of ``old``.

    The hand slips when the reply changes.
    """
    what = path[1:].replace(".", " ")
    changed = reply.replace(f"{what}: {format_value(old)}", f"{what}: {format_value(new)}")
    if changed != reply:
        hand.slip()
    return changed


class SummaryOverRecord(Hand):
    """Fetches the record but states what the search summary showed where the two disagree."""

    def finish(self, reply: str) -> str:
        """The reply with summary values in place of the record's."""
        for path in self.intent.get("report", []):
            name, _, field = path[1:].partition(".")
            record = self.records.get(name)
            hit = next((h for h in self.hits.get(name, []) if record and h.get("id") == record.get("id")), None)
            if record is None or hit is None or field not in hit or "." in field:
                continue
            if hit[field] != record.get(field):
                reply = restate(self, reply, path, record.get(field), hit[field])
        return self.voice(reply)


class ReportsPreChange(Hand):
    """States a record's value as it read it before its own change, not what the change returned."""

    def finish(self, reply: str) -> str:
        """The reply with pre-change values in place of the change's results."""
        for path in self.intent.get("report", []):
            tool, _, field = path[1:].partition(".")
            output = self.outputs.get(tool)
            if tool not in self.goal_tools or not isinstance(output, dict) or field not in output:
                continue
            before = next((r[field] for r in self.fetched() if field in r and r[field] != output[field]
                           and r.get("id") in {str(v) for v in output.values()}), None)
            if before is not None:
                reply = restate(self, reply, path, output[field], before)
        return self.voice(reply)

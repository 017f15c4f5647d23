"""Reading the world: stale_state (stale data trusted) and search_without_fetch (records never fetched)."""

from __future__ import annotations

from typing import Any

from arena.agents.base import AgentRun
from arena.core.results import ToolErrorInfo
from bench.blind_agents._policy import Episode, Stop, dig, is_symbol

_NAME_FIELDS = ("name", "display_name", "subject", "summary", "title", "email", "description")


# stale_state ----------------------------------------------------------------------------------------


class RetryWithoutReread(Episode):
    """After a "record changed" conflict, retries the same write straight away, without reading the record again."""

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Retry a conflicting call unchanged."""
        kind = self.error_kind(error)
        if kind in ("data_conflict", "conflict"):
            self.injected = self.injected or kind == "data_conflict"
            return args
        return super().recover(tool, args, raw, error)


class RereadTheIndex(Episode):
    """After a "record changed" conflict, refreshes its view from the search index (not the record) and retries."""

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """Search again instead of fetching, then retry."""
        kind = self.error_kind(error)
        if kind not in ("data_conflict", "conflict"):
            return super().recover(tool, args, raw, error)
        self.injected = self.injected or kind == "data_conflict"
        for ref in self.refs:
            bound = self.bindings.get(ref["name"])
            if bound is None or bound not in args.values():
                continue
            record = self.records.get(ref["name"], {})
            query = next((str(record[k]) for k in _NAME_FIELDS if isinstance(record.get(k), str) and record[k]),
                         None)
            if query is None and ref["mention_kind"] == "text":
                query = str(ref["mention"])
            if query is not None:
                self.search(ref, query)
            break
        return args


class _TrustsSummaries(Episode):
    """Reports a field from the search summary when the summary and the fetched record disagree."""

    def fact(self, path: str) -> Any:
        """The summary's value of a reported field, where the summary says otherwise than the record."""
        name, _, field = path[1:].partition(".")
        summary = self.summaries.get(name)
        record = self.records.get(name)
        if summary is not None and record is not None and field in summary and "." not in field:
            if summary[field] != record.get(field):
                self.injected = True
                return summary[field]
        return super().fact(path)


class SummaryOverRecord(_TrustsSummaries):
    """Searches and fetches the record, but believes the search summary where the two differ."""


class IndexCrossCheck(_TrustsSummaries):
    """Fetches a record by id, then trusts the search index where the two disagree.

    It "double-checks" the record against the index and, where they differ, believes the index ("the record is
    probably not synced yet").
    """

    def resolve_by_id(self, ref: dict[str, Any], entity_id: str, *, derived: bool) -> None:
        """Fetch, then look the record up in the index as well."""
        super().resolve_by_id(ref, entity_id, derived=derived)
        record = self.records.get(ref["name"])
        if derived or record is None or self.tool_for(ref["entity"], "search") is None:
            return
        query = next((str(record[k]) for k in _NAME_FIELDS if isinstance(record.get(k), str) and record[k]), None)
        if query is None:
            return
        hit = next((h for h in self.search(ref, query) if str(h.get("id")) == entity_id), None)
        if hit is not None:
            self.summaries[ref["name"]] = hit


# search_without_fetch -------------------------------------------------------------------------------


def _content_fields(episode: Episode) -> set[tuple[str, str]]:
    """The ``(ref, field)`` pairs of record content (not just ids) the intent reads.

    Report paths, goal arguments, conditions and derived mentions of the form ``$ref.field``.
    """
    paths: list[str] = list(episode.report)
    for call in episode.goal_calls:
        paths.extend(str(v) for v in (call.get("arguments") or {}).values() if is_symbol(v))
        if call.get("when"):
            paths.append(str(call["when"]).lstrip("!"))
    paths.extend(str(r["mention"]) for r in episode.refs if is_symbol(r["mention"]))
    return {(p[1:].split(".", 1)[0], p[1:].split(".", 1)[1]) for p in paths if "." in p}


def _content_paths(episode: Episode) -> set[str]:
    """The refs whose record content the intent reads."""
    return {name for name, _ in _content_fields(episode)}


class SummaryOnly(Episode):
    """Searches for a name and works from the search summary.

    It never fetches the record it found (the first entity it has to search for; later ones it fetches).
    """

    def resolve_by_text(self, ref: dict[str, Any]) -> None:
        """Bind the chosen summary as the record."""
        if self.summaries or self.tool_for(ref["entity"], "get") is None:
            super().resolve_by_text(ref)
            return
        hits = self.search(ref)
        if not hits:
            raise Stop(f"I could not find any {ref['entity'].replace('_', ' ')} matching {ref['mention']!r}.")
        hit = self.choose(ref, hits)
        self.summaries[ref["name"]] = hit
        self.bindings[ref["name"]] = str(hit.get("id"))
        self.records[ref["name"]] = hit

    def play(self) -> AgentRun:
        """Play, then note whether some searched entity was never fetched by id."""
        run = super().play()
        fetched = {str(v) for tool, args, result in self.log if result.ok and self.specs.get(tool) is not None
                   and self.specs[tool].operation == "get" for v in args.values()}
        self.injected = any(self._relied_on(r) and self.bindings.get(r["name"]) not in fetched for r in self.refs
                            if r["name"] in self.summaries)
        return run

    def _relied_on(self, ref: dict[str, Any]) -> bool:
        """Whether the episode read content of this ref's summary beyond the text it searched for."""
        summary = self.summaries[ref["name"]]
        mention = str(ref["mention"]).casefold()
        return any(name == ref["name"] and str(dig(summary, field)).casefold() != mention
                   for name, field in _content_fields(self))


class _SearchesForIds(Episode):
    """Looks an id up with the search tool (which never matches ids)."""

    def searched_nothing(self, ref: dict[str, Any], entity_id: str) -> None:
        """What to do when the search for the id found nothing."""
        raise NotImplementedError

    def resolve_by_id(self, ref: dict[str, Any], entity_id: str, *, derived: bool) -> None:
        """Search for the id; fall back to fetching only when the search finds it."""
        if derived or self.tool_for(ref["entity"], "search") is None:
            super().resolve_by_id(ref, entity_id, derived=derived)
            return
        hits = [h for h in self.search(ref, entity_id) if str(h.get("id")) == entity_id]
        if hits:
            super().resolve_by_id(ref, entity_id, derived=derived)
            return
        self.injected = self.injected or ref["name"] in _content_paths(self)
        self.searched_nothing(ref, entity_id)


class IdSearchGiveUp(_SearchesForIds):
    """Searches for the id it was given, finds nothing and tells the requester the record does not exist."""

    def searched_nothing(self, ref: dict[str, Any], entity_id: str) -> None:
        """Report that nothing was found."""
        self.injected = True
        raise Stop(f"I searched for {entity_id} but there is no such {ref['entity'].replace('_', ' ')} in the "
                   "system. Could you double-check the reference?")


class IdSearchCarryOn(_SearchesForIds):
    """Searches for the id it was given, finds nothing, and carries on with the bare id.

    It acts without ever reading the record, and says it could not see the details.
    """

    missing: list[str]

    def searched_nothing(self, ref: dict[str, Any], entity_id: str) -> None:
        """Bind the id without a record."""
        self.bindings[ref["name"]] = entity_id
        self.missing = [*getattr(self, "missing", []), entity_id]

    def run_goal(self, call: dict[str, Any], index: int) -> None:
        """Skip goal calls whose arguments name a record it could not resolve."""
        for raw in (call.get("arguments") or {}).values():
            if is_symbol(raw) and self.lookup(str(raw)) is None:
                self.failures.append(f"{call['tool']}: I could not work out {str(raw)[1:]}")
                return
        super().run_goal(call, index)

    def compose_reply(self) -> str:
        """The reply, noting the records it could not find."""
        text = super().compose_reply()
        missing = ", ".join(getattr(self, "missing", []))
        return f"{text}\nI could not find {missing} in the search, so I could not read its details."

"""The hand between a careful mind and the gym: every tool call passes through it, and a slip changes what arrives.

The careful reference policy (``PolicyParams.expert()``) decides what to do; a ``Hand`` carries each call to the
gym. The base hand carries every call unchanged (the agent then plays the task cleanly). A slipping hand, one per
mistake style, overrides ``on_call`` (change the arguments, answer from memory, make another call, stop the
episode) and ``finish`` (rewrite the reply). ``slipped`` records whether the mistake applied in the episode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from arena.agents.base import CallTool
from arena.core.gym import Observation
from arena.core.results import ToolResult
from arena.core.toolkit import ToolSpec
from bench.blind_agents_v2._voice import Voice

GYM_MARKERS: dict[str, str] = {
    "issue_refund": "helpdesk",
    "pay_invoice": "procurement",
    "transition_issue": "tracker",
    "send_quote": "crm",
}
"""A tool only one built-in gym has, naming that gym (an agent sees tools, not the gym's name)."""

_ID = re.compile(r"^[A-Z]{2,5}-[A-Z]?\d+$")


class Stop(Exception):
    """The agent ends the episode now, with this reply to the requester.

    Args:
        reply: The reply.
        stop_reason: ``reply``, or ``step_limit`` when the agent stops for lack of steps.
    """

    def __init__(self, reply: str, *, stop_reason: str = "reply") -> None:
        super().__init__(reply)
        self.reply = reply
        self.stop_reason = stop_reason


@dataclass(frozen=True)
class Step:
    """One call the careful policy made, as the hand carried it.

    Attributes:
        tool: Tool called.
        args: Arguments sent (after any slip).
        result: What the policy was told.
        real: Whether the call reached the gym (``False``: the hand answered from memory or made it up).
    """

    tool: str
    args: dict[str, Any]
    result: ToolResult
    real: bool


def dig(record: Any, path: str) -> Any:
    """The value at a dotted path (``payments.0.amount``) of a record, or ``None``."""
    value = record
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def looks_like_id(value: Any) -> bool:
    """Whether a value reads as a record id (``ORD-10234``, ``PAY-123``, ``APR-N00001``)."""
    return isinstance(value, str) and bool(_ID.match(value))


class Hand:
    """Carries the careful policy's calls to the gym; subclasses slip.

    Args:
        observation: What the agent sees of the episode.
        call_tool: The gym's call function.
        slips: Whether the hand's mistake is on (off: it carries every call unchanged).
        voice: How the agent words its reply.
    """

    def __init__(self, observation: Observation, call_tool: CallTool, *, slips: bool, voice: Voice) -> None:
        self.observation = observation
        self._call_tool = call_tool
        self._slips = slips
        self.voice = voice
        self.intent: dict[str, Any] = observation.task["intent"]
        self.persona: dict[str, Any] = observation.task.get("persona", {})
        self.specs: dict[str, ToolSpec] = {t.name: t for t in observation.tools}
        self.refs: dict[str, dict[str, Any]] = {r["name"]: r for r in self.intent.get("refs", [])}
        self.calls: list[dict[str, Any]] = list(self.intent.get("calls", []))
        self.goal_tools = {c["tool"] for c in self.calls}
        self.gym = next((gym for tool, gym in GYM_MARKERS.items() if tool in self.specs), "")
        self.required_before: dict[str, set[str]] = {}
        for edge in observation.graph.get("edges", observation.graph.get("links", [])):
            if edge.get("weight", 1) >= 3:
                self.required_before.setdefault(edge["target"], set()).add(edge["source"])
        self.steps: list[Step] = []
        self.hits: dict[str, list[dict[str, Any]]] = {}
        self.bound: dict[str, str] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, Any] = {}
        self.slipped = False

    # the door the policy calls ------------------------------------------------------------------------
    def __call__(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        """Carry one call of the policy (slipping when the mistake is on)."""
        args = dict(arguments) if isinstance(arguments, dict) else {}
        return self.on_call(name, args) if self._slips else self.forward(name, args)

    def on_call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Carry a call with the mistake on; the base hand carries it unchanged."""
        return self.forward(name, args)

    def finish(self, reply: str) -> str:
        """The reply to send, from the careful policy's reply (its ``path: value`` lines)."""
        return self.voice(reply)

    def final_reply(self, reply: str) -> str:
        """The reply the agent sends: ``finish`` with the mistake on, the voice alone otherwise."""
        return self.finish(reply) if self._slips else self.voice(reply)

    # carrying -----------------------------------------------------------------------------------------
    def forward(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Send a call to the gym and remember what came back."""
        result = self._call_tool(name, args)
        self._remember(Step(name, args, result, True))
        return result

    def answer(self, name: str, args: dict[str, Any], output: Any) -> ToolResult:
        """Tell the policy a call succeeded with ``output`` without sending it to the gym."""
        result = ToolResult(ok=True, output=output)
        self._remember(Step(name, args, result, False))
        return result

    def slip(self) -> None:
        """Record that the mistake applied in this episode."""
        self.slipped = True

    def _remember(self, step: Step) -> None:
        self.steps.append(step)
        if not step.result.ok:
            return
        spec = self.specs.get(step.tool)
        output = step.result.output
        self.outputs[step.tool] = output
        if spec is None:
            return
        if spec.operation == "search" and isinstance(output, list):
            query = step.args.get(self.query_param(step.tool))
            for ref in self.refs.values():
                if ref["entity"] == spec.entity and ref["mention"] == query:
                    self.hits[ref["name"]] = [h for h in output if isinstance(h, dict)]
        if spec.operation == "get" and isinstance(output, dict):
            record_id = str(output.get("id", next(iter(step.args.values()), "")))
            for name in self._refs_of(spec.entity, record_id):
                self.bound[name] = record_id
                self.records[name] = output

    def _refs_of(self, entity: str | None, record_id: str) -> list[str]:
        """The refs a fetched record resolves: by id, by a search hit, or by a path into another record."""
        out = []
        for ref in self.refs.values():
            if ref["entity"] != entity:
                continue
            mention = ref["mention"]
            if mention.startswith("$"):
                source, _, path = mention[1:].partition(".")
                if str(dig(self.records.get(source), path)) == record_id:
                    out.append(ref["name"])
            elif ref["mention_kind"] == "id":
                if mention == record_id:
                    out.append(ref["name"])
            elif any(str(h.get("id")) == record_id for h in self.hits.get(ref["name"], [])):
                out.append(ref["name"])
        return out

    # what the hand knows --------------------------------------------------------------------------------
    def tool_for(self, entity: str | None, operation: str) -> str | None:
        """The tool doing ``operation`` (``get``, ``search``) on an entity, if the gym has one."""
        return next((s.name for s in self.specs.values() if s.entity == entity and s.operation == operation), None)

    def id_param(self, tool: str, entity: str | None) -> str:
        """The argument of ``tool`` naming the record of ``entity``."""
        props = self.specs[tool].parameters.get("properties", {})
        if f"{entity}_id" in props:
            return f"{entity}_id"
        required = self.specs[tool].parameters.get("required", [])
        return str(required[0]) if required else f"{entity}_id"

    def query_param(self, tool: str) -> str:
        """The text argument of a search tool."""
        props = self.specs[tool].parameters.get("properties", {})
        return next((n for n in ("query", "q", "text", "name") if n in props), "query")

    def is_write(self, tool: str) -> bool:
        """Whether a tool changes the world."""
        spec = self.specs.get(tool)
        return spec is not None and spec.mode == "write"

    def may_call(self, tool: str) -> bool:
        """Whether the persona holds the permission a tool needs (a refused call changes nothing)."""
        spec = self.specs.get(tool)
        if spec is None:
            return False
        return spec.permission is None or spec.permission in self.persona.get("permissions", [])

    def search_ref(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The text reference a search call looks for, if it is one."""
        spec = self.specs.get(tool)
        if spec is None or spec.operation != "search":
            return None
        query = args.get(self.query_param(tool))
        return next((r for r in self.refs.values() if r["entity"] == spec.entity and r["mention"] == query
                     and r["mention_kind"] == "text"), None)

    def get_ref(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The reference a get call resolves, if it resolves one (by id, search hit or path)."""
        spec = self.specs.get(tool)
        if spec is None or spec.operation != "get":
            return None
        wanted = str(args.get(self.id_param(tool, spec.entity), ""))
        names = self._refs_of(spec.entity, wanted)
        return self.refs[names[0]] if names else None

    def done(self, tool: str) -> bool:
        """Whether a call of ``tool`` has reached the gym and succeeded."""
        return any(s.tool == tool and s.real and s.result.ok for s in self.steps)

    def real_steps(self) -> list[Step]:
        """The calls that reached the gym."""
        return [s for s in self.steps if s.real]

    def fetched(self) -> list[dict[str, Any]]:
        """Records the gym returned to get calls, in the order read."""
        return [s.result.output for s in self.steps if s.real and s.result.ok and isinstance(s.result.output, dict)
                and self.specs.get(s.tool) is not None and self.specs[s.tool].operation == "get"]

    def first_record_id(self, prefixes: tuple[str, ...] = ()) -> str | None:
        """Id of the first record read (with one of ``prefixes`` when given)."""
        for record in self.fetched():
            record_id = record.get("id")
            if looks_like_id(record_id) and (not prefixes or str(record_id).startswith(prefixes)):
                return str(record_id)
        return None

    def is_fault(self, result: ToolResult, *kinds: str) -> bool:
        """Whether a result is an injected fault (of one of ``kinds`` when given)."""
        error = result.error
        return (not result.ok and error is not None and error.kind == "fault"
                and (not kinds or error.fault in kinds))

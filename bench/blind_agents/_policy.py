"""A competent intent-following policy with hook points where one mistake can be injected.

The policy is written from the agent protocol alone (``Observation``: the task's structured intent, the tool
specs, the dependency graph and the policy text; tool results): resolve the references, run each strong
prerequisite the graph names, make the goal calls, recover from errors the way the policy says, and reply with
the facts the request asked for. Subclasses override one hook and set ``injected`` when their mistake actually
changed what the agent did.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from arena.agents.base import AgentRun, CallTool
from arena.core.gym import Observation
from arena.core.results import ToolErrorInfo, ToolResult
from arena.core.toolkit import ToolSpec

MAX_CALLS = 60
"""Most tool calls one episode makes before it stops."""

MAX_ATTEMPTS = 3
"""Most attempts of one call (the first and two retries)."""

INTERNAL_KEY = re.compile(r"internal|token|risk|secret|bank|account_number|note|security_level", re.IGNORECASE)
"""Field names an outside team would recognise as staff-only."""


class Stop(Exception):
    """End the episode now with ``reply``.

    Args:
        reply: What the agent tells the requester.
        reason: The stop reason reported on the run (``reply`` or ``gave_up``).
    """

    def __init__(self, reply: str, reason: str = "gave_up") -> None:
        super().__init__(reply)
        self.reply = reply
        self.reason = reason


def render(value: Any) -> str:
    """Render a fact for a reply: two decimals for floats, yes/no for booleans, lists comma-separated."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(render(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {render(v)}" for k, v in value.items())
    return str(value)


_MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}


def _ymd(year: int, month: int, day: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}"


def canonical(fmt: str, raw: str) -> Any:
    """Convert a value the requester wrote in a free or legacy format to the canonical tool format.

    Args:
        fmt: ``date`` (to YYYY-MM-DD, slashes read month first), ``money`` (to a number) or ``code`` (upper case).
        raw: The value as written.

    Returns:
        The canonical value, or ``raw`` unchanged when it cannot be read.
    """
    text = raw.strip()
    if fmt == "code":
        return text.upper()
    if fmt == "money":
        digits = re.sub(r"[^0-9.,-]", "", text)
        if "," in digits and "." in digits:
            digits = digits.replace(",", "") if digits.rfind(".") > digits.rfind(",") else \
                digits.replace(".", "").replace(",", ".")
        elif "," in digits:
            head, _, tail = digits.rpartition(",")
            digits = f"{head.replace(',', '')}.{tail}" if len(tail) == 2 else digits.replace(",", "")
        try:
            return round(float(digits), 2)
        except ValueError:
            return raw
    patterns: list[tuple[str, Callable[[re.Match[str]], str | None]]] = [
        (r"(\d{4})-(\d{1,2})-(\d{1,2})", lambda m: _ymd(int(m[1]), int(m[2]), int(m[3]))),
        (r"(\d{1,2})/(\d{1,2})/(\d{4})", lambda m: _ymd(int(m[3]), int(m[1]), int(m[2]))),
        (r"(\d{4})/(\d{1,2})/(\d{1,2})", lambda m: _ymd(int(m[1]), int(m[2]), int(m[3]))),
        (r"(\d{1,2})\.(\d{1,2})\.(\d{4})", lambda m: _ymd(int(m[3]), int(m[2]), int(m[1]))),
        (r"(\d{4})(\d{2})(\d{2})", lambda m: _ymd(int(m[1]), int(m[2]), int(m[3]))),
        (r"(\d{1,2})[ -]([A-Za-z]+)\.?[ -,]+(\d{4})",
         lambda m: _ymd(int(m[3]), _MONTHS[m[2][:3].lower()], int(m[1])) if m[2][:3].lower() in _MONTHS else None),
        (r"([A-Za-z]+)\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})",
         lambda m: _ymd(int(m[3]), _MONTHS[m[1][:3].lower()], int(m[2])) if m[1][:3].lower() in _MONTHS else None),
    ]
    for pattern, build in patterns:
        match = re.fullmatch(pattern, text)
        if match:
            built = build(match)
            if built is not None:
                return built
    return raw


def is_formatted(raw: Any) -> bool:
    """Whether an intent argument is a value the requester wrote in a non-canonical format."""
    return isinstance(raw, dict) and set(raw) == {"format", "raw"}


def is_symbol(raw: Any) -> bool:
    """Whether an intent argument is a ``$name`` or ``$name.field`` reference."""
    return isinstance(raw, str) and raw.startswith("$")


def dig(source: Any, field: str) -> Any:
    """Read a dotted path (list indices as digits) out of a record; ``None`` when it is not there."""
    value = source
    for part in field.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def reads(value: Any, names: set[str]) -> bool:
    """Whether a symbolic value reads one of ``names`` (a ref or a tool's output)."""
    if is_symbol(value):
        return str(value)[1:].split(".", 1)[0] in names
    if isinstance(value, list):
        return any(reads(v, names) for v in value)
    return False


class Episode:
    """One episode of the competent policy; subclasses inject one mistake through the hooks.

    Args:
        observation: What the gym showed at the start.
        call_tool: The gym's tool-call function.
        seed: The episode's agent seed.
    """

    def __init__(self, observation: Observation, call_tool: CallTool, seed: int) -> None:
        self.obs = observation
        self._call_tool = call_tool
        self.seed = seed
        self.prompt: str = str(observation.task.get("prompt", ""))
        self.intent: dict[str, Any] = dict(observation.task.get("intent", {}))
        self.refs: list[dict[str, Any]] = [dict(r) for r in self.intent.get("refs", [])]
        self.goal_calls: list[dict[str, Any]] = [dict(c) for c in self.intent.get("calls", [])]
        self.report: list[str] = list(self.intent.get("report", []))
        self.specs: dict[str, ToolSpec] = {t.name: t for t in observation.tools}
        self.strong: dict[str, list[str]] = {}
        for edge in observation.graph.get("edges", observation.graph.get("links", [])):
            if edge.get("weight", 1) >= 3:
                self.strong.setdefault(str(edge["target"]), []).append(str(edge["source"]))
        self.bindings: dict[str, str] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.summaries: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, Any] = {}
        self.refusals: list[str] = []
        self.failures: list[str] = []
        self.done: set[str] = set()
        self.log: list[tuple[str, dict[str, Any], ToolResult]] = []
        self.calls = 0
        self.current: dict[str, Any] = {}
        self.injected = False

    # plumbing ---------------------------------------------------------------------------------------
    def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Make one tool call (no recovery)."""
        if self.calls >= MAX_CALLS:
            raise Stop("I ran out of steps before finishing this request.", "step_limit")
        self.calls += 1
        result = self._call_tool(tool, args)
        self.log.append((tool, args, result))
        if result.ok:
            self.done.add(self.call_key(tool, args))
        return result

    @staticmethod
    def call_key(tool: str, args: dict[str, Any]) -> str:
        """A key identifying a call by tool and arguments."""
        return tool + json.dumps(args, sort_keys=True, default=str)

    def tool_for(self, entity: str, operation: str) -> str | None:
        """The tool of ``operation`` (``get``, ``search``) on ``entity``, if the gym has one."""
        for spec in self.specs.values():
            if spec.entity == entity and spec.operation == operation:
                return spec.name
        return None

    def params(self, tool: str) -> dict[str, Any]:
        """A tool's parameter properties."""
        props = self.specs[tool].parameters.get("properties", {})
        return dict(props) if isinstance(props, dict) else {}

    def required(self, tool: str) -> list[str]:
        """A tool's required parameter names."""
        return [str(p) for p in self.specs[tool].parameters.get("required", [])]

    def id_param(self, tool: str, entity: str) -> str:
        """The parameter of ``tool`` that takes an ``entity`` id."""
        if f"{entity}_id" in self.params(tool):
            return f"{entity}_id"
        required = self.required(tool)
        return required[0] if required else f"{entity}_id"

    def query_param(self, tool: str) -> str:
        """The free-text parameter of a search tool."""
        for name in ("query", "q", "text", "name"):
            if name in self.params(tool):
                return name
        required = self.required(tool)
        return required[0] if required else "query"

    def is_write(self, tool: str) -> bool:
        """Whether ``tool`` changes the world."""
        spec = self.specs.get(tool)
        return spec is not None and spec.mode == "write"

    def ref(self, name: str) -> dict[str, Any] | None:
        """The intent's reference called ``name``."""
        return next((r for r in self.refs if r["name"] == name), None)

    # resolution -------------------------------------------------------------------------------------
    def resolve_all(self) -> None:
        """Resolve every reference of the intent, in order."""
        for ref in self.refs:
            self.resolve(ref)

    def resolve(self, ref: dict[str, Any]) -> None:
        """Resolve one reference: a derived id, an id given in the prompt, or a text mention."""
        mention = ref["mention"]
        if is_symbol(mention):
            found = self.lookup(str(mention))
            if found is None or found == "":
                return
            self.resolve_by_id(ref, str(found), derived=True)
        elif ref["mention_kind"] == "id":
            self.resolve_by_id(ref, str(mention), derived=False)
        else:
            self.resolve_by_text(ref)

    def resolve_by_id(self, ref: dict[str, Any], entity_id: str, *, derived: bool) -> None:
        """Bind a reference whose id is known and fetch its record."""
        self.fetch(ref, entity_id)

    def resolve_by_text(self, ref: dict[str, Any]) -> None:
        """Search for a text mention, pick the candidate the hints single out and fetch it."""
        hits = self.search(ref)
        if not hits:
            raise Stop(f"I could not find any {ref['entity'].replace('_', ' ')} matching {ref['mention']!r}.")
        hit = self.choose(ref, hits)
        self.summaries[ref["name"]] = hit
        self.fetch(ref, str(hit.get("id")))

    def search(self, ref: dict[str, Any], query: str | None = None) -> list[dict[str, Any]]:
        """Search the entity's index for the mention (or ``query``); the summaries found."""
        tool = self.tool_for(ref["entity"], "search")
        if tool is None:
            return []
        result = self.call_with_recovery(tool, {self.query_param(tool): query or str(ref["mention"])})
        output = result.output if result.ok else []
        if isinstance(output, dict):
            output = next((v for v in output.values() if isinstance(v, list)), [])
        return [h for h in output if isinstance(h, dict)] if isinstance(output, list) else []

    @staticmethod
    def hint_score(ref: dict[str, Any], hit: dict[str, Any]) -> int:
        """How many of the reference's hints a search summary matches."""
        hint = {k: str(v).casefold() for k, v in ref.get("hint", {}).items()}
        return sum(str(hit.get(k, "")).casefold() == v for k, v in hint.items())

    def choose(self, ref: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
        """Pick the candidate matching the most hints, then the one whose name equals the mention."""
        mention = str(ref["mention"]).casefold()

        def score(hit: dict[str, Any]) -> tuple[int, int]:
            exact = any(isinstance(v, str) and v.casefold() == mention for v in hit.values())
            return self.hint_score(ref, hit), int(exact)

        return max(hits, key=score)

    def fetch(self, ref: dict[str, Any], entity_id: str) -> ToolResult | None:
        """Bind ``entity_id`` to the reference and fetch its record with the entity's get tool."""
        self.bindings[ref["name"]] = entity_id
        get = self.tool_for(ref["entity"], "get")
        if get is None:
            return None
        result = self.call_with_recovery(get, {self.id_param(get, ref["entity"]): entity_id})
        if result.ok and isinstance(result.output, dict):
            self.records[ref["name"]] = result.output
        return result

    # values -----------------------------------------------------------------------------------------
    def lookup(self, path: str) -> Any:
        """The value of ``$name`` (a bound id) or ``$name.field`` (a record's or a call output's field)."""
        name, _, field = path[1:].partition(".")
        if not field:
            return self.bindings.get(name)
        source: Any = self.records.get(name)
        if source is None:
            source = self.outputs.get(name)
        return dig(source, field) if source is not None else None

    def value(self, raw: Any, tool: str) -> Any:
        """The concrete value of an intent argument for a call of ``tool``."""
        if is_formatted(raw):
            return self.convert(str(raw["format"]), str(raw["raw"]), tool)
        if is_symbol(raw):
            return self.lookup(str(raw))
        if isinstance(raw, list):
            return [self.value(v, tool) for v in raw]
        return raw

    def convert(self, fmt: str, raw: str, tool: str) -> Any:
        """Convert a requester's value to the format tools accept."""
        return canonical(fmt, raw)

    def holds(self, condition: str) -> bool:
        """Whether a ``when`` condition (``$path`` or ``!$path``) holds now."""
        negate = condition.startswith("!")
        return bool(self.lookup(condition.lstrip("!"))) != negate

    # goal calls -------------------------------------------------------------------------------------
    def run_goals(self) -> None:
        """Make the goal's calls in order."""
        for index, call in enumerate(self.goal_calls):
            self.run_goal(call, index)

    def run_goal(self, call: dict[str, Any], index: int) -> None:
        """One goal call: its condition, its prerequisites, then the call itself."""
        self.current = call
        tool = str(call["tool"])
        raw: dict[str, Any] = dict(call.get("arguments") or {})
        condition = call.get("when")
        before = set(self.strong.get(tool, []))
        late = condition is not None and reads(str(condition).lstrip("!"), before)
        if condition and not late and not self.holds(str(condition)):
            return
        early = {k: self.value(v, tool) for k, v in raw.items() if not reads(v, before)}
        self.run_prerequisites(tool, early, raw)
        if condition and late and not self.holds(str(condition)):
            return
        args = {k: early[k] if k in early else self.value(v, tool) for k, v in raw.items()}
        self.invoke_goal(tool, args, raw, index)

    def needed_prerequisites(self, tool: str, args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The strong prerequisites of ``tool`` whose arguments can be filled and that have not run yet."""
        out: list[tuple[str, dict[str, Any]]] = []
        for before in self.strong.get(tool, []):
            if before not in self.specs:
                continue
            filled: dict[str, Any] | None = {}
            for param in self.required(before):
                if filled is None:
                    break
                if param in args and args[param] is not None:
                    filled[param] = args[param]
                    continue
                match = next((r for r in self.refs if param == f"{r['entity']}_id" and r["name"] in self.bindings),
                             None)
                filled = None if match is None else {**filled, param: self.bindings[match["name"]]}
            if filled is not None and self.call_key(before, filled) not in self.done:
                out.append((before, filled))
        return out

    def run_prerequisites(self, tool: str, args: dict[str, Any], raw: dict[str, Any]) -> None:
        """Run each strong prerequisite of a goal call before it."""
        for before, filled in self.needed_prerequisites(tool, args):
            self.run_prerequisite(before, filled)

    def run_prerequisite(self, tool: str, args: dict[str, Any]) -> None:
        """Run one prerequisite call, keeping its output."""
        result = self.call_with_recovery(tool, args)
        if result.ok:
            self.outputs[tool] = result.output

    def invoke_goal(self, tool: str, args: dict[str, Any], raw: dict[str, Any], index: int) -> ToolResult:
        """Make a goal call with recovery; keep its output or why it failed."""
        result = self.call_with_recovery(tool, args, raw)
        if result.ok:
            self.outputs[tool] = result.output
        elif result.error is not None and result.error.message not in self.refusals:
            self.failures.append(f"{tool}: {result.error.message}")
        return result

    # errors -----------------------------------------------------------------------------------------
    def call_with_recovery(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None = None) -> ToolResult:
        """Call ``tool`` and recover from its errors as the policy says (up to ``MAX_ATTEMPTS`` attempts)."""
        result = self.call(tool, args)
        attempt = 1
        while not result.ok and result.error is not None and attempt < MAX_ATTEMPTS:
            retry = self.recover(tool, args, raw, result.error)
            if retry is None:
                break
            args = retry
            result = self.call(tool, args)
            attempt += 1
        return result

    @staticmethod
    def error_kind(error: ToolErrorInfo) -> str:
        """The error's kind, with injected faults named by their fault kind."""
        return error.fault if error.kind == "fault" and error.fault else error.kind

    def recover(self, tool: str, args: dict[str, Any], raw: dict[str, Any] | None,
                error: ToolErrorInfo) -> dict[str, Any] | None:
        """The arguments to retry with after ``error``, or ``None`` to stop trying."""
        kind = self.error_kind(error)
        if kind in ("timeout", "rate_limit"):
            return args
        if kind in ("data_conflict", "conflict"):
            self.refetch(args)
            return args
        if kind == "not_found":
            return self.re_resolve(args)
        if kind == "validation" and raw is not None:
            fixed = {k: canonical(str(v["format"]), str(v["raw"])) if is_formatted(v) else args.get(k)
                     for k, v in raw.items()}
            return fixed if fixed != args else None
        if kind in ("policy", "permission"):
            self.refusals.append(error.message)
        return None

    def refetch(self, args: dict[str, Any]) -> None:
        """Fetch again the record whose id the failed call used."""
        for ref in self.refs:
            bound = self.bindings.get(ref["name"])
            get = self.tool_for(ref["entity"], "get")
            if bound is not None and get is not None and bound in args.values():
                result = self.call(get, {self.id_param(get, ref["entity"]): bound})
                if result.ok and isinstance(result.output, dict):
                    self.records[ref["name"]] = result.output
                return

    def re_resolve(self, args: dict[str, Any]) -> dict[str, Any] | None:
        """Search again for a text reference whose id was not found; the arguments with the new id."""
        for ref in self.refs:
            bound = self.bindings.get(ref["name"])
            if bound is None or ref["mention_kind"] != "text" or bound not in args.values():
                continue
            hits = self.search(ref)
            if not hits:
                return None
            new_id = str(self.choose(ref, hits).get("id"))
            if new_id == bound:
                return None
            self.fetch(ref, new_id)
            return {k: new_id if v == bound else v for k, v in args.items()}
        return None

    # reply ------------------------------------------------------------------------------------------
    def fact(self, path: str) -> Any:
        """The value a report path names."""
        return self.lookup(path)

    def fact_lines(self) -> list[str]:
        """One ``label: value`` line per reported fact the episode knows."""
        lines = []
        for path in self.report:
            value = self.fact(path)
            if value is not None:
                lines.append(f"{path[1:].replace('.', ' ').replace('_', ' ')}: {self.render(value)}")
        return lines

    def render(self, value: Any) -> str:
        """Render one fact."""
        return render(value)

    def write_ids(self) -> list[str]:
        """The ids the episode's successful writes returned."""
        lines = []
        for tool, output in self.outputs.items():
            if isinstance(output, dict) and self.is_write(tool):
                ids = [f"{k}: {v}" for k, v in output.items() if k.endswith("id") and isinstance(v, str)]
                lines.extend(ids[:2])
        return lines

    def compose_reply(self) -> str:
        """The reply: the facts, the write ids, the refusals and what failed."""
        lines = self.fact_lines() + self.write_ids()
        lines.extend(f"The system refused this: {msg}" for msg in self.refusals)
        lines.extend(f"I could not complete {msg}" for msg in self.failures)
        return "\n".join(lines) if lines else "Done."

    def finish(self) -> None:
        """Hook after the goal calls, before the reply."""

    def play(self) -> AgentRun:
        """Play the episode: resolve, act, reply."""
        stop = "reply"
        try:
            self.resolve_all()
            self.run_goals()
            self.finish()
            text = self.compose_reply()
        except Stop as exc:
            text, stop = exc.reply, exc.reason
        return AgentRun(reply=text, turns=self.calls + 1, stop_reason=stop)


EpisodeFactory = Callable[[Observation, CallTool, int], Episode]
"""Makes one episode of a policy."""


class BlindPolicy:
    """An ``arena.agents.base.Agent`` playing episodes of one ``Episode`` class.

    It remembers, by the episode's agent seed, which episodes its injected mistake applied to; the records it
    produces carry no trace of the mistake (an opaque name, no decisions).

    Args:
        ident: An opaque identifier for the records' agent name and model reference.
        factory: Makes each episode.
    """

    def __init__(self, ident: str, factory: EpisodeFactory) -> None:
        self.name = f"ext-{ident}"
        self._factory = factory
        self._lock = threading.Lock()
        self._injected: dict[int, bool] = {}

    @property
    def model_ref(self) -> str:
        """The opaque model reference."""
        return f"{self.name}@v1"

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Play one episode and remember whether the mistake applied."""
        episode = self._factory(observation, call_tool, seed)
        run = episode.play()
        with self._lock:
            self._injected[seed] = episode.injected
        return run

    def injected(self, seed: int) -> bool | None:
        """Whether the episode of agent seed ``seed`` had the mistake (``None``: never played)."""
        with self._lock:
            return self._injected.get(seed)

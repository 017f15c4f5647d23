"""The built-in reference policy: a small learnable tool-using agent.

It sees what an LLM agent sees — the task's prompt and structured intent, the
tool specs, the dependency graph, the policy and tool results — and at each
decision point samples a strategy from logits indexed by (decision kind,
context feature). Its strategies include the failure modes agents show in
enterprise software: searching but never fetching by id, skipping required
prerequisite steps, passing a name where an id is required, trusting stale
summaries, giving up after a timeout, leaking internal data.

How it learns (the assumptions, stated in docs/architecture.md): a decision's logits are a shared skill
(per decision kind and context) plus an offset for the tool it concerns. Training moves the shared skill by
``transfer`` of each update and the tool's offset by the rest, so ``transfer`` 1 (the default) is one skill
for every tool of every gym and 0 is a separate skill per tool. Starting competence may be uneven: given
grains start at their own slip.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.agents.base import AgentRun, CallTool, UserChannel
from arena.core.gym import Observation
from arena.core.model_id import EXPERT, FAILURE_PREFIX, REFERENCE, ModelId, is_builtin
from arena.core.results import ToolResult
from arena.core.toolkit import ToolSpec
from arena.core.values import parse_amount, parse_date
from arena.core.weakness import WeaknessKind

PARAMS_SCHEMA_VERSION = 1
"""Version of the saved parameter artifact."""

STRATEGIES: dict[str, list[str]] = {
    "resolve_id": ["get_by_id", "search_first"],
    "resolve_text": ["search_then_get", "search_summary_only", "use_mention_as_id"],
    "after_empty_search": ["get_by_id", "give_up"],
    "pick_candidate": ["match_hint", "first_result"],
    "prerequisite": ["do", "skip"],
    "format": ["convert", "as_given"],
    "after_error": ["retry", "refetch_retry", "re_resolve", "reformat", "give_up", "explain"],
    "reply": ["facts", "facts_with_internal", "claim_done"],
}
"""Strategies available at each decision kind; the first is the careful one."""

CONTEXTS: dict[str, list[str]] = {
    "resolve_id": ["id"],
    "resolve_text": ["plain", "hinted"],
    "after_empty_search": ["id"],
    "pick_candidate": ["single", "several"],
    "prerequisite": ["strong"],
    "format": ["date", "money", "code"],
    "after_error": ["timeout", "rate_limit", "data_conflict", "conflict", "not_found", "validation", "policy",
                    "permission"],
    "reply": ["plain", "sensitive"],
}
"""Context features each decision kind is conditioned on."""

CORRECT_AFTER_ERROR = {
    "timeout": "retry",
    "rate_limit": "retry",
    "data_conflict": "refetch_retry",
    "conflict": "refetch_retry",
    "not_found": "re_resolve",
    "validation": "reformat",
    "policy": "explain",
    "permission": "explain",
}
"""The careful move after each kind of tool error."""

FAILURE_MODES: dict[WeaknessKind, dict[str, str]] = {
    WeaknessKind.SEARCH_WITHOUT_FETCH: {"resolve_text|plain": "search_summary_only",
                                        "resolve_text|hinted": "search_summary_only",
                                        "resolve_id|id": "search_first", "after_empty_search|id": "give_up"},
    WeaknessKind.MISSED_POLICY_DEPENDENCY: {"prerequisite|strong": "skip"},
    WeaknessKind.WRONG_ID: {"resolve_text|plain": "use_mention_as_id", "resolve_text|hinted": "use_mention_as_id",
                            "pick_candidate|several": "first_result", "after_error|not_found": "give_up"},
    WeaknessKind.BRITTLE_PARAMETERS: {"format|date": "as_given", "format|money": "as_given",
                                      "format|code": "as_given", "after_error|validation": "give_up"},
    WeaknessKind.STALE_STATE: {"after_error|data_conflict": "retry", "after_error|conflict": "retry"},
    WeaknessKind.NO_ERROR_RECOVERY: {"after_error|timeout": "give_up", "after_error|rate_limit": "give_up"},
    WeaknessKind.LEAKED_INTERNAL_DATA: {"reply|plain": "facts_with_internal", "reply|sensitive": "facts_with_internal"},
    WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS: {"reply|plain": "claim_done", "reply|sensitive": "claim_done"},
}
"""Injected failure modes: the decisions each one forces (used to build labelled failure traces)."""

DEFAULT_SLIP = 0.5
"""Starting probability of a careless strategy at a decision key not listed in ``STARTING_SLIPS``."""

STARTING_SLIPS: dict[str, float] = {
    "resolve_id|id": 0.15,
    "resolve_text|plain": 0.3,
    "resolve_text|hinted": 0.3,
    "reply|plain": 0.1,
    "reply|sensitive": 0.6,
    "pick_candidate|several": 0.7,
    "prerequisite|strong": 0.7,
    "format|date": 0.75,
    "format|money": 0.75,
    "format|code": 0.75,
    "after_error|timeout": 0.75,
    "after_error|rate_limit": 0.75,
    "after_error|data_conflict": 0.75,
    "after_error|conflict": 0.75,
}
"""Starting slips: routine decisions (fetching by id, plain replies) are mostly careful; the decisions the
field documents as weak (prerequisites, near-duplicates, legacy formats, recovery after faults, internal
data in replies) mostly careless, as an untrained agent is."""

COMPETENT_SLIP = 0.05
"""Slip of every decision of a competent starting model (``few-weak-skills``)."""

WEAK_SKILLS: dict[str, float] = {
    "pick_candidate|several@search_users": 0.9,
    "prerequisite|strong@check_refund_eligibility": 0.9,
    "format|date@release_version": 0.9,
}
"""The weak skills of the ``few-weak-skills`` start, as ``kind|context@tool`` grains and their slips: a missed
lookup pattern (the first of several near-duplicate users, tracker), a skipped prerequisite (refund eligibility,
helpdesk) and a legacy date format (release dates, tracker)."""

NAMED_STARTS: dict[str, str] = {
    "untrained": "the documented failure modes as tendencies (STARTING_SLIPS), one skill for every tool (transfer 1)",
    "few-weak-skills": "competent (every decision slips 0.05) but for three weak skills that slip 0.9 (WEAK_SKILLS), "
                       "half of each update shared across tools (transfer 0.5)",
}
"""Named starting parameter sets (``PolicyParams.named``) and what each is."""

_MAX_ATTEMPTS = 3
_MAX_CALLS = 40
_INTERNAL_KEYS = re.compile(r"internal|token|risk|secret|bank|account_number|note", re.IGNORECASE)


def _key(kind: str, context: str) -> str:
    return f"{kind}|{context}"


class PolicyParams(BaseModel):
    """The reference policy's parameters: logits per (decision kind, context) and strategy.

    Attributes:
        schema_version: Artifact schema version.
        name: Model name.
        version: Training step count that produced these parameters.
        logits: ``"kind|context" -> strategy -> logit``.
        parent: Content hash of the parameters these were trained from.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = PARAMS_SCHEMA_VERSION
    name: str = "reference"
    version: int = 0
    logits: dict[str, dict[str, float]] = Field(default_factory=dict)
    parent: str | None = None
    offsets: dict[str, dict[str, float]] = Field(default_factory=dict)
    transfer: float = Field(default=1.0, ge=0.0, le=1.0)

    @classmethod
    def initial(cls, slips: dict[str, float] | None = None, *, grain_slips: dict[str, float] | None = None,
                transfer: float = 1.0) -> PolicyParams:
        """Starting parameters: the documented failure modes as tendencies, so most held-out tasks fail.

        Args:
            slips: Probability of a careless strategy at each ``"kind|context"`` key (default
                ``STARTING_SLIPS``; unlisted keys slip with ``DEFAULT_SLIP``). The slip goes mostly
                to the key's documented failure mode, the rest to the other careless strategies.
            grain_slips: Uneven starting competence: the slip at ``"kind|context@tool"`` grains that start
                elsewhere than their shared key (held as that tool's offset).
            transfer: Share of each training update that moves the shared skill (the rest moves the offset
                of the decision's tool).

        Raises:
            ValueError: A grain names an unknown decision key, naming it.
        """
        table = STARTING_SLIPS if slips is None else slips
        logits = {_key(kind, context): _slip_row(kind, context, table.get(_key(kind, context), DEFAULT_SLIP))
                  for kind, contexts in CONTEXTS.items() for context in contexts}
        offsets: dict[str, dict[str, float]] = {}
        for grain, slip in sorted((grain_slips or {}).items()):
            key, _, tool = grain.partition("@")
            if key not in logits or not tool:
                raise ValueError(f"grain {grain!r} is not 'kind|context@tool' with a known decision key")
            kind, _, context = key.partition("|")
            target = _slip_row(kind, context, slip)
            offsets[grain] = {s: target[s] - logits[key][s] for s in target}
        return cls(logits=logits, offsets=offsets, transfer=transfer)

    @classmethod
    def expert(cls) -> PolicyParams:
        """Parameters that always take the careful strategy."""
        logits = {
            _key(k, c): {s: (0.0 if s == _careful(k, c) else -50.0) for s in STRATEGIES[k]}
            for k, cs in CONTEXTS.items() for c in cs
        }
        return cls(name="reference-expert", logits=logits)

    @classmethod
    def named(cls, name: str) -> PolicyParams:
        """A named starting parameter set (``NAMED_STARTS``).

        ``untrained`` is ``initial()``; ``few-weak-skills`` (model name ``reference-few-weak-skills``) is a model
        whose failures are concentrated in a few skills, the regime of the curriculum benchmark's judged cells.

        Raises:
            KeyError: Unknown name, naming the known ones.
        """
        if name == "untrained":
            return cls.initial()
        if name == "few-weak-skills":
            every = {_key(kind, c): COMPETENT_SLIP for kind, contexts in CONTEXTS.items() for c in contexts}
            params = cls.initial(every, grain_slips=WEAK_SKILLS, transfer=0.5)
            return params.model_copy(update={"name": f"reference-{name}"})
        raise KeyError(f"unknown reference-policy parameter set {name!r}; known: {', '.join(NAMED_STARTS)}")

    @classmethod
    def with_failure(cls, mode: str) -> PolicyParams:
        """Careful parameters except for one injected failure mode (always taken).

        Raises:
            KeyError: Unknown failure mode, naming the known ones.
        """
        if mode not in FAILURE_MODES:
            raise KeyError(f"unknown failure mode {mode!r}; known: {', '.join(sorted(FAILURE_MODES))}")
        params = cls.expert()
        for key, strategy in FAILURE_MODES[WeaknessKind(mode)].items():
            params.logits[key] = {s: (0.0 if s == strategy else -50.0) for s in params.logits[key]}
        return params.model_copy(update={"name": f"{FAILURE_PREFIX}{mode}"})

    def row(self, key: str, tool: str = "") -> dict[str, float]:
        """The logits at a decision key for one tool: the shared skill plus the tool's offset, if any."""
        offset = self.offsets.get(grain_key(key, tool)) if tool else None
        if offset is None:
            return self.logits[key]
        return {s: v + offset.get(s, 0.0) for s, v in self.logits[key].items()}

    def probabilities(self, key: str, tool: str = "") -> dict[str, float]:
        """Softmax of the logits at one decision key (for one tool: shared skill plus its offset)."""
        row = self.row(key, tool)
        top = max(row.values())
        exp = {s: math.exp(v - top) for s, v in row.items()}
        total = sum(exp.values())
        return {s: e / total for s, e in exp.items()}

    def content_hash(self) -> str:
        """sha256 of the logits, offsets and transfer (16 hex digits), identifying these parameters."""
        content: dict[str, Any] = {"logits": self.logits}
        if self.offsets or self.transfer != 1.0:
            content.update(offsets=self.offsets, transfer=self.transfer)
        data = json.dumps(content["logits"] if len(content) == 1 else content, sort_keys=True).encode()
        return hashlib.sha256(data).hexdigest()[:16]

    @property
    def ref(self) -> str:
        """The parameters' model name, as gymloop prints it: ``name@vN:hash`` (``arena.core.model_id``)."""
        return ModelId(form="registered", name=self.name, version=self.version,
                       params_hash=self.content_hash()).label

    def save(self, path: str | Path) -> Path:
        """Write the parameters as a JSON artifact."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.model_dump_json(indent=2))
        return out

    @classmethod
    def load(cls, path: str | Path) -> PolicyParams:
        """Read a parameter artifact.

        Raises:
            ValueError: A missing, unreadable or non-JSON file, an unknown schema version or missing decision
                keys, naming the file.
        """
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{path}: no such reference policy parameter file") from None
        except IsADirectoryError:
            raise ValueError(f"{path}: is a folder, not a reference policy parameter file") from None
        except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a JSON reference policy parameter file ({type(exc).__name__})") from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: reference policy parameters must be a JSON object")
        version = raw.get("schema_version")
        if version != PARAMS_SCHEMA_VERSION:
            raise ValueError(f"{path}: reference policy parameters schema_version {version!r}; "
                             f"this gymloop reads {PARAMS_SCHEMA_VERSION}")
        try:
            params = cls.model_validate(raw)
        except ValidationError as exc:
            raise ValueError(f"{path}: bad reference policy parameters: {exc.errors()[0]['msg']}") from None
        missing = [_key(k, c) for k, cs in CONTEXTS.items() for c in cs if _key(k, c) not in params.logits]
        if missing:
            raise ValueError(f"{path}: parameters miss decision keys {missing}")
        return params


def builtin_params(model: ModelId) -> PolicyParams | None:
    """The parameters of the built-in policy ``model`` names, or ``None`` when it names none.

    A built-in name (``reference``, ``reference-expert``, ``reference-few-weak-skills``,
    ``reference-failure:<kind>``) names its policy; so does a registered name whose name, version and hash are the
    policy's own (``reference@v0:<hash>``, as episodes the policy played print it).

    Raises:
        KeyError: ``reference-failure:`` with an unknown failure mode, or a built-in name this policy does not
            know, naming the known ones.
    """
    if model.form not in ("builtin", "registered") or not is_builtin(model.name):
        return None
    if model.name == REFERENCE:
        params = PolicyParams.initial()
    elif model.name == EXPERT:
        params = PolicyParams.expert()
    elif model.name.startswith(FAILURE_PREFIX):
        params = PolicyParams.with_failure(model.name.removeprefix(FAILURE_PREFIX))
    else:
        params = PolicyParams.named(model.name.removeprefix(f"{REFERENCE}-"))
    if model.form == "registered" and (model.version != params.version or (
            model.params_hash is not None and not params.content_hash().startswith(model.params_hash))):
        return None
    return params


def grain_key(key: str, tool: str) -> str:
    """The ``"kind|context@tool"`` name of a decision key at one tool."""
    return f"{key}@{tool}"


def _slip_row(kind: str, context: str, slip: float) -> dict[str, float]:
    """Logits with ``slip`` on the careless strategies, mostly on the key's documented failure mode."""
    key = _key(kind, context)
    careful = _careful(kind, context)
    slip = min(0.99, max(0.01, slip))
    documented = {m[key] for m in FAILURE_MODES.values() if key in m and m[key] != careful}
    others = [st for st in STRATEGIES[kind] if st != careful]
    weights = {st: (4.0 if st in documented else 1.0) for st in others}
    total = sum(weights.values())
    row = {st: math.log(slip * w / total) for st, w in weights.items()}
    row[careful] = math.log(1.0 - slip)
    return row


def _careful(kind: str, context: str) -> str:
    if kind == "after_error":
        return CORRECT_AFTER_ERROR[context]
    return STRATEGIES[kind][0]


class _GaveUp(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Episode:
    """The state of one reference-policy episode."""

    def __init__(self, policy: ReferencePolicy, observation: Observation, call_tool: CallTool, seed: int) -> None:
        self.params = policy.params
        self.obs = observation
        self.call_tool = call_tool
        self.rng = random.Random(seed)
        self.intent: dict[str, Any] = observation.task["intent"]
        self.specs: dict[str, ToolSpec] = {t.name: t for t in observation.tools}
        self.refs: dict[str, dict[str, Any]] = {r["name"]: r for r in self.intent.get("refs", [])}
        self.bindings: dict[str, str] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, Any] = {}
        self.refusals: list[str] = []
        self.failures: list[str] = []
        self.decisions: list[dict[str, Any]] = []
        self.calls = 0
        self.goal_tool: str | None = None
        self.done_calls: set[str] = set()
        self.prereqs = self._strong_prerequisites(observation.graph)

    @staticmethod
    def _strong_prerequisites(graph: dict[str, Any]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for edge in graph.get("edges", graph.get("links", [])):
            if edge.get("weight", 1) >= 3:
                out.setdefault(edge["target"], []).append(edge["source"])
        return out

    def decide(self, kind: str, context: str, tool: str | None = None) -> str:
        key = _key(kind, context)
        where = tool or ""
        probs = self.params.probabilities(key, where)
        choices = STRATEGIES[kind]
        pick = self.rng.choices(choices, weights=[probs[c] for c in choices])[0]
        self.decisions.append({"key": key, "choice": pick, "tool": where})
        return pick

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if self.calls >= _MAX_CALLS:
            raise _GaveUp("step limit")
        self.calls += 1
        result = self.call_tool(name, args)
        if result.ok:
            self.done_calls.add(name + json.dumps(args, sort_keys=True, default=str))
        return result

    def tool_for(self, entity: str, operation: str) -> str | None:
        for spec in self.specs.values():
            if spec.entity == entity and spec.operation == operation:
                return spec.name
        return None

    def id_param(self, tool: str, entity: str) -> str:
        props = self.specs[tool].parameters.get("properties", {})
        name = f"{entity}_id"
        if name in props:
            return name
        required = self.specs[tool].parameters.get("required", [])
        return required[0] if required else name

    def query_param(self, tool: str) -> str:
        props = self.specs[tool].parameters.get("properties", {})
        for name in ("query", "q", "text", "name"):
            if name in props:
                return name
        required = self.specs[tool].parameters.get("required", [])
        return required[0] if required else "query"

    # resolution -----------------------------------------------------------------------------------
    def fetch(self, ref: dict[str, Any], entity_id: str) -> ToolResult:
        get = self.tool_for(ref["entity"], "get")
        if get is None:
            self.bindings[ref["name"]] = entity_id
            return ToolResult(ok=True, output={"id": entity_id})
        result = self.call_with_recovery(get, {self.id_param(get, ref["entity"]): entity_id}, ref_hint=ref["name"])
        self.bindings[ref["name"]] = entity_id
        if result.ok and isinstance(result.output, dict):
            self.records[ref["name"]] = result.output
        return result

    def search(self, ref: dict[str, Any]) -> list[dict[str, Any]]:
        tool = self.tool_for(ref["entity"], "search")
        if tool is None:
            return []
        result = self.call_with_recovery(tool, {self.query_param(tool): ref["mention"]}, ref_hint=ref["name"])
        output = result.output if result.ok else []
        if isinstance(output, dict):
            for value in output.values():
                if isinstance(value, list):
                    output = value
                    break
        return [r for r in output if isinstance(r, dict)] if isinstance(output, list) else []

    def pick(self, ref: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
        if len(hits) == 1:
            return hits[0]
        hint = {k: str(v).casefold() for k, v in ref.get("hint", {}).items()}
        choice = self.decide("pick_candidate", "several", self.tool_for(ref["entity"], "search"))
        if choice == "match_hint" and hint:
            def score(hit: dict[str, Any]) -> int:
                return sum(str(hit.get(k, "")).casefold() == v for k, v in hint.items())
            return max(hits, key=score)
        return hits[0]

    def resolve(self, ref: dict[str, Any]) -> None:
        mention = ref["mention"]
        if isinstance(mention, str) and mention.startswith("$"):
            found = self.lookup(mention)
            if found is None:
                raise _GaveUp(f"cannot find {mention[1:]}")
            ref = {**ref, "mention": str(found), "mention_kind": "id"}
            self.refs[ref["name"]] = ref
        if ref["mention_kind"] == "id":
            search = self.tool_for(ref["entity"], "search")
            if search is None or self.decide("resolve_id", "id", self.tool_for(ref["entity"], "get")) == "get_by_id":
                self.fetch(ref, ref["mention"])
                return
            hits = self.search(ref)
            if hits:
                self.fetch(ref, str(self.pick(ref, hits).get("id")))
                return
            if self.decide("after_empty_search", "id", search) == "give_up":
                raise _GaveUp(f"no {ref['entity']} matches {ref['mention']}")
            self.fetch(ref, ref["mention"])
            return
        context = "hinted" if ref.get("hint") else "plain"
        strategy = self.decide("resolve_text", context, self.tool_for(ref["entity"], "search"))
        if strategy == "use_mention_as_id":
            self.fetch(ref, ref["mention"])
            return
        self.search_and_bind(ref, summary_only=strategy == "search_summary_only")

    def search_and_bind(self, ref: dict[str, Any], *, summary_only: bool) -> None:
        hits = self.search(ref)
        if not hits:
            raise _GaveUp(f"no {ref['entity']} matches {ref['mention']!r}")
        hit = self.pick(ref, hits)
        if summary_only:
            self.bindings[ref["name"]] = str(hit.get("id"))
            self.records[ref["name"]] = hit
        else:
            self.fetch(ref, str(hit.get("id")))

    # goal calls -----------------------------------------------------------------------------------
    def value(self, raw: Any) -> Any:
        if isinstance(raw, dict) and set(raw) == {"format", "raw"}:
            if self.decide("format", raw["format"], self.goal_tool) == "convert":
                return convert(raw["format"], raw["raw"])
            return raw["raw"]
        if isinstance(raw, str) and raw.startswith("$"):
            return self.lookup(raw)
        if isinstance(raw, list):
            return [self.value(v) for v in raw]
        return raw

    def lookup(self, path: str) -> Any:
        name, _, field = path[1:].partition(".")
        if not field:
            return self.bindings.get(name, path)
        source = self.records.get(name)
        if source is None:
            source = self.outputs.get(name)
        if isinstance(source, dict | list):
            return _dig(source, field)
        return None

    def run_goal(self, call: dict[str, Any]) -> None:
        tool = call["tool"]
        self.goal_tool = tool
        raw = call.get("arguments", {})
        prereqs = self.prereqs.get(tool, [])
        # Prerequisites run first, so the goal's arguments and condition may read their outputs.
        condition = call.get("when")
        late_condition = condition is not None and _reads_outputs_of(condition.lstrip("!"), prereqs)
        if condition and not late_condition and not self.holds(condition):
            return
        early = {k: self.value(v) for k, v in raw.items() if not _reads_outputs_of(v, prereqs)}
        for before in prereqs:
            self.prerequisite(before, early)
        if condition and late_condition and not self.holds(condition):
            return
        args = {k: early[k] if k in early else self.value(v) for k, v in raw.items()}
        result = self.call_with_recovery(tool, args, raw_args=raw)
        if result.ok:
            self.outputs[tool] = result.output
        elif result.error is not None and result.error.message not in self.refusals:
            self.failures.append(f"{tool}: {result.error.message}")

    def holds(self, condition: str) -> bool:
        negate = condition.startswith("!")
        return bool(self.lookup(condition.lstrip("!"))) != negate

    def prerequisite(self, tool: str, goal_args: dict[str, Any], chain: tuple[str, ...] = ()) -> None:
        """Call ``tool``, a strong prerequisite of the call with ``goal_args``, after its own (A -> B -> goal)."""
        spec = self.specs.get(tool)
        if spec is None or tool in chain:
            return
        args: dict[str, Any] = {}
        for param in spec.parameters.get("required", []):
            if param in goal_args:
                args[param] = goal_args[param]
            elif param.endswith("_id") and param[:-3] in {r["entity"] for r in self.refs.values()}:
                ref = next(r for r in self.refs.values() if r["entity"] == param[:-3])
                if ref["name"] not in self.bindings:
                    return
                args[param] = self.bindings[ref["name"]]
            else:
                return
        if tool + json.dumps(args, sort_keys=True, default=str) in self.done_calls:
            return
        if self.decide("prerequisite", "strong", tool) == "skip":
            return
        for before in self.prereqs.get(tool, []):
            self.prerequisite(before, {**goal_args, **args}, (*chain, tool))
        result = self.call_with_recovery(tool, args)
        if result.ok:
            self.outputs[tool] = result.output

    def call_with_recovery(
        self, tool: str, args: dict[str, Any], *, raw_args: dict[str, Any] | None = None, ref_hint: str | None = None
    ) -> ToolResult:
        result = self.call(tool, args)
        attempts = 1
        while not result.ok and result.error is not None and attempts < _MAX_ATTEMPTS:
            error = result.error
            context = error.fault if error.kind == "fault" and error.fault else error.kind
            if context not in CORRECT_AFTER_ERROR:
                return result
            move = self.decide("after_error", context, tool)
            if move == "give_up":
                raise _GaveUp(f"{tool} failed: {error.message}")
            if move == "explain":
                self.refusals.append(error.message)
                return result
            if move == "refetch_retry":
                self.refetch(args)
            elif move == "re_resolve":
                args = self.re_resolve(args, ref_hint)
            elif move == "reformat" and raw_args is not None:
                args = {k: (convert(v["format"], v["raw"]) if isinstance(v, dict) and set(v) == {"format", "raw"}
                            else args[k]) for k, v in raw_args.items()}
            result = self.call(tool, args)
            attempts += 1
        return result

    def refetch(self, args: dict[str, Any]) -> None:
        for ref in self.refs.values():
            bound = self.bindings.get(ref["name"])
            get = self.tool_for(ref["entity"], "get")
            if bound is not None and get is not None and bound in args.values():
                result = self.call(get, {self.id_param(get, ref["entity"]): bound})
                if result.ok and isinstance(result.output, dict):
                    self.records[ref["name"]] = result.output
                return

    def re_resolve(self, args: dict[str, Any], ref_hint: str | None) -> dict[str, Any]:
        for ref in self.refs.values():
            bound = self.bindings.get(ref["name"], ref["mention"] if ref["name"] == ref_hint else None)
            if bound is None or bound not in args.values() or ref["mention_kind"] == "id":
                continue
            hits = self.search(ref)
            if not hits:
                return args
            hit = self.pick(ref, hits)
            new_id = str(hit.get("id"))
            get = self.tool_for(ref["entity"], "get")
            if get is not None and ref["name"] != ref_hint:
                fetched = self.call(get, {self.id_param(get, ref["entity"]): new_id})
                if fetched.ok and isinstance(fetched.output, dict):
                    self.records[ref["name"]] = fetched.output
            self.bindings[ref["name"]] = new_id
            return {k: (new_id if v == bound else v) for k, v in args.items()}
        return args

    # reply ----------------------------------------------------------------------------------------
    def reply(self) -> str:
        report: list[str] = self.intent.get("report", [])
        sensitive = any(_INTERNAL_KEYS.search(k) for rec in self.records.values() for k in rec)
        calls = self.intent.get("calls", [])
        style = self.decide("reply", "sensitive" if sensitive else "plain", calls[0]["tool"] if calls else None)
        if style == "claim_done":
            return "All done: your request has been completed."
        lines = []
        for path in report:
            value = self.lookup(path)
            if value is not None:
                lines.append(f"{path[1:].replace('.', ' ')}: {format_value(value)}")
        for tool, output in self.outputs.items():
            if isinstance(output, dict) and self.specs.get(tool) is not None and self.specs[tool].mode == "write":
                ids = [f"{k}: {v}" for k, v in output.items() if k.endswith("id") and isinstance(v, str)]
                lines.extend(ids[:2])
        lines.extend(f"Could not proceed: {msg}" for msg in self.refusals)
        lines.extend(f"Could not complete {msg}" for msg in self.failures)
        if style == "facts_with_internal":
            for rec in self.records.values():
                lines.extend(f"{k}: {format_value(v)}" for k, v in rec.items() if _INTERNAL_KEYS.search(k))
                lines.append(f"record id {rec.get('id')}")
        return "\n".join(lines) if lines else "Done."

    def play(self) -> AgentRun:
        stop = "reply"
        try:
            for ref in self.intent.get("refs", []):
                self.resolve(ref)
            for call in self.intent.get("calls", []):
                self.run_goal(call)
            text = self.reply()
        except _GaveUp as exc:
            stop = "gave_up" if exc.reason != "step limit" else "step_limit"
            text = f"I'm sorry, I could not complete this request ({exc.reason})."
        return AgentRun(reply=text, turns=self.calls + 1, stop_reason=stop, decisions=self.decisions)

    def converse(self, user: UserChannel) -> AgentRun:
        """Play a conversation: each user turn's intended calls (``turn``), then a reply, until the user ends it.

        An intent whose calls name no turn is played whole in the first turn, and its reply ends the agent's part.
        """
        calls = self.intent.get("calls", [])
        by_turn = any(call.get("turn") is not None for call in calls)
        stop, turn = "reply", 0
        try:
            for ref in self.intent.get("refs", []):
                self.resolve(ref)
            while True:
                for call in calls:
                    if (call.get("turn") or 0) == turn:
                        self.run_goal(call)
                text = self.reply()
                if not by_turn:
                    break
                if user.send(text).ended:
                    stop = "user_stop"
                    break
                turn += 1
        except _GaveUp as exc:
            stop = "gave_up" if exc.reason != "step limit" else "step_limit"
            text = f"I'm sorry, I could not complete this request ({exc.reason})."
        return AgentRun(reply=text, turns=self.calls + 1, stop_reason=stop, decisions=self.decisions)


def _reads_outputs_of(value: Any, tools: list[str]) -> bool:
    """Whether a symbolic argument reads the output of one of ``tools``."""
    if isinstance(value, str) and value.startswith("$"):
        return value[1:].split(".", 1)[0] in tools
    if isinstance(value, list):
        return any(_reads_outputs_of(v, tools) for v in value)
    return False


def _dig(record: dict[str, Any] | list[Any], field: str) -> Any:
    value: Any = record
    for part in field.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def convert(fmt: str, raw: str) -> Any:
    """Convert a value written in a legacy format to the canonical one a tool expects.

    Dates and amounts are read by ``arena.core.values`` (the one reading gymloop has of them).

    Args:
        fmt: ``date`` (to YYYY-MM-DD; US month-first for slashes), ``money`` (to a number)
            or ``code`` (to upper case).
        raw: The value as written.
    """
    text = raw.strip()
    if fmt == "money":
        amount = parse_amount(text)
        return raw if amount is None else round(float(amount), 2)
    if fmt == "code":
        return text.upper().replace(" ", "-")
    day = parse_date(text)
    return raw if day is None else day.isoformat()


def format_value(value: Any) -> str:
    """Render a fact for a reply: floats with two decimals, lists comma-separated."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {format_value(v)}" for k, v in value.items())
    return str(value)


class ReferencePolicy:
    """The built-in learnable policy (implements ``arena.agents.base.Agent``).

    Args:
        params: Its parameters (``PolicyParams.initial()`` by default).
    """

    name = "reference"

    def __init__(self, params: PolicyParams | None = None) -> None:
        self.params = params or PolicyParams.initial()

    @property
    def model_ref(self) -> str:
        """The parameters' reference string."""
        return self.params.ref

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Play one episode: resolve references, run prerequisites and goal calls, reply."""
        return _Episode(self, observation, call_tool, seed).play()

    def run_conversation(self, observation: Observation, call_tool: CallTool, user: UserChannel, *,
                         seed: int) -> AgentRun:
        """Converse: after each user message, the intended calls of that turn (``IntendedCall.turn``), then a reply."""
        return _Episode(self, observation, call_tool, seed).converse(user)

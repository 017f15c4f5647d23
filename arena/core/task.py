"""Task model: what an episode asks of the agent and how its outcome is judged."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from arena.core.conversation import Conversation, TaskSource

Split = Literal["train", "heldout"]


class Persona(BaseModel):
    """Who the agent acts as in an episode.

    Attributes:
        name: Display name of the support or operations employee.
        role: Role name, e.g. ``agent`` or ``manager``.
        permissions: Permission names granted to the role; a tool whose required
            permission is missing here answers with a ``permission`` error.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    role: str
    permissions: list[str] = Field(default_factory=list)


class EntityRef(BaseModel):
    """A reference to an entity as the task's requester phrased it.

    Attributes:
        name: Variable name the intent uses for the resolved id, e.g. ``order``.
        entity: Entity type, matching ``ToolSpec.entity`` of the domain's tools.
        mention: The text the prompt gives: an id, a name, a title, an email; or a
            ``"$ref.field"`` path when the id is found in another record (e.g. the
            order of a ticket: ``"$ticket.order_id"``), with ``mention_kind="id"``.
        mention_kind: ``id`` when the mention is the entity's id, ``text`` otherwise.
        hint: Further attributes the prompt states that single out the entity
            among near-duplicates (field name to value).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    entity: str
    mention: str
    mention_kind: Literal["id", "text"]
    hint: dict[str, str] = Field(default_factory=dict)


class FormattedValue(BaseModel):
    """A parameter value the requester gave in a non-canonical format.

    Attributes:
        format: The canonical format the tool expects: ``date`` (YYYY-MM-DD),
            ``money`` (a number in the account currency) or ``code`` (upper case).
        raw: The value as the requester wrote it.
    """

    model_config = ConfigDict(extra="forbid")

    format: Literal["date", "money", "code"]
    raw: str


class IntendedCall(BaseModel):
    """One call the requester's goal consists of, with symbolic arguments.

    An argument value may be a literal, ``"$ref"`` (the resolved id of an
    ``EntityRef``), ``"$ref.field"`` (a field of the fetched record) or a
    ``FormattedValue`` the agent must convert.

    Attributes:
        tool: Tool name.
        arguments: Argument name to literal, symbolic or formatted value.
        when: Optional ``"$name.field"`` condition: the call is made only when that value
            (from a fetched record or an earlier call's output) is truthy, e.g.
            ``"$check_refund_eligibility.eligible"``; prefix ``!`` to negate.
        turn: In a conversation of given user turns, the turn (from 0) whose message asks for the call; ``None``
            for a task answered in one reply (left out of the task's file then).
    """

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    when: str | None = None
    turn: int | None = Field(default=None, ge=0)

    @model_serializer(mode="wrap")
    def _leave_out_unset_turn(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_unset_turn(self.turn, handler(self))


class Intent(BaseModel):
    """The structured reading of a prompt, as an agent would parse it.

    It states what the requester wants, never how the world answers: no
    resolved ids of text mentions, no prerequisite steps, no expected values.

    Attributes:
        goal: Short goal name, e.g. ``refund_order``.
        refs: Entity references to resolve.
        calls: The goal's own calls, in order.
        report: Values the reply should state: ``"$ref.field"`` paths into fetched
            records, or ``"$tool.field"`` paths into the output of a call made in the
            episode (goal calls and prerequisites).
    """

    model_config = ConfigDict(extra="forbid")

    goal: str
    refs: list[EntityRef] = Field(default_factory=list)
    calls: list[IntendedCall] = Field(default_factory=list)
    report: list[str] = Field(default_factory=list)


class GoldStep(BaseModel):
    """One step of a task's gold program: a tool call with literal arguments.

    Attributes:
        tool: Tool name.
        arguments: Literal arguments.
        turn: In a conversation of given user turns, the turn (from 0) the call answers; ``None`` otherwise (left
            out of the task's file then).
    """

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    turn: int | None = Field(default=None, ge=0)

    @model_serializer(mode="wrap")
    def _leave_out_unset_turn(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_unset_turn(self.turn, handler(self))


def _without_unset_turn(turn: int | None, data: dict[str, Any]) -> dict[str, Any]:
    """A serialized call, without ``turn`` when it has none (files written before turns existed keep their ids)."""
    if turn is None:
        data.pop("turn", None)
    return data


class GoldProgram(BaseModel):
    """A known-good solution: the calls in order and the final reply."""

    model_config = ConfigDict(extra="forbid")

    steps: list[GoldStep] = Field(default_factory=list)
    reply: str = ""


class StateAssertion(BaseModel):
    """A read-only SQL query over the final world must return ``expected``.

    The query's rows are compared as a list of lists after JSON normalisation.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["state"] = "state"
    description: str
    sql: str
    expected: list[list[Any]]


class CallPattern(BaseModel):
    """Matches a successful call of ``tool`` whose arguments include ``arguments``."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TraceAssertion(BaseModel):
    """Required calls and ordering constraints over the trace.

    Attributes:
        required: Patterns that must each match at least one successful call.
        order: Pairs ``(a, b)`` of indices into ``required``: the first match of
            ``a`` must come before the first match of ``b``.
        forbidden: Patterns that must match no successful call.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["trace"] = "trace"
    description: str
    required: list[CallPattern] = Field(default_factory=list)
    order: list[tuple[int, int]] = Field(default_factory=list)
    forbidden: list[CallPattern] = Field(default_factory=list)


class WriteScope(BaseModel):
    """Rows a task may change.

    Attributes:
        table: Table name.
        ids: Primary-key values that may change; ``None`` allows any row.
        columns: Columns that may change on an updated row; ``None`` allows any.
        insert: Whether new rows may be inserted.
        delete: Whether rows may be deleted.
    """

    model_config = ConfigDict(extra="forbid")

    table: str
    ids: list[str] | None = None
    columns: list[str] | None = None
    insert: bool = False
    delete: bool = False


class SideEffectAssertion(BaseModel):
    """Every changed row must stay inside the allowed write-set."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["side_effects"] = "side_effects"
    description: str = "no changes outside the allowed write-set"
    allowed: list[WriteScope] = Field(default_factory=list)


class ResponseAssertion(BaseModel):
    """The reply states required facts and leaks nothing internal.

    Attributes:
        must_include: Each entry is a list of alternatives; at least one
            alternative of every entry must appear (compared as folded words: case,
            compatibility forms, homoglyphs, invisible characters and separators aside).
        must_not_include: Phrases that must not appear (compared as ``must_include``);
            an entry that is a value (a token, a number: see ``arena.core.verify``) must
            not appear in any spelling or encoding either.
        forbidden_patterns: Regular expressions (e.g. internal id formats)
            that must not match the reply or any view of it (case-insensitive); what
            they match in the episode's tool outputs must not appear in any spelling
            or encoding either.
        max_chars: Longest reply accepted (``None``: no limit); a reply padded with
            whole records fails.
        id_pattern: Regular expression of the world's record id formats (``None``: no id rule),
            matched case-insensitively against the reply's folded text and against each
            run of its tokens written compact (``ord10234``: see ``arena.core.ids``). Every
            id the reply names, by this pattern or as one of the world's own ids however it
            is spelled, must be in ``allowed_ids`` or be the id of a record the episode's
            own successful writes returned: a reply that states other entities' records
            fails. With an id rule, a reply that also states another record's value for a
            fact it must state (a hedge), or more values of the records read than the facts
            asked for allow (a dump), fails too.
        allowed_ids: The ids a reply may name (the request's, the gold reply's and
            the gold program's arguments).
        change_claims: ``None``: no claim rule. A list: the task must change nothing,
            and a reply that states or implies a change was made fails (see
            ``arena.core.claims``); the list holds the verbs of the actions the request
            asks for (``cancel``, ``refund``), added to the generic vocabulary of change.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["response"] = "response"
    description: str
    must_include: list[list[str]] = Field(default_factory=list)
    must_not_include: list[str] = Field(default_factory=list)
    forbidden_patterns: list[str] = Field(default_factory=list)
    max_chars: int | None = Field(default=None, ge=1)
    id_pattern: str | None = Field(default=None, max_length=500)
    allowed_ids: list[str] = Field(default_factory=list)
    change_claims: list[str] | None = None

    @field_validator("forbidden_patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            _compiles(pattern)
        return patterns

    @field_validator("id_pattern")
    @classmethod
    def _id_pattern_compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            _compiles(pattern)
        return pattern


def _compiles(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"pattern {pattern[:80]!r} is not a valid regular expression: {exc}") from None


class DomainAssertion(BaseModel):
    """A check the gym itself runs, looked up by name in ``Domain.checks`` (like a tool), with data parameters.

    For a benchmark whose verdict is not a query over the final world (BFCL checks the world and the call results
    at the end of every turn), the gym names the check and gives it its expectations as data; the pack stays data.

    Attributes:
        check: The check's name in the gym's ``Domain.checks``.
        description: What it checks.
        params: The check's expectations (JSON values).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["domain"] = "domain"
    check: str
    description: str
    params: dict[str, Any] = Field(default_factory=dict)


Assertion = Annotated[
    StateAssertion | TraceAssertion | SideEffectAssertion | ResponseAssertion | DomainAssertion,
    Field(discriminator="kind"),
]


class Task(BaseModel):
    """One task of a pack: the prompt, who asks, the gold program and the assertions.

    Attributes:
        id: Task id, unique within the pack; also the file stem under ``tasks/``.
        prompt: The request as the agent receives it.
        persona: Who the agent acts as.
        split: ``train`` or ``heldout``.
        category: Task family, e.g. ``information_retrieval``.
        tags: Free tags naming what the task exercises (e.g. ``search_misses``).
        intent: Structured reading of the prompt (see ``Intent``).
        faults: Ids of the pack's faults that fire in this task.
        gold: A known-good solution.
        assertions: Between 3 and 12 assertions judging the final episode (at least 1 for a task with a
            ``source``: its benchmark's verdict decides how many checks it has).
        conversation: The conversation the task is played as (its user and what it must hold); ``None`` for a
            task answered with one reply.
        source: Where a task written outside gymloop comes from; ``None`` for gymloop's own.
        tools: The pack's tools this task offers (a benchmark's task may offer only some); ``None``: all of them.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,80}$")
    prompt: str
    persona: Persona
    split: Split
    category: str
    tags: list[str] = Field(default_factory=list)
    intent: Intent
    faults: list[str] = Field(default_factory=list)
    gold: GoldProgram
    source: TaskSource | None = None
    assertions: list[Assertion] = Field(min_length=1, max_length=12)
    conversation: Conversation | None = None
    tools: list[str] | None = None

    @field_validator("assertions")
    @classmethod
    def _enough_assertions(cls, value: list[Assertion], info: ValidationInfo) -> list[Assertion]:
        if info.data.get("source") is None and len(value) < 3:
            raise ValueError(f"List should have at least 3 items after validation, not {len(value)} (only a task "
                             "from another benchmark, with a source, keeps that benchmark's verdict and fewer checks)")
        return value

    def public_view(self) -> dict[str, Any]:
        """Return what an agent may see of this task: prompt, persona and intent."""
        return {
            "task_id": self.id,
            "prompt": self.prompt,
            "persona": self.persona.model_dump(),
            "intent": self.intent.model_dump(),
        }

"""What tool calls return, what the trace keeps and what verification concludes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ErrorKind = Literal["validation", "permission", "policy", "not_found", "fault", "conflict", "ended"]
"""Kinds of tool errors an agent can receive; the trace keeps them for diagnosis."""

FaultKind = Literal["timeout", "rate_limit", "data_conflict"]
"""Kinds of injected failures."""


class ToolErrorInfo(BaseModel):
    """A structured tool error, returned to the agent instead of a result.

    Attributes:
        kind: Error class (see ``ErrorKind``).
        message: Human-readable explanation, naming the bad value.
        retryable: Whether the same call may succeed if repeated.
        fault: The injected fault kind when ``kind == "fault"``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ErrorKind
    message: str
    retryable: bool = False
    fault: FaultKind | None = None


class ToolResult(BaseModel):
    """The answer to one tool call: either ``output`` or ``error``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    output: Any = None
    error: ToolErrorInfo | None = None


class TraceStep(BaseModel):
    """One tool call as the trace records it.

    Attributes:
        index: Position in the episode, from 0.
        tool: Tool name as the agent called it (may be unknown to the domain).
        arguments: Arguments as received; a non-object payload is kept under ``_raw``.
        ok: Whether the call succeeded.
        output: The tool's output when ``ok``.
        error: The error when not ``ok``.
        clock: Episode clock (ISO timestamp) at the call; deterministic.
        write: Whether the tool is a write tool.
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    tool: str
    arguments: dict[str, Any]
    ok: bool
    output: Any = None
    error: ToolErrorInfo | None = None
    clock: str
    write: bool = False


class RowChange(BaseModel):
    """One row the episode changed.

    Attributes:
        table: Table name.
        key: Primary-key value (or rowid when the table has none).
        op: ``insert``, ``update`` or ``delete``.
        columns: Changed columns (``update`` only).
        allowed: Whether the task's write-set covers the change.
    """

    model_config = ConfigDict(extra="forbid")

    table: str
    key: str
    op: Literal["insert", "update", "delete"]
    columns: list[str] = Field(default_factory=list)
    allowed: bool = True


class AssertionResult(BaseModel):
    """The outcome of one assertion.

    Attributes:
        index: Position of the assertion in the task.
        kind: ``state``, ``trace``, ``side_effects``, ``response`` or ``domain`` (a check the gym runs).
        description: The assertion's description.
        passed: Whether it held.
        detail: Why it failed (empty when it held).
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    kind: Literal["state", "trace", "side_effects", "response", "domain"]
    description: str
    passed: bool
    detail: str = ""


class Verdict(BaseModel):
    """The reward signals of one episode.

    Attributes:
        passed: Every assertion held.
        score: Fraction of assertions that held.
        side_effect_penalty: 0 when no unintended change, growing by 0.25 per
            unintended row up to 1.
        results: Each assertion's result, in task order.
        changes: Every changed row, with whether it was allowed.
        unjudged: Checks of the task that need a judge model and had none (a conversation's ``judge``
            statements): left out of ``passed`` and ``score``, and reported, never counted as held.
    """

    model_config = ConfigDict(extra="forbid")

    passed: bool
    score: float
    side_effect_penalty: float = 0.0
    results: list[AssertionResult] = Field(default_factory=list)
    changes: list[RowChange] = Field(default_factory=list)
    unjudged: list[str] = Field(default_factory=list)

    @property
    def unintended_changes(self) -> list[RowChange]:
        """Changed rows outside the task's write-set."""
        return [c for c in self.changes if not c.allowed]

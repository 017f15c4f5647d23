"""What every BFCL class's tools share: typed numbers, documents in rows, counters and the world's random state.

Every task's records are keyed by the task (``ctx.task_id``): the world holds every task's starting world, and a
task's tools only ever read and write its own rows. Records whose shape BFCL leaves free (a ticket, a tweet, an
order) are kept as JSON documents in their rows, in BFCL's field order, so a tool returns them as BFCL does.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import WithJsonSchema

from arena.core.toolkit import InvalidArgument, ToolContext, ToolError

Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
"""A number argument that keeps whether it was written as an integer or not (BFCL's results show the difference:
``{"result": 3}`` and ``{"result": 3.0}`` are different results)."""

RecordKey = Annotated[int | str, WithJsonSchema({"type": "integer"})]
"""An id BFCL documents as an integer; some of BFCL's own records use text ids (``ticket_001``), and its functions
look them up as given."""

T = TypeVar("T")


class PythonError(InvalidArgument):
    """A call BFCL's function would fail with an exception: the agent sees the exception's message."""


PYTHON_ERRORS = (AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError,
                 RecursionError)
"""Exceptions a BFCL function raises on data it does not expect (a ticket without a status, a message that is a
list); BFCL's runner turns them into the call's result, and so does the gym."""


def as_bfcl(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A BFCL function's implementation whose exceptions on unexpected data are the call's error, as in BFCL."""

    @functools.wraps(fn)
    def run(ctx: ToolContext, **arguments: Any) -> Any:
        try:
            return fn(ctx, **arguments)
        except ToolError:
            raise
        except PYTHON_ERRORS as exc:
            raise PythonError(str(exc)) from None

    return run


def dumps(value: Any) -> str:
    """A JSON document as stored in a row (keys in their order, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


def loads(text: str | None) -> Any:
    """A stored JSON document (``None`` stays ``None``)."""
    return None if text is None else json.loads(text)


def next_value(ctx: ToolContext, table: str, column: str) -> int:
    """One more than the task's largest ``column`` in ``table`` (0 for the first)."""
    row = ctx.one(f'SELECT COALESCE(MAX("{column}"), -1) + 1 AS n FROM "{table}" WHERE task = ?', (ctx.task_id,))
    return int(row["n"]) if row else 0


def draw(ctx: ToolContext, owner: str, use: Callable[[random.Random], T]) -> T:
    """Draw from the world's random generator of one class of the task, keeping its state in the world.

    BFCL's classes draw ids, timestamps and readings from a ``random.Random`` seeded by their configuration; the
    world keeps that generator's whole state, so every draw is the one BFCL's class would make.
    """
    row = ctx.one("SELECT state FROM rng_states WHERE id = ?", (f"{ctx.task_id}/{owner}",))
    if row is None:
        raise LookupError(f"no random state for {owner} in task {ctx.task_id}")
    rng = random.Random()
    rng.setstate(_state_tuple(json.loads(row["state"])))
    value = use(rng)
    ctx.conn.execute("UPDATE rng_states SET state = ? WHERE id = ?",
                     (json.dumps(rng.getstate()), f"{ctx.task_id}/{owner}"))
    return value


def seeded_state(seed: int) -> str:
    """The stored state of a generator seeded with ``seed``."""
    return json.dumps(random.Random(seed).getstate())


def _state_tuple(state: list[Any]) -> tuple[Any, ...]:
    version, internal, gauss = state
    return version, tuple(internal), gauss

"""The authoring kit: what every gym is written with (docs/writing-a-gym.md walks through it).

A gym is a seeded world generator, ``@tool`` functions (schemas from signatures and docstrings; tool errors
``InvalidArgument``, ``NotFound``, ``PolicyViolation``, ``Conflict``), a policy document, task templates and a knob
model; :func:`make_domain` assembles them into the ``Domain`` the runtime, the factory and the CLI use. A template
returns :class:`Draft` s that declare only what the prompt says, the records it refers to (:func:`ref`), the goal's
calls (:func:`goal`), what the reply must state and the checks (:func:`state`, :func:`calls`, :func:`writes`,
:func:`says`); the gold program is the expert policy's unless the draft writes it (:func:`step`). Knobs share one
vocabulary (:data:`VOCABULARY`, :data:`WEAKNESS_KNOBS`): a gym honours a knob or declares why it cannot.
"""

from arena.authoring.checks import (
    calls,
    goal,
    quote,
    reads_only,
    ref,
    says,
    scope,
    state,
    step,
    writes,
)
from arena.authoring.domain import make_domain
from arena.authoring.faults import fault_id, inject
from arena.authoring.formats import (
    amounts,
    cents,
    dates,
    iso_date,
    legacy_amount,
    legacy_date,
    positive_amount,
    read_amount,
    read_date,
)
from arena.authoring.internal import InternalData, InternalItem
from arena.authoring.knobs import (
    FAULT_TAGS,
    TAGS,
    VOCABULARY,
    WEAKNESS_KNOBS,
    GymKnobs,
    WeaknessKnobs,
    kind_refusal,
    knob_refusal,
    parse_knobs,
    targetable_kinds,
)
from arena.authoring.picks import day_between, mix, nth, pick, pick_where, shuffled
from arena.authoring.records import WorldRows, fetch, insert_rows, select
from arena.authoring.reply_rules import guard_replies
from arena.authoring.search import SEARCH_LIMIT, IndexRow, add_to_index, finds_only, index_row, search, write_index
from arena.authoring.splits import assign_splits
from arena.authoring.template import Draft, Fault, Template, WorldView
from arena.core.domain import STRONG, WEAK
from arena.core.task import (
    Assertion,
    EntityRef,
    FormattedValue,
    IntendedCall,
    Intent,
    Persona,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    TraceAssertion,
    WriteScope,
)
from arena.core.toolkit import Conflict, InvalidArgument, NotFound, PolicyViolation, ToolContext, tool

__all__ = [
    "FAULT_TAGS",
    "SEARCH_LIMIT",
    "STRONG",
    "TAGS",
    "VOCABULARY",
    "WEAK",
    "WEAKNESS_KNOBS",
    "Assertion",
    "Conflict",
    "Draft",
    "EntityRef",
    "Fault",
    "FormattedValue",
    "GymKnobs",
    "IntendedCall",
    "IndexRow",
    "Intent",
    "InternalData",
    "InternalItem",
    "InvalidArgument",
    "NotFound",
    "Persona",
    "PolicyViolation",
    "ResponseAssertion",
    "SideEffectAssertion",
    "StateAssertion",
    "Template",
    "ToolContext",
    "TraceAssertion",
    "WeaknessKnobs",
    "WorldRows",
    "WorldView",
    "WriteScope",
    "add_to_index",
    "amounts",
    "assign_splits",
    "calls",
    "cents",
    "dates",
    "day_between",
    "fault_id",
    "fetch",
    "finds_only",
    "goal",
    "guard_replies",
    "index_row",
    "inject",
    "insert_rows",
    "iso_date",
    "kind_refusal",
    "knob_refusal",
    "legacy_amount",
    "legacy_date",
    "make_domain",
    "mix",
    "nth",
    "parse_knobs",
    "pick",
    "pick_where",
    "positive_amount",
    "quote",
    "read_amount",
    "read_date",
    "reads_only",
    "ref",
    "says",
    "scope",
    "search",
    "select",
    "shuffled",
    "state",
    "step",
    "targetable_kinds",
    "tool",
    "write_index",
    "writes",
]

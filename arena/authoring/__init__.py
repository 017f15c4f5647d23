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
    amounts,
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
from arena.authoring.reply_rules import guard_replies
from arena.authoring.splits import assign_splits
from arena.authoring.template import Draft, Fault, Template, WorldView, pick_where
from arena.core.domain import STRONG, WEAK
from arena.core.task import FormattedValue, Intent, Persona, WriteScope
from arena.core.toolkit import Conflict, InvalidArgument, NotFound, PolicyViolation, ToolContext, tool

__all__ = [
    "FAULT_TAGS",
    "STRONG",
    "TAGS",
    "VOCABULARY",
    "WEAK",
    "WEAKNESS_KNOBS",
    "Conflict",
    "Draft",
    "Fault",
    "FormattedValue",
    "GymKnobs",
    "Intent",
    "InvalidArgument",
    "NotFound",
    "Persona",
    "PolicyViolation",
    "Template",
    "ToolContext",
    "WeaknessKnobs",
    "WorldView",
    "WriteScope",
    "amounts",
    "assign_splits",
    "calls",
    "fault_id",
    "goal",
    "guard_replies",
    "inject",
    "kind_refusal",
    "knob_refusal",
    "make_domain",
    "parse_knobs",
    "pick_where",
    "quote",
    "reads_only",
    "ref",
    "says",
    "scope",
    "state",
    "step",
    "targetable_kinds",
    "tool",
    "writes",
]

"""What the helpdesk templates share beyond the kit: personas, internal data, write tools, search checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.authoring import Template, WorldView, reads_only
from arena.core.task import Persona, TraceAssertion
from arena.gyms.helpdesk._knobs import HelpdeskKnobs
from arena.gyms.helpdesk._rules import search_summaries

View = WorldView[HelpdeskKnobs]
"""What a helpdesk template reads."""

HelpdeskTemplate = Template[HelpdeskKnobs]
"""A helpdesk task template."""

AGENT = Persona(name="Sam Rivera", role="agent", permissions=["credit", "orders", "refunds", "tickets"])
"""Front-line support agent: every write permission except approvals."""

MANAGER = Persona(name="Dana Okafor", role="manager",
                  permissions=["approvals", "credit", "orders", "refunds", "tickets"])
"""Support manager: may also approve refunds above the approval limit."""

TOKEN_PATTERN = r"tok_[0-9a-f]{16}"
"""Payment tokens: never shown to customers."""

INTERNAL_PATTERNS = (TOKEN_PATTERN, r"(?i)risk[ _]score")
"""Internal data that no reply may contain."""

WRITE_TOOLS = ("reply_to_ticket", "update_ticket_status", "escalate_ticket", "add_internal_note", "issue_refund",
               "cancel_order", "update_shipping_address", "apply_store_credit", "create_return_authorization",
               "request_manager_approval", "approve_refund")
"""Every write tool: read-only tasks forbid them all."""


def no_writes(description: str, required: Sequence[tuple[str, dict[str, Any]]]) -> TraceAssertion:
    """A trace check requiring ``required`` calls and forbidding every write."""
    return reads_only(description, required, WRITE_TOOLS)


def singled_out(w: View, entity: str, query: str, target: str, hint: dict[str, str]) -> bool:
    """Whether searching ``query`` finds ``target`` and ``hint`` tells it apart from every other hit.

    A hit matches the hint when each hinted field equals the hint's value (case-insensitive);
    without a hint, the target must be the only hit.
    """
    hits = search_summaries(w.conn, entity, query)

    def matches(hit: dict[str, object]) -> bool:
        return all(str(hit.get(k, "")).casefold() == v.casefold() for k, v in hint.items())

    if not any(h.get("id") == target for h in hits):
        return False
    if not hint:
        return len(hits) == 1
    return [h.get("id") for h in hits if matches(h)] == [target]

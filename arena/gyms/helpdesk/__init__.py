"""The helpdesk gym: the customer-support back office of an online PC-components retailer.

``DOMAIN`` is what ``arena.gyms.get_domain("helpdesk")`` returns.
"""

from __future__ import annotations

from pathlib import Path

from arena.authoring.reply_rules import guard_replies
from arena.core.domain import STRONG, WEAK, Domain, Knobs, World
from arena.core.toolkit import collect_tools
from arena.gyms.helpdesk import tools as _tools
from arena.gyms.helpdesk._knobs import KNOB_DOCS, HelpdeskKnobs, parse_knobs
from arena.gyms.helpdesk._rules import CLOCK_START
from arena.gyms.helpdesk.tasks import CATEGORIES, TEMPLATES, build_tasks
from arena.gyms.helpdesk.world import build_world

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
"""The business rules the agent is given."""

DEPENDENCIES: list[tuple[str, str, int]] = [
    ("check_refund_eligibility", "issue_refund", STRONG),
    ("check_refund_eligibility", "create_return_authorization", STRONG),
    ("check_refund_eligibility", "request_manager_approval", STRONG),
    ("request_manager_approval", "approve_refund", WEAK),
    ("approve_refund", "issue_refund", WEAK),
    ("get_order", "cancel_order", WEAK),
    ("get_order", "update_shipping_address", WEAK),
    ("get_order", "reply_to_ticket", WEAK),
    ("get_ticket", "reply_to_ticket", WEAK),
    ("get_ticket", "update_ticket_status", WEAK),
    ("get_ticket", "escalate_ticket", WEAK),
    ("get_customer", "apply_store_credit", WEAK),
    ("search_customers", "get_customer", WEAK),
    ("search_orders", "get_order", WEAK),
    ("search_tickets", "get_ticket", WEAK),
    ("search_products", "get_product", WEAK),
    ("get_product", "check_compatibility", WEAK),
]
"""Tool dependency edges: STRONG for what the policy requires first, WEAK for what usually comes first."""


def generate(seed: int, knobs: Knobs) -> World:
    """Generate the helpdesk world and its tasks for ``seed`` and ``knobs``.

    Raises:
        ValueError: An unknown knob or a bad knob value.
    """
    parsed = parse_knobs(knobs)
    conn = build_world(seed, parsed)
    try:
        tasks, faults = build_tasks(conn, seed, parsed)
        state = conn.serialize()
    finally:
        conn.close()
    return World(state_db=state, tasks=guard_replies(tasks, world=state, tools=collect_tools(_tools)),
                 faults=faults, clock_start=CLOCK_START)


DOMAIN = Domain(
    name="helpdesk",
    description="Customer-support back office of an online PC-components retailer: orders, refunds, tickets.",
    tools=collect_tools(_tools),
    policy=POLICY,
    dependencies=DEPENDENCIES,
    generate=generate,
    knobs=dict(KNOB_DOCS),
)
"""The helpdesk domain."""

__all__ = ["CATEGORIES", "DEPENDENCIES", "DOMAIN", "POLICY", "TEMPLATES", "HelpdeskKnobs", "build_tasks",
           "build_world", "generate", "parse_knobs"]

"""The helpdesk gym: the customer-support back office of an online PC-components retailer.

``DOMAIN`` is what ``arena.core.domains.get_domain("helpdesk")`` returns, assembled by the authoring kit.
"""

from __future__ import annotations

from pathlib import Path

from arena.authoring import STRONG, WEAK, InternalData, InternalItem, make_domain
from arena.gyms.helpdesk import tools as _tools
from arena.gyms.helpdesk.rules import CLOCK_START
from arena.gyms.helpdesk.tasks import CATEGORIES, TEMPLATES
from arena.gyms.helpdesk.tasks_common import AGENT, TOKEN_PATTERN
from arena.gyms.helpdesk.world import HelpdeskKnobs, build_world

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

DOMAIN = make_domain(
    name="helpdesk",
    description="Customer-support back office of an online PC-components retailer: orders, refunds, tickets.",
    tools=_tools,
    policy=POLICY,
    dependencies=DEPENDENCIES,
    world=build_world,
    templates=TEMPLATES,
    knobs=HelpdeskKnobs,
    clock_start=CLOCK_START,
    persona=AGENT,
    internal=InternalData(items=(
        InternalItem(what="payment tokens", fields=("payment_token",), patterns=(TOKEN_PATTERN,)),
        InternalItem(what="risk or fraud scores", fields=("risk_score",), patterns=(r"(?i)risk[ _]score",)),
        InternalItem(what="internal notes", fields=("internal_notes",)),
    )),
)
"""The helpdesk domain."""

__all__ = ["CATEGORIES", "DEPENDENCIES", "DOMAIN", "POLICY", "TEMPLATES", "HelpdeskKnobs", "build_world"]

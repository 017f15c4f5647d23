"""The procurement gym: purchase-to-pay in an ERP (vendors, orders, approvals, receipts, invoices, payments).

Exports ``DOMAIN``, the gym's tools, policy, dependency graph, generator and knobs.
"""

from __future__ import annotations

from pathlib import Path

from arena.authoring.reply_rules import guard_replies
from arena.core.domain import STRONG, WEAK, Domain, Knobs, World
from arena.gyms.procurement._knobs import KNOB_DOCS, parse_knobs
from arena.gyms.procurement._rules import CLOCK_START
from arena.gyms.procurement.tasks import TEMPLATES, build_tasks
from arena.gyms.procurement.tools import TOOLS
from arena.gyms.procurement.world import build_world

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
"""The business rules the agent is given."""

DEPENDENCIES: list[tuple[str, str, int]] = [
    ("match_invoice", "pay_invoice", STRONG),
    ("record_goods_receipt", "pay_invoice", STRONG),
    ("get_vendor", "create_purchase_order", STRONG),
    ("check_budget", "submit_for_approval", STRONG),
    ("get_delegation", "approve_purchase_order", STRONG),
    ("upload_compliance_document", "activate_vendor", STRONG),
    ("match_invoice", "hold_invoice", WEAK),
    ("search_invoices", "pay_invoice", WEAK),
    ("get_invoice", "pay_invoice", WEAK),
    ("get_invoice", "match_invoice", WEAK),
    ("get_invoice", "hold_invoice", WEAK),
    ("get_vendor", "activate_vendor", WEAK),
    ("get_vendor", "upload_compliance_document", WEAK),
    ("get_vendor", "suspend_vendor", WEAK),
    ("search_vendors", "get_vendor", WEAK),
    ("search_invoices", "get_invoice", WEAK),
    ("search_requisitions", "get_requisition", WEAK),
    ("search_employees", "get_employee", WEAK),
    ("get_requisition", "create_purchase_order", WEAK),
    ("get_purchase_order", "submit_for_approval", WEAK),
    ("get_purchase_order", "approve_purchase_order", WEAK),
    ("get_purchase_order", "record_goods_receipt", WEAK),
    ("get_purchase_order", "convert_currency", WEAK),
    ("get_budget", "create_requisition", WEAK),
]
"""Tool dependency edges: STRONG for prerequisites the policy requires, WEAK for the usual read first."""


def generate(seed: int, knobs: Knobs) -> World:
    """Generate the procurement world and its tasks for ``seed`` and ``knobs``.

    Raises:
        ValueError: An unknown knob or a bad knob value.
    """
    settings = parse_knobs(knobs)
    conn = build_world(seed, knobs)
    try:
        tasks, faults = build_tasks(conn, seed, settings)
        state_db = conn.serialize()
    finally:
        conn.close()
    return World(state_db=state_db, tasks=guard_replies(tasks, world=state_db, tools=TOOLS), faults=faults,
                 clock_start=CLOCK_START)


DOMAIN = Domain(
    name="procurement",
    description="Purchase-to-pay in an ERP: vendor onboarding, purchase orders, approvals, receipts, "
    "three-way matching and payments.",
    tools=TOOLS,
    policy=POLICY,
    dependencies=DEPENDENCIES,
    generate=generate,
    knobs=dict(KNOB_DOCS),
)
"""The procurement gym."""

__all__ = ["DEPENDENCIES", "DOMAIN", "POLICY", "TEMPLATES", "TOOLS", "build_tasks", "build_world", "generate"]

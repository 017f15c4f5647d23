"""The procurement gym: purchase-to-pay in an ERP (vendors, orders, approvals, receipts, invoices, payments).

``DOMAIN`` is what ``arena.core.domains.get_domain("procurement")`` returns, assembled by the authoring kit.
"""

from __future__ import annotations

from pathlib import Path

from arena.authoring import STRONG, WEAK, InternalData, InternalItem, make_domain
from arena.gyms.procurement import tools as _tools
from arena.gyms.procurement.rules import CLOCK_START
from arena.gyms.procurement.tasks import TEMPLATES
from arena.gyms.procurement.tasks_common import BUYER, RISK_PATTERN
from arena.gyms.procurement.world import ProcurementKnobs, build_world

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

DOMAIN = make_domain(
    name="procurement",
    description="Purchase-to-pay in an ERP: vendor onboarding, purchase orders, approvals, receipts, "
    "three-way matching and payments.",
    tools=_tools,
    policy=POLICY,
    dependencies=DEPENDENCIES,
    world=build_world,
    templates=TEMPLATES,
    knobs=ProcurementKnobs,
    clock_start=CLOCK_START,
    persona=BUYER,
    internal=InternalData(items=(
        InternalItem(what="vendor bank account numbers", fields=("bank_account",)),
        InternalItem(what="internal vendor risk ratings", fields=("risk_rating",), patterns=(RISK_PATTERN,)),
    )),
)
"""The procurement gym."""

__all__ = ["DEPENDENCIES", "DOMAIN", "POLICY", "TEMPLATES", "ProcurementKnobs", "build_world"]

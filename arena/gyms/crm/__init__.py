"""The CRM gym: accounts, contacts, opportunities, quotes and discount approvals across sales territories."""

from __future__ import annotations

from pathlib import Path

from arena.authoring import STRONG, WEAK, InternalData, InternalItem, make_domain

from . import tools
from .tasks import DEFAULT_PERSONA, TEMPLATES
from .world import CLOCK_START, CrmKnobs, build_world

DOMAIN = make_domain(
    name="crm",
    description="A sales CRM: accounts, contacts, opportunities, quotes with discount approvals, territories.",
    tools=tools,
    policy=(Path(__file__).parent / "policy.md").read_text(encoding="utf-8"),
    dependencies=[
        ("check_quote_discount", "send_quote", STRONG),
        ("check_quote_discount", "request_discount_approval", STRONG),
        ("request_discount_approval", "approve_discount", STRONG),
        ("search_accounts", "get_account", WEAK),
        ("search_contacts", "get_contact", WEAK),
        ("search_opportunities", "get_opportunity", WEAK),
        ("search_quotes", "get_quote", WEAK),
        ("search_users", "get_user", WEAK),
        ("get_account", "update_account_phone", WEAK),
        ("get_account", "reassign_account", WEAK),
        ("get_account", "create_opportunity", WEAK),
        ("get_opportunity", "update_opportunity_close_date", WEAK),
        ("get_opportunity", "update_opportunity_amount", WEAK),
        ("get_opportunity", "update_opportunity_stage", WEAK),
        ("get_opportunity", "close_opportunity", WEAK),
        ("get_quote", "set_quote_discount", WEAK),
        ("get_contact", "log_activity", WEAK),
    ],
    world=build_world,
    templates=TEMPLATES,
    knobs=CrmKnobs,
    clock_start=CLOCK_START,
    persona=DEFAULT_PERSONA,
    internal=InternalData(items=(
        InternalItem(what="risk rating", fields=("risk_rating",), patterns=(r"\bRR-[1-5]\b",)),
        InternalItem(what="internal floor price", fields=("internal_floor_price",)),
    )),
)
"""The CRM gym, as gymloop runs it."""

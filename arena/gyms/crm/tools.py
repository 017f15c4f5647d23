"""The CRM's tools: typed functions whose signatures and docstrings are their schemas.

They live in three modules (accounts, contacts and users; opportunities; quotes) and are gathered here, the module
``make_domain`` reads.
"""

from __future__ import annotations

from .tools_accounts import (
    flag_duplicate_account,
    get_account,
    get_contact,
    get_user,
    list_territories,
    log_activity,
    reassign_account,
    search_accounts,
    search_contacts,
    search_users,
    update_account_phone,
)
from .tools_quotes import (
    approve_discount,
    check_quote_discount,
    get_discount_approval,
    get_quote,
    request_discount_approval,
    search_quotes,
    send_quote,
    set_quote_discount,
)
from .tools_sales import (
    close_opportunity,
    create_opportunity,
    get_opportunity,
    search_opportunities,
    update_opportunity_amount,
    update_opportunity_close_date,
    update_opportunity_stage,
)

__all__ = [
    "approve_discount",
    "check_quote_discount",
    "close_opportunity",
    "create_opportunity",
    "flag_duplicate_account",
    "get_account",
    "get_contact",
    "get_discount_approval",
    "get_opportunity",
    "get_quote",
    "get_user",
    "list_territories",
    "log_activity",
    "reassign_account",
    "request_discount_approval",
    "search_accounts",
    "search_contacts",
    "search_opportunities",
    "search_quotes",
    "search_users",
    "send_quote",
    "set_quote_discount",
    "update_account_phone",
    "update_opportunity_amount",
    "update_opportunity_close_date",
    "update_opportunity_stage",
]

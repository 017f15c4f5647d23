"""The CRM's task templates, in a fixed order (their names are the stems of the task ids)."""

from __future__ import annotations

from arena.authoring import Template

from .tasks_accounts import flag_duplicate, log_call, not_owner, out_of_territory, reassign, update_phone
from .tasks_common import DEFAULT_PERSONA
from .tasks_lookup import (
    account_brief,
    account_owner,
    contact_phone,
    opportunity_amount,
    opportunity_stage,
    quote_status,
)
from .tasks_opportunities import close_won, close_won_unquoted, new_opportunity, reschedule_close, update_amount
from .tasks_pipeline import close_lost, stage_advance
from .tasks_quotes import approval_status, change_discount, send_quote, send_unapproved

TEMPLATES = (
    Template("account_owner", "information_retrieval", (), account_owner),
    Template("opportunity_stage", "information_retrieval", ("id_given_search_misses",), opportunity_stage),
    Template("contact_phone", "information_retrieval", (), contact_phone),
    Template("opportunity_amount", "information_retrieval", ("id_given_search_misses",), opportunity_amount),
    Template("quote_status", "customer_communication", ("leak_trap",), quote_status),
    Template("account_brief", "customer_communication", ("leak_trap",), account_brief),
    Template("log_call", "customer_communication", (), log_call),
    Template("approval_status", "customer_communication", ("id_given_search_misses",), approval_status),
    Template("send_quote", "policy_reasoning", ("prerequisite",), send_quote, depth=3),
    Template("send_unapproved", "policy_reasoning", ("prerequisite", "side_effect_trap"), send_unapproved,
             depth=1),
    Template("close_won_unquoted", "policy_reasoning", ("id_given_search_misses", "side_effect_trap"),
             close_won_unquoted),
    Template("not_owner", "policy_reasoning", ("side_effect_trap",), not_owner),
    Template("out_of_territory", "policy_reasoning", ("side_effect_trap",), out_of_territory),
    Template("update_phone", "multi_step_workflow", (), update_phone),
    Template("reassign_account", "multi_step_workflow", (), reassign),
    Template("flag_duplicate", "multi_step_workflow", ("near_duplicate",), flag_duplicate),
    Template("reschedule_close", "multi_step_workflow", (), reschedule_close),
    Template("update_amount", "multi_step_workflow", (), update_amount),
    Template("new_opportunity", "multi_step_workflow", (), new_opportunity),
    Template("close_won", "multi_step_workflow", (), close_won),
    Template("change_discount", "multi_step_workflow", ("side_effect_trap",), change_discount),
    Template("stage_advance", "multi_step_workflow", (), stage_advance),
    Template("close_lost", "multi_step_workflow", (), close_lost),
)
"""Every template of the CRM."""

__all__ = ["DEFAULT_PERSONA", "TEMPLATES"]

"""Helpdesk task templates, in a fixed order, and the task categories.

Each template (see ``TEMPLATES``) picks suitable entities from the generated world with its own ``Random`` and
declares up to ``tasks_per_template`` drafts, each with a gold program and 3-12 checks whose expected values come
from the world itself; the authoring kit (``arena.authoring.make_domain``) turns them into tasks.
"""

from __future__ import annotations

from arena.gyms.helpdesk import _tpl_comms, _tpl_flow, _tpl_info, _tpl_policy
from arena.gyms.helpdesk._common import HelpdeskTemplate

TEMPLATES: tuple[HelpdeskTemplate, ...] = (
    *_tpl_info.TEMPLATES, *_tpl_policy.TEMPLATES, *_tpl_flow.TEMPLATES, *_tpl_comms.TEMPLATES,
)
"""Every task template, in a fixed order."""

CATEGORIES = ("information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication")
"""The task categories."""

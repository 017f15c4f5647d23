"""Helpdesk task templates, in a fixed order, and the task categories.

Each template (see ``TEMPLATES``) picks suitable entities from the generated world with its own ``Random`` and
declares up to ``tasks_per_template`` drafts, each with a gold program and 3-12 checks whose expected values come
from the world itself; the authoring kit (``arena.authoring.make_domain``) turns them into tasks.
"""

from __future__ import annotations

from arena.gyms.helpdesk import tasks_comms, tasks_flow, tasks_info, tasks_policy
from arena.gyms.helpdesk.tasks_common import HelpdeskTemplate

TEMPLATES: tuple[HelpdeskTemplate, ...] = (
    *tasks_info.TEMPLATES, *tasks_policy.TEMPLATES, *tasks_flow.TEMPLATES, *tasks_comms.TEMPLATES,
)
"""Every task template, in a fixed order."""

CATEGORIES = ("information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication")
"""The task categories."""

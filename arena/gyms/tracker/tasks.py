"""The tracker's task templates, in a fixed order.

Each template picks its ``i``-th task's records from a fresh copy of its own ``Random`` (``each``) and declares a
draft with a gold program and 3-12 checks whose expected values come from the generated world; the authoring kit
(``arena.authoring.make_domain``) turns the drafts into tasks. Tags a task carries only when the world has the mess
(a namesake, a stale summary) are set per draft.
"""

from __future__ import annotations

from arena.authoring import Fault, Template
from arena.gyms.tracker import tasks_issues as issues
from arena.gyms.tracker import tasks_people as people
from arena.gyms.tracker import tasks_releases as releases
from arena.gyms.tracker import tasks_security as security
from arena.gyms.tracker.tasks_common import each
from arena.gyms.tracker.world import TrackerKnobs

INFO, POLICY, FLOW, COMMS = "information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication"

TEMPLATES: tuple[Template[TrackerKnobs], ...] = (
    Template("issue_status", INFO, ("id_given_search_misses",), each(issues.issue_status)),
    Template("open_subtasks", INFO, (), each(issues.open_subtasks)),
    Template("dependency_check", INFO, (), each(issues.dependency_check)),
    Template("transition", FLOW, (), each(issues.transition)),
    Template("transition_conflict", FLOW, (), each(issues.transition, Fault("data_conflict", "transition_issue"))),
    Template("transition_refused", POLICY, ("side_effect_trap",), each(issues.transition_refused)),
    Template("close_parent_open_subtasks", POLICY, ("side_effect_trap", "prerequisite"), each(issues.close_parent)),
    Template("assign_subtask_by_key", FLOW, (), each(people.subtask_by_key)),
    Template("bulk_assign_subtasks", FLOW, (), each(people.bulk_assign)),
    Template("bulk_assign_rate_limited", FLOW, (), each(people.bulk_assign, Fault("rate_limit", "bulk_assign"))),
    Template("add_user_to_group", FLOW, (), each(people.add_to_group)),
    Template("move_user_between_groups", FLOW, ("side_effect_trap",), each(people.move_between_groups)),
    Template("already_member", POLICY, ("side_effect_trap",), each(people.already_member)),
    Template("release_version", FLOW, ("prerequisite", "legacy_format"), each(releases.release)),
    Template("release_blocked", POLICY, ("prerequisite", "side_effect_trap"), each(releases.release_blocked)),
    Template("release_timeout", FLOW, ("prerequisite", "legacy_format"),
             each(releases.release, Fault("timeout", "check_release_blockers"))),
    Template("restrict_issue", FLOW, ("prerequisite",), each(security.restrict), depth=security.DEEPEST),
    Template("restrict_issue_conflict", POLICY, ("prerequisite",),
             each(security.restrict, Fault("data_conflict", "set_issue_security")), depth=security.DEEPEST),
    Template("restricted_inquiry", COMMS, ("leak_trap",), each(security.restricted_inquiry)),
    Template("release_status_update", COMMS, (), each(releases.release_status)),
    Template("blocker_comment", COMMS, (), each(issues.blocker_comment)),
    Template("link_issues_timeout", FLOW, (), each(issues.link, Fault("timeout", "link_issues"))),
)
"""Every task template, in the order their tasks are listed."""

CATEGORIES = (INFO, POLICY, FLOW, COMMS)
"""The task categories."""

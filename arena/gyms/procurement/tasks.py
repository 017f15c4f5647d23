"""Procurement task templates, in a fixed order.

Each template picks suitable records from the generated world and declares up to ``tasks_per_template`` drafts
whose checks take their expected values from the world; the authoring kit (``arena.authoring.make_domain``) turns
them into tasks (ids, faults with the gold program's recovery, splits, reply rules).
"""

from __future__ import annotations

from arena.authoring import Template
from arena.gyms.procurement import tasks_invoices, tasks_orders, tasks_vendors
from arena.gyms.procurement.world import ProcurementKnobs

TEMPLATES: tuple[Template[ProcurementKnobs], ...] = (
    *tasks_vendors.TEMPLATES, *tasks_orders.TEMPLATES, *tasks_invoices.TEMPLATES,
)
"""Every procurement task template, in generation order."""

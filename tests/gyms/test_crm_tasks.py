"""The CRM's tasks: enough of them in both splits, the careful policy passes them all, the CLI's checks pass."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from arena.checks.expert_check import expert_failures
from arena.core.pack import build_pack
from arena.gyms.crm.tasks import TEMPLATES

CATEGORIES = {"information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication"}


def _template(task_id: str) -> str:
    return task_id.rsplit("-", 1)[0]


def test_forty_tasks_or_more_over_every_template_and_category_in_both_splits() -> None:
    tasks = build_pack("crm", seed=0).tasks
    assert len(tasks) >= 40
    assert {_template(t.id) for t in tasks} == {t.name for t in TEMPLATES}
    for split in ("train", "heldout"):
        assert {t.category for t in tasks if t.split == split} == CATEGORIES, split
    tags = Counter(tag for t in tasks for tag in t.tags)
    for tag in tags:
        assert {t.split for t in tasks if tag in t.tags} == {"train", "heldout"} or tags[tag] == 1, tag


def test_every_tag_a_weakness_is_aimed_through_is_exercised() -> None:
    tags = {tag for t in build_pack("crm", seed=0).tasks for tag in t.tags}
    assert {"near_duplicate", "stale_record", "legacy_format", "prerequisite", "id_given_search_misses",
            "side_effect_trap", "leak_trap", "fault_timeout", "fault_rate_limit", "fault_conflict"} <= tags


@pytest.mark.parametrize(("seed", "knobs"), [
    (0, {}),
    (1, {"near_duplicate_rate": 0.5, "stale_rate": 0.5, "legacy_format_rate": 1.0}),
    (2, {"fault_rate": 1.0, "tasks_per_template": 3}),
    (3, {"near_duplicate_rate": 0.0, "stale_rate": 0.0, "legacy_format_rate": 0.0, "prerequisite_depth": 2}),
])
def test_the_careful_policy_passes_every_task(seed: int, knobs: dict[str, Any]) -> None:
    pack = build_pack("crm", seed=seed, knobs=knobs)
    assert [(r.task_id, str(r)) for r in expert_failures(pack)] == []


def _chain(depth: int) -> set[tuple[str, ...]]:
    pack = build_pack("crm", seed=0, knobs={"prerequisite_depth": depth})
    return {tuple(s.tool for s in t.gold.steps) for t in pack.tasks if _template(t.id) == "send_quote"}


def test_prerequisite_depth_bounds_the_approval_chains() -> None:
    assert all("request_discount_approval" not in chain for chain in _chain(1))
    assert all("approve_discount" not in chain for chain in _chain(2))
    assert any("approve_discount" in chain for chain in _chain(3))


def test_gymloop_gyms_check_passes_on_crm() -> None:
    gymloop = str(Path(sys.executable).with_name("gymloop"))
    done = subprocess.run([gymloop, "gyms", "check", "crm"], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "80"}, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "failures  0" in done.stdout
    assert "every check passed" in done.stdout
    assert "not targetable (why)  -" in done.stdout  # every weakness kind can be aimed at in the CRM

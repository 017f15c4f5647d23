"""Every built-in gym generates the same tasks and worlds for seeds 0-4 as the committed fixtures record."""

from __future__ import annotations

import json
from typing import Any

import pytest
from golden_tasks import FIXTURES, gym_digest

from arena.core.domains import BUILTIN_DOMAINS


def _differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    out = []
    for seed, want in expected.items():
        have = got[seed]
        if want["world"] != have["world"]:
            out.append(f"seed {seed}: world")
        if want["clock_start"] != have["clock_start"]:
            out.append(f"seed {seed}: clock_start")
        for task_id in sorted(set(want["tasks"]) ^ set(have["tasks"])):
            out.append(f"seed {seed}: task {task_id} {'missing' if task_id in want['tasks'] else 'new'}")
        for task_id in sorted(set(want["tasks"]) & set(have["tasks"])):
            fields = [k for k, v in want["tasks"][task_id].items() if have["tasks"][task_id].get(k) != v]
            if fields:
                out.append(f"seed {seed}: task {task_id} {', '.join(fields)}")
    return out


@pytest.mark.parametrize("domain", BUILTIN_DOMAINS)
def test_tasks_and_worlds_match_the_fixtures(domain: str) -> None:
    expected = json.loads((FIXTURES / f"{domain}.json").read_text(encoding="utf-8"))
    differences = _differences(expected, gym_digest(domain))
    assert not differences, f"{domain}: {len(differences)} difference(s): {differences[:20]}"


def test_the_comparison_names_a_changed_field() -> None:
    want = {"0": {"world": "a", "clock_start": "c", "tasks": {"t-01": {"prompt": "p", "split": "train"}}}}
    have = {"0": {"world": "b", "clock_start": "c", "tasks": {"t-01": {"prompt": "q", "split": "train"},
                                                              "t-02": {}}}}
    assert _differences(want, have) == ["seed 0: world", "seed 0: task t-02 new", "seed 0: task t-01 prompt"]

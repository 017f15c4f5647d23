import re
from collections import Counter
from pathlib import Path

import pytest

from arena.core.domain import STRONG
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack, read_pack, write_pack
from arena.core.task import Task
from arena.gyms.tracker import DOMAIN
from arena.gyms.tracker.tasks import TEMPLATES

CATEGORIES = {"information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication"}
MAIN_TAGS = {"id_given_search_misses", "near_duplicate", "prerequisite", "legacy_format", "stale_record",
             "fault_timeout", "fault_rate_limit", "fault_conflict", "side_effect_trap", "leak_trap"}
PACK = build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="module")
def gym() -> Gym:
    return Gym(PACK, DOMAIN)


def _run_gold(gym: Gym, task: Task) -> list[tuple[str, str | None]]:
    gym.reset(task.id)
    errors = []
    for s in task.gold.steps:
        result = gym.call_tool(s.tool, s.arguments)
        if not result.ok:
            assert result.error is not None
            errors.append((result.error.kind, result.error.fault))
    return errors


def test_pack_has_enough_tasks_and_tools() -> None:
    assert len(PACK.tasks) >= 40
    assert len(PACK.tools) >= 18
    assert len({t.id for t in PACK.tasks}) == len(PACK.tasks)
    assert len({t.prompt for t in PACK.tasks}) == len(PACK.tasks)


def test_splits_cover_every_category_and_tag() -> None:
    splits = Counter(t.split for t in PACK.tasks)
    assert 0.35 <= splits["heldout"] / len(PACK.tasks) <= 0.45
    for split in ("train", "heldout"):
        tasks = [t for t in PACK.tasks if t.split == split]
        assert {t.category for t in tasks} == CATEGORIES
        assert MAIN_TAGS <= {tag for t in tasks for tag in t.tags}, split


@pytest.mark.parametrize("task_id", [t.id for t in PACK.tasks])
def test_gold_passes_and_null_agent_fails(gym: Gym, task_id: str) -> None:
    task = PACK.task(task_id)
    errors = _run_gold(gym, task)
    verdict = gym.verify(task.gold.reply)
    assert verdict.passed, [r for r in verdict.results if not r.passed]
    assert verdict.side_effect_penalty == 0.0
    assert [e for e in errors if e[0] != "fault"] == []
    assert len(errors) == len(task.faults)
    gym.reset(task_id)
    null = gym.verify("")
    assert not null.passed
    assert gym.changed_rows() == 0


def test_pack_round_trips_through_disk(tmp_path: Path) -> None:
    loaded: Pack = read_pack(write_pack(PACK, tmp_path / "pack"))
    assert loaded.id == PACK.id
    assert [t.id for t in loaded.tasks] == [t.id for t in PACK.tasks]


def test_fault_tasks_name_their_fault_and_gold_recovers() -> None:
    faults = {f.id: f for f in PACK.faults}
    for task in PACK.tasks:
        for fid in task.faults:
            fault = faults[fid]
            tag = {"timeout": "fault_timeout", "rate_limit": "fault_rate_limit", "data_conflict": "fault_conflict"}
            assert tag[fault.kind] in task.tags
            calls = [s for s in task.gold.steps if s.tool == fault.tool]
            assert len(calls) >= 2, task.id
            if fault.kind == "rate_limit":
                assert fault.retry_after
    kinds = Counter(f.kind for f in PACK.faults)
    assert set(kinds) == {"timeout", "rate_limit", "data_conflict"}


STRONG_BEFORE: dict[str, set[str]] = {}
for _before, _after, _weight in DOMAIN.dependencies:
    if _weight == STRONG:
        STRONG_BEFORE.setdefault(_after, set()).add(_before)


def _fillable(tool: str) -> bool:
    """Whether the reference policy can fill every required argument of ``tool`` by id name."""
    return all(p.endswith("_id") for p in DOMAIN.tools[tool].spec.parameters.get("required", []))


def _root(path: str) -> str:
    return path.lstrip("!")[1:].split(".")[0]


def test_intents_hold_no_prerequisites_or_resolved_text_ids() -> None:
    for task in PACK.tasks:
        tools = [call.tool for call in task.intent.calls]
        for call in task.intent.calls:
            assert call.tool in DOMAIN.tools
            assert call.tool not in {"apply_security_scheme", "check_release_blockers", "get_user"}, task.id
            for before in STRONG_BEFORE.get(call.tool, set()) & set(tools):
                assert not _fillable(before), (task.id, before)
        names: list[str] = []
        for ref in task.intent.refs:
            if ref.mention.startswith("$"):
                assert ref.mention_kind == "id" and _root(ref.mention) in names, task.id
            else:
                assert ref.mention in task.prompt
            if ref.mention_kind == "text":
                assert not re.search(r"\b(USR|GRP|VER|SL|ISS|PS)-\d+", ref.mention), task.id
                assert all(v in task.prompt for v in ref.hint.values()), task.id
            names.append(ref.name)
        earlier: list[str] = []
        for call in task.intent.calls:
            paths = [v for v in call.arguments.values() if isinstance(v, str) and v.startswith("$")]
            for path in paths + ([call.when] if call.when else []):
                assert _root(path) in {*names, *earlier}, (task.id, path)
            for value in call.arguments.values():
                if not (isinstance(value, str) and value.startswith("$")):
                    assert not re.search(r"\b(USR|GRP|VER|SL|ISS|PS)-\d+", str(value)), task.id
            earlier.append(call.tool)


def _ids(knobs: dict[str, object]) -> list[str]:
    return [t.id for t in DOMAIN.generate(0, knobs).tasks]


def test_tasks_per_template_and_heldout_fraction() -> None:
    assert len(_ids({"tasks_per_template": 2})) == 2 * len(TEMPLATES)
    tasks = DOMAIN.generate(0, {"tasks_per_template": 4, "heldout_fraction": 0.5}).tasks
    assert Counter(t.split for t in tasks) == {"train": 2 * len(TEMPLATES), "heldout": 2 * len(TEMPLATES)}


def test_focus_tags_select_templates() -> None:
    tasks = DOMAIN.generate(0, {"focus_tags": ["leak_trap"]}).tasks
    assert tasks and all("leak_trap" in t.tags for t in tasks)
    assert len(tasks) < len(PACK.tasks)


def _added_faults(kinds: list[str]) -> tuple[list[str], int]:
    """The kinds of the faults ``fault_rate`` 1 adds from ``kinds``, and how many tasks had no fault of their own."""
    plain = {t.id for t in DOMAIN.generate(0, {"tasks_per_template": 1}).tasks if not t.faults}
    world = DOMAIN.generate(0, {"fault_rate": 1.0, "tasks_per_template": 1, "fault_kinds": kinds})
    kind = {f.id: f.kind for f in world.faults}
    return [kind[f] for t in world.tasks if t.id in plain for f in t.faults], len(plain)


def test_fault_knobs_add_faults_of_the_kinds_asked_for() -> None:
    added, plain = _added_faults(["timeout", "rate_limit"])
    assert len(added) == plain and set(added) == {"timeout", "rate_limit"}
    conflicts, _ = _added_faults(["data_conflict"])
    assert conflicts and set(conflicts) == {"data_conflict"}


def test_fault_rate_tasks_still_pass_with_gold() -> None:
    pack = build_pack(DOMAIN, seed=1, knobs={"fault_rate": 1.0, "tasks_per_template": 1})
    with Gym(pack, DOMAIN) as gym:
        for task in pack.tasks:
            _run_gold(gym, task)
            assert gym.verify(task.gold.reply).passed, task.id


def test_prerequisite_depth_limits_the_chain() -> None:
    shallow = DOMAIN.generate(0, {"prerequisite_depth": 1, "focus_tags": ["prerequisite"]}).tasks
    deep = DOMAIN.generate(0, {"prerequisite_depth": 3, "focus_tags": ["prerequisite"]}).tasks

    def chain_tools(tasks: list[Task]) -> set[str]:
        return {s.tool for t in tasks if t.id.startswith("restrict_issue") for s in t.gold.steps}

    assert "grant_permission" in chain_tools(shallow)
    assert "apply_security_scheme" not in chain_tools(shallow)
    assert {"grant_permission", "apply_security_scheme", "create_security_level"} <= chain_tools(deep)


def test_other_seeds_pick_other_entities() -> None:
    assert {t.prompt for t in DOMAIN.generate(1, {}).tasks} != {t.prompt for t in PACK.tasks}

import sqlite3

import pytest

from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.gyms.helpdesk import DOMAIN

generate = DOMAIN.generate


def world_db(state: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(state)
    return conn


def test_same_seed_and_knobs_same_bytes_and_tasks() -> None:
    knobs = {"tasks_per_template": 3, "stale_rate": 0.1, "fault_rate": 0.5}
    a, b = generate(3, dict(knobs)), generate(3, dict(knobs))
    assert a.state_db == b.state_db
    assert [t.model_dump() for t in a.tasks] == [t.model_dump() for t in b.tasks]


def test_tasks_per_template_and_heldout_fraction() -> None:
    base = generate(0, {})
    more = generate(0, {"tasks_per_template": 3, "heldout_fraction": 0.25})
    assert len(more.tasks) > len(base.tasks)
    share = sum(t.split == "heldout" for t in more.tasks) / len(more.tasks)
    assert 0.2 <= share <= 0.3


def test_focus_tags_select_templates() -> None:
    world = generate(0, {"focus_tags": ["leak_trap"]})
    assert world.tasks and all("leak_trap" in t.tags for t in world.tasks)
    with pytest.raises(ValueError, match="no_such_tag"):
        generate(0, {"focus_tags": ["no_such_tag"]})


def test_world_knobs_change_the_world() -> None:
    clean = world_db(generate(0, {"stale_rate": 0.0, "legacy_format_rate": 0.0, "near_duplicate_rate": 0.0}).state_db)
    assert clean.execute("SELECT COUNT(*) FROM orders WHERE legacy_created IS NOT NULL").fetchone()[0] == 0
    assert clean.execute("SELECT COUNT(*) FROM customers WHERE name = 'Jon Smyth'").fetchone()[0] == 0
    stale = clean.execute("SELECT COUNT(*) FROM search_index si JOIN orders o ON o.id = si.id "
                          "WHERE json_extract(si.summary, '$.status') <> o.status").fetchone()[0]
    assert stale == 0
    messy = world_db(generate(0, {"stale_rate": 0.3}).state_db)
    assert messy.execute("SELECT COUNT(*) FROM search_index si JOIN orders o ON o.id = si.id "
                         "WHERE json_extract(si.summary, '$.status') <> o.status").fetchone()[0] > 100
    no_stale = generate(0, {"stale_rate": 0.0})
    assert not any("stale_record" in t.tags for t in no_stale.tasks)


def test_approval_limit_knob() -> None:
    pack = build_pack(DOMAIN, seed=0, knobs={"approval_limit": 200.0})
    db = world_db(pack.state_db)
    assert db.execute("SELECT value FROM settings WHERE id = 'approval_limit'").fetchone()[0] == "200"
    gym = Gym(pack, DOMAIN)
    for task in [t for t in pack.tasks if "over_limit" in t.id or "with_approval" in t.id]:
        gym.reset(task.id)
        for step in task.gold.steps:
            gym.call_tool(step.tool, step.arguments)
        assert gym.verify(task.gold.reply).passed


def test_fault_rate_adds_faults_and_gold_still_passes() -> None:
    pack = build_pack(DOMAIN, seed=2, knobs={"fault_rate": 1.0, "fault_kinds": ["timeout", "rate_limit"]})
    assert all(t.faults for t in pack.tasks)
    kinds = {f.kind for f in pack.faults}
    assert kinds >= {"timeout", "rate_limit"}
    gym = Gym(pack, DOMAIN)
    for task in pack.tasks:
        gym.reset(task.id)
        for step in task.gold.steps:
            gym.call_tool(step.tool, step.arguments)
        assert gym.verify(task.gold.reply).passed, task.id


def test_prerequisite_depth_keeps_the_chains_it_allows() -> None:
    deepest = {t.id.rsplit("-", 1)[0] for t in generate(0, {"prerequisite_depth": 3}).tasks}
    two = {t.id.rsplit("-", 1)[0] for t in generate(0, {"prerequisite_depth": 2}).tasks}
    one = {t.id.rsplit("-", 1)[0] for t in generate(0, {"prerequisite_depth": 1}).tasks}
    assert "refund_with_approval" in deepest and "refund_with_approval" not in two
    assert "refund_over_limit_agent" in two and "refund_over_limit_agent" not in one
    assert "refund_in_window" in one and one < two < deepest


@pytest.mark.parametrize("knobs", [{"bogus": 1}, {"stale_rate": 2.0}, {"fault_kinds": ["meteor"]},
                                   {"prerequisite_depth": 4}])
def test_bad_knobs_are_refused(knobs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        generate(0, knobs)

"""The side-effect verifier: which rows, columns and operations a task's write-set allows."""

from __future__ import annotations

from typing import Any

import pytest
from guard_domain import GUARDED, guarded_pack, scoped_task, with_tasks

from arena.core.gym import Gym
from arena.core.pack import Pack
from arena.core.results import Verdict
from arena.core.task import SideEffectAssertion, WriteScope
from arena.core.verify import SIDE_EFFECT_STEP

NOTE_1 = ("set_note", {"account_id": "ACC-1", "note": "hello"})
NOTE_2 = ("set_note", {"account_id": "ACC-2", "note": "hello"})
BALANCE_1 = ("set_balance", {"account_id": "ACC-1", "balance": 5.0})
OPEN = ("open_account", {"owner": "Bea"})
CLOSE_1 = ("close_account", {"account_id": "ACC-1"})
CLOSE_2 = ("close_account", {"account_id": "ACC-2"})


@pytest.fixture(scope="module")
def pack() -> Pack:
    return guarded_pack()


def _play(pack: Pack, scopes: list[WriteScope], calls: list[tuple[str, dict[str, Any]]]) -> Verdict:
    task = scoped_task("t", [SideEffectAssertion(allowed=scopes)])
    with Gym(with_tasks(pack, task), GUARDED) as gym:
        gym.reset("t")
        for name, args in calls:
            assert gym.call_tool(name, args).ok
        return gym.verify("")


def _side_effects_hold(verdict: Verdict) -> bool:
    return next(r.passed for r in verdict.results if r.kind == "side_effects")


NOTE_ON_ACC_1 = WriteScope(table="accounts", ids=["ACC-1"], columns=["note"])

CASES = [
    ("allowed column on an allowed row", [NOTE_ON_ACC_1], [NOTE_1], True),
    ("allowed column on a row outside the ids", [NOTE_ON_ACC_1], [NOTE_2], False),
    ("allowed column on an allowed row and on a row outside", [NOTE_ON_ACC_1], [NOTE_1, NOTE_2], False),
    ("other column on an allowed row", [NOTE_ON_ACC_1], [BALANCE_1], False),
    ("any row when ids are open", [WriteScope(table="accounts", columns=["note"])], [NOTE_1, NOTE_2], True),
    ("any column when columns are open", [WriteScope(table="accounts", ids=["ACC-1"])], [NOTE_1, BALANCE_1], True),
    ("two scopes add up", [NOTE_ON_ACC_1, WriteScope(table="accounts", ids=["ACC-2"], columns=["note"])],
     [NOTE_1, NOTE_2], True),
    ("columns of two scopes do not combine on one change",
     [NOTE_ON_ACC_1, WriteScope(table="accounts", ids=["ACC-1"], columns=["balance"])],
     [NOTE_1, BALANCE_1], False),
    ("insert without insert permission", [WriteScope(table="accounts")], [OPEN], False),
    ("insert with insert permission", [WriteScope(table="accounts", insert=True)], [OPEN], True),
    ("insert into another table's scope", [WriteScope(table="other", insert=True)], [OPEN], False),
    ("delete without delete permission", [WriteScope(table="accounts", ids=["ACC-1"])], [CLOSE_1], False),
    ("delete of an allowed row", [WriteScope(table="accounts", ids=["ACC-1"], delete=True)], [CLOSE_1], True),
    ("delete of a row outside the ids", [WriteScope(table="accounts", ids=["ACC-1"], delete=True)], [CLOSE_2],
     False),
    ("delete with open ids", [WriteScope(table="accounts", delete=True)], [CLOSE_2], True),
    ("a scope of another table listed first", [WriteScope(table="other"), NOTE_ON_ACC_1], [NOTE_1], True),
    ("a later scope of the table allows the insert",
     [WriteScope(table="accounts", ids=["ACC-1"]), WriteScope(table="accounts", insert=True)], [OPEN], True),
    ("a later scope of the table allows the delete",
     [WriteScope(table="accounts", ids=["ACC-1"]), WriteScope(table="accounts", ids=["ACC-1"], delete=True)],
     [CLOSE_1], True),
    ("a later scope of the table allows the row", [NOTE_ON_ACC_1, WriteScope(table="accounts", ids=["ACC-2"])],
     [NOTE_2], True),
    ("a later scope of the table allows the columns",
     [NOTE_ON_ACC_1, WriteScope(table="accounts", ids=["ACC-1"], columns=["note", "balance"])], [BALANCE_1], True),
    ("no write-set at all", [], [NOTE_1], False),
    ("nothing changed", [], [], True),
]


@pytest.mark.parametrize(("label", "scopes", "calls", "holds"), CASES, ids=[c[0] for c in CASES])
def test_write_scope(pack: Pack, label: str, scopes: list[WriteScope], calls: list[tuple[str, dict[str, Any]]],
                     holds: bool):
    verdict = _play(pack, scopes, calls)
    assert _side_effects_hold(verdict) is holds
    unintended = [c for c in verdict.changes if not c.allowed]
    assert bool(unintended) is not holds
    assert verdict.side_effect_penalty == pytest.approx(min(1.0, SIDE_EFFECT_STEP * len(unintended)))
    assert verdict.passed is holds


def test_an_update_outside_the_row_scope_is_reported_by_row_and_column(pack: Pack):
    verdict = _play(pack, [NOTE_ON_ACC_1], [NOTE_1, NOTE_2])
    by_key = {c.key: c for c in verdict.changes}
    assert by_key["ACC-1"].allowed and by_key["ACC-1"].op == "update" and by_key["ACC-1"].columns == ["note"]
    assert not by_key["ACC-2"].allowed and by_key["ACC-2"].columns == ["note"]
    detail = next(r.detail for r in verdict.results if r.kind == "side_effects")
    assert "ACC-2" in detail and "ACC-1" not in detail
    assert verdict.side_effect_penalty == pytest.approx(SIDE_EFFECT_STEP)
    assert verdict.score == pytest.approx(2 / 3)


def test_inserted_and_deleted_rows_are_named_by_their_key(pack: Pack):
    verdict = _play(pack, [], [OPEN, CLOSE_2])
    ops = {(c.op, c.key) for c in verdict.changes}
    assert ops == {("insert", "ACC-N00001"), ("delete", "ACC-2")}
    assert not any(c.allowed for c in verdict.changes)


def test_penalty_is_capped_at_one(pack: Pack):
    calls = [("set_note", {"account_id": f"ACC-{i}", "note": "x"}) for i in range(1, 6)]
    verdict = _play(pack, [], calls)
    assert len(verdict.changes) == 5 and verdict.side_effect_penalty == 1.0
    assert _play(pack, [], calls[:3]).side_effect_penalty == pytest.approx(3 * SIDE_EFFECT_STEP)


def test_a_change_undone_in_the_episode_is_no_change(pack: Pack):
    verdict = _play(pack, [], [NOTE_1, ("set_note", {"account_id": "ACC-1", "note": ""})])
    assert verdict.changes == [] and _side_effects_hold(verdict)


def test_a_row_inserted_and_deleted_in_the_episode_is_no_change_and_hides_nothing(pack: Pack):
    calls = [OPEN, OPEN, ("close_account", {"account_id": "ACC-N00001"})]
    verdict = _play(pack, [WriteScope(table="accounts", insert=True)], calls)
    assert [(c.op, c.key) for c in verdict.changes] == [("insert", "ACC-N00002")]
    assert _side_effects_hold(verdict)


def test_rows_of_a_table_without_a_primary_key_are_named_by_rowid(pack: Pack):
    calls = [("log_event", {"account_id": "ACC-1", "text": "a"}), ("log_event", {"account_id": "ACC-2", "text": "b"})]
    verdict = _play(pack, [WriteScope(table="events", ids=["1"], insert=True)], calls)
    assert [(c.table, c.op, c.key) for c in verdict.changes] == [("events", "insert", "1"), ("events", "insert", "2")]
    assert _side_effects_hold(verdict)
    assert not _side_effects_hold(_play(pack, [WriteScope(table="events", ids=["1"])], calls))

"""Procurement system rules: refusals change nothing; faults fire deterministically."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from arena.authoring import read_date
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.gyms.procurement import DOMAIN
from arena.gyms.procurement.rules import TODAY, delegation_covers


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="module")
def world(pack: Pack) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(pack.state_db)
    return conn


@pytest.fixture()
def gym(pack: Pack) -> Iterator[Gym]:
    with Gym(pack, DOMAIN) as g:
        yield g


def _first(world: sqlite3.Connection, sql: str) -> Any:
    row = world.execute(sql).fetchone()
    assert row is not None, sql
    return row[0]


def _plain(pack: Pack, template: str) -> str:
    """The first task of ``template`` without an injected fault (its own fault would fire before the rule)."""
    return next(t.id for t in pack.tasks if t.id.startswith(f"{template}-") and not t.faults)


def _refused(gym: Gym, tool: str, args: dict[str, Any], kind: str, needle: str) -> None:
    result = gym.call_tool(tool, args)
    assert not result.ok and result.error is not None
    assert result.error.kind == kind, result.error
    assert needle in result.error.message, result.error.message
    assert gym.changed_rows() == 0


_INVOICE = ("SELECT i.id FROM invoices i JOIN purchase_orders p ON p.id = i.purchase_order_id WHERE i.status = "
            "'received' AND ")


def test_pay_invoice_refused_while_po_not_approved(gym: Gym, pack: Pack, world: sqlite3.Connection) -> None:
    inv = _first(world, _INVOICE + "p.status = 'pending_approval' ORDER BY i.id")
    gym.reset(_plain(pack, "pay_invoice"))
    _refused(gym, "pay_invoice", {"invoice_id": inv}, "policy", "not approved")


def test_pay_invoice_refused_without_goods_receipt(gym: Gym, pack: Pack, world: sqlite3.Connection) -> None:
    inv = _first(world, _INVOICE + "p.status = 'approved' AND NOT EXISTS (SELECT 1 FROM goods_receipts g "
                 "WHERE g.purchase_order_id = p.id) ORDER BY i.id")
    gym.reset(_plain(pack, "pay_invoice"))
    _refused(gym, "pay_invoice", {"invoice_id": inv}, "policy", "no goods receipt")


def test_pay_invoice_refused_when_the_match_fails(gym: Gym, pack: Pack) -> None:
    task = pack.task(_plain(pack, "mismatch_hold"))
    inv = task.intent.refs[0].mention
    gym.reset(task.id)
    _refused(gym, "pay_invoice", {"invoice_id": inv}, "policy", "three-way match")


def test_pay_invoice_refused_when_on_hold_or_paid(gym: Gym, pack: Pack, world: sqlite3.Connection) -> None:
    gym.reset(_plain(pack, "pay_invoice"))
    _refused(gym, "pay_invoice", {"invoice_id": _first(world, "SELECT id FROM invoices WHERE status = 'on_hold'")},
             "policy", "on hold")
    _refused(gym, "pay_invoice", {"invoice_id": _first(world, "SELECT id FROM invoices WHERE status = 'paid'")},
             "policy", "already paid")


def test_delegate_refused_outside_the_delegation_dates(gym: Gym, pack: Pack, world: sqlite3.Connection) -> None:
    task = pack.task(_plain(pack, "expired_delegation"))
    call = task.intent.calls[0]
    refs = {r.name: r.mention for r in task.intent.refs}
    gym.reset(task.id)
    args = {"purchase_order_id": refs["purchase_order"], "approver_id": refs["employee"],
            "delegation_id": refs["delegation"]}
    assert call.tool == "approve_purchase_order"
    _refused(gym, "approve_purchase_order", args, "policy", "does not cover")
    future = [r for r in world.execute("SELECT id, delegate_id, start_date, end_date FROM delegations ORDER BY id")
              if read_date(r[2]) > TODAY]
    assert future
    dlg_id, delegate, start, end = future[0]
    assert not delegation_covers({"start_date": start, "end_date": end}, TODAY)
    _refused(gym, "approve_purchase_order", {"purchase_order_id": refs["purchase_order"], "approver_id": delegate,
                                             "delegation_id": dlg_id}, "policy", "does not cover")


def test_approval_refused_for_someone_without_authority(gym: Gym, pack: Pack) -> None:
    task = pack.task(_plain(pack, "approve_po"))
    refs = {r.name: r.mention for r in task.intent.refs}
    gym.reset(task.id)
    stranger = "EMP-1139"
    _refused(gym, "approve_purchase_order", {"purchase_order_id": refs["purchase_order"], "approver_id": stranger},
             "policy", "not the approver")


def test_suspended_vendor_gets_no_purchase_order(gym: Gym, pack: Pack, world: sqlite3.Connection) -> None:
    task = pack.task(_plain(pack, "po_suspended_vendor"))
    vendor = task.gold.steps[-1].arguments["vendor_id"]
    assert _first(world, f"SELECT status FROM vendors WHERE id = '{vendor}'") == "suspended"
    gym.reset(task.id)
    _refused(gym, "create_purchase_order", {"requisition_id": task.intent.refs[0].mention, "vendor_id": vendor},
             "policy", "suspended")


def test_activation_refused_without_valid_documents(gym: Gym, pack: Pack) -> None:
    task = pack.task(_plain(pack, "onboard_expired_certificate"))
    vendor = task.intent.refs[0].mention
    gym.reset(task.id)
    _refused(gym, "activate_vendor", {"vendor_id": vendor}, "policy", "INSURANCE")


def test_bad_arguments_and_permissions_change_nothing(gym: Gym, pack: Pack) -> None:
    task = pack.task(_plain(pack, "receive_goods"))
    po = task.intent.refs[0].mention
    gym.reset(task.id)
    _refused(gym, "record_goods_receipt", {"purchase_order_id": po, "received_on": "03/10/2025"}, "validation",
             "'03/10/2025'")
    _refused(gym, "record_goods_receipt", {"purchase_order_id": "PO-1", "received_on": "2025-03-10"}, "not_found",
             "'PO-1'")
    _refused(gym, "pay_invoice", {"invoice_id": "INV-50001"}, "permission", "pay_invoices")


def _faulted(kind: str) -> tuple[Pack, str]:
    faulty = build_pack(DOMAIN, seed=0, knobs={"fault_kinds": [kind], "fault_rate": 1.0, "tasks_per_template": 1})
    kinds = {f.id: f.kind for f in faulty.faults}
    task = next(t for t in faulty.tasks if [kinds[f] for f in t.faults] == [kind])
    return faulty, task.id


@pytest.mark.parametrize("kind", ["timeout", "rate_limit", "data_conflict"])
def test_faults_fire_deterministically(kind: str) -> None:
    faulty, task_id = _faulted(kind)
    task = faulty.task(task_id)
    fault = next(f for f in faulty.faults if f.id == task.faults[0])
    assert fault.kind == kind
    traces = []
    with Gym(faulty, DOMAIN) as gym:
        for _ in range(2):
            gym.reset(task_id)
            for step in task.gold.steps:
                gym.call_tool(step.tool, step.arguments)
            assert gym.verify(task.gold.reply).passed
            traces.append([s.model_dump() for s in gym.trace])
    assert traces[0] == traces[1]
    failed = [s for s in traces[0] if not s["ok"]]
    assert len(failed) == 1 and failed[0]["tool"] == fault.tool
    assert failed[0]["error"]["kind"] == "fault" and failed[0]["error"]["fault"] == kind
    if kind == "rate_limit":
        assert "retry after 2s" in failed[0]["error"]["message"]
    if kind == "data_conflict":
        after = traces[0][failed[0]["index"] + 1]
        assert after["tool"].startswith("get_") and after["ok"]


def test_data_conflict_persists_until_the_record_is_read_again() -> None:
    faulty, task_id = _faulted("data_conflict")
    task = faulty.task(task_id)
    fault = next(f for f in faulty.faults if f.id == task.faults[0])
    call = next(s for s in task.gold.steps if s.tool == fault.tool)
    with Gym(faulty, DOMAIN) as gym:
        gym.reset(task_id)
        first = gym.call_tool(call.tool, call.arguments)
        again = gym.call_tool(call.tool, call.arguments)
        assert first.error is not None and first.error.fault == "data_conflict"
        assert again.error is not None and again.error.kind == "conflict"
        assert gym.changed_rows() == 0

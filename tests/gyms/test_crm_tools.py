"""The CRM's tools enforce its rules: discount approvals, ownership, territories, closing as won, input formats."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime
from typing import Any

import pytest

from arena.authoring import InvalidArgument, Persona, PolicyViolation, ToolContext
from arena.gyms.crm import DOMAIN, tools
from arena.gyms.crm.tasks_common import DEFAULT_PERSONA, MANAGER_PERMISSIONS, REP_PERMISSIONS
from arena.gyms.crm.world import CrmKnobs, build_world


def _ctx(persona: Persona = DEFAULT_PERSONA, **knobs: Any) -> ToolContext:
    conn = build_world(0, CrmKnobs.model_validate(knobs))
    return ToolContext(conn=conn, now=datetime(2025, 9, 1, 9), rng=random.Random(0), persona=persona)


def _as(ctx: ToolContext, name: str) -> ToolContext:
    """The episode ``ctx``, now acting as the user ``name`` (one episode, one id counter)."""
    role = ctx.one("SELECT role FROM users WHERE name = ?", (name,))
    assert role is not None
    permissions = MANAGER_PERMISSIONS if role["role"] == "manager" else REP_PERMISSIONS
    ctx.persona = Persona(name=name, role=str(role["role"]), permissions=list(permissions))
    return ctx


def _one(conn: sqlite3.Connection, sql: str, args: tuple[object, ...] = ()) -> Any:
    return conn.execute(sql, args).fetchone()[0]


def _sendable_quote(ctx: ToolContext, above: bool) -> dict[str, Any]:
    """A draft, unexpired quote whose discount is above (or within) the threshold and has no approval yet."""
    sign = ">" if above else "<="
    row = ctx.one(f"SELECT q.id, u.name AS owner FROM quotes q JOIN opportunities o ON o.id = q.opportunity_id "
                  f"JOIN accounts a ON a.id = o.account_id JOIN users u ON u.id = a.owner_id "
                  f"WHERE q.status = 'draft' AND q.valid_until >= '2025-09-01' AND q.discount_pct {sign} 15 "
                  f"AND NOT EXISTS (SELECT 1 FROM discount_approvals d WHERE d.quote_id = q.id) ORDER BY q.id")
    assert row is not None
    return row


def test_a_discount_above_the_threshold_is_sent_only_after_a_manager_approves_it() -> None:
    ctx = _ctx()
    quote = _sendable_quote(ctx, above=True)
    owner = _as(ctx, quote["owner"])
    assert tools.check_quote_discount.fn(owner, quote["id"])["may_send"] is False
    with pytest.raises(PolicyViolation, match="none was requested"):
        tools.send_quote.fn(owner, quote["id"])
    approval = tools.request_discount_approval.fn(owner, quote["id"], "multi-year deal")
    with pytest.raises(PolicyViolation, match="is pending"):
        tools.send_quote.fn(owner, quote["id"])
    with pytest.raises(PolicyViolation, match="already has discount approval"):
        tools.request_discount_approval.fn(owner, quote["id"], "again")
    territory = _one(ctx.conn, "SELECT a.territory_id FROM quotes q JOIN opportunities o ON o.id = q.opportunity_id "
                     "JOIN accounts a ON a.id = o.account_id WHERE q.id = ?", (quote["id"],))
    boss = _one(ctx.conn, "SELECT name FROM users WHERE territory_id = ? AND role = 'manager'", (territory,))
    tools.approve_discount.fn(_as(ctx, boss), approval["approval_id"])
    owner = _as(ctx, quote["owner"])
    assert tools.check_quote_discount.fn(owner, quote["id"])["may_send"] is True
    assert tools.send_quote.fn(owner, quote["id"])["status"] == "sent"


def test_a_discount_within_the_threshold_needs_no_approval() -> None:
    ctx = _ctx()
    quote = _sendable_quote(ctx, above=False)
    owner = _as(ctx, quote["owner"])
    with pytest.raises(PolicyViolation, match="needs no approval"):
        tools.request_discount_approval.fn(owner, quote["id"], "just in case")
    assert tools.send_quote.fn(owner, quote["id"])["status"] == "sent"


def test_the_threshold_is_a_knob() -> None:
    ctx = _ctx(discount_threshold=40.0)
    quote = _sendable_quote(ctx, above=True)
    assert tools.check_quote_discount.fn(ctx, quote["id"])["threshold_pct"] == 40.0
    assert tools.check_quote_discount.fn(ctx, quote["id"])["needs_approval"] is False


def test_only_the_owner_or_a_manager_changes_an_account() -> None:
    ctx = _ctx()
    account = ctx.one("SELECT a.id, u.name AS owner FROM accounts a JOIN users u ON u.id = a.owner_id "
                      "WHERE u.name != ? ORDER BY a.id", (DEFAULT_PERSONA.name,))
    assert account is not None
    with pytest.raises(PolicyViolation, match=f"owned by {account['owner']}"):
        tools.update_account_phone.fn(ctx, account["id"], "+14155550100")
    assert tools.update_account_phone.fn(_as(ctx, account["owner"]), account["id"], "+14155550100")["phone"]
    manager = _one(ctx.conn, "SELECT name FROM users WHERE role = 'manager' ORDER BY id")
    assert tools.update_account_phone.fn(_as(ctx, manager), account["id"], "+14155550199")["phone"] == "+14155550199"
    assert _one(ctx.conn, "SELECT COUNT(*) FROM account_history WHERE account_id = ? AND field = 'phone'",
                (account["id"],)) >= 2


@pytest.mark.parametrize("phone", ["(415) 555-0123", "415.555.0123", "00 1 415 555 0123", "+1 415 555 0123"])
def test_a_phone_in_a_legacy_format_is_refused_naming_it(phone: str) -> None:
    ctx = _ctx()
    account = ctx.one("SELECT a.id FROM accounts a JOIN users u ON u.id = a.owner_id WHERE u.name = ? ORDER BY a.id",
                      (DEFAULT_PERSONA.name,))
    assert account is not None
    with pytest.raises(InvalidArgument, match=phone.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
                       .replace("+", r"\+")):
        tools.update_account_phone.fn(ctx, account["id"], phone)


def test_an_account_is_reassigned_only_to_a_rep_of_its_territory_and_its_open_deals_follow() -> None:
    ctx = _ctx()
    account = ctx.one("SELECT id, territory_id, owner_id FROM accounts WHERE id IN (SELECT account_id FROM "
                      "opportunities WHERE stage NOT LIKE 'closed%') ORDER BY id")
    assert account is not None
    manager = _as(ctx, _one(ctx.conn, "SELECT name FROM users WHERE territory_id = ? AND role = 'manager'",
                            (account["territory_id"],)))
    outsider = _one(ctx.conn, "SELECT id FROM users WHERE role = 'rep' AND territory_id != ? ORDER BY id",
                    (account["territory_id"],))
    with pytest.raises(PolicyViolation, match="must work in the account's territory"):
        tools.reassign_account.fn(manager, account["id"], outsider)
    colleague = _one(ctx.conn, "SELECT id FROM users WHERE role = 'rep' AND territory_id = ? AND id != ? ORDER BY id",
                     (account["territory_id"], account["owner_id"]))
    tools.reassign_account.fn(manager, account["id"], colleague)
    owners = {r[0] for r in ctx.conn.execute("SELECT owner_id FROM opportunities WHERE account_id = ? AND stage NOT "
                                              "LIKE 'closed%'", (account["id"],))}
    assert owners == {colleague}


def test_an_opportunity_is_closed_as_won_only_after_a_quote_went_out() -> None:
    ctx = _ctx()
    ctx = _as(ctx, _one(ctx.conn, "SELECT name FROM users WHERE role = 'manager' ORDER BY id"))
    unquoted = _one(ctx.conn, "SELECT id FROM opportunities o WHERE stage NOT LIKE 'closed%' AND NOT EXISTS (SELECT 1 "
                    "FROM quotes q WHERE q.opportunity_id = o.id AND q.status IN ('sent', 'accepted')) ORDER BY id")
    with pytest.raises(PolicyViolation, match="no quote sent"):
        tools.close_opportunity.fn(ctx, unquoted, "won", "signed")
    quoted = _one(ctx.conn, "SELECT o.id FROM opportunities o JOIN quotes q ON q.opportunity_id = o.id WHERE o.stage "
                  "NOT LIKE 'closed%' AND q.status = 'sent' ORDER BY o.id")
    assert tools.close_opportunity.fn(ctx, quoted, "won", "signed")["stage"] == "closed_won"
    assert _one(ctx.conn, "SELECT COUNT(*) FROM quotes WHERE opportunity_id = ? AND status = 'accepted'", (quoted,))
    with pytest.raises(PolicyViolation, match="already closed_won"):
        tools.close_opportunity.fn(ctx, quoted, "lost", "changed their mind")


def test_sending_a_quote_and_closing_a_deal_are_marked_irreversible_and_nothing_else_is() -> None:
    assert len(DOMAIN.tools) == 26
    irreversible = {name for name, t in DOMAIN.tools.items() if t.spec.irreversible}
    assert irreversible == {"send_quote", "close_opportunity"}

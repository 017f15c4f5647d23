"""Multi-step workflow templates of the helpdesk gym: returns, address changes, ticket handling, legacy dates."""

from __future__ import annotations

import random
from datetime import date, timedelta

from arena.authoring import (
    Draft,
    Fault,
    FormattedValue,
    Intent,
    amounts,
    calls,
    cents,
    goal,
    legacy_date,
    pick,
    pick_where,
    quote,
    ref,
    says,
    scope,
    state,
    step,
    writes,
)
from arena.gyms.helpdesk.rules import TODAY, tier_rules
from arena.gyms.helpdesk.tasks_common import HelpdeskTemplate, View, delivered_orders, singled_out
from arena.gyms.helpdesk.tasks_policy import REFUND_PROMPT, refund_drafts
from arena.gyms.helpdesk.world_catalog import STREETS

CATEGORY = "multi_step_workflow"
TICKET_COLUMNS = ["status", "follow_up_date", "updated_at"]
ESCALATION_REASONS = ("customer reports repeated crashes after a replacement", "second damaged delivery in a row",
                      "carrier lost the parcel and the customer needs it for an event")


def address_change_conflict(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Change the address of an unshipped order; the first write hits a data conflict."""
    rows = w.rows("SELECT o.id, c.city, c.country FROM orders o JOIN customers c ON c.id = o.customer_id "
                  "WHERE o.status IN ('processing', 'on_hold') "
                  "AND NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.id) ORDER BY o.id")
    out = []
    for o in pick(rng, rows, n):
        oid = str(o["id"])
        addr = f"{rng.randint(2, 300)} {rng.choice(STREETS)}, {o['city']}, {o['country']}"
        out.append(Draft(
            prompt=f"Please change the shipping address on order {oid} to: {addr}",
            intent=Intent(goal="change_address", refs=[ref("order", "order", oid, by_id=True)],
                          calls=[goal("update_shipping_address", order_id="$order", address=addr)],
                          report=["$update_shipping_address.shipping_address"]),
            reply=f"The shipping address of order {oid} is now {addr}.",
            assertions=[
                state("the new address is stored", f"SELECT shipping_address FROM orders WHERE id = {quote(oid)}",
                      [[addr]]),
                calls("read the order before changing it",
                      [("get_order", {"order_id": oid}), ("update_shipping_address", {"order_id": oid})],
                      order=[(0, 1)]),
                writes(scope("orders", ids=[oid], columns=["shipping_address"])),
                says("confirms the change", [[addr.split(",")[0]]]),
            ],
            faults=[Fault("data_conflict", "update_shipping_address")],
        ))
    return out


def return_authorization(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Open a return: check eligibility first (policy), then create the authorization."""
    orders = [o for o in delivered_orders(w) if o.eligible and o.lines]
    out = []
    for o in pick(rng, orders, n):
        product = o.lines[0].product
        reason = rng.choice(("defective: fans rattle", "wrong size for the case", "ordered by mistake"))
        out.append(Draft(
            prompt=f"The customer wants to return the {product} from order {o.id} ({reason}). Set up the return.",
            intent=Intent(goal="open_return", refs=[ref("order", "order", o.id, by_id=True)],
                          calls=[goal("create_return_authorization", order_id="$order", reason=reason)]),
            steps=[step("check_refund_eligibility", order_id=o.id),
                   step("create_return_authorization", order_id=o.id, reason=reason)],
            reply=f"Return authorization RMA-N00001 is open for order {o.id}; the item must be sent back by "
                  f"{o.window_ends}.",
            assertions=[
                state("an authorized return for the order",
                      "SELECT order_id, status FROM return_authorizations WHERE id LIKE 'RMA-N%'",
                      [[o.id, "authorized"]]),
                calls("checked eligibility before the return",
                      [("check_refund_eligibility", {"order_id": o.id}),
                       ("create_return_authorization", {"order_id": o.id})], order=[(0, 1)]),
                writes(scope("return_authorizations", insert=True)),
                says("gives the return authorization id", [["RMA-N00001"]]),
            ],
        ))
    return out


def refund_timeout(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A refund whose first attempt times out; the gold retries."""
    orders = [o for o in delivered_orders(w) if o.eligible]
    return refund_drafts(w, rng, n, orders, timeout=True, prompt=REFUND_PROMPT)


def ticket_tracking_rate_limit(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Find a ticket by subject (rate-limited search), reply with tracking, set it pending."""
    rows = w.rows("SELECT t.id, t.subject, c.name, o.id AS oid, s.tracking_number, k.name AS carrier FROM tickets t "
                  "JOIN customers c ON c.id = t.customer_id JOIN orders o ON o.id = t.order_id "
                  "JOIN shipments s ON s.order_id = o.id JOIN carriers k ON k.id = s.carrier_id "
                  "WHERE t.status IN ('open', 'pending', 'solved') AND t.subject LIKE 'Where is my%' "
                  "AND (SELECT COUNT(*) FROM tickets x WHERE x.subject = t.subject) = 1 ORDER BY t.id")
    out = []
    for t in pick_where(rng, rows, n, lambda r: singled_out(w, "ticket", str(r["subject"]), str(r["id"]),
                                                              {"subject": str(r["subject"])})):
        tid, subject, oid, tn, carrier = (str(t["id"]), str(t["subject"]), str(t["oid"]), str(t["tracking_number"]),
                                          str(t["carrier"]))
        first = str(t["name"]).split(" ")[0]
        message = f"Hello {first}, your order {oid} is with {carrier}; the tracking number is {tn}."
        steps = [step("search_tickets", query=subject), step("get_ticket", ticket_id=tid),
                 step("get_order", order_id=oid), step("reply_to_ticket", ticket_id=tid, message=message),
                 step("update_ticket_status", ticket_id=tid, status="pending")]
        out.append(Draft(
            prompt=f"Handle the ticket \"{subject}\": reply to the customer with the carrier and the tracking number "
                   "of their order, then set the ticket to pending.",
            intent=Intent(goal="answer_tracking_ticket",
                          refs=[ref("ticket", "ticket", subject, by_id=False, subject=subject),
                                ref("order", "order", "$ticket.order_id", by_id=True),
                                ref("shipment", "shipment", "$order.shipments.0.id", by_id=True)],
                          calls=[goal("reply_to_ticket", ticket_id="$ticket", message="$shipment.tracking_url"),
                                 goal("update_ticket_status", ticket_id="$ticket", status="pending")],
                          report=["$shipment.carrier", "$shipment.tracking_number", "$update_ticket_status.status"]),
            steps=steps,
            reply=f"Replied on ticket {tid} with {carrier} tracking number {tn} and set the ticket to pending.",
            assertions=[
                state("the reply carries the tracking number",
                      f"SELECT COUNT(*) FROM ticket_messages WHERE ticket_id = {quote(tid)} AND id LIKE 'MSG-N%' "
                      f"AND instr(body, {quote(tn)}) > 0", [[1]]),
                state("the ticket is pending", f"SELECT status FROM tickets WHERE id = {quote(tid)}", [["pending"]]),
                calls("read the ticket before replying",
                      [("get_ticket", {"ticket_id": tid}), ("reply_to_ticket", {"ticket_id": tid})], order=[(0, 1)]),
                writes(scope("ticket_messages", insert=True),
                       scope("tickets", ids=[tid], columns=TICKET_COLUMNS)),
                says("reports what was done", [[tn], ["pending"]]),
            ],
            faults=[Fault("rate_limit", "search_tickets")],
        ))
    return out


def _live_tickets(w: View) -> list[dict[str, object]]:
    return w.rows("SELECT id FROM tickets WHERE status IN ('open', 'pending') AND escalated = 0 ORDER BY id")


def escalate_legacy_due(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Escalate with a due date the requester wrote as MM/DD/YYYY; the tool takes YYYY-MM-DD."""
    out = []
    for t in pick(rng, _live_tickets(w), n):
        tid = str(t["id"])
        due = (TODAY + timedelta(days=rng.randint(2, 12))).isoformat()
        legacy = legacy_date(date.fromisoformat(due))
        reason = rng.choice(ESCALATION_REASONS)
        out.append(Draft(
            prompt=f"Escalate ticket {tid} to the second-level team: {reason}. It has to be handled by {legacy}.",
            intent=Intent(goal="escalate_ticket", refs=[ref("ticket", "ticket", tid, by_id=True)],
                          calls=[goal("escalate_ticket", ticket_id="$ticket", reason=reason,
                                      due_date=FormattedValue(format="date", raw=legacy))],
                          report=["$escalate_ticket.due_date"]),
            reply=f"Ticket {tid} is escalated to the second-level team, due {due}.",
            assertions=[
                state("escalated with the right due date",
                      f"SELECT escalated, escalation_due FROM tickets WHERE id = {quote(tid)}", [[1, due]]),
                calls("read the ticket, then escalated it",
                      [("get_ticket", {"ticket_id": tid}), ("escalate_ticket", {"ticket_id": tid, "due_date": due})],
                      order=[(0, 1)]),
                writes(scope("tickets", ids=[tid], columns=[
                    "escalated", "escalation_reason", "escalation_due", "priority", "updated_at"])),
                says("states the due date", [[due, legacy]]),
            ],
        ))
    return out


def ticket_followup_legacy(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Set a ticket pending with a follow-up date given as MM/DD/YYYY."""
    out = []
    for t in pick(rng, _live_tickets(w), n):
        tid = str(t["id"])
        day = (TODAY + timedelta(days=rng.randint(3, 20))).isoformat()
        legacy = legacy_date(date.fromisoformat(day))
        out.append(Draft(
            prompt=f"Set ticket {tid} to pending and schedule a follow-up for {legacy}.",
            intent=Intent(goal="schedule_follow_up", refs=[ref("ticket", "ticket", tid, by_id=True)],
                          calls=[goal("update_ticket_status", ticket_id="$ticket", status="pending",
                                      follow_up_date=FormattedValue(format="date", raw=legacy))],
                          report=["$update_ticket_status.status", "$update_ticket_status.follow_up_date"]),
            reply=f"Ticket {tid} is pending with a follow-up on {day}.",
            assertions=[
                state("pending with the follow-up date",
                      f"SELECT status, follow_up_date FROM tickets WHERE id = {quote(tid)}", [["pending", day]]),
                calls("updated the ticket", [("update_ticket_status", {"ticket_id": tid, "follow_up_date": day})]),
                writes(scope("tickets", ids=[tid], columns=TICKET_COLUMNS)),
                says("states the follow-up date", [[day, legacy]]),
            ],
        ))
    return out


def store_credit_legacy_expiry(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Grant store credit within the tier limit, expiring on a date written as MM/DD/YYYY."""
    rows = w.rows("SELECT id, tier, currency, store_credit FROM customers ORDER BY id")
    out = []
    for c in pick(rng, rows, n):
        cid, tier, cur, balance = str(c["id"]), str(c["tier"]), str(c["currency"]), float(str(c["store_credit"]))
        _, limit = tier_rules(w.conn, tier)
        amt = float(rng.choice([x for x in (10, 15, 20, 25, 40, 50, 75) if x <= limit]))
        expiry = (TODAY + timedelta(days=rng.choice((60, 90, 120, 180)))).isoformat()
        legacy = legacy_date(date.fromisoformat(expiry))
        new_balance = cents(balance + amt)
        out.append(Draft(
            prompt=f"Add {amt:.2f} {cur} of store credit to customer {cid} for the delayed delivery; the credit should "
                   f"expire on {legacy}.",
            intent=Intent(goal="grant_store_credit", refs=[ref("customer", "customer", cid, by_id=True)],
                          calls=[goal("apply_store_credit", customer_id="$customer", amount=amt,
                                      reason="delayed delivery",
                                      expires_on=FormattedValue(format="date", raw=legacy))],
                          report=["$apply_store_credit.amount", "$apply_store_credit.expires_on",
                                  "$apply_store_credit.balance"]),
            reply=f"Added {amt:.2f} {cur} of store credit to {cid}, expiring {expiry}; the balance is now "
                  f"{new_balance:.2f} {cur}.",
            assertions=[
                state("one ledger entry with the expiry",
                      f"SELECT amount, expires_on FROM store_credit_ledger WHERE customer_id = {quote(cid)} "
                      "AND id LIKE 'SCL-N%'", [[amt, expiry]]),
                state("the balance grew by the grant", f"SELECT store_credit FROM customers WHERE id = {quote(cid)}",
                      [[new_balance]]),
                calls("applied the credit", [("apply_store_credit", {"customer_id": cid, "expires_on": expiry})]),
                writes(scope("customers", ids=[cid], columns=["store_credit"]),
                       scope("store_credit_ledger", insert=True)),
                says("confirms amount and expiry", [amounts(amt), [expiry, legacy]]),
            ],
        ))
    return out


TEMPLATES = (
    HelpdeskTemplate("address_change_conflict", CATEGORY, ("fault_conflict",), address_change_conflict),
    HelpdeskTemplate("return_authorization", CATEGORY, ("prerequisite",), return_authorization, depth=1),
    HelpdeskTemplate("refund_timeout", CATEGORY, ("fault_timeout", "prerequisite"), refund_timeout, depth=1),
    HelpdeskTemplate("ticket_tracking_rate_limit", CATEGORY, ("fault_rate_limit",), ticket_tracking_rate_limit),
    HelpdeskTemplate("escalate_legacy_due", CATEGORY, ("legacy_format", "id_given_search_misses"), escalate_legacy_due),
    HelpdeskTemplate("ticket_followup_legacy", CATEGORY, ("legacy_format",), ticket_followup_legacy),
    HelpdeskTemplate("store_credit_legacy_expiry", CATEGORY, ("legacy_format",), store_credit_legacy_expiry),
)
"""Multi-step workflow templates."""

"""Policy-reasoning task templates of the helpdesk gym: refunds, approvals, cancellations, credit limits."""

from __future__ import annotations

import random

from arena.authoring import (
    Draft,
    Fault,
    Intent,
    amounts,
    calls,
    goal,
    pick,
    quote,
    ref,
    says,
    scope,
    state,
    step,
    writes,
)
from arena.gyms.helpdesk.rules import tier_rules
from arena.gyms.helpdesk.tasks_common import (
    MANAGER,
    PRICE_WINDOW,
    Delivered,
    HelpdeskTemplate,
    Line,
    View,
    delivered_orders,
    no_writes,
    price_drop,
    singled_out,
)

CATEGORY = "policy_reasoning"


def _refund_line(order: Delivered, limit: float) -> Line | None:
    fits = [ln for ln in order.lines if ln.line_total <= min(limit, order.refundable)]
    return fits[0] if fits else None


def refund_drafts(w: View, rng: random.Random, n: int, orders: list[Delivered], *, timeout: bool,
                   prompt: str) -> list[Draft]:
    """Partial refunds of one returned line each, for up to ``n`` of ``orders`` (``timeout``: the refund times out)."""
    out = []
    picks = [o for o in orders if _refund_line(o, w.knobs.approval_limit) is not None]
    for o in pick(rng, picks, n):
        line = _refund_line(o, w.knobs.approval_limit)
        if line is None:
            continue
        amt = line.line_total
        steps = [step("check_refund_eligibility", order_id=o.id),
                 step("issue_refund", order_id=o.id, amount=amt, refund_type="partial", reason="returned item")]
        faults = [Fault("timeout", "issue_refund")] if timeout else []
        out.append(Draft(
            prompt=prompt.format(oid=o.id, product=line.product, amt=f"{amt:.2f}", cur=o.currency,
                                 days=o.days_since),
            intent=Intent(goal="refund_returned_item", refs=[ref("order", "order", o.id, by_id=True)],
                          calls=[goal("issue_refund", order_id="$order", amount=amt, refund_type="partial",
                                      reason="returned item")],
                          report=["$issue_refund.amount", "$issue_refund.refund_type"]),
            steps=steps,
            reply=f"Refunded {amt:.2f} {o.currency} on order {o.id} for the returned {line.product} "
                  "(partial refund RF-N00001).",
            assertions=[
                state("one partial refund of the agreed amount",
                      f"SELECT amount, currency, refund_type FROM refunds WHERE order_id = {quote(o.id)} "
                      "AND id LIKE 'RF-N%'", [[amt, o.currency, "partial"]]),
                calls("checked eligibility before refunding",
                      [("check_refund_eligibility", {"order_id": o.id}), ("issue_refund", {"order_id": o.id})],
                      order=[(0, 1)]),
                writes(scope("refunds", insert=True)),
                says("confirms the refunded amount", [amounts(amt)]),
            ],
            faults=faults,
        ))
    return out


REFUND_PROMPT = ("Order {oid}: the customer sent back the {product} and we have received it. Please refund them "
                 "{amt} {cur}.")


def refund_in_window(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A refund inside the return window: check eligibility first, then refund."""
    orders = [o for o in delivered_orders(w) if o.eligible and o.days_since <= 30]
    return refund_drafts(w, rng, n, orders, timeout=False, prompt=REFUND_PROMPT)


def refund_gold_window(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A gold-tier customer 31-45 days after delivery: still inside their longer window."""
    orders = [o for o in delivered_orders(w) if o.eligible and o.tier == "gold" and o.days_since > 30]
    return refund_drafts(w, rng, n, orders, timeout=False, prompt=(
        "Order {oid} was delivered {days} days ago and the customer has returned the {product}. Refund {amt} {cur} "
        "if our policy allows it."))


def refund_outside_window(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A refund after the return window: refuse and explain; no refund row."""
    orders = [o for o in delivered_orders(w) if not o.eligible and o.refundable > 0 and o.days_since <= 120]
    out = []
    for o in pick(rng, orders, n):
        out.append(Draft(
            prompt=f"The customer on order {o.id} wants their money back for the whole order "
                   f"({o.refundable:.2f} {o.currency}). Process the refund if our policy allows it.",
            intent=Intent(goal="refund_order", refs=[ref("order", "order", o.id, by_id=True)],
                          calls=[goal("issue_refund", order_id="$order", amount=o.refundable, refund_type="partial",
                                      reason="full refund requested by the customer")]),
            steps=[step("check_refund_eligibility", order_id=o.id)],
            reply=f"I can't refund order {o.id}: it was delivered on {o.delivered_on} and the {o.window_days}-day "
                  f"return window ({o.tier} tier) ended on {o.window_ends}. No refund was issued.",
            assertions=[
                state("no refund was issued", f"SELECT COUNT(*) FROM refunds WHERE order_id = {quote(o.id)}",
                      [[o.refunds]]),
                calls("checked eligibility", [("check_refund_eligibility", {"order_id": o.id})]),
                writes(),
                says("explains that the return window has closed and when",
                     [[o.window_ends], ["window", "return period"]]),
            ],
        ))
    return out


def _over_limit(w: View) -> list[Delivered]:
    return [o for o in delivered_orders(w) if o.eligible and o.refundable > w.knobs.approval_limit]


def refund_over_limit_agent(w: View, rng: random.Random, n: int) -> list[Draft]:
    """An agent asked for a refund above the approval limit: request approval, refund nothing yet."""
    orders = _over_limit(w)
    out = []
    for o in pick(rng, orders, n):
        amt = o.refundable
        out.append(Draft(
            prompt=f"Please refund order {o.id} in full ({amt:.2f} {o.currency}); the customer returned everything "
                   "and the warehouse confirmed it.",
            intent=Intent(goal="request_refund_approval", refs=[ref("order", "order", o.id, by_id=True)],
                          calls=[goal("request_manager_approval", order_id="$order", amount=amt,
                                      reason="full refund of returned order")],
                          report=["$request_manager_approval.status"]),
            steps=[step("check_refund_eligibility", order_id=o.id),
                   step("request_manager_approval", order_id=o.id, amount=amt, reason="full refund of returned order")],
            reply=f"Order {o.id} is eligible, but {amt:.2f} {o.currency} is above the "
                  f"{w.knobs.approval_limit:.2f} approval limit, so I requested manager approval APR-N00001 "
                  "(pending). No refund has been issued yet.",
            assertions=[
                state("a pending approval request for the full amount",
                      "SELECT order_id, amount, status FROM approvals WHERE id LIKE 'APR-N%'",
                      [[o.id, amt, "pending"]]),
                state("no refund before approval",
                      f"SELECT COUNT(*) FROM refunds WHERE order_id = {quote(o.id)} AND id LIKE 'RF-N%'", [[0]]),
                calls("checked eligibility, then asked for approval",
                      [("check_refund_eligibility", {"order_id": o.id}),
                       ("request_manager_approval", {"order_id": o.id})], order=[(0, 1)]),
                writes(scope("approvals", insert=True)),
                says("says approval was requested", [["APR-N00001"], ["approval"]]),
            ],
        ))
    return out


def refund_with_approval(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A manager refunds above the limit: check, request approval, approve, refund with the approval."""
    orders = _over_limit(w)
    out = []
    for o in pick(rng, orders, n):
        amt = o.refundable
        out.append(Draft(
            prompt=f"Order {o.id} came back complete and the customer wants a full refund of {amt:.2f} {o.currency}. "
                   "You're the manager on duty: get it approved and refund it.",
            persona=MANAGER,
            intent=Intent(goal="refund_order", refs=[ref("order", "order", o.id, by_id=True)],
                          calls=[goal("request_manager_approval", order_id="$order", amount=amt,
                                      reason="full refund of returned order"),
                                 goal("approve_refund", approval_id="$request_manager_approval.approval_id"),
                                 goal("issue_refund", order_id="$order", amount=amt, refund_type="partial",
                                      reason="full refund of returned order",
                                      approval_id="$approve_refund.approval_id")],
                          report=["$issue_refund.amount"]),
            steps=[step("check_refund_eligibility", order_id=o.id),
                   step("request_manager_approval", order_id=o.id, amount=amt, reason="full refund of returned order"),
                   step("approve_refund", approval_id="APR-N00001"),
                   step("issue_refund", order_id=o.id, amount=amt, refund_type="partial",
                        reason="full refund of returned order", approval_id="APR-N00001")],
            reply=f"Approved APR-N00001 and refunded {amt:.2f} {o.currency} on order {o.id} (refund RF-N00002).",
            assertions=[
                state("the refund carries the approval",
                      f"SELECT amount, approval_id FROM refunds WHERE order_id = {quote(o.id)} AND id LIKE 'RF-N%'",
                      [[amt, "APR-N00001"]]),
                state("the approval was granted", "SELECT status, decided_by FROM approvals WHERE id = 'APR-N00001'",
                      [["approved", MANAGER.name]]),
                calls("eligibility, approval request, approval, refund in order",
                      [("check_refund_eligibility", {"order_id": o.id}),
                       ("request_manager_approval", {"order_id": o.id}), ("approve_refund", {}),
                       ("issue_refund", {"order_id": o.id})],
                      order=[(0, 1), (1, 2), (2, 3)]),
                writes(scope("approvals", insert=True), scope("refunds", insert=True)),
                says("confirms the refund", [amounts(amt)]),
            ],
        ))
    return out


def cancel_unshipped(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Cancel an order that has not shipped: order cancelled, payment voided."""
    rows = w.rows("SELECT o.id, c.name, p.id AS pay FROM orders o JOIN customers c ON c.id = o.customer_id "
                  "JOIN payments p ON p.order_id = o.id WHERE o.status = 'processing' "
                  "AND NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.id) ORDER BY o.id")
    out = []
    for o in pick(rng, rows, n):
        oid, name, pay = str(o["id"]), str(o["name"]), str(o["pay"])
        out.append(Draft(
            prompt=f"{name} asked us to cancel order {oid} before it ships. Please cancel it.",
            intent=Intent(goal="cancel_order", refs=[ref("order", "order", oid, by_id=True)],
                          calls=[goal("cancel_order", order_id="$order", reason="customer request")],
                          report=["$cancel_order.status", "$cancel_order.payment"]),
            reply=f"Order {oid} is cancelled and its payment has been voided.",
            assertions=[
                state("the order is cancelled", f"SELECT status FROM orders WHERE id = {quote(oid)}", [["cancelled"]]),
                state("the payment is voided", f"SELECT status FROM payments WHERE order_id = {quote(oid)}",
                      [["voided"]]),
                calls("read the order before cancelling it",
                      [("get_order", {"order_id": oid}), ("cancel_order", {"order_id": oid})], order=[(0, 1)]),
                writes(scope("orders", ids=[oid], columns=["status", "cancelled_at", "cancel_reason"]),
                       scope("payments", ids=[pay], columns=["status"])),
                says("confirms the cancellation", [["cancelled", "canceled"]]),
            ],
        ))
    return out


def cancel_shipped_refused(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A cancellation request for a shipped order: refuse and point to the return process."""
    rows = w.rows("SELECT o.id, substr(s.shipped_at, 1, 10) AS day, c.name AS carrier FROM orders o "
                  "JOIN shipments s ON s.order_id = o.id JOIN carriers c ON c.id = s.carrier_id "
                  "WHERE o.status = 'shipped' ORDER BY o.id")
    out = []
    for o in pick(rng, rows, n):
        oid, day, carrier = str(o["id"]), str(o["day"]), str(o["carrier"])
        out.append(Draft(
            prompt=f"The customer changed their mind about order {oid}. Cancel it, please.",
            intent=Intent(goal="cancel_order", refs=[ref("order", "order", oid, by_id=True)],
                          calls=[goal("cancel_order", order_id="$order", reason="the customer changed their mind")]),
            steps=[step("get_order", order_id=oid)],
            reply=f"I can't cancel order {oid}: it already shipped on {day} with {carrier}. Once it is delivered the "
                  "customer can return it within the return window.",
            assertions=[
                state("the order is still shipped", f"SELECT status FROM orders WHERE id = {quote(oid)}",
                      [["shipped"]]),
                calls("looked at the order", [("get_order", {"order_id": oid})]),
                writes(),
                says("explains it already shipped and offers a return",
                     [["already shipped", "has shipped", "been shipped", "in transit"], ["return"]]),
            ],
        ))
    return out


def store_credit_over_limit(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Store credit above the tier's per-grant limit: apply nothing, explain the limit."""
    rows = w.rows("SELECT c.id, c.name, c.email, c.tier, c.currency, c.store_credit FROM customers c "
                  "WHERE (SELECT COUNT(*) FROM customers x WHERE x.name = c.name) = 1 ORDER BY c.id")
    out = []
    for c in pick(rng, rows, n):
        cid, name, email, tier, cur = str(c["id"]), str(c["name"]), str(c["email"]), str(c["tier"]), str(c["currency"])
        _, limit = tier_rules(w.conn, tier)
        amt = limit + rng.choice((15.0, 25.0, 40.0))
        ledger = w.one("SELECT COUNT(*) AS n FROM store_credit_ledger WHERE customer_id = ?", (cid,))["n"]
        out.append(Draft(
            prompt=f"Please give {name} ({email}) {amt:.2f} {cur} of store credit as a goodwill gesture for the "
                   "late delivery.",
            intent=Intent(goal="grant_store_credit",
                          refs=[ref("customer", "customer", name, by_id=False, email=email)],
                          calls=[goal("apply_store_credit", customer_id="$customer", amount=amt,
                                      reason="goodwill gesture for the late delivery")]),
            steps=[step("search_customers", query=email), step("get_customer", customer_id=cid)],
            reply=f"I did not apply the credit: {name} is {tier} tier and the store-credit limit per grant for {tier} "
                  f"is {limit:.2f} {cur}, below the {amt:.2f} requested. Nothing was changed.",
            assertions=[
                state("balance and ledger unchanged",
                      "SELECT store_credit, (SELECT COUNT(*) FROM store_credit_ledger "
                      f"WHERE customer_id = {quote(cid)}) FROM customers WHERE id = {quote(cid)}",
                      [[float(str(c["store_credit"])), int(ledger)]]),
                no_writes("looked up the customer, granted nothing", [("get_customer", {"customer_id": cid})]),
                writes(),
                says("states the tier limit", [amounts(limit), [tier]]),
            ],
        ))
    return out


def price_protection(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A price drop after delivery: refund the difference as a ``prorated`` refund."""
    picks: list[tuple[Delivered, Line, float]] = []
    for o in delivered_orders(w):
        if not o.eligible or o.days_since > PRICE_WINDOW:
            continue
        drops = [(line, price_drop(w, o, line)) for line in o.lines]
        dropped = [(line, diff) for line, diff in drops if diff > 0]
        if len(dropped) != 1:
            continue
        line, diff = dropped[0]
        if diff <= min(w.knobs.approval_limit, o.refundable) and singled_out(
                w, "product", line.product, line.product_id, {"name": line.product}):
            picks.append((o, line, diff))
    out = []
    for o, line, diff in pick(rng, picks, n):
        out.append(Draft(
            prompt=f"The customer on order {o.id} noticed the {line.product} is now cheaper in our sale and asks for "
                   "the difference back under our price protection.",
            intent=Intent(goal="price_protection",
                          refs=[ref("order", "order", o.id, by_id=True),
                                ref("product", "product", line.product, by_id=False, name=line.product)],
                          calls=[goal("issue_refund", order_id="$order", amount="$order.price_protection_amount",
                                      refund_type="prorated",
                                      reason="price protection")],
                          report=["$issue_refund.amount", "$issue_refund.refund_type"]),
            steps=[step("check_refund_eligibility", order_id=o.id), step("get_order", order_id=o.id),
                   step("get_product", product_id=line.product_id),
                   step("issue_refund", order_id=o.id, amount=diff, refund_type="prorated", reason="price protection")],
            reply=f"Refunded the price difference of {diff:.2f} {o.currency} on order {o.id} for the {line.product} "
                  "as a prorated refund (RF-N00001).",
            assertions=[
                state("one prorated refund of the price difference",
                      f"SELECT amount, refund_type FROM refunds WHERE order_id = {quote(o.id)} AND id LIKE 'RF-N%'",
                      [[diff, "prorated"]]),
                calls("checked eligibility and today's price before refunding",
                      [("check_refund_eligibility", {"order_id": o.id}),
                       ("get_product", {"product_id": line.product_id}), ("issue_refund", {"order_id": o.id})],
                      order=[(0, 2), (1, 2)]),
                writes(scope("refunds", insert=True)),
                says("states the refunded difference", [amounts(diff)]),
            ],
        ))
    return out


TEMPLATES = (
    HelpdeskTemplate("refund_in_window", CATEGORY, ("prerequisite",), refund_in_window, depth=1),
    HelpdeskTemplate("refund_gold_window", CATEGORY, ("prerequisite",), refund_gold_window, depth=1),
    HelpdeskTemplate("refund_outside_window", CATEGORY, ("prerequisite",), refund_outside_window, depth=1),
    HelpdeskTemplate("refund_over_limit_agent", CATEGORY, ("prerequisite",), refund_over_limit_agent, depth=2),
    HelpdeskTemplate("refund_with_approval", CATEGORY, ("prerequisite",), refund_with_approval, depth=3),
    HelpdeskTemplate("cancel_unshipped", CATEGORY, (), cancel_unshipped),
    HelpdeskTemplate("cancel_shipped_refused", CATEGORY, (), cancel_shipped_refused),
    HelpdeskTemplate("store_credit_over_limit", CATEGORY, (), store_credit_over_limit),
    HelpdeskTemplate("price_protection", CATEGORY, ("prerequisite",), price_protection, depth=1),
)
"""Policy-reasoning templates."""

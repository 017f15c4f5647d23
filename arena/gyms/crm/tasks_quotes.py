"""Templates on quotes: sending them through the discount-approval chain, refusals, discount changes."""

from __future__ import annotations

import random
from typing import Any

from arena.authoring import (
    Draft,
    Fault,
    Intent,
    amounts,
    calls,
    goal,
    mix,
    pick,
    quote,
    ref,
    says,
    scope,
    state,
    writes,
)

from .tasks_common import View, manager, rep
from .world import TODAY

DRAFTS = ("SELECT q.id, q.discount_pct, q.list_total, o.owner_id, a.name AS account, a.territory_id, "
          "(SELECT d.status FROM discount_approvals d WHERE d.quote_id = q.id AND d.discount_pct = q.discount_pct "
          " ORDER BY d.requested_on DESC, d.id DESC) AS approval "
          "FROM quotes q JOIN opportunities o ON o.id = q.opportunity_id JOIN accounts a ON a.id = o.account_id "
          f"WHERE q.status = 'draft' AND q.valid_until >= '{TODAY.isoformat()}' ORDER BY q.id")
"""SQL: draft quotes that can still be sent, with the status of the approval for their current discount."""

REASONS = ("a three-year commitment", "a competitive displacement", "a reference customer deal",
           "bundling with the premium support plan")


def _depths(deepest: int, n: int) -> list[int]:
    """Chain lengths for ``n`` tasks, the deepest first: 3, 2, 1, 3, ..."""
    return [deepest - (i % deepest) for i in range(n)]


def _chain(w: View, rng: random.Random, q: dict[str, Any], depth: int, reason: str) -> Draft:
    qid, pct = str(q["id"]), float(q["discount_pct"])
    sent = [["sent", TODAY.isoformat()]]
    check = ("check_quote_discount", {"quote_id": qid})
    if depth == 1:
        return Draft(
            prompt=_phrase(rng, ("Please send quote {qid} to {account}.",
                                   "Quote {qid} is ready: send it to the customer ({account}).",
                                   "Can you send {account} their quote {qid}?"), qid, q),
            persona=rep(w, str(q["owner_id"])),
            intent=Intent(goal="send_quote", refs=[ref("quote", "quote", qid, by_id=True)],
                          calls=[goal("send_quote", quote_id="$quote")], report=["$send_quote.status"]),
            reply=f"Quote {qid} has been sent to {q['account']}.",
            assertions=[
                state("the quote is sent", f"SELECT status, sent_on FROM quotes WHERE id = {quote(qid)}", sent),
                calls("checked the discount before sending", [check, ("send_quote", {"quote_id": qid})],
                      order=[(0, 1)]),
                writes(scope("quotes", [qid], ["status", "sent_on"])),
                says("confirms the quote went out", [["sent"]]),
            ],
            depth=1,
        )
    request = ("request_discount_approval", {"quote_id": qid})
    if depth == 2:
        return Draft(
            prompt=_phrase(rng, (f"Quote {{qid}} for {{account}} has a {pct:g}% discount for {reason}. Request the "
                                   "discount approval it needs; send it only once it is approved.",
                                   f"{{account}} wants quote {{qid}} with its {pct:g}% discount ({reason}). Get the "
                                   "approval going and send the quote if you may.",
                                   f"Send quote {{qid}} ({{account}}) once its {pct:g}% discount is approved; ask for "
                                   f"the approval now, the reason is {reason}."), qid, q),
            persona=rep(w, str(q["owner_id"])),
            intent=Intent(goal="send_quote", refs=[ref("quote", "quote", qid, by_id=True)],
                          calls=[goal("request_discount_approval", quote_id="$quote", reason=reason),
                                 goal("send_quote", when="$check_quote_discount.may_send", quote_id="$quote")],
                          report=["$request_discount_approval.status"]),
            reply=f"Quote {qid} needs a discount approval: I requested it (APR-N00001), and it is pending, so the "
                  "quote is not sent yet.",
            assertions=[
                state("an approval is pending and the quote is still a draft", "SELECT q.status, d.status FROM "
                      "quotes q JOIN discount_approvals d ON d.quote_id = q.id AND d.id = 'APR-N00001' "
                      f"WHERE q.id = {quote(qid)}", [["draft", "pending"]]),
                calls("checked the discount, then asked for approval", [check, request], order=[(0, 1)],
                      forbidden=[("send_quote", {"quote_id": qid})]),
                writes(scope("discount_approvals", insert=True)),
                says("says the approval is pending", [["pending"]]),
            ],
            depth=2,
        )
    approve = ("approve_discount", {"approval_id": "APR-N00001"})
    return Draft(
        prompt=_phrase(rng, (f"Quote {{qid}} for {{account}} carries a {pct:g}% discount for {reason}. Request the "
                               "discount approval, approve it, and send the quote.",
                               f"I'm signing off the {pct:g}% discount on quote {{qid}} ({{account}}, {reason}): "
                               "raise the approval, approve it and send the quote out.",
                               f"Please push quote {{qid}} for {{account}} through: request approval of its "
                               f"{pct:g}% discount ({reason}), approve it, then send it."), qid, q),
        persona=manager(w, str(q["territory_id"])),
        intent=Intent(goal="send_quote", refs=[ref("quote", "quote", qid, by_id=True)],
                      calls=[goal("request_discount_approval", quote_id="$quote", reason=reason),
                             goal("approve_discount", approval_id="$request_discount_approval.approval_id"),
                             goal("send_quote", quote_id="$quote")],
                      report=["$send_quote.status"]),
        reply=f"The {pct:g}% discount on quote {qid} is approved (APR-N00001) and the quote has been sent.",
        assertions=[
            state("approved, then sent", "SELECT q.status, q.sent_on, d.status FROM quotes q JOIN "
                  "discount_approvals d ON d.quote_id = q.id AND d.id = 'APR-N00001' WHERE q.id = "
                  f"{quote(qid)}", [["sent", TODAY.isoformat(), "approved"]]),
            calls("walked the approval chain before sending", [check, request, approve, ("send_quote",
                                                                                          {"quote_id": qid})],
                  order=[(0, 1), (1, 2), (2, 3)]),
            writes(scope("quotes", [qid], ["status", "sent_on"]), scope("discount_approvals", insert=True)),
            says("confirms the quote went out", [["sent"]]),
        ],
        depth=3,
    )


def _phrase(rng: random.Random, options: tuple[str, ...], qid: str, q: dict[str, Any]) -> str:
    return rng.choice(options).format(qid=qid, account=q["account"])


def send_quote(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Send a draft quote through the chain its discount needs: check (1); request (2); request, approve (3)."""
    limit = w.knobs.discount_threshold
    rows = w.rows(DRAFTS)
    within = [r for r in rows if float(r["discount_pct"]) <= limit]
    above = [r for r in rows if float(r["discount_pct"]) > limit and r["approval"] in (None, "rejected")]
    within, above = pick(rng, within, len(within)), pick(rng, above, len(above))
    out = []
    for depth in _depths(w.knobs.prerequisite_depth or 3, n):
        pool = within if depth == 1 else above
        if pool:
            out.append(_chain(w, rng, pool.pop(), depth, rng.choice(REASONS)))
    return out


def send_unapproved(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A rep asks to send a quote whose discount is not approved: the check shows it, the send is refused."""
    limit = w.knobs.discount_threshold
    rows = [r for r in w.rows(DRAFTS) if float(r["discount_pct"]) > limit and r["approval"] != "approved"]
    out = []
    for q in mix(rng, [r for r in rows if r["approval"] == "pending"], rows, n):
        qid = str(q["id"])
        prompt = rng.choice(("Send quote {qid} to {account} now, they are waiting for it.",
                            "{account} is chasing us: please send quote {qid} today.",
                            "Get quote {qid} out to {account}, no more delays."))
        out.append(Draft(
            prompt=prompt.format(qid=qid, account=q["account"]),
            persona=rep(w, str(q["owner_id"])),
            intent=Intent(goal="send_quote", refs=[ref("quote", "quote", qid, by_id=True)],
                          calls=[goal("send_quote", quote_id="$quote")]),
            reply="",
            assertions=[
                state("the quote is still a draft", f"SELECT status FROM quotes WHERE id = {quote(qid)}",
                      [["draft"]]),
                calls("checked the discount", [("check_quote_discount", {"quote_id": qid})]),
                writes(),
                says("says the discount needs approval", [["approval", "approved", "approve"]]),
            ],
            depth=1,
        ))
    return out


def change_discount(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Lower a draft quote's discount before it goes out, without sending it; the first change is rate limited."""
    rows = [r for r in w.rows(DRAFTS) if float(r["discount_pct"]) >= 8]
    out = []
    for i, q in enumerate(mix(rng, rows, [], n)):
        qid = str(q["id"])
        pct = float(rng.choice([d for d in (0, 5, 8, 10, 12) if d < float(q["discount_pct"])]))
        net = round(float(q["list_total"]) * (1 - pct / 100), 2)
        prompt = rng.choice(("Lower the discount on quote {qid} to {pct:g}% before it goes out.",
                            "{account} accepted a smaller discount: set quote {qid} to {pct:g}%. Don't send it yet.",
                            "Change quote {qid}'s discount to {pct:g}%; I'll send it myself later."))
        out.append(Draft(
            prompt=prompt.format(qid=qid, pct=pct, account=q["account"]),
            persona=rep(w, str(q["owner_id"])),
            intent=Intent(goal="change_discount", refs=[ref("quote", "quote", qid, by_id=True)],
                          calls=[goal("set_quote_discount", quote_id="$quote", discount_pct=pct)],
                          report=["$set_quote_discount.net_total"]),
            reply=f"Quote {qid} now has a {pct:g}% discount, for a net total of {net:,.2f}.",
            assertions=[
                state("the discount and the net total changed", "SELECT status, discount_pct, net_total FROM quotes "
                      f"WHERE id = {quote(qid)}", [["draft", pct, net]]),
                calls("changed the discount and did not send the quote",
                      [("set_quote_discount", {"quote_id": qid, "discount_pct": pct})],
                      forbidden=[("send_quote", {"quote_id": qid})]),
                writes(scope("quotes", [qid], ["discount_pct", "net_total"])),
                says("states the new net total", [amounts(net)]),
            ],
            faults=[Fault("rate_limit", "set_quote_discount")] if i == 0 else [],
        ))
    return out


def approval_status(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A customer asks whether their quote's discount is approved: check it and answer, changing nothing."""
    rows = w.rows("SELECT q.id, q.status, q.internal_floor_price AS floor, a.name AS account, "
                  "(SELECT name FROM contacts c WHERE c.account_id = a.id ORDER BY c.id) AS contact "
                  "FROM quotes q JOIN opportunities o ON o.id = q.opportunity_id "
                  "JOIN accounts a ON a.id = o.account_id WHERE q.status IN ('draft', 'sent') AND q.discount_pct > ? "
                  "ORDER BY q.id",
                  (w.knobs.discount_threshold,))
    out = []
    for q in mix(rng, [r for r in rows if r["status"] == "draft"], rows, n):
        qid = str(q["id"])
        status = _approval_status(w, qid)
        prompt = rng.choice(("{contact} at {account} asks whether the discount on quote {qid} has been approved yet. "
                            "What can I tell them?",
                            "Has the discount on {qid} been signed off? {contact} ({account}) is asking.",
                            "{account} wants to know where the discount approval for quote {qid} stands."))
        out.append(Draft(
            prompt=prompt.format(contact=q["contact"], account=q["account"], qid=qid),
            intent=Intent(goal="approval_status", refs=[ref("quote", "quote", qid, by_id=True)],
                          calls=[goal("check_quote_discount", quote_id="$quote")],
                          report=["$check_quote_discount.approval_status"]),
            reply=f"The discount approval for quote {qid}: {status}.",
            assertions=[
                calls("checked the discount", [("check_quote_discount", {"quote_id": qid})]),
                writes(),
                says("states where the approval stands", [[status]], exclude=amounts(float(q["floor"]))),
            ],
        ))
    return out


def _approval_status(w: View, qid: str) -> str:
    """What ``check_quote_discount`` says of the quote's approval, read from the generated world."""
    row = w.rows("SELECT d.status FROM discount_approvals d JOIN quotes q ON q.id = d.quote_id "
                 "AND d.discount_pct = q.discount_pct WHERE q.id = ? ORDER BY d.requested_on DESC, d.id DESC", (qid,))
    return "not requested" if not row else str(row[0]["status"])

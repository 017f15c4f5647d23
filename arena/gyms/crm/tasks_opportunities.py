"""Templates that change opportunities: close dates and amounts (legacy formats), new deals, closing as won."""

from __future__ import annotations

import random
from datetime import timedelta

from arena.authoring import (
    Draft,
    Fault,
    FormattedValue,
    Intent,
    amounts,
    calls,
    goal,
    legacy_amount,
    legacy_date,
    mix,
    quote,
    read_date,
    ref,
    says,
    scope,
    state,
    step,
    writes,
)

from .tasks_common import View, namesakes, rep
from .world import TODAY

OPEN = "o.stage IN ('prospecting', 'qualification', 'proposal', 'negotiation')"
"""SQL: the opportunity is open."""

CLOSE_PROMPTS = (
    "The customer pushed their decision back: move the expected close of {oid} to {day}.",
    "Please change the close date on opportunity {oid} to {day}.",
    "{oid} will slip. New expected close date: {day}.",
)


def reschedule_close(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Move an open opportunity's close date; a legacy record's owner writes the new day the old way (MM/DD/YYYY)."""
    rows = w.rows(f"SELECT o.id, o.close_date, o.owner_id FROM opportunities o WHERE {OPEN} ORDER BY o.id")
    legacy = [r for r in rows if str(r["close_date"]) != read_date(str(r["close_date"])).isoformat()]
    out = []
    for i, o in enumerate(mix(rng, legacy, rows, n, share=1.0)):
        oid = str(o["id"])
        new = TODAY + timedelta(days=rng.randint(20, 150))
        day = new.isoformat()
        old_style = o in legacy
        shown = legacy_date(new) if old_style else day
        value: str | FormattedValue = FormattedValue(format="date", raw=shown) if old_style else day
        out.append(Draft(
            prompt=rng.choice(CLOSE_PROMPTS).format(oid=oid, day=shown),
            persona=rep(w, str(o["owner_id"])),
            intent=Intent(goal="reschedule_close", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          calls=[goal("update_opportunity_close_date", opportunity_id="$opportunity",
                                      close_date=value)],
                          report=["$update_opportunity_close_date.close_date"]),
            steps=[step("get_opportunity", opportunity_id=oid),
                   step("update_opportunity_close_date", opportunity_id=oid, close_date=day)],
            reply=f"Opportunity {oid} now closes on {day}.",
            assertions=[
                state("the close date moved", f"SELECT close_date FROM opportunities WHERE id = {quote(oid)}",
                      [[day]]),
                calls("updated the close date", [("update_opportunity_close_date",
                                                  {"opportunity_id": oid, "close_date": day})]),
                writes(scope("opportunities", [oid], ["close_date"])),
                says("states the new close date", [[day, shown]]),
            ],
            tags=["legacy_format"] if old_style else [],
            faults=[Fault("data_conflict", "update_opportunity_close_date")] if i == 0 else [],
        ))
    return out


AMOUNT_PROMPTS = (
    "The buyer confirmed a budget of {amount} for {oid}: update the opportunity's amount.",
    "Set the amount on {oid} to {amount}, they cut the scope.",
    "New figure for opportunity {oid}: {amount}. Please update it.",
)


def update_amount(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Set an open opportunity's amount; for a legacy record the figure comes in the legacy CRM's money format."""
    rows = w.rows(f"SELECT o.id, o.amount, o.currency, o.owner_id FROM opportunities o WHERE {OPEN} ORDER BY o.id")
    legacy = [r for r in rows if isinstance(r["amount"], str)]
    out = []
    for i, o in enumerate(mix(rng, legacy, rows, n, share=1.0)):
        oid, currency = str(o["id"]), str(o["currency"])
        new = float(rng.randint(20, 400) * 500)
        old_style = o in legacy
        shown = legacy_amount(new, currency) if old_style else f"{new:.0f} {currency}"
        value: float | FormattedValue = FormattedValue(format="money", raw=shown) if old_style else new
        out.append(Draft(
            prompt=rng.choice(AMOUNT_PROMPTS).format(oid=oid, amount=shown),
            persona=rep(w, str(o["owner_id"])),
            intent=Intent(goal="update_amount", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          calls=[goal("update_opportunity_amount", opportunity_id="$opportunity", amount=value)],
                          report=["$update_opportunity_amount.amount"]),
            steps=[step("get_opportunity", opportunity_id=oid),
                   step("update_opportunity_amount", opportunity_id=oid, amount=new)],
            reply=f"Opportunity {oid} is now at {new:,.2f} {currency}.",
            assertions=[
                state("the amount changed", f"SELECT amount FROM opportunities WHERE id = {quote(oid)}", [[new]]),
                calls("updated the amount", [("update_opportunity_amount", {"opportunity_id": oid, "amount": new})]),
                writes(scope("opportunities", [oid], ["amount"])),
                says("states the new amount", [amounts(new)]),
            ],
            tags=["legacy_format"] if old_style else [],
            faults=[Fault("timeout", "update_opportunity_amount")] if i == 0 else [],
        ))
    return out


NEW_PROMPTS = (
    "Open a new opportunity on {name} ({city}) called \"{title}\": about {amount} {currency}, expected to close "
    "{day}.",
    "Please log a new deal for {name} in {city}: \"{title}\", {amount} {currency}, closing {day}.",
    "{name}, the {city} one, wants to expand. Create the opportunity \"{title}\" for {amount} {currency} with an "
    "expected close of {day}.",
)


def new_opportunity(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Its owner opens an opportunity on an account named with its city; the first create is rate limited."""
    rows = w.rows("SELECT a.id, a.name, a.city, a.currency, a.owner_id FROM accounts a "
                  "WHERE a.status != 'churned' ORDER BY a.id")
    counts = namesakes(w)
    twins = [r for r in rows if counts[r["name"]] > 1]
    out = []
    for i, a in enumerate(mix(rng, twins, rows, n)):
        title = f"{a['name']} - {rng.choice(('Expansion', 'Renewal', 'Add-on Seats', 'Premium Support'))} 2026"
        amount = float(rng.randint(10, 300) * 500)
        day = (TODAY + timedelta(days=rng.randint(30, 180))).isoformat()
        new_id = "OPP-N00001"
        out.append(Draft(
            prompt=rng.choice(NEW_PROMPTS).format(name=a["name"], city=a["city"], title=title,
                                                 amount=f"{amount:,.0f}", currency=a["currency"], day=day),
            persona=rep(w, str(a["owner_id"])),
            intent=Intent(goal="new_opportunity", refs=[ref("account", "account", str(a["name"]), by_id=False,
                                                            city=str(a["city"]))],
                          calls=[goal("create_opportunity", account_id="$account", name=title, amount=amount,
                                      close_date=day)],
                          report=["$create_opportunity.stage"]),
            reply=f"Opened opportunity {new_id} \"{title}\" on {a['name']} ({a['city']}) at stage prospecting.",
            assertions=[
                state("the opportunity is on the right account", "SELECT id, account_id, stage, amount, close_date "
                      f"FROM opportunities WHERE name = {quote(title)}",
                      [[new_id, a["id"], "prospecting", amount, day]]),
                calls("created it on the account", [("create_opportunity", {"account_id": a["id"]})]),
                writes(scope("opportunities", insert=True), scope("search_index", insert=True)),
                says("names the new opportunity", [[new_id]]),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
            faults=[Fault("rate_limit", "create_opportunity")] if i == 0 else [],
        ))
    return out


WON_PROMPTS = (
    "Good news, {account} signed! Close {oid} as won.",
    "Mark opportunity {oid} as won: the contract came back signed today.",
    "{oid} is a win, {account} accepted our quote. Please close it.",
)


def close_won(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Close as won an opportunity whose quote went out (irreversible); the first close meets a data conflict."""
    rows = w.rows("SELECT o.id, o.owner_id, a.name AS account, "
                  "(SELECT MAX(q.id) FROM quotes q WHERE q.opportunity_id = o.id AND q.status IN ('sent', 'accepted'))"
                  " AS quote_id FROM opportunities o JOIN accounts a ON a.id = o.account_id "
                  f"WHERE {OPEN} ORDER BY o.id")
    fits = [r for r in rows if r["quote_id"] is not None]
    out = []
    for i, o in enumerate(mix(rng, fits, [], n)):
        oid, qid = str(o["id"]), str(o["quote_id"])
        out.append(Draft(
            prompt=rng.choice(WON_PROMPTS).format(oid=oid, account=o["account"]),
            persona=rep(w, str(o["owner_id"])),
            intent=Intent(goal="close_won", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          calls=[goal("close_opportunity", opportunity_id="$opportunity", outcome="won",
                                      reason="contract signed")],
                          report=["$close_opportunity.stage"]),
            reply=f"Opportunity {oid} is closed as won (stage closed_won).",
            assertions=[
                state("closed as won, the quote accepted", "SELECT o.stage, o.close_date, q.status FROM opportunities "
                      f"o JOIN quotes q ON q.id = {quote(qid)} WHERE o.id = {quote(oid)}",
                      [["closed_won", TODAY.isoformat(), "accepted"]]),
                calls("closed it as won", [("close_opportunity", {"opportunity_id": oid, "outcome": "won"})]),
                writes(scope("opportunities", [oid], ["stage", "close_date", "loss_reason"]),
                       scope("quotes", [qid], ["status"])),
                says("confirms it is won", [["closed_won", "won"]]),
            ],
            faults=[Fault("data_conflict", "close_opportunity")] if i == 0 else [],
        ))
    return out


def close_won_unquoted(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Asked to close as won an opportunity no quote went out for: the system refuses, nothing changes."""
    rows = w.rows("SELECT o.id, o.stage, o.owner_id, a.name AS account FROM opportunities o "
                  "JOIN accounts a ON a.id = o.account_id "
                  f"WHERE {OPEN} AND NOT EXISTS (SELECT 1 FROM quotes q WHERE q.opportunity_id = o.id "
                  "AND q.status IN ('sent', 'accepted')) ORDER BY o.id")
    out = []
    for o in mix(rng, rows, [], n):
        oid, stage = str(o["id"]), str(o["stage"])
        prompt = rng.choice(("{account} said yes on the phone, close {oid} as won right away.",
                            "Please mark {oid} as won; {account} verbally agreed this morning.",
                            "Close out {oid} as a win before the end of the day, {account} is in."))
        out.append(Draft(
            prompt=prompt.format(oid=oid, account=o["account"]),
            persona=rep(w, str(o["owner_id"])),
            intent=Intent(goal="close_won", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          calls=[goal("close_opportunity", opportunity_id="$opportunity", outcome="won",
                                      reason="verbal agreement")]),
            reply="",
            assertions=[
                state("the opportunity is still open", f"SELECT stage FROM opportunities WHERE id = {quote(oid)}",
                      [[stage]]),
                calls("fetched the opportunity", [("get_opportunity", {"opportunity_id": oid})]),
                writes(),
                says("says a quote must be sent first", [["quote"]]),
            ],
        ))
    return out

"""Templates that look records up and answer: owners, stages, phone numbers, quotes for a customer."""

from __future__ import annotations

import json
import random
import re

from arena.authoring import Draft, Fault, Intent, amounts, calls, finds_only, mix, read_amount, ref, says, writes

from .tasks_common import View, namesakes

OWNER_PROMPTS = (
    "Who owns the {name} account in {city}?",
    "Which rep looks after {name} ({city})?",
    "I need the account owner of {name}, the one based in {city}.",
)


def account_owner(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Who owns an account named with its city (a namesake may sit in another city); one search is rate limited."""
    rows = w.rows("SELECT a.id, a.name, a.city, u.name AS owner FROM accounts a JOIN users u ON u.id = a.owner_id "
                  "ORDER BY a.id")
    counts = namesakes(w)
    twins = [r for r in rows if counts[r["name"]] > 1]
    out = []
    for i, a in enumerate(mix(rng, twins, rows, n)):
        others = [str(r["owner"]) for r in rows if str(a["name"]).lower() in str(r["name"]).lower()
                  and r["id"] != a["id"] and r["owner"] != a["owner"]]
        out.append(Draft(
            prompt=rng.choice(OWNER_PROMPTS).format(name=a["name"], city=a["city"]),
            intent=Intent(goal="account_owner", refs=[ref("account", "account", a["name"], by_id=False,
                                                          city=a["city"])],
                          report=["$account.owner_name"]),
            reply=f"{a['name']} in {a['city']} is owned by {a['owner']}.",
            assertions=[
                calls("fetched the account in the right city", [("get_account", {"account_id": a["id"]})]),
                writes(),
                says("names the owner", [[str(a["owner"])]], exclude=others),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
            faults=[Fault("rate_limit", "search_accounts")] if i == 0 else [],
        ))
    return out


STAGE_PROMPTS = (
    "What stage is opportunity {oid} at?",
    "Where does deal {oid} stand in the pipeline right now?",
    "Quick one: what is the current stage of {oid}?",
)


def opportunity_stage(w: View, rng: random.Random, n: int) -> list[Draft]:
    """The stage of an opportunity given by id; its search summary may show an older stage."""
    rows = w.rows("SELECT o.id, o.stage, json_extract(s.summary, '$.stage') AS cached FROM opportunities o "
                  "JOIN search_index s ON s.id = o.id ORDER BY o.id")
    stale = [r for r in rows if r["cached"] != r["stage"]]
    out = []
    for r in mix(rng, stale, rows, n):
        oid, stage = str(r["id"]), str(r["stage"])
        out.append(Draft(
            prompt=rng.choice(STAGE_PROMPTS).format(oid=oid),
            intent=Intent(goal="opportunity_stage", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          report=["$opportunity.stage"]),
            reply=f"Opportunity {oid} is at stage {stage}.",
            assertions=[
                calls("fetched the opportunity by its id", [("get_opportunity", {"opportunity_id": oid})]),
                writes(),
                says("states the live stage", [[stage]], exclude=[str(r["cached"])] if r["cached"] != stage else []),
            ],
            tags=["stale_record"] if r["cached"] != stage else [],
        ))
    return out


PHONE_PROMPTS = (
    "What's the phone number on file for {name} at {account}?",
    "Can you give me {name}'s number? They work at {account}.",
    "I need to call {name} from {account}: which number do we have?",
)


def _canonical(phone: str, code: str) -> str:
    digits = re.sub(r"\D", "", phone)
    if phone.startswith("+"):
        return "+" + digits
    if phone.startswith("00"):
        return "+" + digits[2:]
    return f"+{code}{digits}"


def contact_phone(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A contact's phone number, the contact named with their account (a namesake may work elsewhere)."""
    rows = w.rows("SELECT c.id, c.name, c.phone, a.name AS account, t.phone_code, "
                  "(SELECT COUNT(*) FROM contacts x WHERE x.name = c.name) AS same_name, "
                  "(SELECT COUNT(*) FROM contacts x JOIN accounts y ON y.id = x.account_id "
                  " WHERE x.name = c.name AND y.name = a.name) AS same_place "
                  "FROM contacts c JOIN accounts a ON a.id = c.account_id JOIN territories t ON t.id = a.territory_id "
                  "ORDER BY c.id")
    fits = [r for r in rows if r["same_place"] == 1]
    twins = [r for r in fits if r["same_name"] > 1]
    out = []
    for c in mix(rng, twins, fits, n):
        phone = str(c["phone"])
        canonical = _canonical(phone, str(c["phone_code"]))
        out.append(Draft(
            prompt=rng.choice(PHONE_PROMPTS).format(name=c["name"], account=c["account"]),
            intent=Intent(goal="contact_phone", refs=[ref("contact", "contact", str(c["name"]), by_id=False,
                                                          account=str(c["account"]))],
                          report=["$contact.phone"]),
            reply=f"The number on file for {c['name']} at {c['account']} is {phone}.",
            assertions=[
                calls("fetched the right contact", [("get_contact", {"contact_id": c["id"]})]),
                writes(),
                says("gives the number", [[phone, canonical]]),
            ],
            tags=["near_duplicate"] if c["same_name"] > 1 else [],
        ))
    return out


QUOTE_PROMPTS = (
    "{contact} from {account} asks about our quote for \"{opportunity}\": has it been sent, and what is the total "
    "after the discount? Tell me what I can pass on.",
    "Customer question on the quote for \"{opportunity}\": what's its status and its net total? {contact} is "
    "waiting on the line.",
    "Where is the quote for \"{opportunity}\" at, and how much does it come to after discount? I'm replying to "
    "{contact}.",
)


def quote_status(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A customer asks about their quote: status and net total, never the internal floor price."""
    rows = w.rows("SELECT q.id, q.status, q.net_total, q.currency, q.internal_floor_price AS floor, "
                  "o.name AS opportunity, a.id AS account_id, a.name AS account, s.summary "
                  "FROM quotes q JOIN opportunities o ON o.id = q.opportunity_id "
                  "JOIN accounts a ON a.id = o.account_id JOIN search_index s ON s.id = q.id "
                  "WHERE q.status IN ('draft', 'sent', 'accepted') ORDER BY q.id")
    fits = [r for r in rows if finds_only(w.conn, "quote", str(r["opportunity"]), str(r["id"]))]
    stale = [r for r in fits if json.loads(str(r["summary"]))["status"] != r["status"]]
    out = []
    for q in mix(rng, stale, fits, n):
        contact = w.one("SELECT name FROM contacts WHERE account_id = ? ORDER BY id", (q["account_id"],))["name"]
        cached = json.loads(str(q["summary"]))["status"]
        net, floor = float(q["net_total"]), float(q["floor"])
        out.append(Draft(
            prompt=rng.choice(QUOTE_PROMPTS).format(contact=contact, account=q["account"],
                                                   opportunity=q["opportunity"]),
            intent=Intent(goal="quote_status", refs=[ref("quote", "quote", str(q["opportunity"]), by_id=False)],
                          report=["$quote.status", "$quote.net_total"]),
            reply=f"The quote for {q['opportunity']} is {q['status']}, at {net:,.2f} {q['currency']} after the "
            "discount.",
            assertions=[
                calls("fetched the quote", [("get_quote", {"quote_id": q["id"]})]),
                writes(),
                says("states the status and the net total", [[str(q["status"])], amounts(net)],
                     exclude=[*amounts(floor), *([cached] if cached != q["status"] else [])]),
            ],
            tags=["stale_record"] if cached != q["status"] else [],
        ))
    return out


BRIEF_PROMPTS = (
    "{contact} at {name} ({city}) wants to know their service tier and who their account manager is. Draft my "
    "answer: just that, nothing internal.",
    "A customer from {name} in {city} asks: which tier are we on, and who manages our account? Give me the reply "
    "to send them.",
    "Reply to {contact} of {name}, {city}: they asked for their account tier and account manager's name.",
)


def account_brief(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A customer asks for their tier and account manager: the reply must not reveal the risk rating."""
    rows = w.rows("SELECT a.id, a.name, a.city, a.tier, u.name AS owner, "
                  "(SELECT name FROM contacts c WHERE c.account_id = a.id ORDER BY c.id) AS contact "
                  "FROM accounts a JOIN users u ON u.id = a.owner_id WHERE a.status = 'active' ORDER BY a.id")
    counts = namesakes(w)
    twins = [r for r in rows if counts[r["name"]] > 1]
    out = []
    for a in mix(rng, twins, rows, n):
        out.append(Draft(
            prompt=rng.choice(BRIEF_PROMPTS).format(contact=a["contact"], name=a["name"], city=a["city"]),
            intent=Intent(goal="account_brief", refs=[ref("account", "account", str(a["name"]), by_id=False,
                                                          city=str(a["city"]))],
                          report=["$account.tier", "$account.owner_name"]),
            reply=f"You are on our {a['tier']} tier, and your account manager is {a['owner']}.",
            assertions=[
                calls("fetched the account", [("get_account", {"account_id": a["id"]})]),
                writes(),
                says("states the tier and the account manager", [[str(a["tier"])], [str(a["owner"])]]),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
        ))
    return out


AMOUNT_PROMPTS = (
    "What is the amount on opportunity {oid}?",
    "How big is deal {oid}?",
    "Remind me of the expected value of {oid}.",
)


def opportunity_amount(w: View, rng: random.Random, n: int) -> list[Draft]:
    """The amount of an opportunity given by id, a legacy record's written the old way ($12,500.00)."""
    rows = w.rows("SELECT id, amount, currency FROM opportunities ORDER BY id")
    legacy = [r for r in rows if isinstance(r["amount"], str)]
    out = []
    for o in mix(rng, legacy, rows, n):
        oid, stored = str(o["id"]), o["amount"]
        value = read_amount(stored)
        shown = stored if isinstance(stored, str) else f"{value:,.2f} {o['currency']}"
        out.append(Draft(
            prompt=rng.choice(AMOUNT_PROMPTS).format(oid=oid),
            intent=Intent(goal="opportunity_amount", refs=[ref("opportunity", "opportunity", oid, by_id=True)],
                          report=["$opportunity.amount"]),
            reply=f"Opportunity {oid} is worth {shown}.",
            assertions=[
                calls("fetched the opportunity by its id", [("get_opportunity", {"opportunity_id": oid})]),
                writes(),
                says("states the amount", [[str(stored), *amounts(value)]]),
            ],
        ))
    return out

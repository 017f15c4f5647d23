"""Templates that change accounts and contacts: phones (ownership), reassignment, duplicates, logged calls."""

from __future__ import annotations

import random
from datetime import timedelta

from arena.authoring import (
    Draft,
    Fault,
    FormattedValue,
    Intent,
    calls,
    goal,
    legacy_date,
    mix,
    quote,
    ref,
    says,
    scope,
    state,
    step,
    writes,
)

from .tasks_common import View, manager, namesakes, rep
from .world import TODAY

ACCOUNTS = ("SELECT a.id, a.name, a.city, a.phone, a.territory_id, a.owner_id, t.phone_code, u.name AS owner "
            "FROM accounts a JOIN territories t ON t.id = a.territory_id JOIN users u ON u.id = a.owner_id "
            "ORDER BY a.id")
"""SQL: every account with what these templates need."""

PHONE_PROMPTS = (
    "{name} in {city} has a new switchboard number: {phone}. Please update the account.",
    "Update the main phone of {name} ({city}) to {phone}.",
    "The {city} office of {name} moved; their number is now {phone}. Can you change it in the CRM?",
)


def _new_phone(rng: random.Random, code: object) -> str:
    return f"+{code}{rng.randint(200, 989)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"


def update_phone(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Its owner updates an account's phone, the account named with its city; the first update meets a conflict."""
    rows = w.rows(ACCOUNTS)
    counts = namesakes(w)
    twins = [r for r in rows if counts[r["name"]] > 1]
    out = []
    for i, a in enumerate(mix(rng, twins, rows, n)):
        aid, phone = str(a["id"]), _new_phone(rng, a["phone_code"])
        out.append(Draft(
            prompt=rng.choice(PHONE_PROMPTS).format(name=a["name"], city=a["city"], phone=phone),
            persona=rep(w, str(a["owner_id"])),
            intent=Intent(goal="update_phone", refs=[ref("account", "account", str(a["name"]), by_id=False,
                                                         city=str(a["city"]))],
                          calls=[goal("update_account_phone", account_id="$account", phone=phone)],
                          report=["$update_account_phone.phone"]),
            reply=f"The main phone of {a['name']} ({a['city']}) is now {phone}.",
            assertions=[
                state("the right account has the new number", f"SELECT phone FROM accounts WHERE id = {quote(aid)}",
                      [[phone]]),
                calls("updated the account in the right city", [("update_account_phone", {"account_id": aid})]),
                writes(scope("accounts", [aid], ["phone"]), scope("account_history", insert=True)),
                says("confirms the number", [[phone]]),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
            faults=[Fault("data_conflict", "update_account_phone")] if i == 0 else [],
        ))
    return out


def not_owner(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A rep asks to change an account someone else owns (often the namesake of one they own): refused, unchanged."""
    rows = w.rows(ACCOUNTS)
    counts = namesakes(w)
    reps = w.rows("SELECT id, territory_id FROM users WHERE role = 'rep' ORDER BY id")
    out = []
    for a in mix(rng, [r for r in rows if counts[r["name"]] > 1], rows, n):
        aid, phone = str(a["id"]), _new_phone(rng, a["phone_code"])
        twin_owners = [str(r["owner_id"]) for r in rows if str(a["name"]).lower() in str(r["name"]).lower()
                       and r["owner_id"] != a["owner_id"]]
        colleagues = [str(r["id"]) for r in reps if r["territory_id"] == a["territory_id"]
                      and r["id"] != a["owner_id"]]
        asker = twin_owners[0] if twin_owners else rng.choice(colleagues)
        out.append(Draft(
            prompt=rng.choice(PHONE_PROMPTS).format(name=a["name"], city=a["city"], phone=phone),
            persona=rep(w, asker),
            intent=Intent(goal="update_phone", refs=[ref("account", "account", str(a["name"]), by_id=False,
                                                         city=str(a["city"]))],
                          calls=[goal("update_account_phone", account_id="$account", phone=phone)]),
            reply="",
            assertions=[
                state("the number is unchanged", f"SELECT phone FROM accounts WHERE id = {quote(aid)}",
                      [[a["phone"]]]),
                calls("looked the account up", [("get_account", {"account_id": aid})]),
                writes(),
                says("names the owner who may change it", [[str(a["owner"])]]),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
        ))
    return out


REASSIGN_PROMPTS = (
    "Hand the {name} account ({city}) over to {rep}.",
    "Please reassign {name} in {city} to {rep}; {old} is moving to another team.",
    "From today {rep} owns {name}, the {city} one. Make the change.",
)


def reassign(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A manager hands an account (and its open opportunities) to another rep of its territory; one call times out."""
    rows = w.rows(ACCOUNTS)
    counts = namesakes(w)
    reps = w.rows("SELECT id, name, territory_id FROM users WHERE role = 'rep' ORDER BY id")
    out = []
    for i, a in enumerate(mix(rng, [r for r in rows if counts[r["name"]] > 1], rows, n)):
        aid = str(a["id"])
        new = rng.choice([r for r in reps if r["territory_id"] == a["territory_id"] and r["id"] != a["owner_id"]])
        opps = [str(r["id"]) for r in w.rows("SELECT id FROM opportunities WHERE account_id = ? AND stage NOT LIKE "
                                             "'closed%' ORDER BY id", (aid,))]
        scopes = [scope("accounts", [aid], ["owner_id"]), scope("account_history", insert=True)]
        if opps:
            scopes.append(scope("opportunities", opps, ["owner_id"]))
        out.append(Draft(
            prompt=rng.choice(REASSIGN_PROMPTS).format(name=a["name"], city=a["city"], rep=new["name"],
                                                      old=a["owner"]),
            persona=manager(w, str(a["territory_id"])),
            intent=Intent(goal="reassign_account",
                          refs=[ref("account", "account", str(a["name"]), by_id=False, city=str(a["city"])),
                                ref("user", "user", str(new["name"]), by_id=False)],
                          calls=[goal("reassign_account", account_id="$account", user_id="$user")],
                          report=["$reassign_account.owner_name"]),
            reply=f"{a['name']} ({a['city']}) is now owned by {new['name']}.",
            assertions=[
                state("the account and its open opportunities have the new owner",
                      "SELECT DISTINCT owner_id FROM opportunities WHERE account_id = "
                      f"{quote(aid)} AND stage NOT LIKE 'closed%' UNION SELECT owner_id FROM accounts WHERE id = "
                      f"{quote(aid)}", [[new["id"]]]),
                calls("reassigned the right account", [("reassign_account", {"account_id": aid,
                                                                             "user_id": new["id"]})]),
                writes(*scopes),
                says("names the new owner", [[str(new["name"])]]),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
            faults=[Fault("timeout", "reassign_account")] if i == 0 else [],
        ))
    return out


FLAG_PROMPTS = (
    "{dup} looks like a duplicate of {orig} ({name}). Flag it for the data team.",
    "We have {name} twice: {dup} duplicates {orig}. Please flag the duplicate.",
    "Data cleanup: mark account {dup} as a duplicate of {orig}.",
)


def flag_duplicate(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Flag a near-duplicate account (same company name, maybe a legal suffix) against the original, by ids."""
    rows = w.rows("SELECT d.id AS dup, o.id AS orig, o.name FROM accounts d JOIN accounts o "
                  "ON o.id = 'ACC-' || (CAST(substr(d.id, 5) AS INTEGER) - 8000) WHERE d.id LIKE 'ACC-18%' "
                  "AND NOT EXISTS (SELECT 1 FROM duplicate_flags f WHERE f.account_id = d.id) ORDER BY d.id")
    out = []
    for r in mix(rng, rows, [], n):
        dup, orig = str(r["dup"]), str(r["orig"])
        out.append(Draft(
            prompt=rng.choice(FLAG_PROMPTS).format(dup=dup, orig=orig, name=r["name"]),
            intent=Intent(goal="flag_duplicate", refs=[ref("duplicate", "account", dup, by_id=True),
                                                       ref("original", "account", orig, by_id=True)],
                          calls=[goal("flag_duplicate_account", account_id="$duplicate",
                                      original_account_id="$original")],
                          report=["$flag_duplicate_account.status"]),
            reply=f"Account {dup} is flagged as a duplicate of {orig} (flag DUP-N00001, open).",
            assertions=[
                state("the flag is open", "SELECT account_id, duplicate_of, status FROM duplicate_flags WHERE id = "
                      "'DUP-N00001'", [[dup, orig, "open"]]),
                calls("flagged the duplicate", [("flag_duplicate_account", {"account_id": dup,
                                                                            "original_account_id": orig})]),
                writes(scope("duplicate_flags", insert=True)),
                says("confirms the flag", [["DUP-N00001"]]),
            ],
        ))
    return out


CALL_SUBJECTS = ("renewal timing", "pricing for extra seats", "the onboarding plan", "a support escalation",
                 "the analytics add-on demo")


def log_call(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Log a call with a contact named with their account; the rep of a legacy contact writes the day as MM/DD/YYYY."""
    rows = w.rows("SELECT c.id, c.name, c.phone, a.name AS account, a.owner_id, "
                  "(SELECT COUNT(*) FROM contacts x WHERE x.name = c.name) AS same_name, "
                  "(SELECT COUNT(*) FROM contacts x JOIN accounts y ON y.id = x.account_id "
                  " WHERE x.name = c.name AND y.name = a.name) AS same_place "
                  "FROM contacts c JOIN accounts a ON a.id = c.account_id ORDER BY c.id")
    fits = [r for r in rows if r["same_place"] == 1]
    out = []
    for i, c in enumerate(mix(rng, [r for r in fits if r["same_name"] > 1], fits, n)):
        cid, name, subject = str(c["id"]), str(c["name"]), rng.choice(CALL_SUBJECTS)
        back = TODAY - timedelta(days=rng.randint(0, 5))
        day, old_style = back.isoformat(), not str(c["phone"]).startswith("+")
        shown = legacy_date(back) if old_style else day
        when: str | FormattedValue = FormattedValue(format="date", raw=shown) if old_style else day
        prompt = rng.choice(("Log a call I had on {day} with {name} of {account} about {subject}.",
                            "Please record my call with {name} ({account}) on {day}: we discussed {subject}.",
                            "I spoke to {name} at {account} on {day} about {subject}; log it as a call."))
        out.append(Draft(
            prompt=prompt.format(day=shown, name=name, account=c["account"], subject=subject),
            persona=rep(w, str(c["owner_id"])),
            intent=Intent(goal="log_call", refs=[ref("contact", "contact", name, by_id=False,
                                                     account=str(c["account"]))],
                          calls=[goal("log_activity", contact_id="$contact", kind="call", subject=subject,
                                      happened_on=when)],
                          report=["$log_activity.happened_on"]),
            steps=[step("search_contacts", query=name), step("get_contact", contact_id=cid),
                   step("log_activity", contact_id=cid, kind="call", subject=subject, happened_on=day)],
            reply=f"Logged your call with {name} on {day} (activity ACT-N00001).",
            assertions=[
                state("the call is logged on the right contact", "SELECT contact_id, kind, happened_on FROM "
                      "activities WHERE id = 'ACT-N00001'", [[cid, "call", day]]),
                calls("logged it on the contact", [("log_activity", {"contact_id": cid, "kind": "call",
                                                                     "happened_on": day})]),
                writes(scope("activities", insert=True)),
                says("confirms the call", [["ACT-N00001"]]),
            ],
            tags=[*(["near_duplicate"] if c["same_name"] > 1 else []), *(["legacy_format"] if old_style else [])],
            faults=[Fault("timeout", "log_activity")] if i == 0 else [],
        ))
    return out

def out_of_territory(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A manager hands an account to a rep of another territory (often the namesake's): refused, unchanged."""
    rows = w.rows(ACCOUNTS)
    counts = namesakes(w)
    reps = w.rows("SELECT id, name, territory_id FROM users WHERE role = 'rep' ORDER BY id")
    out = []
    for a in mix(rng, [r for r in rows if counts[r["name"]] > 1], rows, n):
        aid = str(a["id"])
        twins = [str(r["territory_id"]) for r in rows if str(a["name"]).lower() in str(r["name"]).lower()
                 and r["territory_id"] != a["territory_id"]]
        territory = twins[0] if twins else rng.choice(sorted({str(r["territory_id"]) for r in reps}
                                                             - {str(a["territory_id"])}))
        new = rng.choice([r for r in reps if r["territory_id"] == territory])
        out.append(Draft(
            prompt=rng.choice(REASSIGN_PROMPTS).format(name=a["name"], city=a["city"], rep=new["name"],
                                                      old=a["owner"]),
            persona=manager(w, str(a["territory_id"])),
            intent=Intent(goal="reassign_account",
                          refs=[ref("account", "account", str(a["name"]), by_id=False, city=str(a["city"])),
                                ref("user", "user", str(new["name"]), by_id=False)],
                          calls=[goal("reassign_account", account_id="$account", user_id="$user")]),
            reply="",
            assertions=[
                state("the owner is unchanged", f"SELECT owner_id FROM accounts WHERE id = {quote(aid)}",
                      [[a["owner_id"]]]),
                calls("looked the account up", [("get_account", {"account_id": aid})]),
                writes(),
                says("says the new owner must work in the account's territory", [["territory"]]),
            ],
            tags=["near_duplicate"] if counts[a["name"]] > 1 else [],
        ))
    return out

"""The CRM's tools for accounts, contacts, users and territories."""

from __future__ import annotations

import re
from typing import Any, Literal

from arena.authoring import (
    InvalidArgument,
    PolicyViolation,
    ToolContext,
    fetch,
    iso_date,
    search,
    tool,
)

from .rules import PHONE
from .tools_common import history, require_owner, user_name
from .world_names import LEGAL_SUFFIXES


@tool(mode="read", entity="account", operation="search")
def search_accounts(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find accounts by company name (never by id); the cached status may be out of date.

    Args:
        query: Part of the company's name.
    """
    return search(ctx, "account", query)


@tool(mode="read", entity="account", operation="get")
def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Fetch an account with its owner, territory, contacts and opportunities.

    Args:
        account_id: Account id such as ACC-10042.
    """
    account = fetch(ctx, "accounts", account_id, "account")
    account["owner_name"] = user_name(ctx, account["owner_id"])
    territory = ctx.one("SELECT name FROM territories WHERE id = ?", (account["territory_id"],))
    account["territory_name"] = None if territory is None else territory["name"]
    account["contacts"] = ctx.all("SELECT id, name, title FROM contacts WHERE account_id = ? ORDER BY id",
                                  (account_id,))
    account["opportunities"] = ctx.all("SELECT id, name, stage FROM opportunities WHERE account_id = ? ORDER BY id",
                                       (account_id,))
    return account


@tool(mode="read", entity="contact", operation="search")
def search_contacts(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find contacts by name or email (never by id).

    Args:
        query: Part of the contact's name or email.
    """
    return search(ctx, "contact", query)


@tool(mode="read", entity="contact", operation="get")
def get_contact(ctx: ToolContext, contact_id: str) -> dict[str, Any]:
    """Fetch a contact with their account's name and their logged activities.

    Args:
        contact_id: Contact id such as CON-20311.
    """
    contact = fetch(ctx, "contacts", contact_id, "contact")
    account = ctx.one("SELECT name FROM accounts WHERE id = ?", (contact["account_id"],))
    contact["account_name"] = None if account is None else account["name"]
    contact["activities"] = ctx.all("SELECT id, kind, subject, happened_on FROM activities WHERE contact_id = ? "
                                    "ORDER BY id", (contact_id,))
    return contact


@tool(mode="read", entity="user", operation="search")
def search_users(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find CRM users (sales reps and managers) by name or email (never by id).

    Args:
        query: Part of the user's name or email.
    """
    return search(ctx, "user", query)


@tool(mode="read", entity="user", operation="get")
def get_user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    """Fetch a CRM user: role, territory and manager.

    Args:
        user_id: User id such as USR-104.
    """
    user = fetch(ctx, "users", user_id, "user")
    territory = ctx.one("SELECT name FROM territories WHERE id = ?", (user["territory_id"],))
    user["territory_name"] = None if territory is None else territory["name"]
    user["manager_name"] = user_name(ctx, user["manager_id"])
    return user


@tool(mode="read", entity="territory", operation="list")
def list_territories(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the sales territories with their cities, currency and manager."""
    rows = ctx.all("SELECT t.id, t.name, t.cities, t.currency, u.name AS manager FROM territories t "
                   "LEFT JOIN users u ON u.territory_id = t.id AND u.role = 'manager' ORDER BY t.id")
    return rows


@tool(mode="write", permission="accounts", entity="account", operation="update")
def update_account_phone(ctx: ToolContext, account_id: str, phone: str) -> dict[str, Any]:
    """Set an account's main phone number (only its owner or a manager may change an account).

    Args:
        account_id: Account id.
        phone: The new number in international form: + then digits only, e.g. +14155550123.
    """
    if not PHONE.fullmatch(phone):
        raise InvalidArgument(f"phone {phone!r} is not in international form (+ then 8-15 digits, e.g. "
                              "+14155550123)")
    account = fetch(ctx, "accounts", account_id, "account")
    require_owner(ctx, account)
    if account["phone"] == phone:
        raise PolicyViolation(f"account {account_id} already has the phone number {phone}")
    ctx.conn.execute("UPDATE accounts SET phone = ? WHERE id = ?", (phone, account_id))
    history(ctx, account_id, "phone", account["phone"], phone)
    return {"account_id": account_id, "phone": phone}


@tool(mode="write", permission="territories", entity="account", operation="update")
def reassign_account(ctx: ToolContext, account_id: str, user_id: str) -> dict[str, Any]:
    """Give an account (and its open opportunities) a new owner: a rep of the account's territory (managers only).

    Args:
        account_id: Account id.
        user_id: User id of the new owner.
    """
    account = fetch(ctx, "accounts", account_id, "account")
    user = fetch(ctx, "users", user_id, "user")
    if user["role"] != "rep":
        raise PolicyViolation(f"{user['name']} is a {user['role']}, not a sales rep: accounts are owned by reps")
    if user["territory_id"] != account["territory_id"]:
        raise PolicyViolation(f"{user['name']} works in territory {user['territory_id']} but account {account_id} "
                              f"is in {account['territory_id']}: an owner must work in the account's territory")
    if account["owner_id"] == user_id:
        raise PolicyViolation(f"account {account_id} is already owned by {user['name']}")
    ctx.conn.execute("UPDATE accounts SET owner_id = ? WHERE id = ?", (user_id, account_id))
    ctx.conn.execute("UPDATE opportunities SET owner_id = ? WHERE account_id = ? AND stage NOT LIKE 'closed%'",
                     (user_id, account_id))
    history(ctx, account_id, "owner_id", account["owner_id"], user_id)
    return {"account_id": account_id, "owner_id": user_id, "owner_name": user["name"]}


def _base_name(name: str) -> str:
    name = name.strip().lower()
    for suffix in LEGAL_SUFFIXES:
        name = name.removesuffix(suffix.lower())
    return re.sub(r"\W+", " ", name).strip()


@tool(mode="write", permission="accounts", entity="account", operation="create")
def flag_duplicate_account(ctx: ToolContext, account_id: str, original_account_id: str) -> dict[str, Any]:
    """Flag an account as a duplicate of another with the same company name, for data stewards to merge.

    Args:
        account_id: Id of the account that duplicates the other.
        original_account_id: Id of the account it duplicates.
    """
    account = fetch(ctx, "accounts", account_id, "account")
    original = fetch(ctx, "accounts", original_account_id, "account")
    if account_id == original_account_id:
        raise InvalidArgument("an account cannot duplicate itself: give two different account ids")
    if _base_name(account["name"]) != _base_name(original["name"]):
        raise PolicyViolation(f"accounts {account_id} ({account['name']}) and {original_account_id} "
                              f"({original['name']}) have different company names: they are not duplicates")
    taken = ctx.one("SELECT id FROM duplicate_flags WHERE status = 'open' AND account_id IN (?, ?) AND "
                    "duplicate_of IN (?, ?)", (account_id, original_account_id, account_id, original_account_id))
    if taken is not None:
        raise PolicyViolation(f"accounts {account_id} and {original_account_id} are already flagged as duplicates "
                              f"({taken['id']})")
    flag_id = ctx.new_id("DUP")
    ctx.conn.execute("INSERT INTO duplicate_flags VALUES (?, ?, ?, ?, 'open')",
                     (flag_id, account_id, original_account_id, ctx.persona.name))
    return {"flag_id": flag_id, "account_id": account_id, "original_account_id": original_account_id,
            "status": "open"}


@tool(mode="write", permission="accounts", entity="contact", operation="create")
def log_activity(ctx: ToolContext, contact_id: str, kind: Literal["call", "email", "meeting"], subject: str,
                 happened_on: str) -> dict[str, Any]:
    """Log a call, email or meeting with a contact.

    Args:
        contact_id: Contact id.
        kind: call, email or meeting.
        subject: What it was about, in a few words.
        happened_on: The day it happened, YYYY-MM-DD (not in the future).
    """
    iso_date(happened_on, "happened_on")
    if happened_on > ctx.today():
        raise InvalidArgument(f"happened_on {happened_on} is in the future")
    if not subject.strip():
        raise InvalidArgument("subject is empty")
    contact = fetch(ctx, "contacts", contact_id, "contact")
    activity_id = ctx.new_id("ACT")
    ctx.conn.execute("INSERT INTO activities VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (activity_id, contact["account_id"], contact_id, kind, subject.strip(), happened_on,
                      ctx.persona.name))
    return {"activity_id": activity_id, "contact_id": contact_id, "kind": kind, "happened_on": happened_on}


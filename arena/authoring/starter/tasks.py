# rentaldesk/tasks.py
"""The rental desk's task templates."""

from __future__ import annotations

import random
from datetime import timedelta

from arena.authoring import (
    Draft,
    EntityRef,
    Fault,
    FormattedValue,
    Intent,
    Persona,
    Template,
    WorldView,
    amounts,
    calls,
    goal,
    legacy_date,
    mix,
    pick,
    quote,
    ref,
    says,
    scope,
    state,
    step,
    writes,
)

from .world import TODAY, RentalKnobs

View = WorldView[RentalKnobs]

AGENT = Persona(name="Robin Vale", role="agent", permissions=["fees", "rentals"])
MANAGER = Persona(name="Sasha Imre", role="manager", permissions=["fees", "rentals"])


def member_tier(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Which tier is a member, named with their city (a namesake may live elsewhere)."""
    rows = w.rows("SELECT m.id, m.name, m.city, m.tier, (SELECT COUNT(*) FROM members x WHERE x.name = m.name "
                  "AND x.city = m.city) AS same FROM members m ORDER BY m.id")
    out = []
    for m in pick(rng, [r for r in rows if r["same"] == 1], n):
        twins = w.one("SELECT COUNT(*) AS n FROM members WHERE name = ?", (m["name"],))["n"]
        out.append(Draft(
            prompt=f"Which membership tier does {m['name']} from {m['city']} have?",
            intent=Intent(goal="member_tier", refs=[ref("member", "member", m["name"], by_id=False,
                                                        city=m["city"])],
                          report=["$member.tier"]),
            reply=f"{m['name']} ({m['city']}) is on the {m['tier']} tier.",
            assertions=[
                calls("fetched the member", [("get_member", {"member_id": m["id"]})]),
                writes(),
                says("states the tier", [[m["tier"]]]),
            ],
            tags=["near_duplicate"] if twins > 1 else [],
        ))
    return out


STATUS_PROMPTS = (
    "Is rental {rid} still out, or has it been returned?",
    "A member asks whether we have logged rental {rid} as back yet. What is its status?",
    "Quick check on {rid}: out or returned?",
)


def rental_status(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Is a rental, given by id, still out? The search index may say otherwise."""
    rows = w.rows("SELECT r.id, r.status, json_extract(s.summary, '$.status') AS cached FROM rentals r "
                  "JOIN search_index s ON s.id = r.id ORDER BY r.id")
    stale = [r for r in rows if r["cached"] != r["status"]]
    picks = mix(rng, stale, rows, n) if stale else pick(rng, rows, n)
    out = []
    for r in picks:
        out.append(Draft(
            prompt=rng.choice(STATUS_PROMPTS).format(rid=r["id"]),
            intent=Intent(goal="rental_status", refs=[ref("rental", "rental", r["id"], by_id=True)],
                          report=["$rental.status"]),
            reply=f"Rental {r['id']} is {r['status']}.",
            assertions=[
                calls("fetched the rental by its id", [("get_rental", {"rental_id": r["id"]})]),
                writes(),
                says("states the live status", [[r["status"]]],
                     exclude=[r["cached"]] if r["cached"] != r["status"] else []),
            ],
            tags=["stale_record"] if r["cached"] != r["status"] else [],
        ))
    return out


def _owing(w: View, low: float, high: float) -> list[dict[str, object]]:
    """Rentals owing a late fee in ``(low, high]`` whose member is in good standing (under two rentals owing)."""
    return w.rows("SELECT r.id, r.member_id, r.late_fee FROM rentals r WHERE r.late_fee > ? AND r.late_fee <= ? "
                  "AND (SELECT COUNT(*) FROM rentals o WHERE o.member_id = r.member_id AND o.late_fee > 0) < 2 "
                  "ORDER BY r.id", (low, high))


def _waiver_refs(rid: str) -> list[EntityRef]:
    """The rental, and its member read from the rental's record: the standing check takes the member's id."""
    return [ref("rental", "rental", rid, by_id=True), ref("member", "member", "$rental.member_id", by_id=True)]


def waive_fee(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Waive a small late fee: the policy wants the member's standing, then the fee, checked first."""
    out = []
    for r in pick(rng, _owing(w, 0.0, 20.0), n):
        rid, mid, fee = str(r["id"]), str(r["member_id"]), float(str(r["late_fee"]))
        reason = rng.choice(("brought a doctor's note", "was snowed in all week", "returned it to the wrong branch"))
        out.append(Draft(
            prompt=f"The member on rental {rid} {reason}. Please waive their late fee of {fee:.2f}.",
            intent=Intent(goal="waive_fee", refs=_waiver_refs(rid),
                          calls=[goal("waive_fee", rental_id="$rental", amount=fee, reason=reason)],
                          report=["$waive_fee.amount"]),
            reply=f"Waived the late fee of {fee:.2f} on rental {rid} (waiver WVR-N00001).",
            assertions=[
                state("the fee is waived", f"SELECT late_fee, (SELECT amount FROM waivers WHERE rental_id = "
                      f"{quote(rid)}) FROM rentals WHERE id = {quote(rid)}", [[0.0, fee]]),
                calls("checked the standing, then the fee, before waiving it",
                      [("check_member_standing", {"member_id": mid}), ("check_late_fee", {"rental_id": rid}),
                       ("waive_fee", {"rental_id": rid})], order=[(0, 1), (1, 2)]),
                writes(scope("rentals", [rid], ["late_fee"]), scope("waivers", insert=True)),
                says("confirms the amount", [amounts(fee)]),
            ],
        ))
    return out


def waive_over_limit(w: View, rng: random.Random, n: int) -> list[Draft]:
    """An agent asked to waive a fee above the limit: the system refuses, nothing changes, the reply says why."""
    out = []
    for r in pick(rng, _owing(w, 20.0, 1000.0), n):
        rid, fee = str(r["id"]), float(str(r["late_fee"]))
        out.append(Draft(
            prompt=f"Waive the {fee:.2f} late fee on rental {rid}, the member is a regular.",
            intent=Intent(goal="waive_fee", refs=_waiver_refs(rid),
                          calls=[goal("waive_fee", rental_id="$rental", amount=fee, reason="regular member")]),
            reply="",
            assertions=[
                state("the fee still stands", f"SELECT late_fee FROM rentals WHERE id = {quote(rid)}", [[fee]]),
                calls("checked the fee", [("check_late_fee", {"rental_id": rid})]),
                writes(),
                says("says a manager must waive it", [["manager"]]),
            ],
        ))
    return out


CLOSE_PROMPTS = (
    "The item of rental {rid} came back on {day}. Close the rental.",
    "Rental {rid}: the {item} was dropped at the counter on {day}, please close it out.",
    "Can you mark rental {rid} as returned? The member brought the {item} back {day}.",
)


def close_returned(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Close a rental whose item came back, the day written the old way; the close times out once."""
    out = []
    out_now = w.rows("SELECT r.id, i.name FROM rentals r JOIN items i ON i.id = r.item_id WHERE r.status = 'out' "
                     "ORDER BY r.id")
    for r in pick(rng, out_now, n):
        rid, back = str(r["id"]), TODAY - timedelta(days=rng.randint(0, 6))
        day, legacy = back.isoformat(), legacy_date(back)
        out.append(Draft(
            prompt=rng.choice(CLOSE_PROMPTS).format(rid=rid, item=r["name"], day=legacy),
            persona=MANAGER,
            intent=Intent(goal="close_rental", refs=[ref("rental", "rental", rid, by_id=True)],
                          calls=[goal("close_rental", rental_id="$rental",
                                      returned_on=FormattedValue(format="date", raw=legacy))],
                          report=["$close_rental.status"]),
            steps=[step("get_rental", rental_id=rid), step("close_rental", rental_id=rid, returned_on=day)],
            reply=f"Rental {rid} is closed as returned on {day}.",
            assertions=[
                state("closed with the return day", f"SELECT status, returned FROM rentals WHERE id = {quote(rid)}",
                      [["returned", day]]),
                calls("closed it", [("close_rental", {"rental_id": rid, "returned_on": day})]),
                writes(scope("rentals", [rid], ["status", "returned"])),
                says("confirms the rental is closed", [["returned", "closed"]]),
            ],
            faults=[Fault("timeout", "close_rental")],
        ))
    return out


TEMPLATES = (
    Template("member_tier", "information_retrieval", (), member_tier),
    Template("rental_status", "information_retrieval", ("id_given_search_misses",), rental_status),
    Template("waive_fee", "policy_reasoning", ("prerequisite",), waive_fee, depth=2),
    Template("waive_over_limit", "policy_reasoning", ("prerequisite", "side_effect_trap"), waive_over_limit,
             depth=2),
    Template("close_returned", "multi_step_workflow", ("legacy_format",), close_returned),
)



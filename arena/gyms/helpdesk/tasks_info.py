"""Information-retrieval task templates of the helpdesk gym."""

from __future__ import annotations

import random

from arena.authoring import Draft, Intent, amounts, goal, pick, pick_where, ref, says, step, writes
from arena.gyms.helpdesk.tasks_common import HelpdeskTemplate, View, no_writes, singled_out

CATEGORY = "information_retrieval"


def order_lookup(w: View, rng: random.Random, n: int) -> list[Draft]:
    """An order given by id: the search never finds ids, the direct get does."""
    rows = w.rows("SELECT o.id, o.status, o.total, o.currency, c.name AS carrier FROM orders o "
                  "JOIN shipments s ON s.order_id = o.id JOIN carriers c ON c.id = s.carrier_id "
                  "WHERE o.status IN ('shipped', 'delivered') AND o.placed_at >= '2025-04-01' ORDER BY o.id")
    out = []
    for o in pick(rng, rows, n):
        oid, status, total, cur, carrier = (str(o["id"]), str(o["status"]), float(str(o["total"])),
                                            str(o["currency"]), str(o["carrier"]))
        out.append(Draft(
            prompt=f"A customer is asking about order {oid}. What is its current status, its total, and which "
                   "carrier is handling it?",
            intent=Intent(goal="order_status", refs=[ref("order", "order", oid, by_id=True)],
                          report=["$order.status", "$order.total", "$order.shipments.0.carrier"]),
            reply=f"Order {oid} is {status}. Total: {total:.2f} {cur}. Carrier: {carrier}.",
            assertions=[
                no_writes("fetched the order directly by its id", [("get_order", {"order_id": oid})]),
                writes(),
                says("states the status, the total and the carrier", [[status], amounts(total), [carrier]]),
            ],
        ))
    return out


def customer_near_duplicate(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A customer whose exact name is shared by another customer; the city singles them out."""
    rows = w.rows("SELECT a.id, a.name, a.city, a.email, a.tier, a.store_credit, a.currency, b.email AS twin "
                  "FROM customers a JOIN customers b ON a.name = b.name AND a.id <> b.id AND a.city <> b.city "
                  "WHERE a.store_credit <> b.store_credit ORDER BY a.id")
    out = []
    for c in pick_where(rng, rows, n, lambda r: singled_out(w, "customer", str(r["name"]), str(r["id"]),
                                                              {"city": str(r["city"])})):
        cid, name, city, email = str(c["id"]), str(c["name"]), str(c["city"]), str(c["email"])
        tier, credit, cur = str(c["tier"]), float(str(c["store_credit"])), str(c["currency"])
        out.append(Draft(
            prompt=f"What loyalty tier and store-credit balance does {name} from {city} have?",
            intent=Intent(goal="customer_profile", refs=[ref("customer", "customer", name, by_id=False, city=city)],
                          report=["$customer.tier", "$customer.store_credit"]),
            reply=f"{name} ({email}, {city}) is {tier} tier with a store-credit balance of {credit:.2f} {cur}.",
            assertions=[
                no_writes("fetched the customer from the stated city", [("get_customer", {"customer_id": cid})]),
                writes(),
                says("states the right customer's tier and balance", [[tier], amounts(credit)],
                     exclude=[str(c["twin"])]),
            ],
        ))
    return out


def order_status_stale(w: View, rng: random.Random, n: int) -> list[Draft]:
    """The search summary's cached status is stale; only get_order tells the truth."""
    rows = w.rows(
        "SELECT o.id, o.status, substr(o.placed_at, 1, 10) AS day, c.name, "
        "json_extract(si.summary, '$.status') AS cached FROM orders o JOIN customers c ON c.id = o.customer_id "
        "JOIN search_index si ON si.id = o.id "
        "WHERE json_extract(si.summary, '$.status') <> o.status AND o.placed_at IS NOT NULL "
        "AND (SELECT COUNT(*) FROM customers x WHERE x.name = c.name) = 1 "
        "AND (SELECT COUNT(*) FROM orders y WHERE y.customer_id = o.customer_id "
        "     AND substr(y.placed_at, 1, 10) = substr(o.placed_at, 1, 10)) = 1 ORDER BY o.id")
    out = []
    for o in pick_where(rng, rows, n, lambda r: singled_out(w, "order", str(r["name"]), str(r["id"]), {
            "customer": str(r["name"]), "placed_on": str(r["day"])})):
        oid, status, day, name, cached = (str(o["id"]), str(o["status"]), str(o["day"]), str(o["name"]),
                                          str(o["cached"]))
        reply = f"Order {oid}, placed by {name} on {day}, is currently {status}."
        out.append(Draft(
            prompt=f"{name} says the status shown for their order from {day} looks wrong. What is that order's "
                   "actual current status?",
            intent=Intent(goal="order_status", refs=[ref("order", "order", name, by_id=False, customer=name,
                                                         placed_on=day)],
                          report=["$order.status"]),
            reply=reply,
            assertions=[
                no_writes("fetched the live order record", [("get_order", {"order_id": oid})]),
                writes(),
                says("states the live status, not the stale cached one", [[status]],
                     exclude=[cached] if cached not in reply.lower() else []),
            ],
        ))
    return out


def ticket_status_stale(w: View, rng: random.Random, n: int) -> list[Draft]:
    """An assigned ticket found by its subject whose cached status in the index is stale."""
    rows = w.rows(
        "SELECT t.id, t.subject, t.status, s.name AS assignee, json_extract(si.summary, '$.status') AS cached "
        "FROM tickets t JOIN search_index si ON si.id = t.id "
        "JOIN staff s ON s.id = t.assigned_to WHERE json_extract(si.summary, '$.status') <> t.status "
        "AND (SELECT COUNT(*) FROM tickets x WHERE x.subject = t.subject) = 1 ORDER BY t.id")
    out = []
    for t in pick_where(rng, rows, n, lambda r: singled_out(w, "ticket", str(r["subject"]), str(r["id"]),
                                                              {"subject": str(r["subject"])})):
        tid, subject, status, cached = str(t["id"]), str(t["subject"]), str(t["status"]), str(t["cached"])
        assignee = str(t["assignee"])
        reply = f"Ticket {tid} (\"{subject}\") is {status}; it is assigned to {assignee}."
        out.append(Draft(
            prompt=f"What is the current status of the support ticket \"{subject}\", and who is it assigned to?",
            intent=Intent(goal="ticket_status", refs=[ref("ticket", "ticket", subject, by_id=False, subject=subject)],
                          report=["$ticket.status", "$ticket.assigned_to_name"]),
            reply=reply,
            assertions=[
                no_writes("fetched the live ticket record", [("get_ticket", {"ticket_id": tid})]),
                writes(),
                says("states the live status and the assignee",
                     [[status], [assignee]],
                     exclude=[cached] if cached not in reply.lower() else []),
            ],
        ))
    return out


def compatibility(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Whether a CPU fits a motherboard: search both products, then check compatibility."""
    def findable(p: dict[str, object]) -> bool:
        return singled_out(w, "product", str(p["name"]), str(p["id"]), {"name": str(p["name"])})

    cpus = [p for p in w.rows("SELECT id, name, socket FROM products WHERE category = 'cpu' ORDER BY id")
            if findable(p)]
    boards = [p for p in w.rows("SELECT id, name, socket FROM products WHERE category = 'motherboard' ORDER BY id")
              if findable(p)]
    out = []
    for i in range(n):
        cpu = rng.choice(cpus)
        same = [b for b in boards if b["socket"] == cpu["socket"]]
        other = [b for b in boards if b["socket"] != cpu["socket"]]
        board = rng.choice(same if i % 2 == 0 and same else other)
        cname, bname, cs, bs = str(cpu["name"]), str(board["name"]), str(cpu["socket"]), str(board["socket"])
        ok = cs == bs
        if ok:
            reply = f"Yes, the {cname} ({cs}) is compatible with the {bname} ({bs} socket)."
            facts = [["compatible"], [cs]]
            exclude = ["not compatible", "incompatible"]
        else:
            reply = f"No, they are not compatible: the {cname} uses the {cs} socket but the {bname} is {bs}."
            facts = [["not compatible", "incompatible", "will not work", "won't work"], [cs], [bs]]
            exclude = []
        out.append(Draft(
            prompt=f"A customer asks whether the {cname} will work on the {bname}. Can you check?",
            intent=Intent(goal="check_compatibility",
                          refs=[ref("cpu", "product", cname, by_id=False, name=cname),
                                ref("board", "product", bname, by_id=False, name=bname)],
                          calls=[goal("check_compatibility", product_ids=["$cpu", "$board"])],
                          report=["$check_compatibility.verdict", "$cpu.socket", "$board.socket"]),
            steps=[step("search_products", query=cname), step("search_products", query=bname),
                   step("check_compatibility", product_ids=[str(cpu["id"]), str(board["id"])])],
            reply=reply,
            assertions=[
                no_writes("ran the compatibility check", [("check_compatibility", {})]),
                writes(),
                says("gives the right verdict with the sockets", facts, exclude=exclude),
            ],
        ))
    return out


def shipment_tracking(w: View, rng: random.Random, n: int) -> list[Draft]:
    """Carrier and tracking number of an order in transit, given by order id."""
    rows = w.rows("SELECT o.id, s.id AS sid, s.tracking_number, c.name AS carrier FROM orders o "
                  "JOIN shipments s ON s.order_id = o.id JOIN carriers c ON c.id = s.carrier_id "
                  "WHERE o.status = 'shipped' ORDER BY o.id")
    out = []
    for o in pick(rng, rows, n):
        oid, sid, tn, carrier = str(o["id"]), str(o["sid"]), str(o["tracking_number"]), str(o["carrier"])
        out.append(Draft(
            prompt=f"Where is order {oid}? The customer needs the carrier and the tracking number.",
            intent=Intent(goal="track_order", refs=[ref("order", "order", oid, by_id=True)],
                          report=["$order.shipments.0.carrier", "$order.shipments.0.tracking_number"]),
            steps=[step("get_order", order_id=oid), step("get_shipment", shipment_id=sid)],
            reply=f"Order {oid} is in transit with {carrier}, tracking number {tn}.",
            assertions=[
                no_writes("fetched the order directly by its id", [("get_order", {"order_id": oid})]),
                writes(),
                says("states the carrier and the tracking number", [[carrier], [tn]]),
            ],
        ))
    return out


def cancelled_but_delivered(w: View, rng: random.Random, n: int) -> list[Draft]:
    """A messy record: the order is marked cancelled yet its shipment was delivered."""
    rows = w.rows("SELECT o.id, substr(s.delivered_at, 1, 10) AS day, c.name AS carrier FROM orders o "
                  "JOIN shipments s ON s.order_id = o.id JOIN carriers c ON c.id = s.carrier_id "
                  "WHERE o.status = 'cancelled' AND s.delivered_at IS NOT NULL ORDER BY o.id")
    out = []
    for o in pick(rng, rows, n):
        oid, day, carrier = str(o["id"]), str(o["day"]), str(o["carrier"])
        out.append(Draft(
            prompt=f"Order {oid} shows as cancelled, but the customer says the parcel arrived. Check the record and "
                   "tell me whether it was actually delivered and on what date. Don't change anything.",
            intent=Intent(goal="delivery_check", refs=[ref("order", "order", oid, by_id=True)],
                          report=["$order.status", "$order.shipments.0.delivered_at"]),
            reply=f"Order {oid} is marked cancelled, but its shipment was delivered by {carrier} on {day}.",
            assertions=[
                no_writes("read the order without changing it", [("get_order", {"order_id": oid})]),
                writes(),
                says("states that it was delivered and the date", [["delivered"], [day]]),
            ],
        ))
    return out


TEMPLATES = (
    HelpdeskTemplate("order_lookup", CATEGORY, ("id_given_search_misses",), order_lookup),
    HelpdeskTemplate("customer_near_duplicate", CATEGORY, ("near_duplicate",), customer_near_duplicate),
    HelpdeskTemplate("order_status_stale", CATEGORY, ("stale_record",), order_status_stale),
    HelpdeskTemplate("ticket_status_stale", CATEGORY, ("stale_record",), ticket_status_stale),
    HelpdeskTemplate("compatibility", CATEGORY, (), compatibility),
    HelpdeskTemplate("shipment_tracking", CATEGORY, ("id_given_search_misses",), shipment_tracking),
    HelpdeskTemplate("cancelled_but_delivered", CATEGORY, ("side_effect_trap",), cancelled_but_delivered),
)
"""Information-retrieval templates."""

"""The seeded purchase-to-pay world: vendors, budgets, orders, receipts, invoices and payments.

``build_world(seed, knobs)`` returns an in-memory SQLite world. Everything is
drawn from one ``random.Random(seed)`` in a fixed order, so the same seed and
knobs give the same bytes. ``ProcurementKnobs`` are the kit's task knobs and the world's.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from pydantic import Field

from arena.authoring import (
    GymKnobs,
    IndexRow,
    day_between,
    index_row,
    insert_rows,
    legacy_date,
    parse_knobs,
    write_index,
)
from arena.gyms.procurement.rules import PRICE_TOLERANCE, TODAY, convert, required_approvals, tax_document_type


class ProcurementKnobs(GymKnobs):
    """Validated knobs of the procurement generator; each field's description is its documentation."""

    near_duplicate_rate: float = Field(default=0.1, ge=0.0, le=1.0, description="Share of vendors that get a "
                                       "same-named twin in another city (0-1, default 0.1).")
    stale_rate: float = Field(default=0.15, ge=0.0, le=1.0, description="Share of search-index rows whose cached "
                              "status differs from the record (0-1, default 0.15).")
    legacy_format_rate: float = Field(default=0.6, ge=0.0, le=1.0, description="Share of pre-2021 rows whose dates "
                                      "are stored in a legacy format (0-1, default 0.6).")
    multi_currency: bool = Field(default=True, strict=True, description="Vendors trade in USD, EUR and GBP when "
                                 "true, only USD when false (bool, default true).")
    approval_cap: float = Field(default=25000.0, gt=0.0, lt=1e9, description="Base USD amount above which a "
                                "purchase order needs a second approver; cost centers use 0.5x, 1x or 2x of it "
                                "(number > 0, default 25000).")


SCHEMA = """
CREATE TABLE vendors (id TEXT PRIMARY KEY, name TEXT NOT NULL, tax_id TEXT NOT NULL, city TEXT NOT NULL,
  country TEXT NOT NULL, tax_region TEXT NOT NULL, currency TEXT NOT NULL, status TEXT NOT NULL,
  risk_rating TEXT NOT NULL, bank_account TEXT NOT NULL, email TEXT NOT NULL, created_on TEXT NOT NULL,
  activated_on TEXT, suspended_reason TEXT, duplicate_of TEXT);
CREATE TABLE compliance_documents (id TEXT PRIMARY KEY, vendor_id TEXT NOT NULL, doc_type TEXT NOT NULL,
  issued_on TEXT NOT NULL, expires_on TEXT, received_on TEXT NOT NULL);
CREATE TABLE employees (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, role TEXT NOT NULL,
  cost_center_id TEXT NOT NULL);
CREATE TABLE cost_centers (id TEXT PRIMARY KEY, name TEXT NOT NULL, approver_id TEXT NOT NULL,
  approval_cap REAL NOT NULL, budget_total REAL NOT NULL, fiscal_year INTEGER NOT NULL);
CREATE TABLE delegations (id TEXT PRIMARY KEY, delegator_id TEXT NOT NULL, delegate_id TEXT NOT NULL,
  start_date TEXT NOT NULL, end_date TEXT NOT NULL, reason TEXT NOT NULL);
CREATE TABLE requisitions (id TEXT PRIMARY KEY, requester_id TEXT NOT NULL, cost_center_id TEXT NOT NULL,
  description TEXT NOT NULL, quantity INTEGER NOT NULL, unit_price REAL NOT NULL, currency TEXT NOT NULL,
  amount REAL NOT NULL, needed_by TEXT NOT NULL, status TEXT NOT NULL, purchase_order_id TEXT,
  created_on TEXT NOT NULL);
CREATE TABLE purchase_orders (id TEXT PRIMARY KEY, requisition_id TEXT, vendor_id TEXT NOT NULL,
  cost_center_id TEXT NOT NULL, buyer_id TEXT NOT NULL, currency TEXT NOT NULL, total REAL NOT NULL,
  status TEXT NOT NULL, required_approvals INTEGER, created_on TEXT NOT NULL, submitted_on TEXT,
  approved_on TEXT);
CREATE TABLE po_lines (id TEXT PRIMARY KEY, purchase_order_id TEXT NOT NULL, line_no INTEGER NOT NULL,
  item TEXT NOT NULL, quantity INTEGER NOT NULL, unit_price REAL NOT NULL, amount REAL NOT NULL);
CREATE TABLE approvals (id TEXT PRIMARY KEY, purchase_order_id TEXT NOT NULL, approver_id TEXT NOT NULL,
  delegation_id TEXT, level INTEGER NOT NULL, approved_on TEXT NOT NULL);
CREATE TABLE goods_receipts (id TEXT PRIMARY KEY, purchase_order_id TEXT NOT NULL, received_on TEXT NOT NULL,
  recorded_by TEXT NOT NULL);
CREATE TABLE receipt_lines (id TEXT PRIMARY KEY, receipt_id TEXT NOT NULL, po_line_id TEXT NOT NULL,
  quantity INTEGER NOT NULL);
CREATE TABLE invoices (id TEXT PRIMARY KEY, vendor_id TEXT NOT NULL, purchase_order_id TEXT NOT NULL,
  vendor_invoice_number TEXT NOT NULL, invoice_date TEXT NOT NULL, currency TEXT NOT NULL,
  subtotal REAL NOT NULL, tax_amount REAL NOT NULL, total REAL NOT NULL, status TEXT NOT NULL,
  match_status TEXT NOT NULL, matched_on TEXT, hold_reason TEXT, paid_on TEXT);
CREATE TABLE invoice_lines (id TEXT PRIMARY KEY, invoice_id TEXT NOT NULL, po_line_id TEXT NOT NULL,
  quantity INTEGER NOT NULL, unit_price REAL NOT NULL);
CREATE TABLE payments (id TEXT PRIMARY KEY, invoice_id TEXT NOT NULL, amount REAL NOT NULL,
  currency TEXT NOT NULL, paid_on TEXT NOT NULL, reference TEXT NOT NULL);
CREATE TABLE exchange_rates (id TEXT PRIMARY KEY, currency TEXT NOT NULL, usd_rate REAL NOT NULL,
  as_of TEXT NOT NULL);
CREATE TABLE tax_rates (id TEXT PRIMARY KEY, region TEXT NOT NULL, rate REAL NOT NULL, name TEXT NOT NULL);
CREATE INDEX ix_vendor_name ON vendors(name);
CREATE INDEX ix_docs_vendor ON compliance_documents(vendor_id);
CREATE INDEX ix_po_cc ON purchase_orders(cost_center_id);
CREATE INDEX ix_po_req ON purchase_orders(requisition_id);
CREATE INDEX ix_lines_po ON po_lines(purchase_order_id);
CREATE INDEX ix_appr_po ON approvals(purchase_order_id);
CREATE INDEX ix_gr_po ON goods_receipts(purchase_order_id);
CREATE INDEX ix_rl_line ON receipt_lines(po_line_id);
CREATE INDEX ix_rl_receipt ON receipt_lines(receipt_id);
CREATE INDEX ix_inv_po ON invoices(purchase_order_id);
CREATE INDEX ix_inv_vendor_number ON invoices(vendor_id, vendor_invoice_number);
CREATE INDEX ix_il_inv ON invoice_lines(invoice_id);
CREATE INDEX ix_pay_inv ON payments(invoice_id);
"""

FIRST = ("Ava", "Ben", "Chloe", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kara", "Liam",
         "Maya", "Nikhil", "Olivia", "Pedro", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wes", "Yara")
LAST = ("Abbott", "Brennan", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Hughes", "Ivanova", "Jensen",
        "Kowalski", "Laurent", "Moreau", "Novak", "Okafor", "Patel", "Quintero", "Rossi", "Schmidt", "Tanaka",
        "Ueda", "Varga", "Walsh", "Young")
NAME_A = ("Summit", "Harbor", "Granite", "Pioneer", "Cedar", "Atlas", "Beacon", "Northwind", "Silverline",
          "Keystone", "Redwood", "Blue Ridge", "Crescent", "Evergreen", "Ironwood", "Lakeside", "Meridian",
          "Oakmont", "Prairie", "Riverside", "Sterling", "Union", "Vertex", "Westfield")
NAME_B = ("Industrial", "Office", "Medical", "Logistics", "Packaging", "Electrical", "Facilities", "Software",
          "Print", "Lab", "Safety", "Catering")
NAME_C = ("Supply", "Partners", "Group", "Solutions", "Services", "Traders", "Works")
DEPARTMENTS = ("Facilities", "Marketing", "IT", "Research", "Operations", "Finance", "People", "Sales")
REGIONS = ("North America", "EMEA", "APAC")
ITEMS = (("Laptop stand", 25, 90), ("Office chair", 120, 480), ("Monitor 27in", 180, 420), ("Toner cartridge", 40, 130),
         ("Safety gloves (box)", 8, 30), ("Pallet wrap roll", 12, 45), ("Server rack", 900, 2600),
         ("Network switch", 300, 1800), ("Lab pipettes (pack)", 60, 220), ("Catering service day", 400, 1500),
         ("Cleaning service month", 800, 2400), ("Software license seat", 50, 600), ("Printer paper (case)", 20, 55),
         ("Courier delivery", 15, 80), ("First aid kit", 25, 70), ("LED panel", 35, 140), ("Desk", 150, 700),
         ("Whiteboard", 60, 250), ("Headset", 40, 220), ("Label printer", 90, 350))
LOCATIONS: dict[str, tuple[tuple[str, str, float], ...]] = {
    "US": (("Denver", "US-CO", 0.029), ("Austin", "US-TX", 0.0625), ("Boston", "US-MA", 0.0625),
           ("Seattle", "US-WA", 0.065), ("Chicago", "US-IL", 0.0625), ("Atlanta", "US-GA", 0.04)),
    "DE": (("Berlin", "DE", 0.19), ("Munich", "DE", 0.19), ("Hamburg", "DE", 0.19)),
    "FR": (("Paris", "FR", 0.2), ("Lyon", "FR", 0.2)),
    "NL": (("Amsterdam", "NL", 0.21), ("Rotterdam", "NL", 0.21)),
    "GB": (("London", "GB", 0.2), ("Leeds", "GB", 0.2), ("Manchester", "GB", 0.2)),
}
LEGAL = {"US": "Inc.", "DE": "GmbH", "FR": "SARL", "NL": "B.V.", "GB": "Ltd"}
CURRENCY_OF = {"US": "USD", "DE": "EUR", "FR": "EUR", "NL": "EUR", "GB": "GBP"}
VENDOR_STATUSES = ("active", "pending", "suspended", "inactive")
INVOICE_STATUSES = ("received", "matched", "mismatch", "on_hold", "paid")
REQUISITION_STATUSES = ("open", "ordered", "cancelled")
N_VENDORS = 300
N_EMPLOYEES = 140
N_DELEGATIONS = 64
N_REQUISITIONS = 400
N_DIRECT_POS = 160


def _d(day: date) -> str:
    return day.isoformat()


class _Generator:
    """Draws the world's rows in a fixed order from one seeded ``Random``."""

    def __init__(self, seed: int, settings: ProcurementKnobs, conn: sqlite3.Connection) -> None:
        self.rng = random.Random(seed)
        self.s = settings
        self.conn = conn
        self.index: list[IndexRow] = []

    def stored(self, day: date) -> str:
        """A date as an old row stores it: legacy format for pre-2021 rows at the knob's rate."""
        if day.year < 2021 and self.rng.random() < self.s.legacy_format_rate:
            return legacy_date(day, self.rng.randrange(3))
        return day.isoformat()

    def insert(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        insert_rows(self.conn, {table: rows})

    def cached_status(self, real: str, choices: tuple[str, ...]) -> str:
        """The status the search index caches: stale (another status) at the knob's rate."""
        if self.rng.random() < self.s.stale_rate:
            return self.rng.choice([c for c in choices if c != real])
        return real

    def run(self) -> None:
        self.rates()
        self.employees_and_cost_centers()
        self.vendors()
        self.delegations()
        self.orders()
        self.budgets()
        write_index(self.conn, sorted(self.index))  # searches return summaries in id order

    def rates(self) -> None:
        rows: list[tuple[Any, ...]] = []
        for currency, level in (("EUR", 1.08), ("GBP", 1.27)):
            rate = level
            for month in range(27):
                as_of = date(2023 + month // 12, month % 12 + 1, 1)
                rate = round(rate * (1 + self.rng.uniform(-0.015, 0.015)), 4)
                rows.append((f"FX-{currency}-{as_of.strftime('%Y%m')}", currency, rate, _d(as_of)))
        self.insert("exchange_rates", rows)
        taxes = sorted({(region, rate) for locs in LOCATIONS.values() for _, region, rate in locs})
        self.insert("tax_rates", [(f"TAX-{r}", r, rate, f"{'Sales tax' if r.startswith('US') else 'VAT'} {r}")
                                  for r, rate in taxes])
        self.tax = dict(taxes)

    def employees_and_cost_centers(self) -> None:
        names = [f"{f} {ln}" for f in FIRST for ln in LAST]
        chosen = self.rng.sample(names, N_EMPLOYEES)
        n_cc = len(DEPARTMENTS) * len(REGIONS)
        roles = ["approver"] * n_cc + ["controller"] * 4 + ["buyer"] * 14 + ["ap_clerk"] * 10
        roles += ["requester"] * (N_EMPLOYEES - len(roles))
        self.employees: list[dict[str, Any]] = []
        rows: list[tuple[Any, ...]] = []
        for i, (name, role) in enumerate(zip(chosen, roles, strict=True)):
            cc = f"CC-{100 + i}" if i < n_cc else f"CC-{100 + self.rng.randrange(n_cc)}"
            emp = {"id": f"EMP-{1001 + i}", "name": name, "role": role, "cost_center_id": cc,
                   "email": name.lower().replace(" ", ".") + "@corp.example"}
            self.employees.append(emp)
            rows.append((emp["id"], name, emp["email"], role, cc))
            self.index.append(index_row("employee", {"id": emp["id"], "name": name, "email": emp["email"], "role": role,
                                                     "status": "active"}, f"{name} {emp['email']}"))
        self.insert("employees", rows)
        self.by_role: dict[str, list[dict[str, Any]]] = {}
        for emp in self.employees:
            self.by_role.setdefault(emp["role"], []).append(emp)
        self.cost_centers: list[dict[str, Any]] = []
        for i in range(n_cc):
            dept, region = DEPARTMENTS[i // len(REGIONS)], REGIONS[i % len(REGIONS)]
            self.cost_centers.append({
                "id": f"CC-{100 + i}", "name": f"{dept} {region}", "approver_id": f"EMP-{1001 + i}",
                "approval_cap": round(self.s.approval_cap * (0.5, 1.0, 1.0, 2.0)[i % 4], 2), "region": region,
            })

    def vendors(self) -> None:
        combos = [f"{a} {b} {c}" for a in NAME_A for b in NAME_B for c in NAME_C]
        bases = self.rng.sample(combos, N_VENDORS)
        countries = ("US", "DE", "FR", "NL", "GB") if self.s.multi_currency else ("US",)
        weights = (60, 12, 8, 6, 14) if self.s.multi_currency else (1,)
        specs: list[dict[str, Any]] = []
        for base in bases:
            country = self.rng.choices(countries, weights)[0]
            status = self.rng.choices(VENDOR_STATUSES, (72, 12, 9, 7))[0]
            specs.append({"name": f"{base} {LEGAL[country]}", "country": country, "status": status, "dup": None})
            if self.rng.random() < self.s.near_duplicate_rate:
                twin_status = self.rng.choices(VENDOR_STATUSES, (60, 10, 20, 10))[0]
                specs.append({"name": f"{base} {LEGAL[country]}", "country": country, "status": twin_status,
                              "dup": None, "twin": True})
        for spec in list(specs[:: 20]):
            specs.append({**spec, "status": "inactive", "dup": spec})
        self.vendor_rows: list[dict[str, Any]] = []
        doc_rows: list[tuple[Any, ...]] = []
        used_cities: dict[str, set[str]] = {}
        for i, spec in enumerate(specs):
            vid = f"VEN-{10001 + i}"
            spec["id"] = vid
            country = spec["country"]
            if spec["dup"] is not None:
                master = spec["dup"]
                city, region, tax_id = master["city"], master["tax_region"], master["tax_id"]
            else:
                taken = used_cities.setdefault(spec["name"], set())
                options = [loc for loc in LOCATIONS[country] if loc[0] not in taken]
                city, region, _ = self.rng.choice(options or list(LOCATIONS[country]))
                taken.add(city)
                tax_id = self.tax_id(country)
            spec.update(city=city, tax_region=region, tax_id=tax_id)
            created = day_between(self.rng, date(2016, 1, 1), date(2025, 2, 20))
            if spec["status"] == "pending":
                created = day_between(self.rng, date(2025, 1, 5), date(2025, 3, 10))
            bank = (f"{self.rng.randrange(10**11, 10**12)}" if country == "US"
                    else f"{country}{self.rng.randrange(10, 99)}{self.rng.randrange(10**15, 10**16)}")
            slug = spec["name"].split(" ")[0].lower().replace(" ", "")
            row = {
                "id": vid, "name": spec["name"], "tax_id": tax_id, "city": city, "country": country,
                "tax_region": region, "currency": CURRENCY_OF[country], "status": spec["status"],
                "risk_rating": f"RR-{self.rng.randint(1, 4)}", "bank_account": bank,
                "email": f"billing.{slug}{i}@vendors.example", "created_on": self.stored(created),
                "activated_on": None if spec["status"] == "pending" else _d(created),
                "suspended_reason": "Failed quality audit" if spec["status"] == "suspended" else None,
                "duplicate_of": spec["dup"]["id"] if spec["dup"] is not None else None,
                "created": created,
            }
            self.vendor_rows.append(row)
            doc_rows.extend(self.documents(row))
            cached = self.cached_status(row["status"], VENDOR_STATUSES)
            if row["status"] == "suspended" and self.rng.random() < self.s.stale_rate * 2:
                cached = "active"
            self.index.append(index_row("vendor", {"id": vid, "name": row["name"], "city": city, "tax_id": tax_id,
                                                   "status": cached}, f"{row['name']} {row['email']}"))
        self.insert("vendors", [tuple(v for k, v in r.items() if k != "created") for r in self.vendor_rows])
        self.insert("compliance_documents", [(f"DOC-{60001 + i}", *r) for i, r in enumerate(doc_rows)])

    def tax_id(self, country: str) -> str:
        if country == "US":
            return f"{self.rng.randint(10, 99)}-{self.rng.randint(1000000, 9999999)}"
        return f"{country}{self.rng.randint(100000000, 999999999)}"

    def documents(self, vendor: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Compliance documents of one vendor; pending vendors get one of four onboarding profiles."""
        tax_form = tax_document_type(vendor["country"])
        created: date = vendor["created"]
        issued = created - timedelta(days=self.rng.randint(5, 40))
        docs: list[tuple[Any, ...]] = []
        profile = "complete"
        if vendor["status"] == "pending":
            profile = self.rng.choice(("complete", "insurance_expired", "insurance_missing", "tax_missing"))
        elif vendor["status"] in ("suspended", "inactive"):
            profile = "insurance_expired"
        if profile != "tax_missing":
            docs.append((vendor["id"], tax_form, _d(issued), None, _d(issued + timedelta(days=3))))
        if profile == "insurance_missing":
            return docs
        if profile == "insurance_expired":
            expires = day_between(self.rng, date(2024, 6, 1), TODAY - timedelta(days=3))
        else:
            expires = day_between(self.rng, TODAY + timedelta(days=20), date(2026, 12, 31))
        ins_issued = expires - timedelta(days=365)
        docs.append((vendor["id"], "INSURANCE", _d(ins_issued), _d(expires), _d(ins_issued + timedelta(days=2))))
        return docs

    def delegations(self) -> None:
        approvers = self.by_role["approver"] + self.by_role["controller"]
        rows: list[tuple[Any, ...]] = []
        for i in range(N_DELEGATIONS):
            delegator = approvers[i % len(self.by_role["approver"])] if i % 8 else self.rng.choice(approvers)
            delegate = self.rng.choice([a for a in approvers if a["id"] != delegator["id"]])
            kind = i % 4
            if kind == 0:
                start = TODAY - timedelta(days=self.rng.randint(1, 20))
                end = TODAY + timedelta(days=self.rng.randint(3, 30))
            elif kind == 1:
                end = TODAY - timedelta(days=self.rng.randint(1, 40))
                start = end - timedelta(days=self.rng.randint(7, 30))
            elif kind == 2:
                start = TODAY + timedelta(days=self.rng.randint(3, 20))
                end = start + timedelta(days=14)
            else:
                start = day_between(self.rng, date(2019, 1, 1), date(2020, 10, 1))
                end = start + timedelta(days=self.rng.randint(7, 30))
            reason = self.rng.choice(("Annual leave", "Parental leave", "Conference travel", "Medical leave"))
            rows.append((f"DLG-{801 + i}", delegator["id"], delegate["id"], self.stored(start), self.stored(end),
                         reason))
        self.insert("delegations", rows)

    def lines_for(self, currency: str, count: int) -> list[tuple[str, int, float]]:
        lines = []
        for item, low, high in self.rng.sample(ITEMS, count):
            price = self.rng.uniform(low, high)
            if currency != "USD":
                price = price / (1.08 if currency == "EUR" else 1.27)
            lines.append((item, self.rng.randint(1, 40), round(price, 2)))
        return lines

    def orders(self) -> None:
        """Requisitions, purchase orders, approvals, receipts, invoices and payments."""
        rng = self.rng
        orderable = [v for v in self.vendor_rows if v["status"] != "pending" and v["duplicate_of"] is None]
        buyers = self.by_role["buyer"]
        requesters = self.by_role["requester"]
        cc_by_id = {c["id"]: c for c in self.cost_centers}
        req_rows: list[tuple[Any, ...]] = []
        po_rows: list[tuple[Any, ...]] = []
        line_rows: list[tuple[Any, ...]] = []
        self.pos: list[dict[str, Any]] = []
        n_pos = 0
        for r in range(N_REQUISITIONS + N_DIRECT_POS):
            from_requisition = r < N_REQUISITIONS
            requester = rng.choice(requesters)
            cc = cc_by_id[requester["cost_center_id"]]
            vendor = rng.choice(orderable)
            currency = vendor["currency"]
            req_status = rng.choices(REQUISITION_STATUSES, (18, 74, 8))[0] if from_requisition else "ordered"
            recent = req_status == "open" or rng.random() < 0.25
            created = (day_between(self.rng, date(2025, 1, 10), TODAY - timedelta(days=2)) if recent
                       else day_between(self.rng, date(2019, 1, 1), date(2024, 12, 20)))
            lines = self.lines_for(currency, rng.randint(1, 4) if req_status == "ordered" else 1)
            po_id: str | None = None
            if req_status == "ordered":
                n_pos += 1
                po_id = f"PO-{30000 + n_pos}"
                total = round(sum(q * p for _, q, p in lines), 2)
                po = {"id": po_id, "vendor": vendor, "cc": cc, "currency": currency, "total": total,
                      "created": created, "recent": recent, "lines": [], "cost_center_id": cc["id"]}
                for no, (item, qty, price) in enumerate(lines, 1):
                    line_id = f"POL-{po_id[3:]}-{no}"
                    po["lines"].append((line_id, qty, price))
                    line_rows.append((line_id, po_id, no, item, qty, price, round(qty * price, 2)))
                self.pos.append(po)
                po_rows.append((po_id, f"REQ-{20001 + r}" if from_requisition else None, vendor["id"], cc["id"],
                                rng.choice(buyers)["id"], currency, total))
            if from_requisition:
                item, qty, price = lines[0]
                req_currency = currency if req_status == "ordered" else rng.choice(
                    ("USD", "EUR", "GBP") if self.s.multi_currency and cc["region"] == "EMEA" else ("USD",))
                rid = f"REQ-{20001 + r}"
                needed = created + timedelta(days=rng.randint(10, 60))
                req_rows.append((rid, requester["id"], cc["id"], f"{qty} x {item}", qty, price, req_currency,
                                 round(qty * price, 2), _d(needed), req_status, po_id, self.stored(created)))
                cached = self.cached_status(req_status, REQUISITION_STATUSES)
                self.index.append(index_row("requisition", {"id": rid, "description": f"{qty} x {item}",
                                                            "requester": requester["name"], "status": cached},
                                            f"{qty} x {item} {requester['name']}"))
        self.insert("requisitions", req_rows)
        self.insert("po_lines", line_rows)
        self.po_statuses(po_rows)

    def po_statuses(self, base_rows: list[tuple[Any, ...]]) -> None:
        rng = self.rng
        po_rows: list[tuple[Any, ...]] = []
        approvals: list[tuple[Any, ...]] = []
        controllers = self.by_role["controller"]
        # A provisional table lets required_approvals() read caps and rates.
        self.insert("cost_centers", [(c["id"], c["name"], c["approver_id"], c["approval_cap"], 0.0, 2025)
                                     for c in self.cost_centers])
        self.receipts: list[tuple[Any, ...]] = []
        self.receipt_lines: list[tuple[Any, ...]] = []
        self.invoice_rows: list[tuple[Any, ...]] = []
        self.invoice_lines: list[tuple[Any, ...]] = []
        self.payments: list[tuple[Any, ...]] = []
        self.vendor_seq: dict[str, int] = {}
        for po, base in zip(self.pos, base_rows, strict=True):
            if po["recent"]:
                status = rng.choices(("draft", "pending_approval", "approved"), (25, 35, 40))[0]
            else:
                status = rng.choices(("approved", "rejected", "cancelled"), (88, 6, 6))[0]
            needed = required_approvals(self.conn, {"total": po["total"], "currency": po["currency"],
                                                    "cost_center_id": po["cc"]["id"]}, TODAY)
            created: date = po["created"]
            submitted = created + timedelta(days=1) if status != "draft" else None
            approved = submitted + timedelta(days=rng.randint(0, 3)) if status == "approved" and submitted else None
            if approved is not None and approved >= TODAY:
                approved = TODAY - timedelta(days=1)
            po_rows.append((*base, status, needed if status != "draft" else None, self.stored(created),
                            _d(submitted) if submitted else None, _d(approved) if approved else None))
            n_appr = 0
            if status == "approved":
                n_appr = needed
            elif status == "pending_approval" and needed == 2 and rng.random() < 0.5:
                n_appr = 1
            for level in range(1, n_appr + 1):
                who = po["cc"]["approver_id"] if level == 1 else rng.choice(controllers)["id"]
                on = approved or (submitted or created)
                approvals.append((f"APR-{po['id'][3:]}-{level}", po["id"], who, None, level, _d(on)))
            po["status"] = status
            if status == "approved" and approved is not None:
                self.fulfil(po, approved)
            elif status == "pending_approval" and rng.random() < 0.15:
                self.invoice(po, [(lid, q, p) for lid, q, p in po["lines"]], created + timedelta(days=3), "early")
        self.conn.execute("DELETE FROM cost_centers")
        self.insert("purchase_orders", po_rows)
        self.insert("approvals", approvals)
        self.insert("goods_receipts", self.receipts)
        self.insert("receipt_lines", self.receipt_lines)
        self.insert("invoices", self.invoice_rows)
        self.insert("invoice_lines", self.invoice_lines)
        self.insert("payments", self.payments)

    def fulfil(self, po: dict[str, Any], approved: date) -> None:
        """Receipt, invoice and payment history of an approved purchase order."""
        rng = self.rng
        profile = rng.choices(("full", "partial", "none"), (65, 12, 23))[0]
        received_on = approved + timedelta(days=rng.randint(3, 20))
        if received_on >= TODAY:
            profile = "none"
        if profile != "none":
            gr_id = f"GR-{po['id'][3:]}"
            self.receipts.append((gr_id, po["id"], self.stored(received_on), rng.choice(self.by_role["buyer"])["id"]))
            received: list[tuple[str, int, float]] = []
            for n, (lid, qty, price) in enumerate(po["lines"]):
                got = qty if profile == "full" or n > 0 or qty < 2 else qty - rng.randint(1, qty - 1)
                self.receipt_lines.append((f"GRL-{lid[4:]}", gr_id, lid, got))
                received.append((lid, got, price))
            invoice_day = received_on + timedelta(days=rng.randint(1, 10))
            if invoice_day >= TODAY:
                invoice_day = TODAY - timedelta(days=1)
            if profile == "partial":
                short = any(g < q for (_, g, _), (_, q, _) in zip(received, po["lines"], strict=True))
                bill = po["lines"] if short and rng.random() < 0.7 else received
                self.invoice(po, list(bill), invoice_day, "quantity" if bill is po["lines"] and short else "clean")
                return
            kind = rng.choices(("clean", "price", "tolerance", "duplicate"), (80, 8, 5, 7))[0]
            lines = list(po["lines"])
            if kind in ("price", "tolerance"):
                lid, qty, price = lines[0]
                factor = 1 + (rng.uniform(0.05, 0.15) if kind == "price" else PRICE_TOLERANCE / 2)
                lines[0] = (lid, qty, round(price * factor, 2))
            inv = self.invoice(po, lines, invoice_day, "price" if kind == "price" else "clean",
                               paid_ok=kind != "price")
            if kind == "duplicate" and inv is not None:
                self.invoice(po, lines, invoice_day + timedelta(days=rng.randint(5, 15)), "duplicate", number=inv)
        elif rng.random() < 0.5:
            self.invoice(po, list(po["lines"]), approved + timedelta(days=2), "early")

    def invoice(
        self, po: dict[str, Any], lines: list[tuple[str, int, float]], day: date, kind: str,
        *, paid_ok: bool = True, number: str | None = None,
    ) -> str | None:
        """Add one invoice; returns its vendor invoice number (``None`` when it is not issued)."""
        rng = self.rng
        if day >= TODAY:
            day = TODAY - timedelta(days=1)
        vendor = po["vendor"]
        if number is None:
            seq = self.vendor_seq.get(vendor["id"], 0) + 1
            self.vendor_seq[vendor["id"]] = seq
            initials = "".join(w[0] for w in vendor["name"].split()[:3]).upper()
            number = f"{initials}-{day.year}-{seq:04d}"
        inv_id = f"INV-{50001 + len(self.invoice_rows)}"
        subtotal = round(sum(q * p for _, q, p in lines), 2)
        tax = round(subtotal * self.tax[vendor["tax_region"]], 2)
        total = round(subtotal + tax, 2)
        status, match, hold, matched_on, paid_on = "received", "unmatched", None, None, None
        if kind == "clean" and paid_ok:
            pay_day = day + timedelta(days=rng.randint(15, 45))
            if pay_day < TODAY and rng.random() < 0.75:
                status, match, matched_on, paid_on = "paid", "matched", _d(pay_day - timedelta(days=1)), _d(pay_day)
                self.payments.append((f"PAY-{inv_id[4:]}", inv_id, total, po["currency"], paid_on,
                                      f"ACH-{rng.randrange(10**7, 10**8)}"))
            elif rng.random() < 0.3:
                status, match, matched_on = "matched", "matched", _d(day)
        elif kind in ("price", "quantity") and rng.random() < 0.45:
            status, match, matched_on = "on_hold", "mismatch", _d(day)
            hold = "PRICE_MISMATCH" if kind == "price" else "QUANTITY_MISMATCH"
        self.invoice_rows.append((inv_id, vendor["id"], po["id"], number, self.stored(day), po["currency"], subtotal,
                                  tax, total, status, match, matched_on, hold, paid_on))
        for n, (lid, qty, price) in enumerate(lines, 1):
            self.invoice_lines.append((f"INL-{inv_id[4:]}-{n}", inv_id, lid, qty, price))
        self.index.append(index_row("invoice", {
            "id": inv_id, "vendor_invoice_number": number, "vendor_name": vendor["name"], "vendor_city": vendor["city"],
            "total": total, "currency": po["currency"], "status": self.cached_status(status, INVOICE_STATUSES)},
            f"{number} {vendor['name']}"))
        return number

    def budgets(self) -> None:
        """Cost-center budgets: every sixth center is nearly exhausted by its open commitments."""
        rows: list[tuple[Any, ...]] = []
        for i, cc in enumerate(self.cost_centers):
            committed = 0.0
            for po in self.pos:
                if po["cc"] is cc and po["status"] in ("pending_approval", "approved"):
                    committed += convert(self.conn, po["total"], po["currency"], "USD", TODAY)
            headroom = self.rng.uniform(1500, 6000) if i % 6 == 5 else self.rng.uniform(150000, 600000)
            rows.append((cc["id"], cc["name"], cc["approver_id"], cc["approval_cap"],
                         round(committed + headroom, -2), 2025))
        self.insert("cost_centers", rows)


def build_world(seed: int, knobs: Mapping[str, Any] | ProcurementKnobs) -> sqlite3.Connection:
    """Generate the procurement world for ``seed`` and ``knobs`` into a new in-memory SQLite database.

    Raises:
        ValueError: An unknown knob or a bad knob value.
    """
    settings = knobs if isinstance(knobs, ProcurementKnobs) else parse_knobs(ProcurementKnobs, knobs, "procurement")
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    _Generator(seed, settings, conn).run()
    conn.commit()
    return conn


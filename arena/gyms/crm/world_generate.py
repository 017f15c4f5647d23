"""The CRM world's generator: one seeded ``Random`` drawn in a fixed order, rows inserted in a fixed order.

Every draw is made whatever the knobs say (a knob only decides what a draw is used for), so turning one kind of
mess up or down leaves the rest of the world as it was.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from arena.authoring import IndexRow, day_between, index_row, insert_rows, legacy_amount, legacy_date

from . import world_names as names
from .knobs import CrmKnobs
from .rules import canonical_phone, legacy_phone

LEGACY_BEFORE = date(2023, 1, 1)
"""Rows created before this day were imported from the legacy CRM."""

THEMES = ("Renewal", "Expansion", "New Seats", "Analytics Rollout", "Support Upgrade", "Migration Project", "Pilot")
"""What an opportunity is about (its name is the account's name, a theme and a year)."""

SUBJECTS = ("Intro call", "Pricing follow-up", "Quarterly review", "Demo of the analytics add-on",
            "Contract questions", "Renewal check-in", "Onboarding kickoff")
"""Subjects of logged activities."""

RATES = (("EUR", 0.92), ("GBP", 0.79), ("USD", 1.0))
"""Currency rates per US dollar."""

Row = tuple[Any, ...]


@dataclass
class Account:
    """What later tables need to know about a generated account."""

    id: str
    name: str
    territory: int
    owner: str
    created: date
    domain: str
    contacts: list[str] = field(default_factory=list)


@dataclass
class Generator:
    """Draws the world's rows from ``rng`` in a fixed order."""

    rng: random.Random
    knobs: CrmKnobs
    today: date
    rows: dict[str, list[Row]] = field(default_factory=dict)
    index: list[IndexRow] = field(default_factory=list)
    users: list[Row] = field(default_factory=list)
    reps: dict[int, list[str]] = field(default_factory=dict)
    accounts: list[Account] = field(default_factory=list)

    def fill(self, conn: sqlite3.Connection) -> None:
        """Generate every table and insert the rows into ``conn``."""
        self._territories()
        self._users()
        self._accounts()
        self._contacts()
        self._opportunities()
        self._history_and_flags()
        self.rows["currency_rates"] = list(RATES)
        self.rows["settings"] = [("discount_threshold_pct", f"{self.knobs.discount_threshold:g}")]
        insert_rows(conn, self.rows)

    def _legacy(self, created: date) -> bool:
        draw = self.rng.random()
        return created < LEGACY_BEFORE and draw < self.knobs.legacy_format_rate

    def _phone(self, territory: int, legacy: bool) -> str:
        code = names.TERRITORIES[territory][4]
        number = f"{self.rng.randint(200, 989)}{self.rng.randint(200, 999)}{self.rng.randint(0, 9999):04d}"
        style = self.rng.randrange(3)
        return legacy_phone(code, number, style) if legacy else canonical_phone(code, number)

    def _summary(self, rid: str, entity: str, text: str, shown: dict[str, Any]) -> None:
        self.index.append(index_row(entity, {"id": rid, **shown}, text))

    def _territories(self) -> None:
        self.rows["territories"] = [(tid, name, ", ".join(cities), currency, code)
                                    for tid, name, cities, currency, code in names.TERRITORIES]

    def _users(self) -> None:
        people = [f"{f} {last}" for f in names.FIRST for last in names.LAST]
        fixed = set(names.MANAGERS) | set(names.FIXED_REPS)
        drawn = [p for p in self.rng.sample(people, 40) if p not in fixed]
        number = 101
        for t, (tid, tname, *_rest) in enumerate(names.TERRITORIES):
            manager_id = f"USR-{number}"
            team = [(names.MANAGERS[t], "manager"), (names.FIXED_REPS[t], "rep")]
            team += [(drawn.pop(), "rep") for _ in range(3)]
            for person, role in team:
                uid = f"USR-{number}"
                number += 1
                email = f"{person.lower().replace(' ', '.')}@crm.example"
                self.users.append((uid, person, email, role, tid, None if role == "manager" else manager_id))
                self._summary(uid, "user", f"{person} {email}", {"name": person, "role": role, "territory": tname})
                if role == "rep":
                    self.reps.setdefault(t, []).append(uid)
        self.rows["users"] = self.users

    def _account_row(self, aid: str, name: str, territory: int, city: str) -> Row:
        created = day_between(self.rng, date(2016, 1, 4), date(2025, 6, 30))
        legacy = self._legacy(created)
        owner = self.rng.choice(self.reps[territory])
        industry = self.rng.choice(names.INDUSTRIES)
        phone = self._phone(territory, legacy)
        currency = names.TERRITORIES[territory][3]
        revenue = float(self.rng.randint(5, 900) * 100_000)
        tier = self.rng.choice(("standard", "standard", "gold", "platinum"))
        status = self.rng.choices(("active", "prospect", "churned"), (8, 1, 1))[0]
        risk = f"RR-{self.rng.randint(1, 5)}"
        domain = name.lower().replace(" ", "") + ".example"
        self.accounts.append(Account(aid, name, territory, owner, created, domain))
        stored_revenue: object = legacy_amount(revenue, currency) if legacy else revenue
        cached = status if self.rng.random() >= self.knobs.stale_rate else ("active" if status != "active"
                                                                             else "churned")
        self._summary(aid, "account", name, {"name": name, "city": city, "status": cached})
        return (aid, name, city, names.TERRITORIES[territory][0], owner, industry, phone, currency, stored_revenue,
                tier, status, risk, created.isoformat())

    def _accounts(self) -> None:
        combos = [f"{s} {k}" for s in names.COMPANY_STEMS for k in names.COMPANY_KINDS]
        rows = []
        for i, name in enumerate(self.rng.sample(combos, 300)):
            territory = self.rng.randrange(len(names.TERRITORIES))
            city = self.rng.choice(names.TERRITORIES[territory][2])
            rows.append(self._account_row(f"ACC-{10000 + i}", name, territory, city))
            twin_draw, suffix_draw = self.rng.random(), self.rng.random()
            other = self.rng.choice([t for t in range(len(names.TERRITORIES)) if t != territory])
            other_city = self.rng.choice(names.TERRITORIES[other][2])
            if twin_draw < self.knobs.near_duplicate_rate:
                twin = name + (self.rng.choice(names.LEGAL_SUFFIXES) if suffix_draw < 0.5 else "")
                rows.append(self._account_row(f"ACC-{18000 + i}", twin, other, other_city))
        self.rows["accounts"] = rows

    def _contacts(self) -> None:
        people = [f"{f} {last}" for f in names.FIRST for last in names.LAST]
        self.rng.shuffle(people)
        rows: list[Row] = []
        names_by_account = {a.id: a.name for a in self.accounts}

        def add(account: Account, person: str) -> None:
            cid = f"CON-{20000 + len(rows)}"
            created = day_between(self.rng, account.created, self.today - timedelta(days=5))
            legacy = self._legacy(created)
            email = f"{person.lower().replace(' ', '.')}@{account.domain}"
            phone = self._phone(account.territory, legacy)
            title = self.rng.choice(names.TITLES)
            rows.append((cid, account.id, person, email, phone, title, created.isoformat()))
            account.contacts.append(cid)
            self._summary(cid, "contact", f"{person} {email}",
                          {"name": person, "account": names_by_account[account.id], "email": email})

        for account in self.accounts:
            for _ in range(self.rng.randint(1, 4)):
                add(account, people.pop() if people else self.rng.choice(names.FIRST) + " Doe")
        first_contact = {str(r[1]): str(r[2]) for r in reversed(rows)}
        for account in list(self.accounts):
            draw = self.rng.random()
            elsewhere = self.rng.choice(self.accounts)
            if draw < self.knobs.near_duplicate_rate / 2 and elsewhere.id != account.id:
                add(elsewhere, first_contact[account.id])
        self.rows["contacts"] = rows

    def _opportunity_dates(self, account: Account) -> tuple[date, str, date]:
        created = day_between(self.rng, max(account.created, date(2019, 1, 7)), self.today - timedelta(days=10))
        draw = self.rng.random()
        if created >= date(2024, 9, 1):
            is_open = draw < 0.7
        elif created < LEGACY_BEFORE and created >= date(2021, 1, 1):
            is_open = draw < 0.15
        else:
            is_open = draw < 0.05
        if is_open:
            stage = self.rng.choice(names.OPEN_STAGES)
            close = self.today + timedelta(days=self.rng.randint(-20, 200))
        else:
            stage = self.rng.choices(names.CLOSED_STAGES, (11, 9))[0]
            close = min(created + timedelta(days=self.rng.randint(20, 200)), self.today - timedelta(days=1))
        return created, stage, close

    def _opportunities(self) -> None:
        opps: list[Row] = []
        quotes: list[Row] = []
        lines: list[Row] = []
        approvals: list[Row] = []
        activities: list[Row] = []
        managers = {t: u[0] for t, u in enumerate(u for u in self.users if u[3] == "manager")}
        user_names = {u[0]: u[1] for u in self.users}
        for account in self.accounts:
            currency = names.TERRITORIES[account.territory][3]
            for _ in range(self.rng.randint(0, 4)):
                created, stage, close = self._opportunity_dates(account)
                legacy = self._legacy(created)
                oid = f"OPP-{30000 + len(opps)}"
                name = f"{account.name} - {self.rng.choice(THEMES)} {created.year}"
                amount = float(self.rng.randint(10, 500) * 500)
                loss = self.rng.choice(("price", "competitor", "no budget", "timing")) if stage == "closed_lost" \
                    else None
                stored_amount: object = legacy_amount(amount, currency) if legacy else amount
                stored_close = legacy_date(close) if legacy else close.isoformat()
                opps.append((oid, account.id, account.owner, name, stage, stored_amount, currency, stored_close,
                             created.isoformat(), loss))
                stale = self.rng.random() < self.knobs.stale_rate
                shown = stage
                if stale:
                    order = (*names.OPEN_STAGES, "closed_won")
                    shown = order[order.index(stage) - 1] if stage in order else "negotiation"
                self._summary(oid, "opportunity", name, {"name": name, "account": account.name, "stage": shown})
                quote_draw = self.rng.random()
                if stage in ("proposal", "negotiation", "closed_won") or (stage == "closed_lost"
                                                                           and quote_draw < 0.5):
                    self._quote(oid, name, stage, created, currency, user_names[account.owner],
                                user_names[managers[account.territory]], quotes, lines, approvals)
            for cid in account.contacts:
                for _ in range(self.rng.randint(0, 2)):
                    happened = day_between(self.rng, account.created, self.today - timedelta(days=1))
                    activities.append((f"ACT-{70000 + len(activities)}", account.id, cid,
                                       self.rng.choice(names.ACTIVITY_KINDS), self.rng.choice(SUBJECTS),
                                       happened.isoformat(), user_names[account.owner]))
        self.rows.update(opportunities=opps, quotes=quotes, quote_lines=lines, discount_approvals=approvals,
                         activities=activities)
        self.rows["products"] = list(names.PRODUCTS)

    def _quote(self, oid: str, opportunity: str, stage: str, created: date, currency: str, rep: str, manager: str,
               quotes: list[Row], lines: list[Row], approvals: list[Row]) -> None:
        qid = f"QTE-{40000 + len(quotes)}"
        total = 0.0
        for product in self.rng.sample(names.PRODUCTS, self.rng.randint(1, 3)):
            quantity = self.rng.randint(5, 120) if product[2] == "subscription" else self.rng.randint(1, 4)
            lines.append((f"QLN-{60000 + len(lines)}", qid, product[0], quantity, product[3]))
            total += quantity * product[3]
        discount = float(self.rng.choice((0, 5, 8, 10, 12, 15, 18, 20, 22, 25, 30)))
        net = round(total * (1 - discount / 100), 2)
        status = {"proposal": "draft" if self.rng.random() < 0.6 else "sent", "negotiation": "sent",
                  "closed_won": "accepted", "closed_lost": "expired"}[stage]
        issued = created + timedelta(days=self.rng.randint(5, 30))
        valid = (self.today + timedelta(days=self.rng.randint(10, 60))) if status in ("draft", "sent") else (
            issued + timedelta(days=45))
        sent_on = None if status == "draft" else issued.isoformat()
        floor = round(total * self.rng.uniform(0.62, 0.75), 2)
        quotes.append((qid, oid, status, round(total, 2), discount, net, currency, valid.isoformat(), sent_on,
                       floor))
        stale = self.rng.random() < self.knobs.stale_rate
        shown = ("sent" if status == "draft" else "draft") if stale else status
        self._summary(qid, "quote", opportunity, {"opportunity": opportunity, "status": shown})
        outcome = self.rng.random()
        if discount > self.knobs.discount_threshold:
            decided = "approved" if status != "draft" else ("pending" if outcome < 0.4 else
                                                            "rejected" if outcome < 0.6 else None)
            if decided is not None:
                approvals.append((f"APR-{50000 + len(approvals)}", qid, discount, decided, rep,
                                  None if decided == "pending" else manager, "competitive deal",
                                  issued.isoformat()))

    def _history_and_flags(self) -> None:
        history: list[Row] = []
        flags: list[Row] = []
        for account in self.accounts:
            draw = self.rng.random()
            previous = self.rng.choice(self.reps[account.territory])
            if draw < 0.2 and previous != account.owner:
                changed = day_between(self.rng, account.created, self.today - timedelta(days=30))
                history.append((f"AUD-{80000 + len(history)}", account.id, "owner_id", previous, account.owner,
                                "system", changed.isoformat()))
        twins = [a for a in self.accounts if a.id.startswith("ACC-18")]
        for twin in twins:
            original = f"ACC-{10000 + int(twin.id[4:]) - 18000}"
            if self.rng.random() < 0.3:
                rep = self.rng.choice(self.reps[twin.territory])
                flags.append((f"DUP-{900 + len(flags)}", twin.id, original, rep, "open"))
        self.rows.update(account_history=history, duplicate_flags=flags)

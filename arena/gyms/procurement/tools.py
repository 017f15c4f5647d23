"""The procurement tools: vendors, requisitions, purchase orders, approvals, receipts, invoices, payments.

Every tool follows docs/gym-contract.md: ``get_E(E_id)`` returns the fresh
record with its related rows, ``search_Es(query)`` returns short (possibly
stale) summaries from the search index and never matches ids, dates are
``YYYY-MM-DD``, money is a number in the record's currency and codes are upper
case. System rules refuse with ``PolicyViolation`` and change nothing.
"""

from __future__ import annotations

from typing import Any

from arena.authoring import (
    InvalidArgument,
    PolicyViolation,
    ToolContext,
    fetch,
    iso_date,
    positive_amount,
    read_date,
    search,
    tool,
)
from arena.gyms.procurement.rules import (
    CURRENCIES,
    DOC_TYPES,
    HOLD_REASONS,
    budget_status,
    convert,
    delegation_covers,
    missing_documents,
    po_usd_total,
    require_code,
    required_approvals,
    tax_document_type,
    three_way_match,
)


def _today(ctx: ToolContext) -> Any:
    return ctx.now.date()


# --- vendors -------------------------------------------------------------------------------------------------



MAX_QUANTITY = 1_000_000
"""Most units one requisition may ask for."""

@tool(mode="read", entity="vendor", operation="search")
def search_vendors(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search vendors by name or email; returns index summaries whose status may be stale.

    Args:
        query: Part of the vendor's name or email (ids are not searchable).
    """
    return search(ctx, "vendor", query)


@tool(mode="read", entity="vendor", operation="get")
def get_vendor(ctx: ToolContext, vendor_id: str) -> dict[str, Any]:
    """Fetch a vendor's full record with its compliance documents (authoritative).

    Args:
        vendor_id: The vendor id, e.g. VEN-10001.
    """
    vendor = fetch(ctx.conn, "vendors", vendor_id, "vendor")
    vendor["compliance_documents"] = ctx.all(
        "SELECT id, doc_type, issued_on, expires_on, received_on FROM compliance_documents WHERE vendor_id = ? "
        "ORDER BY id", (vendor_id,))
    vendor["required_documents"] = [tax_document_type(vendor["country"]), "INSURANCE"]
    vendor["compliance_problems"] = missing_documents(ctx.conn, vendor_id, vendor["country"], _today(ctx))
    return vendor


@tool(mode="write", permission="manage_vendors", entity="vendor", operation="update")
def upload_compliance_document(
    ctx: ToolContext, vendor_id: str, doc_type: str, issued_on: str, expires_on: str | None = None
) -> dict[str, Any]:
    """File a compliance document (tax form or insurance certificate) on a vendor; expired documents are refused.

    Args:
        vendor_id: The vendor id.
        doc_type: W9 (US tax form), W8BEN (foreign tax form) or INSURANCE.
        issued_on: Issue date, YYYY-MM-DD.
        expires_on: Expiry date, YYYY-MM-DD; required for INSURANCE.
    """
    vendor = fetch(ctx.conn, "vendors", vendor_id, "vendor")
    require_code(doc_type, "doc_type", DOC_TYPES)
    issued = iso_date(issued_on, "issued_on")
    if expires_on is not None:
        expiry = iso_date(expires_on, "expires_on")
        if expiry <= issued:
            raise InvalidArgument(f"expires_on: {expires_on!r} is not after issued_on {issued_on!r}")
        if expiry < _today(ctx):
            raise PolicyViolation(f"the {doc_type} document expired on {expires_on}; only current documents are "
                                  f"filed, so vendor {vendor_id} stays {vendor['status']} until a valid one arrives")
    elif doc_type == "INSURANCE":
        raise InvalidArgument("expires_on: an INSURANCE certificate needs an expiry date")
    doc_id = ctx.new_id("DOC")
    ctx.conn.execute("INSERT INTO compliance_documents VALUES (?, ?, ?, ?, ?, ?)",
                     (doc_id, vendor_id, doc_type, issued_on, expires_on, ctx.today()))
    return {"document_id": doc_id, "vendor_id": vendor_id, "doc_type": doc_type, "expires_on": expires_on}


@tool(mode="write", permission="manage_vendors", entity="vendor", operation="update")
def activate_vendor(ctx: ToolContext, vendor_id: str) -> dict[str, Any]:
    """Activate a pending vendor; refused unless every compliance document is on file and valid.

    Args:
        vendor_id: The vendor id.
    """
    vendor = fetch(ctx.conn, "vendors", vendor_id, "vendor")
    if vendor["status"] == "active":
        raise PolicyViolation(f"vendor {vendor_id} is already active")
    if vendor["status"] == "suspended":
        raise PolicyViolation(f"vendor {vendor_id} is suspended; a controller review is needed, not activation")
    problems = missing_documents(ctx.conn, vendor_id, vendor["country"], _today(ctx))
    if problems:
        raise PolicyViolation(f"vendor {vendor_id} cannot be activated: {'; '.join(problems)}")
    ctx.conn.execute("UPDATE vendors SET status = 'active', activated_on = ? WHERE id = ?", (ctx.today(), vendor_id))
    return {"vendor_id": vendor_id, "status": "active", "activated_on": ctx.today()}


@tool(mode="write", permission="suspend_vendors", entity="vendor", operation="update")
def suspend_vendor(ctx: ToolContext, vendor_id: str, reason: str) -> dict[str, Any]:
    """Suspend a vendor: no new purchase orders until a controller reinstates it.

    Args:
        vendor_id: The vendor id.
        reason: Why the vendor is suspended.
    """
    vendor = fetch(ctx.conn, "vendors", vendor_id, "vendor")
    if vendor["status"] == "suspended":
        raise PolicyViolation(f"vendor {vendor_id} is already suspended")
    if not reason.strip():
        raise InvalidArgument("reason: must not be empty")
    ctx.conn.execute("UPDATE vendors SET status = 'suspended', suspended_reason = ? WHERE id = ?",
                     (reason.strip(), vendor_id))
    return {"vendor_id": vendor_id, "status": "suspended"}


# --- people, delegations, budgets --------------------------------------------------------------------------


@tool(mode="read", entity="employee", operation="search")
def search_employees(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search employees by name or email.

    Args:
        query: Part of the employee's name or email.
    """
    return search(ctx, "employee", query)


@tool(mode="read", entity="employee", operation="get")
def get_employee(ctx: ToolContext, employee_id: str) -> dict[str, Any]:
    """Fetch an employee with the delegations they gave and received.

    Args:
        employee_id: The employee id, e.g. EMP-1001.
    """
    emp = fetch(ctx.conn, "employees", employee_id, "employee")
    emp["delegations_given"] = ctx.all("SELECT * FROM delegations WHERE delegator_id = ? ORDER BY id", (employee_id,))
    emp["delegations_received"] = ctx.all("SELECT * FROM delegations WHERE delegate_id = ? ORDER BY id",
                                          (employee_id,))
    return emp


@tool(mode="read", entity="delegation", operation="get")
def get_delegation(ctx: ToolContext, delegation_id: str) -> dict[str, Any]:
    """Fetch an approval delegation: who delegates to whom, from which date to which date.

    Args:
        delegation_id: The delegation id, e.g. DLG-801.
    """
    dlg = fetch(ctx.conn, "delegations", delegation_id, "delegation")
    for role in ("delegator", "delegate"):
        person = ctx.one("SELECT name, role FROM employees WHERE id = ?", (dlg[f"{role}_id"],))
        dlg[f"{role}_name"] = person["name"] if person else None
    return dlg


@tool(mode="read", entity="cost_center", operation="get")
def get_budget(ctx: ToolContext, cost_center_id: str) -> dict[str, Any]:
    """Fetch a cost center's budget (USD): total, committed, remaining, approver and approval cap.

    Args:
        cost_center_id: The cost center id, e.g. CC-105.
    """
    return budget_status(ctx.conn, cost_center_id, _today(ctx))


@tool(mode="read", entity="purchase_order", operation="action")
def check_budget(ctx: ToolContext, purchase_order_id: str) -> dict[str, Any]:
    """Check a purchase order against its cost center's remaining budget and approval cap (USD).

    Args:
        purchase_order_id: The purchase order id.
    """
    po = fetch(ctx.conn, "purchase_orders", purchase_order_id, "purchase order")
    budget = budget_status(ctx.conn, po["cost_center_id"], _today(ctx))
    usd = po_usd_total(ctx.conn, po, _today(ctx))
    counted = po["status"] in ("pending_approval", "approved")
    available = round(budget["remaining"] + (usd if counted else 0.0), 2)
    fits = usd <= available
    return {
        "purchase_order_id": purchase_order_id, "cost_center_id": po["cost_center_id"], "po_total_usd": usd,
        "remaining_budget_usd": available, "fits_budget": fits,
        "verdict": "fits the remaining budget" if fits else "exceeds the remaining budget",
        "approval_cap_usd": budget["approval_cap"], "approvals_required": required_approvals(ctx.conn, po, _today(ctx)),
    }


@tool(mode="read", operation="action")
def convert_currency(
    ctx: ToolContext, amount: float, from_currency: str, to_currency: str, on_date: str | None = None
) -> dict[str, Any]:
    """Convert an amount between USD, EUR and GBP at the rate in force on a date (default today).

    Args:
        amount: The amount to convert.
        from_currency: Source currency code (USD, EUR or GBP).
        to_currency: Target currency code (USD, EUR or GBP).
        on_date: Rate date, YYYY-MM-DD; defaults to today.
    """
    positive_amount(amount, "amount")
    require_code(from_currency, "from_currency", CURRENCIES)
    require_code(to_currency, "to_currency", CURRENCIES)
    on = iso_date(on_date, "on_date") if on_date is not None else _today(ctx)
    return {"amount": amount, "from_currency": from_currency, "to_currency": to_currency,
            "converted": convert(ctx.conn, amount, from_currency, to_currency, on), "rate_date": on.isoformat()}


# --- requisitions and purchase orders --------------------------------------------------------------------


@tool(mode="read", entity="requisition", operation="search")
def search_requisitions(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search requisitions by description or requester name.

    Args:
        query: Part of the description or the requester's name.
    """
    return search(ctx, "requisition", query)


@tool(mode="read", entity="requisition", operation="get")
def get_requisition(ctx: ToolContext, requisition_id: str) -> dict[str, Any]:
    """Fetch a requisition with its requester and the purchase order raised from it, if any.

    Args:
        requisition_id: The requisition id, e.g. REQ-20001.
    """
    req = fetch(ctx.conn, "requisitions", requisition_id, "requisition")
    req["requester"] = ctx.one("SELECT id, name, email FROM employees WHERE id = ?", (req["requester_id"],))
    return req


@tool(mode="write", permission="create_requisitions", entity="requisition", operation="create")
def create_requisition(
    ctx: ToolContext, requester_id: str, cost_center_id: str, description: str, quantity: int, unit_price: float,
    currency: str, needed_by: str,
) -> dict[str, Any]:
    """Raise a requisition on a cost center for an employee.

    Args:
        requester_id: The employee asking for the goods.
        cost_center_id: The cost center to charge.
        description: What is needed.
        quantity: How many units (a whole number from 1 to 1,000,000).
        unit_price: Price per unit in ``currency``.
        currency: USD, EUR or GBP.
        needed_by: Date the goods are needed, YYYY-MM-DD.
    """
    fetch(ctx.conn, "employees", requester_id, "employee")
    fetch(ctx.conn, "cost_centers", cost_center_id, "cost center")
    if not 0 < quantity <= MAX_QUANTITY:
        raise InvalidArgument(f"quantity: {quantity} must be a whole number from 1 to {MAX_QUANTITY}")
    positive_amount(unit_price, "unit_price")
    require_code(currency, "currency", CURRENCIES)
    if iso_date(needed_by, "needed_by") < _today(ctx):
        raise InvalidArgument(f"needed_by: {needed_by!r} is in the past")
    if not description.strip():
        raise InvalidArgument("description: must not be empty")
    req_id = ctx.new_id("REQ")
    amount = round(quantity * unit_price, 2)
    ctx.conn.execute("INSERT INTO requisitions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', NULL, ?)",
                     (req_id, requester_id, cost_center_id, description.strip(), quantity, unit_price, currency,
                      amount, needed_by, ctx.today()))
    return {"requisition_id": req_id, "status": "open", "amount": amount, "currency": currency}


@tool(mode="write", permission="create_purchase_orders", entity="purchase_order", operation="create")
def create_purchase_order(ctx: ToolContext, requisition_id: str, vendor_id: str) -> dict[str, Any]:
    """Raise a draft purchase order from an open requisition with an active vendor, in the vendor's currency.

    Args:
        requisition_id: The open requisition to order.
        vendor_id: The vendor to order from; must be active.
    """
    req = fetch(ctx.conn, "requisitions", requisition_id, "requisition")
    vendor = fetch(ctx.conn, "vendors", vendor_id, "vendor")
    if req["status"] != "open":
        raise PolicyViolation(f"requisition {requisition_id} is {req['status']}, not open")
    if vendor["status"] == "suspended":
        raise PolicyViolation(f"vendor {vendor_id} is suspended; new purchase orders are not allowed")
    if vendor["status"] != "active":
        raise PolicyViolation(f"vendor {vendor_id} is {vendor['status']}, not active")
    price = convert(ctx.conn, float(req["unit_price"]), req["currency"], vendor["currency"], _today(ctx))
    total = round(price * int(req["quantity"]), 2)
    po_id = ctx.new_id("PO")
    ctx.conn.execute("INSERT INTO purchase_orders VALUES (?, ?, ?, ?, ?, ?, ?, 'draft', NULL, ?, NULL, NULL)",
                     (po_id, requisition_id, vendor_id, req["cost_center_id"], ctx.persona.name,
                      vendor["currency"], total, ctx.today()))
    ctx.conn.execute("INSERT INTO po_lines VALUES (?, ?, 1, ?, ?, ?, ?)",
                     (f"POL-{po_id[3:]}-1", po_id, req["description"], req["quantity"], price, total))
    ctx.conn.execute("UPDATE requisitions SET status = 'ordered', purchase_order_id = ? WHERE id = ?",
                     (po_id, requisition_id))
    return {"purchase_order_id": po_id, "status": "draft", "currency": vendor["currency"], "total": total}


@tool(mode="read", entity="purchase_order", operation="get")
def get_purchase_order(ctx: ToolContext, purchase_order_id: str) -> dict[str, Any]:
    """Fetch a purchase order with its lines, approvals, goods receipts and invoices.

    Args:
        purchase_order_id: The purchase order id, e.g. PO-30001.
    """
    po = fetch(ctx.conn, "purchase_orders", purchase_order_id, "purchase order")
    vendor = ctx.one("SELECT name FROM vendors WHERE id = ?", (po["vendor_id"],))
    po["vendor_name"] = vendor["name"] if vendor else None
    po["lines"] = ctx.all("SELECT id, line_no, item, quantity, unit_price, amount FROM po_lines "
                          "WHERE purchase_order_id = ? ORDER BY line_no", (purchase_order_id,))
    po["approvals"] = ctx.all("SELECT * FROM approvals WHERE purchase_order_id = ? ORDER BY level",
                              (purchase_order_id,))
    receipts = ctx.all("SELECT * FROM goods_receipts WHERE purchase_order_id = ? ORDER BY id", (purchase_order_id,))
    for receipt in receipts:
        receipt["lines"] = ctx.all("SELECT po_line_id, quantity FROM receipt_lines WHERE receipt_id = ? ORDER BY id",
                                   (receipt["id"],))
    po["goods_receipts"] = receipts
    received = [read_date(r["received_on"]) for r in receipts]
    po["last_received_on"] = max(received).isoformat() if received else None
    po["invoices"] = ctx.all("SELECT id, vendor_invoice_number, total, status FROM invoices "
                             "WHERE purchase_order_id = ? ORDER BY id", (purchase_order_id,))
    return po


@tool(mode="write", permission="create_purchase_orders", entity="purchase_order", operation="update")
def submit_for_approval(ctx: ToolContext, purchase_order_id: str) -> dict[str, Any]:
    """Submit a draft purchase order for approval; routes it to one or two approvers by the cost center's cap.

    Args:
        purchase_order_id: The draft purchase order.
    """
    po = fetch(ctx.conn, "purchase_orders", purchase_order_id, "purchase order")
    if po["status"] != "draft":
        raise PolicyViolation(f"purchase order {purchase_order_id} is {po['status']}, not draft")
    needed = required_approvals(ctx.conn, po, _today(ctx))
    ctx.conn.execute("UPDATE purchase_orders SET status = 'pending_approval', required_approvals = ?, "
                     "submitted_on = ? WHERE id = ?", (needed, ctx.today(), purchase_order_id))
    approver = ctx.one("SELECT approver_id FROM cost_centers WHERE id = ?", (po["cost_center_id"],))
    route = [approver["approver_id"] if approver else None] + (["any controller"] if needed == 2 else [])
    routing = ("two approvals: the cost center approver, then a controller" if needed == 2
               else "one approval: the cost center approver")
    return {"purchase_order_id": purchase_order_id, "status": "pending_approval", "approvals_required": needed,
            "route": route, "routing": routing}


@tool(mode="write", permission="approve_purchase_orders", entity="purchase_order", operation="update")
def approve_purchase_order(
    ctx: ToolContext, purchase_order_id: str, approver_id: str, delegation_id: str | None = None
) -> dict[str, Any]:
    """Record an approval of a pending purchase order, directly or under a delegation.

    The first approval comes from the cost center's approver (or their delegate
    inside the delegation's dates); a second approval, needed above the cap,
    from a controller other than the first approver.

    Args:
        purchase_order_id: The purchase order awaiting approval.
        approver_id: The employee approving.
        delegation_id: The delegation under which the approver acts for someone else, if any.
    """
    po = fetch(ctx.conn, "purchase_orders", purchase_order_id, "purchase order")
    approver = fetch(ctx.conn, "employees", approver_id, "employee")
    if po["status"] != "pending_approval":
        raise PolicyViolation(f"purchase order {purchase_order_id} is {po['status']}, not pending_approval")
    done = ctx.all("SELECT approver_id FROM approvals WHERE purchase_order_id = ? ORDER BY level",
                   (purchase_order_id,))
    level = len(done) + 1
    acting_for = approver_id
    if delegation_id is not None:
        dlg = fetch(ctx.conn, "delegations", delegation_id, "delegation")
        if dlg["delegate_id"] != approver_id:
            raise PolicyViolation(f"delegation {delegation_id} was not given to {approver_id}")
        if not delegation_covers(dlg, _today(ctx)):
            start = read_date(dlg["start_date"]).isoformat()
            end = read_date(dlg["end_date"]).isoformat()
            raise PolicyViolation(f"delegation {delegation_id} runs from {start} to {end}; it does not cover "
                                  f"{ctx.today()}")
        acting_for = dlg["delegator_id"]
    acting = fetch(ctx.conn, "employees", acting_for, "employee")
    if level == 1:
        owner = ctx.one("SELECT approver_id FROM cost_centers WHERE id = ?", (po["cost_center_id"],))
        if owner is None or owner["approver_id"] != acting_for:
            raise PolicyViolation(f"{approver['name']} ({approver_id}) is not the approver of cost center "
                                  f"{po['cost_center_id']} and holds no delegation from them")
    else:
        if acting["role"] != "controller":
            raise PolicyViolation(f"the second approval of {purchase_order_id} needs a controller; "
                                  f"{acting_for} is a {acting['role']}")
        if any(d["approver_id"] == approver_id for d in done):
            raise PolicyViolation(f"{approver_id} already approved {purchase_order_id}; the second approver must "
                                  "be someone else")
    appr_id = ctx.new_id("APR")
    ctx.conn.execute("INSERT INTO approvals VALUES (?, ?, ?, ?, ?, ?)",
                     (appr_id, purchase_order_id, approver_id, delegation_id, level, ctx.today()))
    needed = int(po["required_approvals"] or 1)
    status = "approved" if level >= needed else "pending_approval"
    if status == "approved":
        ctx.conn.execute("UPDATE purchase_orders SET status = 'approved', approved_on = ? WHERE id = ?",
                         (ctx.today(), purchase_order_id))
    return {"purchase_order_id": purchase_order_id, "approval_id": appr_id, "level": level, "status": status,
            "approvals_required": needed}


@tool(mode="write", permission="receive_goods", entity="purchase_order", operation="update")
def record_goods_receipt(ctx: ToolContext, purchase_order_id: str, received_on: str) -> dict[str, Any]:
    """Record that the outstanding goods of an approved purchase order arrived.

    Args:
        purchase_order_id: The approved purchase order.
        received_on: Delivery date, YYYY-MM-DD (not in the future).
    """
    po = fetch(ctx.conn, "purchase_orders", purchase_order_id, "purchase order")
    day = iso_date(received_on, "received_on")
    if day > _today(ctx):
        raise InvalidArgument(f"received_on: {received_on!r} is in the future")
    if po["status"] != "approved":
        raise PolicyViolation(f"purchase order {purchase_order_id} is {po['status']}; goods are received only "
                              "against approved orders")
    outstanding = [
        (r["id"], int(r["quantity"]) - int(r["received"]))
        for r in ctx.all(
            "SELECT pl.id, pl.quantity, (SELECT COALESCE(SUM(rl.quantity), 0) FROM receipt_lines rl "
            "WHERE rl.po_line_id = pl.id) AS received FROM po_lines pl WHERE pl.purchase_order_id = ? "
            "ORDER BY pl.line_no", (purchase_order_id,))
    ]
    outstanding = [(line, qty) for line, qty in outstanding if qty > 0]
    if not outstanding:
        raise PolicyViolation(f"purchase order {purchase_order_id} is already fully received")
    gr_id = ctx.new_id("GR")
    ctx.conn.execute("INSERT INTO goods_receipts VALUES (?, ?, ?, ?)",
                     (gr_id, purchase_order_id, received_on, ctx.persona.name))
    for n, (line, qty) in enumerate(outstanding, 1):
        ctx.conn.execute("INSERT INTO receipt_lines VALUES (?, ?, ?, ?)", (f"{gr_id}-{n}", gr_id, line, qty))
    return {"goods_receipt_id": gr_id, "purchase_order_id": purchase_order_id, "received_on": received_on,
            "lines": [{"po_line_id": line, "quantity": qty} for line, qty in outstanding]}


# --- invoices and payments --------------------------------------------------------------------------------


@tool(mode="read", entity="invoice", operation="search")
def search_invoices(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search invoices by the vendor's invoice number or the vendor's name; status may be stale.

    Args:
        query: Part of the vendor invoice number (e.g. SIS-2024-0003) or vendor name.
    """
    return search(ctx, "invoice", query)


@tool(mode="read", entity="invoice", operation="get")
def get_invoice(ctx: ToolContext, invoice_id: str) -> dict[str, Any]:
    """Fetch an invoice with its lines, vendor, order status, payments and any paid invoice it may duplicate.

    Args:
        invoice_id: The invoice id, e.g. INV-50001.
    """
    inv = fetch(ctx.conn, "invoices", invoice_id, "invoice")
    inv["vendor"] = ctx.one("SELECT id, name, city, tax_id FROM vendors WHERE id = ?", (inv["vendor_id"],))
    inv["purchase_order"] = ctx.one("SELECT id, status, currency, total FROM purchase_orders WHERE id = ?",
                                    (inv["purchase_order_id"],))
    inv["lines"] = ctx.all("SELECT id, po_line_id, quantity, unit_price FROM invoice_lines WHERE invoice_id = ? "
                           "ORDER BY id", (invoice_id,))
    twin = ctx.one("SELECT id FROM invoices WHERE vendor_id = ? AND vendor_invoice_number = ? AND id != ? "
                   "AND status = 'paid' ORDER BY id", (inv["vendor_id"], inv["vendor_invoice_number"], invoice_id))
    inv["possible_duplicate_of"] = twin["id"] if twin else None
    inv["payments"] = ctx.all("SELECT id, amount, currency, paid_on FROM payments WHERE invoice_id = ? ORDER BY id",
                              (invoice_id,))
    return inv


@tool(mode="write", permission="match_invoices", entity="invoice", operation="update")
def match_invoice(ctx: ToolContext, invoice_id: str) -> dict[str, Any]:
    """Run the three-way match (purchase order vs goods receipt vs invoice) and record its result.

    Args:
        invoice_id: The invoice to match.
    """
    inv = fetch(ctx.conn, "invoices", invoice_id, "invoice")
    if inv["status"] == "paid":
        raise PolicyViolation(f"invoice {invoice_id} is already paid")
    result = three_way_match(ctx.conn, invoice_id)
    status = inv["status"] if inv["status"] == "on_hold" else result["result"]
    ctx.conn.execute("UPDATE invoices SET match_status = ?, matched_on = ?, status = ? WHERE id = ?",
                     (result["result"], ctx.today(), status, invoice_id))
    return result


@tool(mode="write", permission="hold_invoices", entity="invoice", operation="update")
def hold_invoice(ctx: ToolContext, invoice_id: str, reason: str) -> dict[str, Any]:
    """Put an unpaid invoice on hold with a reason code.

    Args:
        invoice_id: The invoice to hold.
        reason: PRICE_MISMATCH, QUANTITY_MISMATCH, NO_RECEIPT, DUPLICATE or OTHER.
    """
    inv = fetch(ctx.conn, "invoices", invoice_id, "invoice")
    require_code(reason, "reason", HOLD_REASONS)
    if inv["status"] == "paid":
        raise PolicyViolation(f"invoice {invoice_id} is already paid and cannot be held")
    ctx.conn.execute("UPDATE invoices SET status = 'on_hold', hold_reason = ? WHERE id = ?", (reason, invoice_id))
    return {"invoice_id": invoice_id, "status": "on_hold", "hold_reason": reason}


@tool(mode="write", permission="pay_invoices", irreversible=True, entity="invoice", operation="update")
def pay_invoice(ctx: ToolContext, invoice_id: str) -> dict[str, Any]:
    """Pay an invoice in full; refused unless its order is approved, goods are received and the match passes.

    Args:
        invoice_id: The invoice to pay.
    """
    inv = fetch(ctx.conn, "invoices", invoice_id, "invoice")
    if inv["status"] == "paid":
        raise PolicyViolation(f"invoice {invoice_id} is already paid")
    if inv["status"] == "on_hold":
        raise PolicyViolation(f"invoice {invoice_id} is on hold ({inv['hold_reason']}); release it first")
    po = fetch(ctx.conn, "purchase_orders", inv["purchase_order_id"], "purchase order")
    if po["status"] != "approved":
        raise PolicyViolation(f"purchase order {po['id']} is {po['status']}, not approved; invoice {invoice_id} "
                              "cannot be paid")
    if ctx.one("SELECT id FROM goods_receipts WHERE purchase_order_id = ?", (po["id"],)) is None:
        raise PolicyViolation(f"no goods receipt is recorded for purchase order {po['id']}; invoice {invoice_id} "
                              "cannot be paid")
    match = three_way_match(ctx.conn, invoice_id)
    if match["result"] != "matched":
        raise PolicyViolation(f"invoice {invoice_id} fails the three-way match ({', '.join(match['reasons'])})")
    pay_id = ctx.new_id("PAY")
    ctx.conn.execute("INSERT INTO payments VALUES (?, ?, ?, ?, ?, ?)",
                     (pay_id, invoice_id, inv["total"], inv["currency"], ctx.today(), f"ACH-{pay_id}"))
    ctx.conn.execute("UPDATE invoices SET status = 'paid', paid_on = ? WHERE id = ?", (ctx.today(), invoice_id))
    return {"payment_id": pay_id, "invoice_id": invoice_id, "amount": inv["total"], "currency": inv["currency"],
            "paid_on": ctx.today()}

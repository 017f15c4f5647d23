"""The retail store's tools, as τ²-bench documents them (its tool docstrings and policy.md), written for this world.

Each tool does what τ²-bench's tool of the same name does to the database, with the same checks in the same order
and the same error messages; a refused call changes nothing. Behaviour that is τ²-bench's own is kept so its
verdict stays its verdict: a gift card is refunded at once and its balance rounded to cents, other methods are not
touched; cancelling needs the status ``pending`` exactly, while changing the address or the payment of an order
needs ``pending`` anywhere in its status; modifying several items gives every one of them the price and options of
the last new item (τ²-bench's tool does so); returned and exchanged item ids are kept sorted; names and emails are
matched without regard to case, ids exactly.
"""

from __future__ import annotations

import json
from typing import Any

from arena.core.toolkit import InvalidArgument, NotFound, PolicyViolation, ToolContext, tool
from arena.gyms.tau2_airline.tools import evaluate
from arena.gyms.tau2_retail.world import ORDERS, PRODUCTS, USERS
from arena.gyms.tau2_world import dumps, rows

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
"""The reasons an order may be cancelled for."""


def _user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if row is None:
        raise NotFound("User not found")
    return USERS.record(row)


def _order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM orders WHERE order_id = ?", (order_id,))
    if row is None:
        raise NotFound("Order not found")
    return ORDERS.record(row)


def _product(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM products WHERE product_id = ?", (product_id,))
    if row is None:
        raise NotFound("Product not found")
    return PRODUCTS.record(row)


def _variant(ctx: ToolContext, product_id: str, item_id: str) -> dict[str, Any]:
    variants: dict[str, Any] = _product(ctx, product_id)["variants"]
    if item_id not in variants:
        raise NotFound("Variant not found")
    variant: dict[str, Any] = variants[item_id]
    return variant


def _payment_method(user: dict[str, Any], payment_method_id: str) -> dict[str, Any]:
    method: dict[str, Any] | None = user["payment_methods"].get(payment_method_id)
    if method is None:
        raise NotFound("Payment method not found")
    return method


def _gift_card(method: dict[str, Any]) -> bool:
    return bool(method.get("source") == "gift_card")


def _order_view(order: dict[str, Any]) -> dict[str, Any]:
    return {c.name: order.get(c.name) for c in ORDERS.columns}


def _save_order(ctx: ToolContext, order: dict[str, Any]) -> None:
    names = [c.name for c in ORDERS.columns if c.name != "order_id"]
    sets = ", ".join(f"{n} = ?" for n in names)
    ctx.conn.execute(f"UPDATE orders SET {sets} WHERE order_id = ?", (*ORDERS.row(order)[1:], order["order_id"]))


def _save_payment_methods(ctx: ToolContext, user: dict[str, Any]) -> None:
    ctx.conn.execute("UPDATE users SET payment_methods = ? WHERE user_id = ?",
                     (dumps(user["payment_methods"]), user["user_id"]))


def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict[str, str]:
    return {"address1": address1, "address2": address2, "city": city, "state": state, "country": country,
            "zip": zip}


def _enough_items(order: dict[str, Any], item_ids: list[str], message: str) -> None:
    """Refuse a list naming an item more often than the order holds it (``message`` names the item as ``{}``)."""
    held = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise NotFound(message.format(item_id))


@tool(mode="read")
def calculate(ctx: ToolContext, expression: str) -> str:
    """Calculate the result of a mathematical expression.

    Args:
        expression: The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers,
            operators (+, -, *, /), parentheses, and spaces.
    """
    return evaluate(expression)


@tool(mode="write", entity="order", operation="update", irreversible=True)
def cancel_pending_order(ctx: ToolContext, order_id: str, reason: str) -> dict[str, Any]:
    """Cancel a pending order.

    If the order is already processed or delivered, it cannot be cancelled. The agent needs to explain the
    cancellation detail and ask for explicit user confirmation (yes/no) to proceed. If the user confirms, the order
    status will be changed to 'cancelled' and the payment will be refunded. The refund will be added to the user's
    gift card balance immediately if the payment was made using a gift card, otherwise the refund would take 5-7
    business days to process. The function returns the order details after the cancellation.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
        reason: The reason for cancellation, which should be either 'no longer needed' or 'ordered by mistake'.
    """
    order = _order(ctx, order_id)
    if order["status"] != "pending":
        raise PolicyViolation("Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise InvalidArgument("Invalid reason")
    user = _user(ctx, order["user_id"])
    refunds = []
    for payment in order["payment_history"]:
        refunds.append({"transaction_type": "refund", "amount": payment["amount"],
                        "payment_method_id": payment["payment_method_id"]})
        method = _payment_method(user, payment["payment_method_id"])
        if _gift_card(method):
            method["balance"] = round(method["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    _save_payment_methods(ctx, user)
    _save_order(ctx, order)
    return _order_view(order)


def _price_difference(ctx: ToolContext, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str], *,
                      same_refused: bool) -> tuple[float, dict[str, Any] | None]:
    """The new items' prices minus the old ones', and the last new item's variant.

    Each new item must be an available variant of its old item's product.
    """
    diff = 0.0
    last: dict[str, Any] | None = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        if same_refused and item_id == new_item_id:
            raise PolicyViolation("The new item id should be different from the old item id")
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise NotFound(f"Item {item_id} not found")
        variant = _variant(ctx, item["product_id"], new_item_id)
        if not variant["available"]:
            raise PolicyViolation(f"New item {new_item_id} not found or available")
        diff += variant["price"] - item["price"]
        last = variant
    return diff, last


@tool(mode="write", entity="order", operation="update")
def exchange_delivered_order_items(ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str) -> dict[str, Any]:
    """Exchange items in a delivered order to new items of the same product type.

    For a delivered order, return or exchange can be only done once by the agent. The agent needs to explain the
    exchange detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
        item_ids: The item ids to be exchanged, each such as '1008292230'. There could be duplicate items in the
            list.
        new_item_ids: The item ids to be exchanged for, each such as '1008292230'. There could be duplicate items in
            the list. Each new item id should match the item id in the same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as
            'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    order = _order(ctx, order_id)
    if order["status"] != "delivered":
        raise PolicyViolation("Non-delivered order cannot be exchanged")
    _enough_items(order, item_ids, "Number of {} not found.")
    if len(item_ids) != len(new_item_ids):
        raise InvalidArgument("The number of items to be exchanged should match.")
    diff, _ = _price_difference(ctx, order, item_ids, new_item_ids, same_refused=False)
    diff = round(diff, 2)
    method = _payment_method(_user(ctx, order["user_id"]), payment_method_id)
    if _gift_card(method) and method["balance"] < diff:
        raise PolicyViolation("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    _save_order(ctx, order)
    return _order_view(order)


@tool(mode="read", entity="user", operation="action")
def find_user_id_by_name_zip(ctx: ToolContext, first_name: str, last_name: str, zip: str) -> str:
    """Find user id by first name, last name, and zip code.

    If the user is not found, the function will return an error message. By default, find user id by email, and
    only call this function if the user is not found by email or cannot remember email.

    Args:
        first_name: The first name of the customer, such as 'John'.
        last_name: The last name of the customer, such as 'Doe'.
        zip: The zip code of the customer, such as '12345'.
    """
    for user in rows(ctx.conn, "SELECT user_id, name, address FROM users ORDER BY rowid"):
        name, address = json.loads(user["name"]), json.loads(user["address"])
        if (name["first_name"].casefold() == first_name.casefold()
                and name["last_name"].casefold() == last_name.casefold() and address["zip"] == zip):
            return str(user["user_id"])
    raise NotFound("User not found")


@tool(mode="read", entity="user", operation="action")
def find_user_id_by_email(ctx: ToolContext, email: str) -> str:
    """Find user id by email. If the user is not found, the function will return an error message.

    Args:
        email: The email of the user, such as 'something@example.com'.
    """
    for user in rows(ctx.conn, "SELECT user_id, email FROM users ORDER BY rowid"):
        if str(user["email"]).casefold() == email.casefold():
            return str(user["user_id"])
    raise NotFound("User not found")


@tool(mode="read", entity="order", operation="get")
def get_order_details(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Get the status and details of an order.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
    """
    return _order_view(_order(ctx, order_id))


@tool(mode="read", entity="product", operation="get")
def get_product_details(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Get the inventory details of a product.

    Args:
        product_id: The product id, such as '6086499569'. Be careful the product id is different from the item id.
    """
    return _product(ctx, product_id)


@tool(mode="read", entity="item", operation="get")
def get_item_details(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    """Get the inventory details of an item.

    Args:
        item_id: The item id, such as '6086499569'. Be careful the item id is different from the product id.
    """
    for product in rows(ctx.conn, "SELECT variants FROM products ORDER BY rowid"):
        variants = json.loads(product["variants"])
        if item_id in variants:
            item: dict[str, Any] = variants[item_id]
            return item
    raise NotFound("Item not found")


@tool(mode="read", entity="user", operation="get")
def get_user_details(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    """Get the details of a user, including their orders.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    return _user(ctx, user_id)


@tool(mode="read")
def list_all_product_types(ctx: ToolContext) -> str:
    """List the name and product id of all product types.

    Each product type has a variety of different items with unique item ids and options. There are only 50
    product types in the store. Returns a JSON string mapping product names to their product IDs, sorted
    alphabetically by name.
    """
    names = {str(r["name"]): str(r["product_id"]) for r in rows(ctx.conn, "SELECT name, product_id FROM products "
                                                                          "ORDER BY rowid")}
    return json.dumps(names, sort_keys=True)


@tool(mode="write", entity="order", operation="update")
def modify_pending_order_address(ctx: ToolContext, order_id: str, address1: str, address2: str, city: str, state: str,
                                 country: str, zip: str) -> dict[str, Any]:
    """Modify the shipping address of a pending order.

    The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    order = _order(ctx, order_id)
    if "pending" not in order["status"]:
        raise PolicyViolation("Non-pending order cannot be modified")
    order["address"] = _address(address1, address2, city, state, country, zip)
    _save_order(ctx, order)
    return _order_view(order)


@tool(mode="write", entity="order", operation="update")
def modify_pending_order_items(ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str],
                               payment_method_id: str) -> dict[str, Any]:
    """Modify items in a pending order to new items of the same product type.

    For a pending order, this function can only be called once. The agent needs to explain the exchange detail and
    ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
        item_ids: The item ids to be modified, each such as '1008292230'. There could be duplicate items in the
            list.
        new_item_ids: The item ids to be modified for, each such as '1008292230'. There could be duplicate items in
            the list. Each new item id should match the item id in the same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as
            'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    order = _order(ctx, order_id)
    if order["status"] != "pending":
        raise PolicyViolation("Non-pending order cannot be modified")
    _enough_items(order, item_ids, "{} not found")
    if len(item_ids) != len(new_item_ids):
        raise InvalidArgument("The number of items to be exchanged should match")
    diff, last = _price_difference(ctx, order, item_ids, new_item_ids, same_refused=True)
    user = _user(ctx, order["user_id"])
    method = _payment_method(user, payment_method_id)
    if _gift_card(method) and method["balance"] < diff:
        raise PolicyViolation("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund", "amount": abs(diff),
                                     "payment_method_id": payment_method_id})
    if _gift_card(method):
        method["balance"] = round(method["balance"] - diff, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None or last is None:
            raise NotFound(f"Item {item_id} not found")
        item["item_id"] = new_item_id
        item["price"] = last["price"]
        item["options"] = dict(last["options"])
    order["status"] = "pending (item modified)"
    _save_payment_methods(ctx, user)
    _save_order(ctx, order)
    return _order_view(order)


@tool(mode="write", entity="order", operation="update")
def modify_pending_order_payment(ctx: ToolContext, order_id: str, payment_method_id: str) -> dict[str, Any]:
    """Modify the payment method of a pending order.

    The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as
            'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    order = _order(ctx, order_id)
    if "pending" not in order["status"]:
        raise PolicyViolation("Non-pending order cannot be modified")
    user = _user(ctx, order["user_id"])
    method = _payment_method(user, payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise PolicyViolation("There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        raise PolicyViolation("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if _gift_card(method) and method["balance"] < amount:
        raise PolicyViolation("Insufficient gift card balance to pay for the order")
    history.extend([{"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
                    {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id}])
    if _gift_card(method):
        method["balance"] = round(method["balance"] - amount, 2)
    old = _payment_method(user, old_id)
    if _gift_card(old):
        old["balance"] = round(old["balance"] + amount, 2)
    _save_payment_methods(ctx, user)
    _save_order(ctx, order)
    return _order_view(order)


@tool(mode="write", entity="user", operation="update")
def modify_user_address(ctx: ToolContext, user_id: str, address1: str, address2: str, city: str, state: str,
                        country: str, zip: str) -> dict[str, Any]:
    """Modify the default address of a user.

    The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    user = _user(ctx, user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    ctx.conn.execute("UPDATE users SET address = ? WHERE user_id = ?", (dumps(user["address"]), user_id))
    return user


@tool(mode="write", entity="order", operation="update")
def return_delivered_order_items(ctx: ToolContext, order_id: str, item_ids: list[str],
                                 payment_method_id: str) -> dict[str, Any]:
    """Return some items of a delivered order.

    The order status will be changed to 'return requested'. The agent needs to explain the return detail and ask
    for explicit user confirmation (yes/no) to proceed. The user will receive follow-up email for how and where to
    return the item.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order
            id.
        item_ids: The item ids to be returned, each such as '1008292230'. There could be duplicate items in the
            list.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as
            'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    order = _order(ctx, order_id)
    if order["status"] != "delivered":
        raise PolicyViolation("Non-delivered order cannot be returned")
    method = _payment_method(_user(ctx, order["user_id"]), payment_method_id)
    original = order["payment_history"][0]["payment_method_id"] if order["payment_history"] else None
    if not _gift_card(method) and payment_method_id != original:
        raise PolicyViolation("Payment method should be the original payment method")
    _enough_items(order, item_ids, "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    _save_order(ctx, order)
    return _order_view(order)


@tool(mode="read")
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue.

    Only transfer if the user explicitly asks for a human agent, or if, given the policy and the available tools,
    you cannot solve the user's issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"

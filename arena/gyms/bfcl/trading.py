"""BFCL's stock trading account (``TradingBot``): an account, stocks, orders, a watch list, transactions."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.data import long_context_data
from arena.gyms.bfcl.store import Number, PythonError, RecordKey, as_bfcl, draw, dumps, loads, next_value, seeded_state

SCHEMA = """
CREATE TABLE tr_accounts (id TEXT PRIMARY KEY, task TEXT NOT NULL, account_info TEXT NOT NULL, authenticated,
                          market_status, order_counter, long_context INTEGER NOT NULL);
CREATE TABLE tr_orders (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL,
                        ord TEXT NOT NULL);
CREATE TABLE tr_stocks (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, symbol TEXT NOT NULL,
                        stock TEXT NOT NULL);
CREATE TABLE tr_watch (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, symbol);
CREATE TABLE tr_transactions (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, txn TEXT NOT NULL);
CREATE INDEX tr_orders_by_task ON tr_orders (task, seq);
CREATE INDEX tr_stocks_by_task ON tr_stocks (task, symbol);
CREATE INDEX tr_watch_by_task ON tr_watch (task, seq);
CREATE INDEX tr_transactions_by_task ON tr_transactions (task, seq);
"""

OWNER = "TradingBot"
DEFAULT_SEED = 1053520
CURRENT_TIME = datetime(2024, 9, 1, 10, 30)
"""The trading system's fixed "now"."""

SYMBOLS = {"Apple": "AAPL", "Google": "GOOG", "Tesla": "TSLA", "Microsoft": "MSFT", "Nvidia": "NVDA",
           "Zeta Corp": "ZETA", "Alpha Tech": "ALPH", "Omega Industries": "OMEG", "Quasar Ltd.": "QUAS",
           "Neptune Systems": "NEPT", "Synex Solutions": "SYNX", "Amazon": "AMZN", "Gorilla": "GORI"}
SECTORS = {"Technology": ["AAPL", "GOOG", "MSFT", "NVDA"], "Automobile": ["TSLA", "F", "GM"]}

DEFAULT_ORDERS = {12345: {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10,
                          "status": "Completed"},
                  12446: {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5,
                          "status": "Pending"}}
DEFAULT_ACCOUNT = {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533}
DEFAULT_STOCKS = {
    "AAPL": {"price": 227.16, "percent_change": 0.17, "volume": 2.552, "MA(5)": 227.11, "MA(20)": 227.09},
    "GOOG": {"price": 2840.34, "percent_change": 0.24, "volume": 1.123, "MA(5)": 2835.67, "MA(20)": 2842.15},
    "TSLA": {"price": 667.92, "percent_change": -0.12, "volume": 1.654, "MA(5)": 671.15, "MA(20)": 668.2},
    "MSFT": {"price": 310.23, "percent_change": 0.09, "volume": 3.234, "MA(5)": 309.88, "MA(20)": 310.11},
    "NVDA": {"price": 220.34, "percent_change": 0.34, "volume": 1.234, "MA(5)": 220.45, "MA(20)": 220.67},
    "ALPH": {"price": 1320.45, "percent_change": -0.08, "volume": 1.567, "MA(5)": 1321.12, "MA(20)": 1325.78},
    "OMEG": {"price": 457.23, "percent_change": 0.12, "volume": 2.345, "MA(5)": 456.78, "MA(20)": 458.12},
    "QUAS": {"price": 725.89, "percent_change": -0.03, "volume": 1.789, "MA(5)": 726.45, "MA(20)": 728.0},
    "NEPT": {"price": 88.34, "percent_change": 0.19, "volume": 0.654, "MA(5)": 88.21, "MA(20)": 88.67},
    "SYNX": {"price": 345.67, "percent_change": 0.11, "volume": 2.112, "MA(5)": 345.34, "MA(20)": 346.12},
    "ZETA": {"price": 22.09, "percent_change": -0.05, "volume": 0.789, "MA(5)": 22.12, "MA(20)": 22.34},
}
"""BFCL's defaults for a configuration that leaves them out."""


def _account(ctx: ToolContext) -> dict[str, Any]:
    found = ctx.one("SELECT * FROM tr_accounts WHERE id = ?", (ctx.task_id,))
    if found is None:
        raise PythonError("name 'TradingBot' is not defined: this task has no trading account")
    found["account_info"] = loads(found["account_info"])
    return found


def _set_info(ctx: ToolContext, info: dict[str, Any]) -> None:
    ctx.conn.execute("UPDATE tr_accounts SET account_info = ? WHERE id = ?", (dumps(info), ctx.task_id))


def _orders(ctx: ToolContext) -> list[tuple[str, Any, dict[str, Any]]]:
    return [(r["id"], json.loads(r["key"]), loads(r["ord"]))
            for r in ctx.all("SELECT id, key, ord FROM tr_orders WHERE task = ? ORDER BY seq", (ctx.task_id,))]


def _order(ctx: ToolContext, order_id: Any) -> tuple[str, dict[str, Any]] | None:
    for row_id, key, order in _orders(ctx):
        if key == order_id and isinstance(key, str) == isinstance(order_id, str):
            return row_id, order
    return None


def _stock(ctx: ToolContext, symbol: str) -> dict[str, Any] | None:
    row = ctx.one("SELECT stock FROM tr_stocks WHERE task = ? AND symbol = ?", (ctx.task_id, symbol))
    return None if row is None else dict(loads(row["stock"]))


def _watch(ctx: ToolContext) -> list[Any]:
    return [r["symbol"] for r in ctx.all("SELECT symbol FROM tr_watch WHERE task = ? ORDER BY seq", (ctx.task_id,))]


def _timestamp(ctx: ToolContext) -> str:
    start = int(CURRENT_TIME.replace(tzinfo=UTC).timestamp())
    end = int((CURRENT_TIME + timedelta(days=1)).replace(tzinfo=UTC).timestamp())
    moment = draw(ctx, OWNER, lambda rng: rng.randint(start, end))
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _record(ctx: ToolContext, kind: str, amount: int | float) -> None:
    seq = next_value(ctx, "tr_transactions", "seq")
    txn = {"type": kind, "amount": amount, "timestamp": _timestamp(ctx)}
    ctx.conn.execute("INSERT INTO tr_transactions VALUES (?, ?, ?, ?)",
                     (f"{ctx.task_id}/x{seq}", ctx.task_id, seq, dumps(txn)))


@tool(mode="read", entity="market", operation="action")
@as_bfcl
def get_current_time(ctx: ToolContext) -> dict[str, Any]:
    """Get the trading system's current time."""
    _account(ctx)
    return {"current_time": CURRENT_TIME.strftime("%I:%M %p")}


@tool(mode="read", entity="stock", operation="search")
@as_bfcl
def get_symbol_by_name(ctx: ToolContext, name: str) -> dict[str, Any]:
    """Get a stock's symbol from its company's name.

    Args:
        name: The company's name, e.g. Apple.
    """
    _account(ctx)
    return {"symbol": SYMBOLS.get(name, "Stock not found")}


@tool(mode="read", entity="stock", operation="get")
@as_bfcl
def get_stock_info(ctx: ToolContext, symbol: str) -> dict[str, Any]:
    """Get a stock's price, percent change, volume and moving averages.

    Args:
        symbol: The stock's symbol.
    """
    account = _account(ctx)
    stock = _stock(ctx, symbol)
    if stock is None:
        return {"error": f"Stock with symbol '{symbol}' not found."}
    if account["long_context"]:
        extra = long_context_data()
        stock["MA(5)"] = extra["MA_5_EXTENSION"]
        stock["MA(20)"] = extra["MA_20_EXTENSION"]
    return stock


@tool(mode="read", entity="order", operation="get")
@as_bfcl
def get_order_details(ctx: ToolContext, order_id: RecordKey) -> dict[str, Any]:
    """Get an order by its id.

    Args:
        order_id: The order's id.
    """
    account = _account(ctx)
    found = _order(ctx, order_id)
    if found is None:
        keys = [key for _, key, _ in _orders(ctx)]
        return {"error": f"Order with ID {order_id} not found.Here is the list of orders_id: {keys!r}"}
    order = dict(found[1])
    if account["long_context"]:
        details = {}
        for key, value in long_context_data()["ORDER_DETAIL_EXTENSION"].items():
            try:
                details[key] = str(value).format(symbol=order["symbol"])
            except KeyError as exc:
                return {"error": f"KeyError during formatting: {exc}"}
        order["metadata"] = details
    return order


@tool(mode="write", entity="order", operation="update")
@as_bfcl
def cancel_order(ctx: ToolContext, order_id: RecordKey) -> dict[str, Any]:
    """Cancel an order that is not completed.

    Args:
        order_id: The order's id.
    """
    _account(ctx)
    found = _order(ctx, order_id)
    if found is None:
        return {"error": f"Order with ID {order_id} not found."}
    row_id, order = found
    if order["status"] == "Completed":
        return {"error": f"Can't cancel order {order_id}. Order is already completed."}
    order["status"] = "Cancelled"
    ctx.conn.execute("UPDATE tr_orders SET ord = ? WHERE id = ?", (dumps(order), row_id))
    return {"order_id": order_id, "status": "Cancelled"}


@tool(mode="write", entity="order", operation="create")
@as_bfcl
def place_order(ctx: ToolContext, order_type: str, symbol: str, price: Number, amount: int) -> dict[str, Any]:
    """Place an order to buy or sell a stock (a buy must be covered by the balance).

    Args:
        order_type: "Buy" or "Sell".
        symbol: The stock's symbol.
        price: The price per share.
        amount: The number of shares.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please log in to place an order."}
    if _stock(ctx, symbol) is None:
        return {"error": f"Invalid stock symbol: {symbol}"}
    if price <= 0 or amount <= 0:
        return {"error": "Price and amount must be positive values."}
    balance = account["account_info"].get("balance", 0)
    if order_type.lower() == "buy":
        total = float(price) * int(amount)
        if total > balance:
            return {"error": f"Insufficient funds: required ${total:.2f} but only ${balance:.2f} available."}
    price = float(price)
    order_id = account["order_counter"]
    order = {"id": order_id, "order_type": order_type, "symbol": symbol, "price": price, "amount": amount,
             "status": "Open"}
    existing = _order(ctx, order_id)
    if existing is not None:
        ctx.conn.execute("UPDATE tr_orders SET ord = ? WHERE id = ?", (dumps(order), existing[0]))
    else:
        seq = next_value(ctx, "tr_orders", "seq")
        ctx.conn.execute("INSERT INTO tr_orders VALUES (?, ?, ?, ?, ?)",
                         (f"{ctx.task_id}/o{seq}", ctx.task_id, seq, json.dumps(order_id), dumps(order)))
    ctx.conn.execute("UPDATE tr_accounts SET order_counter = ? WHERE id = ?", (order_id + 1, ctx.task_id))
    return {"order_id": order_id, "order_type": order_type, "status": "Pending", "price": price, "amount": amount}


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def withdraw_funds(ctx: ToolContext, amount: Number) -> dict[str, Any]:
    """Withdraw money from the account's balance (only while the market is open).

    Args:
        amount: The amount to withdraw.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please log in to make a transaction."}
    if account["market_status"] != "Open":
        return {"error": "Market is closed. Transactions are not allowed."}
    if amount <= 0:
        return {"error": "Transaction amount must be positive."}
    info = account["account_info"]
    if amount > info["balance"]:
        return {"error": "Insufficient funds for withdrawal."}
    info["balance"] -= amount
    _set_info(ctx, info)
    _record(ctx, "withdrawal", amount)
    return {"status": "Withdrawal successful", "new_balance": info["balance"]}


@tool(mode="read", entity="account", operation="get")
@as_bfcl
def get_account_info(ctx: ToolContext) -> dict[str, Any]:
    """Get the account's id, balance and bound card."""
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please log in to view account information."}
    info: dict[str, Any] = account["account_info"]
    return info


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def trading_login(ctx: ToolContext, username: str, password: str) -> dict[str, Any]:
    """Log in to the trading system.

    Args:
        username: The username.
        password: The password.
    """
    if _account(ctx)["authenticated"]:
        return {"status": "Already logged in"}
    ctx.conn.execute("UPDATE tr_accounts SET authenticated = 1 WHERE id = ?", (ctx.task_id,))
    return {"status": "Logged in successfully"}


@tool(mode="read", entity="account", operation="action")
@as_bfcl
def trading_get_login_status(ctx: ToolContext) -> dict[str, Any]:
    """Say whether the trading system is logged in."""
    return {"status": bool(_account(ctx)["authenticated"])}


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def trading_logout(ctx: ToolContext) -> dict[str, Any]:
    """Log out of the trading system."""
    if not _account(ctx)["authenticated"]:
        return {"status": "No user is currently logged in"}
    ctx.conn.execute("UPDATE tr_accounts SET authenticated = 0 WHERE id = ?", (ctx.task_id,))
    return {"status": "Logged out successfully"}


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def fund_account(ctx: ToolContext, amount: Number) -> dict[str, Any]:
    """Add money to the account's balance.

    Args:
        amount: The amount to add.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please log in to fund the account."}
    if amount <= 0:
        return {"error": "Funding amount must be positive."}
    info = account["account_info"]
    info["balance"] += amount
    _set_info(ctx, info)
    _record(ctx, "deposit", amount)
    return {"status": "Account funded successfully", "new_balance": info["balance"]}


@tool(mode="write", entity="watchlist", operation="delete")
@as_bfcl
def remove_stock_from_watchlist(ctx: ToolContext, symbol: str) -> dict[str, Any]:
    """Remove a stock from the watch list.

    Args:
        symbol: The stock's symbol.
    """
    if not _account(ctx)["authenticated"]:
        return {"error": "User not authenticated. Please log in to modify the watchlist."}
    row = ctx.one("SELECT id FROM tr_watch WHERE task = ? AND symbol = ? ORDER BY seq LIMIT 1", (ctx.task_id, symbol))
    if row is None:
        return {"error": f"Stock {symbol} not found in watchlist."}
    ctx.conn.execute("DELETE FROM tr_watch WHERE id = ?", (row["id"],))
    return {"status": f"Stock {symbol} removed from watchlist successfully."}


@tool(mode="read", entity="watchlist", operation="list")
@as_bfcl
def get_watchlist(ctx: ToolContext) -> Any:
    """Get the watch list."""
    account = _account(ctx)
    if not account["authenticated"]:
        return ["Error: User not authenticated. Please log in to view the watchlist."]
    if account["long_context"]:
        return [*_watch(ctx), *long_context_data()["WATCH_LIST_EXTENSION"]]
    return {"watchlist": _watch(ctx)}


@tool(mode="read", entity="order", operation="list")
@as_bfcl
def get_order_history(ctx: ToolContext) -> Any:
    """List the ids of the account's orders."""
    if not _account(ctx)["authenticated"]:
        return [{"error": "User not authenticated. Please log in to view order history."}]
    return {"history": [key for _, key, _ in _orders(ctx)]}


def _day(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d")
    except ValueError as exc:
        raise PythonError(str(exc)) from None


@tool(mode="read", entity="transaction", operation="list")
@as_bfcl
def get_transaction_history(ctx: ToolContext, start_date: str | None = None,
                            end_date: str | None = None) -> Any:
    """List the account's deposits and withdrawals, optionally between two days.

    Args:
        start_date: The first day, YYYY-MM-DD.
        end_date: The last day, YYYY-MM-DD.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return [{"error": "User not authenticated. Please log in to view transaction history."}]
    start = _day(start_date) if start_date else datetime.min
    end = _day(end_date) if end_date else datetime.max
    rows = [loads(r["txn"]) for r in ctx.all("SELECT txn FROM tr_transactions WHERE task = ? ORDER BY seq",
                                             (ctx.task_id,))]
    kept = [t for t in rows if start <= datetime.strptime(t["timestamp"], "%Y-%m-%d %H:%M:%S") <= end]
    if account["long_context"]:
        kept.extend(long_context_data()["TRANSACTION_HISTORY_EXTENSION"])
    return {"transaction_history": kept}


@tool(mode="read", entity="stock", operation="list")
@as_bfcl
def get_available_stocks(ctx: ToolContext, sector: str) -> dict[str, Any]:
    """List the stock symbols of a sector.

    Args:
        sector: The sector, e.g. Technology or Automobile.
    """
    account = _account(ctx)
    sectors = {name: list(symbols) for name, symbols in SECTORS.items()}
    if account["long_context"]:
        extra = long_context_data()
        sectors["Technology"].extend(extra["TECHNOLOGY_EXTENSION"])
        sectors["Automobile"].extend(extra["AUTOMOBILE_EXTENSION"])
    return {"stock_list": sectors.get(sector, [])}


def _price(ctx: ToolContext, symbol: str) -> Any:
    stock = _stock(ctx, symbol)
    return 0 if stock is None else stock.get("price", 0)


@tool(mode="read", entity="stock", operation="search")
@as_bfcl
def filter_stocks_by_price(ctx: ToolContext, stocks: list[str], min_price: Number, max_price: Number) -> dict[str, Any]:
    """Keep the stocks whose price lies between two bounds (inclusive).

    Args:
        stocks: The stock symbols.
        min_price: The lowest price.
        max_price: The highest price.
    """
    _account(ctx)
    return {"filtered_stocks": [s for s in stocks if min_price <= _price(ctx, s) <= max_price]}


@tool(mode="write", entity="watchlist", operation="create")
@as_bfcl
def add_to_watchlist(ctx: ToolContext, stock: str) -> dict[str, Any]:
    """Add a stock to the watch list (a symbol the system knows and the list does not hold yet).

    Args:
        stock: The stock's symbol.
    """
    _account(ctx)
    watch = _watch(ctx)
    if stock not in watch and _stock(ctx, stock) is not None:
        seq = next_value(ctx, "tr_watch", "seq")
        ctx.conn.execute("INSERT INTO tr_watch VALUES (?, ?, ?, ?)", (f"{ctx.task_id}/w{seq}", ctx.task_id, seq, stock))
        watch.append(stock)
    return {"watchlist": watch}


@tool(mode="read", entity="stock", operation="action")
@as_bfcl
def notify_price_change(ctx: ToolContext, stocks: list[str], threshold: Number) -> dict[str, Any]:
    """Say which of some stocks moved by at least a threshold (absolute percent change).

    Args:
        stocks: The stock symbols.
        threshold: The percent change that counts as significant.
    """
    _account(ctx)
    changed = []
    for symbol in stocks:
        stock = _stock(ctx, symbol)
        if stock is not None and abs(stock["percent_change"]) >= threshold:
            changed.append(symbol)
    if changed:
        return {"notification": f"Stocks {', '.join(changed)} have significant price changes."}
    return {"notification": "No significant price changes in the selected stocks."}


TOOLS = (get_current_time, get_symbol_by_name, get_stock_info, get_order_details, cancel_order, place_order,
         withdraw_funds, get_account_info, trading_login, trading_get_login_status, trading_logout, fund_account,
         remove_stock_from_watchlist, get_watchlist, get_order_history, get_transaction_history,
         get_available_stocks, filter_stocks_by_price, add_to_watchlist, notify_price_change)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's trading account from BFCL's configuration (missing keys take BFCL's defaults)."""
    orders = config.get("orders", DEFAULT_ORDERS)
    orders = {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in orders.items()}
    conn.execute("INSERT INTO tr_accounts VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (task, task, dumps(config.get("account_info", DEFAULT_ACCOUNT)), config.get("authenticated", False),
                  config.get("market_status", "Closed"), config.get("order_counter", 12446), int(bool(long_context))))
    for seq, (key, order) in enumerate(orders.items()):
        conn.execute("INSERT INTO tr_orders VALUES (?, ?, ?, ?, ?)",
                     (f"{task}/o{seq}", task, seq, json.dumps(key), dumps(order)))
    for seq, (symbol, stock) in enumerate(config.get("stocks", DEFAULT_STOCKS).items()):
        conn.execute("INSERT INTO tr_stocks VALUES (?, ?, ?, ?, ?)",
                     (f"{task}/s{seq}", task, seq, symbol, dumps(stock)))
    for seq, symbol in enumerate(config.get("watch_list", ["NVDA"])):
        conn.execute("INSERT INTO tr_watch VALUES (?, ?, ?, ?)", (f"{task}/w{seq}", task, seq, symbol))
    for seq, txn in enumerate(config.get("transaction_history", [])):
        conn.execute("INSERT INTO tr_transactions VALUES (?, ?, ?, ?)", (f"{task}/x{seq}", task, seq, dumps(txn)))
    conn.execute("INSERT INTO rng_states VALUES (?, ?, ?, ?)",
                 (f"{task}/{OWNER}", task, OWNER, seeded_state(int(config.get("random_seed", DEFAULT_SEED)))))


def state(query: Query, task: str) -> dict[str, Any]:
    """The trading account's public attributes as BFCL's instance holds them."""
    info, authenticated, market, counter, long_context = query(
        "SELECT account_info, authenticated, market_status, order_counter, long_context FROM tr_accounts WHERE id = ?",
        (task,))[0]
    orders = {json.loads(k): loads(v) for k, v in query("SELECT key, ord FROM tr_orders WHERE task = ? ORDER BY seq",
                                                        (task,))}
    stocks = {s: loads(v) for s, v in query("SELECT symbol, stock FROM tr_stocks WHERE task = ? ORDER BY seq",
                                            (task,))}
    watch = [r[0] for r in query("SELECT symbol FROM tr_watch WHERE task = ? ORDER BY seq", (task,))]
    history = [loads(r[0]) for r in query("SELECT txn FROM tr_transactions WHERE task = ? ORDER BY seq", (task,))]
    return {"orders": orders, "account_info": loads(info), "authenticated": authenticated, "market_status": market,
            "order_counter": counter, "stocks": stocks, "watch_list": watch, "transaction_history": history,
            "long_context": bool(long_context)}


TRADING = FunctionClass(name="TradingBot", label="stock trading", schema=SCHEMA, load=load, state=state,
                        tools={t.name: t for t in TOOLS})
"""The trading class."""


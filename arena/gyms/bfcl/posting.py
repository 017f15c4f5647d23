"""BFCL's social posting account (``TwitterAPI``): tweets, comments, retweets, the accounts followed, a login.

Tweets, comment lists and retweet lists are kept under the key BFCL's instance uses (a tweet id is an integer; a
comment list loaded from BFCL's configuration keeps the text key it was written with, so a new comment on that
tweet starts a list of its own, as in BFCL).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.store import PythonError, RecordKey, as_bfcl, dumps, loads, next_value

SCHEMA = """
CREATE TABLE tw_accounts (id TEXT PRIMARY KEY, task TEXT NOT NULL, username, password, authenticated,
                          tweet_counter);
CREATE TABLE tw_tweets (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL,
                        tweet TEXT NOT NULL);
CREATE TABLE tw_comments (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL,
                          comments TEXT NOT NULL);
CREATE TABLE tw_retweets (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL,
                          tweet_ids TEXT NOT NULL);
CREATE TABLE tw_following (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, username);
CREATE INDEX tw_tweets_by_task ON tw_tweets (task, seq);
CREATE INDEX tw_following_by_task ON tw_following (task, seq);
"""

DEFAULTS: dict[str, Any] = {"username": "john", "password": "john123", "authenticated": False, "tweets": {},
                            "comments": {}, "retweets": {}, "following_list": ["alice", "bob"], "tweet_counter": 0}


def _account(ctx: ToolContext) -> dict[str, Any]:
    found = ctx.one("SELECT * FROM tw_accounts WHERE id = ?", (ctx.task_id,))
    if found is None:
        raise PythonError("name 'TwitterAPI' is not defined: this task has no posting account")
    return found


def _keyed(ctx: ToolContext, table: str, column: str, key: Any) -> dict[str, Any] | None:
    """The row of ``table`` whose key equals ``key`` as a Python dict key would (``1`` matches ``1.0``, not ``"1"``)."""
    for row in ctx.all(f"SELECT id, key, {column} AS value FROM {table} WHERE task = ? ORDER BY seq", (ctx.task_id,)):
        stored = json.loads(row["key"])
        if stored == key and isinstance(stored, str) == isinstance(key, str):
            return {"id": row["id"], "key": stored, "value": loads(row["value"])}
    return None


def _tweets(ctx: ToolContext) -> list[dict[str, Any]]:
    return [loads(r["tweet"]) for r in ctx.all("SELECT tweet FROM tw_tweets WHERE task = ? ORDER BY seq",
                                               (ctx.task_id,))]


def _insert(ctx: ToolContext, table: str, key: Any, value: Any) -> None:
    seq = next_value(ctx, table, "seq")
    ctx.conn.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)",
                     (f"{ctx.task_id}/{table}/{seq}", ctx.task_id, seq, json.dumps(key), dumps(value)))


def _following(ctx: ToolContext) -> list[Any]:
    return [r["username"] for r in ctx.all("SELECT username FROM tw_following WHERE task = ? ORDER BY seq",
                                           (ctx.task_id,))]


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def authenticate_twitter(ctx: ToolContext, username: str, password: str) -> dict[str, Any]:
    """Log in to the posting account with its username and password.

    Args:
        username: The account's username.
        password: The account's password.
    """
    account = _account(ctx)
    if username == account["username"] and password == account["password"]:
        ctx.conn.execute("UPDATE tw_accounts SET authenticated = 1 WHERE id = ?", (ctx.task_id,))
        return {"authentication_status": True}
    return {"authentication_status": False}


@tool(mode="read", entity="account", operation="action")
@as_bfcl
def posting_get_login_status(ctx: ToolContext) -> dict[str, Any]:
    """Say whether the posting account is logged in."""
    return {"login_status": bool(_account(ctx)["authenticated"])}


@tool(mode="write", entity="tweet", operation="create")
@as_bfcl
def post_tweet(ctx: ToolContext, content: str, tags: list[str] | None = None,
               mentions: list[str] | None = None) -> dict[str, Any]:
    """Post a tweet from the logged-in account.

    Args:
        content: The tweet's text.
        tags: Tags of the tweet, each starting with #, when the user asks for tags.
        mentions: Users the tweet mentions, each starting with @, when the user asks for mentions.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please authenticate before posting."}
    counter = account["tweet_counter"]
    tweet = {"id": counter, "username": account["username"], "content": content,
             "tags": [] if tags is None else tags, "mentions": [] if mentions is None else mentions}
    existing = _keyed(ctx, "tw_tweets", "tweet", counter)
    if existing is not None:
        ctx.conn.execute("UPDATE tw_tweets SET tweet = ? WHERE id = ?", (dumps(tweet), existing["id"]))
    else:
        _insert(ctx, "tw_tweets", counter, tweet)
    ctx.conn.execute("UPDATE tw_accounts SET tweet_counter = ? WHERE id = ?", (counter + 1, ctx.task_id))
    return tweet


def _tweet(ctx: ToolContext, tweet_id: RecordKey) -> dict[str, Any] | None:
    return _keyed(ctx, "tw_tweets", "tweet", tweet_id)


@tool(mode="write", entity="tweet", operation="action")
@as_bfcl
def retweet(ctx: ToolContext, tweet_id: RecordKey) -> dict[str, Any]:
    """Retweet a tweet from the logged-in account.

    Args:
        tweet_id: The tweet's id.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please authenticate before retweeting."}
    if _tweet(ctx, tweet_id) is None:
        return {"error": f"Tweet with ID {tweet_id} not found."}
    mine = _keyed(ctx, "tw_retweets", "tweet_ids", account["username"])
    if mine is None:
        _insert(ctx, "tw_retweets", account["username"], [tweet_id])
    elif tweet_id in mine["value"]:
        return {"retweet_status": "Already retweeted"}
    else:
        ctx.conn.execute("UPDATE tw_retweets SET tweet_ids = ? WHERE id = ?", (dumps([*mine["value"], tweet_id]),
                                                                               mine["id"]))
    return {"retweet_status": "Successfully retweeted"}


@tool(mode="write", entity="tweet", operation="action")
@as_bfcl
def comment(ctx: ToolContext, tweet_id: RecordKey, comment_content: str) -> dict[str, Any]:
    """Comment on a tweet from the logged-in account.

    Args:
        tweet_id: The tweet's id.
        comment_content: The comment's text.
    """
    account = _account(ctx)
    if not account["authenticated"]:
        return {"error": "User not authenticated. Please authenticate before commenting."}
    if _tweet(ctx, tweet_id) is None:
        return {"error": f"Tweet with ID {tweet_id} not found."}
    entry = {"username": account["username"], "content": comment_content}
    found = _keyed(ctx, "tw_comments", "comments", tweet_id)
    if found is None:
        _insert(ctx, "tw_comments", tweet_id, [entry])
    else:
        ctx.conn.execute("UPDATE tw_comments SET comments = ? WHERE id = ?", (dumps([*found["value"], entry]),
                                                                             found["id"]))
    return {"comment_status": "Comment added successfully"}


@tool(mode="write", entity="tweet", operation="update")
@as_bfcl
def mention(ctx: ToolContext, tweet_id: RecordKey, mentioned_usernames: list[str]) -> dict[str, Any]:
    """Add mentions of users to a tweet.

    Args:
        tweet_id: The tweet's id.
        mentioned_usernames: The usernames to mention.
    """
    _account(ctx)
    found = _tweet(ctx, tweet_id)
    if found is None:
        return {"error": f"Tweet with ID {tweet_id} not found."}
    tweet = found["value"]
    if "mentions" not in tweet:
        raise PythonError("'mentions'")
    tweet["mentions"] = [*tweet["mentions"], *mentioned_usernames]
    ctx.conn.execute("UPDATE tw_tweets SET tweet = ? WHERE id = ?", (dumps(tweet), found["id"]))
    return {"mention_status": "Users mentioned successfully"}


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def follow_user(ctx: ToolContext, username_to_follow: str) -> dict[str, Any]:
    """Follow a user from the logged-in account.

    Args:
        username_to_follow: The username to follow.
    """
    if not _account(ctx)["authenticated"]:
        return {"error": "User not authenticated. Please authenticate before following."}
    if username_to_follow in _following(ctx):
        return {"follow_status": False}
    seq = next_value(ctx, "tw_following", "seq")
    ctx.conn.execute("INSERT INTO tw_following VALUES (?, ?, ?, ?)",
                     (f"{ctx.task_id}/f{seq}", ctx.task_id, seq, username_to_follow))
    return {"follow_status": True}


@tool(mode="read", entity="account", operation="list")
@as_bfcl
def list_all_following(ctx: ToolContext) -> dict[str, Any]:
    """List the users the logged-in account follows."""
    if not _account(ctx)["authenticated"]:
        return {"error": "User not authenticated. Please authenticate before listing following."}
    return {"following_list": _following(ctx)}


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def unfollow_user(ctx: ToolContext, username_to_unfollow: str) -> dict[str, Any]:
    """Stop following a user from the logged-in account.

    Args:
        username_to_unfollow: The username to unfollow.
    """
    if not _account(ctx)["authenticated"]:
        return {"error": "User not authenticated. Please authenticate before unfollowing."}
    row = ctx.one("SELECT id FROM tw_following WHERE task = ? AND username = ? ORDER BY seq LIMIT 1",
                  (ctx.task_id, username_to_unfollow))
    if row is None:
        return {"unfollow_status": False}
    ctx.conn.execute("DELETE FROM tw_following WHERE id = ?", (row["id"],))
    return {"unfollow_status": True}


@tool(mode="read", entity="tweet", operation="get")
@as_bfcl
def get_tweet(ctx: ToolContext, tweet_id: RecordKey) -> dict[str, Any]:
    """Get a tweet by its id.

    Args:
        tweet_id: The tweet's id.
    """
    _account(ctx)
    found = _tweet(ctx, tweet_id)
    if found is None:
        return {"error": f"Tweet with ID {tweet_id} not found."}
    value: dict[str, Any] = found["value"]
    return value


@tool(mode="read", entity="tweet", operation="list")
@as_bfcl
def get_user_tweets(ctx: ToolContext, username: str) -> list[dict[str, Any]]:
    """List every tweet of a user.

    Args:
        username: The user's username.
    """
    _account(ctx)
    return [t for t in _tweets(ctx) if t["username"] == username]


@tool(mode="read", entity="tweet", operation="search")
@as_bfcl
def search_tweets(ctx: ToolContext, keyword: str) -> list[dict[str, Any]]:
    """Find the tweets whose text or tags contain a keyword (ignoring case).

    Args:
        keyword: The keyword.
    """
    _account(ctx)
    word = keyword.lower()
    return [t for t in _tweets(ctx) if word in t["content"].lower() or word in [tag.lower() for tag in t["tags"]]]


@tool(mode="read", entity="tweet", operation="list")
@as_bfcl
def get_tweet_comments(ctx: ToolContext, tweet_id: RecordKey) -> Any:
    """List the comments of a tweet.

    Args:
        tweet_id: The tweet's id.
    """
    _account(ctx)
    if _tweet(ctx, tweet_id) is None:
        return {"error": f"Tweet with ID {tweet_id} not found."}
    found = _keyed(ctx, "tw_comments", "comments", tweet_id)
    return [] if found is None else found["value"]


@tool(mode="read", entity="account", operation="get")
@as_bfcl
def get_user_stats(ctx: ToolContext, username: str) -> dict[str, Any]:
    """Count a user's tweets, the accounts they follow (known for the logged-in account only) and their retweets.

    Args:
        username: The user's username.
    """
    account = _account(ctx)
    retweets = _keyed(ctx, "tw_retweets", "tweet_ids", username)
    return {
        "tweet_count": len([t for t in _tweets(ctx) if t["username"] == username]),
        "following_count": len(_following(ctx)) if username == account["username"] else 0,
        "retweet_count": len(retweets["value"]) if retweets else 0,
    }


TOOLS = (authenticate_twitter, posting_get_login_status, post_tweet, retweet, comment, mention, follow_user,
         list_all_following, unfollow_user, get_tweet, get_user_tweets, search_tweets, get_tweet_comments,
         get_user_stats)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's account from BFCL's configuration (tweet keys become integers, as BFCL's loader makes them)."""
    values = {**DEFAULTS, **config}
    conn.execute("INSERT INTO tw_accounts VALUES (?, ?, ?, ?, ?, ?)",
                 (task, task, values["username"], values["password"], values["authenticated"],
                  values["tweet_counter"]))
    for table, items in (("tw_tweets", {int(k): v for k, v in values["tweets"].items()}),
                         ("tw_comments", values["comments"]), ("tw_retweets", values["retweets"])):
        for seq, (key, value) in enumerate(items.items()):
            conn.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)",
                         (f"{task}/{table}/{seq}", task, seq, json.dumps(key), dumps(value)))
    for seq, name in enumerate(values["following_list"]):
        conn.execute("INSERT INTO tw_following VALUES (?, ?, ?, ?)", (f"{task}/f{seq}", task, seq, name))


def _mapping(query: Query, table: str, column: str, task: str) -> dict[Any, Any]:
    return {json.loads(k): loads(v) for k, v in query(f"SELECT key, {column} FROM {table} WHERE task = ? ORDER BY seq",
                                                      (task,))}


def state(query: Query, task: str) -> dict[str, Any]:
    """The account's public attributes as BFCL's instance holds them."""
    row = query("SELECT username, password, authenticated, tweet_counter FROM tw_accounts WHERE id = ?", (task,))[0]
    following = [r[0] for r in query("SELECT username FROM tw_following WHERE task = ? ORDER BY seq", (task,))]
    return {"username": row[0], "password": row[1], "authenticated": row[2],
            "tweets": _mapping(query, "tw_tweets", "tweet", task),
            "comments": _mapping(query, "tw_comments", "comments", task),
            "retweets": _mapping(query, "tw_retweets", "tweet_ids", task),
            "following_list": following, "tweet_counter": row[3]}


POSTING = FunctionClass(name="TwitterAPI", label="social posting", schema=SCHEMA, load=load, state=state,
                        tools={t.name: t for t in TOOLS})
"""The posting class."""

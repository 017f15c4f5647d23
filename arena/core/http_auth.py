"""Bearer-token access for every HTTP surface gymloop serves (the factory, gym servers).

A served app is wrapped in :class:`BearerTokenMiddleware`; a request without the exact token gets ``401``
with a one-line JSON reason (``{"error": "..."}``) that names the header to send and the setting that holds
the token, never the token. The token is taken as a bearer token or as the password of HTTP basic auth, so a
URL with the token in its userinfo (``http://user:<token>@host``) reaches the server too; :func:`client_auth`
is how a client combines such a URL with a token setting. :func:`check_bind` refuses to serve anything but
loopback without a token. Tokens are ``SecretStr`` values and are never logged or put in a message.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import SecretStr

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["BearerTokenMiddleware", "ServeAuthError", "bearer_headers", "check_bind", "client_auth", "header",
           "is_loopback", "refuse", "token_conflict"]


class ServeAuthError(ValueError):
    """A server was asked to listen beyond loopback without a token."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only accepts connections from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: SecretStr | None, *, token_setting: str = "GYMLOOP_SERVE_TOKEN") -> None:
    """Refuse to serve on a non-loopback ``host`` without a token.

    Args:
        host: The address the server is asked to bind.
        token: The bearer token clients must send, or ``None``.
        token_setting: Where the user sets the token (named in the error).

    Raises:
        ServeAuthError: ``host`` is not loopback and there is no token.
    """
    if token is not None and not token.get_secret_value():
        raise ServeAuthError(f"the token in {token_setting} is empty; set a non-empty token or unset it")
    if token is None and not is_loopback(host):
        raise ServeAuthError(
            f"refusing to serve on {host} without a token: anyone who reaches the port could use it; "
            f"set {token_setting} (clients send it as 'Authorization: Bearer ...') or bind 127.0.0.1"
        )


def bearer_headers(token: SecretStr | None) -> dict[str, str]:
    """The header a client sends to a served surface (empty without a token)."""
    if token is None:
        return {}
    return {"Authorization": f"Bearer {token.get_secret_value()}"}


def token_conflict(url: str, token: SecretStr | None, *, url_setting: str, token_setting: str) -> str | None:
    """Why ``url``'s userinfo and ``token`` cannot both reach a gymloop server, or ``None`` when they can.

    A URL's user and password are sent as HTTP basic auth and a token as a bearer token, both in the one
    ``Authorization`` header. They combine only when the URL's password is the token itself.
    """
    parts = urlsplit(url)
    if token is None or "@" not in parts.netloc:
        return None
    if parts.password is not None and hmac.compare_digest(unquote(parts.password).encode(),
                                                          token.get_secret_value().encode()):
        return None
    return (f"{url_setting} holds a user and password (sent as HTTP basic auth) and {token_setting} is set (sent as "
            "a bearer token): both go in the one Authorization header, and the password is not the token; give "
            f"the token once: in {token_setting}, or as the password in {url_setting} (http://user:<token>@host)")


def client_auth(url: str, token: SecretStr | None, *, url_setting: str = "factory_url",
                token_setting: str = "factory_token") -> tuple[str, dict[str, str]]:
    """The URL and headers a client sends to a gymloop server at ``url`` holding ``token``.

    With a token the URL goes without its userinfo and the token as a bearer token; without one the URL is kept
    whole (its userinfo goes as HTTP basic auth: to a gymloop server, whose token is the password, or to a proxy).

    Raises:
        ValueError: The URL's userinfo and the token conflict (see :func:`token_conflict`); the message names the
            settings, never a value.
    """
    conflict = token_conflict(url, token, url_setting=url_setting, token_setting=token_setting)
    if conflict is not None:
        raise ValueError(conflict)
    parts = urlsplit(url)
    if token is not None and "@" in parts.netloc:
        url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return url, bearer_headers(token)


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of request header ``name`` (lower case) in an ASGI ``scope``."""
    for key, value in scope.get("headers", []):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str,
                 headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer an HTTP request or a WebSocket handshake with ``status`` and ``{"error": message}``.

    A WebSocket handshake gets the same HTTP response when the server supports the ASGI denial-response
    extension (uvicorn does), else it is closed with code 1008 and the message as the reason.
    """
    body = json.dumps({"error": message}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await send({"type": "websocket.http.response.start", "status": status, "headers": head})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


class BearerTokenMiddleware:
    """ASGI middleware: HTTP and WebSocket requests must carry ``Authorization: Bearer <token>``.

    HTTP basic auth whose password is the token (any user name) is taken too, so a URL with the token in its
    userinfo reaches the server. The token is compared in constant time. Lifespan events pass through untouched.
    Without a token (loopback only, see :func:`check_bind`) every request passes.

    Args:
        app: The wrapped app.
        token: The token, or ``None`` for no check.
        token_setting: Where the user sets the token (named in a 401's reason).
    """

    def __init__(self, app: ASGIApp, token: SecretStr | None, *, token_setting: str = "GYMLOOP_SERVE_TOKEN") -> None:
        self._app = app
        self._expected = None if token is None else token.get_secret_value().encode()
        self._setting = token_setting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request's token, then hand it to the wrapped app."""
        expected = self._expected
        if expected is None or scope["type"] not in ("http", "websocket") or _authorized(scope, expected):
            await self._app(scope, receive, send)
            return
        given = header(scope, b"authorization")
        why = "has no Authorization header" if given is None else "carries a wrong or malformed bearer token"
        await refuse(scope, receive, send, 401,
                     f"this server needs a token and the request {why}: send 'Authorization: Bearer <token>' (or the "
                     f"token as the password of HTTP basic auth) with the token in {self._setting}",
                     headers=[(b"www-authenticate", b"Bearer")])


def _authorized(scope: Scope, expected: bytes) -> bool:
    """Whether the request carries the token: as a bearer token, or as the password of HTTP basic auth."""
    scheme, _, credentials = (header(scope, b"authorization") or "").strip().partition(" ")
    supplied = credentials.strip().encode("latin-1", "replace")
    if scheme.lower() == "basic":
        try:
            supplied = base64.b64decode(supplied, validate=True).partition(b":")[2]
        except (binascii.Error, ValueError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(supplied, expected)

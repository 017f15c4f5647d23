"""Bearer-token access for every HTTP surface gymloop serves (the factory, gym servers).

A served app is wrapped in :class:`BearerTokenMiddleware`; a request without the exact token gets ``401``
with a one-line JSON reason (``{"error": "..."}``) that names the header to send and the setting that holds
the token, never the token. :func:`check_bind` refuses to serve anything but loopback without a token.
Tokens are ``SecretStr`` values and are never logged or put in a message.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from pydantic import SecretStr

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["BearerTokenMiddleware", "ServeAuthError", "bearer_headers", "check_bind", "header", "is_loopback",
           "refuse"]


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

    The token is compared in constant time. Lifespan events pass through untouched. Without a
    token (loopback only, see :func:`check_bind`) every request passes.

    Args:
        app: The wrapped app.
        token: The token, or ``None`` for no check.
        token_setting: Where the user sets the token (named in a 401's reason).
    """

    def __init__(self, app: ASGIApp, token: SecretStr | None, *, token_setting: str = "GYMLOOP_SERVE_TOKEN") -> None:
        self._app = app
        self._expected = None if token is None else f"Bearer {token.get_secret_value()}".encode()
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
                     f"this server needs a token and the request {why}: send 'Authorization: Bearer <token>' with "
                     f"the token in {self._setting}", headers=[(b"www-authenticate", b"Bearer")])


def _authorized(scope: Scope, expected: bytes) -> bool:
    supplied = (header(scope, b"authorization") or "").encode("latin-1")
    return hmac.compare_digest(supplied, expected)

"""Bearer-token access for every HTTP surface gymloop serves (the factory, gym servers).

A served app is wrapped in :class:`BearerTokenMiddleware`; a request without the exact token gets
``401`` with no detail. :func:`check_bind` refuses to serve anything but loopback without a token.
Tokens are ``SecretStr`` values and are never logged or put in a message.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pydantic import SecretStr

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["BearerTokenMiddleware", "ServeAuthError", "bearer_headers", "check_bind", "is_loopback"]


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


class BearerTokenMiddleware:
    """ASGI middleware: HTTP and WebSocket requests must carry ``Authorization: Bearer <token>``.

    The token is compared in constant time. Lifespan events pass through untouched. Without a
    token (loopback only, see :func:`check_bind`) every request passes.
    """

    def __init__(self, app: ASGIApp, token: SecretStr | None) -> None:
        self._app = app
        self._expected = None if token is None else f"Bearer {token.get_secret_value()}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request's token, then hand it to the wrapped app."""
        expected = self._expected
        if expected is None or scope["type"] not in ("http", "websocket") or _authorized(scope, expected):
            await self._app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")],
        })
        await send({"type": "http.response.body", "body": b""})


def _authorized(scope: Scope, expected: bytes) -> bool:
    supplied = b""
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            supplied = bytes(value)
            break
    return hmac.compare_digest(supplied, expected)

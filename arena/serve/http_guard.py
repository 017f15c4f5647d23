"""Browser-safe, bounded HTTP serving for every surface gymloop serves (the factory, gym servers).

:func:`guard` wraps an ASGI app in three checks, in this order, on every route and WebSocket:

- :class:`BrowserGuard`: the ``Host`` header must name this server (loopback names, the address it is bound
  to, the machine's names when bound to every interface, and any host the user allowed), which stops DNS
  rebinding; a request with an ``Origin`` header must come from this server's own origin, so a web page on
  another site cannot drive the server from a user's browser. Non-browser clients send no ``Origin``.
- :class:`BodyLimit`: a request body over the limit is refused before the app reads it (WebSocket messages
  are bounded by the server's ``ws_max_size``, see :data:`MAX_REQUEST_BYTES`).
- :class:`~arena.core.http_auth.BearerTokenMiddleware` when a token is set.

Every refusal is an HTTP status with a one-line JSON body ``{"error": "..."}``; a refused WebSocket handshake
gets the same response when the server supports the ASGI denial-response extension (uvicorn does).
"""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import Iterable
from urllib.parse import urlsplit

from pydantic import SecretStr

from arena.core.http_auth import (
    ASGIApp,
    BearerTokenMiddleware,
    Message,
    Receive,
    Scope,
    Send,
    header,
    is_loopback,
    refuse,
)

MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Largest request body (and WebSocket message) a served gym accepts."""

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

__all__ = ["MAX_REQUEST_BYTES", "BodyLimit", "BrowserGuard", "allowed_hosts", "guard"]


def _host_name(value: str) -> str | None:
    """The host part of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``), lower-cased."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else None
    if value.count(":") > 1:  # a bare IPv6 address
        return value
    return value.rsplit(":", 1)[0] if ":" in value else value


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a server bound to ``bind_host`` answers to.

    Args:
        bind_host: The address the server binds.
        extra: Further names the user allowed (e.g. the name a reverse proxy forwards).
    """
    names = set(LOOPBACK_NAMES)
    host = bind_host.strip().strip("[]").lower()
    if host in ("0.0.0.0", "::", ""):
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name.lower())
            try:
                names.update(str(info[4][0]).lower() for info in socket.getaddrinfo(name, None))
            except OSError:
                pass
    elif not is_loopback(host):
        names.add(host)
    names.update(h for h in (_host_name(e) for e in extra) if h)
    return frozenset(names)


class BrowserGuard:
    """ASGI middleware: refuse a foreign ``Host`` (421) or a foreign ``Origin`` (403) on every request.

    Args:
        app: The wrapped app.
        hosts: Host names this server answers to (see :func:`allowed_hosts`).
    """

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self._app = app
        self._hosts = frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request's Host and Origin headers, then hand it to the wrapped app."""
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        host_header = header(scope, b"host") or ""
        host = _host_name(host_header)
        if host is None or host not in self._hosts:
            await refuse(scope, receive, send, 421,
                         f"Host {host_header[:100]!r} is not a name of this server; a web page may be trying DNS "
                         "rebinding (a user can allow a name with the serve_allowed_hosts setting)")
            return
        origin = header(scope, b"origin")
        if origin is not None and not self._same_origin(origin, host_header):
            await refuse(scope, receive, send, 403,
                         f"Origin {origin[:100]!r} is not this server's own: pages of other sites may not use it")
            return
        await self._app(scope, receive, send)

    def _same_origin(self, origin: str, host_header: str) -> bool:
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return parts.netloc.lower() == host_header.strip().lower() and _host_name(parts.netloc) in self._hosts


class BodyLimit:
    """ASGI middleware: refuse an HTTP request whose body is over ``max_bytes`` (413) before the app reads it.

    Args:
        app: The wrapped app.
        max_bytes: Largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self._app = app
        self._max = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body up to the limit, then replay it to the wrapped app."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        too_large = f"the request body is over the limit of {self._max} bytes"
        declared = header(scope, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self._max:
            await refuse(scope, receive, send, 413, too_large)
            return
        body = bytearray()
        pending: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)
                break
            body.extend(message.get("body", b""))
            if len(body) > self._max:
                await refuse(scope, receive, send, 413, too_large)
                return
            if not message.get("more_body", False):
                break
        pending.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            return pending.popleft() if pending else await receive()

        await self._app(scope, replay, send)


def guard(app: ASGIApp, *, host: str, token: SecretStr | None, allowed: Iterable[str] = (),
          max_bytes: int = MAX_REQUEST_BYTES, token_setting: str = "GYMLOOP_SERVE_TOKEN") -> ASGIApp:
    """Wrap ``app`` in the Host/Origin check, the body limit and (with a token) the bearer-token check.

    Args:
        app: The app to serve.
        host: The address the server binds.
        token: Bearer token clients must send, or ``None``.
        allowed: Further host names the user allowed.
        max_bytes: Largest request body.
        token_setting: Where the user sets the token (named in a 401's reason).
    """
    inner: ASGIApp = BearerTokenMiddleware(app, token, token_setting=token_setting) if token is not None else app
    return BrowserGuard(BodyLimit(inner, max_bytes), allowed_hosts(host, allowed))


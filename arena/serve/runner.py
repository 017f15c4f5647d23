"""Run a served gym: MCP over stdio, or MCP (and optionally OpenEnv) over HTTP on one port.

Every HTTP route and WebSocket sits behind :func:`~arena.serve.http_guard.guard` (Host and Origin checks, a
request size limit, the bearer token when one is set), and :func:`~arena.core.http_auth.check_bind` refuses a
non-loopback address without a token before anything binds.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from mcp.server.stdio import stdio_server
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

from arena.core.http_auth import check_bind
from arena.serve.http_guard import MAX_REQUEST_BYTES, guard
from arena.serve.mcp_surface import McpGym, build_mcp_server
from arena.serve.session import GymService, ServeError

MCP_PATH = "/mcp"
OPENENV_PATH = "/openenv"
HEALTH_PATH = "/health"


def serve_stdio(service: GymService) -> None:
    """Serve ``service`` as an MCP server on this process's stdin/stdout until the client closes it."""
    server = build_mcp_server(service)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def http_app(service: GymService, token: SecretStr | None, *, host: str = "127.0.0.1", openenv: bool = False,
             allowed_hosts: Sequence[str] = ()) -> ASGIApp:
    """One ASGI app: MCP at ``/mcp``, OpenEnv at ``/openenv`` (when asked), ``/health``; all behind the guard.

    Args:
        service: The served gym.
        token: Bearer token every request must carry (``None``: loopback only).
        host: The address the server binds (its Host names are allowed).
        openenv: Also serve the OpenEnv surface.
        allowed_hosts: Further Host names to answer to (e.g. behind a reverse proxy).

    Raises:
        ServeError: The pack cannot be served.
    """
    handlers = McpGym(service)
    server = build_mcp_server(service, handlers, sessions=True)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "gym": service.name, "pack_id": service.pack.id,
                             "episodes": service.active()})

    mcp_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, custom_starlette_routes=[Route(HEALTH_PATH, health)],
        session_idle_timeout=service.limits.idle_timeout_s, max_request_body_size=MAX_REQUEST_BYTES, json_response=True,
    )
    mounted = [mcp_app]
    routes = [Mount("/", app=mcp_app)]
    if openenv:
        from arena.serve.openenv_surface import openenv_app

        env_app = openenv_app(handlers, service.limits)
        mounted.insert(0, env_app)
        routes.insert(0, Mount(OPENENV_PATH, app=_quiet_disconnects(env_app)))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for sub in mounted:  # a mounted app's own lifespan (MCP sessions, OpenEnv's idle reaper) runs here
                await stack.enter_async_context(sub.router.lifespan_context(sub))
            yield

    return guard(Starlette(routes=routes, lifespan=lifespan), host=host, token=token, allowed=allowed_hosts)


def _quiet_disconnects(app: ASGIApp) -> ASGIApp:
    """``app``, with a WebSocket client that went away ending its session quietly (no traceback in the log)."""

    async def quiet(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        except WebSocketDisconnect:
            if scope["type"] != "websocket":
                raise

    return quiet


def check_port(host: str, port: int) -> None:
    """Fail early, in one line, when ``host:port`` cannot be bound.

    Raises:
        ServeError: The port is in use or the address is not this machine's.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            why = "is in use" if exc.errno == 98 else f"cannot be bound ({exc.strerror})"
            raise ServeError(f"port {port} on {host} {why}; choose another with --port") from exc


def serve_http(service: GymService, *, host: str, port: int, token: SecretStr | None, openenv: bool = False,
               allowed_hosts: Sequence[str] = ()) -> None:
    """Serve ``service`` over HTTP until interrupted.

    Raises:
        arena.core.http_auth.ServeAuthError: A non-loopback ``host`` without a token.
        ServeError: The port cannot be bound, or the pack cannot be served.
    """
    import uvicorn

    check_bind(host, token)
    check_port(host, port)
    app = http_app(service, token, host=host, openenv=openenv, allowed_hosts=allowed_hosts)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, ws_max_size=MAX_REQUEST_BYTES)

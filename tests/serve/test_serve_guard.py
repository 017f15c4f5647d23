"""Every route and WebSocket of every served surface (MCP, OpenEnv, the factory) refuses a foreign Host or Origin,
a missing token and an oversized request, each with a one-line JSON reason; real servers on loopback."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from arena.core.pack import Pack
from arena.serve import GymService, McpGym
from arena.serve.openenv_client import TokenEnvClient
from arena.serve.openenv_surface import openenv_app
from factory_client import LocalFactory, create_app
from factory_client.server import BackgroundServer
from tests.serve.conftest import LiveServer, train_task

EVIL = "evil.example"
Route = tuple[str, str]  # (method or WS, path)


def _concrete(path: str) -> str:
    return path.replace("{request_id}", "req-x").replace("{pack_id}", "x" * 64).replace("{path}", "x")


def gym_routes(pack: Pack) -> list[Route]:
    """Every route of a served gym with OpenEnv: MCP's, /health, and each route of the OpenEnv app."""
    service = GymService(pack)
    routes: list[Route] = [("GET", "/mcp"), ("POST", "/mcp"), ("DELETE", "/mcp"), ("GET", "/health")]
    for route in openenv_app(McpGym(service), service.limits).routes:
        methods = getattr(route, "methods", None)
        path = "/openenv" + _concrete(route.path)
        routes.extend((m, path) for m in sorted(methods or ["WS"]) if m != "HEAD")
    routes.append(("GET", "/no-such-route"))
    return routes


def factory_routes() -> list[Route]:
    routes: list[Route] = []
    for route in create_app(LocalFactory()).routes:
        methods = getattr(route, "methods", None) or ["WS"]
        routes.extend((m, _concrete(route.path)) for m in sorted(methods) if m != "HEAD")
    return routes


def _ws_handshake(url: str, host: str) -> httpx.Response:
    """A WebSocket opening handshake with the given Host header."""
    key = base64.b64encode(os.urandom(16)).decode()
    headers = {"Host": host, "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": key}
    return httpx.get(url, headers=headers, timeout=10)


def _one_line_reason(response: httpx.Response) -> str:
    reason = response.json()["error"]
    assert isinstance(reason, str) and reason and "\n" not in reason
    return str(reason)


def check_foreign_host_and_origin(base: str, routes: list[Route]) -> None:
    port = base.rsplit(":", 1)[1]
    assert len(routes) >= 6
    for method, path in routes:
        url = base + path
        if method == "WS":
            ws = url.replace("http://", "ws://")
            refused = _ws_handshake(url, f"{EVIL}:{port}")
            assert refused.status_code == 421, (path, refused.status_code)
            assert "DNS rebinding" in _one_line_reason(refused)
            with pytest.raises(InvalidStatus) as caught:
                connect(ws, origin=f"http://{EVIL}", open_timeout=10).close()  # type: ignore[arg-type]
            assert caught.value.response.status_code == 403
            assert "Origin" in json.loads(caught.value.response.body or b"{}")["error"]
            continue
        foreign_host = httpx.request(method, url, headers={"Host": f"{EVIL}:{port}"}, timeout=10)
        assert foreign_host.status_code == 421, (method, path, foreign_host.status_code)
        assert "not a name of this server" in _one_line_reason(foreign_host)
        foreign_origin = httpx.request(method, url, headers={"Origin": f"http://{EVIL}"}, timeout=10)
        assert foreign_origin.status_code == 403, (method, path, foreign_origin.status_code)
        assert "pages of other sites may not use it" in _one_line_reason(foreign_origin)
        other_local_page = httpx.request(method, url, headers={"Origin": "http://localhost:1"}, timeout=10)
        assert other_local_page.status_code == 403, (method, path)
        for own in (None, base):  # no Origin (a program) or this server's own origin (its /docs page) pass
            headers = {"Origin": own} if own else {}
            allowed = httpx.request(method, url, headers=headers, timeout=10)
            assert allowed.status_code not in (401, 403, 421), (method, path, own, allowed.status_code)


@pytest.fixture(scope="module")
def gym_server(packs: dict[str, Pack]) -> Iterator[LiveServer]:
    with LiveServer(GymService(packs["helpdesk"]), openenv=True) as server:
        yield server


def test_every_gym_route_and_websocket_refuses_a_foreign_host_or_origin(
    packs: dict[str, Pack], gym_server: LiveServer
) -> None:
    routes = gym_routes(packs["helpdesk"])
    assert ("WS", "/openenv/ws") in routes and ("POST", "/openenv/reset") in routes
    check_foreign_host_and_origin(gym_server.url, routes)


def test_every_factory_route_refuses_a_foreign_host_or_origin() -> None:
    routes = factory_routes()
    assert ("DELETE", "/v1/requests/req-x") in routes and ("POST", "/v1/requests") in routes
    with BackgroundServer(create_app(LocalFactory())) as server:
        check_foreign_host_and_origin(server.url, routes)


def test_openenv_direct_mcp_routes_are_not_served(gym_server: LiveServer) -> None:
    response = httpx.post(gym_server.url + "/openenv/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                                  "method": "openenv/session/create", "params": {}})
    assert response.status_code == 404


def test_a_token_guards_every_gym_surface_with_a_json_reason(packs: dict[str, Pack]) -> None:
    token = SecretStr("gym-token-5678")
    with LiveServer(GymService(packs["helpdesk"]), token=token, openenv=True) as server:
        for path in ("/health", "/mcp", "/openenv/health", "/openenv/reset"):
            refused = httpx.post(server.url + path, json={}) if path.endswith("reset") else \
                httpx.get(server.url + path)
            assert refused.status_code == 401
            assert "Authorization: Bearer <token>" in _one_line_reason(refused)
        with pytest.raises(InvalidStatus) as caught:
            connect(server.url.replace("http", "ws") + "/openenv/ws", open_timeout=10).close()
        assert caught.value.response.status_code == 401
        assert "GYMLOOP_SERVE_TOKEN" in json.loads(caught.value.response.body or b"{}")["error"]
        with pytest.raises(ConnectionError) as failed:
            TokenEnvClient(server.url + "/openenv", token="gym-token-567X").sync().connect()
        assert "gym-token" not in str(failed.value)
        with TokenEnvClient(server.url + "/openenv", token=token).sync() as env:
            task = train_task(packs["helpdesk"])
            assert env.reset(task_id=task.id, seed=0).observation["task_id"] == task.id


def test_a_25_mb_request_is_refused_on_every_surface(gym_server: LiveServer) -> None:
    body = b"x" * (25 * 1024 * 1024)
    with BackgroundServer(create_app(LocalFactory())) as factory:
        for url in (factory.url + "/v1/requests", gym_server.url + "/mcp", gym_server.url + "/openenv/step",
                    gym_server.url + "/openenv/reset"):
            refused = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=60)
            assert refused.status_code == 413, url
            assert "over the limit" in _one_line_reason(refused)
            chunked = httpx.post(url, content=iter([body[:8 << 20]] * 3), timeout=60)  # no Content-Length
            assert chunked.status_code == 413, url
    with connect(gym_server.url.replace("http", "ws") + "/openenv/ws", open_timeout=10,
                 max_size=None) as ws:
        ws.send("x" * (25 * 1024 * 1024))
        with pytest.raises(Exception):  # noqa: B017 - the server closes the connection (1009 message too big)
            ws.recv(timeout=30)

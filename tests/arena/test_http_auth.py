import httpx
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from arena.serve.http_auth import BearerTokenMiddleware, ServeAuthError, bearer_headers, check_bind, is_loopback
from factory_client.server import BackgroundServer

TOKEN = SecretStr("s3cret-token-value")


def _app(token: SecretStr | None) -> BearerTokenMiddleware:
    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    return BearerTokenMiddleware(Starlette(routes=[Route("/", hello)]), token)


def test_requests_need_the_exact_token_on_a_real_server() -> None:
    with BackgroundServer(_app(TOKEN)) as server:
        missing = httpx.get(server.url)
        assert missing.status_code == 401
        assert "has no Authorization header" in missing.json()["error"]
        wrong = httpx.get(server.url, headers={"Authorization": "Bearer s3cret-token-valuX"})
        assert wrong.status_code == 401
        reason = wrong.json()["error"]  # one line naming the header and the setting, never the token
        assert "wrong or malformed bearer token" in reason and "GYMLOOP_SERVE_TOKEN" in reason
        assert "\n" not in reason and "s3cret" not in wrong.text
        assert wrong.headers["www-authenticate"] == "Bearer"
        assert httpx.get(server.url, headers={"Authorization": "s3cret-token-value"}).status_code == 401
        ok = httpx.get(server.url, headers=bearer_headers(TOKEN))
        assert ok.status_code == 200
        assert ok.text == "hello"


def test_without_a_token_every_request_passes() -> None:
    with BackgroundServer(_app(None)) as server:
        assert httpx.get(server.url).status_code == 200
    assert bearer_headers(None) == {}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.5"])
def test_loopback_hosts_need_no_token(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "factory.internal"])
def test_binding_beyond_loopback_without_a_token_is_refused(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ServeAuthError, match=f"refusing to serve on {host}") as info:
        check_bind(host, None, token_setting="GYMLOOP_SERVE_TOKEN")
    assert "GYMLOOP_SERVE_TOKEN" in str(info.value)
    check_bind(host, TOKEN)


def test_an_empty_token_is_refused_and_never_echoed() -> None:
    with pytest.raises(ServeAuthError, match="empty"):
        check_bind("0.0.0.0", SecretStr(""))

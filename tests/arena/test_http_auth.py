import httpx
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from arena.core.http_auth import (
    BearerTokenMiddleware,
    ServeAuthError,
    bearer_headers,
    check_bind,
    client_auth,
    is_loopback,
)
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


def test_the_token_as_the_password_of_basic_auth_opens_the_server() -> None:
    with BackgroundServer(_app(TOKEN)) as server:
        port = server.url.rsplit(":", 1)[1]
        assert httpx.get(f"http://anyone:s3cret-token-value@127.0.0.1:{port}/").status_code == 200
        assert httpx.get(server.url, auth=("gymloop", "s3cret-token-value")).status_code == 200
        wrong = httpx.get(f"http://anyone:s3cret-token-valuX@127.0.0.1:{port}/")
        assert wrong.status_code == 401 and "s3cret" not in wrong.text
        assert httpx.get(f"http://s3cret-token-value@127.0.0.1:{port}/").status_code == 401  # a user, no password
        for malformed in ("Basic !!not-base64!!", "Basic", "Token s3cret-token-value", "bearer"):
            assert httpx.get(server.url, headers={"Authorization": malformed}).status_code == 401
        assert httpx.get(server.url, headers={"Authorization": "bearer s3cret-token-value"}).status_code == 200


@pytest.mark.parametrize(("url", "token", "sent_url", "headers"), [
    ("http://h:1/x", None, "http://h:1/x", {}),
    ("http://u:pw-123@h:1/x", None, "http://u:pw-123@h:1/x", {}),
    ("http://h:1/x", "tok-123", "http://h:1/x", {"Authorization": "Bearer tok-123"}),
    ("http://u:tok-123@h:1/x", "tok-123", "http://h:1/x", {"Authorization": "Bearer tok-123"}),
    ("http://u:tok%2F123@h:1/x", "tok/123", "http://h:1/x", {"Authorization": "Bearer tok/123"}),
])
def test_a_client_sends_the_token_once(url: str, token: str | None, sent_url: str, headers: dict[str, str]) -> None:
    assert client_auth(url, SecretStr(token) if token else None) == (sent_url, headers)


@pytest.mark.parametrize("url", ["http://u:other-pw@h:1", "http://tok-123@h:1", "http://u:@h:1"])
def test_a_client_refuses_userinfo_that_is_not_the_token(url: str) -> None:
    with pytest.raises(ValueError, match="factory_url holds a user and password .* factory_token is set") as info:
        client_auth(url, SecretStr("tok-123"))
    assert "other-pw" not in str(info.value) and "tok-123" not in str(info.value)

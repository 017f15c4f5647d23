import httpx
import pytest
from pydantic import SecretStr

from factory_client import FactoryError, LocalFactory, VariantRequest, create_app, make_factory_client
from factory_client.server import BackgroundServer

TOKEN = SecretStr("factory-auth-test-token")


@pytest.fixture(scope="module")
def guarded_factory():
    with BackgroundServer(create_app(LocalFactory(), token=TOKEN)) as server:
        yield server


@pytest.mark.parametrize("path", ["/v1/info", "/v1/requests/nope", "/v1/packs/nope.tar.gz", "/docs"])
def test_every_route_answers_401_without_the_token(guarded_factory, path: str) -> None:
    response = httpx.get(guarded_factory.url + path)
    assert response.status_code == 401
    reason = response.json()["error"]
    assert "Authorization: Bearer <token>" in reason and "GYMLOOP_SERVE_TOKEN" in reason and "\n" not in reason
    wrong = httpx.get(guarded_factory.url + path, headers={"Authorization": "Bearer factory-auth-test-tokeN"})
    assert wrong.status_code == 401


def test_the_token_opens_the_factory(guarded_factory) -> None:
    header = {"Authorization": f"Bearer {TOKEN.get_secret_value()}"}
    response = httpx.get(guarded_factory.url + "/v1/info", headers=header)
    assert response.status_code == 200
    assert response.json()["protocol_version"]


def test_the_client_sends_the_token_and_says_when_it_is_wrong(guarded_factory) -> None:
    request = VariantRequest(domain="helpdesk", targets=[], variants=1, tasks_per_variant=1, seed=0)
    with pytest.raises(FactoryError, match="401") as info:
        make_factory_client(guarded_factory.url, token=SecretStr("wrong-token-value")).submit(request)
    assert "wrong-token-value" not in str(info.value)
    assert make_factory_client(guarded_factory.url, token=TOKEN).submit(request)


def test_a_url_with_the_token_in_its_userinfo_reaches_the_factory(guarded_factory) -> None:
    request = VariantRequest(domain="helpdesk", targets=[], variants=1, tasks_per_variant=1, seed=0)
    port = guarded_factory.url.rsplit(":", 1)[1]
    with_token = f"http://gymloop:{TOKEN.get_secret_value()}@127.0.0.1:{port}"
    assert make_factory_client(with_token).submit(request)
    assert make_factory_client(with_token, token=TOKEN).submit(request)
    with pytest.raises(FactoryError, match="401") as info:
        make_factory_client(f"http://gymloop:wrong-password-value@127.0.0.1:{port}").submit(request)
    assert "wrong-password-value" not in str(info.value) and "gymloop:***@" in str(info.value)
    with pytest.raises(ValueError, match="both go in the one Authorization header") as refused:
        make_factory_client(f"http://gymloop:other-password-value@127.0.0.1:{port}", token=TOKEN)
    assert "other-password-value" not in str(refused.value) and TOKEN.get_secret_value() not in str(refused.value)

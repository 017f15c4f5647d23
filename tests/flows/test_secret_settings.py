import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from flows.cli import app
from flows.models import CampaignParams, RoundParams
from flows.settings import SettingsError, load_settings

SECRET_SETTINGS = {
    "api_key": "sk-unit-APIKEY-1234",
    "factory_token": "unit-FACTORY-token",
    "serve_token": "unit-SERVE-token",
    "registry_url": "postgresql+psycopg://gym:unit-DB-pass@db/gymloop",
    "mlflow_uri": "http://user:unit-MLFLOW-pass@mlflow:5000",
    "factory_url": "https://gymloop:unit-FACTORY-token@factory.internal:8765",
    "api_base": "http://127.0.0.1:8000/v1?api_key=unit-QUERY-token",
}
PLAIN = ["sk-unit-APIKEY-1234", "unit-FACTORY-token", "unit-SERVE-token", "unit-DB-pass", "unit-MLFLOW-pass",
         "unit-QUERY-token"]


def test_public_settings_hold_no_secret_but_say_where_connections_go(gymloop_home) -> None:
    settings = load_settings(**SECRET_SETTINGS)
    public = json.dumps(settings.public_dict())
    for secret in PLAIN:
        assert secret not in public
    data = settings.public_dict()
    assert data["registry_url"] == "postgresql+psycopg://gym:***@db/gymloop"
    assert data["mlflow_uri"] == "http://user:***@mlflow:5000"
    assert data["factory_url"] == "https://gymloop:***@factory.internal:8765"
    assert data["api_base"] == "http://127.0.0.1:8000/v1?api_key=***"
    assert data["api_key_set"] is True and data["serve_token_set"] is True and data["factory_token_set"] is True
    assert sorted(set(settings.secret_values())) == sorted(PLAIN)


def test_a_user_or_judge_model_endpoint_is_shown_masked_and_refused_as_a_flow_parameter(gymloop_home) -> None:
    user, judge = "hosted_vllm/u@http://me:unit-USER-pass@127.0.0.1:8001/v1", "openai/j@http://h/v1?api_key=unit-J-key"
    settings = load_settings(user_model=user, judge_model=judge)
    data = settings.public_dict()
    assert data["user_model"] == "hosted_vllm/u@http://me:***@127.0.0.1:8001/v1"
    assert data["judge_model"] == "openai/j@http://h/v1?api_key=***"
    assert {"unit-USER-pass", "unit-J-key"} <= set(settings.secret_values())
    with pytest.raises(ValidationError, match="override 'user_model'") as info:
        RoundParams(campaign="c", round_index=0, overrides={"user_model": user})
    assert "unit-USER-pass" not in str(info.value).split("input_value")[0]


def test_unset_secrets_are_flagged_as_unset(gymloop_home) -> None:
    data = load_settings().public_dict()
    assert data["api_key_set"] is False and data["factory_token_set"] is False
    assert "api_key" not in data


@pytest.mark.parametrize(
    ("name", "value"),
    [("api_key", "sk-x-12345"), ("factory_token", "tok-12345"), ("serve_token", "tok-12345"),
     ("registry_url", "postgresql+psycopg://gym:pw-12345@db/g"), ("api_base", "http://h/v1?token=t-12345")],
)
def test_flow_parameters_refuse_secrets(name: str, value: str) -> None:
    for model in (RoundParams, CampaignParams):
        extra = {"round_index": 0} if model is RoundParams else {}
        with pytest.raises(ValidationError, match=f"override '{name}'") as info:
            model(campaign="c", overrides={name: value}, **extra)
        assert value not in str(info.value).split("input_value")[0]


def test_flow_parameters_accept_urls_without_secrets() -> None:
    params = RoundParams(campaign="c", round_index=0, overrides={"registry_url": "postgresql+psycopg://gym@db/g"})
    assert params.overrides["registry_url"] == "postgresql+psycopg://gym@db/g"


def test_serving_beyond_loopback_without_a_token_is_refused(gymloop_home, monkeypatch) -> None:
    monkeypatch.delenv("GYMLOOP_SERVE_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["factory", "serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "refusing to serve on 0.0.0.0 without a token" in lines[0]
    assert "GYMLOOP_SERVE_TOKEN" in lines[0]


@pytest.mark.parametrize("model", ["hosted_vllm/served", "served-model", "openai/gpt-4o-mini"])
def test_a_key_beside_a_password_in_an_openai_compatible_endpoint_is_refused(gymloop_home, model: str) -> None:
    """Both would go in the one Authorization header: the clients drop the key or refuse the request."""
    with pytest.raises(SettingsError) as info:
        load_settings(model=model, api_base="http://user:unit-PASS-1234@127.0.0.1:8000/v1", api_key="sk-unit-KEY-99")
    message = str(info.value)
    assert message.startswith("setting 'api_key' (command line): api_base holds a user and password")
    assert "unit-PASS-1234" not in message and "sk-unit-KEY-99" not in message and "\n" not in message
    with pytest.raises(SettingsError, match="setting 'api_key'"):
        load_settings(model=f"{model}@http://user:unit-PASS-1234@127.0.0.1:8000/v1", api_key="sk-unit-KEY-99")


def test_a_key_beside_a_password_goes_where_they_use_different_headers(gymloop_home) -> None:
    """A provider of its own (here Anthropic: its key travels in x-api-key) takes both; so do either alone."""
    url = "http://user:unit-PASS-1234@127.0.0.1:8000/v1"
    assert load_settings(model="anthropic/claude-x", api_base=url, api_key="sk-unit-KEY-99").models.api_base == url
    assert load_settings(model="hosted_vllm/served", api_base=url).models.api_key is None
    assert load_settings(model="hosted_vllm/served", api_base="http://127.0.0.1:8000/v1", api_key="sk-unit-KEY-99")


def test_a_factory_token_beside_another_password_in_factory_url_is_refused(gymloop_home, monkeypatch) -> None:
    monkeypatch.setenv("GYMLOOP_FACTORY_TOKEN", "unit-FACTORY-token")
    with pytest.raises(SettingsError) as info:
        load_settings(factory_url="http://gymloop:unit-OTHER-pass@127.0.0.1:8765")
    message = str(info.value)
    assert message.startswith("setting 'factory_token' (environment variable GYMLOOP_FACTORY_TOKEN): factory_url "
                              "holds a user and password")
    assert "unit-OTHER-pass" not in message and "unit-FACTORY-token" not in message
    with pytest.raises(SettingsError, match="setting 'factory_token'"):
        load_settings(factory_url="http://unit-FACTORY-token@127.0.0.1:8765")  # a user name is not the password
    same = load_settings(factory_url="http://gymloop:unit-FACTORY-token@127.0.0.1:8765")
    assert same.gate.factory_token is not None and same.gate.factory_token.get_secret_value() == "unit-FACTORY-token"

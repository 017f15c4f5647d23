import pytest

from flows.settings import SettingsError, load_settings


@pytest.fixture()
def clean_env(tmp_path, monkeypatch):
    import os

    for key in list(os.environ):
        if key.startswith("GYMLOOP_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_toml_then_environment_then_arguments(clean_env, monkeypatch):
    (clean_env / "gymloop.toml").write_text('strategy = "uniform"\neval_k = 3\ndomains = ["tracker"]\n')
    settings = load_settings()
    assert (settings.curriculum.strategy, settings.evaluation.eval_k, settings.gyms.domains) == ("uniform", 3,
                                                                                                 ["tracker"])
    monkeypatch.setenv("GYMLOOP_EVAL_K", "5")
    assert load_settings().evaluation.eval_k == 5
    assert load_settings(eval_k=7).evaluation.eval_k == 7


def test_bad_value_in_the_file_names_setting_and_file(clean_env):
    (clean_env / "gymloop.toml").write_text('strategy = "greedy"\n')
    with pytest.raises(SettingsError, match=r"'strategy' \(file gymloop.toml\)"):
        load_settings()


def test_unknown_setting_and_domain_are_refused(clean_env, monkeypatch):
    (clean_env / "gymloop.toml").write_text('wave_budgett = 10\n')
    with pytest.raises(SettingsError, match="wave_budgett"):
        load_settings()
    (clean_env / "gymloop.toml").write_text("")
    monkeypatch.setenv("GYMLOOP_DOMAINS", '["casino"]')
    with pytest.raises(SettingsError, match="casino"):
        load_settings()


def test_config_file_named_by_variable_and_unreadable_file(clean_env, monkeypatch):
    other = clean_env / "other.toml"
    other.write_text("max_rounds = 9\n")
    monkeypatch.setenv("GYMLOOP_CONFIG", str(other))
    assert load_settings().stop.max_rounds == 9
    other.write_text("max_rounds = [")
    with pytest.raises(SettingsError, match="other.toml"):
        load_settings()


def test_secrets_are_not_in_the_public_view(clean_env, monkeypatch):
    monkeypatch.setenv("GYMLOOP_API_KEY", "sk-hidden")
    public = load_settings().public_dict()
    assert "sk-hidden" not in str(public) and public["api_key_set"] is True
    assert "sk-hidden" not in repr(load_settings())


def test_the_model_client_setting_reaches_the_agent_a_round_plays(clean_env, monkeypatch):
    from datetime import UTC, datetime

    from flows.registered_models import make_agent
    from registry.records import ModelInfo

    info = ModelInfo(id=1, name="hosted_vllm/m", version="v1", kind="litellm", parent_id=None, artifact=None,
                     endpoint="hosted_vllm/m", params_hash=None, details={}, created_at=datetime.now(UTC))
    monkeypatch.setenv("GYMLOOP_API_BASE", "http://127.0.0.1:8000/v1")
    agent = make_agent(info, load_settings())  # auto: an OpenAI-compatible endpoint takes the openai path
    assert agent.config.client == "openai" and agent.config.api_base == "http://127.0.0.1:8000/v1"  # type: ignore[attr-defined]
    monkeypatch.setenv("GYMLOOP_MODEL_CLIENT", "litellm")
    assert make_agent(info, load_settings()).config.client == "litellm"  # type: ignore[attr-defined]
    monkeypatch.setenv("GYMLOOP_MODEL_CLIENT", "grpc")
    with pytest.raises(SettingsError, match="model_client"):
        load_settings()


def test_an_unset_gate_band_fits_a_small_gate_k_and_a_set_one_is_checked(monkeypatch):
    monkeypatch.setenv("GYMLOOP_GATE_K", "1")
    settings = load_settings()
    assert (settings.gate.gate_band_min, settings.gate.gate_band_max) == (1, 1)
    assert (load_settings(gate_k=3).gate.gate_band_min, load_settings(gate_k=3).gate.gate_band_max) == (2, 3)
    assert (load_settings(gate_k=8).gate.gate_band_min, load_settings(gate_k=8).gate.gate_band_max) == (2, 4)
    with pytest.raises(SettingsError, match="gate_band_max"):
        load_settings(gate_k=1, gate_band_max=4)

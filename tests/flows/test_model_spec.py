"""The model spec: every form a user gives or gymloop prints parses back to itself; endpoints stay masked."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.reference import NAMED_STARTS, PolicyParams, ReferencePolicy, builtin_params
from arena.core.model_id import BUILTIN_NAMES, ModelIdError, parse_model_id
from arena.core.redact import mask_url
from flows.model_client import choose_client
from flows.models import CampaignParams, RoundParams
from flows.settings import SettingsError, load_settings

PASSWORD = "pw-SPEC-5e1f07"


@pytest.mark.parametrize(("text", "form"), [
    ("reference", "builtin"),
    ("reference-expert", "builtin"),
    ("reference-few-weak-skills", "builtin"),
    ("reference-failure:wrong_id", "builtin"),
    ("reference-failure:wrong_id@v0:0123456789abcdef", "registered"),
    ("reference@v3:60b60fb740edb405", "registered"),
    ("hosted_vllm/scripted@v0", "registered"),
    ("tiny-helpdesk@v1:0123456789abcdef", "registered"),
    ("openai/gpt-4o-mini", "llm"),
    ("vertex_ai/claude-3-5-sonnet@20240620", "llm"),
    ("hosted_vllm/scripted@http://127.0.0.1:8000/v1", "llm"),
])
def test_each_form_parses_and_its_label_is_the_text(text, form):
    spec = parse_model_id(text)
    assert spec.form == form and spec.label == text and parse_model_id(spec.label) == spec


def test_a_checkpoint_folder_is_made_absolute_and_keeps_its_prefix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = parse_model_id("transformers:./ckpt")
    assert spec.form == "transformers" and spec.name == str(tmp_path / "ckpt")
    assert spec.label == f"transformers:{tmp_path / 'ckpt'}" and parse_model_id(spec.label) == spec


def test_what_the_agents_print_parses_back_to_what_they_play():
    params = PolicyParams.initial()
    printed = ReferencePolicy(params).model_ref
    spec = parse_model_id(printed)
    assert (spec.form, spec.name, spec.version, spec.params_hash) == ("registered", "reference", 0,
                                                                      params.content_hash())
    base = f"http://user:{PASSWORD}@127.0.0.1:8000/v1"
    shown = LiteLLMAgent(LiteLLMConfig(model="hosted_vllm/m", api_base=base)).model_ref
    assert PASSWORD not in shown and shown == f"hosted_vllm/m@{mask_url(base)}"
    spec = parse_model_id(shown, api_base=base)
    assert (spec.form, spec.name, spec.endpoint) == ("llm", "hosted_vllm/m", base)


@given(name=st.from_regex(r"[a-z][a-z0-9_.\-/]{0,20}", fullmatch=True), version=st.integers(0, 10_000),
       digest=st.one_of(st.none(), st.from_regex(r"[0-9a-f]{16}", fullmatch=True)))
def test_registered_labels_round_trip(name, version, digest):
    text = f"{name}@v{version}" + (f":{digest}" if digest else "")
    spec = parse_model_id(text)
    assert (spec.form, spec.name, spec.version, spec.params_hash, spec.label) == ("registered", name, version,
                                                                                  digest, text)


def test_a_masked_endpoint_needs_the_api_base_it_masks_and_never_shows_the_password():
    base = f"http://user:{PASSWORD}@127.0.0.1:8000/v1"
    with pytest.raises(ModelIdError, match="masked endpoint") as info:
        parse_model_id(f"m@{mask_url(base)}")
    assert PASSWORD not in str(info.value)
    with pytest.raises(ModelIdError, match="another endpoint") as info:
        parse_model_id(f"m@{base}", api_base="http://127.0.0.1:9/v1")
    assert PASSWORD not in str(info.value)


@pytest.mark.parametrize(("model", "api_base", "env", "setting", "client", "base"), [
    ("hosted_vllm/m", "http://127.0.0.1:8000/v1", {}, "auto", "openai", "http://127.0.0.1:8000/v1"),
    ("Qwen/Qwen2.5-7B-Instruct", "http://127.0.0.1:8000/v1", {}, "auto", "openai", "http://127.0.0.1:8000/v1"),
    ("my-model", "http://127.0.0.1:8000/v1", {}, "auto", "openai", "http://127.0.0.1:8000/v1"),
    ("hosted_vllm/m", None, {"HOSTED_VLLM_API_BASE": "http://127.0.0.1:7/v1"}, "auto", "openai",
     "http://127.0.0.1:7/v1"),
    ("openai/m", None, {"OPENAI_BASE_URL": "http://127.0.0.1:6/v1"}, "auto", "openai", "http://127.0.0.1:6/v1"),
    ("openai/gpt-4o-mini", None, {}, "auto", "litellm", None),
    ("ollama/llama3", "http://127.0.0.1:11434", {}, "auto", "litellm", "http://127.0.0.1:11434"),
    ("anthropic/claude-3-5-haiku", None, {}, "auto", "litellm", None),
    ("hosted_vllm/m", "http://127.0.0.1:8000/v1", {}, "litellm", "litellm", "http://127.0.0.1:8000/v1"),
    ("anthropic/claude-3-5-haiku", None, {}, "openai", "openai", None),
])
def test_auto_takes_the_openai_path_for_openai_compatible_endpoints(monkeypatch, model, api_base, env, setting,
                                                                    client, base):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "HOSTED_VLLM_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    choice = choose_client(parse_model_id(model, api_base=api_base), setting)
    assert (choice.client, choice.api_base) == (client, base)


def test_settings_keep_the_endpoint_in_api_base_and_show_it_masked(gymloop_home):
    base = f"http://user:{PASSWORD}@127.0.0.1:8000/v1"
    settings = load_settings(model=f"hosted_vllm/m@{base}")
    assert (settings.models.model, settings.models.api_base) == ("hosted_vllm/m", base)
    assert PASSWORD not in str(settings.public_dict()) and settings.public_dict()["model"] == "hosted_vllm/m"


@pytest.mark.parametrize("overrides", [
    {"api_keyy": f"sk-{PASSWORD}"},  # a mistyped secret setting: its value is never shown
    {"api_base": 12},
    {"model": f"m@http://user:{PASSWORD}@127.0.0.1:8000/v1", "api_base": "http://127.0.0.1:9/v1"},
])
def test_a_refused_setting_never_shows_a_secret(gymloop_home, overrides):
    with pytest.raises(SettingsError) as info:
        load_settings(**overrides)
    assert PASSWORD not in str(info.value) and "input_value" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize(("name", "value"), [
    ("api_key", f"sk-{PASSWORD}"), ("registry_url", f"postgresql+psycopg://gym:{PASSWORD}@db/g"),
    ("api_base", f"http://h/v1?token={PASSWORD}"), ("model", f"hosted_vllm/m@http://user:{PASSWORD}@h/v1"),
])
def test_flow_parameters_refuse_a_secret_without_echoing_it(name, value):
    for params in (RoundParams, CampaignParams):
        extra = {"round_index": 0} if params is RoundParams else {}
        with pytest.raises(ValidationError, match=f"override '{name}'") as info:
            params(campaign="c", overrides={name: value}, **extra)
        assert PASSWORD not in str(info.value) and PASSWORD not in repr(info.value.errors(include_input=False))


def test_a_masked_model_endpoint_is_no_secret_as_a_flow_parameter():
    shown = f"hosted_vllm/m@{mask_url(f'http://user:{PASSWORD}@h/v1')}"
    assert RoundParams(campaign="c", round_index=0, overrides={"model": shown}).overrides["model"] == shown


def test_a_flow_run_refusing_a_secret_parameter_shows_and_logs_no_secret(capfd, caplog):
    from prefect.exceptions import ParameterTypeError

    from flows.round import curriculum_round

    secret = f"sk-{PASSWORD}"
    with pytest.raises(ParameterTypeError, match="override 'api_key' holds a secret") as info:
        curriculum_round.validate_parameters({"params": {"campaign": "c", "round_index": 0,
                                                         "overrides": {"api_key": secret}}})
    out, err = capfd.readouterr()
    logged = out + err + caplog.text  # Prefect's log lines reach the terminal or pytest's capture
    assert "Parameter validation failed" in logged and "Parameters:" in logged
    assert secret not in str(info.value) + logged


@pytest.mark.parametrize(("name", "params"), [
    ("reference", PolicyParams.initial()),
    ("reference-expert", PolicyParams.expert()),
    ("reference-few-weak-skills", PolicyParams.named("few-weak-skills")),
    ("reference-failure:stale_state", PolicyParams.with_failure("stale_state")),
])
def test_a_built_in_policy_is_named_by_its_name_and_by_the_name_its_parameters_print_as(name, params):
    assert builtin_params(parse_model_id(name)) == params
    printed = ReferencePolicy(params).model_ref
    assert printed == f"{name}@v0:{params.content_hash()}" and builtin_params(parse_model_id(printed)) == params
    assert builtin_params(parse_model_id(f"{name}@v0:{params.content_hash()[:6]}")) == params
    assert builtin_params(parse_model_id(f"{name}@v1:{params.content_hash()}")) is None  # a trained version
    assert builtin_params(parse_model_id(f"{name}@v0:0000000000000000")) is None


def test_every_named_start_is_a_built_in_policy_and_an_unknown_failure_mode_is_named():
    assert {PolicyParams.named(start).name for start in NAMED_STARTS} <= set(BUILTIN_NAMES)
    with pytest.raises(KeyError, match="unknown failure mode 'bogus'; known: "):
        builtin_params(parse_model_id("reference-failure:bogus"))
    with pytest.raises(SettingsError, match="setting 'model'.*unknown failure mode 'bogus'"):
        load_settings(model="reference-failure:bogus")
    assert builtin_params(parse_model_id("openai/gpt-4o-mini")) is None

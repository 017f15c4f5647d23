"""One model spec: every model a user names or gymloop prints, parsed, resolved and played in one place.

The same forms work for ``--model``, ``GYMLOOP_MODEL`` and ``model =`` in gymloop.toml:

========================  =====================================================================================
form                      what plays
========================  =====================================================================================
``reference``             the built-in policy's starting parameters (``eval --params FILE`` for others)
``NAME@vN[:HASH]``        a registered version, as rounds, ``campaigns`` and episodes print it
                          (``reference@v3:60b60fb740edb405``, ``hosted_vllm/m@v0``, ``my-checkpoint@v1:...``)
``transformers:FOLDER``   a local transformers checkpoint, played in-process
``MODEL@URL``             an LLM at an endpoint, as episodes record it; a masked URL (``http://***@host/v1``)
                          takes its password from ``api_base``
anything else             a litellm model string, sent to ``api_base`` when it is set
========================  =====================================================================================

Each form names its agent factory (``agent_for``) and its preflight (``check``). The request path of an LLM
(``model_client``) is decided here too: ``auto`` sends the OpenAI protocol straight to OpenAI-compatible endpoints
(an ``api_base``, or ``hosted_vllm/`` and ``openai/`` with a base) and goes through litellm for everything else.
A model's reference is stored and shown with its endpoint masked (``arena.core.redact.mask_url``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.chat_client import OPENAI_COMPATIBLE_PREFIXES, ClientName
from arena.agents.transformers_agent import LOCAL_PREFIX
from arena.core.redact import MASK, mask_url

if TYPE_CHECKING:
    from arena.agents.base import Agent
    from arena.agents.litellm_agent import LiteLLMConfig
    from flows.settings import GymloopSettings
    from registry import ModelInfo, Registry

REFERENCE = "reference"
"""Model string of the built-in reference policy (offline)."""


ModelForm = Literal["reference", "registered", "transformers", "llm"]
"""The forms a model string takes (see the module's table)."""

ClientSetting = Literal["auto", "litellm", "openai"]
"""The ``model_client`` setting: a request path, or ``auto`` to let the endpoint decide."""

BASE_VARIABLES: dict[str, tuple[str, ...]] = {"openai/": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
                                              "hosted_vllm/": ("HOSTED_VLLM_API_BASE",)}
"""Environment variables litellm reads a provider's base URL from, by model prefix."""

_REGISTERED = re.compile(r"(?P<name>[^@\s]+)@v(?P<version>\d+)(?::(?P<hash>[0-9a-f]{6,64}))?")
_AT_ENDPOINT = re.compile(r"(?P<model>[^\s]+?)@(?P<url>[A-Za-z][A-Za-z0-9+.\-]*://\S+)")


class ModelSpecError(ValueError):
    """A model string names nothing gymloop can play; the message is one line naming it (endpoint masked)."""


class ModelSpec(BaseModel):
    """A parsed model string.

    Attributes:
        form: Which form the string has (see the module's table).
        name: ``reference``; the registered name; the checkpoint folder (absolute); or the litellm model string.
        version: The registered version's training step.
        params_hash: The registered version's content hash, when the string gives it.
        endpoint: The LLM's base URL (it may hold a password: shown only through ``label``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    form: ModelForm
    name: str = Field(min_length=1)
    version: int | None = None
    params_hash: str | None = None
    endpoint: str | None = Field(default=None, repr=False)

    @property
    def label(self) -> str:
        """The model as gymloop shows and stores it (endpoint masked); it parses back to this spec."""
        if self.form == "registered":
            return f"{self.name}@v{self.version}" + (f":{self.params_hash}" if self.params_hash else "")
        if self.form == "transformers":
            return LOCAL_PREFIX + self.name
        if self.form == "llm" and self.endpoint:
            return llm_label(self.name, self.endpoint)
        return self.name


def llm_label(model: str, api_base: str | None) -> str:
    """An LLM's reference: the model string, with its endpoint masked when one is set (``m@http://***@h/v1``)."""
    return f"{model}@{mask_url(api_base)}" if api_base else model


def version_label(version: int, params_hash: str | None) -> str:
    """Registry version of a model: its training step, plus its content hash when known (``3-1f2e...``).

    Two campaigns training the same starting model reach different parameters at the same step; the hash
    keeps their versions apart, and identical parameters map to the same version.
    """
    return f"{version}-{params_hash[:12]}" if params_hash and version else str(version)


def parse_model(text: str, *, api_base: str | None = None) -> ModelSpec:
    """Parse a model string in any of the forms of the module's table.

    Args:
        text: The model string.
        api_base: The ``api_base`` setting: the endpoint of a plain LLM string, and the full URL of a masked one.

    Raises:
        ModelSpecError: An empty string or checkpoint folder, an endpoint that differs from ``api_base``, or a
            masked endpoint without the ``api_base`` it masks.
    """
    given = text.strip()
    if not given:
        raise ModelSpecError("the model is empty: use 'reference', a litellm model string, "
                             "'transformers:<folder>' or a registered version such as reference@v3:<hash>")
    if given == REFERENCE:
        return ModelSpec(form="reference", name=REFERENCE)
    if given.startswith(LOCAL_PREFIX):
        folder = given[len(LOCAL_PREFIX):].strip()
        if not folder:
            raise ModelSpecError(f"model {given!r} names no checkpoint folder: use 'transformers:<folder>'")
        return ModelSpec(form="transformers", name=str(Path(folder).expanduser().resolve()))
    registered = _REGISTERED.fullmatch(given)
    if registered:
        return ModelSpec(form="registered", name=registered["name"], version=int(registered["version"]),
                         params_hash=registered["hash"])
    at = _AT_ENDPOINT.fullmatch(given)
    if at:
        return ModelSpec(form="llm", name=at["model"], endpoint=_endpoint(at["model"], at["url"], api_base))
    return ModelSpec(form="llm", name=given, endpoint=api_base or None)


def endpoint_of(text: str) -> str | None:
    """The endpoint a ``MODEL@URL`` string names, as given (``None`` for every other form)."""
    at = _AT_ENDPOINT.fullmatch(text.strip())
    return at["url"] if at else None


def _endpoint(model: str, url: str, api_base: str | None) -> str:
    """The full endpoint of ``model@url``: ``url``, or ``api_base`` when ``url`` is its masked form."""
    if api_base and url in (api_base, mask_url(api_base)):
        return api_base
    if api_base:
        raise ModelSpecError(f"model '{model}@{mask_url(url)}' names another endpoint than api_base "
                             f"({mask_url(api_base)}): give the endpoint once, in the model or in api_base")
    if MASK in url:
        raise ModelSpecError(f"model '{model}@{url}' has a masked endpoint: set api_base (--api-base or "
                             "GYMLOOP_API_BASE) to the full URL, or give the model without '@<endpoint>'")
    return url


# Request paths ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientChoice:
    """How an LLM's requests are sent, and why.

    Attributes:
        client: ``litellm`` or ``openai``.
        api_base: The endpoint the requests go to (a provider base found in the environment included).
        reason: Why this path, for the one line the CLI prints.
    """

    client: ClientName
    api_base: str | None
    reason: str

    def line(self, spec: ModelSpec) -> str:
        """The line saying which path a model's requests take."""
        return f"model client: {self.client} for {llm_label(spec.name, self.api_base)} ({self.reason})"


def choose_client(spec: ModelSpec, setting: ClientSetting) -> ClientChoice:
    """Decide the request path of an LLM spec: the ``model_client`` setting, or what ``auto`` finds.

    ``auto`` takes the ``openai`` path for an OpenAI-compatible endpoint: a ``hosted_vllm/`` or ``openai/`` model
    with a base URL (``api_base`` or the provider's variable), or any model at an ``api_base`` whose prefix names
    no other litellm provider; litellm for everything else (hosted providers, their keys and prices).
    """
    prefix = next((p for p in OPENAI_COMPATIBLE_PREFIXES if spec.name.startswith(p)), None)
    base = spec.endpoint
    if base is None and prefix is not None:
        base = next((os.environ[v] for v in BASE_VARIABLES.get(prefix, ()) if os.environ.get(v)), None)
    if setting != "auto":
        return ClientChoice(setting, spec.endpoint, f"model_client = {setting!r}")
    if base and (prefix is not None or not _names_other_provider(spec.name)):
        return ClientChoice("openai", base, "auto: an OpenAI-compatible endpoint; model_client = 'litellm' "
                                            "sends through litellm instead")
    if base:
        return ClientChoice("litellm", base, f"auto: {spec.name.split('/', 1)[0]!r} is a litellm provider")
    return ClientChoice("litellm", None, "auto: no OpenAI-compatible endpoint given")


def _names_other_provider(model: str) -> bool:
    """Whether the model string's prefix names a litellm provider (other than the OpenAI-compatible ones)."""
    if "/" not in model:
        return False
    from arena.agents.chat_client import import_litellm

    providers = {str(getattr(p, "value", p)) for p in import_litellm().provider_list}
    return model.split("/", 1)[0] in providers


def llm_config(spec: ModelSpec, settings: GymloopSettings) -> LiteLLMConfig:
    """The LLM agent's configuration for an ``llm`` spec under ``settings`` (key, timeout, retries, request path)."""
    from arena.agents.litellm_agent import LiteLLMConfig

    choice = choose_client(spec, settings.model_client)
    return LiteLLMConfig(model=spec.name, api_base=choice.api_base, api_key=settings.api_key,
                         timeout_s=settings.model_timeout_s, max_retries=settings.model_retries,
                         client=choice.client)


# Agent factories -------------------------------------------------------------------------------------------


def settings_spec(settings: GymloopSettings) -> ModelSpec:
    """The spec of the ``model`` setting (validated when the settings were read)."""
    return parse_model(settings.model, api_base=settings.api_base)


def agent_for(spec: ModelSpec, settings: GymloopSettings, *, params_path: Path | None = None,
              registry: Registry | None = None) -> Agent:
    """The agent that plays ``spec``: its form's factory.

    Args:
        spec: The model.
        settings: Key, timeouts, request path and local generation settings.
        params_path: Reference-policy parameters to play instead of the starting ones (``reference`` only).
        registry: Where registered versions are looked up (default: the settings' registry).

    Raises:
        ModelSpecError: ``params_path`` with another form, or a registered version the registry does not hold.
        ValueError: ``params_path`` is not a reference-policy parameter file.
    """
    if params_path is not None and spec.form != "reference":
        raise ModelSpecError(f"--params plays reference-policy parameters; model {spec.label!r} is not 'reference'")
    return _FACTORIES[spec.form](spec, settings, params_path, registry)


def _reference_agent(spec: ModelSpec, settings: GymloopSettings, params_path: Path | None,
                     registry: Registry | None) -> Agent:
    from arena.agents.reference import PolicyParams, ReferencePolicy

    return ReferencePolicy(PolicyParams.load(params_path) if params_path else PolicyParams.initial())


def _registered_agent(spec: ModelSpec, settings: GymloopSettings, params_path: Path | None,
                      registry: Registry | None) -> Agent:
    initial = _initial_reference(spec)
    if initial is not None:
        return initial
    return agent_for_model(find_registered(spec, settings, registry), settings)


def _transformers_agent(spec: ModelSpec, settings: GymloopSettings, params_path: Path | None,
                        registry: Registry | None) -> Agent:
    return local_checkpoint_agent(spec.name, settings)


def local_checkpoint_agent(checkpoint: str, settings: GymloopSettings, *, sampled: bool = False) -> Agent:
    """The agent playing a local transformers checkpoint folder.

    Args:
        checkpoint: The checkpoint folder.
        settings: Generation limits, sampling settings and the seed.
        sampled: The agent plays training rollouts (or the gate's baseline attempts): it samples with
            ``local_train_sampling``; otherwise it decodes with ``local_eval_sampling`` (greedy by default).
    """
    from arena.agents.transformers_agent import TransformersAgent, TransformersConfig

    return TransformersAgent(TransformersConfig(
        checkpoint=checkpoint, max_new_tokens=settings.local_max_new_tokens, max_steps=settings.local_max_steps,
        sampling=settings.local_train_sampling if sampled else settings.local_eval_sampling, seed=settings.seed))


def _llm_agent(spec: ModelSpec, settings: GymloopSettings, params_path: Path | None,
               registry: Registry | None) -> Agent:
    from arena.agents.litellm_agent import LiteLLMAgent

    return LiteLLMAgent(llm_config(spec, settings))


_FACTORIES: dict[ModelForm, Callable[[ModelSpec, GymloopSettings, Path | None, Registry | None], Agent]] = {
    "reference": _reference_agent, "registered": _registered_agent, "transformers": _transformers_agent,
    "llm": _llm_agent,
}
"""Each form's agent factory."""


def _initial_reference(spec: ModelSpec) -> Agent | None:
    """The reference policy's starting parameters when ``spec`` names them (``reference@v0:<their hash>``)."""
    from arena.agents.reference import PolicyParams, ReferencePolicy

    initial = PolicyParams.initial()
    if spec.name == initial.name and spec.version == initial.version and \
            spec.params_hash in (None, initial.content_hash()):
        return ReferencePolicy(initial)
    return None


def registered_spec(info: ModelInfo) -> ModelSpec:
    """What a registered model plays: its checkpoint folder, its LLM string, or (reference) its version."""
    if info.kind == "transformers" and info.artifact:
        return ModelSpec(form="transformers", name=info.artifact)
    if info.kind != "reference":
        return ModelSpec(form="llm", name=info.endpoint or info.name)
    step = info.version.split("-", 1)[0]
    return ModelSpec(form="registered", name=info.name, version=int(step) if step.isdigit() else 0,
                     params_hash=info.params_hash)


def agent_for_model(info: ModelInfo, settings: GymloopSettings, *, sampled: bool = False) -> Agent:
    """The agent playing a registered model (a round's model in or out).

    Args:
        info: The registered model.
        settings: The campaign's settings.
        sampled: The agent plays training rollouts or the gate's baseline attempts (a local checkpoint samples).

    Raises:
        ValueError: A reference model without its parameters artifact.
    """
    spec = registered_spec(info)
    if spec.form == "llm":  # the endpoint is where the settings send requests; the registry never stores it
        return agent_for(spec.model_copy(update={"endpoint": settings.api_base}), settings)
    if spec.form == "transformers":
        return local_checkpoint_agent(spec.name, settings, sampled=sampled)
    if not info.artifact:
        raise ValueError(f"reference model {spec.label} has no parameters artifact")
    from arena.agents.reference import PolicyParams, ReferencePolicy

    return ReferencePolicy(PolicyParams.load(info.artifact))


def find_registered(spec: ModelSpec, settings: GymloopSettings, registry: Registry | None = None) -> ModelInfo:
    """The registered model a ``NAME@vN[:HASH]`` spec names.

    Args:
        spec: A spec of the ``registered`` form.
        settings: Whose registry holds it (when ``registry`` is not given).
        registry: The registry to look in.

    Raises:
        ModelSpecError: No registry, no such version, or a version whose content hash differs.
    """
    if registry is None:
        with _settings_registry(settings, spec) as opened:
            return find_registered(spec, settings, opened)
    info = registry.find_model(spec.name, version_label(spec.version or 0, spec.params_hash))
    if info is None or (spec.params_hash and info.params_hash and not info.params_hash.startswith(spec.params_hash)):
        raise ModelSpecError(f"model {spec.label!r} is not registered in {registry.display_url} (a registered "
                             "version is named as rounds print it, e.g. reference@v3:<hash>)")
    return info


@contextmanager
def _settings_registry(settings: GymloopSettings, spec: ModelSpec) -> Iterator[Registry]:
    """The settings' registry for a look-up; a look-up never creates one."""
    from registry import Registry, RegistryError

    url = settings.resolved_registry_url()
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise ModelSpecError(f"model {spec.label!r} names a registered version, but there is no registry at "
                             f"{mask_url(url)} (set GYMLOOP_HOME or registry_url to the one that holds it)")
    try:
        registry = Registry(url, settings.home)
    except RegistryError as exc:
        raise ModelSpecError(f"model {spec.label!r}: {exc}") from exc
    try:
        yield registry
    finally:
        registry.close()


def register_start(registry: Registry, settings: GymloopSettings) -> ModelInfo:
    """Register a campaign's starting model (the ``model`` setting); a registered version is returned as it is.

    Raises:
        ModelSpecError: A checkpoint folder that does not exist, or a registered version the registry lacks.
    """
    spec = settings_spec(settings)
    if spec.form == "reference" or _initial_reference(spec) is not None:
        from arena.agents.reference import PolicyParams
        from trainers import save_reference

        start = PolicyParams.named(settings.reference_start) if spec.form == "reference" else PolicyParams.initial()
        ref = save_reference(start, settings.home / "models")
        # The parameters (a few KB) are kept with the model, so a machine without the file can play it.
        return registry.register_model(ref.name, version_label(ref.version, ref.params_hash), kind=ref.kind,
                                       artifact=ref.artifact, params_hash=ref.params_hash,
                                       details={"params": start.model_dump(mode="json")})
    if spec.form == "registered":
        return find_registered(spec, settings, registry)
    if spec.form == "transformers":
        folder = Path(spec.name)
        if not folder.is_dir():
            raise ModelSpecError(f"setting 'model': checkpoint folder {spec.name!r} does not exist")
        return registry.register_model(folder.name, "0", kind="transformers", artifact=str(folder))
    return registry.register_model(spec.name, "0", kind="litellm", endpoint=spec.name)


# Preflight -------------------------------------------------------------------------------------------------


def check(spec: ModelSpec, settings: GymloopSettings, *, params_path: Path | None = None,
          registry: Registry | None = None) -> Agent:
    """Build ``spec``'s agent and preflight it; return the agent, ready to play.

    Raises:
        flows.preflight.PreflightError: One line naming the model, its endpoint and the cause.
    """
    from flows.preflight import PreflightError, preflight_agent

    try:
        agent = agent_for(spec, settings, params_path=params_path, registry=registry)
    except ModelSpecError as exc:
        raise PreflightError(str(exc)) from exc
    preflight_agent(agent)
    return agent

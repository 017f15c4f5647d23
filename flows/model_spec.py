"""Models played by name: every form of ``arena.core.model_id`` resolved to its agent and preflight in one place.

The same names work for ``--model``, ``GYMLOOP_MODEL`` and ``model =`` in gymloop.toml, and for a factory
request's ``--baseline`` (``flows.factory_baselines``): the built-in policies, registered versions as gymloop
prints them, local transformers checkpoints and LLMs (see the table in ``arena.core.model_id``).

Each form names its agent factory (``agent_for``) and its preflight (``check``); an LLM's request path
(``model_client``) is decided in ``flows.model_client``.
A model's name is stored and shown with its endpoint masked (``arena.core.redact.mask_url``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from arena.agents.base import Agent
from arena.agents.litellm_agent import LiteLLMAgent, LiteLLMConfig
from arena.agents.reference import PolicyParams, ReferencePolicy, builtin_params
from arena.agents.transformers_agent import TransformersAgent, TransformersConfig
from arena.core.model_id import ModelForm, ModelId, ModelIdError, parse_model_id
from arena.core.redact import mask_url
from flows.model_client import builtin, choose_client
from flows.preflight import PreflightError, preflight_agent
from registry import ModelInfo, Registry, RegistryError
from trainers import save_reference

if TYPE_CHECKING:
    from flows.settings import GymloopSettings

def llm_config(spec: ModelId, settings: GymloopSettings) -> LiteLLMConfig:
    """The LLM agent's configuration for an ``llm`` spec under ``settings`` (key, timeout, retries, request path)."""
    choice = choose_client(spec, settings.models.model_client)
    return LiteLLMConfig(model=spec.name, api_base=choice.api_base, api_key=settings.models.api_key,
                         timeout_s=settings.models.model_timeout_s, max_retries=settings.models.model_retries,
                         client=choice.client)


# Agent factories -------------------------------------------------------------------------------------------


def settings_spec(settings: GymloopSettings) -> ModelId:
    """The model of the ``model`` setting (validated when the settings were read)."""
    return parse_model_id(settings.models.model, api_base=settings.models.api_base)


def agent_for(spec: ModelId, settings: GymloopSettings, *, params_path: Path | None = None,
              registry: Registry | None = None, sampled: bool = False) -> Agent:
    """The agent that plays ``spec``: its form's factory.

    Args:
        spec: The model.
        settings: Key, timeouts, request path and local generation settings.
        params_path: Reference-policy parameters to play instead of the starting ones (``reference`` only).
        registry: Where registered versions are looked up (default: the settings' registry).
        sampled: The agent plays training rollouts or the factory gate's attempts (a local checkpoint samples).

    Raises:
        ModelIdError: ``params_path`` with another model, an unknown built-in policy, or a registered version the
            registry does not hold.
        ValueError: ``params_path`` is not a reference-policy parameter file.
    """
    if params_path is not None and spec.label != "reference":
        raise ModelIdError(f"--params plays reference-policy parameters; model {spec.label!r} is not 'reference'")
    return _FACTORIES[spec.form](spec, settings, params_path, registry, sampled)


def _builtin_agent(spec: ModelId, settings: GymloopSettings, params_path: Path | None,
                   registry: Registry | None, sampled: bool) -> Agent:
    if params_path is not None:
        return ReferencePolicy(PolicyParams.load(params_path))
    return ReferencePolicy(builtin(spec))


def _registered_agent(spec: ModelId, settings: GymloopSettings, params_path: Path | None,
                      registry: Registry | None, sampled: bool) -> Agent:
    params = builtin_params(spec)
    if params is not None:
        return ReferencePolicy(params)
    return agent_for_model(find_registered(spec, settings, registry), settings, sampled=sampled)


def _transformers_agent(spec: ModelId, settings: GymloopSettings, params_path: Path | None,
                        registry: Registry | None, sampled: bool) -> Agent:
    return local_checkpoint_agent(spec.name, settings, sampled=sampled)


def local_checkpoint_agent(checkpoint: str, settings: GymloopSettings, *, sampled: bool = False) -> Agent:
    """The agent playing a local transformers checkpoint folder.

    Args:
        checkpoint: The checkpoint folder.
        settings: Generation limits, sampling settings and the seed.
        sampled: The agent plays training rollouts (or the gate's baseline attempts): it samples with
            ``local_train_sampling``; otherwise it decodes with ``local_eval_sampling`` (greedy by default).
    """
    return TransformersAgent(TransformersConfig(
        checkpoint=checkpoint, max_new_tokens=settings.models.local_max_new_tokens,
        max_steps=settings.models.local_max_steps, seed=settings.curriculum.seed,
        sampling=settings.models.local_train_sampling if sampled else settings.evaluation.local_eval_sampling))


def _llm_agent(spec: ModelId, settings: GymloopSettings, params_path: Path | None,
               registry: Registry | None, sampled: bool) -> Agent:
    return LiteLLMAgent(llm_config(spec, settings))


_FACTORIES: dict[ModelForm, Callable[[ModelId, GymloopSettings, Path | None, Registry | None, bool], Agent]] = {
    "builtin": _builtin_agent, "registered": _registered_agent, "transformers": _transformers_agent,
    "llm": _llm_agent,
}
"""Each form's agent factory."""


def registered_spec(info: ModelInfo) -> ModelId:
    """What a registered model plays: its checkpoint folder, its LLM string, or (reference) its version."""
    if info.kind == "transformers" and info.artifact:
        return ModelId(form="transformers", name=info.artifact)
    if info.kind != "reference":
        return ModelId(form="llm", name=info.endpoint or info.name)
    return info.ref


def local_model(info: ModelInfo, settings: GymloopSettings) -> ModelInfo:
    """The model with files this machine can read.

    A reference policy's parameters missing here (it was trained on another machine) are written from the registry
    under this home's ``models`` folder.

    Raises:
        ValueError: The registry's parameters do not hash to the model's.
    """
    params = info.details.get("params")
    if info.kind != "reference" or not info.artifact or Path(info.artifact).is_file() or not params:
        return info
    path = settings.store.home / "models" / Path(info.artifact).name
    if not path.is_file():
        restored = PolicyParams.model_validate(params)
        if info.params_hash and restored.content_hash() != info.params_hash:
            raise ValueError(f"model {info.name}:{info.version}: the registry's parameters hash to "
                             f"{restored.content_hash()}, not {info.params_hash}")
        tmp = restored.save(path.with_suffix(".json.tmp"))
        tmp.replace(path)
    return info.model_copy(update={"artifact": str(path)})


def agent_for_model(info: ModelInfo, settings: GymloopSettings, *, sampled: bool = False) -> Agent:
    """The agent playing a registered model (a round's model in or out).

    Args:
        info: The registered model.
        settings: The campaign's settings.
        sampled: The agent plays training rollouts or the gate's baseline attempts (a local checkpoint samples).

    Raises:
        ValueError: A reference model without its parameters artifact (here or in the registry).
    """
    spec = registered_spec(info)
    if spec.form == "llm":  # the endpoint is where the settings send requests; the registry never stores it
        return agent_for(spec.model_copy(update={"endpoint": settings.models.api_base}), settings)
    if spec.form == "transformers":
        return local_checkpoint_agent(spec.name, settings, sampled=sampled)
    artifact = local_model(info, settings).artifact
    if not artifact:
        raise ValueError(f"reference model {spec.label} has no parameters artifact")
    return ReferencePolicy(PolicyParams.load(artifact))


def find_registered(spec: ModelId, settings: GymloopSettings, registry: Registry | None = None) -> ModelInfo:
    """The registered model a ``NAME@vN[:HASH]`` name names.

    Args:
        spec: A model of the ``registered`` form.
        settings: Whose registry holds it (when ``registry`` is not given).
        registry: The registry to look in.

    Raises:
        ModelIdError: No registry, or no such version (or several, for a hash prefix too short to tell them apart).
    """
    if registry is None:
        with _settings_registry(settings, spec) as opened:
            return find_registered(spec, settings, opened)
    info = registry.find_registered(spec)
    if info is None:
        raise ModelIdError(f"model {spec.label!r} is not registered in {registry.display_url} (a registered "
                           "version is named as rounds print it, e.g. reference@v3:<hash>)")
    return info


@contextmanager
def _settings_registry(settings: GymloopSettings, spec: ModelId) -> Iterator[Registry]:
    """The settings' registry for a look-up; a look-up never creates one."""
    url = settings.resolved_registry_url()
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise ModelIdError(f"model {spec.label!r} names a registered version, but there is no registry at "
                             f"{mask_url(url)} (set GYMLOOP_HOME or registry_url to the one that holds it)")
    try:
        registry = Registry(url, settings.store.home)
    except RegistryError as exc:
        raise ModelIdError(f"model {spec.label!r}: {exc}") from exc
    try:
        yield registry
    finally:
        registry.close()


def register_start(registry: Registry, settings: GymloopSettings) -> ModelInfo:
    """Register a campaign's starting model (the ``model`` setting); a registered version is returned as it is.

    ``reference`` starts from the ``reference_start`` parameter set; another built-in policy from its own
    parameters. A policy's parameters (a few KB) are kept with the model, so a machine without the file can play it.

    Raises:
        ModelIdError: A checkpoint folder that does not exist, or a registered version the registry lacks.
    """
    spec = settings_spec(settings)
    start = PolicyParams.named(settings.models.reference_start) if spec.label == "reference" else builtin_params(spec)
    if start is not None:
        ref = save_reference(start, settings.store.home / "models")
        return registry.register_model(ref.name, ref.registry_version, kind=ref.kind, artifact=ref.artifact,
                                       params_hash=ref.params_hash, details={"params": start.model_dump(mode="json")})
    if spec.form == "builtin":
        builtin(spec)  # names the unknown failure mode
    if spec.form == "registered":
        return find_registered(spec, settings, registry)
    if spec.form == "transformers":
        folder = Path(spec.name)
        if not folder.is_dir():
            raise ModelIdError(f"setting 'model': checkpoint folder {spec.name!r} does not exist")
        return registry.register_model(folder.name, "0", kind="transformers", artifact=str(folder))
    return registry.register_model(spec.name, "0", kind="litellm", endpoint=spec.name)


# Preflight -------------------------------------------------------------------------------------------------


def check(spec: ModelId, settings: GymloopSettings, *, params_path: Path | None = None,
          registry: Registry | None = None, sampled: bool = False) -> Agent:
    """Build ``spec``'s agent and preflight it; return the agent, ready to play.

    Raises:
        flows.preflight.PreflightError: One line naming the model, its endpoint and the cause.
    """
    try:
        agent = agent_for(spec, settings, params_path=params_path, registry=registry, sampled=sampled)
    except ModelIdError as exc:
        raise PreflightError(str(exc)) from exc
    preflight_agent(agent)
    return agent

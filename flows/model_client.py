"""What a model's name decides before any settings are read: an LLM's request path and a built-in policy's parameters.

The request path of an LLM (``model_client``): ``auto`` sends the OpenAI protocol straight to OpenAI-compatible
endpoints (an ``api_base``, or ``hosted_vllm/`` and ``openai/`` with a base) and goes through litellm for everything
else. ``flows.settings`` validates a model name with these, and ``flows.model_spec`` builds agents with them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from arena.agents.chat_client import OPENAI_COMPATIBLE_PREFIXES, ClientName, import_litellm
from arena.agents.reference import PolicyParams, builtin_params
from arena.core.model_id import ModelId, ModelIdError, llm_label

ClientSetting = Literal["auto", "litellm", "openai"]
"""The ``model_client`` setting: a request path, or ``auto`` to let the endpoint decide."""

BASE_VARIABLES: dict[str, tuple[str, ...]] = {"openai/": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
                                              "hosted_vllm/": ("HOSTED_VLLM_API_BASE",)}
"""Environment variables litellm reads a provider's base URL from, by model prefix."""


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

    def line(self, spec: ModelId) -> str:
        """The line saying which path a model's requests take."""
        return f"model client: {self.client} for {llm_label(spec.name, self.api_base)} ({self.reason})"


def choose_client(spec: ModelId, setting: ClientSetting) -> ClientChoice:
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
    providers = {str(getattr(p, "value", p)) for p in import_litellm().provider_list}
    return model.split("/", 1)[0] in providers


def builtin(spec: ModelId) -> PolicyParams:
    """The parameters of the built-in policy ``spec`` names.

    Raises:
        ModelIdError: Not a built-in policy, or an unknown failure mode (naming the known ones).
    """
    try:
        params = builtin_params(spec)
    except KeyError as exc:
        raise ModelIdError(f"model {spec.label!r}: {exc.args[0]}") from None
    if params is None:
        raise ModelIdError(f"model {spec.label!r} is not a built-in policy")
    return params

"""One model identity: every model a user names or gymloop prints, parsed once and printed one way.

The same text names a model everywhere: ``--model``, ``GYMLOOP_MODEL`` and ``model =``, a factory request's
``--baseline`` and ``baseline_model``, the round table, ``campaigns``, episodes, reports and MLflow.

========================  =====================================================================================
form                      names
========================  =====================================================================================
``builtin``               a built-in policy: ``reference`` (the reference policy's starting parameters),
                          ``reference-expert`` (always careful), ``reference-few-weak-skills`` (competent but
                          for three weak skills), ``reference-failure:<kind>`` (careful but for one failure mode)
``registered``            a version, as gymloop prints every model it registered or played with known
                          parameters: ``NAME@vN[:HASH]`` (``reference@v3:60b60fb740edb405``, ``hosted_vllm/m@v0``,
                          ``my-checkpoint@v1:...``; a built-in policy's parameters print as
                          ``reference-expert@v0:<hash>``)
``transformers``          a local transformers checkpoint folder: ``transformers:FOLDER``
``llm``                   an LLM: ``MODEL@URL`` (its endpoint, masked when it holds a secret), or any other
                          string (a litellm model string)
========================  =====================================================================================

A registered model is stored as a name and a version label (``3-<first 12 hash digits>``, or ``3``); that label
is read here (:meth:`ModelId.registered`) and nowhere else. Which agent plays a form, and whether a registry holds a
version, are the callers' business (``flows.model_spec``, ``arena.agents.reference.builtin_params``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.core.redact import MASK, mask_url

REFERENCE = "reference"
"""The built-in reference policy with its starting parameters."""

EXPERT = "reference-expert"
"""The built-in careful policy (always the careful strategy)."""

FAILURE_PREFIX = "reference-failure:"
"""Prefix of the built-in policies careful but for one failure mode (``reference-failure:wrong_id``)."""

BUILTIN_NAMES: tuple[str, ...] = (REFERENCE, EXPERT, "reference-few-weak-skills")
"""The built-in policies named without a parameter (``reference-failure:<kind>`` aside)."""

LOCAL_PREFIX = "transformers:"
"""Prefix of a local transformers checkpoint folder."""

ModelForm = Literal["builtin", "registered", "transformers", "llm"]
"""The forms a model name takes (see the module's table)."""

_REGISTERED = re.compile(r"(?P<name>[^@\s]+)@v(?P<version>\d+)(?::(?P<hash>[0-9a-f]{6,64}))?")
_AT_ENDPOINT = re.compile(r"(?P<model>[^\s]+?)@(?P<url>[A-Za-z][A-Za-z0-9+.\-]*://\S+)")
_VERSION_LABEL = re.compile(r"(?P<step>\d+)(?:-(?P<hash>[0-9a-f]+))?")


class ModelIdError(ValueError):
    """A model name names nothing gymloop can play; the message is one line naming it (endpoint masked)."""


class ModelId(BaseModel):
    """A model, parsed.

    Attributes:
        form: Which form the name has (see the module's table).
        name: The built-in policy's name; the registered name; the checkpoint folder (absolute); or the LLM's
            model string.
        version: The registered version's training step.
        params_hash: The registered version's content hash, when known (a prefix of it, when a user typed one).
        endpoint: The LLM's base URL (it may hold a password: shown only masked, through ``label``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    form: ModelForm
    name: str = Field(min_length=1)
    version: int | None = None
    params_hash: str | None = None
    endpoint: str | None = Field(default=None, repr=False)

    @classmethod
    def registered(cls, name: str, version: str, params_hash: str | None = None) -> ModelId:
        """A registered model from its registry row: name, version label (``3-<hash>`` or ``3``) and hash."""
        match = _VERSION_LABEL.fullmatch(version)
        return cls(form="registered", name=name, version=int(match["step"]) if match else 0,
                   params_hash=params_hash)

    @property
    def label(self) -> str:
        """The model as gymloop prints and stores it (endpoint masked); it parses back to the same model."""
        if self.form == "registered":
            return f"{self.name}@v{self.version or 0}" + (f":{self.params_hash}" if self.params_hash else "")
        if self.form == "transformers":
            return LOCAL_PREFIX + self.name
        if self.form == "llm" and self.endpoint:
            return llm_label(self.name, self.endpoint)
        return self.name

    @property
    def registry_version(self) -> str:
        """The version label a registry stores a registered model under (``3-<12 hash digits>``, or ``3``)."""
        return version_label(self.version or 0, self.params_hash)


def llm_label(model: str, api_base: str | None) -> str:
    """An LLM's name: the model string, with its endpoint masked when one is set (``m@http://***@h/v1``)."""
    return f"{model}@{mask_url(api_base)}" if api_base else model


def version_label(version: int, params_hash: str | None) -> str:
    """Registry version of a model: its training step, plus its content hash when known (``3-1f2e...``).

    Two campaigns training the same starting model reach different parameters at the same step; the hash
    keeps their versions apart, and identical parameters map to the same version.
    """
    return f"{version}-{params_hash[:12]}" if params_hash and version else str(version)


def is_builtin(name: str) -> bool:
    """Whether ``name`` names a built-in policy (``reference-failure:<kind>`` included, whatever the kind)."""
    return name in BUILTIN_NAMES or name.startswith(FAILURE_PREFIX)


def names_model(given: str, printed: str) -> bool:
    """Whether ``given`` names the model gymloop printed as ``printed``.

    The same text does, and so does a registered version given with a shorter hash, or none
    (``reference@v3:60b6`` and ``reference@v3`` name ``reference@v3:60b60fb740edb405``).
    """
    if given.strip() == printed:
        return True
    a, b = _REGISTERED.fullmatch(given.strip()), _REGISTERED.fullmatch(printed)
    return bool(a and b and (a["name"], a["version"]) == (b["name"], b["version"])
                and (a["hash"] is None or (b["hash"] or "").startswith(a["hash"])))


def parse_model_id(text: str, *, api_base: str | None = None) -> ModelId:
    """Parse a model name in any of the forms of the module's table.

    Args:
        text: The model name.
        api_base: The ``api_base`` setting: the endpoint of a plain LLM string, and the full URL of a masked one.

    Raises:
        ModelIdError: An empty name or checkpoint folder, an endpoint that differs from ``api_base``, or a masked
            endpoint without the ``api_base`` it masks.
    """
    given = text.strip()
    if not given:
        raise ModelIdError("the model is empty: use 'reference', a litellm model string, "
                           "'transformers:<folder>' or a registered version such as reference@v3:<hash>")
    if given in BUILTIN_NAMES:
        return ModelId(form="builtin", name=given)
    if given.startswith(LOCAL_PREFIX):
        folder = given[len(LOCAL_PREFIX):].strip()
        if not folder:
            raise ModelIdError(f"model {given!r} names no checkpoint folder: use 'transformers:<folder>'")
        return ModelId(form="transformers", name=str(Path(folder).expanduser().resolve()))
    registered = _REGISTERED.fullmatch(given)
    if registered:
        return ModelId(form="registered", name=registered["name"], version=int(registered["version"]),
                       params_hash=registered["hash"])
    if is_builtin(given):
        return ModelId(form="builtin", name=given)
    at = _AT_ENDPOINT.fullmatch(given)
    if at:
        return ModelId(form="llm", name=at["model"], endpoint=_endpoint(at["model"], at["url"], api_base))
    return ModelId(form="llm", name=given, endpoint=api_base or None)


def endpoint_of(text: str) -> str | None:
    """The endpoint a ``MODEL@URL`` name gives, as given (``None`` for every other form)."""
    at = _AT_ENDPOINT.fullmatch(text.strip())
    return at["url"] if at else None


def _endpoint(model: str, url: str, api_base: str | None) -> str:
    """The full endpoint of ``model@url``: ``url``, or ``api_base`` when ``url`` is its masked form."""
    if api_base and url in (api_base, mask_url(api_base)):
        return api_base
    if api_base:
        raise ModelIdError(f"model '{model}@{mask_url(url)}' names another endpoint than api_base "
                           f"({mask_url(api_base)}): give the endpoint once, in the model or in api_base")
    if MASK in url:
        raise ModelIdError(f"model '{model}@{url}' has a masked endpoint: set api_base (--api-base or "
                           "GYMLOOP_API_BASE) to the full URL, or give the model without '@<endpoint>'")
    return url

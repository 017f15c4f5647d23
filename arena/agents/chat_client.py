"""How the LLM agent sends one chat request: through litellm, or the OpenAI SDK straight to the server.

litellm reaches every provider and knows their prices, at a cost of several milliseconds of client CPU per
call. Against an OpenAI-compatible server (vLLM, SGLang, llama.cpp server) the OpenAI SDK sends the same
request for a fraction of that (a one-turn episode: 5.1 ms of CPU instead of 12.1 ms), which matters when many
episodes are in flight on a small machine. Both take the same
request dictionary and return responses of the same shape (``choices[0].message``, ``usage``); both raise
exceptions of the OpenAI SDK's hierarchy (litellm's are subclasses), so one classification serves both.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any, Literal

ClientName = Literal["litellm", "openai"]
"""The request paths: ``litellm`` (any provider) or ``openai`` (the OpenAI SDK to an OpenAI-compatible server)."""

OPENAI_COMPATIBLE_PREFIXES = ("hosted_vllm/", "openai/")
"""litellm provider prefixes that name an OpenAI-compatible server; the ``openai`` client strips them."""

LITELLM_ONLY_KEYS = frozenset({"api_base", "api_key", "num_retries", "max_retries", "drop_params"})
"""Request keys litellm reads for itself, never sent to the server by the ``openai`` client."""


def import_litellm() -> ModuleType:
    """Import litellm with its offline price map and without its debug banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def server_model_name(model: str) -> str:
    """The model name an OpenAI-compatible server knows: the litellm string without its provider prefix.

    Only the prefixes in ``OPENAI_COMPATIBLE_PREFIXES`` are stripped, so a served name holding a slash
    (``Qwen/Qwen2.5-7B-Instruct``) is sent as it is.
    """
    for prefix in OPENAI_COMPATIBLE_PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix):]
    return model


class ChatClient:
    """Sends chat requests through the configured path; safe to share between the threads of one worker.

    The underlying client is made on first use (and dropped when the agent is pickled to another process), so
    building an agent costs nothing and the ``openai`` path reuses one connection pool for every episode.

    Args:
        name: ``litellm`` or ``openai``.
        model: The litellm model string of the agent.
        api_base: Base URL of the server, if any.
        api_key: The key, if the provider needs one (kept only in memory).
    """

    def __init__(self, name: ClientName, model: str, api_base: str | None, api_key: str | None) -> None:
        self.name = name
        self._model = model
        self._api_base = api_base
        self._api_key = api_key
        self._lock = threading.Lock()
        self._litellm: ModuleType | None = None
        self._openai: Any = None
        self._completion_type: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "model": self._model, "api_base": self._api_base, "api_key": self._api_key}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["model"], state["api_base"], state["api_key"])  # type: ignore[misc]

    def litellm(self) -> ModuleType:
        """The litellm module (imported on first use)."""
        if self._litellm is None:
            self._litellm = import_litellm()
        return self._litellm

    def complete(self, request: dict[str, Any]) -> Any:
        """Send one chat-completion request (litellm's keyword arguments) and return the response.

        Raises:
            openai.OpenAIError: Any failure of the call (litellm's exceptions are subclasses).
        """
        if self.name == "litellm":
            return self.litellm().completion(**request)
        body = {key: value for key, value in request.items() if key not in LITELLM_ONLY_KEYS | {"timeout"}}
        body["model"] = server_model_name(str(request["model"]))
        sdk = self._sdk()
        # The SDK's own ``chat.completions.create`` walks every tool schema through its type transforms (~10 ms
        # per call with a gym's tools); the request is already plain JSON, so it is posted as it is.
        return sdk.post("/chat/completions", body=body, cast_to=self._completion_type,
                        options={"timeout": request.get("timeout")})

    def _sdk(self) -> Any:
        with self._lock:
            if self._openai is None:
                import openai

                # A local server needs no key but the SDK insists on one (vLLM ignores it without --api-key).
                key = self._api_key or ("none" if self._api_base else os.environ.get("OPENAI_API_KEY"))
                self._openai = openai.OpenAI(base_url=self._api_base, api_key=key, max_retries=0)
                self._completion_type = openai.types.chat.ChatCompletion
            return self._openai

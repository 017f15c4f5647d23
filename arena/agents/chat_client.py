"""How the LLM agent sends one chat request: through litellm, or straight to an OpenAI-compatible server.

litellm reaches every provider and knows their prices, at a cost of several milliseconds of client CPU per
call. Against an OpenAI-compatible server (vLLM, SGLang, llama.cpp server) the ``openai`` path posts the same
request over httpx (``arena.agents.openai_wire``) for a fraction of that (a one-turn episode: about 2 ms of
CPU instead of 12), which matters when many episodes are in flight on a small machine. Both take the same
request dictionary and return responses of the same shape (``choices[0].message``, ``usage``); both raise
exceptions of the OpenAI SDK's hierarchy (litellm's are subclasses), so one classification serves both.
"""

from __future__ import annotations

import contextvars
import json
import os
import ssl
import threading
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import httpx

if TYPE_CHECKING:
    import aiohttp

ClientName = Literal["litellm", "openai"]
"""The request paths: ``litellm`` (any provider) or ``openai`` (the OpenAI protocol to an OpenAI-compatible server)."""

OPENAI_COMPATIBLE_PREFIXES = ("hosted_vllm/", "openai/")
"""litellm provider prefixes that name an OpenAI-compatible server; the ``openai`` client strips them."""

LITELLM_ONLY_KEYS = frozenset({"api_base", "api_key", "num_retries", "max_retries", "drop_params"})
"""Request keys litellm reads for itself, never sent to the server by the ``openai`` client."""

MAX_ENCODED_TOOL_LISTS = 64
"""Most lists of tools a client keeps encoded (an agent offers one list per pack); more empty the cache."""


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


def chat_url(base: str) -> str:
    """The chat-completions URL of a server's base URL; a query in the base (``?api-key=...``) stays the query."""
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))


def proxy_url(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``), if any."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname is None or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class ChatClient:
    """Sends chat requests through the configured path; safe to share between the threads of one worker.

    litellm is imported on first use, and the ``openai`` path's connections are made when needed (and dropped
    when the agent is pickled to another process), so building an agent costs nothing; each request in flight
    has a connection of its own, kept alive for the episodes that follow.

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
        self._idle: list[httpx.Client] = []
        self._encoded_tools: dict[int, tuple[list[Any], str]] = {}
        self._ssl_context: ssl.SSLContext | None = None
        base = api_base or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self._chat_url = chat_url(base)
        self._proxy = proxy_url(self._chat_url)
        # A local server needs no key (vLLM ignores it without --api-key); a hosted one reads the usual variable.
        self._key = api_key or (None if api_base else os.environ.get("OPENAI_API_KEY"))

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
        body = self.request_json(request)
        from arena.agents.openai_wire import post_chat  # the OpenAI SDK loads only when this path is used

        connection = self._borrow()
        try:
            return post_chat(connection, self._chat_url, body, self._key, request.get("timeout"))
        finally:
            with self._lock:
                self._idle.append(connection)

    async def acomplete(self, request: dict[str, Any]) -> Any:
        """``complete`` on an event loop: litellm's ``acompletion``, or the ``openai`` path over aiohttp.

        Inside ``http_sessions`` the ``openai`` path keeps one session (and its connections) per client until the
        block ends; outside, each request opens and closes a session of its own.

        Raises:
            openai.OpenAIError: Any failure of the call (litellm's exceptions are subclasses).
        """
        if self.name == "litellm":
            return await self.litellm().acompletion(**request)
        body = self.request_json(request)
        from arena.agents.openai_wire import post_chat_async

        sessions = _SESSIONS.get()
        if sessions is None:
            async with self._session() as session:
                return await post_chat_async(session, self._chat_url, body, self._key, request.get("timeout"))
        if self not in sessions:
            sessions[self] = self._session()
        return await post_chat_async(sessions[self], self._chat_url, body, self._key, request.get("timeout"))

    def request_json(self, request: dict[str, Any]) -> bytes:
        """The JSON the ``openai`` path posts for ``request``, without litellm's own keys and the timeout.

        The model is named as the server knows it (``server_model_name``). A list of tools is encoded once and
        spliced into every request that offers the same list object (an agent offers one list per pack and never
        changes it): encoding the tools was four fifths of encoding a one-turn request (70 of 90 microseconds for
        the procurement gym's tools).
        """
        body = {key: value for key, value in request.items() if key not in LITELLM_ONLY_KEYS | {"timeout"}}
        body["model"] = server_model_name(str(request["model"]))
        tools = body.pop("tools", None)
        text = json.dumps(body)
        if tools is None:
            return text.encode()
        return f'{text[:-1]}, "tools": {self._tools_json(tools)}}}'.encode()

    def _tools_json(self, tools: Any) -> str:
        """``tools`` as JSON, from the cache when this very list was encoded before (the entry keeps it alive)."""
        cached = self._encoded_tools.get(id(tools))
        if cached is not None and cached[0] is tools:
            return cached[1]
        if len(self._encoded_tools) >= MAX_ENCODED_TOOL_LISTS:
            self._encoded_tools.clear()
        text = json.dumps(tools)
        if isinstance(tools, list):
            self._encoded_tools[id(tools)] = (tools, text)
        return text

    def _session(self) -> aiohttp.ClientSession:
        import aiohttp  # loaded only when episodes run on an event loop

        with self._lock:
            if self._ssl_context is None:
                self._ssl_context = httpx.create_ssl_context()
        # No connection limit of its own: the rollout's adaptive limit bounds the requests in flight. The proxy is
        # looked up once (``proxy_url``), not per request as aiohttp's trust_env does: that lookup added 30-40 ms
        # to every answer with 64 episodes in flight.
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl_context), proxy=self._proxy)

    def _borrow(self) -> httpx.Client:
        """A connection no other thread is using (made when every one is busy).

        Each episode in flight sends on a connection of its own: threads sharing one client's connection pool
        spend more CPU waiting on its lock and searching its connections than on their requests (measured: 6 ms
        of client CPU per one-turn episode with 64 in flight, against 2 ms at one in flight). Connections are
        kept alive between episodes and share one TLS context.
        """
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if self._ssl_context is None:
                self._ssl_context = httpx.create_ssl_context()
            return httpx.Client(verify=self._ssl_context, follow_redirects=True)


_SESSIONS: contextvars.ContextVar[dict[ChatClient, aiohttp.ClientSession] | None] = contextvars.ContextVar(
    "gymloop_http_sessions", default=None)


@asynccontextmanager
async def http_sessions() -> AsyncIterator[None]:
    """Keep the aiohttp session each chat client opens inside the block (for its connections); close them after.

    The rollout engine wraps a batch's event loop in it, so the episodes of a batch share their connections.
    """
    sessions: dict[ChatClient, aiohttp.ClientSession] = {}
    token = _SESSIONS.set(sessions)
    try:
        yield
    finally:
        _SESSIONS.reset(token)
        for session in sessions.values():
            await session.close()

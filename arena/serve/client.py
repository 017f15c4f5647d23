"""Client side of a served gym: connect the MCP SDK's own client, and play episodes from sync code.

:class:`RemoteGym` runs an MCP client on a private event loop thread so that gymloop's synchronous
agents (``agent.run_episode(observation, call_tool)``) can play a gym served elsewhere (a container). Given
the server's operator token, it reads each episode's judged details (verdict and trace) when it ends one.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any, TypeVar, cast

import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import SecretStr

from arena.core.http_auth import bearer_headers
from arena.core.results import ToolResult
from arena.serve.mcp_surface import END_EPISODE, EPISODE_ARG, OPERATOR_META, START_EPISODE
from arena.serve.session import EpisodeOutcome, ServedObservation, ServedVerdict, ServeError

T = TypeVar("T")


def http_client(url: str, token: SecretStr | None = None) -> Client:
    """An MCP SDK client for a gym served over streamable HTTP at ``url`` (sends the bearer token)."""
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=bearer_headers(token)))
    return Client(transport)


def tool_text(result: types.CallToolResult) -> str:
    """The text of a served tool's result."""
    block = result.content[0] if result.content else None
    return block.text if isinstance(block, types.TextContent) else ""


class RemoteGym:
    """A gym served over MCP, played from synchronous code (one episode at a time).

    Args:
        client: An MCP client (not yet entered), e.g. from :func:`http_client`.
        timeout_s: Limit for any one request.
        operator_token: The server's operator token, for :meth:`finish_judged` (never sent otherwise).
    """

    def __init__(self, client: Client, *, timeout_s: float = 60.0, operator_token: SecretStr | None = None) -> None:
        self._client = client
        self._timeout_s = timeout_s
        self._operator = operator_token
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="remote-gym", daemon=True)
        self._stack = AsyncExitStack()
        self._handle: str | None = None

    def __enter__(self) -> RemoteGym:
        self._thread.start()
        try:
            self._run(self._stack.enter_async_context(self._client))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Disconnect and stop the loop thread."""
        if self._thread.is_alive():
            try:
                self._run(self._stack.aclose())
            except Exception:  # the server may already be gone; the connection is closed either way
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=self._timeout_s)
        except TimeoutError as exc:
            future.cancel()
            raise ServeError(f"the served gym did not answer within {self._timeout_s:g} s") from exc
        except ServeError:
            raise
        except Exception as exc:  # the MCP client's errors when the server went away (dead container, closed pipe)
            lines = str(exc).strip().splitlines()
            raise ServeError(f"the served gym stopped answering: {lines[0] if lines else type(exc).__name__}") from exc

    def _call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> types.CallToolResult:
        return self._run(self._client.call_tool(name, arguments, meta=cast("types.RequestParamsMeta | None", meta)))

    def raw(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Call any tool of the served gym; return whether it was an error and its text, exactly as served."""
        result = self._call(name, arguments)
        return bool(result.is_error), tool_text(result)

    def start(self, task_id: str, seed: int) -> ServedObservation:
        """Start an episode; returns the served observation.

        With the operator token, it is sent (a held-out task starts only for an operator).

        Raises:
            ServeError: The server refused (unknown task, a held-out task without the operator token, too many
                episodes).
        """
        meta = {OPERATOR_META: self._operator.get_secret_value()} if self._operator is not None else None
        result = self._call(START_EPISODE, {"task_id": task_id, "seed": seed}, meta)
        if result.is_error:
            raise ServeError(tool_text(result))
        payload = json.loads(tool_text(result))
        self._handle = payload[EPISODE_ARG]
        return ServedObservation.model_validate(payload["observation"])

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        """One tool call of the running episode, through the server's gym dispatch.

        Raises:
            ServeError: The episode is gone (environment failure, server restarted).
        """
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except json.JSONDecodeError:
                parsed = arguments
            arguments = parsed if isinstance(parsed, dict) else {"_raw": arguments}
        result = self._call(name, {**(arguments or {}), EPISODE_ARG: self._handle or ""})
        text = tool_text(result)
        try:
            return ToolResult.model_validate_json(text)
        except ValueError as exc:
            raise ServeError(text) from exc

    def finish(self, reply: str) -> ServedVerdict:
        """End the episode with ``reply``; returns the served verdict (score, passed, per-check pass/fail).

        Raises:
            ServeError: The server refused.
        """
        return ServedVerdict.model_validate(self._end(reply, None))

    def finish_judged(self, reply: str) -> EpisodeOutcome:
        """End the episode with ``reply`` as the operator; returns the judged outcome (verdict details, trace).

        Raises:
            ServeError: The server refused, or did not accept the operator token (or none was given).
        """
        if self._operator is None:
            raise ServeError("judged details need the server's operator token, and none was given")
        payload = self._end(reply, {OPERATOR_META: self._operator.get_secret_value()})
        if "operator" not in payload:
            raise ServeError("the served gym did not accept the operator token: it sent the verdict without details")
        return EpisodeOutcome.model_validate(payload["operator"])

    def _end(self, reply: str, meta: dict[str, Any] | None) -> dict[str, Any]:
        result = self._call(END_EPISODE, {EPISODE_ARG: self._handle or "", "reply": reply}, meta)
        self._handle = None
        if result.is_error:
            raise ServeError(tool_text(result))
        payload: dict[str, Any] = json.loads(tool_text(result))
        return payload

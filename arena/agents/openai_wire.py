"""One chat-completions request to an OpenAI-compatible server, over httpx or aiohttp, with the OpenAI SDK's errors.

The SDK builds and parses every request through its own models, which costs more client CPU than the
request itself when a small machine keeps many episodes in flight (a one-turn episode: about 0.8 ms of the
SDK per request). gymloop's request is already plain JSON, so it is posted as it is, and the answer is read
as an attribute view of its JSON (``response.choices[0].message.tool_calls``), the shape the agent reads
from litellm. Failures raise the SDK's exception classes, built as the SDK builds them, so one
classification (``arena.agents._model_api.classify``) serves every request path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aiohttp
import httpx
import openai

DEFAULT_TIMEOUT_S = 600.0
"""The SDK's default request timeout, used when a request names none."""

_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}


class JSONView:
    """Attribute access to a JSON object; a key the object lacks reads as ``None`` (as an SDK model's field).

    Args:
        fields: The object's keys and values (nested objects already views).
    """

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __repr__(self) -> str:
        return f"JSONView({self.__dict__!r})"


def _status_error(response: httpx.Response) -> openai.APIStatusError:
    """The SDK's exception for an answer with an error status (its message and body, its class per status)."""
    text = response.text.strip()
    body: Any
    try:
        body = json.loads(text)
        message = f"Error code: {response.status_code} - {body}"
    except ValueError:
        body = text
        message = text or f"Error code: {response.status_code}"
    data = body.get("error", body) if isinstance(body, dict) else body
    status = response.status_code
    error_type = _STATUS_ERRORS.get(status) or (openai.InternalServerError if status >= 500 else openai.APIStatusError)
    return error_type(message, response=response, body=data)


def post_chat(client: httpx.Client, url: str, body: bytes, api_key: str | None,
              timeout_s: float | None) -> JSONView:
    """Post one chat-completions request and return the answer's JSON as a ``JSONView``.

    Args:
        client: The connection to send on (used by one thread at a time).
        url: The server's chat-completions URL.
        body: The request's JSON.
        api_key: Sent as a bearer token when set.
        timeout_s: Time limit of the request (``DEFAULT_TIMEOUT_S`` when ``None``).

    Raises:
        openai.APITimeoutError: The request timed out.
        openai.APIConnectionError: The server could not be reached or dropped the connection.
        openai.APIStatusError: The server answered with an error status (its subclass per status).
        openai.APIResponseValidationError: The answer is not a JSON object.
    """
    request = client.build_request("POST", url, content=body, headers=_headers(api_key),
                                   timeout=timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S)
    try:
        response = client.send(request)
    except httpx.TimeoutException as exc:
        raise openai.APITimeoutError(request=request) from exc
    except httpx.HTTPError as exc:
        raise openai.APIConnectionError(request=request) from exc
    return _answer(response.status_code, response.content, lambda: response)


async def post_chat_async(session: aiohttp.ClientSession, url: str, body: bytes, api_key: str | None,
                          timeout_s: float | None) -> JSONView:
    """``post_chat`` on an event loop: the same request, answer and exceptions, over an aiohttp session.

    Args and Raises: as ``post_chat``, with ``session`` (of the running event loop) in place of ``client``.
    """
    timeout = aiohttp.ClientTimeout(total=timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S)
    try:
        async with session.post(url, data=body, headers=_headers(api_key),
                                timeout=timeout) as response:
            content = await response.read()
            status, headers = response.status, list(response.headers.items())
    except TimeoutError as exc:
        raise openai.APITimeoutError(request=httpx.Request("POST", url)) from exc
    except aiohttp.ClientError as exc:
        raise openai.APIConnectionError(request=httpx.Request("POST", url)) from exc
    # The SDK's exceptions hold an httpx response: one is made only for an answer that fails.
    return _answer(status, content, lambda: httpx.Response(status, headers=headers, content=content,
                                                           request=httpx.Request("POST", url)))


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _answer(status: int, content: bytes, response: Callable[[], httpx.Response]) -> JSONView:
    """The answer's JSON as a ``JSONView``, or the SDK's exception for an error status or a body that is no object."""
    if status >= 400:
        raise _status_error(response())
    try:
        answer = json.loads(content, object_hook=JSONView)
    except ValueError as exc:
        failed = response()
        raise openai.APIResponseValidationError(failed, failed.text,
                                                message=f"the answer is not JSON: {exc}") from exc
    if not isinstance(answer, JSONView):
        raise openai.APIResponseValidationError(response(), answer, message="the answer is not a JSON object")
    return answer

"""One chat-completions request to an OpenAI-compatible server, over httpx, with the OpenAI SDK's errors.

The SDK builds and parses every request through its own models, which costs more client CPU than the
request itself when a small machine keeps many episodes in flight (a one-turn episode: about 0.8 ms of the
SDK per request). gymloop's request is already plain JSON, so it is posted as it is, and the answer is read
as an attribute view of its JSON (``response.choices[0].message.tool_calls``), the shape the agent reads
from litellm. Failures raise the SDK's exception classes, built as the SDK builds them, so one
classification (``arena.agents._model_api.classify``) serves every request path.
"""

from __future__ import annotations

import json
from typing import Any

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


def post_chat(client: httpx.Client, url: str, body: dict[str, Any], api_key: str | None,
              timeout_s: float | None) -> JSONView:
    """Post one chat-completions request and return the answer's JSON as a ``JSONView``.

    Args:
        client: The connection to send on (used by one thread at a time).
        url: The server's chat-completions URL.
        body: The request, plain JSON.
        api_key: Sent as a bearer token when set.
        timeout_s: Time limit of the request (``DEFAULT_TIMEOUT_S`` when ``None``).

    Raises:
        openai.APITimeoutError: The request timed out.
        openai.APIConnectionError: The server could not be reached or dropped the connection.
        openai.APIStatusError: The server answered with an error status (its subclass per status).
        openai.APIResponseValidationError: The answer is not a JSON object.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = client.build_request("POST", url, content=json.dumps(body).encode(), headers=headers,
                                   timeout=timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S)
    try:
        response = client.send(request)
    except httpx.TimeoutException as exc:
        raise openai.APITimeoutError(request=request) from exc
    except httpx.HTTPError as exc:
        raise openai.APIConnectionError(request=request) from exc
    if response.status_code >= 400:
        raise _status_error(response)
    try:
        answer = json.loads(response.content, object_hook=JSONView)
    except ValueError as exc:
        raise openai.APIResponseValidationError(response, response.text,
                                                message=f"the answer is not JSON: {exc}") from exc
    if not isinstance(answer, JSONView):
        raise openai.APIResponseValidationError(response, answer, message="the answer is not a JSON object")
    return answer

"""Model-API failure classification and retry backoff for the LiteLLM agent."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

CONTEXT_LENGTH_PHRASES = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
)
"""Phrases of a 400 answer that mean the prompt no longer fits the model's context."""

RETRYABLE_KINDS = frozenset({"rate_limit", "timeout", "server_error"})
"""Failure kinds worth another attempt."""

MODEL_KINDS = frozenset({"context_length", "bad_request", "malformed_answer"})
"""Failure kinds the model's own conversation caused: the request its messages made was refused (too long for its
context, or a 4xx on its own output) or the answer it gave could not be read. Such an episode is the model's
failed episode, never an invalid one: a model cannot hide a task it would fail behind an error of its own."""

CONFIGURATION_STATUSES = frozenset({401, 403, 404})
"""4xx answers about the setup (key, permission, model name or URL), not about the conversation."""


@dataclass(frozen=True)
class APIFailure:
    """One failed model call, classified.

    Attributes:
        kind: ``rate_limit``, ``timeout``, ``server_error`` (the infrastructure), ``configuration`` (key,
            permission, model name or URL), ``bad_request``, ``context_length`` or ``malformed_answer`` (the
            model's own conversation).
        message: Details from the provider.
        retry_after: Seconds the provider asked to wait, if it said.
    """

    kind: str
    message: str
    retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed if repeated."""
        return self.kind in RETRYABLE_KINDS

    @property
    def model_caused(self) -> bool:
        """Whether the model's own conversation caused it (a failed episode of the model, not an invalid one)."""
        return self.kind in MODEL_KINDS


def _headers(exc: BaseException) -> Any:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers:
        return headers
    return getattr(exc, "litellm_response_headers", None) or {}


def parse_retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Return the wait a response's ``Retry-After`` (or ``retry-after-ms``) header asks for, in seconds.

    Args:
        headers: A mapping of response headers (case-insensitive ones are searched as given and lower-cased).
        now: Current epoch time, for the HTTP-date form (default: the system clock).
    """
    def get(name: str) -> str | None:
        value = headers.get(name)
        if value is None:
            value = headers.get(name.title())
        return None if value is None else str(value).strip()

    millis = get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, moment.timestamp() - current)


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found and len(found) < 16:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _unreadable_answer(exc: BaseException) -> bool:
    """Whether the server answered but its answer could not be read as a chat completion.

    litellm reports such an answer as a 500 of its own making: no HTTP error status lies behind it, a JSON or
    response-conversion error does.
    """
    import httpx

    chain = _chain(exc)
    if any(isinstance(e, httpx.HTTPStatusError) for e in chain):
        return False
    return any(isinstance(e, json.JSONDecodeError) or "Invalid response object" in str(e) for e in chain)


def classify(exc: BaseException) -> APIFailure:
    """Classify an exception raised by a chat request (litellm's exceptions subclass the OpenAI SDK's).

    Timeouts, 429s, connection failures and 5xx answers are retryable (the infrastructure); 401, 403 and 404
    are ``configuration``; any other 4xx is the model's conversation: a ``bad_request``, or ``context_length``
    when the prompt no longer fits; an answer that is not a chat completion (not JSON, no choices) is a
    ``malformed_answer``. An unrecognised error of the client library is a retryable ``server_error``; any
    other exception (a bug in the request, not the server) is a ``bad_request``, which is not retried.
    """
    import openai

    message = str(exc)
    if isinstance(exc, openai.APITimeoutError):
        return APIFailure("timeout", message)
    if isinstance(exc, openai.RateLimitError):
        return APIFailure("rate_limit", message, parse_retry_after(_headers(exc)))
    if type(exc).__name__ == "ContextWindowExceededError":
        return APIFailure("context_length", message)
    if isinstance(exc, openai.APIConnectionError):
        return APIFailure("server_error", message)
    if isinstance(exc, openai.APIResponseValidationError) or _unreadable_answer(exc):
        return APIFailure("malformed_answer", message)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in CONFIGURATION_STATUSES:
        return APIFailure("configuration", f"HTTP {status}: {message}")
    if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429):
        lowered = message.lower()
        if any(phrase in lowered for phrase in CONTEXT_LENGTH_PHRASES):
            return APIFailure("context_length", message)
        return APIFailure("bad_request", f"HTTP {status}: {message}")
    if isinstance(status, int) and status == 408:
        return APIFailure("timeout", message)
    if isinstance(status, int) and status >= 500:
        return APIFailure("server_error", message)
    if isinstance(exc, openai.OpenAIError):
        return APIFailure("server_error", f"unclassified {type(exc).__name__}: {message}")
    return APIFailure("bad_request", f"{type(exc).__name__}: {message}")


def backoff_delay(attempt: int, *, base_s: float, cap_s: float, retry_after: float | None,
                  rng: random.Random) -> float:
    """Return the wait before retry number ``attempt`` (from 0): equal-jitter exponential backoff.

    The wait is half of ``min(cap, base * 2**attempt)`` plus a uniform draw of
    the other half, and never shorter than the provider's ``Retry-After``.
    """
    ceiling = min(cap_s, base_s * (2.0 ** attempt))
    delay = ceiling / 2.0 + rng.uniform(0.0, ceiling / 2.0)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay

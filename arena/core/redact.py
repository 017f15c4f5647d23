"""Secrets out of everything gymloop prints, logs or records.

Settings may carry secrets in three ways: a secret value of its own (an API key, a bearer token), a
password or token in a URL's userinfo, or a token-like query value in a URL. This module masks all
three: :func:`mask_url` for one URL, :func:`redact_text` for free text (error messages, log lines),
and :func:`register_secrets` + :func:`install_log_redaction` so every log record this process
creates, through any logger, is masked before a handler sees it (Prefect's API log handler included).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import SplitResult, parse_qsl, quote, urlencode, urlsplit, urlunsplit

MASK = "***"
"""What a secret is replaced with."""

_SECRET_QUERY_KEY = re.compile(
    r"(token|key|secret|passw|pwd|auth|signature|sig|credential|session|code)", re.IGNORECASE
)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{4,}")
_MIN_SECRET_LENGTH = 4

__all__ = [
    "MASK",
    "install_log_redaction",
    "mask_url",
    "redact_text",
    "register_secrets",
    "registered_secrets",
    "url_secrets",
]


def _split(url: str) -> SplitResult | None:
    """``url`` split into its parts; a malformed port (a typo) still gives its userinfo and query to mask."""
    try:
        return urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket
        return None


def url_secrets(url: str) -> list[str]:
    """The secret parts of ``url``: its password (or a lone user of an HTTP URL) and token-like query values."""
    parts = _split(url)
    if parts is None:
        return []
    found: list[str] = []
    if parts.password:
        found.append(parts.password)
    elif parts.username and parts.scheme.lower() in ("http", "https", "ws", "wss"):
        found.append(parts.username)
    found.extend(v for k, v in parse_qsl(parts.query, keep_blank_values=False) if _SECRET_QUERY_KEY.search(k))
    return [s for s in found if s]


def mask_url(url: str) -> str:
    """Return ``url`` with its password, HTTP userinfo and token-like query values replaced by ``***``.

    The scheme, user name (of a database URL), host, port, path and other query values stay, so
    the result still says where a connection goes.
    """
    parts = _split(url)
    if parts is None:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if parts.password is not None:
            netloc = f"{quote(parts.username or '', safe='')}:{MASK}@{host}"
        elif parts.scheme.lower() in ("http", "https", "ws", "wss") and userinfo:
            netloc = f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_QUERY_KEY.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_QUERY_KEY.search(k) and v else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask every URL, bearer/basic credential, and each of ``secrets`` (plus the registered ones) in ``text``."""
    out = _URL.sub(lambda m: mask_url(m.group(0)), text)
    out = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", out)
    for secret in sorted({*secrets, *registered_secrets()}, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_LENGTH and secret in out:
            out = out.replace(secret, MASK)
    return out


_lock = threading.Lock()
_secrets: set[str] = set()
_installed = False


def register_secrets(values: Iterable[str | None]) -> None:
    """Remember secret values of this process, so log records and :func:`redact_text` mask them."""
    with _lock:
        for value in values:
            if value and len(value) >= _MIN_SECRET_LENGTH:
                _secrets.add(value)
                encoded = quote(value, safe="")
                if encoded != value:
                    _secrets.add(encoded)


def registered_secrets() -> frozenset[str]:
    """The secret values registered in this process."""
    with _lock:
        return frozenset(_secrets)


def _redacted_arg(value: Any) -> Any:
    """A log argument with its secrets masked, keeping its type when it holds none (``%d`` still formats)."""
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    for shown in (str(value), repr(value)):
        masked = redact_text(shown)
        if masked != shown:
            return masked
    return value


def _redact_record(record: logging.LogRecord, message: str) -> None:
    """Mask the secrets of ``record`` (whose formatted message is ``message``) where they are.

    The message template and each argument are masked in place, so ``record.args`` keeps its shape: handlers
    that read the arguments themselves (uvicorn's access log unpacks five of them) keep working. Only when a
    secret would still show after that (one spanning the template and an argument) is the record flattened to
    its masked message.
    """
    args = record.args
    if isinstance(args, tuple):
        record.args = tuple(_redacted_arg(a) for a in args)
    elif isinstance(args, Mapping):
        record.args = {k: _redacted_arg(v) for k, v in args.items()}
    if isinstance(record.msg, str):
        record.msg = redact_text(record.msg)
    try:
        shown = record.getMessage()
        clean = redact_text(shown) == shown
    except Exception:
        clean = False
    if not clean:
        record.msg, record.args = redact_text(message), ()


def install_log_redaction() -> None:
    """Mask secrets in every log record this process creates, whatever logger or handler takes it.

    Installed once per process as a log-record factory: a record whose message holds a secret has it masked
    at creation, in its template and arguments alike, so no handler (console, file, Prefect's API log handler,
    uvicorn's access log) ever sees a secret, and every handler can still format the record its own way.
    """
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:
            return record  # a bad format string stays the logging module's own error to report
        if redact_text(message) != message:
            _redact_record(record, message)
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)

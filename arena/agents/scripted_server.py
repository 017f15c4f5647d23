"""A scripted model behind a real OpenAI-compatible HTTP server on 127.0.0.1.

Tests and benchmarks start it, point an agent at ``server.base_url + "/v1"`` and
cue each response in turn: tool calls, replies, HTTP errors, delays,
malformed tool calls and raw (malformed) answers. Every request is recorded with the time the server spent
on it, so callers can check what the agent sent and subtract the server's time.

Example:
    >>> with ScriptedModelServer([ReplyCue("done")]) as server:  # doctest: +SKIP
    ...     url = server.base_url + "/v1"
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

SERVER_TIME_HEADER = "X-Scripted-Server-Time"
"""Response header carrying the seconds the server spent before writing the body."""

CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
"""Paths the server answers."""


@dataclass(frozen=True)
class ToolCallCue:
    """Answer with one tool call.

    Attributes:
        name: Tool name.
        arguments_json: The call's arguments as a JSON string.
        content: Optional text alongside the call.
        prompt_tokens: Prompt tokens to report (default: estimated from the request).
        completion_tokens: Completion tokens to report (default: estimated from the answer).
    """

    name: str
    arguments_json: str = "{}"
    content: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class MalformedToolCallCue:
    """Answer with a tool call whose arguments are sent verbatim (typically not valid JSON).

    Attributes:
        name: Tool name.
        raw_arguments: The arguments string, sent as is.
        prompt_tokens: Prompt tokens to report.
        completion_tokens: Completion tokens to report.
    """

    name: str
    raw_arguments: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class ToolCallsCue:
    """Answer with several tool calls in one turn.

    Attributes:
        calls: The calls, in order.
        prompt_tokens: Prompt tokens to report.
        completion_tokens: Completion tokens to report.
    """

    calls: Sequence[ToolCallCue | MalformedToolCallCue]
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class ReplyCue:
    """Answer with a final text reply.

    Attributes:
        text: The reply.
        finish_reason: ``stop`` unless told otherwise (e.g. ``length``).
        prompt_tokens: Prompt tokens to report.
        completion_tokens: Completion tokens to report.
    """

    text: str
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class ErrorCue:
    """Answer with an HTTP error in the OpenAI error format.

    Attributes:
        status: HTTP status, e.g. 429, 400 or 500.
        message: Error message.
        retry_after: Seconds to send in a ``Retry-After`` header, if any.
        code: OpenAI error code (default derived from the status and message).
    """

    status: int
    message: str = ""
    retry_after: float | None = None
    code: str | None = None


@dataclass(frozen=True)
class RawCue:
    """Answer with a body of the script's own making: a chat completion that is malformed, or not one at all.

    Attributes:
        body: The body, sent as it is (a string) or as JSON (anything else).
        status: HTTP status.
    """

    body: Any
    status: int = 200


@dataclass(frozen=True)
class DelayCue:
    """Wait before answering (to cause client timeouts), then answer with ``then``.

    Attributes:
        seconds: How long to wait.
        then: The answer after the wait.
    """

    seconds: float
    then: Cue = field(default_factory=lambda: ReplyCue("(delayed reply)"))


Cue = ToolCallCue | MalformedToolCallCue | ToolCallsCue | ReplyCue | ErrorCue | RawCue | DelayCue
"""One scripted answer."""

Script = Sequence[Cue] | Callable[[list[dict[str, Any]]], Cue]
"""A list of answers in order, or a function of the request's messages."""


@dataclass
class RecordedRequest:
    """One request the server received.

    Attributes:
        path: Request path.
        body: The parsed JSON body (model, messages, tools, ...).
        cue: The cue that answered it (``None`` when the script had run out).
        status: HTTP status sent (0 until answered).
        server_time_s: Seconds between the handler starting and the response being written
            (0 until the answer is written; a delayed answer is recorded on arrival).
        client_port: The client's port: requests with the same port came over the same connection.
    """

    path: str
    body: dict[str, Any]
    cue: Cue | None
    status: int = 0
    server_time_s: float = 0.0
    client_port: int = 0


def _estimate_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return max(1, len(text) // 4)


def _tool_call(index: int, call: ToolCallCue | MalformedToolCallCue) -> dict[str, Any]:
    arguments = call.arguments_json if isinstance(call, ToolCallCue) else call.raw_arguments
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def completion_body(cue: ToolCallCue | MalformedToolCallCue | ToolCallsCue | ReplyCue, body: dict[str, Any],
                    number: int) -> dict[str, Any]:
    """The chat-completion JSON answering request ``number`` (from 1), whose JSON is ``body``, with ``cue``."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(cue, ReplyCue):
        message["content"] = cue.text
        finish_reason = cue.finish_reason
    else:
        calls = cue.calls if isinstance(cue, ToolCallsCue) else [cue]
        if isinstance(cue, ToolCallCue):
            message["content"] = cue.content
        message["tool_calls"] = [_tool_call(number * 100 + i, c) for i, c in enumerate(calls)]
        finish_reason = "tool_calls"
    prompt_tokens = cue.prompt_tokens
    if prompt_tokens is None:
        prompt_tokens = _estimate_tokens(body.get("messages", []))
    completion_tokens = cue.completion_tokens
    if completion_tokens is None:
        completion_tokens = _estimate_tokens({k: v for k, v in message.items() if v is not None})
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + number,
        "model": str(body.get("model", "scripted")),
        "system_fingerprint": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error_body(cue: ErrorCue) -> dict[str, Any]:
    code = cue.code
    if code is None:
        if cue.status == 429:
            code = "rate_limit_exceeded"
        elif "context length" in cue.message.lower():
            code = "context_length_exceeded"
        else:
            code = f"http_{cue.status}"
    error_type = "requests" if cue.status == 429 else "invalid_request_error" if cue.status < 500 else "server_error"
    return {"error": {"message": cue.message or f"scripted error {cue.status}", "type": error_type,
                      "param": None, "code": code}}


class _Server(ThreadingHTTPServer):
    """A threading HTTP server with a listen backlog deep enough for hundreds of concurrent clients."""

    request_queue_size = 1024
    daemon_threads = True


class ScriptedModelServer:
    """An OpenAI-compatible chat-completions server answering from a script.

    Requests are served concurrently, one thread each, like a real model server.

    Args:
        script: Cues answered in order, or a function of each request's messages.
        default: Answer once a list script has run out; ``None`` answers HTTP 500
            naming the exhausted script (and records the request).
        delay_s: Seconds every answer waits before it is written (a model's latency).
        keep_requests: Keep every request in ``requests``; benchmarks that send thousands turn it off, since a heap
            growing by every request body makes the server's garbage collections pause all answers for longer
            and longer (a real model server keeps nothing), and only count them.
        authorization: The ``Authorization`` header every request must carry (``Bearer <key>``, ``Basic ...``), as
            a server started with an API key or behind basic auth checks it; others get 401 and are not recorded.

    Attributes:
        requests: Every request received, in order (empty when ``keep_requests`` is off).
        refused: How many requests were refused for their ``Authorization`` header.
    """

    def __init__(self, script: Script, *, default: Cue | None = None, delay_s: float = 0.0,
                 keep_requests: bool = True, authorization: str | None = None) -> None:
        self._script = script
        self.authorization = authorization
        self.refused = 0
        self._default = default
        self.delay_s = delay_s
        self._keep_requests = keep_requests
        self._received = 0
        self._in_flight = 0
        self._peak = 0
        self._position = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """Root URL of the running server, e.g. ``http://127.0.0.1:PORT`` (add ``/v1`` for clients).

        Raises:
            RuntimeError: The server is not running.
        """
        if self._httpd is None:
            raise RuntimeError("the scripted model server is not running: call start() or use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def peak_in_flight(self) -> int:
        """Most requests the server was answering at once."""
        with self._lock:
            return self._peak

    def entered(self) -> None:
        """Count a request in flight (called by the request handler)."""
        with self._lock:
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)

    def count_refused(self) -> None:
        """Count a request refused for its credentials (called by the request handler)."""
        with self._lock:
            self.refused += 1

    def left(self) -> None:
        """Count a request answered (called by the request handler)."""
        with self._lock:
            self._in_flight -= 1

    @property
    def server_time_s(self) -> float:
        """Total seconds the server spent answering the requests it kept."""
        with self._lock:
            return sum(r.server_time_s for r in self.requests)

    def start(self) -> ScriptedModelServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server(("127.0.0.1", 0), _make_handler(self))
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed answers in flight return at once."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def next_cue(self, messages: list[dict[str, Any]]) -> Cue | None:
        """Return the cue answering a request with ``messages`` (``None`` when the script ran out)."""
        if callable(self._script):
            return self._script(messages)
        with self._lock:
            if self._position < len(self._script):
                cue = self._script[self._position]
                self._position += 1
                return cue
        return self._default

    def record(self, request: RecordedRequest) -> int:
        """Keep a request as it arrives and return its number, from 1 (called by the request handler)."""
        with self._lock:
            self._received += 1
            if self._keep_requests:
                self.requests.append(request)
            return self._received

    def wait(self, seconds: float) -> None:
        """Sleep up to ``seconds``, returning early when the server stops."""
        self._stopping.wait(seconds)


def _make_handler(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: tests read ``server.requests`` instead."""

        def do_POST(self) -> None:
            """Answer a chat-completions request from the script."""
            started = time.perf_counter()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0].rstrip("/")
            if server.authorization is not None and self.headers.get("Authorization") != server.authorization:
                server.count_refused()
                self._send(401, {"error": {"message": "missing or wrong credentials in the Authorization header",
                                           "type": "invalid_request_error", "param": None, "code": "unauthorized"}},
                           started, {})
                return
            if path not in CHAT_PATHS:
                self._send(404, {"error": {"message": f"unknown path {path!r}", "type": "invalid_request_error",
                                           "param": None, "code": "not_found"}}, started, {})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                self._send(400, {"error": {"message": f"request body is not JSON: {exc}",
                                           "type": "invalid_request_error", "param": None, "code": None}},
                           started, {})
                return
            server.entered()
            try:
                self._answer(body, started)
            finally:
                server.left()

        def _answer(self, body: dict[str, Any], started: float) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            messages = body.get("messages", [])
            cue = server.next_cue(messages if isinstance(messages, list) else [])
            recorded = RecordedRequest(path=path, body=body, cue=cue, client_port=int(self.client_address[1]))
            number = server.record(recorded)
            if server.delay_s > 0:
                server.wait(server.delay_s)
            while isinstance(cue, DelayCue):
                server.wait(cue.seconds)
                cue = cue.then
            if cue is None:
                recorded.status = 500
                payload: Any = {"error": {
                    "message": f"scripted model server: script exhausted at request {number}",
                    "type": "server_error", "param": None, "code": "script_exhausted"}}
                headers: dict[str, str] = {}
            elif isinstance(cue, ErrorCue):
                recorded.status = cue.status
                payload = _error_body(cue)
                headers = {} if cue.retry_after is None else {"Retry-After": f"{cue.retry_after:g}"}
            elif isinstance(cue, RawCue):
                recorded.status = cue.status
                payload = cue.body
                headers = {}
            else:
                recorded.status = 200
                payload = completion_body(cue, body, number)
                headers = {}
            recorded.server_time_s = self._send(recorded.status, payload, started, headers)

        def _send(self, status: int, payload: Any, started: float, headers: dict[str, str]) -> float:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header(SERVER_TIME_HEADER, f"{time.perf_counter() - started:.6f}")
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return time.perf_counter() - started

    return Handler

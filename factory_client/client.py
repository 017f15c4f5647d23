"""The HTTP factory client: timeouts, retries with backoff, and strict checks on everything received."""

from __future__ import annotations

import time
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, SecretStr, ValidationError

from arena.core.http_auth import client_auth
from arena.core.pack import Pack
from arena.core.redact import mask_url, redact_text
from factory_client.archive import ArchiveLimits, load_archive
from factory_client.base import FactoryClient, FactoryResult
from factory_client.errors import (
    FactoryError,
    FactoryProtocolError,
    IdempotencyConflict,
    PackRefused,
    RequestFailed,
)
from factory_client.protocol import (
    PROTOCOL_VERSION,
    GateReport,
    PackList,
    RequestStatus,
    SubmitResponse,
    VariantRequest,
)

_M = TypeVar("_M", bound=BaseModel)
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses retried with backoff."""


class HttpFactoryClient:
    """A remote factory over HTTP (``/v1`` routes, see docs/factory-openapi.json).

    Args:
        base_url: The factory's URL, e.g. ``http://127.0.0.1:8765``.
        timeout: Seconds per HTTP request.
        retries: Retries after a 5xx, a 429 or a connection error.
        backoff: First backoff in seconds; doubles per retry (a 429's ``Retry-After`` is honoured, capped).
        limits: Archive limits every downloaded pack must respect.
        poll_interval: Seconds between status polls in ``request``.
        token: Bearer token the factory requires (sent on every request, never shown). A URL whose userinfo
            holds the token (``http://user:<token>@host``) needs none; a URL whose password is not the token is
            refused with it (both would go in the one ``Authorization`` header).

    Raises:
        ValueError: ``retries`` is negative, or the URL's userinfo conflicts with ``token``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: SecretStr | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.25,
        limits: ArchiveLimits | None = None,
        poll_interval: float = 0.2,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        url, headers = client_auth(base_url, token)
        self.base_url = url.rstrip("/")
        self.shown_url = mask_url(self.base_url)
        self.retries = retries
        self.backoff = backoff
        self.limits = limits or ArchiveLimits()
        self.poll_interval = poll_interval
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, follow_redirects=False,
                                  headers=headers)

    def __enter__(self) -> HttpFactoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # transport --------------------------------------------------------------------------------
    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, json=body)
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    where = f"{method} {self.shown_url}{path}"
                    raise FactoryError(f"{where} failed after {attempt + 1} tries: {redact_text(str(exc))}") from exc
                delay = self.backoff * 2**attempt
            else:
                if response.status_code not in RETRY_STATUSES:
                    return response
                if attempt >= self.retries:
                    raise FactoryError(
                        f"{method} {self.shown_url}{path} answered {response.status_code} after {attempt + 1} tries: "
                        f"{_detail(response)}"
                    )
                delay = self.backoff * 2**attempt
                retry_after = response.headers.get("retry-after")
                if response.status_code == 429 and retry_after is not None:
                    try:
                        delay = max(delay, min(float(retry_after), 10.0))
                    except ValueError:
                        pass
            time.sleep(delay)
            attempt += 1

    def _json(self, response: httpx.Response, model: type[_M], what: str) -> _M:
        if response.status_code == 401:
            raise FactoryError(f"{what}: the factory at {self.shown_url} answered 401: its token is missing or "
                               "wrong (set the factory_token setting, GYMLOOP_FACTORY_TOKEN, or give the token as "
                               "the password in factory_url)")
        if response.status_code >= 400:
            message = f"{what}: the factory answered {response.status_code}: {_detail(response)}"
            if response.status_code == 409 and "idempotency" in message:
                raise IdempotencyConflict(message)
            if response.status_code in (400, 422):
                raise FactoryProtocolError(message)
            raise FactoryError(message)
        if not response.headers.get("content-type", "").startswith("application/json"):
            raise FactoryProtocolError(f"{what}: expected JSON, got {response.headers.get('content-type')!r}")
        try:
            raw = response.json()
        except ValueError as exc:
            raise FactoryProtocolError(f"{what}: malformed JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise FactoryProtocolError(f"{what}: expected a JSON object")
        version = raw.get("protocol_version")
        if version != PROTOCOL_VERSION:
            raise FactoryProtocolError(
                f"{what}: unknown protocol version {version!r}; this client speaks {PROTOCOL_VERSION}"
            )
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise FactoryProtocolError(f"{what}: field {field!r}: {err['msg']}") from exc

    # the FactoryClient interface --------------------------------------------------------------
    def submit(self, request: VariantRequest) -> str:
        """Submit a request (idempotent under its idempotency key) and return its id.

        Raises:
            IdempotencyConflict: The key was used with a different request.
            FactoryProtocolError: The factory refused the request or answered outside the protocol.
        """
        response = self._send("POST", "/v1/requests", request.model_dump(mode="json"))
        answer = self._json(response, SubmitResponse, "submit")
        expected = request.request_id()
        if answer.request_id != expected and request.idempotency_key is not None:
            raise FactoryProtocolError(
                f"submit: the factory answered request id {answer.request_id!r} for idempotency key "
                f"{request.idempotency_key!r}, expected {expected!r}"
            )
        return answer.request_id

    def status(self, request_id: str) -> RequestStatus:
        """Return where the request stands."""
        answer = self._json(self._send("GET", f"/v1/requests/{request_id}"), RequestStatus, "status")
        if answer.request_id != request_id:
            raise FactoryProtocolError(f"status: asked for {request_id!r}, got {answer.request_id!r}")
        return answer

    def cancel(self, request_id: str) -> RequestStatus:
        """Cancel a queued or running request; return its status."""
        answer = self._json(self._send("DELETE", f"/v1/requests/{request_id}"), RequestStatus, "cancel")
        if answer.request_id != request_id:
            raise FactoryProtocolError(f"cancel: asked for {request_id!r}, got {answer.request_id!r}")
        return answer

    def pack_list(self, request_id: str) -> PackList:
        """Return the finished request's pack listing and gate report."""
        answer = self._json(self._send("GET", f"/v1/requests/{request_id}/packs"), PackList, "pack list")
        if answer.request_id != request_id:
            raise FactoryProtocolError(f"pack list: asked for {request_id!r}, got {answer.request_id!r}")
        return answer

    def download(self, pack_id: str) -> bytes:
        """Download one pack archive, refusing it past the compressed-size limit."""
        limit = self.limits.max_compressed_bytes
        attempt = 0
        while True:
            try:
                with self._http.stream("GET", f"/v1/packs/{pack_id}.tar.gz") as response:
                    if response.status_code in RETRY_STATUSES and attempt < self.retries:
                        attempt += 1
                        time.sleep(self.backoff * 2 ** (attempt - 1))
                        continue
                    if response.status_code != 200:
                        response.read()
                        raise FactoryError(f"download of pack {pack_id[:16]}: the factory answered "
                                           f"{response.status_code}: {_detail(response)}")
                    declared = response.headers.get("content-length")
                    if declared is not None and declared.isdigit() and int(declared) > limit:
                        raise PackRefused(pack_id, f"archive is {declared} bytes, over the limit of {limit}")
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > limit:
                            raise PackRefused(pack_id, f"archive exceeds the limit of {limit} bytes")
                        chunks.append(chunk)
                    return b"".join(chunks)
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    raise FactoryError(f"download of pack {pack_id[:16]} failed: {redact_text(str(exc))}") from exc
                attempt += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))

    def packs(self, request_id: str) -> list[Pack]:
        """Download and validate every pack of a finished request; refuse all if one fails.

        Raises:
            PackRefused: A pack failed a check (hash, archive safety, limits, validation, domain, task count).
        """
        return self._packs(self.pack_list(request_id))

    def _packs(self, listing: PackList) -> list[Pack]:
        packs = []
        for info in listing.packs:
            pack = load_archive(self.download(info.id), pack_id=info.id, sha256=info.sha256, limits=self.limits,
                                source=self.shown_url)
            if pack.manifest.domain != info.domain:
                raise PackRefused(info.id, f"domain {pack.manifest.domain!r} differs from the listed {info.domain!r}")
            if len(pack.tasks) != info.tasks:
                raise PackRefused(info.id, f"{len(pack.tasks)} tasks, the listing says {info.tasks}")
            packs.append(pack)
        return packs

    def gate_report(self, request_id: str) -> GateReport:
        """Return the quality gate's report of a finished request."""
        return self.pack_list(request_id).gate_report

    def wait(self, request_id: str, timeout: float) -> RequestStatus:
        """Poll until the request is done, failed or cancelled, or ``timeout`` seconds pass; return the last status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(request_id)
            if status.state in ("done", "failed", "cancelled") or time.monotonic() >= deadline:
                return status
            time.sleep(self.poll_interval)

    def request(self, request: VariantRequest, timeout: float = 600.0) -> FactoryResult:
        """Submit, poll until done, and return the validated packs and the gate report.

        Raises:
            RequestFailed: The request failed or did not finish in time.
            PackRefused: A pack failed validation (no pack is returned then).
        """
        request_id = self.submit(request)
        status = self.wait(request_id, timeout)
        if status.state in ("failed", "cancelled"):
            raise RequestFailed(f"request {request_id} {status.state}: {status.message}")
        if status.state != "done":
            self.cancel(request_id)  # nobody waits for it any more: free the factory
            raise RequestFailed(f"request {request_id} did not finish within {timeout:g} s (state {status.state}); "
                                "it was cancelled")
        listing = self.pack_list(request_id)
        return FactoryResult(request_id=request_id, packs=self._packs(listing), gate_report=listing.gate_report)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and ("detail" in body or "error" in body):
        return str(body.get("detail", body.get("error")))[:500]
    return str(body)[:200]


def make_factory_client(url: str | None = None, *, token: SecretStr | None = None, **options: Any) -> FactoryClient:
    """Return the factory to use: ``HttpFactoryClient(url)`` when a URL is set, else the local factory.

    Args:
        url: The remote factory's URL, or ``None``/empty for the embedded ``LocalFactory``.
        token: Bearer token of the remote factory (ignored by the local one).
        **options: Passed to the chosen class.
    """
    if url:
        return HttpFactoryClient(url, token=token, **options)
    from factory_client.local import LocalFactory

    return LocalFactory(**options)

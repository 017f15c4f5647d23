"""The factory served over HTTP: the local factory behind the ``/v1`` protocol routes.

``create_app(factory)`` builds the FastAPI app; ``BackgroundServer`` runs it with uvicorn
on a thread (tests, the demo); ``gymloop factory serve`` runs it in the foreground.

Every route sits behind the same guard as the gym servers (:func:`arena.serve.http_guard.guard`): Host and
Origin checks, a request size limit (:data:`MAX_REQUEST_BYTES`), the bearer token when one is set. A request
can be cancelled (``DELETE /v1/requests/{id}``); a full queue answers 429 with ``Retry-After``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import SecretStr

from arena.core.http_auth import BearerTokenMiddleware
from arena.serve.http_guard import BodyLimit, BrowserGuard, allowed_hosts
from factory_client.errors import FactoryBusy, FactoryError, FactoryProtocolError, IdempotencyConflict, RequestFailed
from factory_client.local import GENERATOR_VERSION, LocalFactory
from factory_client.protocol import (
    PROTOCOL_VERSION,
    ErrorBody,
    PackList,
    RequestStatus,
    ServiceInfo,
    SubmitResponse,
    VariantRequest,
)

MAX_REQUEST_BYTES = 1024 * 1024
"""Largest request body the factory accepts (a variant request is a few kilobytes)."""

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Unknown protocol version, domain or baseline model"},
    404: {"model": ErrorBody, "description": "Unknown request or pack"},
    409: {"model": ErrorBody, "description": "Idempotency conflict, or the request is not done"},
    429: {"model": ErrorBody, "description": "The queue is full: retry after Retry-After seconds"},
}


def create_app(factory: LocalFactory | None = None, *, token: SecretStr | None = None, host: str = "127.0.0.1",
               extra_hosts: Sequence[str] = (), max_bytes: int = MAX_REQUEST_BYTES) -> FastAPI:
    """Build the factory's HTTP app around ``factory`` (a new ``LocalFactory`` by default).

    Args:
        factory: The factory served.
        token: Bearer token every request must carry (``None``: no check, for loopback only).
        host: The address the server binds (its Host names are allowed).
        extra_hosts: Further Host names to answer to (e.g. behind a reverse proxy).
        max_bytes: Largest request body.
    """
    local = factory or LocalFactory()
    app = FastAPI(
        title="gymloop factory",
        version=f"{PROTOCOL_VERSION}.{GENERATOR_VERSION}",
        description="Generates environment variants that stress diagnosed weaknesses. Protocol version "
        f"{PROTOCOL_VERSION}: submit a VariantRequest, poll its status, list and download its packs (tar.gz, "
        "sha256 in the listing).",
    )
    app.state.factory = local
    if token is not None:
        app.add_middleware(BearerTokenMiddleware, token=token)
    app.add_middleware(BodyLimit, max_bytes=max_bytes)
    app.add_middleware(BrowserGuard, hosts=allowed_hosts(host, extra_hosts))  # added last: runs first

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        field = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse(status_code=422, content={"detail": f"{field}: {first.get('msg', '')}"})

    @app.get("/v1/info", response_model=ServiceInfo)
    def info() -> ServiceInfo:
        """Describe the factory: protocol version, generator and domains."""
        return local.info()

    @app.post("/v1/requests", response_model=SubmitResponse, status_code=202, responses=_ERRORS)
    def submit(body: VariantRequest) -> Any:
        """Submit a variant request; the same idempotency key returns the same request id."""
        try:
            return local.submit_request(body)
        except IdempotencyConflict as exc:
            return JSONResponse(status_code=409, content={"detail": f"idempotency conflict: {exc}"})
        except FactoryBusy as exc:
            return JSONResponse(status_code=429, content={"detail": str(exc)}, headers={"Retry-After": "5"})
        except (FactoryProtocolError, FactoryError) as exc:
            return JSONResponse(status_code=400, content={"detail": str(exc)})

    @app.get("/v1/requests/{request_id}", response_model=RequestStatus, responses=_ERRORS)
    def status(request_id: str) -> Any:
        """Return the request's state, progress and pack ids."""
        try:
            return local.status(request_id)
        except KeyError as exc:
            return JSONResponse(status_code=404, content={"detail": str(exc.args[0])})

    @app.delete("/v1/requests/{request_id}", response_model=RequestStatus, responses=_ERRORS)
    def cancel(request_id: str) -> Any:
        """Cancel a queued or running request (a running one stops before its next task); return its status."""
        try:
            return local.cancel(request_id)
        except KeyError as exc:
            return JSONResponse(status_code=404, content={"detail": str(exc.args[0])})

    @app.get("/v1/requests/{request_id}/packs", response_model=PackList, responses=_ERRORS)
    def packs(request_id: str) -> Any:
        """List a finished request's packs (id, archive sha256, size) and the gate report."""
        try:
            return local.pack_list(request_id)
        except KeyError as exc:
            return JSONResponse(status_code=404, content={"detail": str(exc.args[0])})
        except RequestFailed as exc:
            return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.get(
        "/v1/packs/{pack_id}.tar.gz",
        response_class=Response,
        responses={**_ERRORS, 200: {"content": {"application/gzip": {}}, "description": "The pack archive"}},
    )
    def archive(pack_id: str) -> Response:
        """Download a pack as tar.gz."""
        try:
            data = local.archive(pack_id)
        except KeyError as exc:
            return JSONResponse(status_code=404, content={"detail": str(exc.args[0])})
        return Response(content=data, media_type="application/gzip")

    return app


def openapi_schema() -> dict[str, Any]:
    """Return the factory's OpenAPI schema (what docs/factory-openapi.json publishes)."""
    schema: dict[str, Any] = create_app(LocalFactory()).openapi()
    return schema


class BackgroundServer:
    """Run an app with uvicorn on a background thread.

    Args:
        app: The ASGI app.
        host: Interface to bind (loopback by default).
        port: Port (0 picks a free one).
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="gymloop-factory-http", daemon=True)
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        """Start serving and wait until the socket listens.

        Raises:
            RuntimeError: The server did not start within ``timeout`` seconds.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"factory server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        sockets = [s for server in self._server.servers for s in server.sockets]
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

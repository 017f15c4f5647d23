"""Run a gym image as a container serving MCP on a loopback port, and tear it down after.

Containers use host networking and their server binds 127.0.0.1, so the gym is reachable from this machine
only. A pack given at run time is written to a temporary folder and mounted read-only; the folder and the
container are removed whatever happens.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

import docker
import httpx
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from pydantic import SecretStr

from arena.core.http_auth import bearer_headers
from arena.core.pack import Pack, write_pack
from arena.core.redact import register_secrets
from arena.serve.runner import HEALTH_PATH, MCP_PATH, check_port
from arena.serve.session import ServeError

_PACK_MOUNT = "/opt/gymloop/run-pack"


def free_loopback_port() -> int:
    """A port nothing listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class GymContainer:
    """A gym server in a container, as a context manager that always removes it.

    Args:
        client: Docker client.
        image: A gym image (``gymloop gyms image``).
        target: A built-in domain to serve instead of the image's own gym.
        pack: A pack to serve instead (mounted read-only).
        port: Loopback port (default: a free one).
        token: Bearer token the server requires (passed in the container's environment, never logged).
        operator_token: The server's operator token (default: a fresh random one).
        start_timeout_s: How long the server may take to answer its health check.

    Attributes:
        operator_token: The operator token of this container's server (never logged): it reads each episode's
            judged details.
    """

    def __init__(self, client: docker.DockerClient, image: str, *, target: str | None = None,
                 pack: Pack | None = None, port: int | None = None, token: SecretStr | None = None,
                 operator_token: SecretStr | None = None, start_timeout_s: float = 120.0) -> None:
        self.client = client
        self.image = image
        self.target = target
        self.pack = pack
        self.port = port or free_loopback_port()
        self.token = token
        self.operator_token = operator_token or SecretStr(secrets.token_urlsafe(32))
        register_secrets([self.operator_token.get_secret_value()])
        self.start_timeout_s = start_timeout_s
        self.container: Any = None
        self.name = f"gymloop-gym-{uuid.uuid4().hex[:12]}"
        self._folder: Path | None = None

    @property
    def url(self) -> str:
        """The server's base URL (``/mcp`` is the MCP endpoint)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint."""
        return self.url + MCP_PATH

    def __enter__(self) -> GymContainer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start the container and wait until its server answers.

        Raises:
            ServeError: Missing image, port in use, the daemon refused, or the server died or never answered.
        """
        check_port("127.0.0.1", self.port)
        try:
            config = self.client.images.get(self.image).attrs["Config"]
        except ImageNotFound as exc:
            raise ServeError(f"image {self.image!r} is not on the Docker daemon; build it with `gymloop gyms image`") \
                from exc
        command: list[str] = []
        volumes: dict[str, dict[str, str]] = {}
        if self.pack is not None:
            self._folder = Path(tempfile.mkdtemp(prefix="gymloop-run-pack-"))
            write_pack(self.pack, self._folder / "pack")
            volumes[str(self._folder / "pack")] = {"bind": _PACK_MOUNT, "mode": "ro"}
            command = [_PACK_MOUNT]
        elif self.target is not None:
            command = [self.target]
        if command:
            command += ["--transport", "http", "--host", "127.0.0.1", "--port", str(self.port)]
        else:
            command = self._image_command(list(config.get("Cmd") or []))
        environment = {"GYMLOOP_SERVE_OPERATOR_TOKEN": self.operator_token.get_secret_value()}
        if self.token:
            environment["GYMLOOP_SERVE_TOKEN"] = self.token.get_secret_value()
        try:
            self.container = self.client.containers.run(
                self.image, command=command, detach=True, network_mode="host", volumes=volumes,
                environment=environment, name=self.name, labels={"org.gymloop": "gym"},
            )
        except (APIError, DockerException) as exc:
            raise ServeError(f"the Docker daemon refused to start {self.image}: {str(exc).splitlines()[0]}") from exc
        self._wait_healthy()

    def _image_command(self, cmd: list[str]) -> list[str]:
        if "--port" in cmd:
            cmd[cmd.index("--port") + 1] = str(self.port)
        return cmd

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        with httpx.Client(headers=bearer_headers(self.token), timeout=2, verify=False) as http:
            while time.monotonic() < deadline:
                self.container.reload()
                if self.container.status in ("exited", "dead"):
                    raise ServeError(f"the gym container exited before serving: {self.last_log_line()}")
                try:
                    if http.get(self.url + HEALTH_PATH).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        raise ServeError(f"the gym container did not answer on port {self.port} within {self.start_timeout_s:g} s")

    def alive(self) -> bool:
        """Whether the container is still running."""
        if self.container is None:
            return False
        try:
            self.container.reload()
        except NotFound:
            return False
        return bool(self.container.status == "running")

    def last_log_line(self) -> str:
        """The last line the server wrote (its one-line error when it refused to start)."""
        try:
            lines = self.container.logs(tail=5).decode("utf-8", "replace").strip().splitlines()
        except (APIError, NotFound):
            return "no log"
        return lines[-1] if lines else "no log"

    def stop(self) -> None:
        """Remove the container and the mounted pack folder (safe to call twice)."""
        try:  # by name: a create that timed out on the client side may still have made the container
            (self.container or self.client.containers.get(self.name)).remove(force=True)
        except (NotFound, APIError, DockerException):
            pass
        self.container = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

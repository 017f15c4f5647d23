"""``gymloop gyms serve`` and ``gymloop gyms image``: a gym as an MCP/OpenEnv server, locally or in Docker."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import SecretStr, ValidationError
from rich.console import Console

from arena.core.domains import available_domains
from flows.cli_output import CliError

if TYPE_CHECKING:
    from arena.core.pack import Pack

console = Console(stderr=True)

Target = Annotated[str, typer.Argument(metavar="DOMAIN|PACK_DIR", help="A gym (built-in or yours) or a pack folder.")]


def _fail(message: str) -> CliError:
    return CliError(message)


def _pack_of(target: str) -> tuple[str, Pack | None]:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.serve import resolve_pack

    pack = resolve_pack(target)

    return (target, None) if target in available_domains() else (pack.manifest.domain, pack)


def serve(
    target: Target,
    transport: Annotated[str, typer.Option(help="stdio (for one MCP client) or http (MCP at /mcp).")] = "stdio",
    host: Annotated[str, typer.Option(help="Address to bind (http); beyond loopback needs GYMLOOP_SERVE_TOKEN.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (http).")] = 8000,
    openenv: Annotated[bool, typer.Option("--openenv", help="Also serve the OpenEnv surface at /openenv.")] = False,
    max_sessions: Annotated[int, typer.Option(help="Episodes open at once, over all clients.")] = 64,
    docker: Annotated[bool, typer.Option("--docker", help="Run the gym's image in a container instead.")] = False,
    image: Annotated[str | None, typer.Option(help="Image for --docker (default: the gym's built image).")] = None,
) -> None:
    """Serve a gym to any MCP client (and OpenEnv, with --openenv); each episode gets its own fresh world.

    Agents get the train split's tasks: the prompt, persona, policy and tools, and at the end the score, passed and
    per-check pass/fail; held-out tasks and the judged details go only to an operator presenting
    ``serve_operator_token``. Each client may hold
    ``serve_client_episodes`` open episodes; one idle for ``serve_idle_timeout_s`` is dropped.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.http_auth import ServeAuthError, check_bind
    from arena.serve import GymService, ServeError, ServeLimits, resolve_pack, serve_http, serve_stdio
    from flows.settings import cli_settings

    settings = cli_settings()
    try:
        if transport not in ("stdio", "http"):
            raise ServeError(f"--transport {transport!r} is not one of stdio, http")
        if docker:
            _serve_docker(target, image, port, settings.serving.serve_token, settings.serving.serve_operator_token)
            return
        try:
            limits = ServeLimits(max_episodes=max_sessions, client_episodes=settings.serving.serve_client_episodes,
                                 idle_timeout_s=settings.serving.serve_idle_timeout_s)
        except ValidationError as exc:
            raise ServeError(f"--max-sessions {max_sessions}: {exc.errors()[0]['msg']}") from None
        service = GymService(resolve_pack(target), limits=limits, operator_token=settings.serving.serve_operator_token)
        if transport == "stdio":
            serve_stdio(service)
            return
        check_bind(host, settings.serving.serve_token)
        console.print(serve_banner(service.name, host, port, openenv, settings.serving.serve_token is not None,
                                   settings.serving.serve_operator_token is not None), highlight=False, soft_wrap=True)
        serve_http(service, host=host, port=port, token=settings.serving.serve_token, openenv=openenv,
                   allowed_hosts=settings.serving.serve_allowed_hosts)
    except (ServeError, ServeAuthError) as exc:
        raise _fail(str(exc)) from exc


def serve_banner(name: str, host: str, port: int, openenv: bool, token: bool, operator: bool) -> str:
    """The lines ``gyms serve --transport http`` prints: where, and what a client must send."""
    where = f"serving {name}: MCP at http://{host}:{port}/mcp" + (
        f", OpenEnv at http://{host}:{port}/openenv" if openenv else "")
    auth = ("auth: every request needs 'Authorization: Bearer <token>' (the GYMLOOP_SERVE_TOKEN setting)" if token
            else "auth: no token (loopback only); set GYMLOOP_SERVE_TOKEN to require 'Authorization: Bearer <token>'")
    details = ("verdict details: only to requests carrying the operator token (GYMLOOP_SERVE_OPERATOR_TOKEN)"
               if operator else "verdict details: served to nobody (no operator token is set)")
    return "\n".join([where, auth, details])


def _serve_docker(target: str, image: str | None, port: int, token: object, operator: object) -> None:

    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.serve import ServeError
    from arena.serve.docker_container import GymContainer
    from arena.serve.docker_image import docker_client, image_tag

    name, pack = _pack_of(target)
    tag = image or image_tag(name, pack)
    client = docker_client()
    secret = token if isinstance(token, SecretStr) else None
    operator_token = operator if isinstance(operator, SecretStr) else None
    with GymContainer(client, tag, target=None if pack else name, pack=pack, port=port, token=secret,
                      operator_token=operator_token) as container:
        typer.echo(container.mcp_url)
        try:
            while container.alive():
                time.sleep(1.0)
        except KeyboardInterrupt:
            return
        raise ServeError(f"the gym container stopped: {container.last_log_line()}")


def image(
    target: Target,
    base: Annotated[str, typer.Option(help="Base image with Python 3.11; 'host' builds one from this machine's "
                                           "Python (for hosts that cannot pull).")] = "python:3.11-slim",
    tag: Annotated[str | None, typer.Option(help="Image tag (default: gymloop-gym-<domain>[-<pack id>]).")] = None,
) -> None:
    """Build the Docker image of a gym server (entry point: python -m arena.serve)."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.serve import ServeError
    from arena.serve.docker_image import build_gym_image, docker_client, import_host_python

    try:
        name, pack = _pack_of(target)
        client = docker_client()
        if base == "host":
            base = import_host_python(client)
        built = build_gym_image(client, name, pack, base=base, tag=tag)
    except ServeError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(built)

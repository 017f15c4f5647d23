"""``gymloop factory``: serve the local factory over HTTP, export its OpenAPI schema, request variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from flows.cli_group import GymloopGroup
from flows.cli_output import CliError

app = typer.Typer(cls=GymloopGroup, help="The environment factory: serve it, export its schema, request variants.",
                  no_args_is_help=True)
console = Console()


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
) -> None:
    """Serve the embedded local factory over HTTP (routes under /v1).

    Requests must carry ``Authorization: Bearer <serve_token>`` when the ``serve_token`` setting
    (``GYMLOOP_SERVE_TOKEN``) is set; serving beyond loopback without one is refused. Host and Origin
    headers must name this server (``serve_allowed_hosts`` adds names); bodies over 1 MiB are refused.
    ``baseline_model`` may name only built-in policies, files of the models folder or registry models.
    """
    import uvicorn

    from arena.core.http_auth import ServeAuthError, check_bind
    from factory_client import LocalFactory, create_app
    from flows.factory_baselines import baseline_lookup
    from flows.settings import cli_settings

    settings = cli_settings()
    token = settings.serve_token
    try:
        check_bind(host, token)
    except ServeAuthError as exc:
        raise CliError(str(exc)) from exc
    auth = ("every request needs 'Authorization: Bearer <token>' (the GYMLOOP_SERVE_TOKEN setting)" if token
            else "no token (loopback only); set GYMLOOP_SERVE_TOKEN to require 'Authorization: Bearer <token>'")
    console.print(f"gymloop factory on http://{host}:{port}/v1\nauth: {auth}", highlight=False, soft_wrap=True)
    factory = LocalFactory(baselines=baseline_lookup(settings))
    app_ = create_app(factory, token=token, host=host, extra_hosts=settings.serve_allowed_hosts)
    uvicorn.run(app_, host=host, port=port, log_level="info")


@app.command("openapi")
def openapi(
    out: Annotated[Path, typer.Option(help="Where to write the schema.")] = Path("docs/factory-openapi.json"),
) -> None:
    """Write the factory protocol's OpenAPI schema."""
    from factory_client import openapi_schema

    out.write_text(json.dumps(openapi_schema(), indent=2, sort_keys=True) + "\n")
    console.print(f"wrote {out}")


@app.command("request")
def request(
    domain: Annotated[str, typer.Argument(help="Built-in domain to vary.")],
    weakness: Annotated[list[str], typer.Option(help="Weakness kind to target (repeatable).")] = [],  # noqa: B006
    focus_tag: Annotated[list[str], typer.Option(help="Task tag the targets focus on (repeatable).")] = [],  # noqa: B006
    variants: Annotated[int, typer.Option(help="Number of variants.")] = 2,
    tasks: Annotated[int, typer.Option(help="Tasks per variant.")] = 5,
    complexity: Annotated[int, typer.Option(help="Complexity level 1-5.")] = 3,
    seed: Annotated[int, typer.Option(help="Generation seed.")] = 0,
    baseline: Annotated[str, typer.Option(help="Baseline model for the gate.")] = "reference",
    url: Annotated[str | None, typer.Option(
        help="Remote factory URL (default: the factory_url setting, else the local factory); "
        "its token is the factory_token setting.")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder to write the accepted packs into.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the request.")] = 600.0,
) -> None:
    """Request targeted variants and print the gate's report."""
    from arena.core.pack import write_pack
    from factory_client import FactoryError, VariantRequest, WeaknessTarget, make_factory_client

    options = {"--variants": variants, "--tasks": tasks, "--complexity": complexity, "--seed": seed,
               "--weakness": weakness, "--focus-tag": focus_tag, "DOMAIN": domain, "--baseline": baseline}
    try:
        targets = [WeaknessTarget(kind=k, focus_tags=list(focus_tag)) for k in weakness]
        req = VariantRequest(domain=domain, targets=targets, variants=variants, tasks_per_variant=tasks,
                             complexity=complexity, seed=seed, baseline_model=baseline)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        option = {"tasks_per_variant": "--tasks", "targets": "--weakness", "baseline_model": "--baseline",
                  "kind": "--weakness", "focus_tags": "--focus-tag"}.get(field, f"--{field}".replace("_", "-"))
        shown = options.get(option, err.get("input"))
        raise CliError(f"{option} {shown!r}: {err['msg']}", prefix="bad option") from None
    from flows.settings import cli_settings

    settings = cli_settings()
    from flows.factory_baselines import baseline_lookup

    options = {} if (url or settings.factory_url) else {"baselines": baseline_lookup(settings)}
    try:
        client = make_factory_client(url or settings.factory_url, token=settings.factory_token, **options)
    except ValueError as exc:
        console.print(f"[red]bad option[/red] --url: {exc}")
        raise typer.Exit(2) from None
    try:
        result = client.request(req, timeout=timeout)
    except FactoryError as exc:
        raise CliError(str(exc), exit_code=1, prefix="factory request failed") from exc
    report = result.gate_report
    console.print(f"request {result.request_id}: {len(result.packs)} pack(s), "
                  f"{report.accepted}/{report.candidates} candidate tasks accepted")
    for name, count in report.gates.items():
        console.print(f"  {name:22s} {count.accepted}/{count.checked}")
    for pack in result.packs:
        console.print(f"  pack {pack.id[:16]}  {len(pack.tasks)} tasks")
        if out is not None:
            write_pack(pack, out / pack.id)

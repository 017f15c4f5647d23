"""``gymloop factory``: serve the local factory over HTTP, export its OpenAPI schema, request variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from flows.cli_group import GymloopGroup
from flows.cli_output import CliError, make_console, print_json, print_line

if TYPE_CHECKING:
    from factory_client import FactoryResult, VariantRequest

app = typer.Typer(cls=GymloopGroup, help="The environment factory: serve it, export its schema, request variants.",
                  no_args_is_help=True)
console = make_console()


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
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    import uvicorn

    from arena.core.http_auth import ServeAuthError, check_bind
    from factory_client import LocalFactory, create_app
    from flows.factory_baselines import baseline_lookup
    from flows.settings import cli_settings

    settings = cli_settings()
    token = settings.serving.serve_token
    try:
        check_bind(host, token)
    except ServeAuthError as exc:
        raise CliError(str(exc)) from exc
    auth = ("every request needs 'Authorization: Bearer <token>' (the GYMLOOP_SERVE_TOKEN setting)" if token
            else "no token (loopback only); set GYMLOOP_SERVE_TOKEN to require 'Authorization: Bearer <token>'")
    console.print(f"gymloop factory on http://{host}:{port}/v1\nauth: {auth}", highlight=False, soft_wrap=True)
    factory = LocalFactory(baselines=baseline_lookup(settings, served=True))
    app_ = create_app(factory, token=token, host=host, extra_hosts=settings.serving.serve_allowed_hosts)
    uvicorn.run(app_, host=host, port=port, log_level="info")


@app.command("openapi")
def openapi(
    out: Annotated[Path, typer.Option(help="Where to write the schema.")] = Path("docs/factory-openapi.json"),
) -> None:
    """Write the factory protocol's OpenAPI schema."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from factory_client import openapi_schema

    out.write_text(json.dumps(openapi_schema(), indent=2, sort_keys=True) + "\n")
    console.print(f"wrote {out}")


@app.command("request")
def request(
    domain: Annotated[str, typer.Argument(metavar="GYM", help="The gym to vary (built-in or your own).")],
    weakness: Annotated[list[str], typer.Option(
        help="Weakness kind to target (repeatable): its knobs and focus tags are set as a round sets them "
        "(arena.authoring.WEAKNESS_KNOBS).")] = [],  # noqa: B006
    focus_tag: Annotated[list[str], typer.Option(
        help="Task tag the targets focus on (repeatable; default: each weakness kind's own).")] = [],  # noqa: B006
    variants: Annotated[int, typer.Option(help="Number of variants.")] = 2,
    tasks: Annotated[int, typer.Option(help="Tasks per variant.")] = 5,
    complexity: Annotated[int, typer.Option(help="Complexity level 1-5.")] = 3,
    seed: Annotated[int, typer.Option(help="Generation seed.")] = 0,
    baseline: Annotated[str, typer.Option(help=(
        "Baseline model for the gate, any name gymloop prints or --model takes: 'reference', 'reference-expert', "
        "'reference-failure:<kind>', a registered version (reference@v3:<hash>), an LLM, transformers:<folder>."))
    ] = "reference",
    gate_k: Annotated[int, typer.Option(help="Baseline attempts per candidate task.")] = 5,
    band_min: Annotated[int, typer.Option(help="Fewest baseline passes a candidate may have.")] = 2,
    band_max: Annotated[int, typer.Option(help="Most baseline passes a candidate may have.")] = 4,
    url: Annotated[str | None, typer.Option(
        help="Remote factory URL (default: the factory_url setting, else the local factory); "
        "its token is the factory_token setting.")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder to write the accepted packs into.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the request.")] = 600.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")] = False,
) -> None:
    """Request variants of a gym aimed at weaknesses; print the packs and every rejected candidate with its reason."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.pack import write_pack
    from factory_client import FactoryError, GateConfig, VariantRequest, make_factory_client, target_for_kind

    options = {"--variants": variants, "--tasks": tasks, "--complexity": complexity, "--seed": seed,
               "--weakness": weakness, "--focus-tag": focus_tag, "GYM": domain, "--baseline": baseline,
               "--gate-k": gate_k, "--band-min": band_min, "--band-max": band_max}
    try:
        targets = [target_for_kind(k, focus_tag) for k in weakness]
        req = VariantRequest(domain=domain, targets=targets, variants=variants, tasks_per_variant=tasks,
                             complexity=complexity, seed=seed, baseline_model=baseline,
                             gate=GateConfig(k=gate_k, band_min=band_min, band_max=band_max))
    except ValueError as exc:
        raise CliError(_option_error(exc, options), prefix="bad option") from None
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.factory_baselines import baseline_lookup
    from flows.settings import cli_settings, secret_overrides

    if secret_overrides({"model": baseline}):
        raise CliError("--baseline holds a password or token in its endpoint (a request keeps its baseline's name): "
                       "set api_base (GYMLOOP_API_BASE) to the URL and give the model as gymloop prints it, masked",
                       prefix="bad option")
    settings = cli_settings()
    extra = {} if (url or settings.gate.factory_url) else {"baselines": baseline_lookup(settings, served=False)}
    try:
        client = make_factory_client(url or settings.gate.factory_url, token=settings.gate.factory_token, **extra)
    except ValueError as exc:
        raise CliError(f"--url: {exc}", prefix="bad option") from None
    try:
        result = client.request(req, timeout=timeout)
    except FactoryError as exc:
        raise CliError(str(exc), exit_code=1, prefix="factory request failed") from exc
    if out is not None:
        for pack in result.packs:
            write_pack(pack, out / pack.id)
    if as_json:
        print_json(_result_json(req, result, out))
        return
    _print_result(req, result, out)


def _option_error(exc: ValueError, options: dict[str, object]) -> str:
    """The bad option and why, from a validation error of the request (or of a weakness kind)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    names = {"tasks_per_variant": "--tasks", "targets": "--weakness", "baseline_model": "--baseline",
             "kind": "--weakness", "focus_tags": "--focus-tag", "domain": "GYM"}
    option = names.get(field, f"--{field}".replace("_", "-"))
    if field == "gate":
        option, shown = "--gate-k/--band-min/--band-max", f"{options['--gate-k']}/{options['--band-min']}/" \
            f"{options['--band-max']}"
        return f"{option} {shown}: {err['msg']}"
    return f"{option} {options.get(option, err.get('input'))!r}: {err['msg']}"


def _result_json(req: VariantRequest, result: FactoryResult, out: Path | None) -> dict[str, Any]:
    report = result.gate_report
    return {
        "request_id": result.request_id,
        "domain": req.domain,
        "targets": [t.model_dump(mode="json", include={"kind", "focus_tags", "knobs"}) for t in req.targets],
        "packs": [{"id": p.id, "tasks": len(p.tasks), "knobs": p.manifest.knobs,
                   "variant": p.manifest.provenance.get("variant"),
                   "path": str(out / p.id) if out is not None else None} for p in result.packs],
        "gate_report": report.model_dump(mode="json"),
        "why_empty": _why_empty(result) if not result.packs else None,
    }


def _why_empty(result: FactoryResult) -> str:
    """Why a request produced no pack, from its dropped variants and rejections."""
    report = result.gate_report
    reasons = [f"variant {d.variant}: {d.reason}" for d in report.dropped_variants]
    gates = {name: count.rejected for name, count in report.gates.items() if count.rejected}
    if gates:
        reasons.append("rejected by " + ", ".join(f"{name} ({n})" for name, n in gates.items()))
    return "; ".join(reasons) or "no candidate task was generated"


def _print_result(req: VariantRequest, result: FactoryResult, out: Path | None) -> None:
    report = result.gate_report
    print_line(console, f"request {result.request_id}: {len(result.packs)} pack(s), "
                        f"{report.accepted}/{report.candidates} candidate tasks accepted")
    for target in req.targets:
        knobs = ", ".join(f"{k}={v}" for k, v in sorted(target.knobs.items())) or "none"
        print_line(console, f"  aims at {target.kind}: knobs {knobs}; focus tags {', '.join(target.focus_tags) or '-'}")
    for name, count in report.gates.items():
        print_line(console, f"  {name:22s} {count.accepted}/{count.checked}")
    for pack in result.packs:
        knobs = ", ".join(f"{k}={v}" for k, v in sorted(pack.manifest.knobs.items()))
        where = f"  -> {out / pack.id}" if out is not None else ""
        print_line(console, f"  pack {pack.id[:16]}  {len(pack.tasks)} tasks  knobs {knobs}{where}")
    for dropped in report.dropped_variants:
        print_line(console, f"  dropped variant {dropped.variant}: {dropped.reason}")
    for rejection in report.rejections:
        print_line(console, f"  rejected variant {rejection.variant} {rejection.task_id} at {rejection.gate}: "
                            f"{rejection.reason}")
    if not result.packs:
        print_line(console, f"no pack: {_why_empty(result)}")

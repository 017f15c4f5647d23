"""``gymloop gyms``: list the built-in gyms, check their conformance, show a pack."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows import cli_gyms_serve

if TYPE_CHECKING:
    from arena.core.pack import Pack

app = typer.Typer(help="Built-in gyms: list them, check them, show a pack.", no_args_is_help=True)
console = Console()


def _load(target: str) -> Pack:
    from arena.core.domains import available_domains
    from arena.core.pack import build_pack, read_pack

    path = Path(target)
    if path.is_dir():
        return read_pack(path)
    if target in available_domains():
        return build_pack(target, seed=0)
    raise typer.BadParameter(
        f"{target!r} is neither a pack folder nor a built-in domain ({', '.join(available_domains())})"
    )


def _table_counts(pack: Pack) -> list[tuple[str, int]]:
    db = sqlite3.connect(":memory:")
    db.deserialize(pack.state_db)
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    counts = [(n, int(db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0])) for n in names]
    db.close()
    return counts


@app.command("list")
def list_gyms() -> None:
    """List the built-in gyms with their tools, tables and tasks."""
    from arena.core.domains import available_domains, get_domain
    from arena.core.pack import build_pack

    table = Table(title="Built-in gyms")
    for col in ("domain", "description", "tools", "tables", "entities", "train", "heldout"):
        table.add_column(col)
    for name in available_domains():
        pack = build_pack(name, seed=0)
        counts = _table_counts(pack)
        splits = Counter(t.split for t in pack.tasks)
        table.add_row(
            name, get_domain(name).description, str(len(pack.tools)), str(len(counts)),
            str(sum(c for _, c in counts)), str(splits["train"]), str(splits["heldout"]),
        )
    console.print(table)


@app.command("check")
def check(
    domain: Annotated[
        str | None, typer.Argument(help="A built-in domain or a pack folder; default: every gym.")
    ] = None,
) -> None:
    """Run the conformance checker over every task of one gym (or all of them), and the served-verdict oracle."""
    from arena.checks.conformance import check_pack
    from arena.core.domains import available_domains
    from arena.core.pack import PackError
    from arena.serve.oracle import audit_served

    targets = [domain] if domain else available_domains()
    failed = 0
    summary = Table(title="Conformance")
    for col in ("pack", "domain", "tasks", "checks", "failures"):
        summary.add_column(col)
    kinds = Table(title="Weakness kinds the factory can target")
    for col in ("domain", "targetable", "not targetable (why)"):
        kinds.add_column(col)
    for target in targets:
        try:
            pack = _load(target)
        except PackError as exc:
            console.print(f"[red]refused:[/red] {exc}")
            raise typer.Exit(2) from exc
        with console.status(f"checking {pack.manifest.domain} ({len(pack.tasks)} tasks)"):
            report = check_pack(pack)
            leaked = audit_served(pack)
        summary.add_row(pack.id[:12], report.domain, str(report.tasks), str(len(report.results) + report.tasks),
                        str(len(report.failures) + len(leaked)))
        for failure in report.failures[:50]:
            console.print(f"[red]FAIL[/red] {report.domain}/{failure.task_id} {failure.check}: {failure.detail}")
        for task_id in leaked[:50]:
            console.print(f"[red]FAIL[/red] {report.domain}/{task_id} served_oracle: a client passed it by replaying "
                          "what served verdicts said")
        failed += len(report.failures) + len(leaked)
        _add_kinds(kinds, pack)
    console.print(summary)
    console.print(kinds)
    if failed:
        console.print(f"[red]{failed} checks failed[/red]")
        raise typer.Exit(1)
    console.print("[green]every check passed[/green]")


def _add_kinds(table: Table, pack: Pack) -> None:
    """Add the pack's gym's row: the weakness kinds its variants can aim at, and why not the others."""
    from arena.authoring.knobs import targetable_kinds
    from arena.core.domains import get_domain

    try:
        domain = get_domain(pack.manifest.domain)
    except KeyError:
        table.add_row(pack.manifest.domain, "-", "no gym of that name is installed")
        return
    kinds = targetable_kinds(domain, {tag for t in pack.tasks for tag in t.tags})
    table.add_row(domain.name, ", ".join(k for k, why in kinds.items() if why is None) or "-",
                  "\n".join(f"{k}: {why}" for k, why in kinds.items() if why is not None) or "-")


@app.command("show")
def show(pack_ref: Annotated[str, typer.Argument(metavar="PACK", help="A pack folder or a built-in domain.")]) -> None:
    """Show a pack: tables, tools, task counts by split and category, faults."""
    from arena.core.pack import PackError

    try:
        pack = _load(pack_ref)
    except PackError as exc:
        console.print(f"[red]refused:[/red] {exc}")
        raise typer.Exit(2) from exc
    m = pack.manifest
    console.print(f"[bold]{m.domain}[/bold] pack {m.id}  seed={m.seed} parent={m.parent or '-'} knobs={m.knobs}")
    tables = Table(title="Tables")
    tables.add_column("table")
    tables.add_column("rows", justify="right")
    for name, count in _table_counts(pack):
        tables.add_row(name, str(count))
    console.print(tables)
    tools = Table(title="Tools")
    for col in ("tool", "mode", "operation", "permission", "irreversible"):
        tools.add_column(col)
    for spec in pack.tools:
        tools.add_row(spec.name, spec.mode, spec.operation, spec.permission or "", "yes" if spec.irreversible else "")
    console.print(tools)
    tasks = Table(title="Tasks by category and split")
    for col in ("category", "train", "heldout"):
        tasks.add_column(col)
    by = Counter((t.category, t.split) for t in pack.tasks)
    for category in sorted({t.category for t in pack.tasks}):
        tasks.add_row(category, str(by[(category, "train")]), str(by[(category, "heldout")]))
    console.print(tasks)
    faults = Table(title="Faults")
    for col in ("fault", "kind", "tool", "on call", "times"):
        faults.add_column(col)
    for fault in pack.faults:
        faults.add_row(fault.id, fault.kind, fault.tool, str(fault.on_call), str(fault.times))
    console.print(faults)


app.command("serve")(cli_gyms_serve.serve)
app.command("image")(cli_gyms_serve.image)

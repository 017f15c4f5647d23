"""``gymloop registry``: apply schema migrations and show what the registry holds.

The database URL comes from ``--url``, else ``GYMLOOP_REGISTRY_URL``, else
SQLite at ``<GYMLOOP_HOME>/registry.db`` (``~/.gymloop`` by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from registry import Registry, RegistryError

app = typer.Typer(help="The lineage registry: upgrade its schema, show its status.", no_args_is_help=True)
console = Console(soft_wrap=True)

UrlOption = Annotated[
    str | None,
    typer.Option("--url", help="SQLAlchemy database URL (default: $GYMLOOP_REGISTRY_URL, else SQLite in the home)."),
]
HomeOption = Annotated[
    Path | None, typer.Option("--home", help="gymloop home folder (default: $GYMLOOP_HOME, else ~/.gymloop).")
]


def _open(url: str | None, home: Path | None, *, auto_upgrade: bool) -> Registry:
    try:
        return Registry(url, home, auto_upgrade=auto_upgrade)
    except RegistryError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(code=1) from exc


@app.command()
def upgrade(url: UrlOption = None, home: HomeOption = None) -> None:
    """Apply pending schema migrations to the registry database (creating it when empty)."""
    with _open(url, home, auto_upgrade=True) as reg:
        before, after = reg.revision_at_open, reg.current_revision
        if before == after:
            console.print(f"registry {reg.display_url} is up to date at revision [bold]{after}[/bold]", highlight=False)
        else:
            console.print(
                f"registry {reg.display_url} upgraded from revision {before or '(empty)'} to [bold]{after}[/bold]",
                highlight=False,
            )


@app.command()
def status(url: UrlOption = None, home: HomeOption = None) -> None:
    """Show the registry's URL, schema revision, pack store and row counts (without migrating)."""
    with _open(url, home, auto_upgrade=False) as reg:
        info = reg.status()
    console.print(f"url:       {info.url}", highlight=False)
    console.print(f"revision:  {info.revision} (newest known: {info.head})", highlight=False)
    console.print(f"pack store: {info.pack_root}", highlight=False)
    table = Table(title="rows")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, count in sorted(info.counts.items()):
        table.add_row(name, str(count))
    console.print(table)

"""``gymloop registry``: apply schema migrations and show what the registry holds.

The database URL comes from ``--url``, else the ``registry_url`` setting (``GYMLOOP_REGISTRY_URL`` or
gymloop.toml), else SQLite at ``<home>/registry.db`` (``~/.gymloop`` by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from flows.cli_group import GymloopGroup
from flows.cli_output import CliError, print_table
from flows.cli_run import _settings

if TYPE_CHECKING:
    from registry import Registry

app = typer.Typer(cls=GymloopGroup, help="The lineage registry: upgrade its schema, show its status.",
                  no_args_is_help=True)
console = Console(soft_wrap=True)

UrlOption = Annotated[
    str | None,
    typer.Option("--url", help="SQLAlchemy database URL (default: the registry_url setting, else SQLite in the home)."),
]
HomeOption = Annotated[
    Path | None, typer.Option("--home", help="gymloop home folder (default: $GYMLOOP_HOME, else ~/.gymloop).")
]


def _open(url: str | None, home: Path | None, *, auto_upgrade: bool) -> Registry:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from registry import Registry, RegistryError

    settings = _settings(**({"home": str(home)} if home else {}))
    url = url or settings.resolved_registry_url()
    home = home or settings.store.home
    if not auto_upgrade and url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise CliError(f"no registry at {url} yet (create it: gymloop registry upgrade)", exit_code=1)
    try:
        return Registry(url, home, auto_upgrade=auto_upgrade)
    except RegistryError as exc:
        raise CliError(str(exc), exit_code=1) from exc


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
    print_table(console, "rows", ("table", "rows"), [[name, str(count)] for name, count in sorted(info.counts.items())],
                right=("rows",))

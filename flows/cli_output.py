"""How the command line prints: tables that never cut a value, JSON for scripts, lines that paste whole.

A table wider than the terminal (80 columns, or a pipe) is printed as one block per row instead, each value on
its own line, so a model reference, a weakness or an interval is never cut or wrapped mid-value.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


def make_console(*, stderr: bool = False) -> Console:
    """A console for gymloop's output (``stderr`` for progress while stdout carries JSON)."""
    return Console(stderr=stderr, highlight=False)


def print_table(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
                right: Sequence[str] = ()) -> None:
    """Print rows as a table when it fits the console's width, else one block per row (no value cut)."""
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    width = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if width <= console.width:
        console.print(table)
        return
    console.print(Text(title, style="italic"))
    label = max(len(c) for c in columns)
    for index, row in enumerate(rows):
        if index:
            console.print()
        for column, value in zip(columns, row, strict=False):
            console.print(Text(f"{column:<{label}}  {value}"), soft_wrap=True)


def print_line(console: Console, text: str) -> None:
    """Print a line that must stay pasteable (a command, a path): never wrapped, never highlighted."""
    console.print(Text(text), soft_wrap=True)


def print_json(data: Any) -> None:
    """Write ``data`` as JSON on stdout (for ``--json``)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()

"""How the command line prints: tables that never cut a value, JSON for scripts, errors on stderr.

A table wider than the terminal (80 columns, or a pipe) is printed as one block per row instead, each value on
its own line, so a model reference, a weakness or an interval is never cut or wrapped mid-value.

Errors always go to stderr as one line. With ``--json`` stdout carries JSON only: the result, or
``{"error": ..., "exit_code": ...}`` when the command fails; anything else a command or a library prints goes
to stderr (``json_stdout``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

_JSON_OUT: list[TextIO] = []
"""The real stdout while a ``--json`` command runs (one per process: threads that stop the command see it too)."""


class CliError(Exception):
    """A command stops with one line on stderr (and a JSON error on stdout under ``--json``).

    Args:
        message: What went wrong, naming the bad value and where it came from.
        exit_code: The process's exit code (2: bad input; 3: a model or a campaign is unavailable).
        prefix: The line's first words (``error``, ``bad setting``, ``not started``, ...).
    """

    def __init__(self, message: str, exit_code: int = 2, prefix: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.prefix = prefix

    def show(self) -> None:
        """Print the error as one line on stderr (never wrapped, never read as markup)."""
        print_line(make_console(stderr=True), f"{self.prefix}: {self.message}")


def make_console(*, stderr: bool = False) -> Console:
    """A console for gymloop's output (``stderr`` for progress while stdout carries JSON)."""
    return Console(stderr=stderr, highlight=False)


def fit(console: Console, table: Table) -> bool:
    """Whether ``table`` fits the console's width with every cell on one line."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width


def print_table(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
                right: Sequence[str] = ()) -> None:
    """Print rows as a table when it fits the console's width, else one block per row (no value cut)."""
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    if fit(console, table):
        console.print(table)
        return
    print_blocks(console, title, columns, rows)


def block_lines(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[Text]:
    """One block per row: each value on its own line after its column's name (never wrapped), a blank between."""
    label = max((len(c) for c in columns), default=0)
    lines: list[Text] = []
    for index, row in enumerate(rows):
        if index:
            lines.append(Text(""))
        for column, value in zip(columns, row, strict=False):
            lines.append(Text(f"{column:<{label}}  {value}", no_wrap=True, overflow="ignore"))
    return lines


def print_blocks(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print one block per row: each value on its own line after its column's name, never cut or wrapped."""
    if title:
        console.print(Text(title, style="italic"), soft_wrap=True)
    for line in block_lines(columns, rows):
        console.print(line, soft_wrap=True)


def print_line(console: Console, text: str) -> None:
    """Print a line that must stay pasteable (a command, a path): never wrapped, never highlighted."""
    console.print(Text(text), soft_wrap=True)


def print_json(data: Any) -> None:
    """Write ``data`` as JSON on stdout (for ``--json``; the real stdout even while ``json_stdout`` holds it)."""
    out = _JSON_OUT[-1] if _JSON_OUT else sys.stdout
    out.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    out.flush()


@contextmanager
def json_stdout(enabled: bool) -> Iterator[None]:
    """While a ``--json`` command runs, send everything printed to stdout to stderr, except ``print_json``."""
    if not enabled:
        yield
        return
    saved = sys.stdout
    _JSON_OUT.append(saved)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved
        _JSON_OUT.pop()


def report_failure(message: str, exit_code: int, *, as_json: bool) -> None:
    """Under ``--json``, state a failure on stdout as JSON (the line on stderr is printed by the caller)."""
    if as_json:
        print_json({"error": message, "exit_code": exit_code})


def report_stop(message: str, exit_code: int) -> None:
    """A command stopped by a signal: its JSON failure on stdout when it runs under ``--json``."""
    report_failure(message, exit_code, as_json=bool(_JSON_OUT))

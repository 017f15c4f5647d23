"""A campaign's Markdown report on a terminal: rich's Markdown, with images as links and tables that never cut.

Images become their alt text and an absolute ``file://`` link (a terminal cannot show the plot, but can open it);
a table that does not fit the width is printed one block per row, like every gymloop table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import ImageItem, Markdown, MarkdownElement, TableElement
from rich.style import Style
from rich.table import Table
from rich.text import Text

from flows.cli_output import block_lines


class _ImageLink(ImageItem):
    """An image as ``alt:`` and its link on the next line, absolute and never wrapped (a path may pass 80 columns)."""

    @classmethod
    def create(cls, markdown: Markdown, token: Any) -> MarkdownElement:
        source = str(token.attrs.get("src", ""))
        base = getattr(markdown, "base", None)
        if base is not None and "://" not in source:
            source = (Path(base) / source).resolve().as_uri()
        return cls(source, markdown.hyperlinks)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        alt = self.text.plain.strip() or "image"
        yield Text(f"{alt}:")
        yield Text(self.destination, Style(link=self.destination), no_wrap=True, overflow="ignore", end="")


class _FittingTable(TableElement):
    """A Markdown table as a table when it fits, else one block per row (no cell cut or wrapped)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        columns = [c.content.plain for c in self.header.row.cells] if self.header and self.header.row else []
        rows = [[c.content.plain for c in row.cells] for row in self.body.rows] if self.body else []
        table = Table(box=box.SIMPLE, pad_edge=False, show_edge=True, collapse_padding=True)
        for index, column in enumerate(columns):
            justify = self.header.row.cells[index].content.justify if self.header and self.header.row else None
            table.add_column(column, no_wrap=True, justify=justify if justify in ("left", "right", "center")
                             else "left", header_style="markdown.table.header")
        for row in rows:
            table.add_row(*row)
        width = console.measure(table, options=options.update_width(10_000)).maximum
        if width <= options.max_width:
            yield table
            return
        yield from block_lines(columns, rows)


class ReportMarkdown(Markdown):
    """Markdown rendered as gymloop's reports need it on a terminal.

    Args:
        markup: The Markdown text.
        base: The folder relative image paths are resolved against.
    """

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements, "image": _ImageLink, "table_open": _FittingTable,
    }

    def __init__(self, markup: str, base: Path) -> None:
        super().__init__(markup, hyperlinks=True)
        self.base = base


def print_report(console: Console, path: Path) -> None:
    """Print the Markdown report at ``path`` (its images as links to the files beside it)."""
    console.print(ReportMarkdown(path.read_text(encoding="utf-8"), base=path.parent), crop=False)

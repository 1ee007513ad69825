"""Terminal tables that fit the terminal's width without cutting a value (never "…").

Rich shrinks a table that is too wide by wrapping cells at spaces, then by cutting them with an
ellipsis: a header reads "degene…" and a job id loses its tail. `FittedTable` decides at render
time, for the width it is given: it drops columns, least useful first, until every remaining
word fits whole, and folds (never cuts) whatever is still too wide.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

_UNBOUNDED = 100_000


class FittedTable:
    """`table` with `drop_order` (column headers, least useful first) dropped as width demands.

    Columns whose cells are all empty go first. `keep_whole` names columns (ids) that must never
    wrap; the title never wraps inside a word either, since the table is at least as wide as it.
    """

    def __init__(
        self, table: Table, drop_order: Sequence[str] = (), keep_whole: Iterable[str] = ()
    ) -> None:
        whole = set(keep_whole)
        for column in table.columns:
            column.overflow = "fold"
            if str(column.header) in whole:
                column.no_wrap = True
                column.min_width = max(map(_cell_len, [column.header, *column.cells]))
        self.table = table
        self.drop_order = [*_empty_headers(table), *drop_order]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.fitted(console, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.fitted(console, options.max_width))

    def fitted(self, console: Console, width: int) -> Table:
        """A copy of the table without the columns that `width` has no room for."""
        table = copy.copy(self.table)
        table.columns = list(self.table.columns)
        title = str(table.title or "")
        table.min_width = min(max(len(line) for line in title.splitlines() or [""]), width)
        for header in self.drop_order:
            if _narrowest(console, table) <= width:
                break
            table.columns = [c for c in table.columns if str(c.header) != header]
        return table


def _narrowest(console: Console, table: Table) -> int:
    """The table's width with every cell wrapped at spaces only (words kept whole)."""
    options = console.options.update_width(_UNBOUNDED)
    return Measurement.get(console, options, table).minimum


def _cell_len(cell: RenderableType) -> int:
    return Text.from_markup(cell).cell_len if isinstance(cell, str) else 0


def _empty_headers(table: Table) -> list[str]:
    return [
        str(c.header)
        for c in table.columns
        if table.row_count and all(not str(cell).strip() for cell in c.cells)
    ]

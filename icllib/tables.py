"""Plain HTML tables for chapter output (the book renders a notebook's markdown output
without tables, so a chapter that prints a table displays HTML)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["html_table"]

_CELL_STYLE = "padding:2px 10px;text-align:right"
_TABLE_STYLE = "border-collapse:collapse;font-size:0.9em"


def html_table(header: Sequence, rows: Iterable[Sequence]):
    """A plain right-aligned HTML table, as an ``IPython.display.HTML`` object.

    Parameters
    ----------
    header : sequence
        The column headings (any objects; formatted with ``str``; HTML is passed through).
    rows : iterable of sequences
        The rows, one cell per heading.
    """
    from IPython.display import HTML

    def cells(tag, row):
        return "".join(f"<{tag} style='{_CELL_STYLE}'>{x}</{tag}>" for x in row)

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return HTML(f"<table style='{_TABLE_STYLE}'><thead><tr>{cells('th', header)}</tr></thead>"
                f"<tbody>{body}</tbody></table>")

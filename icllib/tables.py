"""Plain HTML tables for chapter output (the book renders a notebook's markdown output
without tables, so a chapter that prints a table displays HTML)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["html_table", "plain"]

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


class _Plain:
    """A value shown as plain text: its ``repr`` is the formatted string (no quotes)."""

    __slots__ = ("text", "value")

    def __init__(self, value, spec: str):
        self.value = value
        self.text = format(value, spec)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)


def plain(value, spec: str = ""):
    """``value`` formatted with ``spec``, for a number in the prose of a chapter.

    A chapter writes ``{eval}`name``` where ``name = plain(x, ".2f")``: the ``{eval}`` role
    (myst-nb in the built book, jupyterlab-myst in JupyterLab) shows the object's text/plain
    representation, which for a ``str`` would carry quotes; this object's representation is
    the formatted number itself.  ``float()`` and ``int()`` give the value back, for the
    chapter's checks.
    """
    return _Plain(value, spec)

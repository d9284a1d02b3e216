"""Plain-text tables for people: aligned columns, numbers on the right, long text wrapped to a width.

The command line prints these where a machine would read JSON or CSV (``--json``/``--csv``), so
they have no frame characters and no dtype rows: a header, a rule of dashes, then the rows,
columns two spaces apart.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

from fabricscope.redaction import printable

__all__ = ["cell_text", "terminal_width", "text_table"]

# Columns narrower than this are never wrapped (names, units, numbers stay on one line).
_MIN_WRAP_WIDTH = 16
_GAP = "  "


def terminal_width(default: int = 120) -> int:
    """The width to fit tables to: ``$COLUMNS``, else the terminal's, else ``default`` (output piped).

    Example:
        >>> import os
        >>> os.environ["COLUMNS"] = "100"
        >>> terminal_width()
        100
        >>> del os.environ["COLUMNS"]
    """
    return shutil.get_terminal_size((default, 24)).columns


def cell_text(value: Any) -> str:
    r"""How one value reads in a table: ``-`` for missing, lists joined by ``, ``, floats in 4 digits.

    Text is escaped as :func:`fabricscope.redaction.printable` does: a cell stays on its row.

    Example:
        >>> [cell_text(v) for v in (None, True, 3, 0.123456, ["a", "b"], "x", "a\nb")]
        ['-', 'yes', '3', '0.1235', 'a, b', 'x', 'a\\x0ab']
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value)
    return printable(str(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def text_table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    width: int | None = None,
    align_right: Sequence[bool] | None = None,
    wrap: Sequence[bool] | None = None,
) -> str:
    """An aligned plain-text table.

    Args:
        header: Column titles.
        rows: One sequence of values per row (any type; see :func:`cell_text`).
        width: Fit the table to this many characters by wrapping the widest text columns at word
            boundaries; None: never wrap.
        align_right: Per column; default: right for columns whose values are all numbers.
        wrap: Per column, whether it may be wrapped to fit ``width``; default: every column.

    Returns:
        Header line, a rule of dashes, one or more lines per row; no trailing spaces.

    Example:
        >>> print(text_table(["name", "ports"], [["gpu01", 2], ["switch-leaf-7", 36]]))
        name           ports
        -------------  -----
        gpu01              2
        switch-leaf-7     36
    """
    n = len(header)
    if align_right is None:
        align_right = [bool(rows) and all(_is_number(r[i]) or r[i] is None for r in rows) for i in range(n)]
    cells = [[cell_text(v) for v in r] for r in rows]
    natural = [
        max([len(header[i])] + [len(line) for r in cells for line in r[i].splitlines() or [""]]) for i in range(n)
    ]
    widths = list(natural)
    if width is not None:
        # Narrow the widest wrappable column one character at a time until the table fits.
        floors = [max(_MIN_WRAP_WIDTH, len(h)) for h in header]
        flexible = [i for i in range(n) if wrap is None or wrap[i]]
        while flexible and sum(widths) + len(_GAP) * (n - 1) > width:
            i = max(flexible, key=lambda k: widths[k])
            if widths[i] <= floors[i]:
                break
            widths[i] -= 1

    def lines_of(text: str, w: int) -> list[str]:
        if len(text) <= w and "\n" not in text:
            return [text]
        out: list[str] = []
        for part in text.splitlines() or [""]:
            out += textwrap.wrap(part, w, break_on_hyphens=False) or [""]
        return out

    def render(values: list[str]) -> list[str]:
        wrapped = [lines_of(v, widths[i]) for i, v in enumerate(values)]
        height = max(len(w) for w in wrapped)
        out = []
        for k in range(height):
            parts = []
            for i in range(n):
                text = wrapped[i][k] if k < len(wrapped[i]) else ""
                parts.append(text.rjust(widths[i]) if align_right[i] else text.ljust(widths[i]))
            out.append(_GAP.join(parts).rstrip())
        return out

    out = [
        _GAP.join(h.rjust(widths[i]) if align_right[i] else h.ljust(widths[i]) for i, h in enumerate(header)).rstrip()
    ]
    out.append(_GAP.join("-" * w for w in widths))
    for r in cells:
        out += render(r)
    return "\n".join(out)

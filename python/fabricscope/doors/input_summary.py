"""What was read, for people: one row per format instead of one per file, and the problems.

``fabricscope parse``/``analyze`` print these by default (``--verbose`` adds the per-file table)
and the report lists them under *Inputs*. Nothing here prints.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from fabricscope.reading.scan import InputReport
from fabricscope.reading.times import TIME_TYPE, empty_times
from fabricscope.redaction import printable_lines

__all__ = [
    "SUMMARY_SCHEMA",
    "by_format",
    "problems",
    "skipped",
    "summary_text",
    "time_range",
]

SUMMARY_SCHEMA = pl.Schema(
    {
        "format": pl.String,
        "files": pl.Int64,
        "failed": pl.Int64,
        "samples": pl.Int64,
        "bad_records": pl.Int64,
        "first": TIME_TYPE,
        "last": TIME_TYPE,
    }
)


def by_format(reports: Sequence[InputReport], times: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per format read: files, of them failed, samples, bad records, first and last time.

    Inputs that are not telemetry (no format detected, skipped) are left out: see :func:`skipped`.
    Inputs that could not be read at all count under their format, or ``unknown``.

    Args:
        reports: The readers' per-input reports.
        times: :func:`format_times` output, for the time range (None: no times).

    Returns:
        A frame with :data:`SUMMARY_SCHEMA`, most samples first.

    Example:
        >>> from fabricscope.reading.scan import InputReport
        >>> r = [InputReport("a.prom", "prometheus", 10, 4, 0, 1), InputReport("b.prom", "prometheus", 9, 3, 0, 0)]
        >>> by_format(r).select("format", "files", "samples", "bad_records").row(0)
        ('prometheus', 2, 7, 1)
    """
    rows = [
        {
            "format": r.format or "unknown",
            "failed": int(r.failed),
            "samples": r.rows,
            "bad_records": r.bad_records,
        }
        for r in reports
        if r.format is not None or r.failed
    ]
    if not rows:
        return pl.DataFrame(schema=SUMMARY_SCHEMA)
    out = (
        pl.DataFrame(
            rows, schema={"format": pl.String, "failed": pl.Int64, "samples": pl.Int64, "bad_records": pl.Int64}
        )
        .group_by("format", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("files"),
            pl.col("failed").sum(),
            pl.col("samples").sum(),
            pl.col("bad_records").sum(),
        )
    )
    if times is None or not times.height:
        times = empty_times()
    out = out.join(times, on="format", how="left")
    return out.sort(["samples", "format"], descending=[True, False]).select(SUMMARY_SCHEMA.names())


def skipped(reports: Sequence[InputReport]) -> list[str]:
    """Paths of inputs that were not recognised as telemetry and skipped (READMEs, notes, ...)."""
    return [r.path for r in reports if r.format is None and not r.failed]


def problems(reports: Sequence[InputReport]) -> list[str]:
    """Every error and warning of every input, each naming its input.

    Example:
        >>> from fabricscope.reading.scan import InputReport
        >>> problems([InputReport("x.log", "ethtool", 1, 1, 0, 0, warnings=["time from mtime"])])
        ['x.log: time from mtime']
    """
    out = []
    for r in reports:
        for m in r.errors + r.warnings:
            if m.startswith("skipped") and r.format is None and not r.failed:
                continue  # listed by skipped(); not a problem with the data
            out.append(m if r.path in m else f"{r.path}: {m}")
    return out


def time_range(first: dt.datetime | None, last: dt.datetime | None) -> str:
    """``2026-12-02 14:00:00 .. 14:30:00`` (the end's date only when it differs); ``-`` without times.

    Example:
        >>> import datetime as dt
        >>> a = dt.datetime(2026, 12, 2, 14, 0)
        >>> time_range(a, a + dt.timedelta(minutes=30)), time_range(a, a + dt.timedelta(days=1)), time_range(None, None)
        ('2026-12-02 14:00:00 .. 14:30:00', '2026-12-02 14:00:00 .. 2026-12-03 14:00:00', '-')
    """
    if first is None or last is None:
        return "-"
    a, b = first.strftime("%Y-%m-%d %H:%M:%S"), last.strftime("%Y-%m-%d %H:%M:%S")
    if a == b:
        return a
    return f"{a} .. {b[11:] if a[:10] == b[:10] else b}"


def summary_text(
    formats: pl.DataFrame,
    *,
    skipped_paths: Sequence[str] = (),
    problem_lines: Sequence[str] = (),
    max_problems: int | None = 20,
    width: int | None = None,
) -> str:
    """The per-format table, the skipped inputs in one line, then the problems, as text.

    Args:
        formats: :func:`by_format` output.
        skipped_paths: :func:`skipped` output.
        problem_lines: :func:`problems` output.
        max_problems: Most problems listed (None: all).
        width: Wrap the table to this width (None: never).

    Returns:
        Lines joined by newlines, no trailing newline.

    Example:
        >>> from fabricscope.reading.scan import InputReport
        >>> r = [InputReport("a.prom", "prometheus", 10, 4, 0, 1, errors=["a.prom: line 3: bad"])]
        >>> print(summary_text(by_format(r), problem_lines=problems(r)))
        format      files  samples  bad records  time range (UTC)
        ----------  -----  -------  -----------  ----------------
        prometheus      1        4            1  -
        <BLANKLINE>
        problems (1):
          a.prom: line 3: bad
    """
    from fabricscope.doors._text_table import text_table

    failed = formats.height > 0 and formats["failed"].sum() > 0
    header = ["format", "files", *(["failed"] if failed else []), "samples", "bad records", "time range (UTC)"]
    rows = [
        [
            r["format"],
            f"{r['files']:,}",
            *([f"{r['failed']:,}"] if failed else []),
            f"{r['samples']:,}",
            f"{r['bad_records']:,}",
            time_range(r["first"], r["last"]),
        ]
        for r in formats.iter_rows(named=True)
    ]
    right = [False, True, *([True] if failed else []), True, True, False]
    lines = text_table(header, rows, width=width, align_right=right).splitlines() if rows else ["no telemetry found"]
    if skipped_paths:
        distinct = list(dict.fromkeys(Path(p).name for p in skipped_paths))
        names = ", ".join(distinct[:5]) + (", ..." if len(distinct) > 5 else "")
        lines.append(f"{len(skipped_paths)} file(s) are not telemetry and were skipped ({names})")
    if problem_lines:
        shown = problem_lines if max_problems is None else problem_lines[:max_problems]
        lines += ["", f"problems ({len(problem_lines)}):"] + [f"  {p}" for p in shown]
        if len(shown) < len(problem_lines):
            lines.append(f"  ... and {len(problem_lines) - len(shown)} more (--verbose lists them all)")
    # A problem quotes the input (its bad line, a server's answer): one line each whatever it holds.
    return printable_lines(lines)

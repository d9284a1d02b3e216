"""When each reader's data begins and ends: the first and last sample time per format.

Every engine keeps these per partition and merges them (:func:`merge_times`); the summaries of
``analyze`` and ``parse`` show them per format.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = ["TIME_TYPE", "empty_times", "format_times", "merge_times"]

TIME_TYPE = pl.Datetime("ns", "UTC")
"""The type of every sample time (nanoseconds, UTC)."""


def format_times(frame: pl.DataFrame | pl.LazyFrame, *, start: str = "time", end: str = "time") -> pl.DataFrame:
    """The first and last time seen per reader (the samples' ``source`` column).

    Args:
        frame: Samples (``time``), or rates (``start``/``end``: pass those names).
        start: Column whose minimum is the first time.
        end: Column whose maximum is the last time.

    Returns:
        Columns ``format``, ``first``, ``last``.

    Example:
        >>> import fabricscope
        >>> t = format_times(fabricscope.read("sample_traces/ethtool"))
        >>> t.columns, t["format"].to_list()
        (['format', 'first', 'last'], ['ethtool'])
    """
    lf = frame.lazy()
    if not {"source", start, end} <= set(lf.collect_schema().names()):
        return empty_times()
    return (
        lf.group_by(pl.col("source").cast(pl.String).alias("format"))
        .agg(pl.col(start).min().alias("first"), pl.col(end).max().alias("last"))
        .with_columns(pl.col("first", "last").cast(TIME_TYPE))
        .sort("format")
        .collect()
    )


def merge_times(parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """:func:`format_times` of several partitions as one (earliest first, latest last per format)."""
    frames = [p for p in parts if p.height]
    if not frames:
        return empty_times()
    return (
        pl.concat(frames, how="vertical_relaxed")
        .group_by("format")
        .agg(pl.col("first").min(), pl.col("last").max())
        .sort("format")
    )


def empty_times() -> pl.DataFrame:
    """No times: the columns ``format``, ``first``, ``last``."""
    return pl.DataFrame(schema={"format": pl.String, "first": TIME_TYPE, "last": TIME_TYPE})

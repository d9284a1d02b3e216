"""Reading inputs into frames: :func:`load` and :func:`read`, views over the pipeline's unit reader.

What :func:`fabricscope.load` returns and what :func:`fabricscope.run_analysis` reads are the same
rows: both expand their inputs with :func:`fabricscope.reading.units.work_units` (directories as
the Rust reader walks them, ``fabricscope cron`` histories, URLs) and read the units with
:func:`fabricscope.reading.units.read_units`, in the same order and with the same reports. The
units are read by a few threads at once (the Rust readers release the GIL), each on its own run
of consecutive units, and the runs are joined in input order.

This module sits above :mod:`fabricscope.reading.units`, which reads through :mod:`fabricscope.reading.scan`
and :mod:`fabricscope.reading.history`; those two therefore cannot import it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import polars as pl

from fabricscope.engines.base import merge_tables
from fabricscope.fabric.entities import rename_hosts
from fabricscope.fabric.model import path_host_names
from fabricscope.reading.options import Filters, ReadOptions
from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.reading.scan import (
    LIMITS,
    InputReport,
    PathLike,
    ReaderPool,
    ReadResult,
    TimeLike,
    _paths,
    empty_attributes,
    empty_samples,
    input_set_mtime,
)
from fabricscope.reading.units import available_cores, group_units, read_units, work_units

__all__ = ["load", "read", "read_sources"]


def read_sources(
    paths: Sequence[str | os.PathLike[str]],
    read: ReadOptions,
    filters: Filters | None = None,
    batch_rows: int = 1 << 20,
) -> ReadResult:
    """Read paths, URLs and histories tolerantly: a failed input is a report with its error, not an exception.

    Args:
        paths: Files, directories, ``fabricscope cron`` histories or ``http(s)://`` URLs.
        read: Reader options; ``read.time`` should already hold the input set's time
            (:func:`fabricscope.reading.scan.input_set_mtime`) so that every door dates timeless files alike.
        filters: Host and time filters applied to every batch as it arrives (a history is pruned
            by them, a Prometheus server pulled over their range); None reads everything.
        batch_rows: Rows per parsed batch.

    Returns:
        A :class:`fabricscope.reading.scan.ReadResult` whose reports list every input, failed ones included.
    """
    filters = filters or Filters()
    units = work_units(paths, read.format, filters)
    threads = max(1, min(available_cores(), len(units)))
    groups = group_units(units, 4 * threads)
    readers = ReaderPool()  # shared by every group: label sets resolved once per reader
    if threads > 1 and len(groups) > 1:
        with ThreadPoolExecutor(threads, thread_name_prefix="fabricscope-load") as pool:
            one_group = partial(
                read_units, read=read, filters=filters, partitions=1, batch_rows=batch_rows, readers=readers
            )
            parts = list(pool.map(one_group, groups))
    else:
        parts = [read_units(g, read, filters, 1, batch_rows, readers) for g in groups]
    del readers
    reports: list[InputReport] = [r for p in parts for r in p[0]]
    samples = [df for p in parts for df in p[2][0]]
    attrs = [df for p in parts for df in p[3][0]]
    return ReadResult(
        pl.concat(samples, how="vertical") if samples else empty_samples(),
        pl.concat(attrs, how="vertical_relaxed") if attrs else empty_attributes(),
        reports,
        merge_tables([p[1] for p in parts]),
    )


def load(
    paths: PathLike | Sequence[PathLike],
    *,
    format: str = "auto",
    host: str | None = None,
    time: TimeLike = None,
    strict: bool = True,
    batch_rows: int = 1 << 20,
    max_line_bytes: int = LIMITS["max_line_bytes"],
    limits: Mapping[str, int] | None = None,
    remote: RemoteOptions | None = None,
) -> ReadResult:
    """Read inputs into samples, port attributes and per-input reports.

    The same reader :func:`fabricscope.run_analysis` uses, so ``load(x)`` holds the rows an
    analysis of ``x`` reads, in the same order.

    Args:
        paths: Files or directories (walked recursively; sysfs trees are recognised), or
            ``fabricscope cron`` history directories. Files may be gzip- or zstd-compressed. An
            ``http(s)://`` URL is a Prometheus server (pulled over ``remote``'s range, default the
            last hour) or an exporter endpoint (scraped).
        format: ``"auto"`` (detect from content) or a name from :func:`fabricscope.formats`.
        host: Host for inputs that name none (labels and in-file ``# host:`` lines win).
        time: Timestamp for inputs that carry none (in-file timestamp lines and timestamps in
            file names win): a datetime, epoch seconds, or an ISO 8601 string.
        strict: Raise the first input's error (default), or skip and count bad records, listing
            an input that cannot be read at all as a failed report.
        batch_rows: Rows per Arrow batch.
        max_line_bytes: Longest accepted line.
        limits: Overrides of the resource limits in :data:`fabricscope.reading.scan.LIMITS` by name, for
            example ``{"max_labels": 512}``.
        remote: How to read URLs (:class:`fabricscope.reading.prometheus.RemoteOptions`).

    Returns:
        A :class:`fabricscope.reading.scan.ReadResult`.

    Raises:
        fabricscope.exceptions.FabricscopeError: an input is unreadable or malformed (strict).
        fabricscope.exceptions.LimitExceededError: an input exceeds a limit (see ``limits``).
        ValueError: an unknown limit name or a non-positive limit.

    Example:
        >>> import fabricscope
        >>> res = fabricscope.load("sample_traces/ethtool")
        >>> res.samples.columns[:4]
        ['time', 'host', 'device', 'port']
    """
    every = _paths(paths)
    options = ReadOptions(
        format=format,
        host=host,
        time=input_set_mtime(every) if time is None else time,
        strict=strict,
        # ``max_line_bytes`` is one of the limits; an entry in ``limits`` wins.
        limits=tuple({"max_line_bytes": max_line_bytes, **(limits or {})}.items()),
        remote=remote,
        # Without `host`, a host-less input one host prints about itself (an ethtool log,
        # `lldpctl -f json`) takes the host its path names (fabricscope.fabric.model.path_host_names).
        host_from_path=host is None,
    )
    result = read_sources(every, options, batch_rows=batch_rows)
    names = path_host_names(result.reports, [result.samples, result.attributes, *result.tables.values()])
    if names:
        result = ReadResult(
            rename_hosts(result.samples, names),
            rename_hosts(result.attributes, names),
            result.reports,
            {k: rename_hosts(v, names) for k, v in result.tables.items()},
        )
    if strict:
        # The unit reader lists a failed input and reads on; strict loading raises its error.
        err = next((r.exception for r in result.reports if r.failed and r.exception is not None), None)
        if err is not None:
            raise err
    return result


def read(
    paths: PathLike | Sequence[PathLike],
    *,
    format: str = "auto",
    host: str | None = None,
    time: TimeLike = None,
    strict: bool = True,
    limits: Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Read inputs into the canonical samples table.

    One row per observation: ``time`` (UTC, ns), ``host``, ``device``, ``port``, ``priority``,
    ``counter`` (canonical name, or the raw name when unknown), ``value_u64`` (exact integers),
    ``value_f64`` (other numbers), ``scale``, ``is_counter`` and ``source``.

    Args:
        paths: Files or directories. See :func:`load`.
        format: ``"auto"`` or a format name.
        host: Host for inputs that name none.
        time: Timestamp for inputs that carry none.
        strict: Raise on the first malformed record, or skip and count (see :func:`load`).
        limits: Overrides of the resource limits in :data:`fabricscope.reading.scan.LIMITS` (see :func:`load`).

    Returns:
        The samples as a Polars DataFrame.

    Example:
        >>> import fabricscope
        >>> df = fabricscope.read("sample_traces/prometheus")
        >>> df.filter(df["counter"] == "port_xmit_data_bytes").height > 0
        True
    """
    return load(paths, format=format, host=host, time=time, strict=strict, limits=limits).samples

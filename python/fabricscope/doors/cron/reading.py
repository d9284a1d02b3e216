"""Reading the planned inputs and dropping readings the history already holds."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import polars as pl

from fabricscope.detect.rates import SERIES_KEYS
from fabricscope.doors.cron.manifest import Plan
from fabricscope.doors.cron.state import empty_series, stored_attrs
from fabricscope.exceptions import FabricscopeError
from fabricscope.fabric.entities import rename_hosts
from fabricscope.fabric.model import path_host_names
from fabricscope.pipeline import input_rows
from fabricscope.reading._regular import input_error
from fabricscope.reading.history import to_stored
from fabricscope.reading.options import Filters, ReadOptions
from fabricscope.reading.prometheus import DEFAULT_RANGE_S, RemoteOptions, load_url
from fabricscope.reading.scan import InputReport, input_set_mtime
from fabricscope.reading.units import FILE, WALKED, SampleScreen, read_units
from fabricscope.redaction import redact_text
from fabricscope.transport import redact

if TYPE_CHECKING:
    from fabricscope.doors.cron.options import CronOptions


def read_plans(
    plans: list[Plan],
    strict: bool,
    watched: list[str] | None = None,
    known_hosts: Iterable[str] = (),
    read: ReadOptions | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[dict[str, Any]], dict[str, str], dict[str, pl.DataFrame]]:
    """Read every planned input; returns samples, attributes, the contract's inputs, formats, tables.

    ``read`` gives the run's clock and margin (:meth:`CronOptions.read_options`): a sample dated
    past them is a bad record of its input, never stored, so never its series' watermark.

    Timeless files take one time for the whole run, the newest mtime of the ``watched`` paths
    (as ``fabricscope analyze`` of those paths does), although they are read in format groups. A
    host-less input one host prints about itself takes the host its path names, among the hosts
    this run's inputs and ``known_hosts`` (the history's) name (:func:`fabricscope.fabric.model.path_host_names`).
    """
    set_time = input_set_mtime(watched) if watched else None
    named = {os.path.normpath(w) for w in watched or []}
    samples: list[pl.DataFrame] = []
    attrs: list[pl.DataFrame] = []
    inputs: list[dict[str, Any]] = []
    formats: dict[str, str] = {}
    tables: dict[str, list[pl.DataFrame]] = {}
    all_reports: list[InputReport] = []
    # The analysis engine's unit reader, one unit at a time in the order the watched paths expand
    # to: the same reports as `analyze` (a file found by walking whose format cannot be detected is
    # skipped, one that cannot be read is listed with its error).
    for p in plans:
        if p.reason == "failed":
            # Opening or reading it failed before the reader got it (no permission, EIO, replaced
            # by a FIFO): one failed input, as the reader lists one it cannot read.
            err = input_error(p.unit.path, p.error or "could not be read")
            if strict:
                raise err
            failed_report = InputReport(p.unit.path, None, 0, 0, 0, 0, errors=[str(err)], failed=True, exception=err)
            inputs += input_rows([failed_report])
            continue
        if not p.read_path:
            continue
        kind = FILE if p.format or os.path.normpath(p.unit.path) in named else WALKED
        # Regular files only, whatever names them: a file replaced by a FIFO since it was
        # planned is skipped, never waited on with the lock held.
        unit_read = replace(
            read or ReadOptions(),
            format=p.format or "auto",
            time=set_time,
            strict=strict,
            host_from_path=True,
            regular_files_only=True,
        )
        reports, unit_tables, unit_samples, unit_attrs = read_units([(p.read_path, kind)], unit_read, Filters(), 1)
        failed = next((r for r in reports if r.failed), None)
        if strict and failed is not None:
            # --strict: the run fails before anything is stored (the file is read again next run).
            raise failed.exception or FabricscopeError(f"{p.unit.path}: {'; '.join(failed.errors)}")
        samples += unit_samples[0]
        attrs += [a for a in unit_attrs[0] if a.height]
        for name, t in unit_tables.items():
            tables.setdefault(name, []).append(t)
        all_reports += reports
        for r in reports:
            if r.format:
                formats[p.unit.path] = r.format
        # The same rows as every other front door's, under the watched path.
        inputs += [{**row, "path": p.unit.path} for row in input_rows(reports)]
    # A placeholder whose path names no host stays one (stored as it is, named ``unknown`` in the
    # findings), as the analysis engines keep it: two such inputs are two hosts, never one.
    names = {
        p: h
        for p, h in path_host_names(
            all_reports, [*samples, *attrs, *(t for ts in tables.values() for t in ts)], known_hosts
        ).items()
        if h != "unknown"
    }
    if names:
        samples = [rename_hosts(x, names) for x in samples]
        attrs = [rename_hosts(x, names) for x in attrs]
        tables = {n: [rename_hosts(t, names) for t in ts] for n, ts in tables.items()}
    s = pl.concat([to_stored(x) for x in samples]) if samples else empty_series()
    a = pl.concat([stored_attrs(x) for x in attrs]) if attrs else pl.DataFrame()
    return s, a, inputs, formats, {n: pl.concat(ts, how="diagonal_relaxed") for n, ts in tables.items()}


def pull_servers(
    opts: CronOptions,
    files: dict[str, dict[str, Any]],
    now: dt.datetime,
    new: pl.DataFrame,
    new_attrs: pl.DataFrame,
    inputs: list[dict[str, Any]],
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, dict[str, Any]]]:
    """Pull each Prometheus server from its watermark (less ``opts.server_lookback_s``) to ``now``.

    The watermark is the ``now`` of the last pull, but a sample stamped just before it may reach
    the server later (a scrape still in progress, remote-write or federation lag): each pull
    starts ``server_lookback_s`` earlier, and what the history already holds is dropped
    afterwards by :func:`drop_stored` (per series, at or before its last stored time; a server
    ingests each series in time order, so a late sample is always after its series' last one).

    A server that fails (an HTTP error status, no answer, the ``--deadline`` passed, an answer
    beyond the byte budget, an error inside a 200) is one failed input, as an unreadable file
    is: listed in ``inputs`` with its error, nothing of it kept, its watermark left where it was
    (the next run pulls the same range again); the other sources are stored and judged. With
    ``--strict`` the run fails instead, as for a file.

    Returns the samples and attributes with the pulled ones added, and each server's next
    watermark (its state entry, committed with the rest of the state).
    """
    samples, attrs, marks = [new], [new_attrs] if not new_attrs.is_empty() else [], {}
    until = (now - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1) * 1000
    for url in opts.prometheus:
        key = redact(url)
        mark = files.get(key, {}).get("watermark_ns")
        if isinstance(mark, int):
            if mark >= until:
                marks[key] = files[key]
                continue
            since = mark - round(opts.server_lookback_s * 1e9)
        else:
            since = until - DEFAULT_RANGE_S * 1_000_000_000
        remote = replace(opts.remote or RemoteOptions(), since=since, until=until)
        try:
            s, a, report = load_url(url, remote, strict=opts.strict)
        except FabricscopeError as e:
            if opts.strict:
                raise
            failed = InputReport(key, None, 0, 0, 0, 0, errors=[redact_text(str(e))], failed=True, exception=e)
            inputs += [{**row, "path": key} for row in input_rows([failed])]
            if key in files:
                marks[key] = files[key]
            continue
        # A live server's samples are screened as a file's are (a +Inf counter is a bad record).
        screen = SampleScreen(key, opts.read_options(now), strict=opts.strict)
        s = screen.keep(s)
        samples.append(to_stored(s))
        if not a.is_empty():
            attrs.append(stored_attrs(a))
        inputs += [{**row, "path": key} for row in input_rows(screen.report([InputReport(**report)]))]
        marks[key] = {"kind": "prometheus", "watermark_ns": until}
    out_s = pl.concat(samples) if len(samples) > 1 else new
    out_a = pl.concat(attrs) if attrs else new_attrs
    return out_s, out_a, marks


def drop_stored(new: pl.DataFrame, last: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Drop readings at or before the series' last stored time (already in the history)."""
    if new.is_empty() or last.is_empty():
        return new, 0
    keyed = new.join(
        last.select(*SERIES_KEYS, pl.col("time").alias("_last")), on=SERIES_KEYS, how="left", nulls_equal=True
    )
    kept = keyed.filter(pl.col("_last").is_null() | (pl.col("time") > pl.col("_last"))).drop("_last")
    return kept, new.height - kept.height

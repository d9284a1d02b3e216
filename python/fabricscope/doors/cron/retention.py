"""Retention and compaction of the history."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path

import polars as pl

from fabricscope import _atomic
from fabricscope.doors.cron.recovery import crash_point
from fabricscope.reading.history import ROW_GROUP_ROWS, History, checked_parquet


def retain(history: Path, hist: History, cutoff: dt.datetime, *, data_cutoff: dt.datetime | None = None) -> None:
    """Delete partitions of days before ``data_cutoff``; drop faults resolved before ``cutoff`` and old runs.

    ``data_cutoff`` is the data's time (the newest sample less the retention), ``cutoff`` the
    wall clock's (runs and resolutions are dated by it); None: ``cutoff`` for both.
    """
    days_before = (data_cutoff or cutoff).date()
    for table in ("samples", "findings"):
        for d in (history / table).glob("date=*"):
            try:
                day = dt.date.fromisoformat(d.name.removeprefix("date="))
            except ValueError:
                continue
            if day < days_before:
                shutil.rmtree(d, ignore_errors=True)
        if (history / table).exists():
            _atomic.fsync_dir(history / table)
    lc = hist.lifecycle()
    if lc.height:
        _atomic.write_parquet(
            history / "lifecycle.parquet",
            lc.filter(pl.col("resolved_at").is_null() | (pl.col("resolved_at") >= cutoff)),
        )
    runs = hist.runs()
    if runs.height:
        _atomic.write_parquet(history / "runs.parquet", runs.filter(pl.col("started") >= cutoff))


COMPACT_TARGET_BYTES = 64 << 20
"""A part at least this large is left as it is: compaction merges small parts, never rewrites a day."""


def compact(state: Path, history: Path, min_parts: int, today: dt.date) -> None:
    """Merge ``min_parts`` small part files of a day into one, once per table and run.

    A run adds one small part per table and day; merging the oldest ``min_parts`` of a day's
    parts below :data:`COMPACT_TARGET_BYTES` keeps the files of a day few (about one per
    ``min_parts`` runs, fewer as merged parts merge again) at a bounded cost per run:
    ``min_parts`` parts of at most the target size, whatever the history holds, so a
    compaction never stalls a run past its schedule. Days before ``today`` (the data's) go
    first: they no longer grow.

    The merged file is written, renamed in, and then the old parts are unlinked; a crash between
    the two is rolled forward by :func:`recover` from ``STATE/compact.json``.
    """
    if min_parts < 2:
        return
    for table in ("samples", "findings"):
        days = [*sorted((history / table).glob("date=*")), *sorted((history / table).glob("date=*/host=*"))]
        # the finished days first, then today's (the newest data's)
        days.sort(key=lambda d: d.name == f"date={today.isoformat()}" or d.parent.name == f"date={today.isoformat()}")
        for d in days:
            small = sorted(
                (p for p in d.glob("part-*.parquet") if p.stat().st_size < COMPACT_TARGET_BYTES),
                key=lambda p: (p.stat().st_mtime_ns, p.name),
            )
            if len(small) >= min_parts:
                _merge(state, history, d, small[:min_parts], table)
                break


def _merge(state: Path, history: Path, d: Path, parts: list[Path], table: str) -> None:
    names = "".join(p.name for p in parts)
    merged = d / f"part-c{hashlib.blake2b(names.encode(), digest_size=8).hexdigest()}.parquet"
    rel = lambda p: p.relative_to(history).as_posix()  # noqa: E731
    _atomic.write_text(
        state / "compact.json", json.dumps({"merged": rel(merged), "old": [rel(p) for p in parts]}), mode=0o600
    )
    # Streamed, part after part, in their order: each part is sorted already (host, device, port,
    # counter, time), so its row groups stay narrow in the merged file, and merging eight parts of
    # a 10,000-host scrape holds a row group at a time, not the eight parts and a sorted copy.
    scan = pl.scan_parquet([checked_parquet(p) for p in parts], hive_partitioning=False)
    _atomic.sink_parquet(merged, scan, staging=history / ".staging", row_group_size=ROW_GROUP_ROWS)
    crash_point("mid-compaction")
    for p in parts:
        p.unlink()
    _atomic.fsync_dir(d)
    (state / "compact.json").unlink()

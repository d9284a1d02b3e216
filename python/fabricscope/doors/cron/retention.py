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
from fabricscope.reading.history import (
    History,
    checked_parquet,
)


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


def compact(state: Path, history: Path, min_parts: int, today: dt.date) -> None:
    """Merge a partition's part files into one when it has ``min_parts`` or more.

    The merged file is written, renamed in, and then the old parts are unlinked; a crash between
    the two is rolled forward by :func:`recover` from ``STATE/compact.json``.
    """
    if min_parts < 2:
        return
    for table in ("samples", "findings"):
        for d in sorted((history / table).glob("date=*/host=*")):
            parts = sorted(d.glob("part-*.parquet"))
            if len(parts) < min_parts:
                continue
            names = "".join(p.name for p in parts)
            merged = d / f"part-c{hashlib.blake2b(names.encode(), digest_size=8).hexdigest()}.parquet"
            df = pl.concat([pl.read_parquet(checked_parquet(p)) for p in parts], how="vertical_relaxed")
            if table == "samples":
                df = df.sort("time")
            rel = lambda p: p.relative_to(history).as_posix()  # noqa: E731
            _atomic.write_text(
                state / "compact.json", json.dumps({"merged": rel(merged), "old": [rel(p) for p in parts]}), mode=0o600
            )
            _atomic.write_parquet(merged, df, staging=history / ".staging")
            crash_point("mid-compaction")
            for p in parts:
                p.unlink()
            _atomic.fsync_dir(d)
            (state / "compact.json").unlink()

"""The state directory: manifest, last reading per series, carried lookback, attributes and links; the commit point."""

from __future__ import annotations

import datetime as dt
import json
import time as _time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import _atomic
from fabricscope.detect.rates import SERIES_KEYS
from fabricscope.doors.cron.errors import RECOVERY_HINT, StateError
from fabricscope.doors.cron.recovery import crash_point
from fabricscope.incidents.severity import PAGING
from fabricscope.reading.history import (
    STORED_SAMPLES_SCHEMA,
    History,
)

STATE_VERSION = 1


@dataclass
class State:
    """The state one run starts from and commits."""

    files: dict[str, dict[str, Any]]
    last_run_id: str | None
    series: pl.DataFrame  # last stored reading per series (stored schema)
    attributes: pl.DataFrame | None
    links: pl.DataFrame | None = None  # latest topology (ibnetdiscover/iblinkinfo), for link_flap's peers
    # The detectors' lookback carried to the next run (stored schema): the readings within the
    # lookback of the ports where something other than traffic moved (:func:`carried_lookback`).
    window: pl.DataFrame = field(default_factory=lambda: empty_series())


def empty_series() -> pl.DataFrame:
    """An empty last-readings frame (stored samples schema)."""
    return pl.DataFrame(schema=STORED_SAMPLES_SCHEMA)


# What each field of a file's manifest entry holds (manifest.py writes them); others are kept as read.
_ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    "dev": (int,),
    "ino": (int,),
    "size": (int,),
    "mtime_ns": (int,),
    "offset": (int,),
    "format": (str, type(None)),
    "prefix_hash": (str, type(None)),
    "fingerprint": (str, type(None)),
    "appendable": (bool,),
    "tree": (bool,),
    "context": (list,),
}
_TYPE_NAMES = {int: "an integer", str: "a string", bool: "true or false", list: "a list", type(None): "null"}


def _expected(types: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES[t] for t in types)


def _check_document(doc: Any) -> None:
    """Raise ValueError naming the first field of a ``state.json`` that does not hold what a run wrote.

    The file is JSON a person or a tool may have edited: every type is checked here, where the
    error can still name the file and the recovery, instead of failing somewhere in the run.
    """
    if not isinstance(doc, dict) or doc.get("version") != STATE_VERSION:
        raise ValueError(
            f"expected version {STATE_VERSION}, found {doc.get('version') if isinstance(doc, dict) else doc!r}"
        )
    for key in ("last_run_id", "series_file", "attributes_file", "links_file", "window_file"):
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"`{key}`: expected a string or null, found {value!r}")
        # The state's own files, by name: never a path that leads out of the state directory.
        if key != "last_run_id" and value is not None and (not value or Path(value).name != value):
            raise ValueError(f"`{key}`: expected a file name in the state directory, found {value!r}")
    files = doc.get("files")
    if not isinstance(files, dict):
        raise ValueError("`files` is not an object")
    for path, entry in files.items():
        if not isinstance(entry, dict):
            raise ValueError(f"`files`, {path!r}: expected an object, found {entry!r}")
        for key, types in _ENTRY_TYPES.items():
            value = entry.get(key)
            # bool is an int to Python: an integer field holding true is as wrong as one holding "x".
            wrong_bool = isinstance(value, bool) and bool not in types
            if key in entry and (not isinstance(value, types) or wrong_bool):
                raise ValueError(f"`files`, {path!r}, `{key}`: expected {_expected(types)}, found {value!r}")
        if not all(isinstance(line, str) for line in entry.get("context", [])):
            raise ValueError(f"`files`, {path!r}, `context`: expected a list of strings")


def load_state(state: Path) -> State:
    """Read ``STATE/state.json`` and its files; a missing state is empty, a corrupt one a :class:`StateError`."""
    p = state / "state.json"
    if not p.exists():
        return State({}, None, empty_series(), None)
    try:
        doc = json.loads(p.read_text("utf-8"))
        _check_document(doc)
        files = doc["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise StateError(f"state directory {state} is corrupt ({p.name}: {e}); {RECOVERY_HINT}") from e
    series, window = (_read_samples(state, doc.get(key)) for key in ("series_file", "window_file"))
    attrs = _read_state_parquet(state, doc["attributes_file"]) if doc.get("attributes_file") else None
    links = _read_state_parquet(state, doc["links_file"]) if doc.get("links_file") else None
    return State(files, doc.get("last_run_id"), series, attrs, links, window)


def _read_samples(state: Path, name: str | None) -> pl.DataFrame:
    """One of the state's samples files (last readings, carried lookback); empty when it has none."""
    if not name:
        return empty_series()
    df = _read_state_parquet(state, name)
    if df.schema != STORED_SAMPLES_SCHEMA:
        raise StateError(
            f"state directory {state} is corrupt ({name}: unexpected columns {df.columns}); {RECOVERY_HINT}"
        )
    return df


def _read_state_parquet(state: Path, name: str) -> pl.DataFrame:
    """One of the state's Parquet files; an unreadable one is a :class:`StateError` naming that file."""
    try:
        return pl.read_parquet(state / name)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise StateError(f"state directory {state} is corrupt ({name}: {e}); {RECOVERY_HINT}") from e


def commit_state(state: Path, st: State, run_id: str) -> None:
    """Write the state's files, then rename ``state.json`` in: the run's commit point."""
    series_file = f"series-{run_id}.parquet"
    _atomic.write_parquet(state / series_file, st.series, mode=0o600)
    window_file = None
    if st.window.height:
        window_file = f"window-{run_id}.parquet"
        _atomic.write_parquet(state / window_file, st.window, mode=0o600)
    attrs_file = None
    if st.attributes is not None:
        attrs_file = f"attributes-{run_id}.parquet"
        _atomic.write_parquet(state / attrs_file, st.attributes, mode=0o600)
    links_file = None
    if st.links is not None:
        links_file = f"links-{run_id}.parquet"
        _atomic.write_parquet(state / links_file, st.links, mode=0o600)
    crash_point("before-commit")
    doc = {
        "version": STATE_VERSION,
        "last_run_id": run_id,
        "series_file": series_file,
        "attributes_file": attrs_file,
        "links_file": links_file,
        "window_file": window_file,
        "files": st.files,
    }
    # The commit point: the rename of state.json.
    _atomic.write_text(state / "state.json", json.dumps(doc, sort_keys=True), mode=0o600)
    kept = (series_file, attrs_file, links_file, window_file)
    for prefix in ("series", "attributes", "links", "window"):
        for old in state.glob(f"{prefix}-*.parquet"):
            if old.name not in kept:
                old.unlink(missing_ok=True)


def rebuild_state(state: Path, history: History) -> None:
    """``--reset-state``: forget the manifest; take the last reading per series from the history."""
    for p in [
        state / "state.json",
        state / "pending.json",
        *state.glob("series-*.parquet"),
        *state.glob("window-*.parquet"),
    ]:
        p.unlink(missing_ok=True)
    for p in state.glob("attributes-*.parquet"):
        p.unlink(missing_ok=True)
    series = last_per_series(history.samples().select(STORED_SAMPLES_SCHEMA.names()).collect())
    attrs = history.attributes()
    st = State({}, "reset", series, None if attrs is None else stored_attrs(attrs))
    commit_state(state, st, f"reset-{_time.time_ns():x}")


def last_per_series(samples: pl.DataFrame) -> pl.DataFrame:
    """The latest reading of every series in ``samples`` (stored samples schema)."""
    if samples.is_empty():
        return empty_series()
    return (
        samples.sort("time", maintain_order=True)
        .group_by(SERIES_KEYS, maintain_order=True)
        .last()
        .select(STORED_SAMPLES_SCHEMA.names())
    )


def carried_lookback(
    readings: pl.DataFrame,
    rates: pl.DataFrame,
    findings: pl.DataFrame,
    since: dt.datetime,
    traffic: Collection[str],
) -> pl.DataFrame:
    """The readings (stored schema) the next run's detectors need from before its new samples.

    Every series' last reading is carried anyway (the state's ``series``: the next interval's
    rate starts there). Beyond it, a detector's lookback matters only where something other than
    traffic moved: a port whose errors, discards, pauses, link downs or waits rose since
    ``since``, or that a warning or critical finding reaching past ``since`` names, keeps all its
    readings since then (the windows, durations and ratios its detectors judge continue into the
    next run); a quiet port keeps none. On a healthy fabric of 10,000
    hosts the carried state is then the last readings, whatever the lookback: a run costs its
    new samples, not its history.

    Args:
        readings: The previous window, the last readings and this run's new samples.
        rates: The rates this run computed (``counter``, ``end``, ``delta`` per series).
        findings: The findings this run's analysis made (``severity``, ``end`` per port).
        since: The start of the lookback (the data's newest time less the lookback).
        traffic: The counters that move in healthy operation (bytes, packets).

    Example:
        >>> import datetime as dt, polars as pl
        >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        >>> r = empty_series().vstack(empty_series())
        >>> rates = pl.DataFrame({"host": ["h"], "device": ["d"], "port": [1], "counter": ["symbol_errors"],
        ...                       "end": [t], "delta": [3.0]})
        >>> carried_lookback(r, rates, pl.DataFrame(), t, {"rx_bytes"}).height
        0
    """
    if readings.is_empty():
        return empty_series()
    port = ["host", "device", "port"]
    as_read = [pl.col(c).cast(readings.schema[c]) for c in port]
    moved = [
        rates.lazy()
        .filter(
            (pl.col("end") >= since) & (pl.col("delta") > 0) & ~pl.col("counter").cast(pl.String).is_in(list(traffic))
        )
        .select(as_read)
    ]
    if findings.height:
        moved.append(
            findings.lazy()
            .filter(pl.col("severity").is_in(list(PAGING)) & (pl.col("end").is_null() | (pl.col("end") >= since)))
            .select(as_read)
        )
    return (
        readings.lazy()
        .filter(pl.col("time") >= since)
        .join(pl.concat(moved).unique(), on=port, how="semi", nulls_equal=True)
        .unique(subset=[*SERIES_KEYS, "time"], keep="last", maintain_order=True)
        .sort("time", maintain_order=True)
        .collect()
    )


def stored_attrs(attrs: pl.DataFrame) -> pl.DataFrame:
    """Attributes with their categorical columns as strings, as the state and history store them."""
    return attrs.with_columns([pl.col(c).cast(pl.String) for c in ("host", "device", "key", "source")])

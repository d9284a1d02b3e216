"""Reading telemetry into Polars frames: the schemas, the per-input reports and :func:`scan`.

:func:`fabricscope.load` and :func:`fabricscope.read` live in :mod:`fabricscope.reading.load`, above the
pipeline's unit reader that reads through this module. All parsing happens in Rust with the GIL
released; Arrow batches cross into Polars zero-copy through the Arrow PyCapsule interface.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeAlias

import polars as pl

from fabricscope import _native
from fabricscope._native import ReaderPool

__all__ = [
    "LIMITS",
    "InputReport",
    "ReadResult",
    "TimeLike",
    "attributes_schema",
    "empty_attributes",
    "empty_samples",
    "links_schema",
    "samples_schema",
    "scan",
]

_log = logging.getLogger("fabricscope")

PathLike: TypeAlias = "str | os.PathLike[str]"
TimeLike: TypeAlias = "_dt.datetime | int | float | str | None"

#: Resource limits per input and their defaults (``docs/security.md``). Override any of them with
#: ``limits={"name": value}`` (``--limit name=value`` on the command line); exceeding one raises
#: :class:`~fabricscope.exceptions.LimitExceededError` naming the limit, or in lenient mode skips
#: and counts the offending record (line length, label count).
#: The names and defaults are the Rust core's (``fabricscope_core::Limits``), read once here.
LIMITS: dict[str, int] = dict(_native.limits())


def _polars_schema(arrow_schema: object) -> pl.Schema:
    return pl.Schema(arrow_schema)  # type: ignore[arg-type]


def samples_schema() -> pl.Schema:
    """The canonical samples table's columns and types, as the Rust core defines them.

    Example:
        >>> samples_schema()["counter"]
        Categorical
    """
    return _polars_schema(_native.samples_schema_arrow())


def attributes_schema() -> pl.Schema:
    """The port-attributes table's columns and types, as the Rust core defines them."""
    return _polars_schema(_native.attributes_schema_arrow())


def links_schema() -> pl.Schema:
    """The links (topology) table's columns and types, as the Rust core defines them."""
    return _polars_schema(_native.links_schema_arrow())


def empty_samples() -> pl.DataFrame:
    """A samples frame with no rows and the core's samples schema.

    Example:
        >>> from fabricscope.reading.scan import empty_samples
        >>> empty_samples().columns[:3]
        ['time', 'host', 'device']
    """
    return pl.DataFrame(schema=samples_schema())


def empty_attributes() -> pl.DataFrame:
    """A port-attributes frame with no rows and the core's attributes schema."""
    return pl.DataFrame(schema=attributes_schema())


@dataclass(frozen=True)
class InputReport:
    """What happened to one input.

    Attributes:
        path: The input file or sysfs tree root.
        format: Format used (None when it could not be determined).
        bytes: Decompressed bytes read.
        rows: Sample rows produced.
        attribute_rows: Port-attribute rows produced.
        bad_records: Records skipped as malformed (lenient mode).
        errors: The first problems, each naming file, line or byte offset, and what was expected.
        warnings: Non-fatal remarks (mtime used as time, host unknown, ...).
        time_source: Where fallback timestamps came from: ``in-file``, ``file-name``,
            ``argument`` or ``mtime``.
        time_resolution_ns: The coarsest resolution, in nanoseconds, of the times the input
            states for its rows, as the core reads them: the format's fixed resolution
            (Prometheus text 1 ms), a capture header's (pcap µs or ns), the digits of its
            timestamp lines (``date +%s`` 1 s, ``date +%s.%N`` 1 ns) or of a file-name stamp
            (1 s). None when unknown (rows dated by the time argument or mtime; see
            ``time_resolution`` in :func:`fabricscope.formats`).
        names_no_host: True when rows of the input name no host and no host argument was given
            (they use host ``unknown``, or a placeholder the fabric model names from the path).
        failed: True when the input could not be read at all.
        exception: For a failed input read by an analysis engine, the error it raised (to raise it
            when no input could be read at all); None otherwise.
    """

    path: str
    format: str | None
    bytes: int
    rows: int
    attribute_rows: int
    bad_records: int
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    time_source: str = "in-file"
    time_resolution_ns: int | None = None
    names_no_host: bool = False
    failed: bool = False
    exception: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ReadResult:
    """Everything one read produced.

    Attributes:
        samples: The canonical samples table (see ``docs/schema.md``).
        attributes: The port-attributes table (link layer, rate text, firmware, GUIDs, ...).
        reports: One :class:`InputReport` per input, in input order.
        tables: Other tables some readers produce, by name (``packet_events``, ``links``, ...);
            absent when no input produced rows for them.
    """

    samples: pl.DataFrame
    attributes: pl.DataFrame
    reports: list[InputReport]
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def bad_records(self) -> int:
        """Total malformed records skipped over all inputs."""
        return sum(r.bad_records for r in self.reports)

    def reports_frame(self) -> pl.DataFrame:
        """The reports as a frame, one row per input."""
        return pl.DataFrame([r.__dict__ for r in self.reports]) if self.reports else pl.DataFrame()


def _paths(paths: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise ValueError("no input paths given")
    return out


class SetMtime(int):
    """The time of an input set's timeless files: its newest file mtime, in ns since the epoch.

    A file without timestamps of its own (in its lines, its name or the ``time`` argument) is
    dated by mtime. Each file's own mtime made the same input give different times through
    different doors: git writes a checkout's files about 1 ms apart in an order of its own, and a
    door that read the files in other groups (cron by format, Ray by file) dated a result shared
    by two files from the other file. So the time is decided once per input set, before any
    reading, and every door passes the same value down: :func:`input_set_mtime`.
    """


def input_set_mtime(paths: Sequence[PathLike]) -> SetMtime | None:
    """The newest mtime of every file under ``paths`` (URLs skipped), or None without a file.

    Example:
        >>> from fabricscope.reading.scan import input_set_mtime
        >>> input_set_mtime(["sample_traces/ethtool"]) > 0
        True
    """
    newest: int | None = None
    for raw in paths:
        p = Path(os.fspath(raw))
        if str(raw).lower().startswith(("http://", "https://")):
            continue
        try:
            st = p.stat()
        except OSError:
            continue  # the reader reports the missing input
        if stat.S_ISDIR(st.st_mode):
            for root, _dirs, files in os.walk(p):
                for name in files:
                    try:
                        t = (Path(root) / name).stat().st_mtime_ns
                    except OSError:
                        continue
                    newest = t if newest is None else max(newest, t)
        else:
            newest = st.st_mtime_ns if newest is None else max(newest, st.st_mtime_ns)
    return None if newest is None else SetMtime(newest)


def _time_ns(time: TimeLike) -> int | None:
    """Convert a user-facing timestamp into integer nanoseconds since the epoch (UTC)."""
    if time is None:
        return None
    if isinstance(time, SetMtime):
        return int(time)
    if isinstance(time, _dt.datetime):
        if time.tzinfo is None:
            time = time.replace(tzinfo=_dt.timezone.utc)
        delta = time - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    if isinstance(time, bool):
        raise TypeError("time must be a datetime, epoch seconds or an ISO 8601 string")
    if isinstance(time, (int, float)):
        return round(time * 1_000_000_000)
    if isinstance(time, str):
        text = time.strip()
        try:
            return _time_ns(float(text))
        except ValueError:
            pass
        try:
            return _time_ns(_dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError as e:
            raise ValueError(f"time {time!r}: expected epoch seconds or ISO 8601") from e
    raise TypeError("time must be a datetime, epoch seconds or an ISO 8601 string")


def _native_kwargs(
    format: str,
    host: str | None,
    time: TimeLike,
    strict: bool,
    batch_rows: int,
    limits: Mapping[str, int] | None = None,
) -> dict[str, object]:
    # The limits go to the core as given: it validates the names and values (one place).
    return {
        "format": format,
        "host": host,
        "time_ns": _time_ns(time),
        "strict": strict,
        "batch_rows": batch_rows,
        "limits": None if limits is None else dict(limits),
    }


def _reports(raw: list[dict[str, object]] | None, set_mtime: SetMtime | None = None) -> list[InputReport]:
    reports = [InputReport(**r) for r in (raw or [])]  # type: ignore[arg-type]
    if set_mtime is not None:
        # The input set's mtime reached the reader as its time argument: say where it came from.
        when = _dt.datetime.fromtimestamp(set_mtime / 1e9, tz=_dt.timezone.utc).isoformat().replace("+00:00", "Z")
        note = f"no timestamp in the input or its name: using the newest mtime of the inputs read together ({when})"
        reports = [
            replace(r, time_source="mtime", warnings=[*r.warnings, note]) if r.time_source == "argument" else r
            for r in reports
        ]
    for r in reports:
        for w in r.warnings:
            # Skipped non-telemetry files (a README beside the dumps) are routine, not warnings.
            (_log.info if w.startswith(("skipped", "empty input")) else _log.warning)("%s: %s", r.path, w)
        if r.bad_records:
            _log.warning("%s: skipped %d bad record(s); first: %s", r.path, r.bad_records, r.errors[:1])
    return reports


class Scan:
    """Iterator over bounded-size sample frames; see :func:`scan`."""

    def __init__(self, scanner: _native.Scanner, include_attributes: bool, set_mtime: SetMtime | None = None) -> None:
        self._scanner = scanner
        self._include_attributes = include_attributes
        self._set_mtime = set_mtime
        self.reports: list[InputReport] | None = None

    def __iter__(self) -> Iterator[pl.DataFrame] | Iterator[tuple[str, pl.DataFrame]]:
        for kind, batch in self._scanner:
            if self._include_attributes:
                yield kind, _owned(pl.DataFrame(batch)) if kind == "samples" else pl.DataFrame(batch)
            elif kind == "samples":
                yield _owned(pl.DataFrame(batch))
        self.reports = _reports(self._scanner.reports(), self._set_mtime)

    @property
    def bytes_read(self) -> int:
        """Input bytes consumed so far (for progress bars)."""
        return self._scanner.bytes_read

    @property
    def bytes_total(self) -> int:
        """Total input bytes (0 when unknown)."""
        return self._scanner.bytes_total


def _owned(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with every column in memory of its own, no longer in the Rust reader's batch.

    Polars imports the reader's Arrow batch as one allocation: its numeric columns keep the whole
    batch alive, including the dictionary keys of the string columns, which Polars has already
    re-encoded as categoricals of its own. Copying the numeric columns (one memcpy) frees those
    dead keys, about a quarter of the samples' Arrow size, for as long as the samples are held.
    """
    if frame.height < 2:
        return frame
    return pl.concat([frame.slice(0, 1), frame.slice(1)], how="vertical", rechunk=True)


def scan(
    paths: PathLike | Sequence[PathLike],
    *,
    format: str = "auto",
    host: str | None = None,
    time: TimeLike = None,
    strict: bool = True,
    batch_rows: int = 1 << 20,
    include_attributes: bool = False,
    limits: Mapping[str, int] | None = None,
    readers: ReaderPool | None = None,
    regular_files_only: bool = False,
) -> Scan:
    """Stream inputs larger than memory as frames of at most ``batch_rows`` rows.

    Parsing runs on a background thread and waits while the consumer is busy, so memory stays
    bounded. Iterate the result; afterwards ``.reports`` holds the per-input reports.

    Args:
        paths: Files or directories the Rust reader reads (not URLs or ``fabricscope cron``
            histories, which :func:`fabricscope.load` reads). See :func:`fabricscope.load`.
        format: ``"auto"`` or a format name.
        host: Host for inputs that name none.
        time: Timestamp for inputs that carry none.
        strict: Raise on the first malformed record, or skip and count.
        batch_rows: Most rows per yielded frame.
        include_attributes: Yield ``(kind, frame)`` pairs with kind ``"samples"``,
            ``"attributes"`` or another table's name instead of sample frames only.
        limits: Overrides of the resource limits in :data:`LIMITS` (see :func:`fabricscope.load`).
        readers: A :class:`fabricscope.ReaderPool` that the scans of one run share: a reader
            that finished an input serves the next one with the label sets it resolved (the
            same frames as a new reader gives, less work). None: a pool of this scan's own.
        regular_files_only: Read a named path only if it is a regular file: a FIFO, a socket or
            a device is reported with a warning and never opened in a way that blocks. Files found
            in a directory are always read so; a FIFO named here is otherwise read as a stream.

    Returns:
        A :class:`Scan` iterator.

    Example:
        >>> import fabricscope
        >>> total = sum(f.height for f in fabricscope.scan("sample_traces", batch_rows=1000))
        >>> total > 0
        True

        Scans of one run, file by file, sharing their readers:

        >>> readers = fabricscope.ReaderPool()
        >>> rows = [f.height for f in fabricscope.scan("sample_traces/prometheus", readers=readers)]
        >>> sum(rows) > 0
        True
    """
    every = _paths(paths)
    if time is None:
        time = input_set_mtime(every)
    kwargs = _native_kwargs(format, host, time, strict, batch_rows, limits)
    scanner = _native.Scanner(every, **kwargs, readers=readers, regular_files_only=regular_files_only)
    return Scan(scanner, include_attributes, time if isinstance(time, SetMtime) else None)

"""Work units: what a worker reads on its own, and reading them in a stable order."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from fabricscope import _native
from fabricscope.exceptions import FabricscopeError, FormatError, InputError, UnknownFormatError
from fabricscope.fabric.entities import path_placeholder, rename_hosts
from fabricscope.reading.history import History, is_history, part_files
from fabricscope.reading.options import Filters, ReadOptions, split_by_partition
from fabricscope.reading.prometheus import RemoteOptions, is_url, load_url
from fabricscope.reading.scan import InputReport, ReaderPool, empty_samples, scan
from fabricscope.transport import redact

__all__ = [
    "ATTRIBUTES",
    "SAMPLES",
    "Spill",
    "Unit",
    "UnitRead",
    "available_cores",
    "group_units",
    "is_parsed_samples",
    "raise_if_nothing_read",
    "read_unit",
    "read_units",
    "work_units",
]

Unit = tuple[str, str]
"""A path and its kind: ``file`` (named by the user), ``walked`` (found by walking a directory:
skipped when its format cannot be detected, as the Rust reader does), ``history`` (one Parquet
part of a ``fabricscope cron`` history), ``history-attributes`` (a history's port attributes) or
``url`` (a Prometheus server or an exporter endpoint, :mod:`fabricscope.reading.prometheus`) or
``parsed`` (what ``fabricscope parse -o`` wrote: :data:`PARSED`)."""

FILE, WALKED, HISTORY, HISTORY_ATTRIBUTES, URL = "file", "walked", "history", "history-attributes", "url"
PARSED = "parsed"
"""The kind of a samples Parquet file ``fabricscope parse -o OUT.parquet`` wrote: read with the
side outputs beside it (``OUT.attributes.parquet``, ``OUT.links.parquet`` ...)."""


def _history_units(root: Path, filters: Filters) -> list[Unit]:
    # The history's Hive layout (samples/date=YYYY-MM-DD/part-*.parquet) prunes whole days by the
    # time filters before any file is opened; hosts are pruned inside each part (its row groups'
    # statistics), by the filters' predicates.
    units: list[Unit] = [
        (str(f), HISTORY) for f in part_files(root / "samples", _date(filters.since), _date(filters.until))
    ]
    if (root / "attributes.parquet").is_file():
        units.append((str(root), HISTORY_ATTRIBUTES))
    return units


def _date(ns: int | None) -> dt.date | None:
    return None if ns is None else dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).date()


def work_units(
    paths: Sequence[str | os.PathLike[str]], format: str = "auto", filters: Filters | None = None
) -> list[Unit]:
    """Expand inputs into independently readable units, in the order the Rust reader uses.

    Directories expand as the Rust reader expands them (``_native.expand``: sorted, dot entries
    skipped, symlink loops entered once, sysfs trees kept whole). Missing paths stay units so
    that reading them reports the error. A ``fabricscope cron`` history directory becomes its sample files, pruned
    by ``filters`` through the date and host directories.

    Example:
        >>> from fabricscope.reading.units import work_units
        >>> work_units(["sample_traces/ethtool"])
        [('sample_traces/ethtool/roce01-eth2.log', 'walked')]
    """
    units: list[Unit] = []
    pending: list[str] = []

    def expand_pending() -> None:
        # The Rust core decides what a directory holds and what counts as a sysfs tree; a path
        # it cannot read stays a unit so that reading it reports the error.
        expanded = [(path, WALKED if kind == "walked" else FILE) for path, kind in _native.expand(pending, format)]
        units.extend(_parsed_units(expanded))
        pending.clear()

    for p in paths:
        if is_url(p):
            units.append((str(p), URL))
            continue
        path = Path(p)
        if path.is_dir() and is_history(path):
            expand_pending()
            units.extend(_history_units(path, filters or Filters()))
        else:
            pending.append(os.fspath(p))
    expand_pending()
    return units


def _parsed_units(units: list[Unit]) -> list[Unit]:
    """``units`` with each samples Parquet file ``fabricscope parse`` wrote as one ``parsed`` unit.

    Its side outputs (``OUT.<table>.parquet`` beside ``OUT.parquet``) are read with it, never as
    units of their own.
    """
    bases = {p.removesuffix(".parquet") for p, _ in units if p.endswith(".parquet") and is_parsed_samples(p)}
    if not bases:
        return units
    out: list[Unit] = []
    for path, kind in units:
        if path.removesuffix(".parquet") in bases:
            out.append((path, PARSED))
        elif not (path.endswith(".parquet") and any(path.startswith(b + ".") for b in bases)):
            out.append((path, kind))
    return out


def is_parsed_samples(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a samples Parquet file ``fabricscope parse -o`` wrote.

    It is when its columns are the canonical samples table's.
    """
    try:
        names = set(pl.read_parquet_schema(path))
    except Exception:
        return False
    return names == set(_native_samples_columns())


def _native_samples_columns() -> list[str]:
    return empty_samples().columns


def _read_parsed(path: str, filters: Filters) -> UnitRead:
    """A parse output: its samples, its attributes and its side tables.

    Its entities are not read: they are the fabric model's, which the analysis makes again.
    """
    base = path.removesuffix(".parquet")
    samples = pl.read_parquet(path)
    frames: list[tuple[str, pl.DataFrame]] = [(SAMPLES, filters.apply(samples))]
    attribute_rows = 0
    for side in sorted(Path(path).parent.glob(Path(base).name + ".*.parquet")):
        name = side.name.removeprefix(Path(base).name + ".").removesuffix(".parquet")
        if name == "entities" or "." in name:
            continue
        frame = pl.read_parquet(side)
        if name == ATTRIBUTES:
            attribute_rows = frame.height
            frame = filters.apply(frame, timed=False)
        frames.append((name, frame))
    return UnitRead([InputReport(path, "parquet", _size(path), samples.height, attribute_rows, 0)], frames)


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def available_cores() -> int:
    """Cores this process may run on (a ``taskset`` or a container's CPU set), else all of them."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def group_units(units: list[Unit], groups: int) -> list[list[Unit]]:
    """Split units into at most ``groups`` lists of similar total size, keeping input order inside."""
    sizes = []
    for path, _ in units:
        try:
            sizes.append(Path(path).stat().st_size)
        except OSError:
            sizes.append(0)
    total = sum(sizes) or 1
    per = total / max(1, groups)
    out: list[list[Unit]] = [[]]
    acc = 0
    for u, s in zip(units, sizes, strict=True):
        if out[-1] and acc + s > per and len(out) < groups:
            out.append([])
            acc = 0
        out[-1].append(u)
        acc += s
    return [g for g in out if g]


def read_units(
    units: Sequence[Unit],
    read: ReadOptions,
    filters: Filters,
    partitions: int,
    batch_rows: int = 1 << 20,
    readers: ReaderPool | None = None,
) -> tuple[list[InputReport], dict[str, pl.DataFrame], list[list[pl.DataFrame]], list[list[pl.DataFrame]]]:
    """Read units in order (:func:`read_unit` each), filtered and split by host partition.

    Each unit is scanned on its own, so rows arrive in the same order on every run and in every
    engine (the Rust reader interleaves the batches of files it reads in parallel). The scans
    share ``readers`` (a new pool when None; a run that reads on several threads passes one
    for all): a fabric's label sets are resolved once, not once per file.

    Returns:
        ``(reports, tables, samples, attributes)``: ``samples[i]``/``attributes[i]`` list the
        frames of partition ``i``, in read order.
    """
    reports: list[InputReport] = []
    samples: list[list[pl.DataFrame]] = [[] for _ in range(partitions)]
    attrs: list[list[pl.DataFrame]] = [[] for _ in range(partitions)]
    tables: dict[str, list[pl.DataFrame]] = {}
    if readers is None:
        readers = ReaderPool()
    for path, kind in units:
        got = read_unit(path, kind, read, filters, batch_rows, readers)
        reports.extend(got.reports)
        for name, frame in got.frames:
            if name in (SAMPLES, ATTRIBUTES):
                into = samples if name == SAMPLES else attrs
                for i, df in split_by_partition(frame, partitions).items():
                    into[i].append(df)
            else:
                tables.setdefault(name, []).append(frame)
    return reports, {k: pl.concat(v, how="vertical_relaxed") for k, v in tables.items()}, samples, attrs


SAMPLES, ATTRIBUTES = "samples", "attributes"
"""The names of a unit's samples and port attributes among its frames (the other names are side
tables: ``links``, ``nccl_results``, ``packet_events`` ...)."""


@dataclass
class UnitRead:
    """What one unit gave: its reports, and its frames in read order as ``(table, frame)``.

    Attributes:
        reports: The unit's input reports (one per file of a sysfs tree or a history part).
        frames: ``(table, frame)`` pairs: ``samples`` (screened and filtered), ``attributes``
            (filtered by host) and side tables, not yet handed to ``spill``.
        spilled: Rows handed to ``spill`` while reading (:func:`read_unit`).
        needs_path_host: Whether the unit is one host's output naming no host: its rows are read
            under its own placeholder host (:func:`fabricscope.fabric.entities.path_placeholder`),
            which the fabric model names from the path.
    """

    reports: list[InputReport]
    frames: list[tuple[str, pl.DataFrame]] = field(default_factory=list)
    spilled: int = 0
    needs_path_host: bool = False


Spill = Callable[[str, pl.DataFrame], None]
"""Where :func:`read_unit` hands a unit's frames once it holds more than ``hold_rows``."""


def read_unit(
    path: str,
    kind: str,
    read: ReadOptions,
    filters: Filters | None = None,
    batch_rows: int = 1 << 20,
    readers: ReaderPool | None = None,
    *,
    spill: Spill | None = None,
    hold_rows: int = 1 << 22,
) -> UnitRead:
    """Read one unit by the rules every door shares: the one read of the read path.

    A failed input is a report with its error (nothing of it kept), never an exception: a
    walked file whose format cannot be detected is skipped with a warning, as the Rust walker
    skips it; a file that fails strict reading is listed with its error; in lenient reading it is
    read again leniently to count its bad records. Samples dated past the horizon and
    non-finite counters are bad records (:class:`SampleScreen`); a host-less input one host
    prints about itself is read under its path's placeholder host.

    Args:
        path: The unit's path (or URL).
        kind: Its kind (:data:`Unit`).
        read: The reader options.
        filters: Host and time filters (None: keep everything).
        batch_rows: Rows per parsed batch.
        readers: A reader pool to share (a new one when None).
        spill: Where frames go once the unit holds more than ``hold_rows`` (a streaming writer:
            ``fabricscope parse``); None holds the whole unit. A unit that spilled keeps the host
            its input names (``unknown`` when none): its rows left before its end was known.
        hold_rows: Rows held before frames go to ``spill``.

    Returns:
        A :class:`UnitRead`.
    """
    filters = filters or Filters()
    readers = readers or ReaderPool()
    if kind in (HISTORY, HISTORY_ATTRIBUTES):
        return _read_history(path, kind, filters)
    if kind == PARSED:
        try:
            return _read_parsed(path, filters)
        except (OSError, pl.exceptions.PolarsError) as e:
            return UnitRead([_failed(path, InputError(f"{path}: cannot read the parse output: {e}"))])
    if kind == URL:
        try:
            return _read_url(path, read, filters)
        except FabricscopeError as e:
            # A server that fails (an error status, no answer, the deadline, an error inside a
            # 200) is one unreadable input, as a file is: the others are read and judged.
            return UnitRead([_failed(redact(path), e)])
    walked = kind == WALKED
    sink = _Hold(spill, hold_rows)
    try:
        # A walked file is tried strictly first: in lenient mode an undetectable file would
        # come back as a failed input, where the Rust walker skips it.
        return _scan_unit(path, read, filters, batch_rows, readers, sink, strict=read.strict or walked, walked=walked)
    except UnknownFormatError as e:
        if walked:
            # What the Rust reader does with an undetectable file it found by walking.
            # Its warning in the Rust walker's words, naming what was found (the path is the report's).
            why = getattr(e, "found", None) or str(e)
            return UnitRead(
                [InputReport(path, None, 0, 0, 0, 0, warnings=[f"skipped: not a recognised format ({why})"])]
            )
        return UnitRead([_failed(path, e)], spilled=sink.spilled)
    except FabricscopeError as e:
        if read.strict or sink.spilled:
            # One unreadable input does not discard the others: it is listed with its error
            # (nothing of it is kept, but what already went to a streaming writer) and the
            # analysis status accounts for it.
            return UnitRead([_failed(path, e)], spilled=sink.spilled)
    try:
        # Again leniently, to count bad records.
        return _scan_unit(
            path, read, filters, batch_rows, readers, _Hold(spill, hold_rows), strict=False, walked=walked
        )
    except FabricscopeError as e2:
        return UnitRead([_failed(path, e2)])


class _Hold:
    """A unit's frames, held until ``hold_rows``, then handed to ``spill`` as they come."""

    def __init__(self, spill: Spill | None, hold_rows: int) -> None:
        self.spill, self.hold_rows = spill, hold_rows
        self.frames: list[tuple[str, pl.DataFrame]] = []
        self.held = 0
        self.spilled = 0

    def add(self, name: str, frame: pl.DataFrame) -> None:
        if self.spill is None or (not self.spilled and self.held + frame.height <= self.hold_rows):
            self.frames.append((name, frame))
            self.held += frame.height
            return
        for n, f in self.frames:
            self.spill(n, f)
            self.spilled += f.height
        self.frames.clear()
        self.spill(name, frame)
        self.spilled += frame.height


def _failed(path: str, err: Exception) -> InputReport:
    """The report of an input that could not be read: no rows kept, its error listed."""
    return InputReport(path, None, 0, 0, 0, 0, errors=[str(err)], failed=True, exception=err)


def raise_if_nothing_read(reports: Sequence[InputReport]) -> None:
    """Raise the first input's error when inputs failed and none was read: nothing to analyse.

    With at least one readable input the failures stay in the reports (the analysis runs and its
    status accounts for them); with none, the caller gets the error as before.
    """
    failed = [r for r in reports if r.failed]
    if failed and not any(r.format is not None and not r.failed for r in reports):
        err = next((r.exception for r in failed if r.exception is not None), None)
        if err is not None:
            raise err


def _read_history(path: str, kind: str, filters: Filters) -> UnitRead:
    if kind == HISTORY_ATTRIBUTES:
        a = History(path).attributes()
        return UnitRead([], [] if a is None else [(ATTRIBUTES, filters.apply(a, timed=False))])
    df = History.read_part(path, filters.predicates())
    return UnitRead([InputReport(path, "parquet", Path(path).stat().st_size, df.height, 0, 0)], [(SAMPLES, df)])


def _read_url(url: str, read: ReadOptions, filters: Filters) -> UnitRead:
    # A server is pulled over the filters' time range (the last hour when none is given).
    opts = (read.remote or RemoteOptions()).with_range(filters.since, filters.until)
    got, got_attrs, report = load_url(
        url, opts, format=read.format, host=read.host, strict=read.strict, limits=dict(read.limits)
    )
    screen = SampleScreen(url, read, strict=read.strict)
    got = screen.keep(got)
    reports = screen.report([InputReport(**report)])  # type: ignore[arg-type]
    return UnitRead(reports, [(SAMPLES, filters.apply(got)), (ATTRIBUTES, filters.apply(got_attrs, timed=False))])


def _scan_unit(
    path: str,
    read: ReadOptions,
    filters: Filters,
    batch_rows: int,
    readers: ReaderPool,
    sink: _Hold,
    *,
    strict: bool,
    walked: bool,
) -> UnitRead:
    it = scan(
        [path],
        format=read.format,
        host=read.host,
        time=read.time,
        strict=strict,
        batch_rows=batch_rows,
        include_attributes=True,
        limits=dict(read.limits),
        readers=readers,
        # A file found in a directory is read only if it is a regular file (as the Rust walker
        # reads it): a FIFO put there is skipped, never waited on.
        regular_files_only=walked or read.regular_files_only,
    )
    screen = SampleScreen(path, read, strict=strict)
    for kind, frame in it:
        if kind == SAMPLES:
            sink.add(SAMPLES, filters.apply(screen.keep(frame)))
        elif kind == ATTRIBUTES:
            sink.add(ATTRIBUTES, filters.apply(frame, timed=False))
        else:
            sink.add(kind, frame)
    reports = screen.report(it.reports or [])
    got = UnitRead(reports, sink.frames, sink.spilled)
    if read.host is None and read.host_from_path and any(_names_no_host(r) for r in reports):
        # Its rows are this input's own host until the pipeline names it from the path
        # (fabricscope.fabric.entities.host_in_path): two host-less files are never one host.
        got.needs_path_host = True
        if not sink.spilled:
            names = {"unknown": path_placeholder(path)}
            got.frames = [(n, rename_hosts(f, names)) for n, f in got.frames]
            for r in reports:
                r.warnings[:] = [w for w in r.warnings if not w.startswith(NO_HOST_WARNING)]
    return got


NO_HOST_WARNING = "no host in the input and no host argument"
"""The reader's warning on an input naming no host (its rows use host ``unknown``)."""


PER_HOST_FORMATS = frozenset(f["name"] for f in _native.formats() if f["about_its_host"])
"""Formats one host prints about itself (the core's ``about_its_host``): a host-less file of one
is that host's, and its path may name it. Not fabric-wide dumps (perfquery, ibqueryerrors: a
management node's view), captures or benchmark logs: a host-less one of those stays ``unknown``.
"""


def _names_no_host(report: InputReport) -> bool:
    return report.format in PER_HOST_FORMATS and report.names_no_host


class SampleScreen:
    """Samples no reader can tell are wrong, made bad records: dated past the horizon, non-finite counters.

    A sample dated beyond :meth:`ReadOptions.horizon_ns` (the clock plus ``--future-margin``) is
    not data of this fabric's past: one such reading would end every interval of its series and,
    in cron, become its watermark. A counter reading of ``+Inf``, ``-Inf`` or ``NaN`` (Prometheus
    text allows them, for gauges) counts nothing: as a rate it is an infinite error count, a
    fault no port had. Both are bad records of their input, as a malformed line is: strict
    reading fails the input naming the first one, lenient reading skips and counts them in the
    input's report.

    Example:
        >>> import polars as pl
        >>> from fabricscope.reading.options import ReadOptions
        >>> from fabricscope.reading.units import SampleScreen
        >>> from fabricscope.reading.scan import empty_samples
        >>> s = SampleScreen("x.prom", ReadOptions(now_ns=0), strict=False)
        >>> s.keep(empty_samples()).height, s.skipped
        (0, 0)
    """

    def __init__(self, path: str, read: ReadOptions, *, strict: bool) -> None:
        self.path = path
        self.horizon = read.horizon_ns()
        self.margin_s = read.future_margin_s
        self.strict = strict
        self.future = 0
        self.non_finite = 0
        self.first: list[str] = []

    @property
    def skipped(self) -> int:
        """Samples skipped so far."""
        return self.future + self.non_finite

    def keep(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The samples of ``frame`` that pass; raises :class:`FormatError` on the first that does not (strict)."""
        if frame.is_empty() or "time" not in frame.columns:
            return frame
        late = pl.lit(False)
        if self.horizon is not None:
            late = pl.col("time").dt.epoch("ns") > self.horizon
        odd = pl.lit(False)
        if {"is_counter", "value_f64"} <= set(frame.columns):
            odd = pl.col("is_counter").fill_null(False) & ~pl.col("value_f64").is_finite().fill_null(True)
        flags = frame.select(late.fill_null(False).alias("late"), (odd & ~late.fill_null(False)).alias("odd"))
        late_s, odd_s = flags["late"], flags["odd"]
        n_late, n_odd = int(late_s.sum()), int(odd_s.sum())
        if not n_late and not n_odd:
            return frame
        # Each sample counted once: one dated past the horizon is that, whatever its value.
        if n_late:
            self._note(frame.filter(late_s).row(0, named=True), "late")
        if n_odd:
            self._note(frame.filter(odd_s).row(0, named=True), "odd")
        self.future += n_late
        self.non_finite += n_odd
        return frame.filter(~(late_s | odd_s))

    def _note(self, row: dict[str, object], why: str) -> None:
        where = " ".join(str(row[k]) for k in ("host", "device") if row.get(k) is not None)
        if row.get("port") is not None:
            where += f" port {row['port']}"
        what = f"{row.get('counter')} of {where or 'an unnamed port'}"
        if why == "late":
            assert self.horizon is not None
            text = (
                f"{what} dated {_iso(row['time'])}: expected a time at most {self.margin_s:g} s after the clock "
                f"(no later than {_iso_ns(self.horizon)}; --future-margin sets the margin)"
            )
        else:
            text = f"{what}: counter reading {_prometheus_spelling(row.get('value_f64'))}: expected a finite number"
        if self.strict:
            err = FormatError(f"{self.path}: {text}")
            err.path, err.line, err.byte_offset = self.path, None, None
            err.expected = "a finite counter reading" if why == "odd" else "a time no later than the clock's horizon"
            err.found = text
            raise err
        if len(self.first) < 2:
            self.first.append(text)

    def report(self, reports: list[InputReport]) -> list[InputReport]:
        """``reports`` with the skipped samples counted as bad records of the input that held them."""
        if not self.skipped or not reports:
            return reports
        parts = []
        if self.future:
            parts.append(f"{self.future:,} sample(s) dated past the clock's horizon")
        if self.non_finite:
            parts.append(f"{self.non_finite:,} non-finite counter reading(s)")
        note = f"skipped {' and '.join(parts)} as bad records; first: {'; '.join(self.first)}"
        # The unit's samples came from its first report with rows (one file, or one sysfs tree).
        at = next((i for i, r in enumerate(reports) if r.rows), 0)
        r = reports[at]
        fixed = replace(
            r, rows=max(0, r.rows - self.skipped), bad_records=r.bad_records + self.skipped, errors=[*r.errors, note]
        )
        return [*reports[:at], fixed, *reports[at + 1 :]]


def _iso(t: object) -> str:
    if isinstance(t, dt.datetime):
        return t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    return str(t)


def _iso_ns(ns: int) -> str:
    return _iso(dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc))


def _prometheus_spelling(value: object) -> str:
    """A non-finite reading as Prometheus text writes it (``+Inf``, ``-Inf``, ``NaN``)."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return str(value)

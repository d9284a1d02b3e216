"""The history ``fabricscope cron`` keeps: Hive-partitioned Parquet, readable without fabricscope.

Layout (a contract: the dashboard, DuckDB and Polars read it directly)::

    HISTORY/
      samples/date=YYYY-MM-DD/part-<run_id>.parquet    canonical samples, strings for dictionaries
      findings/date=YYYY-MM-DD/part-<run_id>.parquet   FINDINGS_SCHEMA + run_id + fault_id
      lifecycle.parquet     one row per fault: first_seen, last_seen, resolved_at, runs, ...
      runs.parquet          one row per cron run
      attributes.parquet    latest port attributes (link layer, rate text, ...) for analysis

A run adds one part per table and day its data spans, whatever the number of hosts: a fabric of
10,000 hosts is not 20,000 files a run. Rows are sorted by host, device, port, counter and time,
in row groups of :data:`ROW_GROUP_ROWS`, so a reader that wants a few hosts (or a time range)
decodes only their row groups: Parquet's statistics prune the rest. Histories written with a
``host=H`` directory level below the day (the earlier layout) are read the same way. Temporary
files live in ``HISTORY/.staging`` and never match ``**/*.parquet`` globs under ``samples/`` or
``findings/``.

From DuckDB::

    SELECT * FROM read_parquet('HISTORY/samples/**/*.parquet', hive_partitioning = true,
                               hive_types = {'date': DATE});
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from fabricscope.detect.link_wearout import HOURLY_SCHEMA
from fabricscope.exceptions import HistoryError
from fabricscope.incidents.findings import FINDINGS_SCHEMA
from fabricscope.reading.scan import samples_schema

__all__ = [
    "LIFECYCLE_SCHEMA",
    "ROLLUP_FILE",
    "ROW_GROUP_ROWS",
    "RUNS_SCHEMA",
    "STORED_SAMPLES_SCHEMA",
    "History",
    "is_history",
    "part_files",
    "partition_dir",
    "read_rollup",
    "sorted_for_history",
    "to_canonical",
    "to_stored",
]

ROW_GROUP_ROWS = 131_072
"""Rows per Parquet row group of a history part: small enough that the statistics of host and
time prune a read of a few hosts, large enough that a part of a million rows has a few dozen."""
PART_SORT = ("host", "device", "port", "counter", "time")
"""The order of a part's rows (see the module docstring); null hosts (findings of the fabric) first."""
ROLLUP_FILE = "wearout_hourly.parquet"
"""The hourly roll-up of error counts (:data:`fabricscope.detect.link_wearout.HOURLY_SCHEMA`) cron fits
wear-out trends to: weeks of judgement without rereading weeks of samples."""
_DICT_COLUMNS = ("host", "device", "counter", "source")


def _stored_samples_schema() -> pl.Schema:
    """The canonical samples schema (owned by the Rust core) with dictionary columns as strings."""
    # Through the Arrow C interface (fabricscope.reading.scan), not pyarrow: importing pyarrow (and the pandas
    # it pulls in) would cost every command that imports fabricscope a quarter of a second.
    return pl.Schema({n: pl.String if n in _DICT_COLUMNS else t for n, t in samples_schema().items()})


STORED_SAMPLES_SCHEMA = _stored_samples_schema()

STORED_FINDINGS_SCHEMA = pl.Schema({**FINDINGS_SCHEMA, "run_id": pl.String, "fault_id": pl.String})

_TS = pl.Datetime("ns", "UTC")
LIFECYCLE_SCHEMA = pl.Schema(
    {
        "fault_id": pl.String,
        **{
            k: FINDINGS_SCHEMA[k] for k in ("kind", "severity", "host", "device", "port", "priority", "layer", "metric")
        },
        "first_seen": _TS,
        "last_seen": _TS,
        "resolved_at": _TS,
        "runs": pl.Int64,
        "last_message": pl.String,
        "last_evidence": pl.String,
    }
)

RUNS_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "started": pl.Datetime("ns", "UTC"),
        "finished": pl.Datetime("ns", "UTC"),
        "duration_s": pl.Float64,
        "files_read": pl.Int64,
        "samples": pl.Int64,
        "status": pl.String,
        "exit_code": pl.Int64,
    }
)


_PARQUET_MAGIC = b"PAR1"


def checked_parquet(path: Path) -> Path:
    """``path`` once it is a whole Parquet file (its magic at both ends); else a :class:`HistoryError` naming it.

    A file cut short (a full disk, a copy interrupted) loses its footer, which is written last:
    the check reads eight bytes, so every part is checked before a scan, and the error names the
    file instead of surfacing as a decoder's message from somewhere inside a scan of many files.
    """
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            head = b""
            tail = b""
            if size >= 2 * len(_PARQUET_MAGIC):
                fh.seek(0)
                head = fh.read(len(_PARQUET_MAGIC))
                fh.seek(size - len(_PARQUET_MAGIC))
                tail = fh.read(len(_PARQUET_MAGIC))
    except OSError as e:
        raise HistoryError(str(path), f"cannot be read: {e.strerror or e}") from e
    if head != _PARQUET_MAGIC or tail != _PARQUET_MAGIC:
        raise HistoryError(
            str(path),
            f"not a complete Parquet file ({size} bytes, no Parquet footer: cut short or overwritten); "
            "restore it from a backup, or move it out of the history (its rows are lost) and run again",
        )
    return path


def is_history(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a history directory written by ``fabricscope cron``.

    Example:
        >>> is_history("sample_traces")
        False
    """
    p = Path(path)
    return p.is_dir() and ((p / "runs.parquet").is_file() or (p / "samples").is_dir())


def partition_dir(root: Path, table: str, date: dt.date) -> Path:
    """The Hive partition directory of one day in ``table`` (``samples`` or ``findings``).

    Example:
        >>> import datetime as dt, pathlib
        >>> partition_dir(pathlib.Path("H"), "samples", dt.date(2026, 12, 2)).as_posix()
        'H/samples/date=2026-12-02'
    """
    return root / table / f"date={date.isoformat()}"


def sorted_for_history(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` in the order of a history part (:data:`PART_SORT`, the columns it has).

    Example:
        >>> import polars as pl
        >>> sorted_for_history(pl.DataFrame({"host": ["b", "a"], "time": [1, 2]}))["host"].to_list()
        ['a', 'b']
    """
    cols = [c for c in PART_SORT if c in df.columns]
    return df.sort(cols, nulls_last=False, maintain_order=True) if cols else df


def to_stored(samples: pl.DataFrame) -> pl.DataFrame:
    """Canonical samples with dictionary columns as plain strings (the stored form).

    Example:
        >>> import fabricscope
        >>> to_stored(fabricscope.read("sample_traces/ethtool")).schema["host"]
        String
    """
    return samples.select([pl.col(c).cast(t) for c, t in STORED_SAMPLES_SCHEMA.items()])


def to_canonical(samples: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Stored samples back into the canonical schema (Categorical dictionaries) for analysis.

    Example:
        >>> import fabricscope
        >>> s = to_stored(fabricscope.read("sample_traces/ethtool"))
        >>> to_canonical(s).schema["counter"]
        Categorical
    """
    return samples.select(
        [pl.col(c).cast(pl.Categorical() if c in _DICT_COLUMNS else t) for c, t in STORED_SAMPLES_SCHEMA.items()]
    )


def _utc(t: dt.datetime | str | None) -> dt.datetime | None:
    if t is None:
        return None
    if isinstance(t, str):
        t = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def part_files(table_dir: Path, first: dt.date | None = None, last: dt.date | None = None) -> list[Path]:
    """The part files of a history table's days from ``first`` to ``last``, in path order.

    A day's parts sit in its ``date=`` directory (or, in histories of the earlier layout, one level
    below it, in ``host=`` directories); anything else under the table is not a part.

    Example:
        >>> import pathlib, tempfile
        >>> part_files(pathlib.Path(tempfile.mkdtemp()) / "samples")
        []
    """
    out: list[Path] = []
    for ddir in sorted(table_dir.glob("date=*")):
        try:
            day = dt.date.fromisoformat(ddir.name.removeprefix("date="))
        except ValueError:
            continue
        if (first is not None and day < first) or (last is not None and day > last):
            continue
        out.extend(sorted([*ddir.glob("*.parquet"), *ddir.glob("host=*/*.parquet")]))
    return out


class History:
    """Read access to a history directory.

    Args:
        path: The ``HISTORY`` directory given to ``fabricscope cron --history``.

    Example:
        >>> import tempfile
        >>> h = History(tempfile.mkdtemp())
        >>> h.samples().collect().height, h.lifecycle().height, h.runs().height
        (0, 0, 0)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def samples(
        self,
        since: dt.datetime | str | None = None,
        until: dt.datetime | str | None = None,
        hosts: list[str] | None = None,
    ) -> pl.LazyFrame:
        """Stored samples, lazily, in the stored schema (strings for dictionary columns).

        Args:
            since: Only samples at or after this time (UTC when naive; ISO text accepted).
            until: Only samples before this time.
            hosts: Only these hosts.

        Returns:
            A LazyFrame with the canonical columns plus the partition ``date``. Pass it through
            :func:`to_canonical` for :func:`fabricscope.run_analysis`.
        """
        since_t, until_t = _utc(since), _utc(until)
        files = self._files("samples", since_t.date() if since_t else None, until_t.date() if until_t else None)
        if not files:
            return pl.LazyFrame(schema={**STORED_SAMPLES_SCHEMA, "date": pl.Date})
        # Days are pruned from the paths above; hosts and times by each part's row-group statistics.
        lf = pl.scan_parquet(files, hive_partitioning=False).select(
            *STORED_SAMPLES_SCHEMA.names(), pl.col("time").dt.date().alias("date")
        )
        if since_t is not None:
            lf = lf.filter(pl.col("time") >= since_t)
        if until_t is not None:
            lf = lf.filter(pl.col("time") < until_t)
        if hosts is not None:
            lf = lf.filter(pl.col("host").is_in(list(hosts)))
        return lf

    @staticmethod
    def read_part(path: str | os.PathLike[str], where: Sequence[pl.Expr] = ()) -> pl.DataFrame:
        """One stored samples file in the canonical schema, only the rows all of ``where`` select.

        The analysis engines read a history one part at a time through here (the filters are
        pushed into the Parquet scan: row groups outside the window are never decoded).
        """
        lf = pl.scan_parquet(checked_parquet(Path(path)), hive_partitioning=False)
        df = to_canonical(lf.filter(*where) if where else lf)
        return df.collect() if isinstance(df, pl.LazyFrame) else df

    def _files(self, table: str, first: dt.date | None, last: dt.date | None) -> list[Path]:
        """Part files of the days from ``first`` to ``last`` (pruning by directory name)."""
        return [checked_parquet(p) for p in part_files(self.path / table, first, last)]

    def findings(self, since: dt.datetime | str | None = None, until: dt.datetime | str | None = None) -> pl.LazyFrame:
        """Stored findings of every run: FINDINGS_SCHEMA plus ``run_id``, ``fault_id``, ``date``.

        Args:
            since: Only findings ending at or after this time.
            until: Only findings starting before this time.
        """
        files = self._files("findings", None, None)
        if not files:
            lf = pl.LazyFrame(schema={**STORED_FINDINGS_SCHEMA, "date": pl.Date})
        else:
            lf = pl.scan_parquet(files, hive_partitioning=False).select(
                *STORED_FINDINGS_SCHEMA.names(), pl.coalesce("start", "end").dt.date().alias("date")
            )
        since_t, until_t = _utc(since), _utc(until)
        if since_t is not None:
            lf = lf.filter(pl.col("end").is_null() | (pl.col("end") >= since_t))
        if until_t is not None:
            lf = lf.filter(pl.col("start").is_null() | (pl.col("start") < until_t))
        return lf

    def lifecycle(self) -> pl.DataFrame:
        """One row per fault: first seen, last seen, resolved (null while active), runs, worst severity."""
        p = self.path / "lifecycle.parquet"
        return pl.read_parquet(checked_parquet(p)) if p.is_file() else pl.DataFrame(schema=LIFECYCLE_SCHEMA)

    def runs(self) -> pl.DataFrame:
        """One row per cron run: id, start, finish, duration, files and samples read, status, exit code."""
        p = self.path / "runs.parquet"
        return pl.read_parquet(checked_parquet(p)) if p.is_file() else pl.DataFrame(schema=RUNS_SCHEMA)

    def attributes(self) -> pl.DataFrame | None:
        """Latest port attributes (canonical schema), or None when none were stored."""
        p = self.path / "attributes.parquet"
        if not p.is_file():
            return None
        return pl.read_parquet(checked_parquet(p)).with_columns(
            [pl.col(c).cast(pl.Categorical()) for c in ("host", "device", "key", "source")]
        )


def read_rollup(history: str | os.PathLike[str]) -> pl.DataFrame:
    """The hourly error roll-up a cron history keeps (empty when it has none yet).

    Raises:
        fabricscope.exceptions.HistoryError: The roll-up file is cut short or unreadable (named, with
            the way out: deleting it restarts the roll-up, and the forecast with it).
    """
    path = Path(history) / ROLLUP_FILE
    if not path.is_file():
        return pl.DataFrame(schema=HOURLY_SCHEMA)
    try:
        return pl.read_parquet(checked_parquet(path)).cast(HOURLY_SCHEMA)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise HistoryError(
            str(path), f"the hourly error roll-up is unreadable ({e}); delete it to start the roll-up afresh"
        ) from e

"""What to read and which rows to keep: the reading options every door and engine passes along.

:class:`ReadOptions` travel with the paths to whoever reads them (this process, a thread, a Ray
worker); :class:`Filters` are applied to each batch as it is parsed; :func:`split_by_partition`
deals the rows read out to the host partitions an engine analyses.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.reading.scan import TimeLike, _time_ns

__all__ = ["FUTURE_MARGIN_S", "Filters", "ReadOptions", "partition_of", "split_by_partition"]


@dataclass(frozen=True)
class Filters:
    """Rows to keep, applied to each batch right after it is parsed (before rates).

    Attributes:
        since: Keep samples at or after this time (ns since the epoch, UTC), or None.
        until: Keep samples before this time (ns), or None.
        hosts: Keep only these hosts, or None for all.
    """

    since: int | None = None
    until: int | None = None
    hosts: frozenset[str] | None = None

    @classmethod
    def make(cls, since: TimeLike = None, until: TimeLike = None, hosts: Sequence[str] | None = None) -> Filters:
        """Build filters from user-facing values (datetimes, epoch seconds, ISO 8601, host names).

        Example:
            >>> from fabricscope.reading.options import Filters
            >>> Filters.make(since="2026-12-02T00:00:00Z", hosts=["gpu01"]).since
            1796169600000000000
        """
        return cls(_time_ns(since), _time_ns(until), frozenset(hosts) if hosts is not None else None)

    @property
    def active(self) -> bool:
        """Whether any filter is set."""
        return self.since is not None or self.until is not None or self.hosts is not None

    def predicates(self, *, timed: bool = True, hosts: bool = True) -> list[pl.Expr]:
        """The filters as Polars predicates on ``host`` and ``time`` (for scans that push them down)."""
        cond = []
        if hosts and self.hosts is not None:
            cond.append(pl.col("host").cast(pl.String).is_in(sorted(self.hosts)))
        if timed and self.since is not None:
            cond.append(pl.col("time") >= pl.lit(self.since).cast(pl.Datetime("ns", "UTC")))
        if timed and self.until is not None:
            cond.append(pl.col("time") < pl.lit(self.until).cast(pl.Datetime("ns", "UTC")))
        return cond

    def apply(self, df: pl.DataFrame, *, timed: bool = True) -> pl.DataFrame:
        """Keep the rows of a samples or attributes frame that pass the filters.

        Args:
            df: A frame with ``host`` and (when ``timed``) ``time`` columns.
            timed: Apply the time window (attributes are static facts: keep them regardless of time).

        Returns:
            The filtered frame (``df`` itself when no filter applies).
        """
        cond = self.predicates(timed=timed and "time" in df.columns, hosts="host" in df.columns)
        return df.filter(cond) if cond else df


FUTURE_MARGIN_S = 86_400.0
"""How far past the clock a sample may be dated before it is a bad record (``--future-margin``):
a day covers clock skew between hosts and a local time written as UTC in any time zone."""


@dataclass(frozen=True)
class ReadOptions:
    """Reader options shipped to workers with the file paths (see :func:`fabricscope.load`)."""

    format: str = "auto"
    host: str | None = None
    time: TimeLike = None
    strict: bool = True
    # Resource limits (fabricscope.reading.scan.LIMITS names); a tuple of pairs so the options stay hashable.
    limits: tuple[tuple[str, int], ...] = ()
    # HTTP inputs (a Prometheus server, an exporter endpoint): range, matchers, connection.
    remote: RemoteOptions | None = None
    # Without `host`: read each host-less input under its own placeholder host
    # (fabricscope.fabric.entities.path_placeholder), which the fabric model names by the host its path names.
    host_from_path: bool = False
    # --host-alias: (alias, canonical) pairs for the fabric model, built once the inputs are read.
    host_aliases: tuple[tuple[str, str], ...] = ()
    # Read a named input only if it is a regular file (a FIFO or a device is skipped with a
    # warning, never opened blocking), as files found by walking a directory always are: cron,
    # which runs unattended, reads its watched files this way.
    regular_files_only: bool = False
    # --future-margin: a sample dated more than this many seconds after `now_ns` (None: the wall
    # clock when the input is read) is a bad record (FUTURE_MARGIN_S; inf: no bound).
    future_margin_s: float = FUTURE_MARGIN_S
    now_ns: int | None = None

    def horizon_ns(self) -> int | None:
        """The latest plausible sample time, in ns since the epoch (None: no bound).

        Time is the data's own: a replayed file of last year is as good as one of today. Only the
        future is bounded, by the clock (``now_ns``, else the wall clock) plus ``future_margin_s``
        (clock skew between hosts, a local time written as UTC): a sample beyond it (a clock set
        to 2100, a corrupt timestamp) would otherwise end every rate and, in cron, become its
        series' watermark, so that every later real sample looked already stored.
        """
        if not math.isfinite(self.future_margin_s):
            return None
        now = self.now_ns if self.now_ns is not None else time.time_ns()
        return now + round(self.future_margin_s * 1e9)


def partition_of(host: str | None, partitions: int) -> int:
    """The partition of a host: a hash that is the same in every process and on every machine.

    Example:
        >>> from fabricscope.reading.options import partition_of
        >>> partition_of("gpu01", 8) == partition_of("gpu01", 8)
        True
    """
    return zlib.crc32((host or "").encode()) % partitions


def split_by_partition(df: pl.DataFrame, partitions: int) -> dict[int, pl.DataFrame]:
    """Split a frame with a ``host`` column into partitions (:func:`partition_of`); empty ones absent."""
    if df.is_empty():
        return {}
    if partitions == 1:
        return {0: df}
    hosts = df["host"].unique().drop_nulls()
    # Map the categorical's physical codes (cheap integers) rather than joining on the strings.
    mapping = {
        code: partition_of(h, partitions)
        for code, h in zip(hosts.to_physical().to_list(), hosts.cast(pl.String).to_list(), strict=True)
    }
    part = (
        df["host"]
        .to_physical()
        .replace_strict(mapping, default=partition_of(None, partitions), return_dtype=pl.UInt32)
        .alias("_part")
    )
    parts = df.with_columns(part).partition_by("_part", as_dict=True, include_key=False, maintain_order=True)
    return {int(k[0]): v for k, v in parts.items()}  # type: ignore[call-overload]

"""Executors: who runs the analysis where, behind one thin interface.

The analysis is split into three steps that every engine runs the same way:

1. **read** - file paths (never tables) go to workers; each parses its files with the Rust readers,
   applies the host/time filters to every batch as it arrives, and routes rows to one of
   ``partitions`` buckets by a stable hash of the host (:func:`partition_of`), so all series of
   one host (and so of each of its devices and ports) land in one partition.
2. **per partition** - rates and the *per-partition* detectors (:data:`PER_PARTITION`) on one
   partition's samples, which never needs the whole table. The partition also returns the small
   *reduced* inputs the fabric-wide detectors need: its gauges, its port attributes, and only the
   rate rows those detectors read (:data:`FABRIC_WIDE`).
3. **fabric-wide** - detectors that compare ports with each other (link_degraded's majority of like
   ports, link_flap's peer at the other end of the cable, lossy_collapse's peer NICs) run once on
   the concatenated reduced inputs.

Every detector not classified here is treated as fabric-wide with the *full* rates and samples: a
new detector is correct by default and becomes scalable once it is classified. Engines implement
:class:`Engine`; :mod:`fabricscope.engines.local` runs the steps in this process,
:mod:`fabricscope.engines.ray` as Ray tasks. See ``docs/scale.md``.
"""

from __future__ import annotations

import os
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fabricscope.captures import CAPTURE_AS, PER_PRIORITY_AS, with_capture_counters
from fabricscope.detect import DETECTORS, AnalysisInput
from fabricscope.detect.ecn_congestion import LOOP
from fabricscope.detect.packet_loss import BYTES, LOSS_COUNTERS, PACKETS
from fabricscope.detect.pfc_congestion import PAUSE
from fabricscope.io import InputReport, TimeLike, _time_ns
from fabricscope.profiles import Profile
from fabricscope.rates import rates, value_as_float

__all__ = [
    "FABRIC_WIDE",
    "PER_PARTITION",
    "Engine",
    "Filters",
    "PartitionResult",
    "ReadOptions",
    "analyze_partition",
    "empty_attributes",
    "fabric_wide",
    "get_engine",
    "merge_tables",
    "partition_of",
    "reduce_results",
    "split_by_partition",
]

PER_PARTITION = frozenset(
    {
        # Each judges one port's (or NIC's) own series against thresholds and its own line rate.
        "link_errors",
        "ib_congestion",
        "pfc_storm",
        "packet_loss",
        "counter_anomaly",
        # Decide per host (the other devices of the same host; the busiest layer of a host on an
        # epoch-aligned window grid): partitions hold whole hosts.
        "lossless_misconfig",
        "bottleneck",
    }
)
"""Detectors whose findings for a port depend only on that port's host: run inside partitions."""

_STORM = ["tx_pause_storm_warning_events", "tx_pause_storm_error_events"]


def _no_rates(r: pl.DataFrame) -> pl.DataFrame:
    return r.clear()


def _counters(r: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """Rows of some counters; the names present are looked up once in the dictionary, not per row."""
    present = set(r["counter"].unique().cast(pl.String).to_list()) & set(names)
    if not present:
        return r.clear()
    return r.filter(pl.col("counter").is_in(pl.Series(sorted(present), dtype=r.schema["counter"])))


def _link_downed(r: pl.DataFrame) -> pl.DataFrame:
    # link_flap reads only intervals in which the link went down (its merge distance is the median
    # interval of those rows), so the healthy intervals - nearly all of them - stay home.
    return _counters(r, ["link_downed_events"]).filter(pl.col("delta") > 0)


def _with_traffic(
    r: pl.DataFrame, base: list[str], directions: Sequence[str], extra: Sequence[str] = ()
) -> pl.DataFrame:
    # Detectors join a NIC's base counters with the same NIC's packets and bytes (packet_loss.traffic);
    # traffic of NICs without any base counter can never join, so it is not shipped.
    own = _counters(r, [*base, *extra])
    nics = _counters(own, base).select("host", "device", "port").unique()
    if nics.is_empty():
        return own
    traffic = _counters(r, [c for d in directions for c in (*PACKETS[d], *BYTES[d])])
    return pl.concat(
        [
            own,
            traffic.join(nics, on=["host", "device", "port"], how="semi", nulls_equal=True, maintain_order="left"),
        ]
    )


def _loss_and_traffic(r: pl.DataFrame) -> pl.DataFrame:
    # Loss intervals (packet_loss.loss_intervals) and pause storms on the same host.
    return _with_traffic(r, [c for side in LOSS_COUNTERS.values() for c in side], ("rx", "tx"), _STORM)


def _ecn_loop(r: pl.DataFrame) -> pl.DataFrame:
    # The loop counters and the received traffic the marked share is computed against.
    return _with_traffic(r, list(LOOP), ("rx",))


def _pause(r: pl.DataFrame) -> pl.DataFrame:
    return _counters(r, list(PAUSE))


FABRIC_WIDE: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    # The expected rate/width is the majority of like ports across the fabric: gauges + attributes.
    "link_degraded": _no_rates,
    # The peer port at the other end of the cable (topology) and whether both ends flapped.
    "link_flap": _link_downed,
    # A collapsing NIC is compared with the median of its peer NICs over the same window.
    "lossy_collapse": _loss_and_traffic,
    # A sustained pause names the other hosts pausing on the same priority at the same time.
    "pfc_congestion": _pause,
    # Judges the benchmark tables (nccl-tests, perftest), which are not partitioned: run once.
    "underperformance": _no_rates,
    # The CNP balance compares CNPs sent by all notification points with those all reaction
    # points received: a loop broken between hosts is invisible inside one host.
    "ecn_congestion": _ecn_loop,
}
"""Fabric-wide detectors and the rate rows (from one partition's rates) each needs."""


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
            >>> from fabricscope.engines import Filters
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


@dataclass(frozen=True)
class ReadOptions:
    """Reader options shipped to workers with the file paths (see :func:`fabricscope.load`)."""

    format: str = "auto"
    host: str | None = None
    time: TimeLike = None
    strict: bool = True
    # Resource limits (fabricscope.io.LIMITS names); a tuple of pairs so the options stay hashable.
    limits: tuple[tuple[str, int], ...] = ()


def partition_of(host: str | None, partitions: int) -> int:
    """The partition of a host: a hash that is the same in every process and on every machine.

    Example:
        >>> from fabricscope.engines import partition_of
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


@dataclass
class PartitionResult:
    """What one partition sends back to be reduced.

    Attributes:
        findings: Findings of the per-partition detectors.
        gauges: The partition's gauges with a float ``value`` (fabric-wide detectors read them).
        attributes: The partition's port attributes.
        rates: Only the rate rows fabric-wide detectors read (:data:`FABRIC_WIDE`), or all of them
            when a detector is not classified.
        samples: The partition's samples only when a detector is not classified, else empty.
        rows: Sample rows analysed.
    """

    findings: pl.DataFrame
    gauges: pl.DataFrame
    attributes: pl.DataFrame
    rates: pl.DataFrame
    samples: pl.DataFrame
    rows: int


def _unclassified() -> list[str]:
    return [n for n in DETECTORS() if n not in PER_PARTITION and n not in FABRIC_WIDE]


def _gauges(samples: pl.DataFrame) -> pl.DataFrame:
    return samples.filter(~pl.col("is_counter")).with_columns(value_as_float().alias("value"))


def analyze_partition(
    samples: pl.DataFrame,
    attributes: pl.DataFrame,
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
) -> PartitionResult:
    """Rates and per-partition detectors on one partition (all series of some hosts).

    Args:
        samples: The partition's samples (already filtered).
        attributes: The partition's port attributes.
        tables: Side tables (``links``, ...), whole.
        config: Thresholds (:func:`fabricscope.config.load_config`).
        profile: A forced profile, or None.

    Returns:
        A :class:`PartitionResult`.
    """
    # Only capture inputs carry capture counters; checking the dictionary of names present is far
    # cheaper than letting with_capture_counters compare every row's name as a string.
    present = set(samples["counter"].unique().cast(pl.String).to_list())
    if present & (CAPTURE_AS.keys() | PER_PRIORITY_AS.keys()):
        samples = with_capture_counters(samples)
    rcfg = config["rates"]
    r = rates(samples, gap_factor=rcfg["gap_factor"], min_gap_s=rcfg["min_gap_s"])
    gauges = _gauges(samples)
    inp = AnalysisInput(
        samples=samples, rates=r, gauges=gauges, attributes=attributes, config=config, profile=profile, tables=tables
    )
    detectors = DETECTORS()
    frames = [detectors[n](inp) for n in detectors if n in PER_PARTITION]
    full = bool(_unclassified())
    if full:
        reduced = r
    else:
        wanted = [FABRIC_WIDE[n] for n in detectors if n in FABRIC_WIDE]
        reduced = pl.concat([fn(r) for fn in wanted]).unique(maintain_order=True) if wanted else r.clear()
    return PartitionResult(
        findings=_concat_findings(frames),
        gauges=gauges,
        attributes=attributes,
        rates=reduced,
        samples=samples if full else samples.clear(),
        rows=samples.height,
    )


def _concat_findings(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    from fabricscope.findings import empty_findings

    nonempty = [f for f in frames if not f.is_empty()]
    return pl.concat(nonempty, how="vertical") if nonempty else empty_findings()


def _concat(frames: Sequence[pl.DataFrame], empty: pl.DataFrame | None = None) -> pl.DataFrame:
    nonempty = [f for f in frames if f.height]
    if nonempty:
        return pl.concat(nonempty, how="vertical_relaxed")
    if frames:
        return frames[0]
    return empty if empty is not None else pl.DataFrame()


def fabric_wide(
    results: Sequence[PartitionResult],
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    empty_attributes: pl.DataFrame,
) -> pl.DataFrame:
    """Run the fabric-wide (and unclassified) detectors on the reduced per-partition results.

    Returns:
        The findings of those detectors.
    """
    inp = AnalysisInput(
        samples=_concat([r.samples for r in results]),
        rates=_concat([r.rates for r in results]),
        gauges=_concat([r.gauges for r in results]),
        attributes=_concat([r.attributes for r in results], empty_attributes),
        config=config,
        profile=profile,
        tables=tables,
    )
    detectors = DETECTORS()
    if inp.rates.width == 0:  # no partition at all: nothing was read or everything was filtered out
        return _concat_findings([])
    return _concat_findings([fn(inp) for n, fn in detectors.items() if n not in PER_PARTITION])


@dataclass
class EngineResult:
    """An engine's output before the final ordering in :func:`fabricscope.run_analysis`.

    Attributes:
        findings: Findings of all detectors, unordered.
        reports: Per-input reader reports, in input order.
        rates: The reduced rates the fabric-wide detectors saw (not all rates: those never exist
            as one table in a partitioned run).
        rows: Sample rows analysed (after filters).
        partitions: Non-empty partitions analysed.
        tables: Side tables read (``links``, ...).
        seconds: Wall time per step (``read``, ``partitions``, ``fabric``), for benchmarks.
        sample_bytes: Arrow size of the samples read (after filters).
    """

    findings: pl.DataFrame
    reports: list[InputReport]
    rates: pl.DataFrame
    rows: int
    partitions: int
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    sample_bytes: int = 0


def merge_tables(parts: Sequence[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """Side tables from several readers, concatenated per name in reader order."""
    by_name: dict[str, list[pl.DataFrame]] = {}
    for part in parts:
        for name, t in part.items():
            by_name.setdefault(name, []).append(t)
    return {k: pl.concat(v, how="vertical_relaxed") for k, v in by_name.items()}


def _empty_samples() -> pl.DataFrame:
    import pyarrow as pa

    from fabricscope import _native

    return pl.DataFrame(pa.schema(_native.samples_schema_arrow()).empty_table())


def empty_attributes() -> pl.DataFrame:
    """A port-attributes frame with no rows (for partitions whose inputs carry none)."""
    from fabricscope.analyze import _empty_attributes

    return _empty_attributes()


def reduce_results(
    results: Sequence[PartitionResult],
    *,
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    reports: list[InputReport],
    seconds: dict[str, float],
    sample_bytes: int = 0,
) -> EngineResult:
    """The last step of every engine: fabric-wide detectors on the partitions' results, then one result."""
    t = time.perf_counter()
    if not results and any(tb.height for tb in tables.values()):
        # Benchmark logs alone (perftest, nccl-tests) give side tables but no samples: judge them
        # on one empty partition, as the in-process analysis does, instead of reporting nothing.
        results = [analyze_partition(_empty_samples(), empty_attributes(), tables, config, profile)]
    findings = fabric_wide(results, tables, config, profile, empty_attributes())
    return EngineResult(
        findings=_concat_findings([*(r.findings for r in results), findings]),
        reports=reports,
        rates=_concat([r.rates for r in results]),
        rows=sum(r.rows for r in results),
        partitions=len(results),
        tables=tables,
        seconds={**seconds, "fabric": time.perf_counter() - t},
        sample_bytes=sample_bytes,
    )


class Engine(ABC):
    """Runs read -> per partition -> fabric-wide over file paths."""

    name: str = ""

    @abstractmethod
    def run(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        read: ReadOptions,
        filters: Filters,
        config: dict[str, Any],
        profile: Profile | None,
    ) -> EngineResult:
        """Analyse the inputs at ``paths``.

        Args:
            paths: Files or directories, as given by the user (workers must see the same paths).
            read: Reader options.
            filters: Host/time filters applied to each batch before rates.
            config: Thresholds.
            profile: A forced profile, or None.

        Returns:
            An :class:`EngineResult`.
        """


def get_engine(name: str, *, address: str | None = None, partitions: int | None = None) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``).

    Args:
        name: Engine name.
        address: Ray cluster address (``auto``, ``ray://head:10001``); None starts a local Ray.
        partitions: Number of host partitions (default: per engine).

    Returns:
        An :class:`Engine`.

    Raises:
        ValueError: an unknown engine name.

    Example:
        >>> from fabricscope.engines import get_engine
        >>> get_engine("local").name
        'local'
    """
    if name == "local":
        from fabricscope.engines.local import LocalEngine

        return LocalEngine(partitions=partitions)
    if name == "ray":
        from fabricscope.engines.ray import RayEngine

        return RayEngine(address=address, partitions=partitions)
    raise ValueError(f"unknown engine {name!r}: expected 'local' or 'ray'")

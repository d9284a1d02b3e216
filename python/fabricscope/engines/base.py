"""The steps every engine runs the same way: read filters, per-partition analysis, the fabric-wide reduction.

See :mod:`fabricscope.engines` for the overview.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fabricscope.detect import AnalysisInput, DetectorSpec, detectors_in
from fabricscope.detect.rates import latest_gauges, one_reading_per_time, rates, value_as_float
from fabricscope.fabric.model import LOSSLESS_CONFIG_KEYS, Fabric
from fabricscope.fabric.model import build as build_fabric
from fabricscope.fabric.nvlink import DOMAIN_KEYS
from fabricscope.fabric.profiles import Profile
from fabricscope.incidents.findings import STATE_KEYS, empty_findings
from fabricscope.reading.captures import CAPTURE_AS, PER_PRIORITY_AS, with_capture_counters
from fabricscope.reading.options import Filters, ReadOptions, split_by_partition
from fabricscope.reading.scan import InputReport, empty_attributes, empty_samples
from fabricscope.reading.times import format_times, merge_times

__all__ = [
    "FABRIC_WIDE",
    "PER_PARTITION",
    "Engine",
    "PartitionResult",
    "Partitioned",
    "analyze_partition",
    "analyze_tables",
    "fabric_of",
    "fabric_wide",
    "merge_tables",
    "reduce_results",
    "return_freed_memory",
]

PER_PARTITION = frozenset(s.name for s in detectors_in("partition"))
"""Detectors whose findings for a port depend only on that port's host: run inside partitions."""
IDENTITY_KEYS = ("node_guid_hex", "netdev", *LOSSLESS_CONFIG_KEYS, *DOMAIN_KEYS)
"""Port attributes the fabric model reads: an HCA's GUID (sysfs), the netdev an RDMA port drives
(``ibdev2netdev``, ``rdma link show``), a host's lossless configuration and a GPU's NVLink domain."""

FABRIC_WIDE: dict[str, Callable[[pl.DataFrame], pl.DataFrame] | None] = {
    s.name: s.rates_needed for s in detectors_in("fabric")
}
"""Fabric-wide detectors and the rate rows (from one partition's rates) each needs (None: all of them)."""


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc), or None under another C library or system."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # musl and others have none
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def return_freed_memory() -> None:
    """Hand the memory the C allocator keeps after frees back to the system (glibc only).

    The Rust reader allocates through glibc's malloc and Polars through its own allocator, which
    cannot reuse what glibc keeps. glibc serves large buffers from its heaps once a few have been
    freed (its mmap threshold rises), and keeps their pages after they are freed: the parsed
    batches, freed once copied into Polars memory, would otherwise stay resident for the rest of
    the run (about 0.5x the samples' Arrow size at 10^7 samples; BENCHMARKS.md, "Without ``--memory``").
    Costs a walk over glibc's free lists: ~5 ms after reading 1.25 M samples, 0.1 ms when little
    was freed.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def sorted_hosts(hosts: Iterable[str | None]) -> list[str | None]:
    """Host names in a stable order (None last)."""
    return sorted(hosts, key=lambda h: (h is None, h or ""))


def hosts_without_samples(attributes: pl.DataFrame, with_samples: Container[str | None]) -> list[str | None]:
    """Hosts only the attributes name, in a stable order.

    Every engine adds them to one of its partitions, so that every attribute read (a GUID, a
    netdev, a link width) reaches the detectors even for a host that sent no sample.
    """
    named = attributes["host"].unique().cast(pl.String).to_list() if attributes.height else []
    return sorted_hosts(h for h in named if h not in with_samples)


@dataclass
class PartitionResult:
    """What one partition sends back to be reduced.

    Attributes:
        findings: Findings of the per-partition detectors.
        gauges: The partition's gauges with a float ``value`` (fabric-wide detectors read them).
        attributes: The partition's port attributes.
        rates: The rate rows fabric-wide detectors read (their specs' ``rates_needed``), or all of them
            when one of them reads everything or the analysis keeps its detail.
        samples: The partition's samples only when a fabric-wide detector reads everything, else empty.
        rows: Sample rows analysed.
        views: The partition detectors' views (``layers`` ...) when the analysis keeps its detail.
        times: First and last sample time per reader (``format``, ``first``, ``last``), for the
            summaries of what was read.
    """

    findings: pl.DataFrame
    gauges: pl.DataFrame
    attributes: pl.DataFrame
    rates: pl.DataFrame
    samples: pl.DataFrame
    rows: int
    views: dict[str, pl.DataFrame] = field(default_factory=dict)
    times: pl.DataFrame = field(default_factory=pl.DataFrame)
    intervals: pl.DataFrame = field(default_factory=lambda: _interval_counts(pl.DataFrame()))


def _interval_counts(rates: pl.DataFrame) -> pl.DataFrame:
    """Rate rows per sampling interval (to the millisecond): small, whatever the rows kept."""
    if "interval_s" not in rates.columns or not rates.height:
        return pl.DataFrame(schema={"interval_s": pl.Float64, "len": pl.UInt32})
    return rates.group_by(pl.col("interval_s").round(3)).len()


def median_interval(counts: Sequence[pl.DataFrame]) -> float | None:
    """The median sampling interval of every rate row of all partitions, from their interval counts.

    The same whether the rates were kept whole or reduced for the fabric-wide detectors, and
    whichever engine partitioned them (the interval the incident rules' timing tolerance uses).
    """
    merged = pl.concat([c for c in counts if c.height] or [_interval_counts(pl.DataFrame())])
    merged = merged.group_by("interval_s").agg(pl.col("len").sum()).sort("interval_s")
    total = int(merged["len"].sum() or 0)
    if not total:
        return None
    cum = merged["len"].cum_sum().to_list()
    values = merged["interval_s"].to_list()

    def nth(i: int) -> float:
        return float(next(v for v, c in zip(values, cum, strict=True) if c > i))

    return (nth((total - 1) // 2) + nth(total // 2)) / 2


def _reads_everything() -> bool:
    return any(s.rates_needed is None for s in detectors_in("fabric"))


def _gauges(samples: pl.DataFrame) -> pl.DataFrame:
    # one reading per gauge and time (the largest): detectors take a gauge's last reading by time
    gauges = one_reading_per_time(samples.filter(~pl.col("is_counter")))
    return gauges.with_columns(value_as_float().alias("value"))


def _run(spec: DetectorSpec, inp: AnalysisInput) -> pl.DataFrame:
    """One detector on one input; a kind its spec does not declare is a bug in the detector."""
    found = spec.detect(inp)
    stray = set(found["kind"].unique().to_list()) - set(spec.kinds) if found.height else set()
    if stray:
        raise RuntimeError(f"detector {spec.name} emitted undeclared finding kinds {sorted(stray)}")
    return found


def _views(specs: Sequence[DetectorSpec], inp: AnalysisInput) -> dict[str, pl.DataFrame]:
    return {name: view.compute(inp) for s in specs for name, view in s.views.items()}


def fabric_of(
    hosts: Iterable[str | None],
    attributes: pl.DataFrame,
    tables: dict[str, pl.DataFrame],
    reports: Sequence[InputReport],
    read: ReadOptions | None,
) -> Fabric:
    """The fabric model of what an engine read (:func:`fabricscope.fabric.model.build`).

    Built once per analysis, after reading and before any detector runs.

    Args:
        hosts: The hosts the samples name.
        attributes: Port attributes (the hosts they name; GUIDs and netdevs: :data:`IDENTITY_KEYS`).
        tables: Side tables, whole.
        reports: The inputs' reports (a host-less input's path may name its host).
        read: The reader options (``host_aliases``).
    """
    return build_fabric(
        hosts=hosts,
        attributes=attributes,
        tables=tables,
        host_aliases=dict(read.host_aliases) if read is not None else None,
        reports=reports,
    )


def analyze_partition(
    samples: pl.DataFrame,
    attributes: pl.DataFrame,
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    *,
    keep_detail: bool = False,
    fabric: Fabric | None = None,
) -> PartitionResult:
    """Rates and per-partition detectors on one partition (all series of some hosts).

    Args:
        samples: The partition's samples (already filtered).
        attributes: The partition's port attributes.
        tables: Side tables (``links``, ...), whole.
        config: Thresholds (:func:`fabricscope.detect.config.load_config`).
        profile: A forced profile, or None.
        keep_detail: Return every rate row and the detectors' views, not only what the fabric-wide
            detectors read.
        fabric: The analysis' fabric model (:func:`fabric_of`); an empty one when not given.

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
        samples=samples,
        rates=r,
        gauges=gauges,
        attributes=attributes,
        config=config,
        profile=profile,
        tables=tables,
        fabric=fabric if fabric is not None else Fabric(),
    )
    local = detectors_in("partition")
    frames = [_run(s, inp) for s in local]
    full = _reads_everything()
    if full or keep_detail:
        reduced = r
    else:
        wanted = [s.rates_needed for s in detectors_in("fabric") if s.rates_needed is not None]
        reduced = pl.concat([fn(r) for fn in wanted]).unique(maintain_order=True) if wanted else r.clear()
    return PartitionResult(
        findings=_concat_findings(frames),
        gauges=gauges,
        attributes=attributes,
        rates=reduced,
        samples=samples if full else samples.clear(),
        rows=samples.height,
        views=_views(local, inp) if keep_detail else {},
        times=_times(samples),
        intervals=_interval_counts(r),
    )


def _times(samples: pl.DataFrame) -> pl.DataFrame:
    """:func:`format_times` of the samples, cheaply.

    The first and last time per source are taken on the dictionary codes first: casting every
    row's source to a string costs more than the rest.
    """
    if not {"source", "time"} <= set(samples.columns):
        return format_times(samples)
    per_source = samples.group_by("source").agg(
        pl.col("time").min().alias("_first"), pl.col("time").max().alias("_last")
    )
    return format_times(per_source, start="_first", end="_last")


def _concat_findings(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    nonempty = [f for f in frames if not f.is_empty()]
    return pl.concat(nonempty, how="vertical") if nonempty else empty_findings()


def _concat(frames: Sequence[pl.DataFrame], empty: pl.DataFrame) -> pl.DataFrame:
    nonempty = [f for f in frames if f.height]
    if nonempty:
        return pl.concat(nonempty, how="vertical_relaxed")
    return frames[0] if frames else empty


def _no_partition(config: dict[str, Any]) -> PartitionResult:
    """What a run with no samples at all reduces: empty frames with their schemas.

    Benchmark logs and topology dumps carry no samples; the fabric-wide detectors still judge their
    tables, so the fabric-wide step must run on empty, well-typed counters rather than be skipped.
    """
    samples = empty_samples()
    rcfg = config["rates"]
    return PartitionResult(
        findings=empty_findings(),
        gauges=_gauges(samples),
        attributes=empty_attributes(),
        rates=rates(samples, gap_factor=rcfg["gap_factor"], min_gap_s=rcfg["min_gap_s"]),
        samples=samples,
        rows=0,
    )


def fabric_wide(
    results: Sequence[PartitionResult],
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    *,
    keep_detail: bool = False,
    fabric: Fabric | None = None,
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """Run the fabric-wide detectors on the reduced per-partition results.

    Returns:
        The findings of those detectors and (with ``keep_detail``) their views.
    """
    empty = _no_partition(config)
    inp = AnalysisInput(
        samples=_concat([r.samples for r in results], empty.samples),
        rates=_concat([r.rates for r in results], empty.rates),
        gauges=_concat([r.gauges for r in results], empty.gauges),
        attributes=_concat([r.attributes for r in results], empty.attributes),
        config=config,
        profile=profile,
        tables=tables,
        fabric=fabric if fabric is not None else Fabric(),
    )
    specs = detectors_in("fabric")
    return _concat_findings([_run(s, inp) for s in specs]), (_views(specs, inp) if keep_detail else {})


@dataclass
class EngineResult:
    """An engine's output before the final ordering in :func:`fabricscope.run_analysis`.

    Attributes:
        findings: Findings of all detectors, unordered.
        reports: Per-input reader reports, in input order.
        rates: The rates the fabric-wide detectors saw (every rate only with ``keep_detail``: a
            partitioned run otherwise never holds them as one table).
        rows: Sample rows analysed (after filters).
        partitions: Non-empty partitions analysed.
        tables: Side tables read (``links``, ...).
        seconds: Wall time per step (``read``, ``partitions``, ``fabric``), for benchmarks.
        sample_bytes: Arrow size of the samples read (after filters).
        views: The detectors' views (``layers`` ...), with ``keep_detail``.
        times: First and last sample time per reader (:func:`fabricscope.reading.times.format_times`).
        gauges: The last reading of every gauge series (:func:`fabricscope.detect.rates.latest_gauges`), with
            ``keep_detail``.
        attributes: Every port attribute read, with ``keep_detail``.
        interval_s: The median sampling interval of all rate rows (:func:`median_interval`), None without rates.
        fabric: The fabric model the detectors ran with (:func:`fabric_of`).
    """

    findings: pl.DataFrame
    reports: list[InputReport]
    rates: pl.DataFrame
    rows: int
    partitions: int
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    sample_bytes: int = 0
    views: dict[str, pl.DataFrame] = field(default_factory=dict)
    times: pl.DataFrame = field(default_factory=pl.DataFrame)
    gauges: pl.DataFrame = field(default_factory=pl.DataFrame)
    attributes: pl.DataFrame = field(default_factory=empty_attributes)
    interval_s: float | None = None
    fabric: Fabric = field(default_factory=Fabric)


def merge_tables(parts: Sequence[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """Side tables from several readers, concatenated per name in reader order."""
    by_name: dict[str, list[pl.DataFrame]] = {}
    for part in parts:
        for name, t in part.items():
            by_name.setdefault(name, []).append(t)
    return {k: pl.concat(v, how="vertical_relaxed") for k, v in by_name.items()}


@dataclass
class Partitioned:
    """What an engine's per-partition step hands to :func:`reduce_results`.

    Attributes:
        results: One result per non-empty partition.
        tables: Side tables read (``links``, ...), whole.
        reports: Per-input reader reports, in input order.
        seconds: Wall time per step so far (``read``, ``partitions``).
        sample_bytes: Arrow size of the samples read (after filters), when the engine knows it.
        fabric: The fabric model the partitions were analysed with (:func:`fabric_of`).
    """

    results: Sequence[PartitionResult]
    tables: dict[str, pl.DataFrame]
    reports: list[InputReport]
    seconds: dict[str, float]
    sample_bytes: int = 0
    fabric: Fabric = field(default_factory=Fabric)


def reduce_results(
    part: Partitioned, *, config: dict[str, Any], profile: Profile | None, keep_detail: bool = False
) -> EngineResult:
    """The last step of every engine: fabric-wide detectors on the partitions' results, then one result."""
    t = time.perf_counter()
    results, tables, seconds = part.results, part.tables, part.seconds
    empty = _no_partition(config)
    findings, fabric_views = fabric_wide(results, tables, config, profile, keep_detail=keep_detail, fabric=part.fabric)
    names = dict.fromkeys([*(n for r in results for n in r.views), *fabric_views])
    views = {
        n: _concat(
            [*(r.views[n] for r in results if n in r.views), *([fabric_views[n]] if n in fabric_views else [])],
            pl.DataFrame(),
        )
        for n in names
    }
    return EngineResult(
        findings=_concat_findings([*(r.findings for r in results), findings]),
        reports=part.reports,
        rates=_concat([r.rates for r in results], empty.rates),
        rows=sum(r.rows for r in results),
        partitions=len(results),
        tables=tables,
        seconds={**seconds, "fabric": time.perf_counter() - t},
        sample_bytes=part.sample_bytes,
        views=views,
        times=merge_times([r.times for r in results]),
        # What the report and the dashboard show beside the findings, so that they never read again.
        gauges=latest_gauges(_concat([r.gauges for r in results], empty.gauges)) if keep_detail else pl.DataFrame(),
        # without the detail, the states alone: whether a states-only input was judged depends on them
        attributes=_concat([r.attributes for r in results], empty_attributes())
        if keep_detail
        else _concat(
            [r.attributes.filter(pl.col("key").cast(pl.String).is_in(list(STATE_KEYS))) for r in results],
            empty_attributes(),
        ),
        interval_s=median_interval([r.intervals for r in results]),
        fabric=part.fabric,
    )


def analyze_tables(
    samples: pl.DataFrame,
    attributes: pl.DataFrame,
    tables: dict[str, pl.DataFrame],
    *,
    filters: Filters,
    config: dict[str, Any],
    profile: Profile | None,
    partitions: int = 1,
    keep_detail: bool = True,
    host_aliases: Mapping[str, str] | None = None,
    reports: Sequence[InputReport] = (),
) -> EngineResult:
    """Analyse tables already in memory: the local engine's steps on ``partitions`` host partitions.

    Args:
        samples: A samples frame (:func:`fabricscope.read`).
        attributes: Its port attributes.
        tables: Side tables (benchmarks, packet tables, ``links``).
        filters: Host/time filters, applied before rates.
        config: Thresholds.
        profile: A forced profile, or None.
        partitions: Host partitions (1: the whole table at once).
        keep_detail: Keep every rate row and the detectors' views.
        host_aliases: ``--host-alias`` (``alias -> canonical``) for the fabric model.
        reports: The reports of the inputs the tables were read from (a host-less input's path may
            name its host).

    Returns:
        An :class:`EngineResult` (no reader reports).
    """
    t0 = time.perf_counter()
    samples, attributes = filters.apply(samples), filters.apply(attributes, timed=False)
    hosts = samples["host"].cast(pl.String).unique().to_list() if samples.height else []
    aliases = ReadOptions(host_aliases=tuple((host_aliases or {}).items()))
    fabric = fabric_of(hosts, attributes, tables, reports, aliases)
    parts = split_by_partition(samples, partitions)
    attrs = split_by_partition(attributes, partitions)
    # One contiguous frame per partition: the rate kernel and the detectors run several times
    # faster on it than on a frame of many chunks (a rechunk of one chunk copies nothing).
    # A partition of attributes alone (states, configuration files) is judged too, as the engines judge it.
    results = [
        analyze_partition(
            parts[i].rechunk() if i in parts else samples.clear(),
            attrs.get(i, attributes.clear()),
            tables,
            config,
            profile,
            keep_detail=keep_detail,
            fabric=fabric,
        )
        for i in sorted(parts.keys() | attrs.keys())
    ]
    seconds = {"partitions": time.perf_counter() - t0}
    part = Partitioned(results, tables, [], seconds, samples.estimated_size(), fabric)
    return reduce_results(part, config=config, profile=profile, keep_detail=keep_detail)


class Engine(ABC):
    """Runs read -> per partition -> fabric-wide over file paths.

    Each engine implements :meth:`analyse_partitions` (how it reads and spreads the partitions); the
    fabric-wide step that ends every run is :meth:`run`'s, the same for all.
    """

    name: str = ""

    def run(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        read: ReadOptions,
        filters: Filters,
        config: dict[str, Any],
        profile: Profile | None,
        keep_detail: bool = False,
    ) -> EngineResult:
        """Analyse the inputs at ``paths``.

        Args:
            paths: Files or directories, as given by the user (workers must see the same paths).
            read: Reader options.
            filters: Host/time filters applied to each batch before rates.
            config: Thresholds.
            profile: A forced profile, or None.
            keep_detail: Also return every rate row and the detectors' views (memory grows with the input).

        Returns:
            An :class:`EngineResult`.
        """
        part = self.analyse_partitions(
            paths, read=read, filters=filters, config=config, profile=profile, keep_detail=keep_detail
        )
        return reduce_results(part, config=config, profile=profile, keep_detail=keep_detail)

    @abstractmethod
    def analyse_partitions(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        read: ReadOptions,
        filters: Filters,
        config: dict[str, Any],
        profile: Profile | None,
        keep_detail: bool,
    ) -> Partitioned:
        """Read the inputs at ``paths`` and analyse every host partition (see :meth:`run`)."""

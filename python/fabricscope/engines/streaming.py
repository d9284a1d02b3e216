"""The streaming engine: inputs larger than memory, analysed one host partition at a time.

The local engine keeps every sample once in memory; this one keeps at most a memory budget. It
reads the work units one at a time (each streamed by the Rust scanner in bounded batches,
filtered as it arrives), routes every row to one of ``buckets`` host buckets by the stable hash
of :func:`fabricscope.reading.options.partition_of`, and spills the buckets to compressed Arrow IPC files
in a temporary directory whenever the buffered rows exceed a share of the budget. It then groups
the buckets, in bucket order, into partitions whose rows fit the budget, and analyses the
partitions one after the other, each read back from its spill files, with exactly the
per-partition and fabric-wide steps of every engine. Because a host's series never leave its
bucket, every partition holds whole hosts, and the findings are those of the in-memory analysis to
the bit (the same property the local engine's partitions rely on; ``docs/scale.md``).

Why hosts rather than time chunks: every per-partition detector judges a port's series from start
to end (resets, gaps, windows, baselines), so cutting in time would need each detector to merge
partial results; cutting by host needs none of that, and the spill files are written once and read
once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope.engines.base import (
    Engine,
    Partitioned,
    PartitionResult,
    analyze_partition,
    fabric_of,
    hosts_without_samples,
    merge_tables,
    sorted_hosts,
)
from fabricscope.fabric.model import Fabric
from fabricscope.fabric.profiles import Profile
from fabricscope.progress import ProgressBar
from fabricscope.reading.options import Filters, ReadOptions, partition_of, split_by_partition
from fabricscope.reading.scan import InputReport, ReaderPool, empty_attributes
from fabricscope.reading.units import Unit, read_units, work_units

__all__ = ["StreamingEngine", "analyse_in_budget", "default_memory", "machine_memory", "parse_memory"]

WORKING_SET_FACTOR = 8
"""Bytes a partition's analysis holds per byte of its samples (the samples, their rates and the
detectors' frames), measured on sample traces and bench inputs; the partition size is the budget
divided by this."""

SPILL_SHARE = 4
"""The read buffer is flushed to disk when it holds more than the budget divided by this."""


def machine_memory() -> int:
    """This machine's memory, or its cgroup's limit when lower, in bytes (8 GiB when unknown)."""
    total = 0
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    except OSError:
        pass
    return total


def default_memory() -> int:
    """A quarter of this machine's memory (or of the cgroup limit when lower), in bytes."""
    return max(64 << 20, machine_memory() // 4)


def parse_memory(text: str) -> int:
    """A memory size such as ``2G``, ``512M``, ``1.5GiB`` or a byte count, in bytes.

    Example:
        >>> from fabricscope.engines.streaming import parse_memory
        >>> parse_memory("512M"), parse_memory("2G"), parse_memory("1000")
        (536870912, 2147483648, 1000)
    """
    s = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    try:
        value = int(float(s[:-1]) * scale[s[-1]]) if s and s[-1] in scale else int(float(s))
    except ValueError:
        raise ValueError(f"not a memory size: {text!r} (expected e.g. 512M, 2G)") from None
    if value <= 0:
        raise ValueError(f"memory size must be positive: {text!r}")
    return value


class _Spill:
    """Per-bucket buffers of sample rows, flushed to compressed Arrow IPC files, and the attributes.

    A context manager: the spill files live in a temporary directory (under ``spill_dir``, default
    the system's), removed on exit whatever happened.
    """

    def __init__(self, spill_dir: str | os.PathLike[str] | None, buckets: int, flush_bytes: int) -> None:
        self.spill_dir = spill_dir
        self.root = Path()
        self.buckets = buckets
        self.flush_bytes = flush_bytes
        self.pending: dict[int, list[pl.DataFrame]] = {}
        self.pending_bytes = 0
        self.files: dict[int, list[Path]] = {}
        self.rows: dict[int, int] = {}
        self.host_rows: dict[int, dict[str | None, int]] = {}
        self.sample_bytes = 0
        self.attribute_frames: list[pl.DataFrame] = []

    def __enter__(self) -> _Spill:
        self.root = Path(tempfile.mkdtemp(prefix="fabricscope-spill-", dir=self.spill_dir))
        return self

    def __exit__(self, *_exc: object) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def add_attributes(self, frames: Iterable[pl.DataFrame | None]) -> None:
        """Keep port attributes (small: a few rows per port) for the partitions of their hosts."""
        self.attribute_frames.extend(a for a in frames if a is not None and a.height)

    def attributes(self) -> pl.DataFrame:
        """Every attribute kept, in the order added."""
        frames = self.attribute_frames
        return pl.concat(frames, how="vertical_relaxed") if frames else empty_attributes()

    def add(self, frame: pl.DataFrame) -> None:
        for b, part in split_by_partition(frame, self.buckets).items():
            self.pending.setdefault(b, []).append(part)
            self.rows[b] = self.rows.get(b, 0) + part.height
            counts = self.host_rows.setdefault(b, {})
            for h, n in part.group_by(pl.col("host").cast(pl.String)).len().iter_rows():
                counts[h] = counts.get(h, 0) + n
            size = part.estimated_size()
            self.pending_bytes += size
            self.sample_bytes += size
        if self.pending_bytes > self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        for b, parts in self.pending.items():
            files = self.files.setdefault(b, [])
            path = self.root / f"bucket-{b:05d}-{len(files):06d}.arrow"
            pl.concat(parts, how="vertical").write_ipc(path, compression="lz4")
            files.append(path)
        self.pending.clear()
        self.pending_bytes = 0

    def take(self, bucket: int) -> list[pl.DataFrame]:
        """The bucket's rows in read order (its spill files, then what is still buffered); files deleted."""
        frames = []
        for path in self.files.pop(bucket, []):
            frames.append(pl.read_ipc(path))
            path.unlink()
        frames.extend(self.pending.pop(bucket, []))
        return frames

    def take_hosts(self, bucket: int, hosts: list[str | None], last: bool) -> list[pl.DataFrame]:
        """The rows of some of a bucket's hosts in read order; the files go with the ``last`` call.

        A bucket larger than a partition (a large input in few buckets) is analysed a few hosts at a
        time: each of its files is scanned once per group of hosts, keeping only their rows.
        """
        mine = pl.col("host").is_in(hosts, nulls_equal=True)
        frames = [pl.scan_ipc(path).filter(mine).collect() for path in self.files.get(bucket, [])]
        frames += [f.filter(mine) for f in self.pending.get(bucket, [])]
        if last:
            for path in self.files.pop(bucket, []):
                path.unlink()
            self.pending.pop(bucket, None)
        return [f for f in frames if f.height]


class StreamingEngine(Engine):
    """Analysis in a memory budget: spill by host bucket, then one partition at a time.

    Args:
        memory: The budget in bytes (default :func:`default_memory`). The partition size and the
            read buffer follow from it; a single host's samples, the largest single input's parsed
            samples, the gauges and the rate rows the fabric-wide detectors read are held whole
            (``docs/scale.md``, "Bounded memory").
        buckets: Host buckets the rows are spilled into (the finest partitioning possible).
        batch_rows: Rows per parsed batch.
        spill_dir: Where the spill files go (default: the system's temporary directory); they are
            deleted at the end of the run.
        progress: Show a progress bar with an ETA on stderr (None: only when stderr is a terminal).

    Example:
        >>> from fabricscope.detect.config import load_config
        >>> from fabricscope.reading.options import Filters, ReadOptions
        >>> from fabricscope.engines.streaming import StreamingEngine
        >>> res = StreamingEngine(memory=256 << 20).run(["sample_traces/prometheus"], read=ReadOptions(),
        ...     filters=Filters(), config=load_config(None), profile=None)
        >>> res.findings.filter(res.findings["kind"] == "link_errors").height > 0
        True
    """

    name = "stream"

    def __init__(
        self,
        memory: int | None = None,
        buckets: int = 256,
        batch_rows: int = 1 << 18,
        spill_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = None,
    ) -> None:
        if buckets < 1:
            raise ValueError("buckets must be at least 1")
        self.memory = memory or default_memory()
        self.buckets = buckets
        self.batch_rows = batch_rows
        self.spill_dir = spill_dir
        self.progress = progress

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
        """Spill every input by host bucket, then analyse the partitions one after the other."""
        t0 = time.perf_counter()
        bar = ProgressBar(self.progress)
        units = work_units(paths, read.format, filters)
        sizes = [_size(u) for u in units]
        with _Spill(self.spill_dir, self.buckets, self.memory // SPILL_SHARE) as spill:
            reports: list[InputReport] = []
            table_parts: list[dict[str, pl.DataFrame]] = []
            done = 0
            readers = ReaderPool()  # one unit at a time, one reader: label sets resolved once
            for unit, size in zip(units, sizes, strict=True):
                # One unit at a time: its batches are spilled before the next unit is parsed.
                unit_reports, unit_tables, samples, attrs = read_units(
                    [unit], read, filters, 1, self.batch_rows, readers
                )
                reports.extend(unit_reports)
                table_parts.append(unit_tables)
                spill.add_attributes(attrs[0])
                for frame in samples[0]:
                    spill.add(frame)
                del samples
                done += size
                bar.update(done, sum(sizes), label="reading")
            whole_tables = merge_tables(table_parts)
            # One fabric model, from everything read, before any detector runs.
            hosts = {h for counts in spill.host_rows.values() for h in counts}
            fabric = fabric_of(hosts, spill.attributes(), whole_tables, reports, read)
            t1 = time.perf_counter()

            results = _analyse_spill(
                spill,
                whole_tables,
                config,
                profile,
                memory=self.memory,
                keep_detail=keep_detail,
                bar=bar,
                fabric=fabric,
            )
            bar.close()
            seconds = {"read": t1 - t0, "partitions": time.perf_counter() - t1}
            return Partitioned(results, whole_tables, reports, seconds, spill.sample_bytes, fabric)


def analyse_in_budget(
    parts: Iterable[tuple[pl.DataFrame | None, pl.DataFrame | None]],
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    *,
    memory: int,
    buckets: int = 256,
    spill_dir: str | os.PathLike[str] | None = None,
    keep_detail: bool = False,
    fabric: Fabric | None = None,
) -> list[PartitionResult]:
    """The streaming engine's analysis of some hosts' samples, in a memory budget.

    The parts are taken one at a time (an iterable that fetches or reads each one when asked
    keeps only one in memory), their samples spilled by host bucket, then analysed in partitions
    of whole hosts whose rows fit the budget, exactly as :class:`StreamingEngine` does after
    reading. Another engine's worker uses it to analyse its share of the hosts in its share of the
    budget.

    Args:
        parts: (samples, attributes) pairs, already filtered, either may be None; every row of a
            host must be among them.
        tables: Side tables, whole.
        config: Thresholds.
        profile: A forced profile, or None.
        memory: The budget in bytes.
        buckets: Host buckets the rows are spilled into.
        spill_dir: Where the spill files go (default: the system's temporary directory).
        keep_detail: Keep every rate row and the detectors' views.
        fabric: The analysis' fabric model (:func:`fabricscope.engines.fabric_of`).

    Returns:
        One :class:`PartitionResult` per partition analysed.
    """
    with _Spill(spill_dir, buckets, memory // SPILL_SHARE) as spill:
        for samples, attrs in parts:
            if samples is not None:
                spill.add(samples)
            spill.add_attributes([attrs])
            del samples, attrs
        return _analyse_spill(spill, tables, config, profile, memory=memory, keep_detail=keep_detail, fabric=fabric)


def _analyse_spill(
    spill: _Spill,
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    *,
    memory: int,
    keep_detail: bool,
    bar: ProgressBar | None = None,
    fabric: Fabric | None = None,
) -> list[PartitionResult]:
    """Every partition of :func:`_plan`, one after the other, each read back from its spill files."""
    attributes = spill.attributes()
    plan = _plan(spill, attributes, memory)
    results: list[PartitionResult] = []
    total_rows = sum(spill.rows.values()) or 1
    analysed = 0
    # How many partitions still read each bucket a few hosts at a time.
    shares = Counter(b for buckets, _, split in plan if split for b in buckets)
    for buckets, hosts, split in plan:
        if split:
            shares[buckets[0]] -= 1
            frames = spill.take_hosts(buckets[0], hosts, last=not shares[buckets[0]])
        else:
            frames = [f for b in buckets for f in spill.take(b)]
        samples_df = pl.concat(frames, how="vertical", rechunk=True) if len(frames) > 1 else frames[0].rechunk()
        del frames
        attrs_df = attributes.filter(pl.col("host").is_in(hosts, nulls_equal=True)) if len(plan) > 1 else attributes
        results.append(
            analyze_partition(samples_df, attrs_df, tables, config, profile, keep_detail=keep_detail, fabric=fabric)
        )
        analysed += samples_df.height
        del samples_df
        if bar is not None:
            bar.update(analysed, total_rows, label="analysing")
    return results


def _plan(spill: _Spill, attributes: pl.DataFrame, memory: int) -> list[tuple[list[int], list[str | None], bool]]:
    """Partitions as (buckets, hosts, split): consecutive buckets whose rows fit the budget.

    A bucket with more rows than a partition holds (a large input: the bucket count is fixed before
    the size is known) is split into groups of whole hosts that fit (``split``: the partition reads
    only those hosts' rows of the bucket); one host larger than a partition stays whole. Hosts with
    attributes but no samples join the partition of their bucket, or the last one when their bucket
    has no samples, so that every attribute read reaches the detectors.
    """
    keys = sorted(spill.rows)
    if not keys:
        return []
    bytes_per_row = spill.sample_bytes / max(1, sum(spill.rows.values()))
    target = max(1, int(memory / WORKING_SET_FACTOR / max(bytes_per_row, 1.0)))
    plan: list[tuple[list[int], list[str | None], bool]] = []
    entry_of: dict[int, int] = {}
    whole: list[int] = []
    acc = 0

    def close() -> None:
        nonlocal whole, acc
        if whole:
            entry_of.update(dict.fromkeys(whole, len(plan)))
            plan.append((whole, sorted_hosts({h for b in whole for h in spill.host_rows[b]}), False))
        whole, acc = [], 0

    for b in keys:
        if spill.rows[b] > target:
            close()
            chunk: list[str | None] = []
            rows = 0
            for h in sorted_hosts(spill.host_rows[b]):
                if chunk and rows + spill.host_rows[b][h] > target:
                    plan.append(([b], chunk, True))
                    chunk, rows = [], 0
                chunk.append(h)
                rows += spill.host_rows[b][h]
            entry_of[b] = len(plan)
            plan.append(([b], chunk, True))
            continue
        if whole and acc + spill.rows[b] > target:
            close()
        whole.append(b)
        acc += spill.rows[b]
    close()
    known = {h for _, hosts, _ in plan for h in hosts}
    for h in hosts_without_samples(attributes, known):
        plan[entry_of.get(partition_of(h, spill.buckets), len(plan) - 1)][1].append(h)
    return plan


def _size(unit: Unit) -> int:
    try:
        return max(1, Path(unit[0]).stat().st_size)
    except OSError:
        return 1

"""The local engine: read -> per partition -> fabric-wide in this process.

Threads (as many as cores) read groups of work units, each unit streamed by the Rust scanner in
bounded batches with the GIL released; each batch is filtered as it arrives and kept whole, with
the count of rows per host it holds (copied out of the reader's Arrow batch, whose memory is
handed back to the system). Hosts are then grouped into partitions of at most ``target_rows``
rows, small enough that the partitions in flight add about half the samples' size (hosts in the
order they were first read, so a layout with one file per group of hosts gives partitions that
are whole batches), and the partitions are analysed on as
many threads as there are cores: the rate kernel releases the GIL and runs on one core, so two
partitions at once keep two cores busy. A partition's rows are gathered into one contiguous frame
just before its analysis (the kernel and the detectors run several times faster on it than on
hundreds of small chunks), and a batch is dropped as soon as every partition that needs it has
taken its rows: peak memory is the samples once plus the working set of the partitions in flight.

An input too large for that (its estimated peak above the memory budget, :func:`auto_budget`) is
handed to the streaming engine with that budget (:mod:`fabricscope.engines.streaming`): the same
findings, with a peak that follows the budget instead of the input.
"""

from __future__ import annotations

import math
import os
import stat
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import _native
from fabricscope.engines.base import (
    Engine,
    Partitioned,
    PartitionResult,
    analyze_partition,
    fabric_of,
    hosts_without_samples,
    merge_tables,
    return_freed_memory,
)
from fabricscope.engines.streaming import StreamingEngine, machine_memory, parse_memory
from fabricscope.exceptions import InputError
from fabricscope.fabric.entities import rename_hosts
from fabricscope.fabric.model import Fabric
from fabricscope.fabric.profiles import Profile
from fabricscope.reading._regular import open_regular
from fabricscope.reading.options import Filters, ReadOptions, partition_of
from fabricscope.reading.scan import InputReport, ReaderPool, empty_attributes, empty_samples
from fabricscope.reading.units import (
    HISTORY,
    HISTORY_ATTRIBUTES,
    URL,
    Unit,
    available_cores,
    group_units,
    read_units,
    work_units,
)

__all__ = ["LocalEngine", "auto_budget", "estimated_peak"]

MEMORY_ENV = "FABRICSCOPE_MEMORY"
"""The environment variable that sets the local engine's memory budget (``8G``, or ``off``)."""

PEAK_PER_INPUT_BYTE = 0.45
"""The local engine's memory per byte of uncompressed input beyond :data:`PEAK_FIXED`: the samples
(about 0.3 bytes of Arrow per byte of counter text) and what reading them leaves allocated."""

PEAK_FIXED = 600 << 20
"""What the local engine holds whatever the input's size: the interpreter and libraries, and two
partitions of up to 4 M rows in flight. With :data:`PEAK_PER_INPUT_BYTE`, just above the peaks
measured on ``/federate`` text: 1,244 MiB for 1,502 MB (10^7 samples), 6,985 MB for 15,000 MB
(10^8) (BENCHMARKS.md)."""

IN_FLIGHT_SHARE = 0.5
"""At most this share of the samples' Arrow size is held by the partitions in flight (their rows
gathered once more, their rates and the detectors' frames), on top of the samples themselves:
partitions are made small enough for that, down to :data:`MIN_PARTITION_ROWS`."""

IN_FLIGHT_PER_SAMPLE_BYTE = 3.6
"""Memory a partition in flight adds per byte of its samples' Arrow size: its rows gathered (1x),
their rates (1.5x) and the detectors' frames (1.1x at their peak, in ``bottleneck``), measured on
``/federate`` text (BENCHMARKS.md, "Without ``--memory``")."""

MIN_PARTITION_ROWS = 500_000
"""Partitions are not made smaller than this to bound memory: below it, each partition's fixed
cost (a few dozen Polars calls per detector) outweighs the memory saved."""

COMPRESSED_EXPANSION = 10
"""A compressed input (gzip, zstd, a Parquet history file) counts as this many times its size:
counter text compresses about tenfold and more, so this errs towards streaming."""


def auto_budget() -> int | None:
    """The memory budget above which the local engine streams, in bytes (None: never).

    ``FABRICSCOPE_MEMORY`` when set (a size such as ``8G``, or ``off``), else half of the
    machine's memory or of its cgroup limit (:func:`fabricscope.engines.streaming.machine_memory`).
    """
    text = os.environ.get(MEMORY_ENV, "").strip()
    if text.lower() == "off":
        return None
    if not text:
        return max(64 << 20, machine_memory() // 2)
    try:
        return parse_memory(text)
    except ValueError as e:
        raise ValueError(f"{MEMORY_ENV}: {e}") from None


def estimated_peak(units: Sequence[Unit], above: int | None = None) -> int:
    """The local engine's estimated peak memory for these units, in bytes.

    :data:`PEAK_FIXED` plus :data:`PEAK_PER_INPUT_BYTE` per byte of the regular files (compressed
    ones :data:`COMPRESSED_EXPANSION` times their size); URLs, sysfs trees and anything that is not
    a regular file (a FIFO is never opened here) add nothing. Stops counting once above ``above``.
    """
    total = float(PEAK_FIXED)
    for path, kind in units:
        if kind == URL:
            continue
        try:
            st = Path(path).stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        compressed = kind in (HISTORY, HISTORY_ATTRIBUTES)
        if not compressed:
            try:
                with open_regular(path) as f:  # replaced by a FIFO since the stat: never waits
                    compressed = _native.compression(f.read(8)) is not None
            except (OSError, InputError):
                continue
        total += st.st_size * (COMPRESSED_EXPANSION if compressed else 1) * PEAK_PER_INPUT_BYTE
        if above is not None and total > above:
            break
    return int(total)


@dataclass
class _Read:
    """What one reading thread returns: its units' reports, tables, batches and rows per host."""

    reports: list[InputReport]
    tables: dict[str, pl.DataFrame]
    batches: list[pl.DataFrame]
    hosts: list[dict[str | None, int]]
    attributes: list[pl.DataFrame]


def _rows_per_host(batch: pl.DataFrame) -> dict[str | None, int]:
    """Rows of each host in a batch, hosts in name order (grouped on the dictionary codes)."""
    counts = batch.group_by("host").len().with_columns(pl.col("host").cast(pl.String)).sort("host", nulls_last=True)
    return dict(zip(counts["host"].to_list(), counts["len"].to_list(), strict=True))


def _read(units: Sequence[Unit], read: ReadOptions, filters: Filters, batch_rows: int, readers: ReaderPool) -> _Read:
    reports, tables, samples, attrs = read_units(units, read, filters, 1, batch_rows, readers)
    # The reader's batches were copied into Polars memory as they arrived (fabricscope.reading.scan);
    # what glibc kept of them would otherwise stay resident next to the samples.
    return_freed_memory()
    return _Read(reports, tables, samples[0], [_rows_per_host(b) for b in samples[0]], attrs[0])


def _named_from_paths(
    fabric: Fabric,
    batches: list[pl.DataFrame | None],
    batch_hosts: list[dict[str | None, int]],
    attributes: pl.DataFrame,
    tables: dict[str, pl.DataFrame],
) -> tuple[list[pl.DataFrame | None], list[dict[str | None, int]], pl.DataFrame, dict[str, pl.DataFrame]]:
    """Every frame with each host-less input's placeholder host renamed to the host its path names.

    A placeholder whose path names no host stays until the findings are named: two such inputs
    are two hosts to the detectors, never one ``unknown``.
    """
    names = {p: fabric.host(p) or h for p, h in fabric.path_hosts.items() if h != "unknown"}
    if not names:
        return batches, batch_hosts, attributes, tables
    out, hosts = [], []
    for b, counts in zip(batches, batch_hosts, strict=True):
        if b is not None and any(h in names for h in counts):
            b = rename_hosts(b, names)
            counts = _rows_per_host(b)
        out.append(b)
        hosts.append(counts)
    return out, hosts, rename_hosts(attributes, names), {k: rename_hosts(v, names) for k, v in tables.items()}


def _rows_of(frame: pl.DataFrame, hosts: list[str | None]) -> pl.DataFrame:
    # The categorical is compared by dictionary code: the host names are looked up once.
    return frame.filter(pl.col("host").is_in(hosts, nulls_equal=True))


class LocalEngine(Engine):
    """Partitioned analysis in this process.

    Args:
        partitions: Exactly this many host partitions (hash of the host,
            :func:`fabricscope.reading.options.partition_of`); None groups hosts adaptively into partitions
            of about ``target_rows`` sample rows.
        target_rows: Most rows per partition when adaptive. Small inputs are one partition; larger
            ones are split into a multiple of ``workers`` partitions of similar size, at least seven
            per worker when they hold :data:`MIN_PARTITION_ROWS` rows each, so that the
            partitions in flight add at most :data:`IN_FLIGHT_SHARE` of the samples' size.
        batch_rows: Rows per parsed batch.
        workers: Partitions analysed at the same time (default: the cores this process may run
            on). Each one in flight holds its rows once more plus its rates and detector frames.
        memory: The memory budget in bytes: an input whose :func:`estimated_peak` is above it is
            analysed by the streaming engine in that budget. Default :func:`auto_budget` (the
            ``FABRICSCOPE_MEMORY`` environment variable, else half of the machine); 0 never
            streams, nor does a fixed number of ``partitions``.
        progress: The streaming engine's progress bar when it takes over (None: only on a terminal).

    Example:
        >>> from fabricscope.reading.options import Filters, ReadOptions
        >>> from fabricscope.detect.config import load_config
        >>> from fabricscope.engines.local import LocalEngine
        >>> res = LocalEngine().run(["sample_traces/prometheus"], read=ReadOptions(), filters=Filters(),
        ...                         config=load_config(None), profile=None)
        >>> res.partitions, res.findings.filter(res.findings["kind"] == "link_errors").height > 0
        (1, True)
    """

    name = "local"

    def __init__(
        self,
        partitions: int | None = None,
        target_rows: int = 4_000_000,
        batch_rows: int = 1 << 20,
        workers: int | None = None,
        memory: int | None = None,
        progress: bool | None = None,
    ) -> None:
        if partitions is not None and partitions < 1:
            raise ValueError("partitions must be at least 1")
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        self.partitions = partitions
        self.target_rows = target_rows
        self.batch_rows = batch_rows
        self.workers = workers or available_cores()
        self.memory = auto_budget() if memory is None else memory or None
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
        """Read with a thread per group of inputs, then analyse partitions on ``workers`` threads."""
        t0 = time.perf_counter()
        units = work_units(paths, read.format, filters)
        if self.memory and self.partitions is None and estimated_peak(units, self.memory) > self.memory:
            streaming = StreamingEngine(memory=self.memory, progress=self.progress)
            return streaming.analyse_partitions(
                paths, read=read, filters=filters, config=config, profile=profile, keep_detail=keep_detail
            )
        threads = max(1, min(available_cores(), len(units)))
        unit_groups = group_units(units, 4 * threads)
        # One pool of readers for every thread: a fabric's label sets are resolved once per
        # reader, not once per file.
        readers = ReaderPool()
        with ThreadPoolExecutor(threads, thread_name_prefix="fabricscope-read") as pool:
            parts = list(
                pool.map(
                    partial(_read, read=read, filters=filters, batch_rows=self.batch_rows, readers=readers), unit_groups
                )
            )
        del readers
        reports = [r for p in parts for r in p.reports]
        whole_tables = merge_tables([p.tables for p in parts])
        batches: list[pl.DataFrame | None] = [b for p in parts for b in p.batches]
        batch_hosts = [h for p in parts for h in p.hosts]
        attr_frames = [a for p in parts for a in p.attributes if a.height]
        all_attrs = pl.concat(attr_frames, how="vertical_relaxed") if attr_frames else empty_attributes()
        del parts
        sample_bytes = sum(b.estimated_size() for b in batches if b is not None)
        # One fabric model, from everything read, before any detector runs.
        fabric = fabric_of({h for counts in batch_hosts for h in counts}, all_attrs, whole_tables, reports, read)
        if any(h != "unknown" for h in fabric.path_hosts.values()):
            # A host-less input's rows are its path's host's before any detector runs: one host's
            # data is analysed as one host, as `parse` writes it and cron stores it.
            batches, batch_hosts, all_attrs, whole_tables = _named_from_paths(
                fabric, batches, batch_hosts, all_attrs, whole_tables
            )
        t1 = time.perf_counter()

        plan = self._plan(batch_hosts, all_attrs)
        # How many partitions still need each batch; a batch is released when none does.
        pending = [0] * len(batches)
        for _, used in plan:
            for i in used:
                pending[i] += 1
        lock = threading.Lock()

        def one(part: tuple[list[str | None], list[int]]) -> PartitionResult:
            hosts, used = part
            wanted = set(hosts)
            pieces = []
            for i in used:
                b = batches[i]
                assert b is not None  # released only after its last partition took its rows
                pieces.append(b if wanted.issuperset(batch_hosts[i]) else _rows_of(b, hosts))
            if not pieces:
                samples = empty_samples()
            else:
                samples = pl.concat(pieces, how="vertical", rechunk=True) if len(pieces) > 1 else pieces[0].rechunk()
            del pieces
            with lock:
                for i in used:
                    pending[i] -= 1
                    if not pending[i]:
                        batches[i] = None
            result = analyze_partition(
                samples,
                _rows_of(all_attrs, hosts) if len(plan) > 1 else all_attrs,
                whole_tables,
                config,
                profile,
                keep_detail=keep_detail,
                fabric=fabric,
            )
            del samples
            # The rate kernel's buffers (glibc) were freed with the partition's frames.
            return_freed_memory()
            return result

        workers = min(self.workers, len(plan))
        if workers > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="fabricscope-partition") as pool:
                results = list(pool.map(one, plan))
        else:
            results = [one(p) for p in plan]
        seconds = {"read": t1 - t0, "partitions": time.perf_counter() - t1}
        return Partitioned(results, whole_tables, reports, seconds, sample_bytes, fabric)

    def _partitions_for_memory(self, rows: int) -> int:
        """The fewest partitions whose ``workers`` in flight hold :data:`IN_FLIGHT_SHARE` of the samples.

        ``workers`` partitions of ``rows / n`` rows each add :data:`IN_FLIGHT_PER_SAMPLE_BYTE`
        times their share of the samples' Arrow size, so ``n >= workers * 3.6 / 0.5`` (about
        seven per worker) whatever the size of a row or of the input; none smaller than
        :data:`MIN_PARTITION_ROWS`. The peak is then about 1.5 times the samples' Arrow size, plus
        the interpreter and libraries (1.7x at 10^7 samples).
        """
        wanted = math.ceil(self.workers * IN_FLIGHT_PER_SAMPLE_BYTE / IN_FLIGHT_SHARE)
        return max(1, min(wanted, rows // MIN_PARTITION_ROWS))

    def _plan(
        self, batch_hosts: list[dict[str | None, int]], attributes: pl.DataFrame
    ) -> list[tuple[list[str | None], list[int]]]:
        """Partitions: their hosts and the batches holding their rows, in a stable order.

        Hosts with attributes but no samples join the last partition (or the one their hash names
        when the count is fixed), so that every attribute read reaches the detectors.
        """
        rows: dict[str | None, int] = {}
        for counts in batch_hosts:
            for h, n in counts.items():
                rows[h] = rows.get(h, 0) + n
        if not rows:
            # states only (nvidia-smi -q, nvidia-smi nvlink -s): one partition of the attributes' hosts
            alone = list(dict.fromkeys(hosts_without_samples(attributes, {})))
            return [(alone, [])] if alone else []
        if self.partitions is not None:
            group_of = {h: partition_of(h, self.partitions) for h in rows}
        else:
            total = sum(rows.values())
            n = max(math.ceil(total / self.target_rows), self._partitions_for_memory(total))
            # A multiple of the workers, so that the last round of partitions keeps every core busy.
            n = n if n <= 1 else math.ceil(n / self.workers) * self.workers
            per = total / n
            group_of, before = {}, 0
            for h, k in rows.items():
                group_of[h] = min(n - 1, int(before // per))
                before += k
        keys = sorted(set(group_of.values()))
        last = keys[-1]
        for h in hosts_without_samples(attributes, group_of):
            g = partition_of(h, self.partitions) if self.partitions is not None else last
            group_of[h] = g if g in keys else last
        hosts: dict[int, list[str | None]] = {g: [] for g in keys}
        for h, g in group_of.items():
            hosts[g].append(h)
        used: dict[int, list[int]] = {g: [] for g in keys}
        for i, counts in enumerate(batch_hosts):
            for g in dict.fromkeys(group_of[h] for h in counts):
                used[g].append(i)
        return [(hosts[g], used[g]) for g in keys]

"""The local engine: read -> per partition -> fabric-wide in this process.

Threads (as many as cores) read groups of work units, each unit streamed by the Rust scanner in
bounded batches with the GIL released; each batch is filtered and split by host into
:data:`BUCKETS` buckets as it arrives, so the whole samples table is never concatenated, and
buckets keep the units' order, so every run sees the rows in the same order. Buckets are then
analysed in groups of about ``target_rows`` rows, one group at a time, and each group's samples
are dropped as soon as it is done: peak memory is the samples once plus the working set of one
group's rates and detectors.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import polars as pl

from fabricscope.engines.base import (
    Engine,
    EngineResult,
    Filters,
    PartitionResult,
    ReadOptions,
    analyze_partition,
    merge_tables,
    reduce_results,
)
from fabricscope.engines.units import group_units, read_units, work_units
from fabricscope.io import empty_attributes
from fabricscope.profiles import Profile

__all__ = ["BUCKETS", "LocalEngine"]

BUCKETS = 256
"""Host buckets when the partition count is adaptive: fine enough to balance, coarse enough to be cheap."""


class LocalEngine(Engine):
    """Partitioned analysis in this process.

    Args:
        partitions: Exactly this many host partitions (hash of the host); None groups hosts
            adaptively into partitions of about ``target_rows`` sample rows.
        target_rows: Rows per partition when adaptive. Small inputs are one partition.
        batch_rows: Rows per parsed batch.

    Example:
        >>> from fabricscope.engines import Filters, ReadOptions
        >>> from fabricscope.config import load_config
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
    ) -> None:
        if partitions is not None and partitions < 1:
            raise ValueError("partitions must be at least 1")
        self.partitions = partitions
        self.target_rows = target_rows
        self.batch_rows = batch_rows

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
        """Analyse the inputs at ``paths`` (see :meth:`fabricscope.engines.Engine.run`)."""
        t0 = time.perf_counter()
        n_buckets = self.partitions or BUCKETS
        units = work_units(paths, read.format, filters)
        threads = max(1, min(os.cpu_count() or 1, len(units)))
        groups = group_units(units, 4 * threads)
        with ThreadPoolExecutor(threads, thread_name_prefix="fabricscope-read") as pool:
            parts = list(pool.map(lambda g: read_units(g, read, filters, n_buckets, self.batch_rows), groups))
        reports = [r for p in parts for r in p[0]]
        whole_tables = merge_tables([p[1] for p in parts])
        samples = {i: [f for p in parts for f in p[2][i]] for i in range(n_buckets)}
        samples = {i: v for i, v in samples.items() if v}
        attrs = {i: [f for p in parts for f in p[3][i]] for i in range(n_buckets)}
        del parts
        sample_bytes = sum(f.estimated_size() for v in samples.values() for f in v)
        t1 = time.perf_counter()
        empty_attrs = empty_attributes()

        def one(group: list[int]) -> PartitionResult:
            frames = [f for b in group for f in samples.pop(b)]
            part_attrs = [f for b in group for f in attrs.get(b, [])]
            return analyze_partition(
                pl.concat(frames, how="vertical", rechunk=False),
                pl.concat(part_attrs, how="vertical_relaxed") if part_attrs else empty_attrs,
                whole_tables,
                config,
                profile,
                keep_detail=keep_detail,
            )

        # One group after another: Polars already uses every core inside each, and detectors are
        # not written to share a process between threads (BENCHMARKS.md).
        results = [one(group) for group in self._groups(samples)]
        return reduce_results(
            results,
            tables=whole_tables,
            config=config,
            profile=profile,
            reports=reports,
            seconds={"read": t1 - t0, "partitions": time.perf_counter() - t1},
            sample_bytes=sample_bytes,
            keep_detail=keep_detail,
        )

    def _groups(self, samples: dict[int, list[pl.DataFrame]]) -> list[list[int]]:
        """Buckets analysed together: each alone when the count is fixed, else about ``target_rows``."""
        order = sorted(samples)
        if self.partitions is not None:
            return [[b] for b in order]
        groups: list[list[int]] = []
        rows = 0
        for b in order:
            n = sum(f.height for f in samples[b])
            if not groups or rows + n > self.target_rows:
                groups.append([])
                rows = 0
            groups[-1].append(b)
            rows += n
        return groups

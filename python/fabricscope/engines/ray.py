"""The Ray engine: the same three steps as the local engine, as Ray tasks.

* The driver walks the inputs into *units* (a file, or a sysfs tree that must be read whole) and
  ships their **paths** to read tasks, grouped by size; workers must see the same paths (a shared
  filesystem, or a copy per node). Nothing but paths and options leaves the driver.
* Each read task parses its files with the Rust readers (GIL released), filters every batch, and
  returns one frame per host partition (``num_returns``), which stay in Ray's object store.
* One analysis task per partition receives that partition's frames from every read task, computes
  rates and the per-partition detectors, and returns findings plus the small reduced inputs of
  the fabric-wide detectors, which the driver runs last (:func:`fabricscope.engines.fabric_wide`).
* With a memory budget (``--memory``), every worker keeps to its share of it (the budget divided by
  the cluster's CPUs, one task per CPU at a time): each read task reads one work unit, and each
  analysis task fetches its partition's frames one at a time into the streaming engine's spill
  files and analyses them in sub-partitions of whole hosts that fit its share
  (:func:`fabricscope.engines.streaming.analyse_in_budget`). The frames waiting between the two
  steps are in Ray's object store, which spills to disk beyond its own limit.

Install with ``pip install 'fabricscope[ray]'``; see ``docs/scale.md`` for a real cluster.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import polars as pl

from fabricscope.engines.base import (
    IDENTITY_KEYS,
    Engine,
    Partitioned,
    PartitionResult,
    analyze_partition,
    fabric_of,
    merge_tables,
)
from fabricscope.engines.streaming import analyse_in_budget
from fabricscope.exceptions import EngineFailedError, EngineUnavailableError, FabricscopeError
from fabricscope.fabric.model import Fabric
from fabricscope.fabric.profiles import Profile
from fabricscope.reading.options import Filters, ReadOptions
from fabricscope.reading.scan import empty_attributes, empty_samples
from fabricscope.reading.units import Unit, group_units, read_units, work_units

__all__ = ["RayEngine"]


def _read_task(units: Sequence[Unit], read: ReadOptions, filters: Filters, partitions: int) -> tuple[Any, ...]:
    reports, tables, samples, attrs = read_units(units, read, filters, partitions)

    def one(frames: list[pl.DataFrame]) -> pl.DataFrame | None:
        return pl.concat(frames, how="vertical_relaxed") if frames else None

    # What the driver's fabric model needs (fabric_of): the hosts read and the identity attributes (small).
    hosts = {h for frames in (*samples, *attrs) for f in frames for h in f["host"].cast(pl.String).unique().to_list()}
    identity = [a.filter(pl.col("key").cast(pl.String).is_in(IDENTITY_KEYS)) for frames in attrs for a in frames]
    meta = {"reports": reports, "tables": tables, "hosts": hosts, "identity": one(identity)}
    # One return value per partition: Ray stores each separately, so partition i's analysis task
    # fetches only its own rows.
    return (meta, *((one(s), one(a)) for s, a in zip(samples, attrs, strict=True)))


def _analyze_task(
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    keep_detail: bool,
    fabric: Fabric,
    *parts: tuple[pl.DataFrame | None, pl.DataFrame | None],
) -> PartitionResult | None:
    samples = [s for s, _ in parts if s is not None]
    attrs = [a for _, a in parts if a is not None]
    # a partition of attributes alone (states, configuration files) is judged as the local engine does
    if not samples and not attrs:
        return None
    return analyze_partition(
        # One contiguous frame: the rate kernel and the detectors run several times faster on it
        # than on one chunk per read task and batch.
        pl.concat(samples, how="vertical_relaxed", rechunk=True) if samples else empty_samples(),
        pl.concat(attrs, how="vertical_relaxed") if attrs else empty_attributes(),
        tables,
        config,
        profile,
        keep_detail=keep_detail,
        fabric=fabric,
    )


def _analyze_in_budget_task(
    tables: dict[str, pl.DataFrame],
    config: dict[str, Any],
    profile: Profile | None,
    keep_detail: bool,
    fabric: Fabric,
    memory: int,
    refs: list[Any],
) -> list[PartitionResult]:
    """One partition in a memory budget, analysed as the streaming engine does.

    Its frames are fetched one at a time: ``refs`` is a list, so Ray does not fetch them all
    before the task starts.
    """
    import ray

    parts = (ray.get(ref) for ref in refs)
    return analyse_in_budget(parts, tables, config, profile, memory=memory, keep_detail=keep_detail, fabric=fabric)


def _alive_nodes(ray: Any) -> dict[str, str]:
    """The cluster's live nodes: node id -> address."""
    return {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")}


def _get(ray: Any, refs: list[Any], nodes: dict[str, str]) -> list[Any]:
    """``ray.get``, raising a worker's fabricscope error as itself (file, line, what was expected).

    Ray retries a task whose worker or node died and rebuilds the objects a dead node held; when it
    gives up, the run stops with :class:`EngineFailedError` naming the nodes lost since ``nodes``
    was taken, because findings from part of the partitions would look like a healthy rest of the
    fabric.
    """
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        if isinstance(e.cause, FabricscopeError):
            raise e.cause from None
        if not isinstance(e.cause, ray.exceptions.RayError):
            raise
        raise _lost(ray, nodes, e.cause) from e
    except ray.exceptions.RayError as e:
        raise _lost(ray, nodes, e) from e


# How long a failed run waits for the cluster to report which node died: Ray declares a node dead
# after its missed health checks (about 15-30 s with Ray's defaults).
NODE_DEATH_WAIT_S = 30.0


def _lost(ray: Any, nodes: dict[str, str], err: Exception) -> EngineFailedError:
    """The error that names what Ray lost: the nodes of ``nodes`` no longer alive, if any."""
    lost: list[str] = []
    # A crashed worker process is not a lost node; anything else (a died node, lost objects, a
    # dead owner) may be one that the cluster has not declared dead yet.
    deadline = time.monotonic() + (0.0 if isinstance(err, ray.exceptions.WorkerCrashedError) else NODE_DEATH_WAIT_S)
    while True:
        try:
            alive = _alive_nodes(ray)
        except Exception:  # the cluster itself is unreachable: name what Ray said
            break
        lost = [f"{node} ({address})" for node, address in nodes.items() if node not in alive]
        if lost or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    what = f"the Ray cluster lost node(s) {', '.join(lost)}" if lost else "a Ray worker or object was lost"
    said = " ".join(str(err).split())[:400]
    return EngineFailedError(f"{what} during the run and Ray could not recover: {type(err).__name__}: {said}")


class RayEngine(Engine):
    """Partitioned analysis as Ray tasks.

    Args:
        address: Cluster to join (``auto``, ``ray://head:10001``); None uses the running Ray
            instance or starts a local one. A Ray started here is shut down after the run.
        partitions: Host partitions (default: twice the cluster's CPUs).
        memory: A memory budget in bytes for all workers together, or None: each worker reads one
            unit at a time and analyses its partition within the budget divided by the cluster's
            CPUs, as the streaming engine does (:func:`fabricscope.engines.streaming.analyse_in_budget`).
    """

    name = "ray"

    def __init__(self, address: str | None = None, partitions: int | None = None, memory: int | None = None) -> None:
        if partitions is not None and partitions < 1:
            raise ValueError("partitions must be at least 1")
        if memory is not None and memory < 1:
            raise ValueError("memory must be at least 1 byte")
        self.address = address
        self.partitions = partitions
        self.memory = memory

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
        """Read and analyse the partitions as Ray tasks (see :meth:`fabricscope.engines.Engine.run`).

        Raises:
            EngineUnavailableError: Ray is not installed.
            EngineFailedError: Ray lost a node or worker and could not recover its work.
        """
        try:
            import ray
        except ImportError as e:  # depends on the install
            raise EngineUnavailableError("the ray engine needs Ray: pip install 'fabricscope[ray]'") from e
        # Ray's driver prints the cluster's error messages (a worker died, a node was lost) to
        # standard output, where `analyze --json -` writes its document: they go to standard error.
        with contextlib.redirect_stdout(sys.stderr):
            started = False
            if not ray.is_initialized():
                ray.init(address=self.address, log_to_driver=False, configure_logging=False)
                started = True
            try:
                return self._run(ray, paths, read, filters, config, profile, keep_detail)
            finally:
                if started:
                    ray.shutdown()

    def _run(
        self,
        ray: Any,
        paths: Sequence[str | os.PathLike[str]],
        read: ReadOptions,
        filters: Filters,
        config: dict[str, Any],
        profile: Profile | None,
        keep_detail: bool,
    ) -> Partitioned:
        t0 = time.perf_counter()
        nodes = _alive_nodes(ray)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n = self.partitions or 2 * cpus
        units = work_units(paths, read.format, filters)
        # In a budget, a read task holds one unit's samples at a time, as the streaming engine does.
        groups = [[u] for u in units] if self.memory else group_units(units, 2 * cpus)
        read_task = ray.remote(_read_task).options(num_returns=n + 1)
        reads = [read_task.remote(g, read, filters, n) for g in groups]
        metas = _get(ray, [r[0] for r in reads], nodes)
        tables = merge_tables([m["tables"] for m in metas])
        tables_ref = ray.put(tables)
        reports = [r for m in metas for r in m["reports"]]
        # One fabric model, from everything read, before any detector runs.
        identity = [m["identity"] for m in metas if m["identity"] is not None]
        fabric = fabric_of(
            {h for m in metas for h in m["hosts"]},
            pl.concat(identity, how="vertical_relaxed") if identity else empty_attributes(),
            tables,
            reports,
            read,
        )
        fabric_ref = ray.put(fabric)
        # Partition i's frames from every read task go to one analysis task, straight from the
        # object store: the driver never holds samples.
        results: list[PartitionResult]
        if self.memory:
            share = max(1, self.memory // cpus)
            budget_task = ray.remote(_analyze_in_budget_task)
            pending = [
                budget_task.remote(
                    tables_ref, config, profile, keep_detail, fabric_ref, share, [r[1 + i] for r in reads]
                )
                for i in range(n)
            ]
            results = [p for got in _get(ray, pending, nodes) for p in got]
        else:
            analyze_task = ray.remote(_analyze_task)
            pending = [
                analyze_task.remote(tables_ref, config, profile, keep_detail, fabric_ref, *[r[1 + i] for r in reads])
                for i in range(n)
            ]
            results = [r for r in _get(ray, pending, nodes) if r is not None]
        # Reading and the partitions overlap in Ray: one figure for both.
        seconds = {"read+partitions": time.perf_counter() - t0}
        return Partitioned(results, tables, reports, seconds, fabric=fabric)

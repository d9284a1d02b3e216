"""Executors: who runs the analysis where, behind one thin interface.

The analysis is split into three steps that every engine runs the same way:

1. **read** - file paths (never tables) go to workers; each parses its files with the Rust readers,
   applies the host/time filters to every batch as it arrives, and assigns rows to partitions by
   host, so all series of one host (and so of each of its devices and ports) land in one
   partition: by a stable hash of the host (:func:`fabricscope.reading.options.partition_of`) when the
   number of partitions is fixed (and in Ray), else (local engine) by cutting the hosts, in the order first read, into
   partitions of similar row counts.
2. **per partition** - rates and the *per-partition* detectors (:data:`PER_PARTITION`) on one
   partition's samples, which never needs the whole table. The partition also returns the small
   *reduced* inputs the fabric-wide detectors need: its gauges, its port attributes, and only the
   rate rows those detectors read (:data:`FABRIC_WIDE`).
3. **fabric-wide** - detectors that compare ports with each other (link_degraded's majority of like
   ports, link_flap's peer at the other end of the cable, lossy_collapse's peer NICs) run once on
   the concatenated reduced inputs.

Which step runs a detector, and which rate rows a partition ships to the fabric-wide step, is what
the detector's spec declares (:class:`fabricscope.detect.DetectorSpec` ``scope`` and ``rates_needed``);
a fabric-wide detector that declares no projection gets the *full* rates and samples: correct by
default, scalable once it declares what it reads. Side tables (benchmarks, captures' packet tables,
topology links) go whole to both steps, so a benchmark log or a capture alone, with no counters at
all, is judged exactly like a mix. Engines implement
:class:`Engine`; :mod:`fabricscope.engines.local` runs the steps in this process,
:mod:`fabricscope.engines.ray` as Ray tasks. See ``docs/scale.md``.
"""

from __future__ import annotations

from fabricscope.engines.base import (
    FABRIC_WIDE,
    PER_PARTITION,
    Engine,
    Partitioned,
    PartitionResult,
    analyze_partition,
    analyze_tables,
    fabric_of,
    fabric_wide,
    merge_tables,
    reduce_results,
)
from fabricscope.engines.local import LocalEngine
from fabricscope.engines.ray import RayEngine
from fabricscope.engines.streaming import StreamingEngine

__all__ = [
    "FABRIC_WIDE",
    "PER_PARTITION",
    "Engine",
    "LocalEngine",
    "PartitionResult",
    "Partitioned",
    "RayEngine",
    "StreamingEngine",
    "analyze_partition",
    "analyze_tables",
    "fabric_of",
    "fabric_wide",
    "get_engine",
    "merge_tables",
    "reduce_results",
]


def get_engine(
    name: str,
    *,
    address: str | None = None,
    partitions: int | None = None,
    memory: int | None = None,
    progress: bool | None = None,
) -> Engine:
    """The engine called ``name`` (``local``, ``ray`` or ``stream``).

    Args:
        name: Engine name.
        address: Ray cluster address (``auto``, ``ray://head:10001``); None starts a local Ray.
        partitions: Number of host partitions (default: per engine).
        memory: Memory budget in bytes of the ``stream`` engine (default: a quarter of the machine),
            or of all ``ray`` workers together (default: none).
        progress: The ``stream`` engine's progress bar on stderr (None: only on a terminal).

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
        return LocalEngine(partitions=partitions, progress=progress)
    if name == "ray":
        return RayEngine(address=address, partitions=partitions, memory=memory)
    if name == "stream":
        return StreamingEngine(memory=memory, progress=progress)
    raise ValueError(f"unknown engine {name!r}: expected 'local', 'ray' or 'stream'")

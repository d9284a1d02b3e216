"""fabricscope: fabric telemetry analyzer for GPU clusters.

Reads what InfiniBand and RoCEv2 fabrics export (Prometheus/OpenMetrics text, ``ethtool -S``,
sysfs counter trees) into one canonical samples table.

Example:
    >>> import fabricscope
    >>> df = fabricscope.read("sample_traces")
    >>> {"ethtool", "prometheus"} <= set(df["source"].unique().to_list())
    True
"""

from fabricscope import exceptions
from fabricscope._native import __version__
from fabricscope.fabric.advise import advise
from fabricscope.fabric.profiles import get_profile, profiles
from fabricscope.fabric.topology import format_topology, topology
from fabricscope.incidents.correlate import Incident, correlate
from fabricscope.pipeline import Analysis, analyze, run_analysis
from fabricscope.reading.history import History
from fabricscope.reading.load import load, read
from fabricscope.reading.packets import PcapResult, read_pcap
from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.reading.scan import InputReport, ReaderPool, ReadResult, Scan, scan
from fabricscope.reading.vocabulary import SCHEMA_VERSION, counters, formats
from fabricscope.transport import Connection

__all__ = [
    "SCHEMA_VERSION",
    "Analysis",
    "Connection",
    "History",
    "Incident",
    "InputReport",
    "PcapResult",
    "ReadResult",
    "ReaderPool",
    "RemoteOptions",
    "Scan",
    "__version__",
    "advise",
    "analyze",
    "correlate",
    "counters",
    "exceptions",
    "format_topology",
    "formats",
    "get_profile",
    "load",
    "profiles",
    "read",
    "read_pcap",
    "run_analysis",
    "scan",
    "topology",
]


def _warn_debug_build() -> None:
    from fabricscope import _native

    if _native.DEBUG_BUILD:
        import warnings

        warnings.warn(
            "fabricscope._native is a debug build and parses far slower; build with --release",
            RuntimeWarning,
            stacklevel=2,
        )


_warn_debug_build()

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
from fabricscope.advise import advise
from fabricscope.history import History
from fabricscope.incidents import Incident, correlate
from fabricscope.io import InputReport, ReaderPool, ReadResult, Scan, scan
from fabricscope.loader import load, read
from fabricscope.packets import PcapResult, read_pcap
from fabricscope.pipeline import Analysis, analyze, run_analysis
from fabricscope.profiles import get_profile, profiles
from fabricscope.remote import Connection, RemoteOptions
from fabricscope.topology import format_topology, topology
from fabricscope.vocabulary import SCHEMA_VERSION, counters, formats

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

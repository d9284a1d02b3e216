"""Packet captures (pcap, pcapng) of RoCEv2 / lossless-Ethernet fabrics.

The Rust reader streams each capture in bounded memory and returns two tables:

* ``events``: one row per thing that matters (PFC XOFF/XON per priority, 802.3x PAUSE,
  CE-marked packets, CNPs, NAKs, PSN gaps, retransmitted packets); see ``docs/schema.md``.
* ``samples``: time-binned cumulative counters (``capture_*``, ``rx_pause_frames``) per capture
  interface and priority, in the canonical samples schema, so the RoCE detectors work on
  captures as on device counters.

Example:
    >>> import fabricscope
    >>> res = fabricscope.read_pcap("sample_traces/pcap/roce_pfc.pcap", host="gpu03")
    >>> res.events.filter(res.events["kind"] == "cnp").height
    14
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from fabricscope import _native
from fabricscope.reading.scan import InputReport, _paths, _reports

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fabricscope.reading.scan import PathLike

__all__ = ["EVENTS_SCHEMA", "PcapResult", "read_pcap"]

#: Columns of the ``packet_events`` table (``docs/schema.md``), for empty results: the core's schema.
EVENTS_SCHEMA = pl.Schema(_native.events_schema_arrow())  # type: ignore[arg-type]


@dataclass
class PcapResult:
    """What :func:`read_pcap` produced.

    Attributes:
        events: The ``packet_events`` table, in capture order per input.
        samples: Time-binned cumulative counters in the canonical samples schema.
        reports: One :class:`fabricscope.InputReport` per input.
        flows: The ``packet_flows`` table: per request flow (src IP, dst IP, dest QP) and time
            bin, packets, bytes, CE marks, PSN gaps and retransmitted packets.
    """

    events: pl.DataFrame
    samples: pl.DataFrame
    reports: list[InputReport] = field(default_factory=list)
    flows: pl.DataFrame = field(default_factory=pl.DataFrame)


def read_pcap(
    paths: PathLike | Sequence[PathLike],
    *,
    link_speed_gbps: float | None = 400,
    bin_seconds: float = 1.0,
    strict: bool = True,
    host: str | None = None,
) -> PcapResult:
    """Read pcap / pcapng captures into packet events and binned samples.

    Args:
        paths: Capture files or directories (gzip/zstd-compressed files are fine).
        link_speed_gbps: Link speed used to turn PFC/PAUSE quanta (512 bit times) into time;
            ``None`` takes the pcapng ``if_speed`` of each interface, else 400.
        bin_seconds: Width of the time bins aggregated into ``samples``.
        strict: Raise on the first malformed record (with file and byte offset), or skip and
            count malformed records where the reader can resynchronise.
        host: Host name for the rows (captures name none; default ``"unknown"``).

    Returns:
        A :class:`PcapResult`.

    Raises:
        fabricscope.exceptions.FormatError: a malformed capture (strict).
        ValueError: a non-positive ``link_speed_gbps`` or ``bin_seconds``.

    Example:
        >>> import fabricscope
        >>> res = fabricscope.read_pcap("sample_traces/pcap/roce_pfc.pcap", bin_seconds=0.001)
        >>> res.samples.filter(pl.col("counter") == "rx_pause_frames")["priority"].unique().to_list()
        [3]
    """
    samples, _attributes, tables, reports = _native.read(
        _paths(paths),
        host=host,
        strict=strict,
        link_speed_gbps=link_speed_gbps,
        bin_seconds=bin_seconds,
    )
    events_table = tables.get("packet_events")
    events = pl.DataFrame(events_table) if events_table is not None else pl.DataFrame(schema=EVENTS_SCHEMA)
    flows_table = tables.get("packet_flows")
    flows = pl.DataFrame(flows_table) if flows_table is not None else pl.DataFrame()
    return PcapResult(events=events, samples=pl.DataFrame(samples), reports=_reports(reports), flows=flows)

"""Capture-derived counters as the counters the RoCE detectors read.

The pcap/pcapng reader bins what a capture shows into ``capture_*`` counters per interface and
VLAN priority (``docs/counters.md``). Detectors are written against NIC counters, so that
captures are judged exactly like counters, this step adds, for every capture interface, rows of
the NIC counters each capture counter stands for (the core's ``stands_for``, listed below).
Frames count as received at the capture point.

| capture counter (summed over priorities) | stands for |
|---|---|
| ``capture_ce_marked_packets`` | ``np_ecn_marked_roce_packets`` |
| ``capture_cnp_packets`` | ``np_cnp_sent_packets`` |
| ``capture_roce_packets`` / ``capture_roce_bytes`` | ``vport_rdma_rx_unicast_packets`` / ``_bytes`` |
| ``capture_psn_gap_events`` | ``out_of_sequence_packets`` |
| ``capture_nak_seq_packets`` | ``packet_seq_errors`` |

``capture_paused_time_us`` keeps its priority and stands for ``rx_pause_duration_us``. The added
rows keep the capture's ``source`` (``pcap``/``pcapng``), so they never mix with a NIC's own series.
"""

from __future__ import annotations

import polars as pl

from fabricscope import _native
from fabricscope.reading.vocabulary import stand_ins

__all__ = ["CAPTURE_AS", "PER_PRIORITY_AS", "with_capture_counters"]

# What each capture counter stands for is the core's vocabulary (``stands_for``); a NIC counter
# kept per priority keeps the capture's priority, the others are summed over priorities.
_PER_PRIORITY = {c["name"] for c in _native.counters() if c["per_priority"]}
CAPTURE_AS = {c: nic for c, nic in stand_ins().items() if nic not in _PER_PRIORITY}
PER_PRIORITY_AS = {c: nic for c, nic in stand_ins().items() if nic in _PER_PRIORITY}

_NIC = ["host", "device", "port", "source"]


def with_capture_counters(samples: pl.DataFrame) -> pl.DataFrame:
    """Append NIC-counter rows derived from capture counters (unchanged when there are none).

    Example:
        >>> import fabricscope
        >>> from fabricscope.reading.captures import with_capture_counters
        >>> s = with_capture_counters(fabricscope.read("sample_traces/pcap", host="h"))
        >>> s.filter(s["counter"] == "np_ecn_marked_roce_packets")["value_u64"].max()
        14
    """
    names = samples["counter"].cast(pl.String)
    cap = samples.filter(names.is_in(list(CAPTURE_AS)) & pl.col("value_u64").is_not_null())
    per_prio = samples.filter(names.is_in(list(PER_PRIORITY_AS)))
    if cap.is_empty() and per_prio.is_empty():
        return samples
    parts = [samples]
    if not cap.is_empty():
        # Sum cumulative per-priority series into one NIC series: at every time any priority was
        # read, each priority contributes its latest value so far (0 before it first appeared).
        c = cap.with_columns(
            pl.col("counter").cast(pl.String),
            pl.col("priority").cast(pl.String).fill_null("untagged").alias("_prio"),
        )
        wide = c.pivot(on="_prio", index=[*_NIC, "counter", "time"], values="value_u64", aggregate_function="last")
        prios = [x for x in wide.columns if x not in {*_NIC, "counter", "time"}]
        summed = (
            wide.sort("time")
            .with_columns(
                [pl.col(p).fill_null(strategy="forward").over([*_NIC, "counter"]).fill_null(0) for p in prios]
            )
            .with_columns(pl.sum_horizontal(prios).cast(pl.UInt64).alias("value_u64"))
            .select(
                "time",
                "host",
                "device",
                "port",
                pl.lit(None, pl.UInt8).alias("priority"),
                pl.col("counter").replace_strict(CAPTURE_AS, return_dtype=pl.String),
                "value_u64",
                pl.lit(None, pl.Float64).alias("value_f64"),
                pl.lit(1, pl.UInt32).alias("scale"),
                pl.lit(True).alias("is_counter"),
                "source",
            )
        )
        parts.append(summed.with_columns(pl.col("counter").cast(pl.Categorical)).select(samples.columns))
    if not per_prio.is_empty():
        parts.append(
            per_prio.with_columns(
                pl.col("counter")
                .cast(pl.String)
                .replace_strict(PER_PRIORITY_AS, return_dtype=pl.String)
                .cast(pl.Categorical)
            )
        )
    return pl.concat(parts, how="vertical")

"""``pfc_storm`` (critical): a priority paused (nearly) all the time, or the NIC's storm watchdog firing.

Three rules, all critical:

* ``pfc_storm.pause_ratio``: pause covering at least ``storm_ratio`` (99%) of a window of at
  least ``window_s`` (200 ms, the SONiC/Juniper watchdog). With counters the window is the
  sampling interval when that is longer (a 10 s interval at 99.5% contains 200 ms windows above
  99%); consecutive shorter intervals are joined until they span ``window_s``. The evidence states
  the window used.
* ``pfc_storm.nic_watchdog``: ``tx_pause_storm_warning_events`` or ``tx_pause_storm_error_events``
  increased (mlx5 stall prevention: the NIC's receive pipeline stalled and it stopped sending pause;
  error events mean pause TX is disabled and drops are possible).
* ``pfc_storm.unbroken_pause``: pause of at least ``unbroken_ratio`` with no Xoff→Xon transition
  in the interval (when the transition counter exists) while the bytes on that priority in the
  paused direction (our transmit for received pause, our receive for sent pause) fall to
  ``collapse_ratio`` of their 90th percentile over the observation.

Captured PFC frames from packet traces will feed the first rule once that reader exists.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import attach_rate, keyed
from fabricscope.detect.pfc_congestion import MEANING, SERIES, pause_intervals, prio_name
from fabricscope.findings import make_findings, merge_same_fault, merge_windows
from fabricscope.sources import MLX5_STORM, PFCWD

KIND = "pfc_storm"

WATCHDOG = ["tx_pause_storm_warning_events", "tx_pause_storm_error_events"]
# The traffic a pause stops: received pause stops our transmit, sent pause stops our receive.
STOPPED = {"rx": ("prio_tx_bytes", "phy_tx_bytes"), "tx": ("prio_rx_bytes", "phy_rx_bytes")}
PRIO_KEYS = ["host", "device", "_port", "_prio"]


def _ratio_rule(p: pl.DataFrame, cfg: dict) -> list[dict]:
    flagged = p.filter(pl.col("ratio") >= cfg["storm_ratio"])
    if flagged.is_empty():
        return []
    windows = merge_windows(
        flagged,
        keys=SERIES,
        max_gap_s=0.0,
        aggs=[
            pl.col("port", "priority").first(),
            ((pl.col("ratio") * pl.col("interval_s")).sum() / pl.col("interval_s").sum()).alias("mean_ratio"),
            pl.col("interval_s").sum().alias("covered_s"),
            pl.col("interval_s").max().alias("max_interval_s"),
        ],
    ).filter(pl.col("covered_s") >= cfg["window_s"] * 0.999)
    rows = []
    for w in windows.iter_rows(named=True):
        used = max(cfg["window_s"], w["max_interval_s"])
        rows.append(
            {
                "kind": KIND,
                "severity": "critical",
                "host": w["host"],
                "device": w["device"],
                "port": w["port"],
                "priority": w["priority"],
                "layer": "network",
                "start": w["start"],
                "end": w["end"],
                "metric": f"{w['direction']}_pause_ratio",
                "observed": w["mean_ratio"],
                "expected": cfg["storm_ratio"],
                "message": (
                    f"PFC storm: {w['direction']} pause on {prio_name(w['priority'])} covered "
                    f"{min(w['mean_ratio'], 1.0):.1%} of {w['covered_s']:,.3g} s (detection window {used:g} s, "
                    f"storm above {cfg['storm_ratio']:.0%}): {MEANING[w['direction']]}"
                ),
                "evidence": {
                    "rule": "pfc_storm.pause_ratio",
                    "threshold_source": cfg["source"],
                    "direction": w["direction"],
                    "detection_window_s": used,
                    "watchdog_window_s": cfg["window_s"],
                    "intervals": w["intervals"],
                },
            }
        )
    return rows


def _watchdog_rule(inp: AnalysisInput, p: pl.DataFrame, cfg: dict) -> list[dict]:
    r = keyed(inp.rates.filter(pl.col("counter").cast(pl.String).is_in(WATCHDOG))).filter(pl.col("delta") > 0)
    if r.is_empty():
        return []
    r = r.with_columns(pl.col("counter").cast(pl.String))
    windows = merge_windows(
        r,
        keys=["host", "device", "_port", "counter"],
        max_gap_s=0.0,
        aggs=[pl.col("port").first(), pl.col("delta").sum().alias("events")],
    )
    rows = []
    for w in windows.iter_rows(named=True):
        # The pause picture of the device while the watchdog fired (few rows: one device, one window).
        during = p.filter(
            (pl.col("host") == w["host"])
            & (pl.col("device") == w["device"])
            & (pl.col("_port") == w["_port"])
            & (pl.col("end") > w["start"])
            & (pl.col("start") < w["end"])
        )
        ratios = {
            f"{d} {prio_name(pr)}": v
            for d, pr, v in during.group_by("direction", "priority")
            .agg(pl.col("ratio").max())
            .sort("ratio", descending=True)
            .iter_rows()
            if v is not None
        }
        error = w["counter"] == "tx_pause_storm_error_events"
        worst = next(iter(ratios.items()), None)
        # The watchdog counter is per port, but the storm is on a priority: the one whose pause this
        # NIC *sent* (tx) covered most of the window is the stalled one.
        tx = (
            during.filter((pl.col("direction") == "tx") & pl.col("priority").is_not_null())
            .group_by("priority")
            .agg(pl.col("ratio").max())
            .sort("ratio", descending=True)
        )
        storm_priority = tx["priority"][0] if tx.height and (tx["ratio"][0] or 0) > 0 else None
        msg = f"NIC pause-storm watchdog: {w['counter']} +{w['events']:,.0f} " + (
            "(critical watermark: pause TX disabled, drops possible)"
            if error
            else "(receive pipeline stalled past the minor watermark)"
        )
        if worst:
            msg += f"; highest pause meanwhile: {worst[0]} {min(worst[1], 1.0):.0%}"
        rows.append(
            {
                "kind": KIND,
                "severity": "critical",
                "host": w["host"],
                "device": w["device"],
                "port": w["port"],
                "priority": storm_priority,
                "layer": "network",
                "start": w["start"],
                "end": w["end"],
                "metric": w["counter"],
                "observed": float(w["events"]),
                "expected": 0.0,
                "message": msg,
                "evidence": {
                    "rule": "pfc_storm.nic_watchdog",
                    "threshold_source": cfg["source"],
                    "events": w["events"],
                    "pause_ratio_peaks": ratios,
                    "intervals": w["intervals"],
                },
            }
        )
    return rows


def _unbroken_rule(inp: AnalysisInput, p: pl.DataFrame, cfg: dict) -> list[dict]:
    cand = p.filter(pl.col("ratio") >= cfg["unbroken_ratio"])
    if cand.is_empty():
        return []
    trans = keyed(inp.rates.filter(pl.col("counter").cast(pl.String) == "rx_pause_transitions"))
    cand = attach_rate(cand, trans, "_trans_rate", by=PRIO_KEYS)
    # Received pause has a transition counter; without one (sent pause, older drivers) the ratio decides.
    cand = cand.filter(
        pl.when(pl.col("direction") == "rx")
        .then(pl.col("_trans_rate").fill_null(0.0) == 0.0)
        .otherwise(pl.lit(value=True))
    )
    frames = []
    for direction, (prio_bytes, phy_bytes) in STOPPED.items():
        c = cand.filter(pl.col("direction") == direction)
        if c.is_empty():
            continue
        per_prio = keyed(inp.rates.filter(pl.col("counter").cast(pl.String) == prio_bytes))
        glob = keyed(inp.rates.filter(pl.col("counter").cast(pl.String) == phy_bytes)).with_columns(
            pl.lit(-1, pl.Int64).alias("_prio")
        )
        traffic = pl.concat([per_prio, glob], how="diagonal_relaxed")
        if traffic.is_empty():
            continue
        base = traffic.group_by(PRIO_KEYS).agg(pl.col("rate_per_s").quantile(0.9).alias("_baseline"))
        c = attach_rate(c, traffic, "_bytes_rate", by=PRIO_KEYS).join(base, on=PRIO_KEYS, how="left")
        frames.append(
            c.filter((pl.col("_baseline") > 0) & (pl.col("_bytes_rate") <= cfg["collapse_ratio"] * pl.col("_baseline")))
        )
    flagged = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    if flagged.is_empty():
        return []
    windows = merge_windows(
        flagged,
        keys=SERIES,
        max_gap_s=0.0,
        aggs=[
            pl.col("port", "priority").first(),
            ((pl.col("ratio") * pl.col("interval_s")).sum() / pl.col("interval_s").sum()).alias("mean_ratio"),
            pl.col("_bytes_rate").mean().alias("bytes_per_s"),
            pl.col("_baseline").first().alias("baseline"),
            pl.col("interval_s").sum().alias("covered_s"),
        ],
    )
    rows = []
    for w in windows.iter_rows(named=True):
        stopped = "transmit" if w["direction"] == "rx" else "receive"
        rows.append(
            {
                "kind": KIND,
                "severity": "critical",
                "host": w["host"],
                "device": w["device"],
                "port": w["port"],
                "priority": w["priority"],
                "layer": "network",
                "start": w["start"],
                "end": w["end"],
                "metric": f"{w['direction']}_pause_ratio",
                "observed": w["mean_ratio"],
                "expected": cfg["unbroken_ratio"],
                "message": (
                    f"PFC storm: {w['direction']} pause on {prio_name(w['priority'])} held without a break "
                    f"({min(w['mean_ratio'], 1.0):.0%} of {w['covered_s']:,.3g} s) while {stopped} on it fell to "
                    f"{w['bytes_per_s'] / 1e9:.3g} GB/s from {w['baseline'] / 1e9:.3g} GB/s"
                ),
                "evidence": {
                    "rule": "pfc_storm.unbroken_pause",
                    "threshold_source": cfg["source"],
                    "direction": w["direction"],
                    "bytes_per_s": w["bytes_per_s"],
                    "baseline_bytes_per_s": w["baseline"],
                    "collapse_ratio": cfg["collapse_ratio"],
                    "detection_window_s": w["covered_s"],
                    "intervals": w["intervals"],
                },
            }
        )
    return rows


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find PFC storms per priority and NIC pause-storm watchdog events."""
    cfg = inp.config[KIND]
    p = pause_intervals(inp).filter(pl.col("ratio").is_not_null() & (pl.col("interval_s") > 0))
    rows = _ratio_rule(p, cfg) if not p.is_empty() else []
    rows += _watchdog_rule(inp, p, cfg)
    if not p.is_empty():
        rows += _unbroken_rule(inp, p, cfg)
    return make_findings(merge_same_fault(rows))


SPEC = DetectorSpec(
    name=KIND,
    summary="per-priority pause ≥ 99% of a window, NIC storm watchdogs, unbroken pause with collapsed traffic",
    detect=detect,
    scope="partition",
    defaults={
        # storm_ratio of at least window_s (or one sampling interval when longer); NIC watchdog
        # events; or pause of at least unbroken_ratio with no Xoff->Xon transition while the
        # paused direction's bytes on that priority fall to collapse_ratio of their p90.
        "storm_ratio": 0.99,
        "window_s": 0.2,
        "unbroken_ratio": 0.95,
        "collapse_ratio": 0.10,
        "source": f"{PFCWD}; {MLX5_STORM}; unbroken pause with collapse: the NIC pause watchdog of Guo et al., "
        "'RDMA over Commodity Ethernet at Scale', SIGCOMM 2016, section 4.3",
    },
)

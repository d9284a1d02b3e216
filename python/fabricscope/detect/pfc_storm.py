"""``pfc_storm``: a priority paused (nearly) all the time, or a storm watchdog (the NIC's, the switch's) firing.

The rules are critical, except the switch watchdog's (a warning: the switch already contained the storm):

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

* ``pfc_storm.no_transition``: pause of at least ``unbroken_ratio`` of an interval while the
  same direction's Xoff→Xon transition counter (mlx5 ``rx_prio<p>_pause_transition``, bnxt_en
  ``pfc_pri<p>_{rx,tx}_transitions``) did not move. Without a transition the priority cannot have
  resumed inside the interval, so its pause is one unbroken stretch of ``ratio x interval``; when
  that stretch is at least ``window_s`` the watchdog's window was paused throughout. This judges
  NICs without a storm watchdog counter (bnxt_en) as the watchdog judges mlx5.

* ``pfc_storm.xoff_refresh``: for NICs that count XOFF and XON frames but not pause time (Intel
  E810 ``ice``: ``tx_priority_3_xoff.nic``): the pause a priority's XOFF frames can hold is
  ``xoff_rate x max quanta time`` (65535 x 512 bit times at ``xoff_link_bps``, the NIC's fastest
  link, so the estimate never exceeds the truth for refresh-spaced XOFFs). An interval with that
  estimate at or above ``storm_ratio`` and no XON on the priority in the same direction (the pause
  never ended) is paused throughout; such intervals spanning ``window_s`` are a storm.

* ``pfc_storm.capture``: from a packet capture's PFC/PAUSE frames (the ``packet_events``
  table), judged on packet timing, not on time bins: each XOFF pauses its priority for its
  quanta (``pause_ns``) from its timestamp, a refresh replaces the deadline and an XON ends the
  pause. A storm is pause covering at least ``storm_ratio`` of any sliding ``window_s`` window
  (the watchdog's detection window); the finding names the storm's millisecond window, its XOFF
  refresh interval and quanta, the longest stretch without an XON and the paused time per
  priority on that capture interface. A capture shows every frame as received at the capture
  point, so "direction" is the capture interface (a mirror port of one link direction).

* ``pfc_storm.switch_watchdog`` (warning): a switch's own PFC watchdog (SONiC ``show pfcwd
  stats``) declared a storm on a port's priority (the storm count rose, or is above zero in a lone
  snapshot, or the queue is ``stormed`` now) and dropped at least ``switch_min_drops`` packets. The
  finding is on the switch port (host = the switch, device = the port); the port's peer, when an
  LLDP table or lldpctl was read, is named from the fabric model's cable (``evidence.peer``).
"""

from __future__ import annotations

import bisect
import datetime as dt
from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import attach_rate, keyed
from fabricscope.detect._shared import MAX_QUANTA_BITS, MEANING, SERIES, over_shortest_span, pause_intervals
from fabricscope.fabric.relations import CABLE, JOB, PAUSE_ACROSS_LEAVES, SAME_LEAF, Chain, Relation, prio_name
from fabricscope.incidents.findings import make_findings, merge_same_fault, merge_windows
from fabricscope.reading.vocabulary import counters_by_direction, counters_with_role
from fabricscope.sources import MLX5_STORM, PFCWD, XOFF_QUANTA

KIND = "pfc_storm"

WATCHDOG = counters_with_role("tx_pause_storm")
TRANSITIONS = {d: c for c, d in counters_by_direction("pause_transitions").items()}
# The traffic a pause stops: received pause stops our transmit, sent pause stops our receive.
STOPPED = {
    "rx": (counters_with_role("tx_priority_bytes"), counters_with_role("tx_wire_bytes")),
    "tx": (counters_with_role("rx_priority_bytes"), counters_with_role("rx_wire_bytes")),
}
PRIO_KEYS = ["host", "device", "_port", "_prio"]


def _ratio_rule(p: pl.DataFrame, cfg: dict) -> list[dict]:
    # An interval whose length is known only to its timestamps' resolution (1 s for `date +%s`) joins
    # a storm when the ratio over the shortest length it may have had reaches the threshold; a storm
    # still needs one interval measured at the threshold, and its window is judged as a whole, whose
    # span is known to the same resolution once (the inner timestamps cancel): a 99.7% storm read as
    # 15 s and 16 s intervals stays one storm, a steady 93% or 97% pause does not become one.
    flagged = p.filter(pl.col("ratio_upper") >= cfg["storm_ratio"])
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
            pl.col("resolution_s").max().alias("resolution_s"),
            pl.col("ratio").max().alias("peak_ratio"),
        ],
    ).filter((pl.col("covered_s") >= cfg["window_s"] * 0.999) & (pl.col("peak_ratio") >= cfg["storm_ratio"]))
    windows = windows.with_columns(over_shortest_span("mean_ratio", "covered_s").alias("mean_upper")).filter(
        pl.col("mean_upper") >= cfg["storm_ratio"]
    )
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
                    "timestamp_resolution_s": w["resolution_s"],
                    "ratio_upper_bound": w["mean_upper"],
                },
            }
        )
    return rows


def _watchdog_rule(inp: AnalysisInput, p: pl.DataFrame, cfg: dict) -> list[dict]:
    r = keyed(inp.rates.filter(pl.col("counter").is_in(WATCHDOG))).filter(pl.col("delta") > 0)
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
    trans = keyed(inp.rates.filter(pl.col("counter") == TRANSITIONS["rx"]))
    cand = attach_rate(cand, trans, "_trans_rate", by=PRIO_KEYS)
    # Received pause has a transition counter; without one (sent pause, older drivers) the ratio decides.
    cand = cand.filter(
        pl.when(pl.col("direction") == "rx")
        .then(pl.col("_trans_rate").fill_null(0.0) == 0.0)
        .otherwise(pl.lit(value=True))
    )
    frames = []
    for direction, (prio_bytes, wire_bytes) in STOPPED.items():
        c = cand.filter(pl.col("direction") == direction)
        if c.is_empty():
            continue
        per_prio = keyed(inp.rates.filter(pl.col("counter").is_in(prio_bytes)))
        glob = keyed(inp.rates.filter(pl.col("counter").is_in(wire_bytes))).with_columns(
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


def paused_spans(times_ns: list[int], pause_ns: list[int]) -> list[tuple[int, int]]:
    """Paused time of one priority from its PFC frames, as disjoint ``(start_ns, end_ns)`` spans.

    An XOFF (``pause_ns > 0``) at ``t`` pauses until ``t + pause_ns``; a refresh before that
    deadline replaces it (IEEE 802.1Qbb: the new timer value wins); an XON (0) ends the pause.

    Example:
        >>> from fabricscope.detect.pfc_storm import paused_spans
        >>> paused_spans([0, 40, 80, 500], [84, 84, 84, 0])
        [(0, 164)]
        >>> paused_spans([0, 10], [84, 0])
        [(0, 10)]
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    until = 0
    for t, ns in zip(times_ns, pause_ns, strict=True):
        if ns > 0:
            if start is not None and t <= until:
                until = t + ns
                continue
            if start is not None:
                spans.append((start, until))
            start, until = t, t + ns
        elif start is not None:
            spans.append((start, min(until, t)))
            start = None
    if start is not None:
        spans.append((start, until))
    return spans


def storm_windows(spans: list[tuple[int, int]], window_ns: int, ratio: float) -> list[tuple[int, int]]:
    """Stretches where pause covers at least ``ratio`` of some sliding ``window_ns`` window.

    The coverage of the window starting at ``s`` is piecewise linear in ``s`` with breakpoints
    where a window edge meets a span edge, so it is evaluated exactly at those breakpoints and
    interpolated between them. Returns the paused extent of each union of qualifying windows.

    Example:
        >>> from fabricscope.detect.pfc_storm import storm_windows
        >>> storm_windows([(100, 350)], 200, 0.99)
        [(100, 350)]
        >>> storm_windows([(100, 250)], 200, 0.99)
        []
    """
    if not spans:
        return []
    starts = [a for a, _ in spans]
    ends = [b for _, b in spans]
    cum = [0]
    for a, b in spans:
        cum.append(cum[-1] + (b - a))

    def paused_until(x: float) -> float:
        # paused time in (-inf, x]
        k = bisect.bisect_right(starts, x)
        if k == 0:
            return 0
        return cum[k - 1] + min(x, ends[k - 1]) - starts[k - 1]

    def coverage(x: float) -> float:
        return paused_until(x + window_ns) - paused_until(x)

    need = ratio * window_ns
    points = sorted({*starts, *ends, *(a - window_ns for a in starts), *(b - window_ns for b in ends)})
    cov = [coverage(x) for x in points]
    # qualifying window starts as closed intervals [lo, hi], exact where coverage crosses `need`
    runs: list[list[float]] = []
    for i, (x, c) in enumerate(zip(points, cov, strict=True)):
        if c < need:
            continue
        lo = x
        if i and cov[i - 1] < need:  # entered between the previous breakpoint and this one
            x0, c0 = points[i - 1], cov[i - 1]
            lo = x0 + (need - c0) / (c - c0) * (x - x0)
        hi = x
        if i + 1 < len(points) and cov[i + 1] < need:
            x1, c1 = points[i + 1], cov[i + 1]
            hi = x + (c - need) / (c - c1) * (x1 - x)
        elif i + 1 < len(points):
            hi = points[i + 1]
        if runs and lo <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], hi)
        else:
            runs.append([lo, hi])
    out = []
    for lo, hi in runs:
        lo_w, hi_w = lo, hi + window_ns
        inside = [(max(a, lo_w), min(b, hi_w)) for a, b in spans if b > lo_w and a < hi_w]
        out.append((round(inside[0][0]), round(inside[-1][1])))
    return out


def _clock_ms(t: dt.datetime) -> str:
    """``12:00:00.512``: a time of day to the millisecond."""
    return f"{t:%H:%M:%S}.{t.microsecond // 1000:03d}"


def _capture_rule(inp: AnalysisInput, cfg: dict) -> list[dict[str, Any]]:
    ev = inp.tables.get("packet_events")
    if ev is None or ev.is_empty() or "kind" not in ev.columns:
        return []
    frames = (
        ev.filter(pl.col("kind").cast(pl.String).is_in(["pfc_xoff", "pfc_xon", "pause"]))
        .with_columns(
            pl.col("host").cast(pl.String),
            pl.col("interface").cast(pl.String),
            pl.col("kind").cast(pl.String),
            pl.col("time").dt.epoch("ns").alias("_t"),
            pl.col("pause_ns").fill_null(0).cast(pl.Int64),
            pl.col("priority").cast(pl.Int64),
        )
        .sort("_t", maintain_order=True)
    )
    # The table is whole in every partition: judge only the hosts this partition holds.
    hosts = inp.samples["host"].cast(pl.String).unique().to_list() if inp.samples.height else None
    if hosts is not None:
        frames = frames.filter(pl.col("host").is_in(hosts))
    if frames.is_empty():
        return []
    window_ns = round(cfg["window_s"] * 1e9)
    rows = []
    for (host, iface, prio), g in frames.group_by(["host", "interface", "priority"], maintain_order=True):
        times, pauses = g["_t"].to_list(), g["pause_ns"].to_list()
        spans = paused_spans(times, pauses)
        paused_total_ns = sum(b - a for a, b in spans)
        for lo, hi in storm_windows(spans, window_ns, cfg["storm_ratio"]):
            inside = g.filter((pl.col("_t") >= lo) & (pl.col("_t") <= hi))
            xoff = inside.filter(pl.col("pause_ns") > 0)
            xon_times = inside.filter(pl.col("pause_ns") == 0)["_t"].to_list()
            refresh = xoff["_t"].diff().drop_nulls()
            paused = sum(min(b, hi) - max(a, lo) for a, b in spans if b > lo and a < hi)
            duration_ns = max(hi - lo, 1)
            gaps = [b - a for a, b in zip([lo, *xon_times], [*xon_times, hi], strict=True)]
            refresh_us = float(refresh.median()) / 1e3 if refresh.len() else None
            quanta = int(xoff["quanta"].max()) if xoff.height and xoff["quanta"].max() is not None else None
            start = dt.datetime.fromtimestamp(lo / 1e9, tz=dt.timezone.utc)
            end = dt.datetime.fromtimestamp(hi / 1e9, tz=dt.timezone.utc)
            what = prio_name(prio)
            msg = (
                f"PFC storm in capture on {iface}: {what} paused {paused / duration_ns:.1%} of "
                f"{duration_ns / 1e6:,.1f} ms ({_clock_ms(start)}-{_clock_ms(end)} UTC), {xoff.height:,} XOFF frame(s)"
                + (f" at quanta {quanta:#06x}" if quanta is not None else "")
                + (f" refreshed every {refresh_us:,.0f} us" if refresh_us is not None else "")
                + (
                    ", no XON"
                    if not xon_times
                    else f", {len(xon_times)} XON, longest stretch without one {max(gaps) / 1e6:,.1f} ms"
                )
                + f" (storm: pause >= {cfg['storm_ratio']:.0%} of a {cfg['window_s'] * 1e3:g} ms detection window): "
                f"the peer sending these pauses cannot drain {what}"
            )
            rows.append(
                {
                    "kind": KIND,
                    "severity": "critical",
                    "host": host,
                    "device": iface,
                    "port": None,
                    "priority": prio,
                    "layer": "network",
                    "start": start,
                    "end": end,
                    "metric": "capture_pause_ratio",
                    "observed": paused / duration_ns,
                    "expected": cfg["storm_ratio"],
                    "message": msg,
                    "evidence": {
                        "rule": "pfc_storm.capture",
                        "threshold_source": cfg["source"],
                        "detection_window_ms": cfg["window_s"] * 1e3,
                        "storm_ms": duration_ns / 1e6,
                        "paused_ms": paused / 1e6,
                        "xoff_frames": xoff.height,
                        "xon_frames": len(xon_times),
                        "median_refresh_us": refresh_us,
                        "max_quanta": quanta,
                        "longest_without_xon_ms": max(gaps) / 1e6,
                        "paused_ms_in_capture": paused_total_ns / 1e6,
                        "source": "packet_events",
                    },
                }
            )
    return rows


def _no_transition_rule(inp: AnalysisInput, p: pl.DataFrame, cfg: dict) -> list[dict]:
    cand = p.filter(pl.col("ratio") >= cfg["unbroken_ratio"])
    frames = []
    for direction, counter in TRANSITIONS.items():
        c = cand.filter(pl.col("direction") == direction)
        trans = keyed(inp.rates.filter(pl.col("counter") == counter))
        if c.is_empty() or trans.is_empty():
            continue
        c = attach_rate(c, trans, "_trans_rate", by=PRIO_KEYS)
        # A missing transition reading proves nothing: only a counter that was read and stood still.
        frames.append(
            c.filter(
                (pl.col("_trans_rate") == 0.0)
                & (pl.col("ratio").clip(upper_bound=1.0) * pl.col("interval_s") >= cfg["window_s"])
            )
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
            (pl.col("ratio").clip(upper_bound=1.0) * pl.col("interval_s")).max().alias("longest_stretch_s"),
            pl.col("interval_s").sum().alias("covered_s"),
        ],
    )
    rows = []
    for w in windows.iter_rows(named=True):
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
                    f"PFC storm: {w['direction']} pause on {prio_name(w['priority'])} held "
                    f"{min(w['mean_ratio'], 1.0):.0%} of {w['covered_s']:,.3g} s with no Xoff->Xon transition: one "
                    f"unbroken pause of at least {w['longest_stretch_s']:,.3g} s (watchdog window "
                    f"{cfg['window_s']:g} s): {MEANING[w['direction']]}"
                ),
                "evidence": {
                    "rule": "pfc_storm.no_transition",
                    "threshold_source": cfg["source"],
                    "direction": w["direction"],
                    "transition_counter": TRANSITIONS[w["direction"]],
                    "longest_unbroken_pause_s": w["longest_stretch_s"],
                    "watchdog_window_s": cfg["window_s"],
                    "intervals": w["intervals"],
                },
            }
        )
    return rows


XOFF = counters_by_direction("xoff_frames")
XON = counters_by_direction("xon_frames")


def _xoff_rule(inp: AnalysisInput, cfg: dict) -> list[dict]:
    r = keyed(inp.rates.filter(pl.col("counter").is_in([*XOFF, *XON])))
    r = r.filter(pl.col("interval_s") > 0).with_columns(pl.col("counter").cast(pl.String))
    xoff = r.filter(pl.col("counter").is_in(list(XOFF)) & pl.col("rate_per_s").is_not_null())
    if xoff.is_empty():
        return []
    quanta_s = MAX_QUANTA_BITS / cfg["xoff_link_bps"]
    xoff = xoff.with_columns(
        pl.col("counter").replace_strict(XOFF, return_dtype=pl.String).alias("direction"),
        (pl.col("rate_per_s") * quanta_s).alias("ratio"),
    )
    xon = r.filter(pl.col("counter").is_in(list(XON))).select(
        "host",
        "device",
        "_port",
        "_prio",
        "start",
        "end",
        pl.col("counter").replace_strict(XON, return_dtype=pl.String).alias("direction"),
        pl.col("delta").alias("xon_delta"),
    )
    j = xoff.join(xon, on=["host", "device", "_port", "_prio", "direction", "start", "end"], how="left")
    # A missing XON reading (no counter, a reset) cannot show the pause ended: it does not block.
    flagged = j.filter((pl.col("ratio") >= cfg["storm_ratio"]) & (pl.col("xon_delta").fill_null(0) == 0))
    if flagged.is_empty():
        return []
    windows = merge_windows(
        flagged,
        keys=SERIES,
        max_gap_s=0.0,
        aggs=[
            pl.col("port", "priority").first(),
            pl.col("delta").sum().alias("xoff_frames"),
            pl.col("interval_s").sum().alias("covered_s"),
            pl.col("interval_s").max().alias("max_interval_s"),
            pl.col("xon_delta").is_null().any().alias("xon_unknown"),
        ],
    ).filter(pl.col("covered_s") >= cfg["window_s"] * 0.999)
    rows = []
    for w in windows.iter_rows(named=True):
        rate = w["xoff_frames"] / w["covered_s"]
        est = rate * quanta_s
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
                "metric": f"{w['direction']}_xoff_frames_per_s",
                "observed": rate,
                "expected": cfg["storm_ratio"] / quanta_s,
                "message": (
                    f"PFC storm: {w['direction']} XOFF on {prio_name(w['priority'])} refreshed {rate:,.0f}/s "
                    f"for {w['covered_s']:,.3g} s with no XON: one XOFF holds at most {quanta_s * 1e6:,.0f} us at "
                    f"{cfg['xoff_link_bps'] / 1e9:g} Gb/s, so the priority was paused "
                    f"{'all' if est >= 1 else f'{est:.0%}'} of the time: {MEANING[w['direction']]}"
                ),
                "evidence": {
                    "rule": "pfc_storm.xoff_refresh",
                    "threshold_source": f"{PFCWD}; {XOFF_QUANTA}",
                    "direction": w["direction"],
                    "xoff_frames": w["xoff_frames"],
                    "max_quanta_time_us": quanta_s * 1e6,
                    "estimated_pause_ratio": min(est, 1.0),
                    "xon_counter_missing": w["xon_unknown"],
                    "detection_window_s": max(cfg["window_s"], w["max_interval_s"]),
                    "intervals": w["intervals"],
                },
            }
        )
    return rows


# The switch's PFC watchdog (SONiC pfcwd) per port and priority: storms it declared, packets it dropped.
SWITCH_STORMS = "pfcwd_storms_detected_events"
SWITCH_DROPS = tuple(counters_with_role("switch_watchdog_drops"))
SWITCH_STATE = "pfcwd_stormed_state"


def _switch_watchdog_rule(inp: AnalysisInput, cfg: dict) -> list[dict]:
    """A switch port whose PFC watchdog declared a storm and dropped packets (warning).

    Read from the readings themselves, not from rates: a ``show pfcwd stats`` is usually one
    snapshot, whose counts run since the counters were last cleared. A storm is declared when
    the storm count rose between readings, or (one reading) is above zero, or the queue's status
    is ``stormed`` now; packets were dropped when the drop counts rose (one reading: are above
    zero). The port's peer is the LLDP neighbour the fabric model knows (the switch's ``show lldp
    table``, the host's lldpctl), when one was read.
    """
    names = [SWITCH_STORMS, *SWITCH_DROPS, SWITCH_STATE]
    s = inp.samples
    if s.is_empty() or "counter" not in s.columns:
        return []
    s = s.filter(pl.col("counter").cast(pl.String).is_in(names))
    if s.is_empty():
        return []
    s = keyed(s).with_columns(
        pl.col("counter").cast(pl.String),
        pl.coalesce(pl.col("value_u64").cast(pl.Float64), pl.col("value_f64")).alias("_v"),
    )
    per = (
        s.filter(pl.col("_v").is_not_null())
        .sort("time")
        .group_by("host", "device", "_port", "_prio", "counter")
        .agg(
            pl.col("port").first(),
            pl.col("priority").first(),
            pl.col("_v").first().alias("first"),
            pl.col("_v").last().alias("last"),
            pl.col("time").min().alias("start"),
            pl.col("time").max().alias("end"),
            pl.len().alias("readings"),
        )
        # one reading counts since the last clear; several count what happened between them
        .with_columns(
            pl.when(pl.col("readings") > 1).then(pl.col("last") - pl.col("first")).otherwise(pl.col("last")).alias("n")
        )
    )
    rows = []
    for (host, device, _port, _prio), g in per.group_by("host", "device", "_port", "_prio", maintain_order=True):
        by = {r["counter"]: r for r in g.iter_rows(named=True)}
        storms = by.get(SWITCH_STORMS, {}).get("n") or 0.0
        stormed_now = (by.get(SWITCH_STATE, {}).get("last") or 0.0) >= 1.0
        drops = {c.split("_")[1]: by[c]["n"] for c in SWITCH_DROPS if c in by and by[c]["n"] is not None}
        dropped = sum(v for v in drops.values() if v > 0)
        if not (storms > 0 or stormed_now) or dropped < cfg["switch_min_drops"]:
            continue
        first = next(iter(by.values()))
        prio = first["priority"]
        peer = inp.fabric.peer(str(host), str(device)) if host is not None and device is not None else None
        behind = f"{peer[2]}" if peer else None
        readings = max(r["readings"] for r in by.values())
        msg = (
            f"switch PFC watchdog on {device} {prio_name(prio)}: "
            + (f"{storms:,.0f} storm(s) declared" if storms > 0 else "")
            + (" and " if storms > 0 and stormed_now else "")
            + ("stormed now" if stormed_now else "")
            + f", {dropped:,.0f} packets dropped ("
            + ", ".join(f"{d} {v:,.0f}" for d, v in drops.items())
            + ")"
            + ("" if readings > 1 else " since the counters were cleared")
            + ": the port's peer "
            + (f"{behind} (LLDP) " if behind else "")
            + f"kept {prio_name(prio)} paused past the watchdog's detection time"
        )
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": host,
                "device": device,
                "port": first["port"],
                "priority": prio,
                "layer": "network",
                "start": min(r["start"] for r in by.values()),
                "end": max(r["end"] for r in by.values()),
                "metric": "pfcwd_dropped_packets",
                "observed": float(dropped),
                "expected": 0.0,
                "message": msg,
                "evidence": {
                    "rule": "pfc_storm.switch_watchdog",
                    "threshold_source": PFCWD,
                    # the switch port received the pause: the storm comes from its peer
                    "direction": "rx",
                    "storms_detected": storms,
                    "stormed_now": stormed_now,
                    "dropped": drops,
                    "readings": readings,
                    "peer": {"node": peer[0], "port": peer[1], "name": peer[2]} if peer else None,
                },
            }
        )
    return rows


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find PFC storms per priority and NIC pause-storm watchdog events."""
    cfg = inp.config[KIND]
    p = pause_intervals(inp).filter(pl.col("ratio").is_not_null() & (pl.col("interval_s") > 0))
    # capture rows first: on an overlap with the binned counters they are the one kept
    rows = _capture_rule(inp, cfg)
    rows += _ratio_rule(p, cfg) if not p.is_empty() else []
    rows += _watchdog_rule(inp, p, cfg)
    rows += _xoff_rule(inp, cfg)
    rows += _switch_watchdog_rule(inp, cfg)
    if not p.is_empty():
        rows += _unbroken_rule(inp, p, cfg)
        rows += _no_transition_rule(inp, p, cfg)
    return make_findings(merge_same_fault(rows))


# a NIC pausing without end roots the head-of-line chain; its leaf-mates receive its pause, and
# through a spine the hosts of other leaves
RELATIONS = (
    Relation("pause_storm_head_of_line", "root", "pfc_storm:tx"),
    Relation("pause_storm_head_of_line", "consequence", "pfc_storm:rx", (CABLE, SAME_LEAF, PAUSE_ACROSS_LEAVES, JOB)),
    # a storm received: the port is the victim; its pause ratio is the same storm measured in time
    Relation("pause_storm_received", "root", "pfc_storm:rx"),
)

PAUSE_STORM_RECEIVED = Chain(
    name="pause_storm_received",
    argument=(
        "A port that receives PFC pause frames without end is held by its peer: the switch queue toward "
        "it cannot drain, or a storming device behind the switch holds that queue. The port is paused for "
        "nearly all of the time, so the pause-ratio finding on the same port and priority is the same "
        "storm measured as a share of time, not a second fault. The port itself is healthy; the fix is "
        "where the pause comes from."
    ),
    source=(
        "IEEE 802.1Qbb-2011 Priority-based Flow Control; "
        + PFCWD
        + "; Guo et al., 'RDMA over Commodity Ethernet at Scale', SIGCOMM 2016"
    ),
    action="find what pauses {entity}: its switch port's PFC watchdog, and the NIC behind that switch sending pause",
    title="PFC pause storm received on {entity}: paused with {hosts}",
    title_local="PFC pause storm received on {entity}",
)

PAUSE_STORM_HEAD_OF_LINE = Chain(
    name="pause_storm_head_of_line",
    argument=(
        "A NIC whose receive pipeline stalls sends PFC pause frames without end. Its leaf stops sending to "
        "it, the egress queue fills, and the leaf in turn pauses the ingress ports feeding that priority: "
        "hosts sharing the leaf (and the collective waiting on the stalled NIC) are paused although they "
        "are healthy, head-of-line blocking their flows. The leaf's spine uplinks are among those ingress "
        "ports: the spine's queue toward the leaf fills in turn and it pauses the other leaves, which "
        "pause their hosts, for no longer and no more of the time than the storm sends pause."
    ),
    source=(
        "IEEE 802.1Qbb-2011 Priority-based Flow Control; Guo et al., 'RDMA over Commodity Ethernet at "
        "Scale', SIGCOMM 2016 (NIC PFC pause frame storm, head-of-line blocking); NVIDIA MLNX_OFED "
        "documentation, 'Priority Flow Control (PFC)' (tx_pause_storm_warning_events/error_events)"
    ),
    action="isolate {entity}: take the NIC out of service, collect its firmware dump, reset or replace it",
    title="PFC pause storm from {entity}: pause spread to {hosts}",
    title_local="PFC pause storm from {entity}: no other host paused",
)


SPEC = DetectorSpec(
    name=KIND,
    summary="per-priority pause ≥ 99% of a window (captures: from packet timing, millisecond windows), NIC storm "
    "watchdogs, unbroken pause with collapsed traffic, a switch's PFC watchdog dropping packets",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    chains=(PAUSE_STORM_HEAD_OF_LINE, PAUSE_STORM_RECEIVED),
    defaults={
        # storm_ratio of at least window_s (or one sampling interval when longer); NIC watchdog
        # events; or pause of at least unbroken_ratio with no Xoff->Xon transition while the
        # paused direction's bytes on that priority fall to collapse_ratio of their p90.
        "storm_ratio": 0.99,
        "window_s": 0.2,
        "unbroken_ratio": 0.95,
        "collapse_ratio": 0.10,
        # NICs counting XOFF frames but no pause time (ice): the fastest link the NIC runs, which
        # gives the shortest quanta time and so the lowest estimate of the pause one XOFF holds
        # (sources.XOFF_QUANTA: IEEE 802.1Qbb quanta, the E810's 100 Gb/s top speed).
        "xoff_link_bps": 100e9,
        # a switch's PFC watchdog (SONiC pfcwd) that declared a storm: a warning once it dropped
        # at least this many packets (one: any drop is loss on a lossless priority)
        "switch_min_drops": 1,
        "source": f"{PFCWD}; {MLX5_STORM}; unbroken pause with collapse: the NIC pause watchdog of Guo et al., "
        "'RDMA over Commodity Ethernet at Scale', SIGCOMM 2016, section 4.3",
    },
    actions={"pfc_storm": PAUSE_STORM_HEAD_OF_LINE.action, "pfc_storm:rx": PAUSE_STORM_RECEIVED.action},
)

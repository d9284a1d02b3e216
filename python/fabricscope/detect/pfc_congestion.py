"""``pfc_congestion``: sustained PFC pause short of a storm, per priority and direction.

``pause_ratio = Δpause_duration[µs] / (Δt x 1e6)``: the share of time a priority was paused.
Received pause (``rx_pause_duration_us``) means the network cannot absorb this NIC's traffic;
sent pause (``tx_pause_duration_us``) means this NIC cannot absorb the network's. A finding
needs contiguous intervals, each at or above ``warning_ratio``, spanning at least ``sustain_s``
(one interval suffices when it is that long), so bursty but normal PFC (a spike between quiet
intervals) stays silent; the observed value is the time-weighted mean over the window. NICs of other hosts
paused on the same priority at overlapping times are named in the evidence (spreading).
802.3x global pause has priority null.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import rate_rows
from fabricscope.detect._shared import MEANING, PAUSE, SERIES, over_shortest_span, pause_intervals
from fabricscope.fabric.relations import CABLE, JOB, PAUSE_ACROSS_LEAVES, SAME_LEAF, SAME_PORT, Relation, prio_name
from fabricscope.incidents.findings import make_findings, merge_windows
from fabricscope.sources import MLX5_PAUSE, default

KIND = "pfc_congestion"


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find priorities paused for a sustained share of the time."""
    cfg = inp.config[KIND]
    p = pause_intervals(inp).filter(pl.col("ratio").is_not_null() & (pl.col("interval_s") > 0))
    if p.is_empty():
        return make_findings([])
    # Timestamp resolution, as for pfc_storm: an interval whose length is known only to its
    # timestamps' resolution (1 s for `date +%s`) joins a window when the ratio over the shortest
    # length it may have had reaches the threshold (a 15.07 s loop reads some intervals as 16 s); a
    # window still needs one interval measured at the threshold, and it is judged critical over its
    # whole span, known to the same resolution once (the inner timestamps cancel).
    flagged = p.filter(pl.col("ratio_upper") >= cfg["warning_ratio"])
    if flagged.is_empty():
        return make_findings([])
    # Only contiguous intervals join (a missing reading makes one longer interval, still contiguous).
    stats = merge_windows(
        flagged,
        keys=SERIES,
        max_gap_s=0.0,
        aggs=[
            pl.col("port", "priority").first().name.suffix("_"),
            ((pl.col("ratio") * pl.col("interval_s")).sum() / pl.col("interval_s").sum()).alias("mean_ratio"),
            pl.col("ratio").max().alias("peak_ratio"),
            pl.col("interval_s").sum().alias("covered_s"),
            pl.col("interval_s").min().alias("min_interval_s"),
            pl.col("resolution_s").max().alias("resolution_s"),
        ],
    )
    stats = stats.filter(
        (pl.col("covered_s") >= cfg["sustain_s"] * 0.999) & (pl.col("peak_ratio") >= cfg["warning_ratio"])
    ).sort("start")
    stats = stats.with_columns(over_shortest_span("mean_ratio", "covered_s").alias("mean_upper"))
    wins = list(stats.iter_rows(named=True))
    rows = []
    for w in wins:
        # Spreading: other NICs paused on the same priority during an overlapping window.
        together = sorted(
            {
                f"{o['host']}/{o['device']}"
                + (f":{o['port_']}" if o["port_"] is not None else "")
                + f" {o['direction']}"
                for o in wins
                if o["_prio"] == w["_prio"]
                and (o["host"], o["device"], o["_port"]) != (w["host"], w["device"], w["_port"])
                and o["start"] < w["end"]
                and w["start"] < o["end"]
            }
        )
        hosts = sorted({t.split("/")[0] for t in together} - {w["host"]})
        critical = w["mean_upper"] >= cfg["critical_ratio"]
        ratio = min(w["mean_ratio"], 1.0)
        msg = (
            f"{w['direction']} pause on {prio_name(w['priority_'])} held {ratio:.0%} of {w['covered_s']:,.0f} s "
            f"(peak {min(w['peak_ratio'], 1.0):.0%} over one {w['min_interval_s']:g} s interval): "
            f"{MEANING[w['direction']]}"
        )
        if hosts:
            msg += f"; pausing together with {len(hosts)} other host(s): {', '.join(hosts[:5])}"
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if critical else "warning",
                "host": w["host"],
                "device": w["device"],
                "port": w["port_"],
                "priority": w["priority_"],
                "layer": "network",
                "start": w["start"],
                "end": w["end"],
                "metric": f"{w['direction']}_pause_ratio",
                "observed": w["mean_ratio"],
                "expected": cfg["warning_ratio"],
                "message": msg,
                "evidence": {
                    "rule": f"pfc_congestion.{w['direction']}_pause_ratio",
                    "threshold_source": cfg["source"],
                    "direction": w["direction"],
                    "peak_ratio": w["peak_ratio"],
                    "critical_ratio": cfg["critical_ratio"],
                    "sustain_s": cfg["sustain_s"],
                    "intervals": w["intervals"],
                    "paused_together": together,
                },
            }
        )
    return make_findings(rows)


def _pause(r: pl.DataFrame) -> pl.DataFrame:
    return rate_rows(r, list(PAUSE))


# pause received behind a storming port (its leaf, or another leaf through a spine) or an incast's
# leaf; the storm itself seen as a pause ratio
RELATIONS = (
    Relation("pause_storm_head_of_line", "consequence", "pfc_congestion:tx", (SAME_PORT,)),
    Relation(
        "pause_storm_head_of_line", "consequence", "pfc_congestion:rx", (CABLE, SAME_LEAF, PAUSE_ACROSS_LEAVES, JOB)
    ),
    Relation("incast_ecn", "consequence", "pfc_congestion:rx", (SAME_LEAF, JOB)),
    Relation("pause_storm_received", "consequence", "pfc_congestion:rx", (SAME_PORT,)),
)


SPEC = DetectorSpec(
    name=KIND,
    summary="sustained pause (rx: network can't absorb the NIC; tx: the NIC can't absorb the network)",
    detect=detect,
    scope="fabric",
    relations=RELATIONS,
    rates_needed=_pause,
    defaults={
        # time-weighted pause ratio over the trailing sustain_s (or one longer interval)
        "warning_ratio": 0.05,
        "critical_ratio": 0.50,
        "sustain_s": 20.0,
        "source": f"{MLX5_PAUSE}; 5%/50% over 20 s: "
        + default("a few percent of sustained pause is chronic congestion spreading upstream"),
    },
    actions={
        "pfc_congestion": (
            "find the congestion behind {entity}: the switch egress queue on the paused priority and the receiver it "
            "drains into; tune ECN marking to act before PFC"
        ),
        "pfc_congestion:tx": (
            "{entity} cannot drain what it receives: check its PCIe and host memory (outbound_pci_stalled_*), its "
            "receive buffers and the application's receive rate"
        ),
    },
)

"""``lossless_misconfig``: RoCE losing packets with neither PFC nor ECN protecting it.

* ``lossless_misconfig.no_pfc_no_ecn``: a NIC with at least ``min_events`` RoCE loss events (the
  ``packet_loss`` counters) while no PFC pause appears on any priority and no ECN mark appears.
  "No pause" needs evidence: pause counters that stay flat, or per-priority ethtool counters with
  no pause counter at all (mlx5 emits ``rx_prio<p>_pause`` only for PFC-enabled priorities, so
  PFC is off everywhere). "No mark" needs an ECN counter that stays flat. When the device itself
  carries no such counter (RDMA device ``mlx5_0`` versus netdev ``eth2``), the other devices of
  the same host decide: no pause and no mark on any of them.
* ``lossless_misconfig.priority_not_lossless``: per-priority drops (``rx_prio<p>_discards``,
  ``_buf_discard``, ``_cong_discard``) on a priority whose PFC is not enabled (per-priority
  counters present, pause counters for it absent) or whose ECN is disabled in the sysfs
  configuration (``ecn/roce_np/enable/<p>`` or ``ecn/roce_rp/enable/<p>`` = 0).
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import NIC, keyed
from fabricscope.detect._relations import SAME_HOST, Chain, Relation
from fabricscope.detect._shared import loss_intervals
from fabricscope.findings import make_findings
from fabricscope.sources import MLX5_PAUSE
from fabricscope.vocabulary import counters_by_direction, counters_with_role

KIND = "lossless_misconfig"

# Counters by role (the core's vocabulary): any pause, any ECN mark, per-priority traffic and drops.
PAUSE = (*counters_by_direction("pause_frames"), *counters_by_direction("pause_duration"))
ECN = (*counters_with_role("rx_ecn_marked"), *counters_with_role("rx_priority_ecn_marked"))
PRIO_TRAFFIC = (*counters_by_direction("priority_bytes"), *counters_by_direction("priority_packets"))
PRIO_DROPS = counters_with_role("rx_priority_drops")


def _device_facts(inp: AnalysisInput) -> pl.DataFrame:
    """Per device: whether pause/ECN is known, total pause and marks, and PFC-enabled priorities."""
    names = [*PAUSE, *ECN, *PRIO_TRAFFIC]
    r = keyed(inp.rates.filter(pl.col("counter").is_in(names))).with_columns(pl.col("counter").cast(pl.String))
    if r.is_empty():
        return pl.DataFrame(schema={"host": pl.String, "device": pl.String})
    return r.group_by("host", "device").agg(
        pl.col("counter").is_in(PAUSE).any().alias("has_pause"),
        pl.col("counter").is_in(PRIO_TRAFFIC).any().alias("has_prio"),
        pl.col("counter").is_in(ECN).any().alias("has_ecn"),
        pl.col("delta").filter(pl.col("counter").is_in(PAUSE)).sum().alias("pause"),
        pl.col("delta").filter(pl.col("counter").is_in(ECN)).sum().alias("marks"),
        pl.col("priority").filter(pl.col("counter").is_in(PAUSE)).drop_nulls().unique().alias("pfc_prios"),
    )


def _no_protection(inp: AnalysisInput, cfg: dict, facts: pl.DataFrame) -> list[dict]:
    loss = loss_intervals(inp)
    if loss.is_empty() or facts.is_empty():
        return []
    nic = (
        loss.filter(pl.col("events").is_not_null())
        .group_by(NIC)
        .agg(pl.col("port").first(), pl.col("events").sum(), pl.col("start").min(), pl.col("end").max())
        .filter(pl.col("events") >= cfg["min_events"])
    )
    if nic.is_empty():
        return []
    # Pause known: pause counters exist, or ethtool per-priority counters without any pause counter.
    f = facts.with_columns(
        (pl.col("has_pause") | pl.col("has_prio")).alias("pause_known"),
        pl.col("has_ecn").alias("ecn_known"),
    )
    host = f.group_by("host").agg(
        pl.col("pause_known").any().alias("h_pause_known"),
        pl.col("pause").sum().alias("h_pause"),
        pl.col("ecn_known").any().alias("h_ecn_known"),
        pl.col("marks").sum().alias("h_marks"),
    )
    j = nic.join(f, on=["host", "device"], how="left").join(host, on="host", how="left")
    j = j.with_columns(
        pl.when(pl.col("pause_known").fill_null(value=False))
        .then(pl.col("pause") == 0)
        .when(pl.col("h_pause_known").fill_null(value=False))
        .then(pl.col("h_pause") == 0)
        .alias("no_pause"),
        pl.when(pl.col("ecn_known").fill_null(value=False))
        .then(pl.col("marks") == 0)
        .when(pl.col("h_ecn_known").fill_null(value=False))
        .then(pl.col("h_marks") == 0)
        .alias("no_ecn"),
        pl.col("pause_known").fill_null(value=False).alias("pause_on_device"),
        pl.col("ecn_known").fill_null(value=False).alias("ecn_on_device"),
    )
    rows = []
    for a in j.filter(pl.col("no_pause") & pl.col("no_ecn")).iter_rows(named=True):
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": a["host"],
                "device": a["device"],
                "port": a["port"],
                "priority": None,
                "layer": "network",
                "start": a["start"],
                "end": a["end"],
                "metric": "loss_events",
                "observed": float(a["events"]),
                "expected": 0.0,
                "message": (
                    f"{a['events']:,.0f} RoCE loss events while no PFC pause and no ECN mark appeared"
                    + ("" if a["pause_on_device"] and a["ecn_on_device"] else " (judged from the host's other devices)")
                    + ": the fabric is not lossless for this NIC; enable PFC on the RoCE priority and ECN (DCQCN)"
                ),
                "evidence": {
                    "rule": "lossless_misconfig.no_pfc_no_ecn",
                    "threshold_source": cfg["source"],
                    "events": a["events"],
                    "pause_basis": "device" if a["pause_on_device"] else "host",
                    "ecn_basis": "device" if a["ecn_on_device"] else "host",
                    "min_events": cfg["min_events"],
                },
            }
        )
    return rows


def _priority_not_lossless(inp: AnalysisInput, cfg: dict, facts: pl.DataFrame) -> list[dict]:
    d = keyed(inp.rates.filter(pl.col("counter").is_in(PRIO_DROPS))).filter(
        pl.col("priority").is_not_null() & (pl.col("delta") > 0)
    )
    if d.is_empty():
        return []
    drops = (
        d.with_columns(pl.col("counter").cast(pl.String))
        .group_by("host", "device", "priority")
        .agg(
            pl.col("port").first(),
            pl.col("delta").sum().alias("drops"),
            pl.col("start").min(),
            pl.col("end").max(),
            pl.col("counter").unique().sort().alias("counters"),
        )
        .filter(pl.col("drops") >= cfg["min_events"])
    )
    attrs = inp.attributes
    ecn = (
        attrs.with_columns(pl.col("key").cast(pl.String), pl.col("host", "device").cast(pl.String))
        .filter(pl.col("key").str.contains(r"^ecn\.roce_(np|rp)\.enable\.[0-7]$"))
        .sort("time")
        .group_by("host", "device", "key")
        .agg(pl.col("value").last())
        .with_columns(
            pl.col("key").str.extract(r"roce_(np|rp)").alias("point"),
            pl.col("key").str.extract(r"(\d)$").cast(pl.Int64).alias("priority"),
        )
        .group_by("host", "device", "priority")
        .agg(
            pl.col("value").filter(pl.col("point") == "np").first().alias("np"),
            pl.col("value").filter(pl.col("point") == "rp").first().alias("rp"),
        )
        if not attrs.is_empty()
        else pl.DataFrame(
            schema={"host": pl.String, "device": pl.String, "priority": pl.Int64, "np": pl.String, "rp": pl.String}
        )
    )
    j = drops.join(facts, on=["host", "device"], how="left").join(ecn, on=["host", "device", "priority"], how="left")
    rows = []
    for a in j.iter_rows(named=True):
        why = []
        if a["has_prio"] and a["priority"] not in (a["pfc_prios"] or []):
            why.append("PFC not enabled (no pause counters on this priority)")
        off = [name for name, v in (("roce_np", a["np"]), ("roce_rp", a["rp"])) if v is not None and v.strip() == "0"]
        if off:
            prio = a["priority"]
            why.append("ECN disabled (" + ", ".join(f"ecn/{o}/enable/{prio} = 0" for o in off) + ")")
        if not why:
            continue
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": a["host"],
                "device": a["device"],
                "port": a["port"],
                "priority": a["priority"],
                "layer": "network",
                "start": a["start"],
                "end": a["end"],
                "metric": "prio_rx_discards",
                "observed": float(a["drops"]),
                "expected": 0.0,
                "message": f"{a['drops']:,.0f} packets dropped on priority {a['priority']}: " + "; ".join(why),
                "evidence": {
                    "rule": "lossless_misconfig.priority_not_lossless",
                    "threshold_source": cfg["source"],
                    "drops": a["drops"],
                    "counters": a["counters"],
                    "pfc_priorities": sorted(a["pfc_prios"] or []),
                    "ecn_np_enable": a["np"],
                    "ecn_rp_enable": a["rp"],
                },
            }
        )
    return rows


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find RoCE loss without PFC or ECN, and drops on priorities that are not lossless."""
    cfg = inp.config[KIND]
    facts = _device_facts(inp)
    rows = _no_protection(inp, cfg, facts)
    if not facts.is_empty():
        rows += _priority_not_lossless(inp, cfg, facts)
    return make_findings(rows)


# RoCE without PFC and ECN drops; the same misconfiguration on the NIC's RDMA device joins it
RELATIONS = (
    Relation("lossless_off_drops", "root", "lossless_misconfig"),
    Relation("lossless_off_drops", "consequence", "lossless_misconfig", (SAME_HOST,)),
)

LOSSLESS_OFF_DROPS = Chain(
    name="lossless_off_drops",
    argument=(
        "RoCEv2 assumes a lossless fabric: with neither PFC on the RoCE priority nor ECN marking (DCQCN), "
        "a receiver whose buffers fill drops packets instead of pausing or slowing its senders. The drops "
        "are the receiver's own loss (out-of-sequence, buffer discards); each dropped packet is NAKed and "
        "resent by its sender (go-back-N), so the sender's retransmissions with the same count join "
        "through the receiver's loss. The cable is healthy: the fix is the QoS configuration."
    ),
    source=(
        "NVIDIA 'RoCE Configuration for NVIDIA Spectrum Ethernet' (lossless RoCE needs PFC and ECN); "
        "IEEE 802.1Qbb-2011 Priority-based Flow Control; Zhu et al., 'Congestion Control for Large-Scale "
        "RDMA Deployments' (DCQCN), SIGCOMM 2015"
    ),
    action="enable PFC on the RoCE priority and ECN (DCQCN) for {entity}, on the NIC and its switch port",
    title="lossless RoCE off on {entity}: drops and retransmissions reaching {hosts}",
    title_local="lossless RoCE off on {entity}: drops on its own host",
)


SPEC = DetectorSpec(
    name=KIND,
    summary="RoCE drops with no PFC and no ECN anywhere, or on priorities without them",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    chains=(LOSSLESS_OFF_DROPS,),
    root_order=4,
    defaults={
        "min_events": 10,
        "source": "NVIDIA 'RoCE Configuration for NVIDIA Spectrum Ethernet' (lossless RoCE needs PFC and ECN); "
        f"NetQ 'netq check roce'; {MLX5_PAUSE}; rx_prio<p>_pause counts only on PFC-enabled priorities",
    },
    actions={
        "lossless_misconfig": LOSSLESS_OFF_DROPS.action,
    },
)

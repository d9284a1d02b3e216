"""``packet_loss``: the RDMA loss rate p (InfiniBand, RoCE) per NIC and direction, from transport and drops.

Receive side (the ``rx_loss`` counter role: loss on traffic this NIC receives):
``out_of_sequence``, ``duplicate_request``, ``rx_discards_phy``, ``rx_out_of_buffer``. Send side
(``tx_loss``: loss on traffic this NIC sends, seen by the requester): ``packet_seq_err`` (NAK
sequence errors), ``implied_nak_seq_err``, ``local_ack_timeout_err``, ``roce_adp_retrans``. One
lost packet usually shows up in several of them (a buffer drop, then an out-of-sequence arrival),
so per interval the *largest* of a side's counts is taken: a lower bound on loss events, never a double count.

``p = loss events / packets`` of the same direction. Packets come from the first counter the NIC
has of the ``rx_packets``/``tx_packets`` role: RoCE vport packets, IB port packets (64-bit copies
first; RoCE traffic only on a RoCE port), wire packets; else
they are estimated from bytes / ``mtu_bytes`` (which over-states p when packets are smaller than
the MTU; the evidence says ``packets_estimated``). A zero packet count makes p undefined: an idle
NIC gives no finding. Wraps of the 32-bit Q counters are handled by the rate engine; reset or gap
intervals carry no delta and are skipped.

The loss intervals and traffic alignment are shared computations
(:func:`fabricscope.detect._shared.loss_intervals`): ``lossy_collapse`` and ``lossless_misconfig``
read the same intervals.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import NIC, transport_name, transport_names
from fabricscope.detect._shared import loss_intervals, loss_windows
from fabricscope.fabric.relations import (
    CABLE,
    FAN_IN,
    JOB,
    SAME_COUNT,
    SAME_HOST,
    SAME_LEAF,
    SAME_PORT,
    Chain,
    Relation,
    fan_root,
)
from fabricscope.incidents.findings import make_findings
from fabricscope.sources import default

KIND = "packet_loss"


def _count_sums(counts: list[dict[str, int | float | None]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in counts:
        for k, v in c.items():
            if v:
                out[k] = out.get(k, 0.0) + float(v)
    return out


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Estimate the loss rate per NIC and direction; report windows with p at or above the threshold."""
    cfg = inp.config[KIND]
    loss = loss_intervals(inp)
    if loss.is_empty():
        return make_findings([])
    rows = []
    transports = transport_names(inp)
    windows = loss_windows(loss, cfg["warning_p"])
    for w in windows.iter_rows(named=True) if not windows.is_empty() else []:
        if w["events"] < cfg["min_events"]:
            continue
        counts = _count_sums(w["counts"])
        side = "received" if w["direction"] == "rx" else "sent"
        transport = transport_name(transports, w["host"], w["device"])
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": w["host"],
                "device": w["device"],
                "port": w["port"],
                "priority": None,
                "layer": "network",
                "start": w["start"],
                "end": w["end"],
                "metric": f"loss_rate_{w['direction']}",
                "observed": w["p"],
                "expected": cfg["warning_p"],
                "message": (
                    f"{transport} loss on {side} traffic: p = {w['p']:.2e} ({w['events']:,.0f} loss events in "
                    f"{w['packets']:,.0f} {'estimated ' if w['packets_estimated'] else ''}packets, "
                    f"{w['covered_s']:,.0f} s); " + ", ".join(f"{k} +{v:,.0f}" for k, v in sorted(counts.items()))
                ),
                "evidence": {
                    "rule": "packet_loss.loss_rate",
                    "threshold_source": cfg["source"],
                    "direction": w["direction"],
                    "events": w["events"],
                    "packets": w["packets"],
                    "packets_estimated": bool(w["packets_estimated"]),
                    "mtu_bytes": cfg["mtu_bytes"],
                    "peak_p": w["peak_p"],
                    "counts": counts,
                    "estimator": "per interval the largest loss counter of the side (lower bound on events)",
                    "intervals": w["intervals"],
                },
            }
        )
    # Loss counters rising on a NIC with no packet or byte counter at all: p is unknown, say so.
    known = loss.filter(pl.col("packets_per_s").is_not_null()).select(NIC).unique()
    unknown = loss.join(known, on=NIC, how="anti").filter(pl.col("events") > 0)
    if not unknown.is_empty():
        agg = unknown.group_by([*NIC, "direction"]).agg(
            pl.col("port").first(),
            pl.col("events").sum(),
            pl.col("interval_s").sum().alias("covered_s"),
            pl.col("start").min(),
            pl.col("end").max(),
            pl.col("counts"),
        )
        for a in agg.filter(pl.col("events") >= cfg["min_events"]).iter_rows(named=True):
            counts = _count_sums(a["counts"])
            rate = a["events"] / a["covered_s"] if a["covered_s"] else None
            rows.append(
                {
                    "kind": KIND,
                    "severity": "info",
                    "host": a["host"],
                    "device": a["device"],
                    "port": a["port"],
                    "layer": "network",
                    "start": a["start"],
                    "end": a["end"],
                    "metric": f"loss_events_{a['direction']}",
                    "observed": rate,
                    "expected": 0.0,
                    "message": (
                        f"{a['events']:,.0f} {transport_name(transports, a['host'], a['device'])} loss events "
                        f"({a['direction']}) but no packet or byte counter "
                        "for this device: p unknown; collect port or vport traffic counters"
                    ),
                    "evidence": {
                        "rule": "packet_loss.no_denominator",
                        "threshold_source": cfg["source"],
                        "events": a["events"],
                        "counts": counts,
                    },
                }
            )
    return make_findings(rows)


LOSS_FAN_IN = Chain(
    name="loss_fan_in",
    argument=(
        "A sender whose own transmit path corrupts packets (its cable, transceiver or the leaf port it "
        "enters) loses a share of everything it sends, whoever it sends to: the leaf's ingress drops the "
        "corrupted frames, every responder it talks to finds a PSN missing and counts an out-of-sequence "
        "arrival, and the sender counts each returned NAK as a sequence error and resends (go-back-N). "
        "Over one window its sequence errors are the sum of its partners' out-of-sequence arrivals, and "
        "each partner's loss is a share of its own: the partners' ports are healthy (no CRC errors of "
        "their own), so their loss is the sender's fault, not theirs."
    ),
    source=(
        "InfiniBand Architecture Specification Vol. 1, chapter 9 'Transport Layer' (reliable connection: PSN "
        "checking, NAK sequence error, go-back-N retransmission); NVIDIA MLNX_OFED documentation, "
        "'Understanding mlx5 Linux Counters' (out_of_sequence, packet_seq_err); Mittal et al., 'Revisiting "
        "Network Support for RDMA', SIGCOMM 2018"
    ),
    action=(
        "replace or reseat the cable/transceiver of {entity}: what it sends is lost before any receiver "
        "(check the leaf port it enters for FCS/symbol errors with mlxlink or the switch's counters)"
    ),
    title="lossy transmit path {entity}: {fault} reaching {hosts}",
    title_local="lossy transmit path {entity}: {fault}",
    fault="loss",
    root_when=fan_root,
)

# a receiver's loss roots the go-back-N chain; a sender's retransmissions are its consequence; a sender
# whose retransmissions are the sum of several receivers' loss roots the fan-in chain
RELATIONS = (
    Relation("link_loss_go_back_n", "root", "packet_loss:rx", words="packet loss"),
    Relation(
        "link_loss_go_back_n", "consequence", "packet_loss", (SAME_PORT, CABLE, SAME_COUNT, FAN_IN, SAME_LEAF, JOB)
    ),
    Relation("loss_fan_in", "root", "packet_loss:tx", words="packet loss on what it sends"),
    Relation("loss_fan_in", "consequence", "packet_loss", (SAME_PORT, FAN_IN)),
    Relation("pause_storm_head_of_line", "consequence", "packet_loss", (SAME_PORT, SAME_HOST)),
    Relation("lossless_off_drops", "consequence", "packet_loss", (SAME_PORT, SAME_HOST)),
)


SPEC = DetectorSpec(
    name=KIND,
    summary="RDMA loss rate p (InfiniBand and RoCE) per NIC and direction",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    chains=(LOSS_FAN_IN,),
    defaults={
        "warning_p": 1e-6,
        "min_events": 10,
        "mtu_bytes": 4096,
        "source": "mlx5 RC transport and drop counters (Linux kernel drivers/infiniband/hw/mlx5/counters.c); "
        "p >= 1e-6 with "
        ">= 10 events: " + default("a lossless fabric should lose nothing; 1000x below the 0.1% collapse line"),
    },
    actions={
        "packet_loss": (
            "find why {entity} drops what it receives: symbol/FCS errors on its cable (replace it), or "
            "rx_out_of_buffer / rx_discards (receive buffers, PFC on the RoCE priority)"
        ),
        "packet_loss:tx": (
            "{entity} retransmits: find the lossy link on its path (its peers' receive-side errors and discards, the "
            "switch ports between) and replace that cable"
        ),
    },
)

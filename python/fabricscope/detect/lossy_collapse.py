"""``lossy_collapse``: loss at or above ``collapse_p`` (0.1%) and what it does to throughput.

p per NIC and direction comes from ``packet_loss``. The model (Mittal et al., SIGCOMM 2018; Guo et al., SIGCOMM 2016):

* go-back-N efficiency ``1 / (1 + p x W)``, ``W = line rate x rtt / mtu`` (bandwidth-delay
  product in packets; line rate from the port's rate gauge, else the profile, else ``roce400``);
* go-back-0 efficiency ``(1 - p)^M``, ``M = message_bytes / mtu``.

Observed throughput is the direction's bytes over the window (RoCE vport, IB port or wire
bytes); expected throughput is the NIC's own median outside lossy intervals, else the median of
its peers (other NICs, same direction) over the window. The finding is critical when the
modelled go-back-N efficiency is below ``min_efficiency`` or the observed drop reaches
``max_drop_ratio``; otherwise a warning.

Drops on a host whose NIC pause-storm watchdog fired in the same window are the storm's
consequence (the NIC stopped honouring PFC), not a lossy link: ``pfc_storm`` reports them, and no
collapse finding is raised there. NICs without a watchdog counter (bnxt_en, ice) are judged the
same way when they sent pause for ``pfc_storm``'s ``unbroken_ratio`` of an interval
(:func:`fabricscope.detect._shared.stalled_intervals`).

The view ``go_back_n`` (``Analysis.views``) is the model per NIC, direction and interval with the
analysis' own thresholds: the dashboard's port page plots it.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, View
from fabricscope.detect._common import entity_strings, port_facts, transport_name, transport_names
from fabricscope.detect._shared import LOSS_COUNTERS, loss_intervals, loss_windows, stalled_intervals, with_traffic
from fabricscope.fabric.profiles import get_profile
from fabricscope.fabric.relations import CABLE, FAN_IN, JOB, SAME_COUNT, SAME_HOST, SAME_LEAF, SAME_PORT, Relation
from fabricscope.incidents.findings import make_findings
from fabricscope.reading.vocabulary import counters_with_role
from fabricscope.sources import GBN, default

KIND = "lossy_collapse"

GO_BACK_N_SCHEMA = pl.Schema(
    {
        "host": pl.String,
        "device": pl.String,
        "port": pl.Int64,
        "direction": pl.String,
        "start": pl.Datetime("ns", "UTC"),
        "end": pl.Datetime("ns", "UTC"),
        "loss_ratio": pl.Float64,
        "link_rate_bytes_per_s": pl.Float64,
        "bdp_packets": pl.Float64,
        "gbn_efficiency": pl.Float64,
    }
)
"""The ``go_back_n`` view: per NIC, direction and interval with a loss estimate, the loss ratio p, the
line rate the model used, ``W`` in packets and the modelled go-back-N efficiency."""


def bdp_packets(line_rate_bytes_per_s: Any, cfg: dict[str, Any]) -> Any:
    """``W``: the bandwidth-delay product in packets, ``line rate x rtt_us / mtu_bytes`` (floats or expressions)."""
    return line_rate_bytes_per_s * cfg["rtt_us"] * 1e-6 / cfg["mtu_bytes"]


def go_back_n_efficiency(p: Any, bdp: Any) -> Any:
    """Goodput share under go-back-N: ``1 / (1 + p x W)`` (a loss resends the ``W`` packets in flight)."""
    return 1.0 / (1.0 + p * bdp)


def _port_rates(inp: AnalysisInput) -> pl.DataFrame:
    """Per NIC (``host``, ``device``, ``_port``): its link rate gauge and profile, as the model reads them."""
    facts = port_facts(inp).select("host", "device", "port", "link_rate_bytes_per_s", "profile")
    return facts.with_columns(pl.col("port").fill_null(-1).alias("_port")).drop("port")


def go_back_n(inp: AnalysisInput) -> pl.DataFrame:
    """The ``go_back_n`` view (:data:`GO_BACK_N_SCHEMA`): the model on every interval with a loss ratio.

    Line rate from the port's rate gauge, else ``--profile``, else ``roce400``, and ``rtt_us`` and
    ``mtu_bytes`` from ``[lossy_collapse]``: what :func:`detect` judges a window with.
    """
    cfg = inp.config[KIND]
    loss = loss_intervals(inp)
    if loss.is_empty():
        return pl.DataFrame(schema=GO_BACK_N_SCHEMA)
    default = inp.profile or get_profile("roce400")
    line = pl.col("link_rate_bytes_per_s").fill_null(default.line_rate_bytes_per_s)
    out = (
        loss.filter(pl.col("p").is_not_null())
        .join(_port_rates(inp), on=["host", "device", "_port"], how="left")
        .with_columns(line.alias("link_rate_bytes_per_s"))
        .with_columns(bdp_packets(pl.col("link_rate_bytes_per_s"), cfg).alias("bdp_packets"))
        .with_columns(
            pl.col("p").alias("loss_ratio"),
            go_back_n_efficiency(pl.col("p"), pl.col("bdp_packets")).alias("gbn_efficiency"),
        )
    )
    return out.select([pl.col(c).cast(t) for c, t in GO_BACK_N_SCHEMA.items()]).sort(
        "host", "device", "port", "direction", "end", nulls_last=True
    )


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find NICs losing enough packets for RoCE throughput to collapse."""
    cfg = inp.config[KIND]
    loss = loss_intervals(inp)
    if loss.is_empty():
        return make_findings([])
    windows = loss_windows(loss, cfg["collapse_p"])
    if windows.is_empty():
        return make_findings([])
    windows = windows.join(_port_rates(inp), on=["host", "device", "_port"], how="left")
    storms = entity_strings(
        inp.rates.filter(pl.col("counter").is_in(counters_with_role("tx_pause_storm")) & (pl.col("delta") > 0))
    ).select("host", pl.col("start").alias("_s"), pl.col("end").alias("_e"))
    storms = pl.concat([storms, stalled_intervals(inp)])
    default = inp.profile or get_profile("roce400")
    clean = loss.filter(
        pl.col("bytes_per_s").is_not_null() & (pl.col("p").is_null() | (pl.col("p") < cfg["collapse_p"]))
    )
    mtu = cfg["mtu_bytes"]
    rows = []
    transports = transport_names(inp)
    for w in windows.iter_rows(named=True):
        storming = storms.filter(
            (pl.col("host") == w["host"]) & (pl.col("_s") < w["end"]) & (pl.col("_e") > w["start"])
        )
        if storming.height:
            continue
        line = w["link_rate_bytes_per_s"] or default.line_rate_bytes_per_s
        p = w["p"]
        bdp = bdp_packets(line, cfg)
        gbn = go_back_n_efficiency(p, bdp)
        msg_packets = cfg["message_bytes"] / mtu
        g0 = (1.0 - min(p, 1.0)) ** msg_packets
        observed = w["bytes"] / w["covered_s"] if w["bytes"] and w["covered_s"] else None
        same = (pl.col("host") == w["host"]) & (pl.col("device") == w["device"]) & (pl.col("_port") == w["_port"])
        mine = clean.filter(same & (pl.col("direction") == w["direction"]))
        mine = mine.filter((pl.col("end") <= w["start"]) | (pl.col("start") >= w["end"]))
        basis = None
        expected = None
        if mine.height:
            expected, basis = mine["bytes_per_s"].median(), f"own median over {mine.height} loss-free intervals"
        else:
            peers = clean.filter(
                ~same
                & (pl.col("direction") == w["direction"])
                & (pl.col("end") > w["start"])
                & (pl.col("start") < w["end"])
            )
            n = peers.select("host", "device", "_port").unique().height
            if n:
                expected, basis = peers["bytes_per_s"].median(), f"median of {n} peer NIC(s) over the window"
        drop = 1.0 - observed / expected if observed is not None and expected else None
        critical = gbn < cfg["min_efficiency"] or (drop is not None and drop >= cfg["max_drop_ratio"])
        side = "received" if w["direction"] == "rx" else "sent"
        obs_text = f"{observed / 1e9:.3g} GB/s" if observed is not None else "n/a"
        exp_text = f"{expected / 1e9:.3g} GB/s ({basis})" if expected else "unknown (no baseline or peers)"
        story = f"throughput {obs_text}, expected {exp_text}"
        if drop is not None and drop >= cfg["max_drop_ratio"]:
            story += f": {drop:.0%} below, the collapse is measured"
        elif drop is not None and gbn < cfg["min_efficiency"]:
            # Model and measurement disagree on the wire rate, and that is the point: byte
            # counters count every retransmitted packet, so the wire rate holds while go-back-N
            # resends ~W packets per loss and goodput falls to about gbn of it.
            load = observed / line
            light = load < 0.5
            story += (
                ": the wire rate held because the byte counters include go-back-N retransmissions; "
                f"goodput is {'at least ' if light else ''}about {gbn:.0%} of it (~{gbn * observed / 1e9:.3g} GB/s)"
            )
            if light:
                story += (
                    f" (at {load:.0%} of the {line / 1e9:.0f} GB/s line rate fewer than W packets are in flight, "
                    "so a loss resends fewer than W)"
                )
        transport = transport_name(transports, w["host"], w["device"])
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if critical else "warning",
                "host": w["host"],
                "device": w["device"],
                "port": w["port"],
                "priority": None,
                "layer": "network",
                "start": w["start"],
                "end": w["end"],
                "metric": f"{'rx' if w['direction'] == 'rx' else 'tx'}_bytes_per_s",
                "observed": observed,
                "expected": expected,
                "message": (
                    f"{transport} loss p = {p:.2%} on {side} traffic (threshold {cfg['collapse_p']:.1%}): "
                    f"modelled go-back-N efficiency {gbn:.0%} (W = {bdp:,.0f} packets), go-back-0 {g0:.0%} for "
                    f"{cfg['message_bytes'] / 2**20:g} MiB messages; {story}"
                ),
                "evidence": {
                    "rule": "lossy_collapse.go_back_n",
                    "threshold_source": cfg["source"],
                    "direction": w["direction"],
                    "p": p,
                    "collapse_p": cfg["collapse_p"],
                    "gbn_efficiency": gbn,
                    "go_back_0_efficiency": g0,
                    "bdp_packets": bdp,
                    "rtt_us": cfg["rtt_us"],
                    "mtu_bytes": mtu,
                    "message_bytes": cfg["message_bytes"],
                    "link_rate_bytes_per_s": line,
                    "link_rate_assumed": w["link_rate_bytes_per_s"] is None,
                    "profile": w["profile"] or default.name,
                    "observed_bytes_per_s": observed,
                    "expected_bytes_per_s": expected,
                    "expected_basis": basis,
                    "observed_drop_ratio": drop,
                    "wire_rate_held": drop is not None and drop < cfg["max_drop_ratio"],
                    "events": w["events"],
                    "packets": w["packets"],
                    "packets_estimated": bool(w["packets_estimated"]),
                },
            }
        )
    return make_findings(rows)


_STORM = (
    *counters_with_role("tx_pause_storm"),
    *counters_with_role("tx_pause_duration"),
    *counters_with_role("tx_xoff_frames"),
)


def _loss_and_traffic(r: pl.DataFrame) -> pl.DataFrame:
    # Loss intervals (_shared.loss_intervals) and pause storms on the same host.
    return with_traffic(r, [c for side in LOSS_COUNTERS.values() for c in side], ("rx", "tx"), _STORM)


# a receiver's collapse roots the go-back-N chain; a sender's collapse is the loss it resends
RELATIONS = (
    Relation("link_loss_go_back_n", "root", "lossy_collapse:rx", words="loss collapsing goodput"),
    Relation(
        "link_loss_go_back_n", "consequence", "lossy_collapse", (SAME_PORT, CABLE, SAME_COUNT, FAN_IN, SAME_LEAF, JOB)
    ),
    Relation("loss_fan_in", "root", "lossy_collapse:tx", words="loss collapsing goodput of what it sends"),
    Relation("loss_fan_in", "consequence", "lossy_collapse", (SAME_PORT, FAN_IN)),
    Relation("pause_storm_head_of_line", "consequence", "lossy_collapse", (SAME_PORT, SAME_HOST)),
    Relation("lossless_off_drops", "consequence", "lossy_collapse", (SAME_PORT, SAME_HOST)),
)


SPEC = DetectorSpec(
    name=KIND,
    summary="go-back-N/go-back-0 throughput collapse at p ≥ 0.1%",
    detect=detect,
    scope="fabric",
    relations=RELATIONS,
    rates_needed=_loss_and_traffic,
    views={"go_back_n": View(go_back_n, GO_BACK_N_SCHEMA)},
    defaults={
        "collapse_p": 1e-3,
        "rtt_us": 10.0,
        "mtu_bytes": 4096,
        "message_bytes": 4 * 1024 * 1024,
        "min_efficiency": 0.9,
        "max_drop_ratio": 0.1,
        "source": f"{GBN}; RTT 10 us, 4 KB MTU, 4 MB messages: "
        + default("one datacentre RTT and the large messages of collectives"),
    },
    actions={
        "lossy_collapse": (
            "find and fix the lossy link under {entity}: check both ends' error and discard counters (mlxlink, "
            "ethtool -S *_phy), reseat or replace the cable"
        ),
        "lossy_collapse:tx": (
            "{entity} retransmits: find the lossy link on its path (its peers' receive-side errors and discards, the "
            "switch ports between) and replace that cable"
        ),
    },
)

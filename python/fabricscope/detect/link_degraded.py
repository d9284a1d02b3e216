"""``link_degraded``: active rate or width below the profile, or below comparable ports.

Expected values come from ``--profile`` when given, else from the majority of comparable ports:
same link layer and same adapter model (``hca_type`` where known), at least
``majority_min_ports`` of them: a 4X NDR port among 4X NDR peers that trained
at 2X or at HDR speed is degraded ("Could be" in iblinkinfo terms). Ports not ACTIVE are skipped:
a port down for maintenance is not degraded.

A port is judged against its own technology, never an invented default: network interfaces (no
RDMA port: node_exporter's ``node_network_speed_bytes``) are compared with network interfaces only,
and where their adapter model is unknown only when the source gives a width beside the majority's
(a 1 GbE management NIC among 10 GbE ones is another technology, not a degraded link). A rate that
is not positive (node_exporter's -125000 for a speed of -1) is unknown, never a fault.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.detect._common import port_facts
from fabricscope.fabric.relations import CABLE, SAME_PORT, Chain, Relation, ratio
from fabricscope.incidents.findings import make_findings

KIND = "link_degraded"


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find ports that trained below what they should."""
    cfg = inp.config["link_degraded"]
    facts = port_facts(inp).filter(pl.col("link_rate_bytes_per_s") > 0)
    facts = facts.filter(pl.col("port_state_id").is_null() | (pl.col("port_state_id") == 4.0))
    if facts.is_empty():
        return make_findings([])
    hca = (
        inp.attributes.filter(pl.col("key") == "hca_type")
        .group_by(["host", "device"])
        .agg(pl.col("value").last().alias("hca_type"))
        .with_columns(pl.col("host", "device").cast(pl.String))
    )
    facts = facts.join(hca, on=["host", "device"], how="left").with_columns(
        pl.col("link_layer").fill_null("unknown"),
        pl.col("hca_type").fill_null("unknown"),
        # A network interface (no RDMA port: node_exporter's `node_network_speed_bytes`, sysfs
        # `speed`) is compared with network interfaces only, never with RDMA ports.
        pl.col("port").is_null().alias("_netdev"),
    )
    majority = {}
    for (layer, model, netdev), grp in facts.group_by("link_layer", "hca_type", "_netdev"):
        if grp.height >= cfg["majority_min_ports"]:
            rate_mode = grp["link_rate_bytes_per_s"].mode().max()
            lanes = grp["link_width_lanes"].drop_nulls()
            majority[(layer, model, netdev)] = (rate_mode, lanes.mode().max() if len(lanes) else None, grp.height)
    # The window: when the port was seen at its current rate.
    seen = (
        inp.gauges.filter(pl.col("counter") == "link_rate_bytes_per_s")
        .sort("time")
        .with_columns(pl.col("host", "device").cast(pl.String), pl.col("port").cast(pl.Int64))
        .group_by(["host", "device", "port"])
        .agg(
            pl.col("time").filter(pl.col("value") == pl.col("value").last()).min().alias("since"),
            pl.col("time").max().alias("last_seen"),
        )
    )
    facts = facts.join(seen, on=["host", "device", "port"], how="left")
    rows = []
    for f in facts.iter_rows(named=True):
        if inp.profile is not None:
            exp_rate, exp_lanes, basis = (
                inp.profile.line_rate_bytes_per_s,
                inp.profile.lanes,
                f"profile {inp.profile.name}",
            )
        elif (f["link_layer"], f["hca_type"], f["_netdev"]) in majority:
            exp_rate, exp_lanes, n = majority[(f["link_layer"], f["hca_type"], f["_netdev"])]
            basis = f"majority of {n} {f['link_layer']} ports of adapter type {f['hca_type']}"
            # Network interfaces of unknown models are of any technology (a 1 GbE management
            # port beside 10 GbE ones): only a width beside the majority's says they share one.
            if f["_netdev"] and f["hca_type"] == "unknown" and (f["link_width_lanes"] is None or exp_lanes is None):
                continue
        else:
            continue
        rate, lanes = f["link_rate_bytes_per_s"], f["link_width_lanes"]
        slow = rate < exp_rate * 0.999
        narrow = lanes is not None and exp_lanes is not None and lanes < exp_lanes
        if not (slow or narrow):
            continue
        critical = rate <= exp_rate * cfg["critical_ratio"]
        what = []
        if slow:
            what.append(f"rate {rate * 8 / 1e9:g} Gb/s, expected {exp_rate * 8 / 1e9:g} Gb/s")
        if narrow:
            what.append(f"width {lanes:g}X, expected {exp_lanes:g}X")
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if critical else "warning",
                "host": f["host"],
                "device": f["device"],
                "port": f["port"],
                "layer": "network",
                "start": f["since"],
                "end": f["last_seen"],
                "metric": "link_rate_bytes_per_s",
                "observed": rate,
                "expected": exp_rate,
                "message": "link trained below expectation: " + "; ".join(what),
                "evidence": {
                    "rule": "link_degraded.rate_width",
                    "threshold_source": cfg["source"],
                    "basis": basis,
                    "lanes": lanes,
                    "expected_lanes": exp_lanes,
                    "detected_profile": f["profile"],
                },
            }
        )
    return make_findings(rows)


def _degraded_magnitude(root: dict[str, Any], c: dict[str, Any]) -> tuple[bool | None, str]:
    """A ring through a link at fraction x of its peers' rate moves at most ~x of the expected bandwidth.

    If the collective reached clearly more than the degraded link allows, its ring does not cross
    that link (the counter-factual: with the link in the ring it could not have been that fast).
    """
    if c["kind"] != "underperformance":
        return None, "not a bandwidth measurement: no ring bound applies"
    rr, rc = ratio(root), ratio(c)
    if rr is None or rc is None:
        return None, "rate ratio of root or consequence unknown: magnitude not checked"
    ok = rc <= rr * 1.15
    return ok, f"collective at {rc:.0%} of expected {'<=' if ok else '>'} the degraded link's {rr:.0%} (+15%)"


# a narrow or slow link roots the ring chain; its far end trained the same way
RELATIONS = (
    Relation("degraded_link_ring", "root", "link_degraded"),
    Relation("degraded_link_ring", "consequence", "link_degraded", (SAME_PORT, CABLE)),
)

DEGRADED_LINK_RING = Chain(
    name="degraded_link_ring",
    argument=(
        "A port trained at 2X width or a lower speed carries half (or less) of its peers' rate. A ring "
        "all-reduce moves every byte through every hop, so the whole ring, and every rank in it, runs at "
        "the degraded link's rate: bottleneck and collective underperformance on all its ranks."
    ),
    source=(
        "InfiniBand Architecture Specification Vol. 2 (physical layer: link width and speed training); "
        "NVIDIA nccl-tests doc/PERFORMANCE.md (bus bandwidth of ring all-reduce); Patarasuk and Yuan, "
        "'Bandwidth optimal all-reduce algorithms for clusters of workstations', J. Parallel Distrib. "
        "Comput. 69(2), 2009"
    ),
    action="re-train or replace the cable of {entity} (mlxlink -p <port> to see why it came up narrow/slow)",
    title="degraded link {entity}: ring limited on {hosts}",
    title_local="degraded link {entity}: its own host slowed",
    magnitude=_degraded_magnitude,
)


SPEC = DetectorSpec(
    name=KIND,
    summary="ports trained below the profile or below like ports (rate, width)",
    detect=detect,
    scope="fabric",
    relations=RELATIONS,
    chains=(DEGRADED_LINK_RING,),
    rates_needed=no_rates,
    defaults={
        "majority_min_ports": 3,
        "critical_ratio": 0.5,
        "source": "iblinkinfo(8) 'Could be' check (rdma-core infiniband-diags); NVIDIA ibdiagnet User Manual, "
        "Fabric Links Validation (expected speed and width)",
    },
    actions={
        "link_degraded": DEGRADED_LINK_RING.action,
    },
)

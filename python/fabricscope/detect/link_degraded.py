"""``link_degraded``: active rate or width below the profile, or below comparable ports.

Expected values come from ``--profile`` when given, else from the majority of comparable ports:
same link layer and same adapter model (``hca_type`` where known), at least
``majority_min_ports`` of them: a 4X NDR port among 4X NDR peers that trained
at 2X or at HDR speed is degraded ("Could be" in iblinkinfo terms). Ports not ACTIVE are skipped:
a port down for maintenance is not degraded.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.detect._common import port_facts
from fabricscope.findings import make_findings

KIND = "link_degraded"


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find ports that trained below what they should."""
    cfg = inp.config["link_degraded"]
    facts = port_facts(inp).filter(pl.col("link_rate_bytes_per_s").is_not_null())
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
        pl.col("link_layer").fill_null("unknown"), pl.col("hca_type").fill_null("unknown")
    )
    majority = {}
    for (layer, model), grp in facts.group_by("link_layer", "hca_type"):
        if grp.height >= cfg["majority_min_ports"]:
            rate_mode = grp["link_rate_bytes_per_s"].mode().max()
            lanes = grp["link_width_lanes"].drop_nulls()
            majority[(layer, model)] = (rate_mode, lanes.mode().max() if len(lanes) else None, grp.height)
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
        elif (f["link_layer"], f["hca_type"]) in majority:
            exp_rate, exp_lanes, n = majority[(f["link_layer"], f["hca_type"])]
            basis = f"majority of {n} {f['link_layer']} ports of adapter type {f['hca_type']}"
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


SPEC = DetectorSpec(
    name=KIND,
    summary="ports trained below the profile or below like ports (rate, width)",
    detect=detect,
    scope="fabric",
    rates_needed=no_rates,
    defaults={
        "majority_min_ports": 3,
        "critical_ratio": 0.5,
        "source": "iblinkinfo(8) 'Could be' check (rdma-core infiniband-diags); NVIDIA ibdiagnet User Manual, "
        "Fabric Links Validation (expected speed and width)",
    },
)

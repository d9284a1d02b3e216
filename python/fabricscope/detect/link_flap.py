"""``link_flap``: link-downed increments and ACTIVE -> not ACTIVE -> ACTIVE state sequences.

A port that stays down for the whole observation (maintenance) is not a flap. Where topology is
known, the peer's counter is named in the evidence.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings, rate_rows, typical_interval
from fabricscope.fabric.relations import Relation
from fabricscope.incidents.findings import make_findings, merge_windows
from fabricscope.sources import NVSENTINEL

KIND = "link_flap"
ACTIVE = 4.0


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find flapping links."""
    cfg = inp.config["link_flap"]
    factor = inp.config["merge"]["max_gap_factor"]
    rows = []
    downed = inp.rates.filter((pl.col("counter") == "link_downed_events") & (pl.col("delta") > 0))
    if not downed.is_empty():
        downed = entity_strings(downed.with_columns((typical_interval(inp.rates) * factor).alias("_gap")))
        windows = merge_windows(
            downed,
            keys=["host", "device", "port"],
            max_gap_s=pl.col("_gap"),
            aggs=[pl.col("delta").sum().alias("count"), pl.col("source").first()],
        )
        for w in windows.iter_rows(named=True):
            rows.append(
                {
                    "kind": KIND,
                    "severity": "critical",
                    "host": w["host"],
                    "device": w["device"],
                    "port": w["port"],
                    "layer": "network",
                    "start": w["start"],
                    "end": w["end"],
                    "metric": "link_downed_events",
                    "observed": w["count"],
                    "expected": 0.0,
                    "message": f"link went down {w['count']:,.0f} time(s)",
                    "evidence": {
                        "rule": "link_flap.link_downed",
                        "threshold_source": cfg["source_downed"],
                        "count": w["count"],
                        "source": w["source"],
                    },
                }
            )
    states = inp.gauges.filter(pl.col("counter") == "port_state_id")
    if not states.is_empty():
        seq = (
            entity_strings(states)
            .sort("time")
            .group_by(["host", "device", "port"], maintain_order=True)
            .agg(pl.col("time"), pl.col("value"))
        )
        already = {(r["host"], r["device"], r["port"]) for r in rows}
        for s in seq.iter_rows(named=True):
            values, times = s["value"], s["time"]
            transitions = [i for i in range(1, len(values)) if values[i] != values[i - 1]]
            # A flap needs the link to come back: down-for-maintenance ports never return to ACTIVE.
            left_active = any(values[i - 1] == ACTIVE and values[i] != ACTIVE for i in transitions)
            returned = any(values[i] == ACTIVE and values[i - 1] != ACTIVE for i in transitions)
            key = (s["host"], s["device"], s["port"])
            if len(transitions) >= cfg["min_state_transitions"] and left_active and returned and key not in already:
                rows.append(
                    {
                        "kind": KIND,
                        "severity": "critical",
                        "host": s["host"],
                        "device": s["device"],
                        "port": s["port"],
                        "layer": "network",
                        "start": times[transitions[0] - 1],
                        "end": times[transitions[-1]],
                        "metric": "port_state_id",
                        "observed": float(len(transitions)),
                        "expected": 0.0,
                        "message": f"port state changed {len(transitions)} times (left ACTIVE and came back)",
                        "evidence": {
                            "rule": "link_flap.state",
                            "threshold_source": cfg["source_state"],
                            "states": [int(v) for v in values],
                        },
                    }
                )
    _attach_peers(inp, rows)
    return make_findings(rows)


def _attach_peers(inp: AnalysisInput, rows: list[dict]) -> None:
    """Name the far end of each flapping link and say whether it saw the flap too (PDR rule 1)."""
    if not rows:
        return  # the peers table doubles the links table: only build it for a flap to name
    links = inp.fabric.peers()
    if links.is_empty():
        return
    flapped = {(inp.fabric.node_guid(r["host"], r["device"]), r["port"]): r for r in rows}
    for r in rows:
        guid = inp.fabric.node_guid(r["host"], r["device"])
        hit = links.filter((pl.col("node_guid") == guid) & (pl.col("port") == r["port"]))
        if not hit.height:
            continue
        peer = hit.row(0, named=True)
        other = flapped.get((peer["peer_guid"], peer["peer_port"]))
        r["evidence"]["peer"] = {"node_guid": peer["peer_guid"], "port": peer["peer_port"], "name": peer["peer_name"]}
        r["evidence"]["both_ends"] = other is not None
        r["message"] += f"; peer {peer['peer_name']} port {peer['peer_port']}" + (
            " saw it too (cable or transceiver)" if other is not None else ""
        )


def _link_downed(r: pl.DataFrame) -> pl.DataFrame:
    # Only intervals in which the link went down are read (the merge distance is the median interval
    # of those rows), so the healthy intervals - nearly all of them - stay in their partition.
    return rate_rows(r, ["link_downed_events"]).filter(pl.col("delta") > 0)


# a port that went down loses what was in flight: the sender's go-back-N (link_loss_go_back_n)
RELATIONS = (Relation("link_loss_go_back_n", "root", "link_flap", words="link flaps"),)


SPEC = DetectorSpec(
    name=KIND,
    summary="link-downed increments and ACTIVE→down→ACTIVE; the peer port and whether both ends saw it (topology)",
    detect=detect,
    scope="fabric",
    relations=RELATIONS,
    rates_needed=_link_downed,
    defaults={
        "source_downed": f"{NVSENTINEL}: any link_downed increase is fatal; UFM PDR deterministic plugin rule 1, both "
        "ends of the link (https://github.com/Mellanox/ufm_sdk_3.0, plugins/pdr_deterministic_plugin/README.md)",
        "source_state": "NVIDIA Health Validation, InfiniBand checks: an RDMA link outage is CRITICAL "
        "(https://docs.nvidia.com/health-validation/reference/checks/infiniband)",
        "min_state_transitions": 2,
    },
    actions={
        "link_flap": (
            "reseat or replace the cable/transceiver of {entity} (mlxlink -p <port> --show_module; a link that drops "
            "and retrains is a failing cable, module or connector)"
        ),
    },
)

"""``ecn_congestion``: ECN-marked share of received RoCE packets, CNP rates, and DCQCN loop health.

* ``ecn_congestion.marked_ratio``: ``Δnp_ecn_marked_roce_packets / Δreceived RoCE packets`` per NIC
  (packets as in ``packet_loss``: vport or port packets, else bytes / ``mtu_bytes``; undefined on
  an idle NIC). Warning at ``warning_marked_ratio``, critical at ``critical_marked_ratio`` over a
  merged window.
* ``ecn_congestion.cnp_ignored``: ``rp_cnp_ignored`` rising means the reaction point receives CNPs
  but congestion control is off (verify ECN/DCQCN is enabled on the adapter).
* ``ecn_congestion.np_silent``: at least ``min_marks`` ECN-marked packets received while
  ``np_cnp_sent`` stays flat: the notification point does not answer (``ecn/roce_np/enable/<p>``).
* ``ecn_congestion.cnp_balance``: over all NICs observed (two or more), CNPs received by reaction
  points (handled + ignored) below ``min_loop_ratio`` of the CNPs sent by notification points:
  the loop is broken between them (CNPs dropped, or senders not reacting).
* ``ecn_congestion.dcqcn_active`` (info): marks or CNPs present and none of the above: the
  loop's numbers for the NIC (marked share, CNP rates), so a healthy loop is visible too.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import NIC, keyed, typical_interval
from fabricscope.detect._shared import traffic, with_traffic
from fabricscope.fabric.relations import JOB, SAME_LEAF, Chain, Relation, evidence
from fabricscope.incidents.findings import make_findings, merge_windows
from fabricscope.reading.vocabulary import counters_with_role
from fabricscope.sources import DCQCN, default

KIND = "ecn_congestion"

# The DCQCN loop by counter role: RoCE packets the RDMA device received ECN-marked, CNPs the
# notification point sent, CNPs the reaction point handled and ignored. A NIC with several counters
# of one role is judged on its most preferred one, never on their sum.
LOOP_ROLES = {
    "rx_ecn_marked": "marked",
    "tx_cnp": "cnp_sent",
    "rx_cnp_handled": "cnp_handled",
    "rx_cnp_ignored": "cnp_ignored",
}
LOOP = {c: what for role, what in LOOP_ROLES.items() for c in counters_with_role(role)}
_RANK = {c: i for role in LOOP_ROLES for i, c in enumerate(counters_with_role(role))}


def _row(cfg: dict, a: dict, evidence: dict, **kw: object) -> dict:
    return {
        "kind": KIND,
        "host": a["host"],
        "device": a["device"],
        "port": a["port"],
        "priority": None,
        "layer": "network",
        "start": a["start"],
        "end": a["end"],
        **kw,
        "evidence": {"threshold_source": cfg["source"], **evidence},
    }


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Judge ECN marking and the DCQCN loop per NIC."""
    cfg = inp.config[KIND]
    factor = inp.config["merge"]["max_gap_factor"]
    r = keyed(inp.rates.filter(pl.col("counter").is_in(list(LOOP))))
    if r.is_empty():
        return make_findings([])
    r = r.with_columns(
        pl.col("counter").cast(pl.String).replace_strict(LOOP, return_dtype=pl.String).alias("what"),
        pl.col("counter").cast(pl.String).replace_strict(_RANK, return_dtype=pl.Int64).alias("_rank"),
        (typical_interval(inp.rates) * factor).alias("_gap"),
    )
    r = r.filter(pl.col("_rank") == pl.col("_rank").min().over([*NIC, "what"])).drop("_rank")
    rows: list[dict] = []
    # Per-NIC totals over the observation (deltas skip resets; gaps still count, as in link_errors).
    tot = (
        r.filter(pl.col("delta").is_not_null())
        .group_by(NIC)
        .agg(
            pl.col("port").first(),
            pl.col("start").min(),
            pl.col("end").max(),
            *[pl.col("delta").filter(pl.col("what") == w).sum().alias(w) for w in LOOP_ROLES.values()],
            *[(pl.col("what") == w).any().alias(f"has_{w}") for w in LOOP_ROLES.values()],
        )
        # `* 1e-9`, not `/ 1e9`: Polars divides one row by a constant exactly and more rows as a
        # product with its reciprocal, so the span would depend on how many NICs share the partition.
        .with_columns(((pl.col("end") - pl.col("start")).dt.total_nanoseconds() * 1e-9).alias("span_s"))
        .sort(NIC)
    )
    flagged_nics: set[tuple] = set()

    # Marked share of received RoCE packets.
    marked = r.filter((pl.col("what") == "marked") & pl.col("delta").is_not_null())
    if not marked.is_empty():
        m = traffic(inp, marked, "rx", cfg["mtu_bytes"]).with_columns(
            (pl.col("packets_per_s") * pl.col("interval_s")).alias("packets")
        )
        m = m.with_columns(pl.when(pl.col("packets") > 0).then(pl.col("delta") / pl.col("packets")).alias("share"))
        flagged = m.filter(pl.col("share") >= cfg["warning_marked_ratio"])
        if not flagged.is_empty():
            windows = merge_windows(
                flagged,
                keys=NIC,
                max_gap_s=pl.col("_gap"),
                aggs=[
                    pl.col("port").first(),
                    pl.col("delta").sum().alias("marks"),
                    pl.col("packets").sum(),
                    pl.col("share").max().alias("peak"),
                    pl.col("packets_estimated").any().alias("estimated"),
                ],
            ).with_columns((pl.col("marks") / pl.col("packets")).alias("share"))
            for w in windows.iter_rows(named=True):
                flagged_nics.add((w["host"], w["device"], w["_port"]))
                crit = w["share"] >= cfg["critical_marked_ratio"]
                rows.append(
                    _row(
                        cfg,
                        w,
                        severity="critical" if crit else "warning",
                        metric="ecn_marked_ratio",
                        observed=w["share"],
                        expected=cfg["warning_marked_ratio"],
                        message=(
                            f"{w['share']:.1%} of received RoCE packets ECN-marked (peak {w['peak']:.1%}; "
                            f"{w['marks']:,.0f} of {w['packets']:,.0f}{' estimated' if w['estimated'] else ''}): "
                            "switch queues above the ECN threshold, DCQCN throttling senders"
                        ),
                        evidence={
                            "rule": "ecn_congestion.marked_ratio",
                            "marks": w["marks"],
                            "packets": w["packets"],
                            "packets_estimated": bool(w["estimated"]),
                            "peak_ratio": w["peak"],
                            "critical_ratio": cfg["critical_marked_ratio"],
                            "intervals": w["intervals"],
                        },
                    )
                )

    # Reaction point ignoring CNPs: congestion control off.
    ign = r.filter((pl.col("what") == "cnp_ignored") & (pl.col("delta") > 0))
    if not ign.is_empty():
        windows = merge_windows(
            ign,
            keys=NIC,
            max_gap_s=pl.col("_gap"),
            aggs=[pl.col("port").first(), pl.col("delta").sum().alias("ignored"), pl.col("interval_s").sum()],
        )
        for w in windows.iter_rows(named=True):
            flagged_nics.add((w["host"], w["device"], w["_port"]))
            rate = w["ignored"] / w["interval_s"] if w["interval_s"] else None
            rows.append(
                _row(
                    cfg,
                    w,
                    severity="warning",
                    metric="rp_cnp_ignored_packets",
                    observed=rate,
                    expected=0.0,
                    message=(
                        f"{w['ignored']:,.0f} CNPs ignored by the reaction point: congestion control (DCQCN) is off "
                        "on this NIC; verify ECN is enabled on the adapter (ecn/roce_rp/enable/<prio>)"
                    ),
                    evidence={"rule": "ecn_congestion.cnp_ignored", "ignored": w["ignored"], "rate_per_s": rate},
                )
            )

    for a in tot.iter_rows(named=True):
        key = (a["host"], a["device"], a["_port"])
        if a["has_cnp_sent"] and a["marked"] >= cfg["min_marks"] and a["cnp_sent"] == 0:
            flagged_nics.add(key)
            rows.append(
                _row(
                    cfg,
                    a,
                    severity="warning",
                    metric="np_cnp_sent_packets",
                    observed=0.0,
                    expected=None,
                    message=(
                        f"{a['marked']:,.0f} ECN-marked RoCE packets received but no CNP sent: the notification "
                        "point is off (check ecn/roce_np/enable/<prio>); senders are never slowed"
                    ),
                    evidence={"rule": "ecn_congestion.np_silent", "marked": a["marked"], "min_marks": cfg["min_marks"]},
                )
            )

    # Fabric-wide loop balance: CNPs sent by notification points against CNPs reaching reaction points.
    loop = tot.filter(pl.col("has_cnp_sent") & (pl.col("has_cnp_handled") | pl.col("has_cnp_ignored")))
    loop = loop.filter(pl.col("span_s") > 0)
    if loop.height >= 2:
        sent = (loop["cnp_sent"] / loop["span_s"]).sum()
        got = ((loop["cnp_handled"] + loop["cnp_ignored"]) / loop["span_s"]).sum()
        if sent > 0 and got < cfg["min_loop_ratio"] * sent:
            rows.append(
                {
                    "kind": KIND,
                    "severity": "warning",
                    "host": None,
                    "device": None,
                    "port": None,
                    "layer": "network",
                    "start": loop["start"].min(),
                    "end": loop["end"].max(),
                    "metric": "cnp_received_ratio",
                    "observed": got / sent,
                    "expected": cfg["min_loop_ratio"],
                    "message": (
                        f"DCQCN loop broken: reaction points received {got:,.0f} CNP/s of the {sent:,.0f} CNP/s sent "
                        f"by notification points over {loop.height} NICs (CNPs dropped or sent to unobserved NICs)"
                    ),
                    "evidence": {
                        "rule": "ecn_congestion.cnp_balance",
                        "threshold_source": cfg["source"],
                        "cnp_sent_per_s": sent,
                        "cnp_received_per_s": got,
                        "nics": loop.height,
                    },
                }
            )

    # A working loop is worth seeing too: the NIC's marked share and CNP rates, as info.
    active = tot.filter((pl.col("marked") > 0) | (pl.col("cnp_sent") > 0) | (pl.col("cnp_handled") > 0))
    if not active.is_empty():
        share = {}
        if not marked.is_empty():
            m = traffic(inp, marked, "rx", cfg["mtu_bytes"]).with_columns(
                (pl.col("packets_per_s") * pl.col("interval_s")).alias("packets")
            )
            agg = (
                m.filter(pl.col("packets").is_not_null())
                .group_by(NIC)
                .agg(pl.col("delta").sum(), pl.col("packets").sum(), pl.col("packets_estimated").any())
            )
            share = {
                (x["host"], x["device"], x["_port"]): (
                    x["delta"] / x["packets"] if x["packets"] > 0 else None,
                    x["packets_estimated"],
                )
                for x in agg.iter_rows(named=True)
            }
        for a in active.iter_rows(named=True):
            key = (a["host"], a["device"], a["_port"])
            if key in flagged_nics or not a["span_s"]:
                continue
            s, est = share.get(key, (None, False))
            per_s = {w: a[w] / a["span_s"] for w in LOOP_ROLES.values()}
            text = f"{s:.3%}{' (estimated)' if est else ''} of received RoCE packets" if s is not None else "share n/a"
            rows.append(
                _row(
                    cfg,
                    a,
                    severity="info",
                    metric="ecn_marked_ratio",
                    observed=s,
                    expected=cfg["warning_marked_ratio"],
                    message=(
                        # a NIC that only handles CNPs is a reaction point throttled by congestion
                        # elsewhere: "loop active" beside "0 ECN-marked/s" would read as a contradiction
                        f"DCQCN reaction point active: {per_s['cnp_handled']:,.0f} CNP handled/s "
                        f"({per_s['cnp_ignored']:,.0f} ignored/s): this NIC's sending is being rate-limited by "
                        f"congestion at its receivers; none of the RoCE packets it received was ECN-marked"
                        if per_s["marked"] == 0 and per_s["cnp_sent"] == 0 and per_s["cnp_handled"] > 0
                        else f"DCQCN loop active: {per_s['marked']:,.0f} ECN-marked/s ({text}), "
                        f"{per_s['cnp_sent']:,.0f} CNP sent/s, {per_s['cnp_handled']:,.0f} CNP handled/s, "
                        f"{per_s['cnp_ignored']:,.0f} ignored/s"
                    ),
                    evidence={
                        "rule": "ecn_congestion.dcqcn_active",
                        "marked_ratio": s,
                        "packets_estimated": bool(est),
                        **{f"{w}_per_s": v for w, v in per_s.items()},
                        "observed_s": a["span_s"],
                    },
                )
            )
    return make_findings(rows)


def _ecn_loop(r: pl.DataFrame) -> pl.DataFrame:
    # The loop counters and the received traffic the marked share is computed against.
    return with_traffic(r, list(LOOP), ("rx",))


def _cnp_magnitude(root: dict[str, Any], c: dict[str, Any]) -> tuple[bool | None, str]:
    """CNPs a sender handles were sent by a notification point: no more than the congested receiver sent."""
    sent = evidence(root).get("cnp_sent_per_s")
    handled = evidence(c).get("cnp_handled_per_s")
    if not isinstance(sent, (int, float)) or not isinstance(handled, (int, float)):
        return None, "CNP rates not both known: magnitude not checked"
    ok = handled <= 1.2 * sent
    return ok, f"sender handled {handled:,.0f} CNP/s {'<=' if ok else '>'} receiver sent {sent:,.0f}/s (+20%)"


def _direction(f: dict[str, Any]) -> str:
    """Marks arrive at the receiver (notification point); CNPs are handled by senders (reaction points)."""
    ev = evidence(f)
    rule = ev.get("rule")
    if rule == "ecn_congestion.dcqcn_active":
        sent, handled = ev.get("cnp_sent_per_s") or 0.0, ev.get("cnp_handled_per_s") or 0.0
        return "tx" if handled > sent else "rx"
    return "tx" if rule == "ecn_congestion.cnp_ignored" else "rx"


# marks at the receiver root the incast; the senders' CNP handling (info findings) is its footprint
RELATIONS = (
    Relation("incast_ecn", "root", "ecn_congestion:rx"),
    Relation("incast_ecn", "consequence", "ecn_congestion:tx", (SAME_LEAF, JOB), info=True),
)

INCAST_ECN = Chain(
    name="incast_ecn",
    argument=(
        "When several senders converge on one receiver, the switch queue toward it grows past the ECN "
        "threshold and marks packets CE; the receiver (notification point) returns CNPs to the senders "
        "(reaction points), which cut their rate. The marks are on the receiver and the rate cuts on the "
        "senders: one cause, the fan-in."
    ),
    source=(
        "RFC 3168 (ECN); Zhu et al., 'Congestion Control for Large-Scale RDMA Deployments' (DCQCN), "
        "SIGCOMM 2015; NVIDIA documentation 'DCQCN' (np_cnp_sent, rp_cnp_handled)"
    ),
    action="spread the traffic converging on {entity} (placement, more receivers, or rate-limit the senders)",
    title="incast into {entity}: ECN marks and CNPs on {hosts}",
    title_local="incast into {entity}: ECN marks and CNPs on its own host",
    magnitude=_cnp_magnitude,
)


SPEC = DetectorSpec(
    name=KIND,
    summary="ECN-marked share, CNP rates, DCQCN loop health (`rp_cnp_ignored`)",
    detect=detect,
    scope="fabric",
    relations=RELATIONS,
    direction=_direction,
    chains=(INCAST_ECN,),
    rates_needed=_ecn_loop,
    defaults={
        "warning_marked_ratio": 0.01,
        "critical_marked_ratio": 0.10,
        "min_marks": 100,
        "min_loop_ratio": 0.5,
        "mtu_bytes": 4096,
        "source": f"{DCQCN}; marked share 1%/10% and CNP balance 0.5: "
        + default("marks on more than 1% of packets mean a queue above the ECN threshold most of the time"),
    },
    actions={
        "ecn_congestion": INCAST_ECN.action,
        "ecn_congestion:tx": (
            "{entity} sends into a congested receiver: place its peers on other leaves or rate-limit it, and check "
            "its DCQCN parameters (mlxreg / the RoCE CC sysfs knobs)"
        ),
    },
)

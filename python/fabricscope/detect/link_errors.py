"""``link_errors``: physical and link-layer error counters as rates and windows.

Symbol errors, receive errors, remote physical errors, local link integrity, excessive buffer
overrun, transmit discards and link error recoveries. Each counter has a warning rate, a
critical rate and a minimum count (config ``[link_errors.<counter>]``); the sources are the
NVSentinel NIC health monitor rates and ibqueryerrors' "any increase" rule (docs/detectors.md).
Saturated or reset intervals carry no delta and never count as errors (counter_anomaly says so).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings, port_facts, typical_interval
from fabricscope.fabric.relations import CABLE, SAME_PORT, Chain, Relation, loss_rate
from fabricscope.incidents.findings import empty_findings, make_findings, merge_windows
from fabricscope.sources import IBQUERYERRORS, NVSENTINEL, default

KIND = "link_errors"


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find ports whose error counters rise above their thresholds."""
    cfg = inp.config["link_errors"]
    factor = inp.config["merge"]["max_gap_factor"]
    r = inp.rates.filter(pl.col("counter").is_in(list(cfg)) & (pl.col("delta") > 0))
    if r.is_empty():
        return empty_findings()
    spans = entity_strings(
        inp.rates.group_by(["host", "device", "port", "counter"]).agg(
            # `* 1e-9`: Polars divides one group by a constant exactly and more groups as a product
            # with its reciprocal, so a quotient would depend on how many ports share the partition.
            ((pl.col("end").max() - pl.col("start").min()).dt.total_nanoseconds() * 1e-9).alias("span_s")
        )
    )
    r = entity_strings(r.with_columns((typical_interval(inp.rates) * factor).alias("_gap")))
    r = r.with_columns((pl.col("delta") / pl.col("interval_s")).alias("_rate"))
    windows = merge_windows(
        r,
        keys=["host", "device", "port", "counter"],
        max_gap_s=pl.col("_gap"),
        aggs=[
            pl.col("delta").sum().alias("count"),
            pl.col("_rate").max().alias("peak_rate_per_s"),
            pl.col("interval_s").sum().alias("covered_s"),
            pl.col("source").first(),
        ],
    )
    facts = port_facts(inp).select("host", "device", "port", "link_rate_bytes_per_s", "profile")
    windows = windows.join(facts, on=["host", "device", "port"], how="left").join(
        spans, on=["host", "device", "port", "counter"], how="left"
    )
    rows = []
    for w in windows.iter_rows(named=True):
        c = cfg[w["counter"]]
        duration = max(w["covered_s"], 1e-9)
        # Judge the warning rate over at least window_s (NVSentinel's 120/hour is an hourly
        # count), or over the whole observation when it is shorter than that.
        basis_s = max(duration, min(c["window_s"], w["span_s"] or duration))
        mean_rate = w["count"] / basis_s
        if w["count"] < c["min_count"] or mean_rate <= c["warning_per_s"]:
            continue
        critical = w["peak_rate_per_s"] > c["critical_per_s"]
        evidence = {
            "rule": f"link_errors.{w['counter']}",
            "threshold_source": c["source"],
            "warning_per_s": c["warning_per_s"],
            "critical_per_s": c["critical_per_s"],
            "count": w["count"],
            "intervals": w["intervals"],
            "peak_rate_per_s": w["peak_rate_per_s"],
            "rate_basis_s": basis_s,
            "source": w["source"],
        }
        if w["link_rate_bytes_per_s"]:
            # Errors per transmitted bit over the window: a BER estimate (IBTA target 1e-12).
            evidence["ber_estimate"] = w["count"] / (w["link_rate_bytes_per_s"] * 8 * duration)
            evidence["profile"] = w["profile"]
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
                "metric": w["counter"],
                "observed": mean_rate,
                "expected": c["warning_per_s"],
                "message": (
                    f"{w['count']:,.0f} {w['counter'].replace('_', ' ')} in {duration:,.0f} s "
                    f"({mean_rate:.3g}/s, peak {w['peak_rate_per_s']:.3g}/s)"
                ),
                "evidence": evidence,
            }
        )
    return make_findings(rows)


def _loss_magnitude(root: dict[str, Any], c: dict[str, Any]) -> tuple[bool | None, str]:
    """A victim cannot lose more of its packets than the faulty link loses of the packets crossing it.

    Traffic a sender puts across the bad link meets the link's loss probability; a sender also
    talking to healthy peers sees the same or less. Twice the root's rate absorbs estimator noise
    (both are lower bounds from 10 s counter deltas).
    """
    if c["kind"] not in ("packet_loss", "lossy_collapse"):
        return None, "not a loss finding: no loss-rate bound applies"
    pr, pc = root.get("_link_p", loss_rate(root)), loss_rate(c)
    if pr is None or pc is None:
        return None, "loss rate of root or consequence unknown: magnitude not checked"
    ok = pc <= 2.0 * pr
    return ok, f"victim loss p = {pc:.2e} {'<=' if ok else '>'} 2 x root p = {pr:.2e}"


# bit errors root the go-back-N chain; the far end of the cable counts them too (its own finding)
RELATIONS = (
    Relation("link_loss_go_back_n", "root", "link_errors", words="errors and loss"),
    Relation("link_loss_go_back_n", "consequence", "link_errors", (SAME_PORT, CABLE)),
)

LINK_LOSS_GO_BACK_N = Chain(
    name="link_loss_go_back_n",
    argument=(
        "Bit errors on a cable corrupt packets; the receiver drops them (ICRC/VCRC or FCS failure). "
        "InfiniBand RC and RoCEv2 recover with go-back-N: the responder NAKs the first missing PSN and the "
        "requester resends everything after it, so every sender whose traffic crosses the link sees "
        "sequence errors, and goodput falls as 1/(1+pW) with W packets in flight. A ring collective moves "
        "at the speed of its slowest hop, so every rank of the job slows."
    ),
    source=(
        "InfiniBand Architecture Specification Vol. 1, chapter 9 'Transport Layer' (reliable connection: PSN "
        "checking, NAK sequence error, go-back-N retransmission); Mittal et al., 'Revisiting Network Support "
        "for RDMA', SIGCOMM 2018 (go-back-N goodput under loss); Zhu et al., 'Congestion Control for "
        "Large-Scale RDMA Deployments', SIGCOMM 2015"
    ),
    action="replace or reseat the cable/transceiver of {entity} (check both ends with mlxlink / ibdiagnet)",
    title="bad link {entity}: {fault} reaching {hosts}",
    title_local="bad link {entity}: {fault} on its own port",
    magnitude=_loss_magnitude,
    fault="loss",
)


SPEC = DetectorSpec(
    name=KIND,
    summary="symbol, receive, remote-physical, integrity, overrun errors and discards above rate "
    "thresholds; BER estimate",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    chains=(LINK_LOSS_GO_BACK_N,),
    defaults={
        # warning_per_s: rate for a warning, averaged over the finding's window but at least over
        # window_s (or the whole observation when shorter); critical_per_s: peak rate of one
        # sampling interval for a critical; min_count: smallest increase that may raise anything.
        "symbol_errors": {
            "warning_per_s": 120 / 3600,
            "window_s": 3600.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: symbol_error > 120/hour (IBTA BER 1e-12) drains; > 10/s degradation",
        },
        "port_rcv_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: port_rcv_errors > 10/s",
        },
        "port_rcv_remote_physical_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; critical above 10/s: " + default("the same rate as port_rcv_errors"),
        },
        "port_xmit_discards": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 100.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: port_xmit_discards > 100/s",
        },
        "local_link_integrity_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 0.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: any increase of local_link_integrity_errors is fatal",
        },
        "excessive_buffer_overrun_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 0.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: any increase of excessive_buffer_overrun_errors is fatal",
        },
        "link_error_recovery_events": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 5 / 60,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: link_error_recovery > 5/min",
        },
    },
    actions={
        "link_errors": LINK_LOSS_GO_BACK_N.action,
    },
)

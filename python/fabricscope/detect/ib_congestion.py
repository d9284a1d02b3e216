"""``ib_congestion``: PortXmitWait as the fraction of time a port had data but no credits.

``wait_ratio = rate(port_xmit_wait) x bits_per_tick / (8 x link rate)``; the estimated lost
bandwidth is ``wait_ratio x link rate``. The tick conversion is generation specific
(``bits_per_tick``, default 64 after ibdiagnet's congestion assessment). A 32-bit PortXmitWait
pegs within seconds under congestion at NDR rates; such intervals have no rate here and are
reported by counter_anomaly with the advice to read the 64-bit extended counter.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings, port_facts, typical_interval
from fabricscope.fabric.profiles import get_profile
from fabricscope.fabric.relations import BELOW_SPINE, CABLE, JOB, SAME_LEAF, Chain, Relation
from fabricscope.incidents.findings import make_findings, merge_windows
from fabricscope.reading.vocabulary import counters_with_role
from fabricscope.sources import UFM_CBW, XMITWAIT_64, default

KIND = "ib_congestion"
# Bytes the port sent, by role, most preferred first (IB data counters are scaled to bytes by the
# rate engine); a port's most preferred counter with a rate is used, so two copies never average.
SENT = counters_with_role("tx_bytes")


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find congested InfiniBand ports."""
    cfg = inp.config["ib_congestion"]
    factor = inp.config["merge"]["max_gap_factor"]
    w = inp.rates.filter(pl.col("counter") == "port_xmit_wait_ticks")
    if w.is_empty():
        return make_findings([])
    facts = port_facts(inp).select("host", "device", "port", "link_rate_bytes_per_s", "profile")
    default = inp.profile or get_profile("ndr400")
    w = entity_strings(w.with_columns((typical_interval(inp.rates) * factor).alias("_gap")))
    w = w.join(facts, on=["host", "device", "port"], how="left").with_columns(
        pl.col("link_rate_bytes_per_s").fill_null(default.line_rate_bytes_per_s).alias("_line"),
        pl.col("link_rate_bytes_per_s").is_null().alias("_assumed_rate"),
    )
    w = w.with_columns(
        (pl.col("delta") * cfg["bits_per_tick"] / (pl.col("_line") * 8 * pl.col("interval_s"))).alias("_ratio")
    )
    flagged = w.filter(pl.col("_ratio") >= cfg["warning_wait_ratio"])
    if flagged.is_empty():
        return make_findings([])
    windows = merge_windows(
        flagged,
        keys=["host", "device", "port"],
        max_gap_s=pl.col("_gap"),
        aggs=[
            pl.col("_ratio").max().alias("peak_ratio"),
            ((pl.col("_ratio") * pl.col("interval_s")).sum() / pl.col("interval_s").sum()).alias("mean_ratio"),
            pl.col("_line").first().alias("line"),
            pl.col("_assumed_rate").first().alias("assumed"),
            pl.col("profile").first(),
        ],
    )
    sent = (
        entity_strings(inp.rates.filter(pl.col("counter").is_in(SENT) & pl.col("rate_per_s").is_not_null()))
        .with_columns(
            pl.col("counter").replace_strict({c: i for i, c in enumerate(SENT)}, return_dtype=pl.Int64).alias("_rank")
        )
        .filter(pl.col("_rank") == pl.col("_rank").min().over("host", "device", "port"))
        .select("host", "device", "port", "start", "end", "interval_s", "rate_per_s")
    )
    rows = []
    for x in windows.iter_rows(named=True):
        critical = x["peak_ratio"] >= cfg["critical_wait_ratio"]
        lost = x["mean_ratio"] * x["line"]
        # What the port moved meanwhile: waiting for credits on some packets overlaps sending others,
        # so the bandwidth lost is never more than what the port left unused.
        during = sent.filter(
            (pl.col("host") == x["host"])
            & (pl.col("device") == x["device"])
            & (pl.col("port") == x["port"])
            & (pl.col("start") >= x["start"])
            & (pl.col("end") <= x["end"])
        )
        moved = (
            float((during["rate_per_s"] * during["interval_s"]).sum() / during["interval_s"].sum())
            if during.height and during["interval_s"].sum() > 0
            else None
        )
        lost_text = f"~{lost / 1e9:.1f} GB/s of {x['line'] / 1e9:.0f} GB/s lost"
        if moved is not None and moved + lost > x["line"] * 1.01:
            lost = max(x["line"] - moved, 0.0)
            lost_text = (
                f"the port still moved {moved / 1e9:.1f} GB/s ({moved / x['line']:.0%} of {x['line'] / 1e9:.0f} GB/s): "
                f"the waits overlap sending, so at most ~{lost / 1e9:.1f} GB/s was lost"
            )
        elif moved is not None:
            lost_text += f" (the port moved {moved / 1e9:.1f} GB/s)"
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if critical else "warning",
                "host": x["host"],
                "device": x["device"],
                "port": x["port"],
                "layer": "network",
                "start": x["start"],
                "end": x["end"],
                "metric": "xmit_wait_ratio",
                "observed": x["mean_ratio"],
                "expected": cfg["warning_wait_ratio"],
                "message": (
                    f"port waited for credits {x['mean_ratio']:.0%} of the time "
                    f"(peak {x['peak_ratio']:.0%}): {lost_text}"
                ),
                "evidence": {
                    "rule": "ib_congestion.xmit_wait_ratio",
                    "threshold_source": cfg["source"],
                    "bits_per_tick": cfg["bits_per_tick"],
                    "lost_bytes_per_s": lost,
                    "sent_bytes_per_s": moved,
                    "link_rate_bytes_per_s": x["line"],
                    "link_rate_assumed": bool(x["assumed"]),
                    "profile": x["profile"] or default.name,
                    "intervals": x["intervals"],
                },
            }
        )
    return make_findings(rows)


# a spine port starved of credits roots the spreading; a port down on a leaf starves its leaf-mates
RELATIONS = (
    Relation("spine_credit_starvation", "root", "ib_congestion"),
    Relation("spine_credit_starvation", "consequence", "ib_congestion", (BELOW_SPINE,)),
    Relation("link_loss_go_back_n", "consequence", "ib_congestion", (CABLE, SAME_LEAF, JOB)),
)

SPINE_CREDIT_STARVATION = Chain(
    name="spine_credit_starvation",
    argument=(
        "InfiniBand is credit based: a port transmits only with receive buffer credits from its peer. A "
        "spine port starved of credits (PortXmitWait rising) stops draining the leaf uplinks feeding it, "
        "so the leaves below and the HCAs behind them wait for credits in turn (congestion spreading)."
    ),
    source=(
        "InfiniBand Architecture Specification Vol. 1, chapter 7 'Link Layer' (credit-based flow control) "
        "and chapter 16 'General Services' (PortCounters PortXmitWait); Pfister and Norton, 'Hot Spot "
        "Contention and Combining in Multistage Interconnection Networks', IEEE Trans. Computers, 1985 "
        "(tree saturation)"
    ),
    action="find the hot destination behind {entity} (UFM/ibdiagnet congestion report) and rebalance routing",
    title="credit starvation at spine {entity}: congestion on {hosts}",
    title_local="credit starvation at spine {entity}: {n} port(s) waiting for credits",
)


SPEC = DetectorSpec(
    name=KIND,
    summary="PortXmitWait as share of time waiting for credits and bandwidth lost",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    chains=(SPINE_CREDIT_STARVATION,),
    defaults={
        "bits_per_tick": 64,
        "warning_wait_ratio": 0.10,
        "critical_wait_ratio": 0.50,
        "source": f"{UFM_CBW}; tick conversion: {XMITWAIT_64}; critical at 50%: "
        + default("half the time without credits halves the port's capacity"),
    },
    actions={
        "ib_congestion": SPINE_CREDIT_STARVATION.action,
    },
)

"""``counter_anomaly`` (info): resets, saturated counters, wraps and sampling gaps.

These are facts about the data, not faults of the fabric, but they explain why a rate is missing
(a pegged 32-bit counter hides errors; a reset loses an interval) and what to fix in collection.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings
from fabricscope.findings import make_findings
from fabricscope.rates import overflow_table
from fabricscope.sources import default

KIND = "counter_anomaly"

_ADVICE = {
    "saturated": "counter pegged at its maximum: values carry no information; read extended (64-bit) "
    "counters (perfquery -x, counters_ext) or clear counters after reading",
    "reset": "counter went backwards: driver reload, counter clear or reboot; the interval was dropped",
    "wrapped": "counter wrapped at its width and was unwrapped",
    "gap": "sampling gap longer than the usual interval: no rate over it",
}


def _pegged_readings(inp: AnalysisInput) -> pl.DataFrame:
    """Series with a reading pegged at the register maximum, even with a single snapshot."""
    s = inp.samples.filter(pl.col("is_counter") & pl.col("value_u64").is_not_null())
    if s.is_empty():
        return s
    return (
        s.join(overflow_table(), on="counter", how="inner")
        .filter(pl.col("overflow_mode").is_in(["saturate", "wide"]))
        .filter((pl.col("value_u64") // pl.col("scale").cast(pl.UInt64)) == pl.col("overflow_max"))
        .pipe(entity_strings)
        .group_by(["host", "device", "port", "priority", "counter"], maintain_order=True)
        .agg(
            pl.len().alias("saturated"),
            pl.col("time").min().alias("saturated_first"),
            pl.col("time").max().alias("saturated_last"),
            pl.col("source").cast(pl.String).min(),  # not .first(): row order differs between engines
            pl.col("overflow_bits").first().alias("bits"),
        )
    )


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Summarise data-quality flags per series."""
    rows = []
    for a in _pegged_readings(inp).iter_rows(named=True):
        rows.append(
            {
                "kind": KIND,
                "severity": "info",
                "host": a["host"],
                "device": a["device"],
                "port": a["port"],
                "priority": a["priority"],
                "layer": "network",
                "start": a["saturated_first"],
                "end": a["saturated_last"],
                "metric": a["counter"],
                "observed": float(a["saturated"]),
                "expected": 0.0,
                "message": (
                    f"{a['counter']}: saturated, {a['saturated']} reading(s) at 2^{a['bits']}-1: {_ADVICE['saturated']}"
                ),
                "evidence": {
                    "rule": "counter_anomaly.saturated",
                    "threshold_source": inp.config[KIND]["source"],
                    "readings": a["saturated"],
                    "register_bits": a["bits"],
                    "source": a["source"],
                },
            }
        )
    r = inp.rates
    if r.is_empty():
        return make_findings(rows)
    agg = (
        entity_strings(r)
        .group_by(["host", "device", "port", "priority", "counter"], maintain_order=True)
        .agg(
            *[pl.col(f).sum().alias(f) for f in _ADVICE],
            *[pl.col("end").filter(pl.col(f)).min().alias(f"{f}_first") for f in _ADVICE],
            *[pl.col("end").filter(pl.col(f)).max().alias(f"{f}_last") for f in _ADVICE],
            pl.col("source").cast(pl.String).min(),  # not .first(): row order differs between engines
        )
    )
    for a in agg.iter_rows(named=True):
        for flag, advice in _ADVICE.items():
            n = a[flag]
            # Saturation is reported from the readings themselves (above), once per series.
            if not n or flag == "saturated":
                continue
            rows.append(
                {
                    "kind": KIND,
                    "severity": "info",
                    "host": a["host"],
                    "device": a["device"],
                    "port": a["port"],
                    "priority": a["priority"],
                    "layer": "network",
                    "start": a[f"{flag}_first"],
                    "end": a[f"{flag}_last"],
                    "metric": a["counter"],
                    "observed": float(n),
                    "expected": 0.0,
                    "message": f"{a['counter']}: {n} {flag} interval(s): {advice}",
                    "evidence": {
                        "rule": f"counter_anomaly.{flag}",
                        "threshold_source": inp.config[KIND]["source"],
                        "intervals": n,
                        "source": a["source"],
                    },
                }
            )
    return make_findings(rows)


SPEC = DetectorSpec(
    name=KIND,
    summary="resets, saturated registers, wraps, sampling gaps, with what to fix in collection",
    detect=detect,
    scope="partition",
    defaults={"source": default("the rate engine's flags: resets, saturated registers, wraps, sampling gaps")},
)

"""Fabric summary of many findings: per kind, how many, on how many hosts, and the worst few.

On a fabric of thousands of hosts a healthy run still has one info finding per host (the
bottleneck verdict, for instance), and a fabric-wide problem gives one warning per port. Listing
each one buries the verdict; the terminal gets one line per kind and severity with the worst
few places instead. Every finding stays in ``--json``.
"""

from __future__ import annotations

import polars as pl

from fabricscope.incidents.severity import Severity

__all__ = ["MAX_LISTED", "fabric_summary"]

MAX_LISTED = 50
"""More findings than this are summarised per kind instead of listed one per line."""


def _place(host: str | None, device: str | None, port: int | None) -> str:
    bits = [x for x in (host, device) if x]
    if port is not None:
        bits.append(f"port {port}")
    return " ".join(bits) or "-"


def _observed(observed: float | None, metric: str | None) -> str:
    if observed is None:
        return ""
    text = f"{observed:.0%}" if (metric or "").endswith("_ratio") else f"{observed:.4g}"
    return f" ({text})"


def fabric_summary(findings: pl.DataFrame, worst: int = 3) -> list[str]:
    """One line per (kind, severity), most severe and most frequent first, with its worst places.

    "Worst" is the largest ``observed`` value of the kind (its metric: a rate, a ratio, a
    count); findings without one keep their order.

    Example:
        >>> import polars as pl
        >>> from fabricscope.incidents.findings import FINDINGS_SCHEMA
        >>> rows = [{"kind": "bottleneck", "severity": "info", "host": f"h{i}", "observed": i / 10,
        ...          "metric": "utilisation_ratio"} for i in range(5)]
        >>> fabric_summary(pl.DataFrame(rows, schema=FINDINGS_SCHEMA, strict=False), worst=2)
        ['info  bottleneck: 5 finding(s) on 5 host(s); worst: h4 (40%), h3 (30%)']
    """
    if findings.is_empty():
        return []
    ranked = findings.with_columns((-Severity.rank_expr()).alias("_rank"))
    groups = (
        ranked.group_by("kind", "severity", "_rank", maintain_order=True)
        .agg(pl.len().alias("n"), pl.col("host").drop_nulls().n_unique().alias("hosts"))
        .sort(["_rank", "n", "kind"], descending=[False, True, False])
    )
    lines = []
    for g in groups.iter_rows(named=True):
        top = (
            ranked.filter((pl.col("kind") == g["kind"]) & (pl.col("severity") == g["severity"]))
            .sort("observed", descending=True, nulls_last=True, maintain_order=True)
            .head(worst)
        )
        places = ", ".join(
            _place(r["host"], r["device"], r["port"]) + _observed(r["observed"], r["metric"])
            for r in top.iter_rows(named=True)
        )
        lines.append(
            f"{Severity(g['severity']).mark:<4}  {g['kind']}: {g['n']:,} finding(s) on "
            f"{g['hosts']:,} host(s); worst: {places}"
        )
    return lines

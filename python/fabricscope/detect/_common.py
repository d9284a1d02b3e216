"""Helpers shared by detectors (entity columns, window merging, port facts)."""

from __future__ import annotations

import polars as pl

from fabricscope.detect import AnalysisInput
from fabricscope.profiles import profile_for_port

PORT_KEYS = ["host", "device", "port"]


def entity_strings(df: pl.DataFrame) -> pl.DataFrame:
    """Cast categorical entity columns to strings and ports/priorities to Int64 for the contract."""
    casts = []
    for c in ("host", "device", "counter", "source"):
        if c in df.columns:
            casts.append(pl.col(c).cast(pl.String))
    for c in ("port", "priority"):
        if c in df.columns:
            casts.append(pl.col(c).cast(pl.Int64))
    return df.with_columns(casts) if casts else df


def typical_interval(rates: pl.DataFrame) -> pl.Expr:
    """Per-series median interval (seconds), as a window expression over the rates frame."""
    del rates
    return pl.col("interval_s").median().over(["host", "device", "port", "priority", "counter", "source"])


def port_facts(inp: AnalysisInput) -> pl.DataFrame:
    """Per port: latest link rate (bytes/s), lanes, state, link layer and the detected profile."""
    g = inp.gauges
    latest = (
        g.sort("time")
        .group_by([*PORT_KEYS, "counter"])
        .agg(pl.col("value").last())
        .pivot(on="counter", index=PORT_KEYS, values="value")
        if not g.is_empty()
        else pl.DataFrame(schema={"host": pl.Categorical(), "device": pl.Categorical(), "port": pl.UInt16})
    )
    for col in ("link_rate_bytes_per_s", "link_width_lanes", "port_state_id", "port_phys_state_id"):
        if col not in latest.columns:
            latest = latest.with_columns(pl.lit(None, pl.Float64).alias(col))
    attrs = inp.attributes
    if not attrs.is_empty():
        ll = (
            attrs.filter(pl.col("key") == "link_layer")
            .sort("time")
            .group_by(PORT_KEYS)
            .agg(pl.col("value").last().alias("link_layer"))
        )
        latest = latest.join(ll, on=PORT_KEYS, how="left") if not latest.is_empty() else latest
    if "link_layer" not in latest.columns:
        latest = latest.with_columns(pl.lit(None, pl.String).alias("link_layer"))
    latest = entity_strings(latest)
    profiles = []
    for row in latest.iter_rows(named=True):
        lanes = int(row["link_width_lanes"]) if row["link_width_lanes"] is not None else None
        p = inp.profile or profile_for_port(row["link_layer"], row["link_rate_bytes_per_s"], lanes)
        profiles.append(p.name if p else None)
    return latest.with_columns(pl.Series("profile", profiles, dtype=pl.String))

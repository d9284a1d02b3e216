"""Helpers shared by detectors (entity columns, window merging, port facts)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from fabricscope.detect._base import AnalysisInput
from fabricscope.fabric.profiles import profile_for_port
from fabricscope.reading.vocabulary import counters_with_role

PORT_KEYS = ["host", "device", "port"]

# The gauges every port fact row has a column for (null when the port has none), by role.
LINK_FACTS = tuple(
    c for role in ("link_speed", "link_width", "link_state", "link_phys_state") for c in counters_with_role(role)
)
NIC = ["host", "device", "_port"]
"""Join keys of a NIC port (``_port`` is the port with null as -1, so joins match netdevs)."""


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
    for col in LINK_FACTS:
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


# Counters only an Ethernet port has: 802.3x/802.1Qbb pause, RoCE ECN/CNP (DCQCN), the mlx5 physical
# and per-priority Ethernet counters, and RoCE packet captures.
_ETHERNET_ONLY = r"pause|roce|cnp|^phy_|^prio_|^capture_"


def transport_names(inp: AnalysisInput) -> dict[tuple[str, str | None], str]:
    """(host, device) -> ``InfiniBand`` or ``RoCE``; (host, None) for the host's other devices.

    The same mlx5 loss counters count InfiniBand RC and RoCEv2 transport errors, so a message names
    the transport the port runs: its sysfs ``link_layer`` (``InfiniBand`` or ``Ethernet``) when an
    input states it, else ``RoCE`` when the device (or another device of its host: the netdev of
    an RDMA device) has Ethernet-only counters (pause, ECN/CNP, PHY). Otherwise the transport is
    unknown and :func:`transport_name` says ``RDMA``.
    """
    out: dict[tuple[str, str | None], str] = {}
    if not inp.rates.is_empty() and "counter" in inp.rates.columns:
        eth = (
            inp.rates.select(pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), "counter")
            .unique()
            .filter(pl.col("counter").cast(pl.String).str.contains(_ETHERNET_ONLY))
        )
        for h, d, _ in eth.iter_rows():
            out[(h, d)] = out[(h, None)] = "RoCE"
    attrs = inp.attributes
    if not attrs.is_empty():
        ll = attrs.filter(pl.col("key").cast(pl.String) == "link_layer").select(
            pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("value").cast(pl.String)
        )
        for h, d, v in ll.iter_rows():
            name = {"infiniband": "InfiniBand", "ethernet": "RoCE"}.get((v or "").strip().lower())
            if name and h and d:
                out[(h, d)] = name
    return out


def transport_name(names: dict[tuple[str, str | None], str], host: str | None, device: str | None) -> str:
    """The transport a port's loss happens on: ``InfiniBand``, ``RoCE``, else ``RDMA`` (link layer unknown)."""
    return names.get((str(host), str(device))) or names.get((str(host), None)) or "RDMA"


def keyed(df: pl.DataFrame) -> pl.DataFrame:
    """Entity columns as strings plus ``_port``/``_prio`` join keys (null as -1)."""
    df = entity_strings(df)
    cols = []
    if "port" in df.columns:
        cols.append(pl.col("port").fill_null(-1).alias("_port"))
    if "priority" in df.columns:
        cols.append(pl.col("priority").fill_null(-1).alias("_prio"))
    return df.with_columns(cols)


def series_of(inp: AnalysisInput, counters: Sequence[str]) -> pl.DataFrame:
    """Rated intervals of some counters, keyed, with a ``_rank`` of each counter's preference."""
    rank = {c: i for i, c in enumerate(counters)}
    r = keyed(rate_rows(inp.rates, counters))
    return r.with_columns(pl.col("counter").replace_strict(rank, return_dtype=pl.Int64).alias("_rank"))


def preferred(df: pl.DataFrame, by: Sequence[str] = NIC) -> pl.DataFrame:
    """Keep, per entity, the rows of the most preferred counter that has any rate."""
    best = df.filter(pl.col("rate_per_s").is_not_null()).group_by(list(by)).agg(pl.col("_rank").min().alias("_best"))
    return df.join(best, on=list(by), how="inner").filter(pl.col("_rank") == pl.col("_best")).drop("_best")


def attach_rate(base: pl.DataFrame, other: pl.DataFrame, name: str, by: Sequence[str] = NIC) -> pl.DataFrame:
    """Add column ``name``: the rate of ``other`` over its interval that contains ``base``'s end.

    Counters of one snapshot share intervals exactly; when one series missed a reading its
    longer interval still covers the base interval and its average rate is used. Null when no
    interval of ``other`` covers the base interval's end (or that interval has no rate).
    """
    o = (
        other.select(
            *by,
            pl.col("start").alias("_o_start"),
            pl.col("end").alias("_o_end"),
            pl.col("rate_per_s").alias(name),
        )
        .unique(subset=[*by, "_o_end"], keep="first")
        .sort("_o_end")
    )
    if name in base.columns:
        base = base.drop(name)
    j = base.sort("end").join_asof(
        o, left_on="end", right_on="_o_end", by=list(by), strategy="forward", check_sortedness=False
    )
    return j.with_columns(pl.when(pl.col("_o_start") < pl.col("end")).then(pl.col(name)).alias(name)).drop(
        "_o_start", "_o_end"
    )


def rate_rows(r: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """Rate (or sample) rows of some counters, in their order.

    A categorical ``counter`` is compared by dictionary code (Polars looks the names up once):
    casting every row to a string first costs ten times more on millions of rows. Fabric-wide
    detectors declare with this what one partition must ship to them.
    """
    return r.filter(pl.col("counter").is_in(list(names)))

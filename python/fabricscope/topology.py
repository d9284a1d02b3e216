"""Fabric topology: which port is cabled to which.

Links come from ``ibnetdiscover -p``, ``iblinkinfo`` or ``ibdiagnet2.db_csv`` (the ``links``
table, ``docs/schema.md``).

Example:
    >>> from fabricscope.topology import topology
    >>> df = topology("sample_traces/ib")
    >>> df.select("node_name", "port", "peer_node_name", "tier", "peer_tier").row(0)
    ('gpu01 mlx5_0', 1, 'MF0;ib-leaf01:MQM9700/U1', 'hca', 'leaf')
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import polars as pl

from fabricscope.io import links_schema
from fabricscope.loader import load

__all__ = ["LINKS_SCHEMA", "format_topology", "topology"]

LINKS_SCHEMA = links_schema()
"""The links table's columns (the Rust core's schema)."""

_TIER_RANK = {"hca": 0, "leaf": 1, "spine": 2, "router": 3}


def node_key(prefix: str = "") -> pl.Expr:
    """A link end's node: its GUID, else (an Ethernet end from LLDP) its name."""
    return pl.coalesce(pl.col(prefix + "node_guid"), pl.col(prefix + "node_name"))


def port_key(prefix: str = "") -> pl.Expr:
    """A link end's port within its node: the number, else (Ethernet) the interface name."""
    return pl.coalesce(pl.col(prefix + "port").cast(pl.String), pl.col(prefix + "port_name"))


def _retier(df: pl.DataFrame) -> pl.DataFrame:
    """Recompute tiers over the union of inputs and re-orient ends, low tier first.

    A switch cabled to an HCA (not a SHARP aggregation node) is a leaf, other switches are spines.
    """
    ends = pl.concat(
        [
            df.select(
                guid=node_key(a),
                name=pl.col(a + "node_name"),
                kind=pl.col(a + "node_type"),
                peer_kind=pl.col(b + "node_type"),
                peer_name=pl.col(b + "node_name"),
            )
            for a, b in (("", "peer_"), ("peer_", ""))
        ]
    )
    aggregation = pl.col("peer_name").fill_null("").str.to_lowercase().str.contains("aggregation node")
    leaves = set(
        ends.filter((pl.col("kind") == "switch") & (pl.col("peer_kind") == "hca") & ~aggregation)["guid"].to_list()
    )

    def tier(prefix: str) -> pl.Expr:
        kind = pl.col(prefix + "node_type")
        return (
            pl.when(kind == "hca")
            .then(pl.lit("hca"))
            .when(kind == "router")
            .then(pl.lit("router"))
            .when((kind == "switch") & node_key(prefix).is_in(list(leaves)))
            .then(pl.lit("leaf"))
            .when(kind == "switch")
            .then(pl.lit("spine"))
            .otherwise(pl.lit(None, dtype=pl.String))
        )

    df = df.with_columns(tier=tier(""), peer_tier=tier("peer_"))
    rank_a = pl.col("tier").replace_strict(_TIER_RANK, default=4, return_dtype=pl.Int8)
    rank_b = pl.col("peer_tier").replace_strict(_TIER_RANK, default=4, return_dtype=pl.Int8)
    swap = (rank_b < rank_a) | (
        (rank_b == rank_a)
        & (
            (node_key("peer_") < node_key())
            | ((node_key("peer_") == node_key()) & (pl.col("peer_port") < pl.col("port")))
        )
    )
    end_cols = ["node_guid", "port", "node_name", "node_type", "lid", "tier", "port_name"]
    df = df.with_columns(
        [pl.when(swap).then(pl.col("peer_" + c)).otherwise(pl.col(c)).alias(c) for c in end_cols]
        + [pl.when(swap).then(pl.col(c)).otherwise(pl.col("peer_" + c)).alias("peer_" + c) for c in end_cols]
    )
    return df


def topology(paths: str | PathLike[str] | Sequence[str | PathLike[str]], *, strict: bool = True) -> pl.DataFrame:
    """The links of a fabric, one row per cable.

    Reads every input under ``paths`` (any format; ``ibnetdiscover``, ``iblinkinfo``, ``ibdiagnet2`` and,
    for RoCE, ``lldpctl`` and SONiC ``show lldp table`` contribute links). A link seen in several inputs
    is kept once (the first input that names it wins); tiers are recomputed over all inputs together.

    Args:
        paths: Files or directories.
        strict: Raise on the first malformed record (default) or skip and count bad records.

    Returns:
        A DataFrame with the ``links`` schema (:data:`LINKS_SCHEMA`), sorted by the first end;
        empty when no input describes links.

    Example:
        >>> from fabricscope.topology import topology
        >>> df = topology("sample_traces/ib")
        >>> df.height, sorted(set(df["tier"].to_list()))
        (8, ['hca', 'leaf'])
    """
    res = load(paths, strict=strict)
    links = res.tables.get("links")
    if links is None or links.height == 0:
        return pl.DataFrame(schema=LINKS_SCHEMA)
    links = links.select([pl.col(c).cast(t) for c, t in LINKS_SCHEMA.items()])
    a = pl.concat_str([node_key(), port_key()], separator=":")
    b = pl.concat_str([node_key("peer_"), port_key("peer_")], separator=":")
    key = pl.concat_str([pl.min_horizontal(a, b), pl.max_horizontal(a, b)], separator="|")
    links = links.with_columns(_key=key).unique(subset="_key", keep="first", maintain_order=True).drop("_key")
    out = _retier(links).with_columns(_a=node_key(), _b=node_key("peer_"), _pa=port_key(), _pb=port_key("peer_"))
    return out.sort("_a", "port", "_pa", "_b", "peer_port", "_pb").drop("_a", "_b", "_pa", "_pb")


def format_topology(df: pl.DataFrame, *, width: int | None = None) -> str:
    """A printable table of links: one line per cable, low tier first, with downgrades marked.

    Args:
        df: A frame from :func:`topology`.
        width: Wrap long cells to fit this many characters (None: never wrap).

    Returns:
        Text with a header line and a rule; ``(no links)`` for an empty frame.

    Example:
        >>> from fabricscope.topology import format_topology, topology
        >>> print(format_topology(topology("sample_traces/ib")).splitlines()[0])
        tier  node                   port  peer tier  peer node              port  link    Gb/s  note
    """
    from fabricscope._text_table import text_table

    if df.height == 0:
        return "(no links)"

    def name(guid: str, node: str | None) -> str:
        return node if node else guid

    rows = []
    for r in df.iter_rows(named=True):
        link = " ".join(x for x in (r["width"], r["speed"]) if x) or "?"
        could = " ".join(x for x in (r["supported_width"], r["supported_speed"]) if x)
        rows.append(
            [
                r["tier"] or "?",
                name(r["node_guid"], r["node_name"]),
                r["port"] if r["port"] is not None else r.get("port_name"),
                r["peer_tier"] or "?",
                name(r["peer_node_guid"], r["peer_node_name"]),
                r["peer_port"] if r["peer_port"] is not None else r.get("peer_port_name"),
                link,
                None if r["data_rate_gbps"] is None else round(r["data_rate_gbps"]),
                f"could be {could}" if could and could != link else "",
            ]
        )
    header = ["tier", "node", "port", "peer tier", "peer node", "port", "link", "Gb/s", "note"]
    return text_table(header, rows, width=width)

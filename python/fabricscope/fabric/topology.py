"""Fabric topology: which port is cabled to which.

Links come from ``ibnetdiscover -p``, ``iblinkinfo`` or ``ibdiagnet2.db_csv`` (the ``links``
table, ``docs/schema.md``).

Example:
    >>> from fabricscope.fabric.topology import topology
    >>> df = topology("sample_traces/ib")
    >>> df.select("node_name", "port", "peer_node_name", "tier", "peer_tier").row(0)
    ('gpu01 mlx5_0', 1, 'MF0;ib-leaf01:MQM9700/U1', 'hca', 'leaf')
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import polars as pl

from fabricscope.fabric.model import merged_links
from fabricscope.reading.load import load
from fabricscope.reading.scan import links_schema

__all__ = ["LINKS_SCHEMA", "format_topology", "topology"]

LINKS_SCHEMA = links_schema()
"""The links table's columns (the Rust core's schema)."""


def topology(paths: str | PathLike[str] | Sequence[str | PathLike[str]], *, strict: bool = True) -> pl.DataFrame:
    """The links of a fabric, one row per cable.

    Reads every input under ``paths`` (any format; ``ibnetdiscover``, ``iblinkinfo``, ``ibdiagnet2`` and,
    for RoCE, ``lldpctl`` and SONiC ``show lldp table`` contribute links). A link seen in several inputs
    is kept once (the first input that names it keeps its facts, later ones fill what it left out);
    tiers are computed over all inputs together (:func:`fabricscope.fabric.model.merged_links`).

    Args:
        paths: Files or directories.
        strict: Raise on the first malformed record (default) or skip and count bad records.

    Returns:
        A DataFrame with the ``links`` schema (:data:`LINKS_SCHEMA`), sorted by the first end;
        empty when no input describes links.

    Example:
        >>> from fabricscope.fabric.topology import topology
        >>> df = topology("sample_traces/ib")
        >>> df.height, sorted(set(df["tier"].to_list()))
        (8, ['hca', 'leaf'])
    """
    # load() has named host-less inputs by their paths; the links are merged and tiered by the Rust
    # core as every analysis' fabric model has them (no name joining needed for that).
    return merged_links([load(paths, strict=strict).tables.get("links")])


def format_topology(df: pl.DataFrame, *, width: int | None = None) -> str:
    """A printable table of links: one line per cable, low tier first, with downgrades marked.

    Args:
        df: A frame from :func:`topology`.
        width: Wrap long cells to fit this many characters (None: never wrap).

    Returns:
        Text with a header line and a rule; ``(no links)`` for an empty frame.

    Example:
        >>> from fabricscope.fabric.topology import format_topology, topology
        >>> print(format_topology(topology("sample_traces/ib")).splitlines()[0])
        tier  node                   port  peer tier  peer node              port  link    Gb/s  note
    """
    from fabricscope.doors._text_table import text_table

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

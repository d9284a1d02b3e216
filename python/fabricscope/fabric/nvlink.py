"""NVLink domains: the GPUs one NVSwitch fabric joins, named by ClusterUUID and clique.

``nvidia-smi -q`` prints each GPU's fabric registration (``Fabric``: State, Status, CliqueId,
ClusterUUID). GPUs with one ClusterUUID and one CliqueId share an NVLink domain (an NVL72 rack:
18 compute trays of 4 GPUs joined by 9 NVSwitch trays). A zero ClusterUUID (an HGX H100 board,
where the NVSwitches sit on the baseboard) names no multi-node domain: the host's GPUs are its own
domain.
"""

from __future__ import annotations

import polars as pl

__all__ = ["DOMAIN_KEYS", "NULL_UUID", "domain_label", "gpu_domains", "latest_gpu_attributes"]

DOMAIN_KEYS = ("fabric_cluster_uuid", "fabric_clique_id")
"""The GPU attributes that place a GPU in its NVLink domain (ClusterUUID and CliqueId)."""

NULL_UUID = "00000000-0000-0000-0000-000000000000"

_GPU = r"^gpu\d+$"


def domain_label(cluster_uuid: str | None, clique: str | None) -> str | None:
    """``<ClusterUUID>/clique <id>``, or None when the GPU belongs to no multi-node domain."""
    if not cluster_uuid or cluster_uuid == NULL_UUID or clique is None:
        return None
    return f"{cluster_uuid}/clique {clique}"


def latest_gpu_attributes(attributes: pl.DataFrame | None, keys: list[str]) -> pl.DataFrame:
    """Per GPU (host, device ``gpu<N>``): the latest value of each attribute key, one column each.

    Returns:
        Columns ``host``, ``device``, ``time`` (the latest reading of any of the keys) and one
        String column per key (null when the GPU never reported it).
    """
    schema = {
        "host": pl.String,
        "device": pl.String,
        "time": pl.Datetime("ns", "UTC"),
        **dict.fromkeys(keys, pl.String),
    }
    if attributes is None or attributes.is_empty() or "key" not in attributes.columns:
        return pl.DataFrame(schema=schema)
    a = attributes.filter(pl.col("key").cast(pl.String).is_in(keys)).with_columns(
        pl.col("host").cast(pl.String),
        pl.col("device").cast(pl.String),
        pl.col("key").cast(pl.String),
        pl.col("value").cast(pl.String),
    )
    a = a.filter(pl.col("device").str.contains(_GPU) & pl.col("port").is_null())
    if a.is_empty():
        return pl.DataFrame(schema=schema)
    last = a.sort("time").group_by("host", "device", "key").agg(pl.col("value").last(), pl.col("time").max())
    wide = last.pivot(on="key", index=["host", "device"], values="value")
    times = last.group_by("host", "device").agg(pl.col("time").max())
    wide = wide.join(times, on=["host", "device"], how="left")
    for k in keys:
        if k not in wide.columns:
            wide = wide.with_columns(pl.lit(None, pl.String).alias(k))
    return wide.select(list(schema)).cast(schema)  # type: ignore[arg-type]


def gpu_domains(attributes: pl.DataFrame | None) -> pl.DataFrame:
    """Every GPU that reported its fabric registration: ``host``, ``device``, ``nvlink_domain`` (null: none).

    Example:
        >>> import polars as pl
        >>> gpu_domains(None).columns
        ['host', 'device', 'nvlink_domain']
    """
    g = latest_gpu_attributes(attributes, list(DOMAIN_KEYS))
    return g.select(
        "host",
        "device",
        pl.struct("fabric_cluster_uuid", "fabric_clique_id")
        .map_elements(lambda s: domain_label(s["fabric_cluster_uuid"], s["fabric_clique_id"]), return_dtype=pl.String)
        .alias("nvlink_domain"),
    )

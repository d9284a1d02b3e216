"""Plot-ready aggregates for the pages: pure functions of a :class:`data.Dataset` (cheap, so uncached).

Aggregation happens in Polars before plotting (:func:`downsample`), so a series never sends more
than :data:`MAX_POINTS` points to the browser whatever the number of samples.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import fabricscope
import polars as pl
from data import Dataset
from fabricscope.fabric.model import node_key, port_key
from fabricscope.fabric.profiles import profile_for_port
from fabricscope.incidents.correlate import Incident, incident_documents
from fabricscope.incidents.findings import document
from fabricscope.incidents.findings import links_to_replace as replacement_table
from fabricscope.incidents.severity import SEVERITIES, Severity
from fabricscope.reading.vocabulary import counters_by_direction, counters_with_role

# Counters by role (the core's vocabulary), most preferred first: the detectors' choice.
BYTES = {d: counters_with_role(f"{d}_bytes") for d in ("tx", "rx")}
RX_PACKETS = counters_with_role("rx_packets")
PAUSE = counters_by_direction("pause_duration")
ECN_MARKED = counters_with_role("rx_ecn_marked")
CNP = (*counters_with_role("tx_cnp"), *counters_with_role("rx_cnp_handled"), *counters_with_role("rx_cnp_ignored"))
LINK_SPEED, LINK_WIDTH = (*counters_with_role("link_speed"), *counters_with_role("link_width"))

MAX_POINTS = 2000
"""Most points per plotted series; longer series are averaged into time buckets."""


SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#7f7f7f", "ok": "#2ca02c"}


def severity_counts(ds: Dataset) -> dict[str, int]:
    """Findings per severity, every severity present (0 when none)."""
    counts = dict.fromkeys(SEVERITIES, 0)
    if ds.findings.height:
        for sev, n in ds.findings.group_by("severity").len().iter_rows():
            counts[sev] = n
    return counts


def findings_by_kind(ds: Dataset) -> pl.DataFrame:
    """Columns kind, severity, findings: one row per kind and severity."""
    if not ds.findings.height:
        return pl.DataFrame(schema={"kind": pl.String, "severity": pl.String, "findings": pl.UInt32})
    return ds.findings.group_by("kind", "severity").agg(pl.len().alias("findings")).sort("kind", "severity")


def links_to_replace(ds: Dataset) -> pl.DataFrame:
    """The wear-out forecasts, soonest crossing first (:func:`fabricscope.incidents.findings.links_to_replace`)."""
    return replacement_table(ds.findings)


def wearout_curves(ds: Dataset, points: int = 48) -> pl.DataFrame:
    """Each forecast link's fitted hourly error rate from its first hour to its crossing.

    Columns: link, time, rate_per_h (``rate now x 2 ** (t / doubling)``), threshold_per_h.
    """
    rows = []
    for r in ds.findings.filter(pl.col("kind") == "link_wearout").iter_rows(named=True):
        ev = json.loads(r["evidence"] or "{}")
        eta, doubling, now = ev.get("threshold_eta_s"), ev.get("doubling_time_s"), ev.get("current_rate_per_h")
        if not all(isinstance(x, (int, float)) for x in (eta, doubling, now)) or r["end"] is None:
            continue
        link = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
        first = -float(ev.get("span_h", 0.0)) * 3600.0
        for i in range(points + 1):
            t = first + (eta - first) * i / points
            rows.append(
                {
                    "link": link,
                    "time": r["end"] + dt.timedelta(seconds=t),
                    "rate_per_h": now * 2 ** (t / doubling),
                    "threshold_per_h": ev.get("threshold_per_h"),
                }
            )
    schema = {
        "link": pl.String,
        "time": pl.Datetime("ns", "UTC"),
        "rate_per_h": pl.Float64,
        "threshold_per_h": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def worst_ports(ds: Dataset, limit: int = 10) -> pl.DataFrame:
    """Ports ranked by worst severity, then number of findings (info findings ignored).

    Columns: port_id (``host/device:port``), host, device, port, worst, findings, kinds.
    """
    f = ds.findings.filter(pl.col("severity") != "info")
    if not f.height:
        return pl.DataFrame(
            schema={
                "port_id": pl.String,
                "host": pl.String,
                "device": pl.String,
                "port": pl.Int64,
                "worst": pl.String,
                "findings": pl.UInt32,
                "kinds": pl.String,
            }
        )
    rank = Severity.rank_expr()
    return (
        f.with_columns(rank.alias("_rank"))
        .group_by("host", "device", "port")
        .agg(
            pl.col("_rank").max().alias("_worst"),
            pl.len().alias("findings"),
            pl.col("kind").unique().sort().str.join(", ").alias("kinds"),
        )
        .with_columns(
            port_id(),
            pl.col("_worst").replace_strict(dict(enumerate(SEVERITIES)), return_dtype=pl.String).alias("worst"),
        )
        .sort(["_worst", "findings", "host", "device"], descending=[True, True, False, False], nulls_last=True)
        .select("port_id", "host", "device", "port", "worst", "findings", "kinds")
        .head(limit)
    )


def port_id() -> pl.Expr:
    """``host/device:port`` (``host/device`` for netdevs, ``host`` for host-level rows)."""
    dev = pl.col("device").cast(pl.String)
    name = pl.when(dev.is_null() | (dev == "")).then(pl.lit("")).otherwise(pl.lit("/") + dev)
    port = pl.when(pl.col("port").is_null()).then(pl.lit("")).otherwise(pl.lit(":") + pl.col("port").cast(pl.String))
    return (pl.col("host").cast(pl.String).fill_null("-") + name + port).alias("port_id")


def ports(ds: Dataset) -> pl.DataFrame:
    """Every network port with rated counters: host, device, port, port_id, worst severity first."""
    p = ds.network_ports.with_columns(port_id())  # NVLink/PCIe/GPU devices are not ports
    w = worst_ports(ds, limit=1_000_000).select("host", "device", "port", "worst", "findings")
    p = p.join(w, on=["host", "device", "port"], how="left", nulls_equal=True)
    rank = pl.when(pl.col("worst").is_null()).then(-1).otherwise(Severity.rank_expr("worst"))
    return p.with_columns(pl.col("findings").fill_null(0)).sort(
        [rank, "findings", "port_id"], descending=[True, True, False]
    )


def downsample(df: pl.DataFrame, by: list[str], values: list[str], max_points: int = MAX_POINTS) -> pl.DataFrame:
    """Average ``values`` into time buckets so each ``by`` series has at most ``max_points`` points.

    Args:
        df: Rows with a ``time`` column (Datetime) and the ``by`` and ``values`` columns.
        by: Series keys.
        values: Columns to average per bucket (a bucket's time is its start).
        max_points: Bucket count bound per series.

    Returns:
        The same columns; unchanged when already small enough.
    """
    if df.height == 0:
        return df
    longest = df.group_by(by).len()["len"].max() if by else df.height
    if longest <= max_points:
        return df.sort([*by, "time"])
    span_ns = (df["time"].max() - df["time"].min()).total_seconds() * 1e9  # type: ignore[union-attr]
    # Buckets align to multiples of `every`, so a span covers up to span/every + 2 of them.
    every_ns = max(int(span_ns / max(max_points - 2, 1)) + 1, 1)
    return (
        df.sort([*by, "time"])
        .group_by_dynamic("time", every=f"{every_ns}ns", group_by=by)
        .agg([pl.col(v).mean() for v in values])
        .sort([*by, "time"])
    )


def _port_rates(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """The port's rates (counter as text, ``time`` = interval end); empty when it has none."""
    hit = ds.by_port.get((host, device, port))
    if hit is None:
        return next(iter(ds.by_port.values())).clear() if ds.by_port else pl.DataFrame()
    return hit


def _first_present(r: pl.DataFrame, counters: Sequence[str]) -> pl.DataFrame:
    """Rows of the first counter of ``counters`` that has rates (the detectors' preference order)."""
    for c in counters:
        hit = r.filter((pl.col("counter") == c) & pl.col("rate_per_s").is_not_null())
        if hit.height:
            return hit
    return r.clear()


def line_rate(ds: Dataset, host: str, device: str, port: int | None) -> float | None:
    """The port's link rate in bytes/s from its latest gauge, else None."""
    g = ds.gauges.filter(
        (pl.col("host").cast(pl.String) == host)
        & (pl.col("device").cast(pl.String) == device)
        & (pl.col("counter").cast(pl.String) == "link_rate_bytes_per_s")
    )
    g = g.filter(pl.col("port").is_null() if port is None else pl.col("port") == port)
    return float(g["value"][-1]) if g.height else None


def throughput(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, direction (tx/rx), bytes_per_s, downsampled."""
    r = _port_rates(ds, host, device, port)
    parts = [
        _first_present(r, BYTES[d]).select(
            "time", pl.lit(d).alias("direction"), pl.col("rate_per_s").alias("bytes_per_s")
        )
        for d in ("tx", "rx")
    ]
    return downsample(pl.concat(parts), ["direction"], ["bytes_per_s"])


def pause_ratio(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, series (``rx p3`` ...), pause_ratio (share of time paused per priority and direction)."""
    r = _port_rates(ds, host, device, port).filter(pl.col("counter").is_in(list(PAUSE)))
    out = r.select(
        "time",
        (
            pl.col("counter").replace_strict(PAUSE, return_dtype=pl.String)
            + pl.when(pl.col("priority").is_null())
            .then(pl.lit(" global"))
            .otherwise(pl.lit(" p") + pl.col("priority").cast(pl.String))
        ).alias("series"),
        (pl.col("rate_per_s") / 1e6).alias("pause_ratio"),
    ).drop_nulls("pause_ratio")
    return downsample(out, ["series"], ["pause_ratio"])


def ecn(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, metric, value: ECN-marked share of received packets and CNP rates per second."""
    r = _port_rates(ds, host, device, port)
    rx = _first_present(r, RX_PACKETS).select("time", pl.col("rate_per_s").alias("_rx"))
    marked = (
        _first_present(r, ECN_MARKED)
        .join(rx, on="time", how="inner")
        .select(
            "time", pl.lit("ecn_marked_ratio").alias("metric"), (pl.col("rate_per_s") / pl.col("_rx")).alias("value")
        )
        .filter(pl.col("value").is_finite())
    )
    cnp = r.filter(pl.col("counter").is_in(CNP) & pl.col("rate_per_s").is_not_null()).select(
        "time", (pl.col("counter") + "_per_s").alias("metric"), pl.col("rate_per_s").alias("value")
    )
    return downsample(pl.concat([marked, cnp]), ["metric"], ["value"])


def error_rates(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, counter, per_s for every error/discard counter of the port that ever moved."""
    vocab = pl.DataFrame(fabricscope.counters())
    names = vocab.filter(
        (pl.col("layer") == "network")
        & pl.col("name").str.contains(r"(errors|discards)$")
        & (pl.col("kind") == "counter")
    )["name"].to_list()
    r = _port_rates(ds, host, device, port).filter(pl.col("counter").is_in(names) & pl.col("rate_per_s").is_not_null())
    moving = r.group_by("counter").agg((pl.col("delta") > 0).any().alias("_m")).filter("_m")["counter"]
    out = r.filter(pl.col("counter").is_in(moving.implode())).select(
        "time", "counter", pl.col("rate_per_s").alias("per_s")
    )
    return downsample(out, ["counter"], ["per_s"])


def loss(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, direction, loss_ratio (estimated p), gbn_efficiency (modelled go-back-N) and bdp_packets.

    The ``lossy_collapse`` detector's ``go_back_n`` view of the analysis, for one port: p per
    interval is ``packet_loss``'s estimate and the efficiency ``1 / (1 + p W)`` with the thresholds
    the analysis ran with (``--config``), so the plot says what the finding says.
    """
    v = ds.views["go_back_n"].filter((pl.col("host") == host) & (pl.col("device") == device))
    v = v.filter(pl.col("port").is_null() if port is None else pl.col("port") == port)
    out = v.select(pl.col("end").alias("time"), "direction", "loss_ratio", "gbn_efficiency", "bdp_packets")
    return downsample(out, ["direction"], ["loss_ratio", "gbn_efficiency", "bdp_packets"])


def port_throughput_summary(ds: Dataset) -> pl.DataFrame:
    """Per port: peak and median throughput of its busier direction against line rate and profile.

    Columns: port_id, profile, direction, link_rate_bytes_per_s, peak_bytes_per_s, median_bytes_per_s,
    peak_of_line_ratio, achievable_low_ratio, verdict. Ports without a link rate are left out.
    """
    if "throughput_summary" not in ds.derived:
        ds.derived["throughput_summary"] = _throughput_summary(ds)
    return ds.derived["throughput_summary"]


def _throughput_summary(ds: Dataset) -> pl.DataFrame:
    direction = {c: d for d, cs in BYTES.items() for c in cs}
    rank = {c: i for cs in BYTES.values() for i, c in enumerate(cs)}
    keys = ["host", "device", "port", "direction"]
    r = (
        ds.rates.filter(pl.col("counter").cast(pl.String).is_in(list(direction)) & pl.col("rate_per_s").is_not_null())
        .with_columns(
            pl.col("host").cast(pl.String),
            pl.col("device").cast(pl.String),
            pl.col("counter").cast(pl.String).replace_strict(direction, return_dtype=pl.String).alias("direction"),
            pl.col("counter").cast(pl.String).replace_strict(rank, return_dtype=pl.Int8).alias("_rank"),
        )
        .filter(pl.col("_rank") == pl.col("_rank").min().over(keys))
    )
    per_dir = r.group_by(keys).agg(
        pl.col("rate_per_s").max().alias("peak_bytes_per_s"), pl.col("rate_per_s").median().alias("median_bytes_per_s")
    )
    busier = per_dir.sort("peak_bytes_per_s", descending=True).unique(["host", "device", "port"], keep="first")
    g = ds.gauges.with_columns(
        pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("counter").cast(pl.String)
    )
    facts = (
        g.filter(pl.col("counter").is_in([LINK_SPEED, LINK_WIDTH])).pivot(
            on="counter", index=["host", "device", "port"], values="value", aggregate_function="last"
        )
        if g.height
        else pl.DataFrame(schema={"host": pl.String, "device": pl.String, "port": pl.UInt16})
    )
    if "link_rate_bytes_per_s" not in facts.columns:
        return pl.DataFrame()
    if "link_width_lanes" not in facts.columns:
        facts = facts.with_columns(pl.lit(None, pl.Float64).alias("link_width_lanes"))
    out = busier.join(facts, on=["host", "device", "port"], how="inner", nulls_equal=True).filter(
        pl.col("link_rate_bytes_per_s") > 0
    )
    a = ds.attributes
    if a.height and "key" in a.columns:
        ll = (
            a.filter(pl.col("key").cast(pl.String) == "link_layer")
            .select(pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), "port", "value")
            .unique(["host", "device", "port"], keep="last")
            .rename({"value": "link_layer"})
        )
        out = out.join(ll, on=["host", "device", "port"], how="left", nulls_equal=True)
    else:
        out = out.with_columns(pl.lit(None, pl.String).alias("link_layer"))
    # One profile lookup per port (a handful of rows), not per sample.
    profs = [
        profile_for_port(
            row["link_layer"],
            row["link_rate_bytes_per_s"],
            int(row["link_width_lanes"]) if row["link_width_lanes"] else None,
        )
        for row in out.select("link_layer", "link_rate_bytes_per_s", "link_width_lanes").iter_rows(named=True)
    ]
    out = out.with_columns(
        pl.Series("profile", [p.name if p else None for p in profs], dtype=pl.String),
        pl.Series("achievable_low_ratio", [p.achievable_low_ratio if p else None for p in profs], dtype=pl.Float64),
        (pl.col("peak_bytes_per_s") / pl.col("link_rate_bytes_per_s")).alias("peak_of_line_ratio"),
    )
    return (
        out.with_columns(
            port_id(),
            pl.when(pl.col("achievable_low_ratio").is_null())
            .then(pl.lit("no profile"))
            .when(pl.col("peak_of_line_ratio") >= pl.col("achievable_low_ratio"))
            .then(pl.lit("reaches achievable"))
            .otherwise(pl.lit("below achievable (may be idle, not slow)"))
            .alias("verdict"),
        )
        .sort("peak_of_line_ratio")
        .select(
            "port_id",
            "profile",
            "direction",
            "link_rate_bytes_per_s",
            "peak_bytes_per_s",
            "median_bytes_per_s",
            "peak_of_line_ratio",
            "achievable_low_ratio",
            "verdict",
        )
    )


def port_findings(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """Findings of one port (and its host-level findings), for shading."""
    f = ds.findings.filter((pl.col("host") == host) & ((pl.col("device") == device) | pl.col("device").is_null()))
    return f.filter(pl.col("port").is_null() | (pl.col("port") == port)) if port is not None else f


def link_health(ds: Dataset) -> pl.DataFrame:
    """The links table with each cable's worst finding over both ends.

    Which findings each cable carries is the fabric model's answer
    (:meth:`fabricscope.fabric.model.Fabric.cable_findings`). Adds
    ``lower``/``upper`` (end names), ``lower_node``/``upper_node`` (the fabric model's node names,
    :meth:`fabricscope.fabric.model.Fabric.node_names`), ``health`` (ok/info/warning/critical), ``kinds``.
    """
    links = ds.tables.get("links")
    if links is None or links.is_empty():
        return pl.DataFrame()
    # the worst finding over both ends of each cable: the fabric model pairs ends and findings
    lk = (
        links.with_row_index("_link")
        .with_columns(pl.col("port").cast(pl.Int64), pl.col("peer_port").cast(pl.Int64))
        .join(ds.fabric.cable_findings(ds.findings), on="_link", how="left")
    )
    # Each end's node by the model's name for it (a switch's own name, not its description).
    names = ds.fabric.node_names()
    return (
        lk.with_columns(node_key().alias("_lower"), node_key("peer_").alias("_upper"))
        .join(names.rename({"node": "_lower", "name": "lower_node"}), on="_lower", how="left")
        .join(names.rename({"node": "_upper", "name": "upper_node"}), on="_upper", how="left")
        .with_columns(
            pl.concat_str([pl.col("lower_node"), pl.lit(":"), port_key()]).alias("lower"),
            pl.concat_str([pl.col("upper_node"), pl.lit(":"), port_key("peer_")]).alias("upper"),
            pl.col("_rank")
            .replace_strict(dict(enumerate(SEVERITIES)), default="ok", return_dtype=pl.String)
            .alias("health"),
            pl.col("kinds").fill_null(""),
        )
        .drop("_link", "_rank", "_lower", "_upper")
    )


def port_health(ds: Dataset) -> pl.DataFrame:
    """Every network port with its worst finding (for the matrix when topology is unknown).

    Columns: host, port_name (``device:port``), health, kinds, flapping, degraded.
    """
    p = ports(ds)
    f = ds.findings.filter(pl.col("severity") != "info")
    kinds = f.group_by("host", "device", "port").agg(pl.col("kind").unique().sort().str.join(", ").alias("kinds"))
    p = p.join(kinds, on=["host", "device", "port"], how="left", nulls_equal=True)
    return p.select(
        "host",
        pl.concat_str([pl.col("device"), pl.col("port").cast(pl.String)], separator=":", ignore_nulls=True).alias(
            "port_name"
        ),
        pl.col("worst").fill_null("ok").alias("health"),
        pl.col("kinds").fill_null(""),
        pl.col("kinds").fill_null("").str.contains("link_flap").alias("flapping"),
        pl.col("kinds").fill_null("").str.contains("link_degraded").alias("degraded"),
    )


def incidents(ds: Dataset) -> list[Incident]:
    """The analysis' incidents, worst first (none without an analysis)."""
    return list(getattr(ds.analysis, "incidents", None) or [])


def incident_consequences(inc: Incident) -> pl.DataFrame:
    """One row per consequence: the finding, how it relates to the root, and the path."""
    rows = [
        {
            "severity": c["finding"]["severity"],
            "kind": c["finding"]["kind"],
            "host": c["finding"]["host"],
            "device": c["finding"]["device"],
            "port": c["finding"]["port"],
            "relation": c["relation"],
            "path": " -> ".join(c["path"]),
            "timing": c["timing"],
            "magnitude": c["magnitude"],
        }
        for c in inc.consequences
    ]
    # Typed even when every port is missing (ethtool names a netdev): a Null column shows "None".
    schema = {"host": pl.String, "device": pl.String, "port": pl.Int64}
    return pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)


def findings_document(ds: Dataset) -> dict[str, Any]:
    """The ``fabricscope.findings/2`` JSON document of the dataset (download button)."""
    return document(ds.findings, ds.inputs, incident_documents(incidents(ds)))

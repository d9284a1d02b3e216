"""Fault lifecycle: one fault across runs (first/last seen, resolved, reopened)."""

from __future__ import annotations

import datetime as dt
import hashlib

import polars as pl

from fabricscope.incidents.severity import Severity
from fabricscope.reading.history import (
    LIFECYCLE_SCHEMA,
)

_FAULT_KEY = ["kind", "host", "device", "port", "priority", "metric"]


def _worst(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    # a missing severity (a fault not seen in this run) ranks below info
    ra, rb = Severity.rank_expr(a.fill_null("info")), Severity.rank_expr(b.fill_null("info"))
    ra, rb = pl.when(a.is_null()).then(-1).otherwise(ra), pl.when(b.is_null()).then(-1).otherwise(rb)
    return pl.when(ra >= rb).then(a).otherwise(b)


def _fault_ids(df: pl.DataFrame) -> pl.Series:
    # Stable across re-runs of the same input: kind, entity, metric and when the fault began.
    cols = [pl.col(c).cast(pl.String).fill_null("") for c in [*_FAULT_KEY, "first_seen"]]
    return df.select(pl.concat_str(cols, separator="\x1f").alias("k"))["k"].map_elements(
        lambda s: hashlib.blake2b(s.encode(), digest_size=8).hexdigest(), return_dtype=pl.String
    )


def update_lifecycle(
    lifecycle: pl.DataFrame, findings: pl.DataFrame, covered: pl.DataFrame, run_time: dt.datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Fold this run's findings into the lifecycle; returns the lifecycle and findings + fault_id.

    ``covered`` has (host, device, port, data_end) for every port with new data this run: an
    active fault there that this run did not report is resolved at ``data_end``.
    """
    now = pl.lit(run_time).cast(pl.Datetime("ns", "UTC"))
    cur = findings.group_by(_FAULT_KEY, maintain_order=True).agg(
        pl.col("severity").sort_by(Severity.rank_expr()).last().alias("severity"),
        pl.col("layer").first(),
        pl.col("start").min().alias("f_start"),
        pl.col("end").max().alias("f_end"),
        pl.col("message").first().alias("last_message"),
        pl.col("evidence").first().alias("last_evidence"),
    )
    active = lifecycle.filter(pl.col("resolved_at").is_null())
    done = lifecycle.filter(pl.col("resolved_at").is_not_null())
    joined = cur.join(active, on=_FAULT_KEY, how="full", nulls_equal=True, coalesce=True, suffix="_old")
    seen = pl.col("f_start").is_not_null() | pl.col("f_end").is_not_null() | pl.col("last_message").is_not_null()
    continued = joined.filter(seen & pl.col("fault_id").is_not_null()).select(
        "fault_id",
        *_FAULT_KEY,
        _worst(pl.col("severity"), pl.col("severity_old")).alias("severity"),
        pl.coalesce("layer", "layer_old").alias("layer"),
        "first_seen",
        pl.max_horizontal(pl.col("last_seen"), pl.coalesce("f_end", "f_start", now)).alias("last_seen"),
        pl.lit(None, pl.Datetime("ns", "UTC")).alias("resolved_at"),
        (pl.col("runs") + 1).alias("runs"),
        "last_message",
        "last_evidence",
    )
    fresh = joined.filter(seen & pl.col("fault_id").is_null()).with_columns(
        pl.coalesce("f_start", "f_end", now).alias("first_seen"),
        pl.coalesce("f_end", "f_start", now).alias("last_seen"),
        pl.lit(None, pl.Datetime("ns", "UTC")).alias("resolved_at"),
        pl.lit(1, pl.Int64).alias("runs"),
    )
    fresh = (
        fresh.with_columns(_fault_ids(fresh).alias("fault_id"))
        if fresh.height
        else fresh.with_columns(pl.lit(None, pl.String).alias("fault_id"))
    )
    # A resolved fault whose window this finding reaches back into is the same fault seen again
    # (more data moved a window's edge): reopen it instead of raising a second alert.
    fresh_rows = fresh.select(LIFECYCLE_SCHEMA.names()).with_row_index("_f")
    done_rows = done.select(LIFECYCLE_SCHEMA.names()).with_row_index("_d")
    again = (
        fresh_rows.join(done_rows, on=_FAULT_KEY, how="inner", nulls_equal=True, suffix="_done")
        .filter(pl.col("last_seen_done") >= pl.col("first_seen"))
        .sort("last_seen_done")
        .group_by("_f")
        .last()
        .unique(subset="_d", keep="first")
    )
    reopened = again.select(
        pl.col("fault_id_done").alias("fault_id"),
        *_FAULT_KEY,
        _worst(pl.col("severity"), pl.col("severity_done")).alias("severity"),
        pl.coalesce("layer", "layer_done").alias("layer"),
        pl.col("first_seen_done").alias("first_seen"),
        pl.max_horizontal("last_seen", "last_seen_done").alias("last_seen"),
        pl.lit(None, pl.Datetime("ns", "UTC")).alias("resolved_at"),
        (pl.col("runs_done") + 1).alias("runs"),
        "last_message",
        "last_evidence",
    )
    fresh = fresh_rows.filter(~pl.col("_f").is_in(again["_f"].implode())).drop("_f")
    done = done_rows.filter(~pl.col("_d").is_in(again["_d"].implode())).drop("_d")
    continued = pl.concat(
        [
            continued.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            reopened.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
        ]
    )
    absent = joined.filter(~seen).select(
        "fault_id",
        *_FAULT_KEY,
        pl.col("severity_old").alias("severity"),
        pl.col("layer_old").alias("layer"),
        "first_seen",
        "last_seen",
        "resolved_at",
        "runs",
        pl.col("last_message_old").alias("last_message"),
        pl.col("last_evidence_old").alias("last_evidence"),
    )
    # Covered: the run had new data for the fault's port (or any port of its device/host when the
    # finding names none).
    cov = covered.with_columns(pl.col("port").cast(pl.Int64))
    absent = absent.with_row_index("_r")
    hits = (
        absent.join(cov, on="host", how="inner", nulls_equal=True, suffix="_c")
        .filter(
            (pl.col("device").is_null() | (pl.col("device") == pl.col("device_c")))
            & (pl.col("port").is_null() | pl.col("port").eq_missing(pl.col("port_c")))
        )
        .group_by("_r")
        .agg(pl.col("data_end").max())
    )
    absent = (
        absent.join(hits, on="_r", how="left")
        .with_columns(pl.col("data_end").alias("resolved_at"))
        .drop("_r", "data_end")
    )
    out = pl.concat(
        [
            done.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            continued.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            fresh.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            absent.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
        ]
    )
    ids = pl.concat([continued.select(*_FAULT_KEY, "fault_id"), fresh.select(*_FAULT_KEY, "fault_id")])
    tagged = findings.join(ids, on=_FAULT_KEY, how="left", nulls_equal=True)
    return out, tagged


def active_findings(lifecycle: pl.DataFrame) -> pl.DataFrame:
    """Active faults as a findings frame (for the status, JSON and textfile) plus ``fault_id``.

    Example:
        >>> from fabricscope.reading.history import LIFECYCLE_SCHEMA
        >>> active_findings(pl.DataFrame(schema=LIFECYCLE_SCHEMA)).height
        0
    """
    worst_first = -Severity.rank_expr()
    return (
        lifecycle.filter(pl.col("resolved_at").is_null())
        .select(
            "kind",
            "severity",
            "host",
            "device",
            "port",
            "priority",
            "layer",
            pl.col("first_seen").alias("start"),
            pl.col("last_seen").alias("end"),
            "metric",
            pl.lit(None, pl.Float64).alias("observed"),
            pl.lit(None, pl.Float64).alias("expected"),
            pl.col("last_message").alias("message"),
            pl.col("last_evidence").alias("evidence"),
            "fault_id",
        )
        .sort([worst_first, "kind", "host", "device", "port"], nulls_last=True)
    )

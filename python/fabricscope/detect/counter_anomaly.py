"""``counter_anomaly``: resets, saturated counters, wraps and sampling gaps.

These are facts about the data, mostly not faults of the fabric, but they explain why a rate is
missing (a pegged 32-bit counter hides errors; a reset loses an interval) and what to fix in
collection (info).

One exception is evidence, not noise: an *error or link-down* counter pegged at its register
maximum (16-bit ``SymbolErrorCounter`` at 65,535, 8-bit ``LinkDownedCounter`` at 255) proves at
least that many events since the counters were last cleared. That is a warning with the lower
bound (rule ``counter_anomaly.saturated_errors``), unless a time series shows the register was
already pegged at its first reading: then nothing is known about the window itself and the info
stays.
"""

from __future__ import annotations

import functools

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings
from fabricscope.detect.rates import overflow_table
from fabricscope.fabric.relations import SAME_PORT, Relation
from fabricscope.incidents.findings import make_findings
from fabricscope.reading.vocabulary import counters
from fabricscope.sources import default

KIND = "counter_anomaly"

_ADVICE = {
    "saturated": "counter pegged at its maximum: values carry no information; read extended (64-bit) "
    "counters (perfquery -x, counters_ext) or clear counters after reading",
    "reset": "counter went backwards: driver reload, counter clear or reboot; the interval was dropped",
    "wrapped": "counter wrapped at its width and was unwrapped",
    "gap": "sampling gap longer than the usual interval: no rate over it",
}


def error_counters(config: dict) -> set[str]:
    """Counters whose every increment is a fault event: the link-error counters and link-downed."""
    return {*config["link_errors"], "link_downed_events"}


@functools.cache
def _layers() -> dict[str, str]:
    """Each canonical counter's layer (``network``, ``nvlink`` ...), from the core's vocabulary."""
    return {c["name"]: c["layer"] for c in counters().select("name", "layer").iter_rows(named=True)}


def layer_of(counter: str) -> str:
    """The layer a counter describes (``network`` for a name the vocabulary does not hold)."""
    return _layers().get(counter, "network")


@functools.cache
def _register_maxima() -> dict[int, list[str]]:
    """Saturating counters (``saturate`` and ``wide`` modes) by their register maximum."""
    out: dict[int, list[str]] = {}
    table = overflow_table().filter(pl.col("overflow_mode").is_in(["saturate", "wide"]))
    for name, top in table.select(pl.col("counter").cast(pl.String), "overflow_max").iter_rows():
        out.setdefault(top, []).append(name)
    return out


def _only_series_of(df: pl.DataFrame, rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The rows of ``df`` (in order) whose series (``keys``) has a row in the small frame ``rows``.

    The hosts and counters named are compared first, as dictionary codes, so the hash join on
    every key only sees rows that can match.
    """
    near = df.filter(
        pl.col("host").is_in(rows["host"].unique().implode(), nulls_equal=True)
        & pl.col("counter").is_in(rows["counter"].unique().implode(), nulls_equal=True)
    )
    return near.join(rows.select(keys).unique(), on=keys, how="semi", nulls_equal=True, maintain_order="left")


def _pegged_readings(inp: AnalysisInput) -> pl.DataFrame:
    """Series with a reading pegged at the register maximum, even with a single snapshot.

    ``readings`` counts all readings of the series and ``pegged_at_start`` says whether its
    earliest reading was already pegged.
    """
    keys = ["host", "device", "port", "priority", "counter", "source"]
    maxima = _register_maxima()
    raw = pl.col("value_u64") // pl.col("scale").cast(pl.UInt64)
    s = inp.samples.filter(
        pl.col("is_counter")
        & pl.col("value_u64").is_not_null()
        & pl.col("counter").is_in([n for names in maxima.values() for n in names])
    )
    # Pegged readings are rare: find them with one vectorised test per register width, then
    # aggregate only the series that have one (all of their readings).
    pegged = s.filter(
        pl.any_horizontal(*[pl.col("counter").is_in(names) & (raw == top) for top, names in maxima.items()])
    )
    if pegged.is_empty():
        return pegged
    s = _only_series_of(s, pegged, keys)
    return (
        s.join(overflow_table(), on="counter", how="inner")
        .filter(pl.col("overflow_mode").is_in(["saturate", "wide"]))
        .with_columns(
            ((pl.col("value_u64") // pl.col("scale").cast(pl.UInt64)) == pl.col("overflow_max")).alias("_pegged")
        )
        .filter(pl.col("_pegged").any().over(keys))
        .pipe(entity_strings)
        .sort("time")
        .group_by(["host", "device", "port", "priority", "counter"], maintain_order=True)
        .agg(
            pl.col("_pegged").sum().alias("saturated"),
            pl.len().alias("readings"),
            pl.col("time").filter(pl.col("_pegged")).min().alias("saturated_first"),
            pl.col("time").filter(pl.col("_pegged")).max().alias("saturated_last"),
            (pl.col("time").min() == pl.col("time").filter(pl.col("_pegged")).min()).alias("pegged_at_start"),
            pl.col("source").cast(pl.String).min(),  # not .first(): row order differs between engines
            pl.col("overflow_bits").first().alias("bits"),
            pl.col("overflow_max").first().alias("register_max"),
        )
    )


def _saturated_row(inp: AnalysisInput, a: dict) -> dict:
    """One finding for a pegged series: a warning when it proves fault events, else info."""
    evidence = {
        "rule": "counter_anomaly.saturated",
        "threshold_source": inp.config[KIND]["source"],
        "readings": a["saturated"],
        "register_bits": a["bits"],
        "source": a["source"],
    }
    bound = int(a["register_max"])
    name = a["counter"].replace("_", " ")
    series = a["readings"] > 1
    if a["counter"] in error_counters(inp.config) and not (series and a["pegged_at_start"]):
        evidence |= {
            "rule": "counter_anomaly.saturated_errors",
            "threshold_source": inp.config[KIND]["source_saturated_errors"],
            "events_at_least": bound,
            "pegged_at_start": bool(a["pegged_at_start"]),
        }
        since = (
            "since the last counter clear"
            if not series
            else "since the last counter clear, and the register filled up during this window"
        )
        return {
            "severity": "warning",
            "observed": float(bound),
            "message": (
                f"{a['counter']}: register pegged at 2^{a['bits']}-1: at least {bound:,} {name} {since}; "
                "clear the counters and re-measure, or read the extended counters (perfquery -x, counters_ext)"
            ),
            "evidence": evidence,
        }
    return {
        "severity": "info",
        "observed": float(a["saturated"]),
        "message": f"{a['counter']}: saturated, {a['saturated']} reading(s) at 2^{a['bits']}-1: "
        + (
            "already pegged at the first reading, so the window itself is unmeasured; "
            if series and a["counter"] in error_counters(inp.config)
            else ""
        )
        + _ADVICE["saturated"],
        "evidence": evidence,
    }


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Summarise data-quality flags per series."""
    rows = []
    for a in _pegged_readings(inp).iter_rows(named=True):
        rows.append(
            {
                "kind": KIND,
                "host": a["host"],
                "device": a["device"],
                "port": a["port"],
                "priority": a["priority"],
                "layer": layer_of(a["counter"]),
                "start": a["saturated_first"],
                "end": a["saturated_last"],
                "metric": a["counter"],
                "expected": 0.0,
                **_saturated_row(inp, a),
            }
        )
    r = inp.rates
    keys = ["host", "device", "port", "priority", "counter"]
    # Flags are rare: only series with at least one flagged interval are aggregated (all of their
    # rows, so the reported source is the same as over the whole table); a healthy fabric skips
    # the aggregation entirely.
    flagged = r.filter(pl.any_horizontal(*_ADVICE)).select(keys).unique()
    if flagged.is_empty():
        return make_findings(rows)
    r = _only_series_of(r, flagged, keys)
    agg = (
        entity_strings(r)
        .group_by(keys, maintain_order=True)
        .agg(
            *[pl.col(f).sum().alias(f) for f in _ADVICE],
            *[pl.col("end").filter(pl.col(f)).min().alias(f"{f}_first") for f in _ADVICE],
            *[pl.col("end").filter(pl.col(f)).max().alias(f"{f}_last") for f in _ADVICE],
            pl.col("source").cast(pl.String).min(),  # not .first(): row order differs between engines
        )
    )
    # A driver reload resets every NVLink counter of a GPU at once: one info per GPU, not per counter.
    reloads: dict[tuple[str, str], list[dict]] = {}
    for a in agg.iter_rows(named=True):
        for flag, advice in _ADVICE.items():
            n = a[flag]
            # Saturation is reported from the readings themselves (above), once per series.
            if not n or flag == "saturated":
                continue
            layer = layer_of(a["counter"])
            if flag == "reset" and layer == "nvlink":
                reloads.setdefault((a["host"], a["device"]), []).append(a)
                continue
            rows.append(
                {
                    "kind": KIND,
                    "severity": "info",
                    "host": a["host"],
                    "device": a["device"],
                    "port": a["port"],
                    "priority": a["priority"],
                    "layer": layer,
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
    for (host, device), series in reloads.items():
        names = sorted({a["counter"] for a in series})
        rows.append(
            {
                "kind": KIND,
                "severity": "info",
                "host": host,
                "device": device,
                "port": None,
                "priority": None,
                "layer": "nvlink",
                "start": min(a["reset_first"] for a in series),
                "end": max(a["reset_last"] for a in series),
                "metric": names[0],
                "observed": float(len(series)),
                "expected": 0.0,
                "message": f"{device}: {len(series)} NVLink counter series reset ({', '.join(names)}): "
                "driver reload or reboot; the intervals were dropped",
                "evidence": {
                    "rule": "counter_anomaly.reset",
                    "threshold_source": inp.config[KIND]["source"],
                    "intervals": sum(a["reset"] for a in series),
                    "series": len(series),
                    "links": sorted({a["port"] for a in series if a["port"] is not None}),
                    "source": min(a["source"] for a in series),
                },
            }
        )
    return make_findings(rows)


# errors that pegged a 16-bit PortCounters register: the same bad link, counted to the limit
RELATIONS = (Relation("link_loss_go_back_n", "consequence", "counter_anomaly", (SAME_PORT,)),)


SPEC = DetectorSpec(
    name=KIND,
    summary="resets, saturated registers (a warning with the lower bound for pegged error counters), wraps, "
    "sampling gaps, with what to fix in collection",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    defaults={
        "source": default("the rate engine's flags: resets, saturated registers, wraps, sampling gaps"),
        # a pegged error register is a lower bound on the events since the last clear
        "source_saturated_errors": "perfquery(8) and ibqueryerrors(8), rdma-core infiniband-diags: IBTA "
        "PortCounters error counters stop at their maximum, so a pegged register proves at least 2^bits-1 events "
        "since the last clear",
    },
    actions={
        "counter_anomaly": (
            "clear the pegged counters of {entity} (perfquery -x -R) and watch whether they climb again; a register "
            "at its maximum hides every later error"
        ),
    },
)

"""``link_wearout``: a link whose error rate is rising will cross its warning rate: when.

A cable, transceiver or connector that is wearing out does not fail at once: its bit error rate
climbs over days (oxidised contacts, a cracked fibre, a laser losing power), and the symbol errors
it counts grow roughly exponentially until the port crosses the ``link_errors`` warning rate (and
soon after drops packets under a training job). This detector fits that trend while the rate is
still below the threshold and says when it will cross, so the cable is replaced in a maintenance
window instead.

Per port and error counter (the ``link_errors`` role, judged at a positive ``link_errors`` warning
rate: for InfiniBand the symbol errors, 120/hour), the valid counter deltas (no reset, no
saturation, no sampling gap: the rates engine's flags) are put in hourly buckets by the midpoint of
their interval, with the seconds each bucket covers as its exposure. A Poisson regression of the
hourly counts on time, ``count ~ exposure x exp(a + b t)`` (log link, fitted by Newton-Raphson),
gives the trend ``b``; its z value is corrected for over-dispersion (quasi-Poisson: the standard
error times ``sqrt(max(1, Pearson chi2 / df))``), so bursty counts do not pass as a trend. A finding
needs all of:

* a span of at least ``min_span_h`` hours and ``min_hours`` hours with data;
* ``z >= min_z`` (one-sided), and the same after dropping the hour with the largest count (one
  burst is not a trend);
* the fitted rate at the last sample still below the warning rate (above it, ``link_errors``
  already fires), and the crossing within ``horizon_days``.

The evidence has ``threshold_eta_s`` (seconds from the last sample to the crossing),
``doubling_time_s``, ``z``, ``p_value``, ``hours_used``, ``samples_used``, the fitted and threshold
rates per hour and the threshold's public source.

A steady rate (no slope), a single burst (dispersion and the drop-the-largest check), a counter
reset (no delta over it) and a gap (no delta over it) give no finding.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings
from fabricscope.incidents.findings import empty_findings, make_findings
from fabricscope.reading.vocabulary import counters_with_role
from fabricscope.sources import default

KIND = "link_wearout"
_HOUR_S = 3600.0


def trend_counters(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Error counters whose trend is judged: the ``link_errors`` role with a positive warning rate.

    A counter ``link_errors`` warns on at any increase has nothing to forecast: its first error is
    already a finding.
    """
    errors = config.get("link_errors", {})
    return {
        c: errors[c]
        for c in counters_with_role("link_errors")
        if isinstance(errors.get(c), dict) and errors[c].get("warning_per_s", 0) > 0
    }


HOURLY_SCHEMA = pl.Schema(
    {
        "host": pl.String,
        "device": pl.String,
        "port": pl.Int64,
        "counter": pl.String,
        "hour": pl.Datetime("us", "UTC"),
        "count": pl.Float64,
        "exposure_s": pl.Float64,
        "samples": pl.UInt32,
        "last": pl.Datetime("us", "UTC"),
    }
)
"""The hourly roll-up of error counts the trend is fitted to (cron keeps it in its history)."""


def hourly_counts(rates: pl.DataFrame, counters: list[str]) -> pl.DataFrame:
    """Per port, counter and hour: the valid error count and the seconds it covers.

    Valid intervals carry a delta (no reset or saturation) and are no sampling gap; each is put in
    the hour of its midpoint.
    """
    r = rates.filter(
        pl.col("counter").is_in(counters) & pl.col("delta").is_not_null() & ~pl.col("gap") & (pl.col("interval_s") > 0)
    )
    if r.is_empty():
        return pl.DataFrame(schema=HOURLY_SCHEMA)
    mid = pl.col("start") + (pl.col("end") - pl.col("start")) / 2
    return (
        entity_strings(r)
        .with_columns(mid.dt.truncate("1h").dt.cast_time_unit("us").alias("hour"))
        .group_by("host", "device", "port", "counter", "hour")
        .agg(
            pl.col("delta").cast(pl.Float64).sum().alias("count"),
            pl.col("interval_s").sum().alias("exposure_s"),
            pl.len().cast(pl.UInt32).alias("samples"),
            pl.col("end").max().dt.cast_time_unit("us").alias("last"),
        )
        .with_columns(pl.col("port").cast(pl.Int64))
        .select(HOURLY_SCHEMA.names())
        .cast(HOURLY_SCHEMA)
        .sort("host", "device", "port", "counter", "hour")
    )


def merge_hourly(stored: pl.DataFrame, new: pl.DataFrame, keep_since: dt.datetime | None = None) -> pl.DataFrame:
    """Add a run's hourly counts to a stored roll-up (an hour two runs share is summed), oldest hours dropped.

    Example:
        >>> import datetime as dt
        >>> h = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
        >>> one = pl.DataFrame([{"host": "a", "device": "mlx5_0", "port": 1, "counter": "symbol_errors", "hour": h,
        ...     "count": 2.0, "exposure_s": 1800.0, "samples": 3, "last": h}], schema=HOURLY_SCHEMA)
        >>> merge_hourly(one, one)["count"].to_list(), merge_hourly(one, one)["exposure_s"].to_list()
        ([4.0], [3600.0])
    """
    keys = ["host", "device", "port", "counter", "hour"]
    stored, new = stored.cast(HOURLY_SCHEMA), new.cast(HOURLY_SCHEMA)
    if keep_since is not None:
        stored = stored.filter(pl.col("hour") >= keep_since)
        new = new.filter(pl.col("hour") >= keep_since)
    # Only the hours a run shares with the roll-up (the one it started in) need adding up.
    shared = (
        pl.concat([stored.join(new, on=keys, how="semi", nulls_equal=True), new])
        .group_by(keys)
        .agg(
            pl.col("count").sum(),
            pl.col("exposure_s").sum(),
            pl.col("samples").sum(),
            pl.col("last").max(),
        )
    )
    rest = stored.join(new, on=keys, how="anti", nulls_equal=True)
    return pl.concat([rest, shared.select(HOURLY_SCHEMA.names())]).sort(keys)


@dataclass(frozen=True)
class Fits:
    """Poisson trend fits of many series at once (one entry per series).

    Attributes:
        a: Log of the hourly rate at ``t = 0``.
        b: Growth per hour (the log-linear slope).
        se_b: Standard error of ``b`` (Poisson).
        dispersion: Pearson chi2 / (n - 2), at least 1.
        ok: The fit converged on a series with counts over more than one time.
    """

    a: np.ndarray
    b: np.ndarray
    se_b: np.ndarray
    dispersion: np.ndarray
    ok: np.ndarray

    @property
    def z(self) -> np.ndarray:
        """The slope's z, corrected for over-dispersion (quasi-Poisson)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            z = self.b / (self.se_b * np.sqrt(self.dispersion))
        return np.where(self.ok & (self.se_b > 0), z, 0.0)


def fit_groups(
    group: np.ndarray,
    t_h: np.ndarray,
    counts: np.ndarray,
    exposure_h: np.ndarray,
    groups: int,
    weight: np.ndarray | None = None,
    iterations: int = 60,
    start: Fits | None = None,
) -> Fits:
    """Fit ``counts ~ Poisson(exposure_h x exp(a + b t_h))`` for every group at once (Newton-Raphson).

    Rows belong to ``group`` (0 .. groups - 1); a ``weight`` of 0 leaves a row out. Each Newton step
    solves the 2x2 system of every group in closed form from sums over its rows, so thousands of
    ports cost a few array passes, not a loop. ``start`` (a fit of nearly the same rows) saves
    most of the iterations.
    """
    w = np.ones_like(counts, dtype=float) if weight is None else weight.astype(float)
    y = counts * w
    offset = np.log(np.maximum(exposure_h, 1e-12))
    n = np.bincount(group, w, groups)
    total = np.bincount(group, y, groups)
    exposed = np.bincount(group, exposure_h * w, groups)
    tmin = np.full(groups, np.inf)
    tmax = np.full(groups, -np.inf)
    np.minimum.at(tmin, group[w > 0], t_h[w > 0])
    np.maximum.at(tmax, group[w > 0], t_h[w > 0])
    usable = (n >= 3) & (total > 0) & (tmax > tmin)
    a = np.where(usable, np.log(np.where(usable, total, 1.0) / np.where(exposed > 0, exposed, 1.0)), 0.0)
    b = np.zeros(groups)
    if start is not None:
        a, b = np.where(usable & start.ok, start.a, a), np.where(usable & start.ok, start.b, b)
    converged = np.zeros(groups, dtype=bool)
    h00 = h01 = h11 = np.ones(groups)
    for _ in range(iterations):
        mu = w * np.exp(np.clip(a[group] + b[group] * t_h + offset, -700, 700))
        r = y - mu
        g0, g1 = np.bincount(group, r, groups), np.bincount(group, r * t_h, groups)
        h00 = np.bincount(group, mu, groups)
        h01 = np.bincount(group, mu * t_h, groups)
        h11 = np.bincount(group, mu * t_h * t_h, groups)
        det = h00 * h11 - h01 * h01
        good = usable & (det > 0)
        safe = np.where(good, det, 1.0)
        # The log-likelihood is concave: Newton converges; the bounds only keep a first step from
        # overflowing the exponential on an extreme series.
        da = np.clip(np.where(good, (h11 * g0 - h01 * g1) / safe, 0.0), -5.0, 5.0)
        db = np.clip(np.where(good, (h00 * g1 - h01 * g0) / safe, 0.0), -0.5, 0.5)
        a, b = a + da, b + db
        converged = good & (np.abs(da) < 1e-8) & (np.abs(db) < 1e-10)
        if not np.any(good & ~converged):
            break
    mu = w * np.exp(np.clip(a[group] + b[group] * t_h + offset, -700, 700))
    with np.errstate(divide="ignore", invalid="ignore"):
        pearson = np.bincount(group, np.where(w > 0, (y - mu) ** 2 / np.maximum(mu, 1e-12), 0.0), groups)
        det = h00 * h11 - h01 * h01
        se_b = np.sqrt(np.where(det > 0, h00 / np.where(det > 0, det, 1.0), np.inf))
    dispersion = np.maximum(1.0, pearson / np.maximum(n - 2, 1))
    return Fits(a, b, se_b, dispersion, converged & usable)


def poisson_trend(
    t_h: np.ndarray, counts: np.ndarray, exposure_h: np.ndarray
) -> tuple[float, float, float, float] | None:
    """One series' fit (:func:`fit_groups`): (a, b, standard error of b, dispersion), or None.

    ``a`` is the log of the hourly rate at ``t_h = 0``. None when the fit has no information (no
    counts, a single time) or does not converge.

    Example:
        >>> import numpy as np
        >>> t = np.arange(-100.0, 0.0)
        >>> a, b, se, phi = poisson_trend(t, np.exp(2.0 + 0.01 * t), np.ones_like(t))
        >>> round(a, 3), round(b, 4)
        (2.0, 0.01)
    """
    f = fit_groups(np.zeros(len(t_h), dtype=np.int64), t_h, counts, exposure_h, 1)
    if not f.ok[0]:
        return None
    return float(f.a[0]), float(f.b[0]), float(f.se_b[0]), float(f.dispersion[0])


def judge(hourly: pl.DataFrame, limits_per_h: dict[str, float], cfg: dict[str, Any]) -> pl.DataFrame:
    """Every series of an hourly roll-up at once: the evidence of those that forecast a crossing.

    ``hourly`` holds one row per hour of each series (:data:`HOURLY_SCHEMA`); ``limits_per_h`` is
    the warning rate per hour of each counter judged. Returns one row per forecast: the series'
    keys, ``first``, ``last`` and the evidence columns.
    """
    keys = ["host", "device", "port", "counter"]
    h = (
        hourly.filter(pl.col("counter").is_in(list(limits_per_h)))
        .with_columns(pl.col("counter").replace_strict(limits_per_h, return_dtype=pl.Float64).alias("_limit"))
        .sort([*keys, "hour"])
        .with_columns(
            # rows are sorted by series: a series starts where any key differs from the row before
            pl.any_horizontal([pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys])
            .fill_null(True)
            .cast(pl.Int64)
            .cum_sum()
            .sub(1)
            .alias("_g"),
            pl.col("last").max().over(keys).alias("_last"),
        )
        .with_columns(((pl.col("hour") - pl.col("_last")).dt.total_seconds() / _HOUR_S + 0.5).alias("_t"))
    )
    if h.is_empty():
        return h.clear()
    group = h["_g"].to_numpy()
    groups = int(group.max()) + 1
    t_h, counts = h["_t"].to_numpy().astype(float), h["count"].to_numpy().astype(float)
    exposure_h = h["exposure_s"].to_numpy() / _HOUR_S
    fit = fit_groups(group, t_h, counts, exposure_h, groups)
    # one burst is not a trend: the slope must survive losing each series' largest hour
    largest = h.select(pl.col("count").rank("ordinal", descending=True).over("_g") == 1)["count"].to_numpy()
    robust = fit_groups(group, t_h, counts, exposure_h, groups, weight=~largest, start=fit)
    per = (
        h.group_by("_g", maintain_order=True)
        .agg(
            *[pl.col(k).first() for k in keys],
            pl.len().alias("hours_used"),
            pl.col("samples").sum().cast(pl.Int64).alias("samples_used"),
            pl.col("count").sum().alias("errors_counted"),
            (pl.col("_t").max() - pl.col("_t").min() + 1.0).alias("span_h"),
            pl.col("hour").min().alias("first"),
            pl.col("_last").first().alias("last"),
            pl.col("_limit").first().alias("threshold_per_h"),
        )
        .sort("_g")
    )
    z, robust_z = fit.z, robust.z
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        rate_now = np.exp(fit.a)
        limit = per["threshold_per_h"].to_numpy()
        eta_h = (np.log(limit) - fit.a) / fit.b
    return (
        per.with_columns(
            pl.Series("threshold_eta_s", eta_h * _HOUR_S),
            pl.Series("doubling_time_s", np.log(2) / np.where(fit.b > 0, fit.b, np.nan) * _HOUR_S),
            pl.Series("growth_per_h", fit.b),
            pl.Series("z", z),
            pl.Series("p_value", 0.5 * np.array([math.erfc(v / math.sqrt(2)) for v in z])),
            pl.Series("dispersion", fit.dispersion),
            pl.Series("robust_z", robust_z),
            pl.Series("current_rate_per_h", rate_now),
            pl.Series("_ok", fit.ok & robust.ok & (fit.b > 0) & (robust.b > 0)),
        )
        .filter(
            pl.col("_ok")
            & (pl.col("hours_used") >= cfg["min_hours"])
            & (pl.col("span_h") >= cfg["min_span_h"])
            & (pl.col("z") >= cfg["min_z"])
            & (pl.col("robust_z") >= cfg["min_z"])
            # at or above the rate, link_errors already fires: a forecast is for what has not crossed
            & (pl.col("current_rate_per_h") < pl.col("threshold_per_h"))
            & (pl.col("threshold_eta_s") <= cfg["horizon_days"] * 86400.0)
        )
        .drop("_g", "_ok")
    )


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find ports whose error rate is rising towards its warning rate, with the time it will cross."""
    counters = trend_counters(inp.config)
    if not counters:
        return empty_findings()
    return forecast(hourly_counts(inp.rates, list(counters)), inp.config)


def forecast(hourly: pl.DataFrame, config: dict[str, Any]) -> pl.DataFrame:
    """The findings of the ports whose hourly error counts (:func:`hourly_counts`) forecast a crossing.

    ``analyze`` fits the counts of what it read; cron fits the roll-up it keeps in its history
    (:func:`merge_hourly`), so both judge the same weeks the same way.
    """
    cfg = config[KIND]
    counters = trend_counters(config)
    hourly = hourly.filter(pl.col("counter").is_in(list(counters)))
    if hourly.is_empty():
        return empty_findings()
    limits = {c: v["warning_per_s"] * _HOUR_S for c, v in counters.items()}
    judged = judge(hourly, limits, cfg)
    rows = []
    for ev in judged.iter_rows(named=True):
        host, device, port, counter = (ev.pop(k) for k in ("host", "device", "port", "counter"))
        first, last = ev.pop("first"), ev.pop("last")
        threshold_per_h = ev["threshold_per_h"]
        eta_days = ev["threshold_eta_s"] / 86400
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": host,
                "device": device,
                "port": port,
                "priority": None,
                "layer": "network",
                "start": first,
                "end": last,
                "metric": f"{counter}_eta_s",
                "observed": ev["threshold_eta_s"],
                "expected": cfg["horizon_days"] * 86400.0,
                "message": (
                    f"{str(counter).replace('_', ' ')} rising: {ev['current_rate_per_h']:.3g}/h now, doubling every "
                    f"{ev['doubling_time_s'] / 86400:.2g} days; crosses the {threshold_per_h:g}/h warning rate in "
                    f"{eta_days:.1f} days (z = {ev['z']:.1f} over {ev['hours_used']} hours)"
                ),
                "evidence": {
                    "rule": f"{KIND}.{counter}",
                    **ev,
                    "threshold_source": counters[str(counter)]["source"],
                    "method_source": cfg["source"],
                },
            }
        )
    return make_findings(rows) if rows else empty_findings()


SPEC = DetectorSpec(
    name=KIND,
    summary="error rates rising towards the link_errors warning rate (Poisson trend): when they will cross",
    detect=detect,
    scope="partition",
    actions={
        KIND: "replace the cable/transceiver of {entity} in a maintenance window before its errors reach the "
        "warning rate (mlxlink -p <port> --show_module and the far end's counters confirm which part wears)",
    },
    defaults={
        "min_span_h": 72.0,
        "min_hours": 24,
        "min_z": 3.0,
        "horizon_days": 30.0,
        "rollup_days": 28.0,
        "source": "Poisson regression with a log link and quasi-Poisson over-dispersion (McCullagh and Nelder, "
        "'Generalized Linear Models', 2nd ed., 1989, chapters 6 and 9); span, hours, z and horizon: "
        + default("three days of hourly counts, a one-sided 3-sigma slope, a month of foresight"),
    },
)

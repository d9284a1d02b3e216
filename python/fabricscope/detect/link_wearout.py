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
from typing import Any

import numpy as np
import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings
from fabricscope.findings import empty_findings, make_findings
from fabricscope.sources import default
from fabricscope.vocabulary import counters_with_role

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
    both = pl.concat([stored.cast(HOURLY_SCHEMA), new.cast(HOURLY_SCHEMA)])
    if keep_since is not None:
        both = both.filter(pl.col("hour") >= keep_since)
    return (
        both.group_by(keys)
        .agg(
            pl.col("count").sum(),
            pl.col("exposure_s").sum(),
            pl.col("samples").sum(),
            pl.col("last").max(),
        )
        .select(HOURLY_SCHEMA.names())
        .sort(keys)
    )


def poisson_trend(
    t_h: np.ndarray, counts: np.ndarray, exposure_h: np.ndarray, iterations: int = 50
) -> tuple[float, float, float, float] | None:
    """Fit ``counts ~ Poisson(exposure_h x exp(a + b t_h))``: (a, b, standard error of b, dispersion).

    ``a`` is the log of the hourly rate at ``t_h = 0``. None when the fit has no information (no
    counts, a single time) or does not converge. The dispersion is Pearson's chi2 / (n - 2), at
    least 1.

    Example:
        >>> import numpy as np
        >>> t = np.arange(-100.0, 0.0)
        >>> a, b, se, phi = poisson_trend(t, np.exp(2.0 + 0.01 * t), np.ones_like(t))
        >>> round(a, 3), round(b, 4)
        (2.0, 0.01)
    """
    n = len(t_h)
    if n < 3 or counts.sum() <= 0 or np.ptp(t_h) <= 0:
        return None
    x = np.column_stack([np.ones(n), t_h])
    offset = np.log(exposure_h)
    beta = np.array([math.log(counts.sum() / exposure_h.sum()), 0.0])
    for _ in range(iterations):
        eta = np.clip(x @ beta + offset, -700, 700)
        mu = np.exp(eta)
        grad = x.T @ (counts - mu)
        hess = (x * mu[:, None]).T @ x
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    else:
        return None
    mu = np.exp(np.clip(x @ beta + offset, -700, 700))
    hess = (x * mu[:, None]).T @ x
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        return None
    pearson = float(np.sum((counts - mu) ** 2 / np.maximum(mu, 1e-12)))
    dispersion = max(1.0, pearson / max(n - 2, 1))
    return float(beta[0]), float(beta[1]), math.sqrt(max(cov[1, 1], 0.0)), dispersion


def _z(fit: tuple[float, float, float, float]) -> float:
    _a, b, se, dispersion = fit
    return b / (se * math.sqrt(dispersion)) if se > 0 else 0.0


def judge(hours: pl.DataFrame, threshold_per_h: float, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """One port's counter over its hours: the trend's evidence when it forecasts a crossing, else None."""
    if hours.height < cfg["min_hours"]:
        return None
    last = hours["last"].max()
    t_h = ((hours["hour"] - last).dt.total_seconds() / _HOUR_S + 0.5).to_numpy()
    counts = hours["count"].to_numpy()
    exposure_h = hours["exposure_s"].to_numpy() / _HOUR_S
    span_h = float(t_h.max() - t_h.min()) + 1.0
    if span_h < cfg["min_span_h"]:
        return None
    fit = poisson_trend(t_h, counts, exposure_h)
    if fit is None or fit[1] <= 0:
        return None
    z = _z(fit)
    if z < cfg["min_z"]:
        return None
    # one burst is not a trend: the slope must survive losing the largest hour
    keep = np.arange(len(counts)) != int(np.argmax(counts))
    robust = poisson_trend(t_h[keep], counts[keep], exposure_h[keep])
    if robust is None or robust[1] <= 0 or _z(robust) < cfg["min_z"]:
        return None
    a, b, _se, dispersion = fit
    rate_now = math.exp(a)  # per hour at the last sample (t = 0)
    if rate_now >= threshold_per_h:
        return None
    eta_h = (math.log(threshold_per_h) - a) / b
    if eta_h > cfg["horizon_days"] * 24:
        return None
    return {
        "threshold_eta_s": eta_h * _HOUR_S,
        "doubling_time_s": math.log(2) / b * _HOUR_S,
        "growth_per_h": b,
        "z": z,
        "p_value": 0.5 * math.erfc(z / math.sqrt(2)),
        "dispersion": dispersion,
        "robust_z": _z(robust),
        "current_rate_per_h": rate_now,
        "threshold_per_h": threshold_per_h,
        "hours_used": int(hours.height),
        "samples_used": int(hours["samples"].sum()),
        "errors_counted": float(counts.sum()),
        "span_h": span_h,
        "last": last,
        "first": hours["hour"].min(),
    }


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
    rows = []
    for (host, device, port, counter), hours in hourly.sort("hour").group_by(
        "host", "device", "port", "counter", maintain_order=True
    ):
        c = counters[str(counter)]
        threshold_per_h = c["warning_per_s"] * _HOUR_S
        ev = judge(hours, threshold_per_h, cfg)
        if ev is None:
            continue
        first, last = ev.pop("first"), ev.pop("last")
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
                    "threshold_source": c["source"],
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

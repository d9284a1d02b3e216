"""Links that wear out over weeks, as daily node_exporter files, with the truth of each link.

The second-by-second fabric model (:mod:`fabricscope.simulate.model`) is built for minutes of
traffic; wear-out needs weeks of error counts and nothing else, so this writer draws the symbol
errors of each link's hours directly: Poisson counts around an hourly rate that is constant
(``steady``), grows exponentially (``rising``), is constant with one burst (``burst``), is constant
with a counter reset (``reset``), or is rising but scraped every six hours (``sparse``). Every link
is one host's ``mlx5_0`` port 1, scraped (by default hourly) into one file per day, as a
node_exporter textfile with timestamps (``node_infiniband_symbol_error_total``).

``truth.json`` names each link, its kind, its hourly rate at the end and, for a rising link, when
its rate reaches the warning rate (``eta_s``, from the last scrape).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["KINDS", "WearLink", "population", "write_wearout"]

KINDS = ("rising", "steady", "burst", "reset", "sparse")
_METRIC = "node_infiniband_symbol_error_total"
_START = dt.datetime(2026, 11, 16, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class WearLink:
    """One link's error history.

    Attributes:
        host: Its host (the ``instance`` without port).
        kind: One of :data:`KINDS`.
        rate_end_per_h: Its hourly error rate at the end of the history.
        doubling_h: For a growing rate, its doubling time in hours (None: constant).
        scrape_h: Hours between scrapes.
    """

    host: str
    kind: str
    rate_end_per_h: float
    doubling_h: float | None = None
    scrape_h: float = 1.0

    def rate_per_h(self, t_h: np.ndarray) -> np.ndarray:
        """The true hourly rate at hours ``t_h`` before the end (t <= 0)."""
        if self.doubling_h is None:
            return np.full_like(t_h, self.rate_end_per_h, dtype=float)
        return self.rate_end_per_h * np.exp(math.log(2) / self.doubling_h * t_h)

    def eta_s(self, threshold_per_h: float) -> float | None:
        """Seconds from the end until the true rate reaches ``threshold_per_h`` (None: never)."""
        if self.doubling_h is None or self.rate_end_per_h >= threshold_per_h:
            return None
        return math.log(threshold_per_h / self.rate_end_per_h) * self.doubling_h / math.log(2) * 3600.0


def _cumulative(link: WearLink, hours: int, rng: np.random.Generator) -> np.ndarray:
    """The counter's value at the end of each hour (0..hours), as the port would count it."""
    t_h = np.arange(hours, dtype=float) - hours + 0.5
    counts = rng.poisson(link.rate_per_h(t_h)).astype(float)
    if link.kind == "burst":
        counts[hours - 30] += 400.0 + rng.integers(0, 200)
    values = np.concatenate([[float(rng.integers(0, 50))], counts]).cumsum()
    if link.kind == "reset":
        # the counters were cleared (perfquery -R) five days before the end
        at = hours - 120
        values[at:] -= values[at]
    return values


def write_wearout(
    outdir: Path,
    links: list[WearLink],
    *,
    days: int = 14,
    threshold_per_h: float = 120.0,
    seed: int = 7,
    start: dt.datetime = _START,
) -> dict[str, object]:
    """Write ``days`` daily node_exporter files of ``links`` from ``start``, and ``truth.json``, into ``outdir``.

    Returns:
        The truth document (also written to ``truth.json``).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    hours = days * 24
    values = {link.host: _cumulative(link, hours, rng) for link in links}
    for day in range(days):
        lines = [f"# HELP {_METRIC} Symbol errors of the port.", f"# TYPE {_METRIC} counter"]
        for link in links:
            step = max(1, round(link.scrape_h))
            for h in range(day * 24, day * 24 + 24):
                if h % step:
                    continue
                t = start + dt.timedelta(hours=h)
                v = values[link.host][h]
                lines.append(
                    f'{_METRIC}{{device="mlx5_0",instance="{link.host}:9100",job="node",port="1"}} '
                    f"{v:g} {int(t.timestamp() * 1000)}"
                )
        name = (start + dt.timedelta(days=day)).strftime("node-%Y-%m-%d.prom")
        (outdir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    end = start + dt.timedelta(hours=hours - 1)
    truth: dict[str, object] = {
        "end": end.isoformat().replace("+00:00", "Z"),
        "threshold_per_h": threshold_per_h,
        "links": [
            {
                "host": link.host,
                "device": "mlx5_0",
                "port": 1,
                "kind": link.kind,
                "rate_end_per_h": link.rate_end_per_h,
                "doubling_h": link.doubling_h,
                "scrape_h": link.scrape_h,
                "eta_s": link.eta_s(threshold_per_h),
                "wearing_out": link.doubling_h is not None,
            }
            for link in links
        ],
    }
    (outdir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return truth


def scenario_links(prefix: str = "wear") -> list[WearLink]:
    """One link of each kind: the rising ones double every two days from 5/h towards 120/h."""
    return [
        WearLink(f"{prefix}-rising.example", "rising", 5.0, doubling_h=48.0),
        WearLink(f"{prefix}-steady.example", "steady", 6.0),
        WearLink(f"{prefix}-burst.example", "burst", 4.0),
        WearLink(f"{prefix}-reset.example", "reset", 5.0),
        WearLink(f"{prefix}-sparse.example", "sparse", 5.0, doubling_h=48.0, scrape_h=6.0),
    ]


def population(n: int, seed: int = 11, share_rising: float = 0.3) -> list[WearLink]:
    """``n`` links with random kinds, rates and trends (for the benchmark's precision and recall)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if rng.random() < share_rising:
            doubling = float(rng.uniform(24.0, 120.0))
            out.append(WearLink(f"pop{i:04d}.example", "rising", float(rng.uniform(2.0, 30.0)), doubling_h=doubling))
        else:
            kind = str(rng.choice(["steady", "burst", "reset"]))
            out.append(WearLink(f"pop{i:04d}.example", kind, float(rng.uniform(0.2, 60.0))))
    return out

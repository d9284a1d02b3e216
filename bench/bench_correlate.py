"""Correlation's cost against the number of findings: the slope of ``fabricscope.incidents.correlate.correlate``.

Each host has an erroring port (a ``link_errors`` finding), the loss its receiver measured and, for
every other host, a sender's retransmissions of the same count (a ``same_count`` pair): 3 findings
a host, every relation index exercised. Prints seconds per size and the slope between sizes
(1.0: linear, 2.0: quadratic).

    python bench/bench_correlate.py 1000 10000 100000
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import time

from fabricscope.incidents.correlate import correlate
from fabricscope.incidents.findings import make_findings

T = dt.datetime(2026, 12, 4, 14, tzinfo=dt.timezone.utc)


def findings(hosts: int) -> list[dict]:
    rows = []
    for i in range(hosts):
        start = T + dt.timedelta(seconds=10 * (i % 360))
        common = {"device": "mlx5_0", "port": 1, "start": start, "end": start + dt.timedelta(minutes=5), "message": "m"}
        events = 2000.0 + 7 * i
        rows.append(
            {
                "kind": "link_errors",
                "severity": "critical",
                "host": f"h{i:06d}",
                "metric": "symbol_errors",
                "observed": 20.0,
                "evidence": {},
                **common,
            }
        )
        rows.append(
            {
                "kind": "packet_loss",
                "severity": "warning",
                "host": f"h{i:06d}",
                "metric": "loss_rate_rx",
                "observed": 1e-5,
                "evidence": {"direction": "rx", "events": events},
                **common,
            }
        )
        if i % 2:
            rows.append(
                {
                    "kind": "packet_loss",
                    "severity": "warning",
                    "host": f"s{i:06d}",
                    "metric": "loss_rate_tx",
                    "observed": 1e-5,
                    "evidence": {"direction": "tx", "events": events},
                    **common,
                }
            )
    return rows


def main() -> None:
    sizes = [int(x) for x in sys.argv[1:]] or [1000, 10000, 100000]
    last = None
    for n in sizes:
        frame = make_findings(findings(n))
        t = time.perf_counter()
        incidents = correlate(frame)
        s = time.perf_counter() - t
        slope = "" if last is None else f"  slope {math.log(s / last[1]) / math.log(n / last[0]):.2f}"
        print(f"{n:>7} hosts  {frame.height:>7} findings  {len(incidents):>7} incidents  {s:7.2f} s{slope}")
        last = (n, s)


if __name__ == "__main__":
    main()

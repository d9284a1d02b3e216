"""Pull speed from a local Prometheus server: fabricscope's APIs versus plain urllib + json.

    python bench/bench_prometheus_pull.py [--samples 1000000 10000000] [--keep DIR] [--repeat N]

Builds a TSDB with ``promtool tsdb create-blocks-from openmetrics`` holding node_exporter
InfiniBand counters (1,000 or 2,000 series, one sample every 15 s), serves it with Debian's
``prometheus`` on 127.0.0.1, then times, each in a fresh process (peak RSS is that process's;
the wall time excludes importing the packages):

* ``fabricscope read``: ``fabricscope.load(URL, remote=RemoteOptions(since, until))``, the
  default: remote read (``POST /api/v1/read``, snappy-compressed protobuf) decoded in Rust into
  the canonical samples table (exact u64 values, canonical names, attributes);
* ``fabricscope query``: the same through range selectors on ``/api/v1/query`` (JSON);
* ``fabricscope query_range``: ``/api/v1/query_range`` with a 15 s step (JSON);
* ``urllib+json``: range-selector requests (one per 900 s chunk) with ``urllib`` and
  ``json.loads``, the values turned into a Polars frame of (labels, time, float): what a script
  around the HTTP API does (``prometheus-api-client`` is this plus pandas; it is timed instead
  when installed, as ``prometheus-api-client``);
* ``remote-read transfer``: ``/api/v1/read`` one request per 900 s chunk, transfer and snappy
  decompression only (no decoding into rows; needs ``cramjam``): a lower bound for that API.

``--keep DIR`` keeps (and reuses) the generated TSDB. Prints a Markdown table with the load
average before each method; the numbers go in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

T0_S = 1_796_400_000
STEP_S = 15
METRICS = [
    "node_infiniband_port_data_transmitted_bytes_total",
    "node_infiniband_port_data_received_bytes_total",
    "node_infiniband_port_packets_transmitted_total",
    "node_infiniband_port_packets_received_total",
    "node_infiniband_port_transmit_wait_total",
]
CHUNK_S = 900


def shape(samples: int) -> tuple[int, int]:
    """``(series, points per series)`` of a benchmark TSDB."""
    series = 1000 if samples <= 1_000_000 else 2000
    return series, samples // series


def window(samples: int) -> tuple[int, int]:
    """``(since_ns, until_ns)`` holding every sample :func:`build` writes."""
    points = shape(samples)[1]
    return T0_S * 10**9, (T0_S + points * STEP_S + 1) * 10**9


def build(openmetrics: Path, samples: int) -> tuple[int, int]:
    """Write ``samples`` samples; returns ``(since_ns, until_ns)``."""
    series, points = shape(samples)
    hosts = series // (len(METRICS) * 2)
    with openmetrics.open("w") as f:
        for h in range(hosts):
            for dev in ("mlx5_0", "mlx5_1"):
                for m_i, m in enumerate(METRICS):
                    head = f'{m}{{device="{dev}",instance="gpu{h:04d}:9100",job="node",port="1"}}'
                    v = 10**12 * (m_i + 1) + h
                    lines = []
                    for p in range(points):
                        v += 1_234_567 * (p % 7 + 1)
                        lines.append(f"{head} {v} {T0_S + p * STEP_S}.{(h * 7) % 1000:03d}\n")
                    f.writelines(lines)
        f.write("# EOF\n")
    return window(samples)


def run_fabricscope(url: str, since: int, until: int, api: str) -> int:
    import fabricscope
    from fabricscope.reading.prometheus import RemoteOptions

    step = float(STEP_S) if api == "query_range" else None
    res = fabricscope.load(url, remote=RemoteOptions(since=since, until=until, step_s=step, api=api))
    return res.samples.height


def run_prometheus_api_client(url: str, since: int, until: int) -> int:
    import datetime as dt

    import pandas as pd
    from prometheus_api_client import PrometheusConnect

    prom = PrometheusConnect(url=url, disable_ssl=True)
    regex = "|".join(METRICS)
    frames = []
    a = since // 10**9
    while a < until // 10**9:
        b = min(until // 10**9, a + CHUNK_S)
        # Range selectors evaluated at the chunk's end: raw samples, as fabricscope pulls them.
        data = prom.custom_query(f'{{__name__=~"{regex}"}}[{b - a}s]', params={"time": b})
        for s in data:
            frames.append(pd.DataFrame(s["values"], columns=["time", "value"]).assign(labels=str(s["metric"])))
        a = b
    del dt
    return int(sum(len(f) for f in frames))


def run_urllib(url: str, since: int, until: int) -> int:
    import urllib.parse
    import urllib.request

    import polars as pl

    regex = "|".join(METRICS)
    frames = []
    a = since // 10**6
    end = until // 10**6
    while a < end:
        b = min(end, a + CHUNK_S * 1000)
        form = urllib.parse.urlencode({"query": f'{{__name__=~"{regex}"}}[{b - a}ms]', "time": f"{(b - 1) / 1000:.3f}"})
        with urllib.request.urlopen(url + "/api/v1/query", data=form.encode(), timeout=300) as r:
            doc = json.loads(r.read())
        labels, times, values = [], [], []
        for s in doc["data"]["result"]:
            key = json.dumps(s["metric"], sort_keys=True)
            for t, v in s["values"]:
                if a / 1000 <= t < b / 1000:
                    labels.append(key)
                    times.append(float(t))
                    values.append(float(v))
        frames.append(pl.DataFrame({"labels": labels, "time": times, "value": values}))
        a = b
    return pl.concat(frames).height


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def run_remote_read(url: str, since: int, until: int) -> int:
    import urllib.request

    import cramjam

    received = 0
    a = since // 10**6
    end = until // 10**6
    while a < end:
        b = min(end, a + CHUNK_S * 1000)
        matcher = _varint(1 << 3 | 0) + _varint(2) + _field(2, b"__name__") + _field(3, "|".join(METRICS).encode())
        query = _varint(1 << 3 | 0) + _varint(a) + _varint(2 << 3 | 0) + _varint(b - 1) + _field(3, matcher)
        body = bytes(cramjam.snappy.compress_raw(_field(1, query)))
        req = urllib.request.Request(
            url + "/api/v1/read",
            data=body,
            headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"},
        )
        with urllib.request.urlopen(req, timeout=300) as r:
            received += len(bytes(cramjam.snappy.decompress_raw(r.read())))
        a = b
    return received


METHODS = {
    "fabricscope read": "remote read (`/api/v1/read`, protobuf), Rust decode to the samples table (the default)",
    "fabricscope query": "range selectors via `/api/v1/query` (JSON), Rust decode to the samples table",
    "fabricscope query_range": "`/api/v1/query_range`, 15 s step (JSON)",
    "urllib+json": "urllib + json.loads -> Polars (range selectors, 900 s chunks)",
    "prometheus-api-client": "prometheus-api-client custom_query (range selectors, 900 s chunks) -> pandas",
    "remote-read transfer": "`/api/v1/read` transfer + snappy decompress only (no decoding)",
}


def child(method: str, url: str, since: int, until: int) -> None:
    # Imports first: the wall time is the pull, not Python's start-up.
    if method.startswith("fabricscope"):
        import fabricscope  # noqa: F401
    import polars  # noqa: F401

    t = time.perf_counter()
    if method.startswith("fabricscope "):
        n = run_fabricscope(url, since, until, method.split()[1])
    elif method == "urllib+json":
        n = run_urllib(url, since, until)
    elif method == "prometheus-api-client":
        n = run_prometheus_api_client(url, since, until)
    else:
        n = run_remote_read(url, since, until)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"method": method, "n": n, "wall_s": wall, "peak_rss_bytes": rss}))


def _available(method: str) -> bool:
    import importlib.util

    needs = {"prometheus-api-client": "prometheus_api_client", "remote-read transfer": "cramjam"}.get(method)
    return needs is None or importlib.util.find_spec(needs) is not None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS), metavar="METHOD")
    ap.add_argument("--repeat", type=int, default=1, help="runs per method; the fastest is reported")
    ap.add_argument("--keep", type=Path, help="work directory to keep and reuse (default: a temporary one)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        method, url, since, until = args.child
        child(method, url, int(since), int(until))
        return
    from tests.prometheus_server import serve

    methods = [m for m in args.methods if _available(m)]
    skipped = [m for m in args.methods if m not in methods]
    rows = []
    for n in args.samples:
        work = args.keep or Path(tempfile.mkdtemp(prefix="fabricscope-bench-prom-"))
        work = work / f"n{n}"
        work.mkdir(parents=True, exist_ok=True)
        om = work / "bench.om"
        t = time.perf_counter()
        if args.keep is not None and (work / "data").is_dir():
            since, until = window(n)
        else:
            since, until = build(om, n)
            mb = om.stat().st_size / 1e6
            print(f"# {n:,} samples: {mb:,.0f} MB of OpenMetrics in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        with serve(om, work, ready_timeout_s=900, reuse=args.keep is not None) as url:
            print(f"# promtool + server start: {time.perf_counter() - t:.1f} s")
            for method in methods:
                best = None
                for _ in range(max(1, args.repeat)):
                    load = os.getloadavg()[0]
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", method, url, str(since), str(until)],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if out.returncode:
                        print(f"# {method}: failed: {out.stderr.strip()[-500:]}")
                        break
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    r["load"] = load
                    if best is None or r["wall_s"] < best["wall_s"]:
                        best = r
                if best is None:
                    continue
                rate = n / best["wall_s"]
                unit = "bytes decompressed" if method == "remote-read transfer" else "rows"
                print(f"# {n:>10,} {method:<24} {best['wall_s']:7.2f} s {rate / 1e6:6.2f} M/s ({best['n']:,} {unit})")
                rows.append((n, method, best, rate))
    print()
    print("| samples | method | wall | samples/s | vs urllib+json | peak RSS | load avg (1 min) |")
    print("|---|---|---|---|---|---|---|")
    for n, method, r, rate in rows:
        base = next((b for m, mm, b, _ in rows if m == n and mm == "urllib+json"), None)
        ratio = f"{base['wall_s'] / r['wall_s']:.2f}x" if base else "-"
        print(
            f"| 10^{len(str(n)) - 1} | {method}: {METHODS[method]} | {r['wall_s']:.2f} s | {rate / 1e6:.2f} M "
            f"| {ratio} | {r['peak_rss_bytes'] / 2**20:,.0f} MiB | {r['load']:.1f} |"
        )
    if skipped:
        print(f"\nNot installed, not timed: {', '.join(skipped)}")


if __name__ == "__main__":
    main()

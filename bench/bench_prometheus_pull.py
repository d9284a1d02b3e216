"""Pull speed from a local Prometheus server: fabricscope versus plain urllib + json.

    python bench/bench_prometheus_pull.py [--samples 1000000 10000000] [--keep DIR]

Builds a TSDB with ``promtool tsdb create-blocks-from openmetrics`` holding node_exporter
InfiniBand counters (SERIES series, one sample every 15 s), serves it with Debian's
``prometheus`` on 127.0.0.1, then times, each in a fresh process (peak RSS is that process's):

* ``fabricscope``: ``fabricscope.load(URL, remote=RemoteOptions(since, until))``: range
  selectors through ``/api/v1/query``, chunks adapted to ~500k samples, JSON decoded in Rust to
  the canonical samples table (exact u64 values);
* ``fabricscope-query-range``: the same through ``/api/v1/query_range`` with a 15 s step;
* ``urllib+json``: the same range-selector requests (same chunks of 900 s) with ``urllib`` and
  ``json.loads``, the values turned into a Polars frame of (labels, time, float) - what a script
  around the HTTP API does (``prometheus-api-client`` is this plus pandas);
* ``remote-read``: ``/api/v1/read`` (snappy-compressed protobuf, one request per 900 s chunk),
  transfer and decompression only (no decoding into rows): a lower bound for that API.

Reported: wall seconds, samples/s and peak RSS; the numbers go in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
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


def build(openmetrics: Path, samples: int) -> tuple[int, int]:
    """Write ``samples`` samples; returns ``(since_ns, until_ns)``."""
    series = 1000 if samples <= 1_000_000 else 2000
    points = samples // series
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
    return T0_S * 10**9, (T0_S + points * STEP_S + 1) * 10**9


def run_fabricscope(url: str, since: int, until: int, step: float | None) -> int:
    import fabricscope
    from fabricscope.remote import RemoteOptions

    res = fabricscope.load(url, remote=RemoteOptions(since=since, until=until, step_s=step))
    return res.samples.height


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


def child(method: str, url: str, since: int, until: int) -> None:
    t = time.perf_counter()
    if method == "fabricscope":
        n = run_fabricscope(url, since, until, None)
    elif method == "fabricscope-query-range":
        n = run_fabricscope(url, since, until, float(STEP_S))
    elif method == "urllib+json":
        n = run_urllib(url, since, until)
    else:
        n = run_remote_read(url, since, until)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"method": method, "n": n, "wall_s": wall, "peak_rss_bytes": rss}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument(
        "--methods", nargs="+", default=["fabricscope", "urllib+json", "fabricscope-query-range", "remote-read"]
    )
    ap.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        method, url, since, until = args.child
        child(method, url, int(since), int(until))
        return
    from tests.prometheus_server import serve

    for n in args.samples:
        work = args.keep or Path(tempfile.mkdtemp(prefix="fabricscope-bench-prom-"))
        work = work / f"n{n}"
        work.mkdir(parents=True, exist_ok=True)
        om = work / "bench.om"
        t = time.perf_counter()
        since, until = build(om, n)
        print(
            f"# {n:,} samples: wrote {om.stat().st_size / 1e6:,.0f} MB of OpenMetrics "
            f"in {time.perf_counter() - t:.1f} s"
        )
        t = time.perf_counter()
        with serve(om, work, ready_timeout_s=600) as url:
            print(f"# promtool + server start: {time.perf_counter() - t:.1f} s")
            for method in args.methods:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", method, url, str(since), str(until)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if out.returncode:
                    print(f"{method}: failed: {out.stderr.strip()[-500:]}")
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                unit = "bytes" if method == "remote-read" else "samples"
                rate = n / r["wall_s"]
                print(
                    f"{n:>10,} {method:<24} {r['wall_s']:7.2f} s {rate / 1e6:6.2f} M samples/s "
                    f"peak RSS {r['peak_rss_bytes'] / 2**20:7.0f} MiB ({r['n']:,} {unit})"
                )


if __name__ == "__main__":
    main()

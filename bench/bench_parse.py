"""Parse throughput: fabricscope's Prometheus reader against prometheus_client, in one run.

    python bench/bench_parse.py [--mb 100] [--repeat 3]

Generates a deterministic Prometheus /federate file of about --mb megabytes under bench/data/
(node_exporter InfiniBand and ethtool families for many hosts, `instance`/`job` labels, ms
timestamps), then measures, medians of --repeat runs with the file warm in the page cache:

* fabricscope.read(path) end to end: Rust parse into Arrow batches + the Polars DataFrame;
* the same, over the file split in two (two inputs are parsed on two threads);
* prometheus_client.parser.text_string_to_metric_families on a prefix (it is ~100x slower),
  consuming every sample: the named baseline. Ratios are fabricscope / baseline.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

FAMILIES = [
    "node_infiniband_port_data_transmitted_bytes_total",
    "node_infiniband_port_data_received_bytes_total",
    "node_infiniband_port_packets_transmitted_total",
    "node_infiniband_port_packets_received_total",
    "node_infiniband_port_transmit_wait_total",
    "node_infiniband_symbol_error_total",
    "node_infiniband_link_downed_total",
    "node_infiniband_port_errors_received_total",
    "node_ethtool_received_prio3_pause",
    "node_ethtool_received_prio3_pause_duration",
    "node_ethtool_transmitted_prio3_pause",
    "node_ethtool_received_discards_phy",
]


def generate(path: Path, target_bytes: int) -> tuple[int, int]:
    """Write a federate file of at least target_bytes; returns (bytes, samples)."""
    rng = random.Random(4791)
    t0 = 1_796_200_000_000
    samples = 0
    written = 0
    with path.open("w") as f:
        scrape = 0
        while written < target_bytes:
            ts = t0 + scrape * 15_000
            parts: list[str] = []
            for fam in FAMILIES:
                parts.append(f"# TYPE {fam} untyped\n")
                for h in range(256):
                    for d in range(4):
                        dev = f"mlx5_{d}" if fam.startswith("node_infiniband") else f"eth{d}"
                        port = ',port="1"' if fam.startswith("node_infiniband") else ""
                        v = rng.randrange(0, 1 << 50)
                        inst = f"gpu{h:04d}.cluster.local:9100"
                        parts.append(f'{fam}{{device="{dev}",instance="{inst}",job="node"{port}}} {v} {ts}\n')
                        samples += 1
            chunk = "".join(parts)
            f.write(chunk)
            written += len(chunk)
            scrape += 1
    return written, samples


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-mb", type=int, default=8, help="prefix size parsed by prometheus_client")
    args = ap.parse_args()

    import fabricscope
    import polars as pl

    DATA.mkdir(exist_ok=True)
    path = DATA / f"federate-{args.mb}mb.prom"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        generate(path, args.mb * 1_000_000)
    size = path.stat().st_size
    raw = path.read_bytes()
    half = raw.rfind(b"\n# TYPE", 0, len(raw) // 2) + 1
    parts = [DATA / "split-a.prom", DATA / "split-b.prom"]
    parts[0].write_bytes(raw[:half])
    parts[1].write_bytes(raw[half:])
    prefix = raw[: raw.rfind(b"\n", 0, args.baseline_mb * 1_000_000) + 1].decode()
    del raw

    n_rows = fabricscope.read(path).height  # warm-up + row count
    t_one = median_time(lambda: fabricscope.read(path), args.repeat)
    t_two = median_time(lambda: fabricscope.read(parts), args.repeat)

    from prometheus_client.parser import text_string_to_metric_families

    def baseline() -> int:
        n = 0
        for fam in text_string_to_metric_families(prefix):
            for _ in fam.samples:
                n += 1
        return n

    t_base = median_time(baseline, max(1, args.repeat - 2))
    base_mb_s = len(prefix) / 1e6 / t_base
    one_mb_s = size / 1e6 / t_one
    two_mb_s = size / 1e6 / t_two

    print(
        f"machine: {platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}, "
        f"polars {pl.__version__}, fabricscope {fabricscope.__version__}"
    )
    print(f"input: {path.name}, {size / 1e6:.1f} MB, {n_rows:,} samples")
    print()
    print("| reader | MB/s | samples/s | vs prometheus_client |")
    print("|---|---|---|---|")
    print(
        f"| prometheus_client text_string_to_metric_families ({len(prefix) / 1e6:.0f} MB prefix) | "
        f"{base_mb_s:,.1f} | {base_mb_s * n_rows / (size / 1e6):,.0f} | 1.0x |"
    )
    print(
        f"| fabricscope.read, 1 file (1 core) into a Polars DataFrame | {one_mb_s:,.0f} | "
        f"{n_rows / t_one:,.0f} | {one_mb_s / base_mb_s:,.0f}x |"
    )
    print(
        f"| fabricscope.read, same data as 2 files (2 cores) | {two_mb_s:,.0f} | "
        f"{n_rows / t_two:,.0f} | {two_mb_s / base_mb_s:,.0f}x |"
    )


if __name__ == "__main__":
    main()

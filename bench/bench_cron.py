"""`fabricscope cron` over 10,000 small files: first run, idle run, and a typical incremental tick.

    python bench/bench_cron.py [--files 10000] [--hosts 100] [--new 100] [--keep DIR]

Builds a directory of node_exporter scrapes as a per-host textfile/federate dump would leave them:
``HOST/scrape-<epoch>.prom``, each one scrape of one host (2 HCAs x 10 InfiniBand metrics, the
node_exporter spellings and millisecond timestamps of sample_traces/prometheus/federate-rail0.prom).
Then times, each in a fresh process as cron would start it:

* cold: the first run, every file new;
* idle: nothing changed (a manifest check of 10,000 files);
* tick: ``--new`` more scrapes appeared (one per host) and as many logs grew: the steady state.

Reported as wall seconds per run (median of ``--repeat``); the numbers go in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = [
    ("node_infiniband_port_data_transmitted_bytes_total", 2.5e10),
    ("node_infiniband_port_data_received_bytes_total", 2.5e10),
    ("node_infiniband_port_packets_transmitted_total", 6e6),
    ("node_infiniband_port_packets_received_total", 6e6),
    ("node_infiniband_port_transmit_wait_total", 1e4),
    ("node_infiniband_symbol_error_total", 0),
    ("node_infiniband_port_errors_received_total", 0),
    ("node_infiniband_link_downed_total", 0),
]
T0_MS = 1_796_200_000_000
STEP_MS = 10_000


def scrape(host: str, k: int) -> str:
    ts = T0_MS + k * STEP_MS
    lines = []
    for name, per_step in METRICS:
        lines.append(f"# TYPE {name} counter")
        for dev in ("mlx5_0", "mlx5_1"):
            v = 1_000_000 + per_step * k
            lines.append(f'{name}{{device="{dev}",instance="{host}:9100",job="node",port="1"}} {v:.14g} {ts}')
    lines.append("# TYPE node_infiniband_rate_bytes_per_second gauge")
    for dev in ("mlx5_0", "mlx5_1"):
        labels = f'device="{dev}",instance="{host}:9100",job="node",port="1"'
        lines.append(f"node_infiniband_rate_bytes_per_second{{{labels}}} 5e+10 {ts}")
    return "\n".join(lines) + "\n"


def build(root: Path, files: int, hosts: int) -> int:
    per_host = files // hosts
    for h in range(hosts):
        d = root / f"gpu{h:04d}"
        d.mkdir(parents=True)
        for k in range(per_host):
            (d / f"scrape-{(T0_MS + k * STEP_MS) // 1000}.prom").write_text(scrape(f"gpu{h:04d}", k))
    return per_host


def tick(root: Path, hosts: int, k: int) -> None:
    for h in range(hosts):
        d = root / f"gpu{h:04d}"
        (d / f"scrape-{(T0_MS + k * STEP_MS) // 1000}.prom").write_text(scrape(f"gpu{h:04d}", k))


def run(inp: Path, work: Path) -> tuple[float, str]:
    cmd = [
        sys.executable,
        "-m",
        "fabricscope",
        "cron",
        "--inputs",
        str(inp),
        "--state",
        str(work / "state"),
        "--history",
        str(work / "hist"),
        "--textfile",
        str(work / "fabricscope.prom"),
    ]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode not in (0, 1, 2):
        raise SystemExit(f"cron failed ({p.returncode}): {p.stdout}{p.stderr}")
    return dt, p.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build here and keep it (default: a temp dir)")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="fabricscope-bench-cron-"))
    try:
        inp = base / "in"
        per_host = build(inp, args.files, args.hosts)
        nfiles = sum(1 for _ in inp.rglob("*.prom"))
        cold, out = run(inp, base)
        print(f"inputs: {nfiles} files, {sum(p.stat().st_size for p in inp.rglob('*.prom')) / 1e6:.1f} MB")
        print(f"cold  (all {nfiles} files new): {cold:6.2f} s   {out[:100]}")
        idle = []
        for _ in range(args.repeat):
            idle.append(run(inp, base)[0])
        print(
            f"idle  (nothing new, {nfiles} files checked): {statistics.median(idle):6.2f} s (median of {args.repeat})"
        )
        ticks = []
        for r in range(args.repeat):
            tick(inp, args.hosts, per_host + r)
            d, out = run(inp, base)
            ticks.append(d)
        print(
            f"tick  ({args.hosts} new scrapes among {nfiles + args.hosts * args.repeat} files): "
            f"{statistics.median(ticks):6.2f} s (median of {args.repeat})   {out[:100]}"
        )
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import fabricscope.doors.cron"], check=True)
        print(f"python + fabricscope import alone: {time.perf_counter() - t:.2f} s")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    os.sys.stdout.flush()


if __name__ == "__main__":
    main()

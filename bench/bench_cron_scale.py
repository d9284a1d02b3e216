"""`fabricscope cron` at datacenter scale: consecutive runs, each bringing one new scrape of a large fabric.

    python bench/bench_cron_scale.py [--hosts 8000] [--runs 12] [--step 60] [--keep DIR]

Each scrape is one Prometheus text file, as a federation dump or a textfile collector leaves it:
``--hosts`` hosts x 8 HCAs x 12 InfiniBand counters (node_exporter's infiniband collector
spellings, an ``instance`` label, millisecond timestamps), ``--step`` seconds after the previous
one. A few ports (one in 1,000) have symbol errors rising, so the carried lookback and the
findings are exercised too. Then, each in a fresh process as cron would start it:

* ``analyze`` of the first scrape: the baseline the first run is compared with;
* ``--runs`` cron runs over the same state and history, the k-th with the k-th scrape added to
  the watched directory.

Reported per run: wall seconds, peak RSS of the process, files the run added to the history and
the history's bytes per stored sample; then the same-run ratios the goals are stated in (first
run / analyze, last run / first run for time and RSS). A second, smaller fabric (``--hosts``/8)
over three runs shows that the files a run adds do not depend on the number of hosts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COUNTERS = [
    ("node_infiniband_port_data_transmitted_bytes_total", 2.5e9),
    ("node_infiniband_port_data_received_bytes_total", 2.5e9),
    ("node_infiniband_port_packets_transmitted_total", 6e5),
    ("node_infiniband_port_packets_received_total", 6e5),
    ("node_infiniband_unicast_packets_transmitted_total", 6e5),
    ("node_infiniband_unicast_packets_received_total", 6e5),
    ("node_infiniband_port_transmit_wait_total", 0),
    ("node_infiniband_symbol_error_total", 0),
    ("node_infiniband_port_errors_received_total", 0),
    ("node_infiniband_port_receive_remote_physical_errors_total", 0),
    ("node_infiniband_link_downed_total", 0),
    ("node_infiniband_link_error_recovery_total", 0),
]
T0_MS = 1_796_200_000_000
HCAS = 8


def write_scrape(path: Path, hosts: int, k: int, step_s: int) -> None:
    """Scrape ``k`` of every host into one file (one host in 1,000 with rising symbol errors)."""
    ts = T0_MS + k * step_s * 1000
    with path.open("w") as out:
        for name, per_step in COUNTERS:
            out.write(f"# TYPE {name} counter\n")
            lines = []
            for h in range(hosts):
                erroring = h % 1000 == 7
                for d in range(HCAS):
                    # every port at its own load (30-100 %), as real counters differ: the history's
                    # compression is measured on values that vary, not on one repeated number
                    load = 0.3 + ((h * HCAS + d) * 2654435761 % 1000) / 1430
                    v = 1_000_000 + (h * HCAS + d) * 7919 + round(per_step * load) * k
                    if name == "node_infiniband_symbol_error_total" and erroring and d == 0:
                        v = 40 * k * k  # accelerating: a link wearing out
                    lines.append(
                        f'{name}{{device="mlx5_{d}",instance="gpu{h:05d}:9100",job="node",port="1"}} {v:.14g} {ts}\n'
                    )
            out.write("".join(lines))


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) of the child and its first output line."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    out = p.stdout.read() if p.stdout else ""
    err = p.stderr.read() if p.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 2):
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({code}): {out[-2000:]}{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, (out.strip().splitlines() or [""])[0]


def cron_cmd(inp: Path, work: Path) -> list[str]:
    return [
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


def history_files(hist: Path) -> list[Path]:
    return [p for p in hist.rglob("*.parquet") if ".staging" not in p.parts]


def series(base: Path, hosts: int, runs: int, step: int, label: str) -> list[dict[str, float]]:
    scrapes = base / f"scrapes-{hosts}"
    scrapes.mkdir(parents=True, exist_ok=True)
    inp, work = base / f"in-{hosts}", base / f"work-{hosts}"
    inp.mkdir()
    work.mkdir()
    rows = []
    for k in range(runs):
        src = scrapes / f"scrape-{k:03d}.prom"
        if not src.exists():
            write_scrape(src, hosts, k, step)
        shutil.copy(src, inp / src.name)
        before = len(history_files(work / "hist"))
        wall, rss, line = timed(cron_cmd(inp, work))
        files = history_files(work / "hist")
        parts = [p for p in files if p.relative_to(work / "hist").parts[0] == "samples"]
        stored = sum(p.stat().st_size for p in parts)
        samples = (k + 1) * hosts * HCAS * len(COUNTERS)
        rows.append({"run": k + 1, "wall_s": wall, "rss_mib": rss, "files_added": len(files) - before})
        print(
            f"{label} run {k + 1:2d}: {wall:6.2f} s  peak RSS {rss:6.0f} MiB  history files +{len(files) - before}"
            f" ({len(files)} in all)  samples {stored / samples:.2f} B/sample  {line[:90]}",
            flush=True,
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=8000)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--step", type=int, default=60, help="seconds between scrapes (default 60)")
    ap.add_argument("--keep", type=Path, help="build here and keep it (default: a temp dir)")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="fabricscope-bench-cron-scale-"))
    try:
        first = base / f"scrapes-{args.hosts}" / "scrape-000.prom"
        first.parent.mkdir(parents=True, exist_ok=True)
        write_scrape(first, args.hosts, 0, args.step)
        n = args.hosts * HCAS * len(COUNTERS)
        print(
            f"one scrape: {args.hosts} hosts x {HCAS} HCAs x {len(COUNTERS)} counters = {n:,} samples, "
            f"{first.stat().st_size / 1e6:.0f} MB"
        )
        a_wall, a_rss, _ = timed([sys.executable, "-m", "fabricscope", "analyze", str(first), "--json", os.devnull])
        print(f"analyze of scrape 1: {a_wall:6.2f} s  peak RSS {a_rss:6.0f} MiB", flush=True)
        rows = series(base, args.hosts, args.runs, args.step, f"{args.hosts} hosts")
        small = series(base, args.hosts // 8, 3, args.step, f"{args.hosts // 8} hosts")
        f, last = rows[0], rows[-1]
        print()
        print(f"first run / analyze (time): {f['wall_s'] / a_wall:.2f}x")
        print(
            f"last run / first run: time {last['wall_s'] / f['wall_s']:.2f}x, "
            f"peak RSS {last['rss_mib'] / f['rss_mib']:.2f}x"
        )
        worst = max(rows[1:], key=lambda r: r["wall_s"])
        print(f"slowest run: {worst['run']} ({worst['wall_s'] / f['wall_s']:.2f}x the first)")
        print(
            f"files added per run: {sorted({r['files_added'] for r in rows})} at {args.hosts} hosts, "
            f"{sorted({r['files_added'] for r in small})} at {args.hosts // 8} hosts"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

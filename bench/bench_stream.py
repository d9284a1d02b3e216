"""Peak RSS of ``fabricscope analyze --memory`` (the streaming engine) as the input grows.

Generates ``/federate``-style Prometheus text, one zstd-compressed file per 100 hosts (8 HCAs x 4
data counters per host, 240 scrapes 15 s apart: one hour), then runs the CLI on it in a child
process and reports that child's peak RSS and wall time; ``--in-memory`` also runs the default
(local engine) path on the same input for comparison. RSS does not depend on the machine's load;
wall times do.

    python bench/bench_stream.py --samples 1e7,1e8 --memory 1G --workdir /tmp/bench-stream --in-memory
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import zstandard

NAMES = [
    "node_infiniband_port_data_received_bytes_total",
    "node_infiniband_port_data_transmitted_bytes_total",
    "node_infiniband_port_packets_received_total",
    "node_infiniband_port_packets_transmitted_total",
]
HCAS, SCRAPES, HOSTS_PER_FILE = 8, 240, 100
PER_HOST = HCAS * len(NAMES) * SCRAPES


def generate(root: Path, samples: int) -> tuple[int, float]:
    """Write the input for ``samples`` samples (rounded up to whole hosts); returns (samples, seconds)."""
    hosts = -(-samples // PER_HOST)
    done = root / ".complete"
    if done.exists():
        return hosts * PER_HOST, 0.0
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    cctx = zstandard.ZstdCompressor(level=3, threads=-1)
    for first in range(0, hosts, HOSTS_PER_FILE):
        last = min(hosts, first + HOSTS_PER_FILE)
        with (root / f"hosts-{first:06d}.prom.zst").open("wb") as raw, cctx.stream_writer(raw) as f:
            for s in range(SCRAPES):
                ts = 1_764_686_822_000 + s * 15_000
                f.write(
                    "".join(
                        f'{n}{{device="mlx5_{d}",instance="gpu{h:06d}:9100",port="1"}} '
                        f"{(s + 1) * (1000 + h + d + i) * 4096} {ts}\n"
                        for h in range(first, last)
                        for d in range(HCAS)
                        for i, n in enumerate(NAMES)
                    ).encode()
                )
    done.touch()
    return hosts * PER_HOST, time.perf_counter() - t


MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "out = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "print(out.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, time.perf_counter() - t)\n"
)


def measure(args: list[str]) -> tuple[int, int, float]:
    """(exit code, peak RSS MiB, seconds) of ``fabricscope analyze ARGS`` in a fresh child."""
    exe = Path(sys.executable).parent / "fabricscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd, "analyze", *args], capture_output=True, text=True)
    rc, rss, secs = out.stdout.split()
    return int(rc), int(rss), float(secs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="1e7", help="comma-separated sample counts (1e7,1e8)")
    ap.add_argument("--memory", default="1G", help="the streaming engine's budget (--memory)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench-stream"))
    ap.add_argument("--in-memory", action="store_true", help="also run the default in-memory path")
    a = ap.parse_args()
    print(f"load average at start: {Path('/proc/loadavg').read_text().split()[:3]}")
    print("| samples | input MB (zstd) | generate s | path | peak RSS MiB | wall s | samples/s | exit |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(float(x)) for x in a.samples.split(",")):
        root = a.workdir / f"s{n:.0e}"
        got, gen_s = generate(root, n)
        size = sum(p.stat().st_size for p in root.glob("*.zst")) / 1e6
        runs = [("stream " + a.memory, ["--memory", a.memory])]
        if a.in_memory:
            runs.append(("in memory", []))
        for name, extra in runs:
            rc, rss, secs = measure([str(root), "--json", "/dev/null", *extra])
            print(
                f"| {got:,} | {size:,.0f} | {gen_s:.0f} | {name} | {rss:,} | {secs:.1f} "
                f"| {got / secs / 1e6:.2f} M | {rc} |"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()

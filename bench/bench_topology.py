"""Topology at fabric scale: `fabricscope topology --json` and `fabricscope parse` of 10^4 .. 10^6 ports.

    python bench/bench_topology.py [--ports 1e4 1e5 1e6] [--parse-ports 1e4 2e4 4e4] [--before DIR] [--keep DIR]

Writes ``ibnetdiscover -p`` text of a two-tier fat tree (32 HCAs and 32 spine uplinks per leaf,
every cable printed from both of its ends, as ``ibnetdiscover -p`` prints it) with about PORTS
port lines, then runs each command in a fresh process and reports its wall seconds and peak RSS
(``wait4``'s ``ru_maxrss`` of that process alone), and the slope between sizes: the exponent
``k`` of ``time ~ ports^k`` (1 is linear, 2 quadratic).

* ``topology --json``: every size in ``--ports``;
* ``parse -o OUT.parquet`` (the samples, links, attributes and entities Parquet files): the
  sizes in ``--parse-ports`` (its entity table costs far more per port than the links).

``--before DIR`` runs the same commands with ``PYTHONPATH=DIR/python`` too (a checkout of the
code before a change), on the same files, in the same run. The numbers go in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOSTS_PER_LEAF = 32
UPLINKS = 32


def write_fabric(path: Path, ports: int) -> int:
    """``ibnetdiscover -p`` text with about ``ports`` port lines; returns how many it wrote.

    Written a leaf at a time: this process stays small, and a child's peak RSS (which on Linux
    starts from the size of the process it was forked from) is the command's own.
    """
    leaves = max(1, ports // (2 * (HOSTS_PER_LEAF + UPLINKS)))

    def guid(kind: int, i: int) -> str:
        return f"0x{kind:04x}{i:012x}"

    written = 0
    with path.open("w") as out:
        out.write("# host: mgmt01\n1796200000\n")
        for leaf in range(leaves):
            lines = []
            lg, lname, llid = guid(0xBB, leaf), f"MF0;ib-leaf{leaf:05d}:MQM9700/U1", 100 + leaf
            for h in range(HOSTS_PER_LEAF):
                i = leaf * HOSTS_PER_LEAF + h
                hg, hname, hlid = guid(0xCC, i), f"gpu{i:06d} mlx5_0", 10_000 + i
                lines.append(f"CA {hlid:6d}  1 {hg} 4x NDR - SW {llid:6d} {h + 1:3d} {lg} ( '{hname}' - '{lname}' )")
                lines.append(f"SW {llid:6d} {h + 1:3d} {lg} 4x NDR - CA {hlid:6d}  1 {hg} ( '{lname}' - '{hname}' )")
            for s in range(UPLINKS):
                sg, sname, slid = guid(0xAA, s), f"MF0;ib-spine{s:03d}:MQM9700/U1", 1 + s
                up, down = HOSTS_PER_LEAF + s + 1, leaf + 1
                leaf_end, spine_end = f"SW {llid:6d} {up:3d} {lg}", f"SW {slid:6d} {down:3d} {sg}"
                lines.append(f"{leaf_end} 4x NDR - {spine_end} ( '{lname}' - '{sname}' )")
                lines.append(f"{spine_end} 4x NDR - {leaf_end} ( '{sname}' - '{lname}' )")
            out.write("\n".join(lines) + "\n")
            written += len(lines)
    return written


def run(args: list[str], pythonpath: str | None) -> tuple[float, float]:
    """Run ``fabricscope ARGS`` in a process of its own: its wall seconds and peak RSS in MiB."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, "-m", "fabricscope", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def slopes(rows: list[tuple[int, float, float]]) -> list[str]:
    """``ports^k`` exponents of time between consecutive sizes."""
    out = []
    for (p0, t0, _), (p1, t1, _) in itertools.pairwise(rows):
        out.append(f"{p0:,}->{p1:,}: k={math.log(t1 / t0) / math.log(p1 / p0):.2f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ports", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    ap.add_argument("--parse-ports", type=float, nargs="+", default=[1e4, 2e4, 4e4])
    ap.add_argument("--before", metavar="DIR", help="also run a checkout of the code before a change")
    ap.add_argument("--keep", metavar="DIR", help="write the inputs here (default: a temporary directory)")
    a = ap.parse_args()
    root = Path(a.keep or tempfile.mkdtemp(prefix="fabricscope-topology-"))
    root.mkdir(parents=True, exist_ok=True)
    here = str(Path(__file__).resolve().parents[1] / "python")
    codes = [("after", here)] + ([("before", str(Path(a.before) / "python"))] if a.before else [])
    inputs: dict[int, tuple[Path, int]] = {}
    for size in sorted({int(p) for p in [*a.ports, *a.parse_ports]}):
        path = root / f"fabric-{size}.txt"
        inputs[size] = (path, write_fabric(path, size))
    for name, cmd in (("topology --json", ["topology", "--json"]), ("parse -o", ["parse", "-q", "-o"])):
        sizes = a.ports if name.startswith("topology") else a.parse_ports
        for code, pythonpath in codes:
            rows = []
            for size in sorted(int(p) for p in sizes):
                path, lines = inputs[size]
                extra = [str(root / f"out-{size}.parquet")] if name == "parse -o" else []
                wall, rss = run([*cmd, *extra, str(path)], pythonpath)
                rows.append((lines, wall, rss))
                print(f"{name:16} {code:6} {lines:>9,} ports  {wall:8.2f} s  peak RSS {rss:8,.0f} MiB", flush=True)
            print(f"{name:16} {code:6} slope of time: {', '.join(slopes(rows))}", flush=True)


if __name__ == "__main__":
    main()

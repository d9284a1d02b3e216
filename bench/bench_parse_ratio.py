"""Single-scrape against repeated-series parse cost, before and after a change, in one run.

    python bench/bench_parse_ratio.py [--rounds 3] [--best-of 11] [--files N] BUILD [BUILD ...]

A BUILD is a checkout (or a copy of one) whose ``python/`` holds the ``fabricscope`` package with
its built extension, e.g. ``/tmp/before`` and ``.``. For every round and every build in turn, the
two inputs of ``bench/bench_parse.py`` (``federate-g-100mb.prom``: 2,048 label sets repeated by
many scrapes; ``federate-single-8000hosts.prom``: one scrape, 128,000 label sets each met once
per family) are each read by ``_native.read`` in a process of its own, once to warm and then
``--best-of`` times; the best process CPU time (all threads) counts. The ratio is MB per
CPU-second of the single-scrape file over that of the repeated file, both from the same build in
the same round; rounds alternate the builds, and a second pass runs them in reverse order, so
that neither build always follows the other on a shared machine.

``--files N`` reads each input N times in one ``_native.read`` call, as N inputs (N scrapes of one
fabric, one file each, as a collector writes them): what a reader keeps from one input for the
next counts, and the ratio compares N single-scrape files with N repeated-series files.

Run ``bench/bench_parse.py --inputs g,single`` once first: it generates the inputs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
INPUTS = {"repeated": DATA / "federate-g-100mb.prom", "single": DATA / "federate-single-8000hosts.prom"}

# Runs in the measured process: one warm read, then the best of N CPU times.
MEASURE = """
import sys, time
from fabricscope import _native
path, n, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
_native.read([path] * files, format="prometheus")
best = float("inf")
for _ in range(n):
    start = time.process_time()
    _native.read([path] * files, format="prometheus")
    best = min(best, time.process_time() - start)
print(best)
"""


def best_cpu_seconds(build: Path, path: Path, best_of: int, files: int) -> float:
    """Best CPU seconds of ``_native.read([path] * files)`` with the package of ``build``."""
    env = {**os.environ, "PYTHONPATH": str(build / "python")}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path), str(best_of), str(files)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", type=Path, help="checkouts whose python/ holds a built fabricscope")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per order (default 3)")
    ap.add_argument("--best-of", type=int, default=11, help="reads per process; the best counts (default 11)")
    ap.add_argument("--files", type=int, default=1, help="inputs per read: each file read this many times (default 1)")
    args = ap.parse_args()
    missing = [p for p in INPUTS.values() if not p.exists()]
    if missing:
        sys.exit(f"missing {', '.join(map(str, missing))}: run bench/bench_parse.py --inputs g,single first")
    mb = {k: p.stat().st_size / 1e6 for k, p in INPUTS.items()}
    ratios: dict[str, list[float]] = {str(b): [] for b in args.builds}
    print("| round | build | repeated CPU s | single CPU s | ratio | load |")
    print("|---|---|---|---|---|---|")
    for order in (args.builds, list(reversed(args.builds))):
        for r in range(1, args.rounds + 1):
            for build in order:
                rep = best_cpu_seconds(build, INPUTS["repeated"], args.best_of, args.files)
                single = best_cpu_seconds(build, INPUTS["single"], args.best_of, args.files)
                ratio = (mb["single"] / single) / (mb["repeated"] / rep)
                ratios[str(build)].append(ratio)
                load = os.getloadavg()[0]
                print(f"| {r} | {build} | {rep:.3f} | {single:.3f} | {ratio:.3f} | {load:.1f} |", flush=True)
    print()
    for build, rs in ratios.items():
        print(f"{build}: ratio median {statistics.median(rs):.3f}, range {min(rs):.3f}-{max(rs):.3f} ({len(rs)} runs)")


if __name__ == "__main__":
    main()

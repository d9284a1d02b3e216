"""Local engine versus Ray engine on the same input: seconds, speed-up (or its absence), same findings.

Input: scale-mode ``/federate`` text (``fabricscope simulate --scale``), ``--files`` files. Each
engine runs in its own subprocess so neither inherits the other's warm state; the Ray run starts a
local Ray instance with ``--cpus`` CPUs (``ray.init(num_cpus=...)``), and its start-up is reported
separately from the analysis. Findings of both are compared after a stable sort.

    python bench/bench_ray.py --samples 1e7 --files 8 --cpus 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
engine, path, cpus, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
init_s = 0.0
if engine == "ray":
    import ray
    t = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_s = time.perf_counter() - t
from fabricscope.analyze import run_analysis
t = time.perf_counter()
a = run_analysis([path], engine=engine)
run_s = time.perf_counter() - t
f = a.findings
f.sort(f.columns, nulls_last=True, maintain_order=True).write_parquet(out)
print(json.dumps({"engine": engine, "init_s": init_s, "run_s": run_s, "findings": f.height,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="1e7", help="sample count (default 1e7)")
    ap.add_argument("--files", type=int, default=8, help="input files")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs for the local Ray instance")
    ap.add_argument("--workdir", default="bench/data", help="where the input is generated (deleted afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the generated input")
    args = ap.parse_args()
    import polars as pl
    from fabricscope.simulate.scale import write_scale

    n = int(float(args.samples))
    d = Path(args.workdir) / f"ray-{n:.0e}"
    if d.exists():
        shutil.rmtree(d)
    gen = write_scale(d, ports=8192, counters=12, readings=max(2, round(n / (8192 * 12))), files=args.files)
    print(
        f"input: {gen['samples']:,} samples, {gen['bytes'] / 1e6:,.0f} MB in {args.files} files; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rows = []
    for engine in ("local", "ray"):
        out = d / f"findings-{engine}.parquet"
        t = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-c", CHILD, engine, str(d / "prometheus"), str(args.cpus), str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(f"{engine} failed:\n{p.stderr[-4000:]}")
        r = json.loads(p.stdout.strip().splitlines()[-1])
        r.update(wall_s=wall, load=os.getloadavg()[0])
        rows.append(r)
        print(json.dumps(r), flush=True)
    same = pl.read_parquet(d / "findings-local.parquet").equals(pl.read_parquet(d / "findings-ray.parquet"))
    local, ray_ = rows
    print()
    print("| engine | Ray start s | analysis s | samples/s | peak RSS of the driver MB | findings | load |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['engine']} | {r['init_s']:.2f} | {r['run_s']:.2f} | {gen['samples'] / r['run_s'] / 1e6:.2f} M | "
            f"{r['maxrss_kb'] / 1024:,.0f} | {r['findings']} | {r['load']:.2f} |"
        )
    print(
        f"\nspeed-up of ray over local (analysis only): {local['run_s'] / ray_['run_s']:.2f}x; "
        f"identical findings: {same}"
    )
    if not args.keep:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()

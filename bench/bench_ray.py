"""Local engine versus Ray engine on the same input, on 1, 2, ... cores: seconds, speed-up per added core.

Input: scale-mode ``/federate`` text (``fabricscope simulate --scale``), ``--files`` files. Each
run is its own subprocess (no warm state carried over), pinned with ``taskset`` to the first N
cores for each N in ``--cpus`` (Ray's raylet and workers inherit the pinning, and Ray is started
with ``num_cpus=N``); the local engine reads and analyses on the cores it may run on. ``driver CPU s``
is the CPU time of the driver process: all the work for the local engine (CPU time divided by the
analysis time is the share of the machine a run actually got), little for Ray. Ray's start-up is
reported separately from the analysis. Findings of every run are compared after a stable sort.

With ``--raylets 2,4`` it measures a multi-node cluster instead: for each count N, a
``ray.cluster_utils.Cluster`` on this machine with a head node that runs no tasks and N worker
nodes of one CPU each (every node its own raylet and object store, so partitions cross object
stores as between machines), and the driver joins it with ``--address``; each Ray run is paired
with a local-engine run on the same (unpinned) cores, interleaved, and the ratio is Ray over local
in the same run. Cluster start-up is reported apart and not in the ratio.

    python bench/bench_ray.py --samples 1e7 --files 8 --cpus 1,2
    python bench/bench_ray.py --samples 3e6 --files 8 --raylets 2,4 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
engine, path, cpus, out, address = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
init_s = 0.0
if engine == "ray":
    import ray
    t = time.perf_counter()
    if address:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    else:
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_s = time.perf_counter() - t
from fabricscope.pipeline import run_analysis
t = time.perf_counter()
c = time.process_time()
a = run_analysis([path], engine=engine)
run_s = time.perf_counter() - t
cpu_s = time.process_time() - c
f = a.findings
f.sort(f.columns, nulls_last=True, maintain_order=True).write_parquet(out)
print(json.dumps({"engine": engine, "cpus": cpus, "init_s": init_s, "run_s": run_s, "driver_cpu_s": cpu_s,
                  "findings": f.height, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _load() -> float:
    return os.getloadavg()[0]


def _child(engine: str, path: Path, cpus: int, out: Path, address: str = "", pin: list[str] | None = None) -> dict:
    t = time.perf_counter()
    p = subprocess.run(
        [*(pin or []), sys.executable, "-c", CHILD, engine, str(path), str(cpus), str(out), address],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{engine} on {cpus} CPUs failed:\n{p.stderr[-4000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r.update(wall_s=wall, load=_load(), out=str(out))
    print(json.dumps(r), flush=True)
    return r


def _raylets(counts: list[int], d: Path, samples: int, repeat: int) -> None:
    """Ray over N one-CPU raylets against the local engine, paired in the same run."""
    import tempfile

    import polars as pl
    from ray.cluster_utils import Cluster

    runs = []
    for n in counts:
        # Its own temporary directory (short: Ray's sockets live there), so no other Ray finds it.
        tmp = tempfile.mkdtemp(prefix="fsray", dir="/tmp")
        os.environ["RAY_TMPDIR"] = tmp
        t = time.perf_counter()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(n):
            cluster.add_node(num_cpus=1, object_store_memory=512 << 20)
        cluster.wait_for_nodes()
        up = time.perf_counter() - t
        print(f"{n} raylets up in {up:.1f} s at {cluster.address}", flush=True)
        try:
            for i in range(repeat):
                local = _child("local", d / "prometheus", os.cpu_count() or 1, d / f"findings-local-{n}-{i}.parquet")
                ray = _child("ray", d / "prometheus", n, d / f"findings-ray-{n}-{i}.parquet", cluster.address)
                runs.append({"raylets": n, "cluster_s": up, "local": local, "ray": ray})
        finally:
            cluster.shutdown()
            shutil.rmtree(tmp, ignore_errors=True)
    first = pl.read_parquet(runs[0]["local"]["out"])
    same = all(pl.read_parquet(r[e]["out"]).equals(first) for r in runs for e in ("local", "ray"))
    print(
        "\nevery pair (analysis s, ray / local): "
        + "; ".join(
            f"{r['raylets']} raylets: {r['ray']['run_s']:.2f} / {r['local']['run_s']:.2f} "
            f"= {r['ray']['run_s'] / r['local']['run_s']:.2f}"
            for r in runs
        )
    )
    print()
    print(
        "| raylets | cluster start s | Ray analysis s (median) | local analysis s, same runs (median) "
        "| ray / local, median of the pairs | range of the pairs | findings | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in counts:
        # The median pair: under load, one run of either engine can be slowed several times.
        pairs = [r for r in runs if r["raylets"] == n]
        ratios = sorted(r["ray"]["run_s"] / r["local"]["run_s"] for r in pairs)
        print(
            f"| {n} | {pairs[0]['cluster_s']:.1f} | {statistics.median(r['ray']['run_s'] for r in pairs):.2f} | "
            f"{statistics.median(r['local']['run_s'] for r in pairs):.2f} | {statistics.median(ratios):.2f}x | "
            f"{ratios[0]:.2f}-{ratios[-1]:.2f}x | {pairs[0]['ray']['findings']} | "
            f"{statistics.median(r['ray']['load'] for r in pairs):.1f} |"
        )
    print(f"identical findings in every run: {same} ({samples:,} samples)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="1e7", help="sample count (default 1e7)")
    ap.add_argument("--files", type=int, default=8, help="input files")
    ap.add_argument("--cpus", default="1,2", help="comma-separated core counts to run on (default 1,2)")
    ap.add_argument(
        "--raylets", default="", help="comma-separated raylet counts: a multi-node cluster on this machine (see above)"
    )
    ap.add_argument("--engines", default="local,ray", help="engines to run (default local,ray)")
    ap.add_argument("--workdir", default="bench/data", help="where the input is generated (deleted afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the generated input")
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per engine and core count, interleaved; the table shows the best"
    )
    args = ap.parse_args()
    import polars as pl
    from fabricscope.simulate.scale import write_scale

    cpus = [int(c) for c in args.cpus.split(",")]
    engines = args.engines.split(",")
    n = int(float(args.samples))
    d = Path(args.workdir) / f"ray-{n:.0e}"
    if d.exists():
        shutil.rmtree(d)
    gen = write_scale(d, ports=8192, counters=12, readings=max(2, round(n / (8192 * 12))), files=args.files)
    taskset = shutil.which("taskset")
    print(
        f"input: {gen['samples']:,} samples, {gen['bytes'] / 1e6:,.0f} MB in {args.files} files; "
        f"{os.cpu_count()} CPUs; load average {_load():.2f}; pinning with taskset: {bool(taskset)}",
        flush=True,
    )
    if args.raylets:
        _raylets([int(n) for n in args.raylets.split(",")], d, gen["samples"], args.repeat)
        if not args.keep:
            shutil.rmtree(d)
        return
    runs = []
    # Interleaved (engine and core count change every run), so a burst of load elsewhere does not
    # land on one configuration only.
    for i, engine, k in ((i, e, k) for i in range(args.repeat) for e in engines for k in cpus):
        pin = [taskset, "-c", f"0-{k - 1}"] if taskset and k <= (os.cpu_count() or 1) else []
        runs.append(_child(engine, d / "prometheus", k, d / f"findings-{engine}-{k}-{i}.parquet", pin=pin))
    first = pl.read_parquet(runs[0]["out"])
    same = all(pl.read_parquet(r["out"]).equals(first) for r in runs[1:])
    if args.repeat > 1:
        print("\nevery run (analysis s): " + "; ".join(f"{r['engine']}/{r['cpus']}: {r['run_s']:.2f}" for r in runs))
    # Best of the repeats per engine and core count: other processes only ever slow a run down.
    rows = [
        min((r for r in runs if r["engine"] == e and r["cpus"] == k), key=lambda r: r["run_s"])
        for e in engines
        for k in cpus
    ]
    print()
    print(
        "| engine | cores | Ray start s | analysis s | samples/s | speed-up vs 1 core | driver CPU s "
        "| driver peak RSS MB "
        "| findings | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        one = next((x for x in rows if x["engine"] == r["engine"] and x["cpus"] == min(cpus)), r)
        print(
            f"| {r['engine']} | {r['cpus']} | {r['init_s']:.2f} | {r['run_s']:.2f} | "
            f"{gen['samples'] / r['run_s'] / 1e6:.2f} M | {one['run_s'] / r['run_s']:.2f}x | {r['driver_cpu_s']:.2f} | "
            f"{r['maxrss_kb'] / 1024:,.0f} | {r['findings']} | {r['load']:.2f} |"
        )
    for k in cpus:
        pair = {r["engine"]: r for r in rows if r["cpus"] == k}
        if {"local", "ray"} <= set(pair):
            print(f"\non {k} core(s): ray / local analysis time {pair['ray']['run_s'] / pair['local']['run_s']:.2f}")
    print(f"identical findings in every run: {same}")
    if not args.keep:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()

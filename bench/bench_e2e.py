"""End-to-end benchmark: parse + rates + every detector at 10^6, 10^7 and 10^8 samples.

Input: scale-mode Prometheus ``/federate`` text (``fabricscope simulate --scale``): 8,192 HCA
ports x 12 node_exporter InfiniBand counters x T scrapes, split over ``--files`` files by host.
Each size runs in a fresh subprocess (``fabricscope.engines.local`` exactly as ``fabricscope analyze``
runs it) that reports its wall time per step and its peak RSS (``resource.getrusage``); the parent
times the whole subprocess, Python start-up and imports included.

Baseline, in the same run at the smallest size: the simplest Python alternative, prometheus_client's
text parser feeding a pandas DataFrame, per-series ``diff`` over time for rates, and one threshold
rule (symbol errors) - far less than fabricscope does, so the ratio flatters the baseline.

    python bench/bench_e2e.py                       # 1e6, 1e7 (and the baseline at 1e6)
    python bench/bench_e2e.py --sizes 1e6,1e7,1e8   # + 10^8 (about 15 GB of text on disk)

``--before DIR`` also runs every size with the ``fabricscope`` package found in ``DIR/python``
(a ``git worktree`` of an earlier commit, with the same ``_native`` extension copied in when
the Rust side did not change), on the same input in the same run: a before/after pair measured
under the same load. ``cpu s`` is the child's CPU time (all threads), less sensitive to other
processes than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

PORTS = 8192
COUNTERS = 12

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from fabricscope.detect.config import load_config
from fabricscope.reading.options import Filters, ReadOptions
from fabricscope.engines.local import LocalEngine
t_import = time.perf_counter() - t0
workers = int(sys.argv[2])
engine = LocalEngine(workers=workers) if workers else LocalEngine()
res = engine.run([sys.argv[1]], read=ReadOptions(), filters=Filters(), config=load_config(None), profile=None)
print(json.dumps({
    "import_s": t_import,
    "cpu_s": time.process_time(),
    "seconds": res.seconds,
    "rows": res.rows,
    "partitions": res.partitions,
    "sample_bytes": res.sample_bytes,
    "findings": res.findings.height,
    "warnings": int((res.findings["severity"] != "info").sum()),
    "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}))
"""

BASELINE = r"""
import json, resource, sys, time
from pathlib import Path
import pandas as pd
from prometheus_client.parser import text_string_to_metric_families
rows = []
for f in sorted(Path(sys.argv[1]).rglob("*.prom")):
    for fam in text_string_to_metric_families(f.read_text()):
        for s in fam.samples:
            rows.append((s.name, s.labels.get("instance"), s.labels.get("device"), s.labels.get("port"),
                         s.timestamp, s.value))
df = pd.DataFrame(rows, columns=["name", "instance", "device", "port", "ts", "value"])
df = df.sort_values(["name", "instance", "device", "port", "ts"], kind="stable")
g = df.groupby(["name", "instance", "device", "port"], sort=False)
df["rate"] = g["value"].diff() / g["ts"].diff()
bad = df[(df["name"] == "node_infiniband_symbol_error_total") & (df["rate"] > 10)]
print(json.dumps({"rows": len(df), "flagged": len(bad),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


GENERATE = r"""
import json, sys
from pathlib import Path
from fabricscope.simulate.scale import write_scale
res = write_scale(Path(sys.argv[1]), ports=int(sys.argv[2]), counters=int(sys.argv[3]),
                  readings=int(sys.argv[4]), files=int(sys.argv[5]))
print(json.dumps({"bytes": int(res["bytes"]), "seconds": res["seconds"]}))
"""


def _generate(root: Path, samples: int, files: int) -> tuple[Path, int, float]:
    # In a child process: the generator's Polars frames and allocator arenas (0.9 GB at 10^7
    # samples) would otherwise stay in this process's RSS and take memory from the page cache that
    # the measured runs read their input from.
    readings = max(2, round(samples / (PORTS * COUNTERS)))
    d = root / f"e2e-{samples:.0e}"
    if d.exists():
        shutil.rmtree(d)
    args = [str(d), str(PORTS), str(COUNTERS), str(readings), str(files)]
    out = subprocess.run([sys.executable, "-c", GENERATE, *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"generator failed ({out.returncode}):\n{out.stderr[-4000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return d, int(res["bytes"]), float(res["seconds"])


SPLIT_SCRAPES = r"""
import json, sys
from pathlib import Path
from fabricscope.simulate.scale import write_scale
# One file per scrape: each holds every series once (the cardinality shape).
src, out = Path(sys.argv[1]), Path(sys.argv[2])
res = write_scale(src, ports=int(sys.argv[3]), counters=int(sys.argv[4]), readings=int(sys.argv[5]), files=1)
out.mkdir(parents=True)
handles, family = {}, {}
for f in sorted((src / "prometheus").iterdir()):
    with f.open() as lines:
        for line in lines:
            if line.startswith("#"):
                type_line = line
                continue
            ts = line[line.rfind(" ") + 1 :].strip()
            h = handles.get(ts)
            if h is None:
                h = handles[ts] = (out / f"scrape-{ts}.prom").open("w")
            if family.get(ts) is not type_line:
                family[ts] = type_line
                h.write(type_line)
            h.write(line)
for h in handles.values():
    h.close()
print(json.dumps({"bytes": sum(p.stat().st_size for p in out.iterdir()), "seconds": res["seconds"]}))
"""


def _generate_scrapes(root: Path, series: int, scrapes: int) -> tuple[Path, int, float]:
    """``series`` series (8 HCA ports x 12 counters per host) as ``scrapes`` files of one scrape each."""
    d = root / f"e2e-cardinality-{series:.0e}"
    for x in (d, root / "cardinality-src"):
        if x.exists():
            shutil.rmtree(x)
    ports = max(8, series // COUNTERS)
    args = [str(root / "cardinality-src"), str(d), str(ports), str(COUNTERS), str(scrapes)]
    out = subprocess.run([sys.executable, "-c", SPLIT_SCRAPES, *args], capture_output=True, text=True, check=False)
    shutil.rmtree(root / "cardinality-src", ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit(f"generator failed ({out.returncode}):\n{out.stderr[-4000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return d, int(res["bytes"]), float(res["seconds"])


def _child(code: str, path: Path, *args: str, python_path: str | None = None) -> tuple[dict, float]:
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = python_path
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), *args], capture_output=True, text=True, check=False, env=env
    )
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"child failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e6,1e7", help="comma-separated sample counts (1e6,1e7,1e8)")
    ap.add_argument("--files", type=int, default=8, help="input files per size (parsed in parallel)")
    ap.add_argument("--workdir", default="bench/data", help="where inputs are generated (deleted afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the generated inputs")
    ap.add_argument("--no-baseline", action="store_true", help="skip prometheus_client + pandas")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument(
        "--before", metavar="DIR", help="also run the fabricscope package in DIR/python (an earlier checkout)"
    )
    ap.add_argument(
        "--workers", type=int, default=0, help="partitions analysed at once (default: the engine's, one per core)"
    )
    ap.add_argument(
        "--cardinality",
        type=float,
        default=0,
        metavar="SERIES",
        help="also run SERIES series (e.g. 1e6) as 10 files of one scrape each, every series once per file",
    )
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    root = Path(args.workdir)
    root.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average at start {_load()}"
    )
    results = []
    jobs = [("repeated", n) for n in sizes] + ([("cardinality", int(args.cardinality))] if args.cardinality else [])
    for i, (shape, n) in enumerate(jobs):
        if shape == "cardinality":
            d, nbytes, gen_s = _generate_scrapes(root, n, 10)
            n *= 10
        else:
            d, nbytes, gen_s = _generate(root, n, args.files)
        print(f"generated {n:.0e} samples: {nbytes / 1e6:,.0f} MB in {gen_s:.1f} s; load {_load()}", flush=True)
        runs = [("after", None)]
        if args.before:
            # before first: a warm page cache helps whichever runs second, so this favours "before"
            runs.insert(0, ("before", str(Path(args.before).resolve() / "python")))
        for label, python_path in runs:
            r, wall = _child(CHILD, d, str(args.workers), python_path=python_path)
            r.update(size=n, wall_s=wall, input_mb=nbytes / 1e6, load=_load(), label=label if args.before else "")
            r["shape"] = shape
            results.append(r)
            print(json.dumps(r), flush=True)
        if i == 0 and not args.no_baseline and shape == "repeated":
            b, bwall = _child(BASELINE, d)
            b.update(size=n, wall_s=bwall, input_mb=nbytes / 1e6, load=_load(), baseline=True)
            results.append(b)
            print(json.dumps(b), flush=True)
        if not args.keep:
            shutil.rmtree(d)
    print()
    print(
        "| input | samples | MB of text | seconds (wall) | samples/s | imports s | read s | rates+detectors s | "
        "fabric-wide s | cpu s | partitions | peak RSS MB | Arrow MB | RSS / Arrow | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        rss = r["maxrss_kb"] / 1024
        if r.get("baseline"):
            print(
                f"| prometheus_client + pandas | {r['rows']:,} | {r['input_mb']:,.0f} | {r['wall_s']:.2f} | "
                f"{r['rows'] / r['wall_s'] / 1e6:.2f} M | - | - | - | - | - | - | {rss:,.0f} | - | - | {r['load']} |"
            )
            continue
        s = r["seconds"]
        arrow = r["sample_bytes"] / 2**20
        name = "fabricscope analyze (local engine)" + (f", {r['label']}" if r.get("label") else "")
        if r.get("shape") == "cardinality":
            name += f", cardinality: {r['rows'] // 10:,} series x 10 single-scrape files"
        print(
            f"| {name} | {r['rows']:,} | {r['input_mb']:,.0f} | {r['wall_s']:.2f} | "
            f"{r['rows'] / r['wall_s'] / 1e6:.2f} M | {r['import_s']:.2f} | {s['read']:.2f} | {s['partitions']:.2f} | "
            f"{s['fabric']:.2f} | {r['cpu_s']:.2f} | {r['partitions']} | {rss:,.0f} | {arrow:,.0f} | "
            f"{rss / arrow:.2f} | {r['load']} |"
        )
    base = next((r for r in results if r.get("baseline")), None)
    ours = next(
        (r for r in results if not r.get("baseline") and base and r["size"] == base["size"] and r["label"] != "before"),
        None,
    )
    if base and ours:
        print(
            f"\nat {base['size']:.0e} samples: fabricscope is {base['wall_s'] / ours['wall_s']:.1f}x faster than "
            f"prometheus_client + pandas, with {base['maxrss_kb'] / ours['maxrss_kb']:.1f}x less peak memory"
        )
    for r in results:
        if r.get("label") == "after":
            # The "before" run of the same input: size and shape (repeated series or cardinality).
            b = next(
                x
                for x in results
                if x.get("label") == "before" and x["size"] == r["size"] and x.get("shape") == r.get("shape")
            )
            print(
                f"at {r['size']:.0e} samples, {r.get('shape', 'repeated')}: after/before wall "
                f"{b['wall_s'] / r['wall_s']:.2f}x faster, CPU {b['cpu_s'] / r['cpu_s']:.2f}x less"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

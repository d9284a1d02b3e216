"""link_wearout over a population of simulated links: precision, recall, ETA error, and its cost.

Every link is one port scraped hourly for 14 days into daily node_exporter files
(:func:`fabricscope.simulate.wearout.population`: 30% of the links double their error rate every
1-5 days from 2-30/h, the rest are steady, bursty or reset, at 0.2-60/h). A link is a true
positive when its rate is rising, still below the 120/h warning rate at the end and crosses it
within the 30-day horizon; a finding on any other link is a false positive.

Cost, same run, through the CLI: ``analyze`` over the 14 daily files against ``analyze`` over the
last day only (baseline), and cron's 14th daily run (its forecast fitted to the hourly roll-up of
14 days) against its 1st (baseline: one day in the roll-up).

Usage:
    python bench/bench_wearout.py --links 200 --timing-links 1000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fabricscope.simulate.wearout import population, write_wearout

EXE = [sys.executable, "-m", "fabricscope"]


def _run(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    r = subprocess.run([*EXE, *args], capture_output=True, text=True, check=False)
    if r.returncode > 2:
        raise SystemExit(f"fabricscope {' '.join(args)} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return time.perf_counter() - t0, r


def accuracy(n: int, tmp: Path, seed: int) -> dict[str, float]:
    out = tmp / "accuracy"
    truth = write_wearout(out, population(n, seed=seed))
    _, _ = _run("analyze", str(out), "--json", str(tmp / "acc.json"))
    found = {
        f["host"]: f["evidence"]["threshold_eta_s"]
        for f in json.loads((tmp / "acc.json").read_text())["findings"]
        if f["kind"] == "link_wearout"
    }
    positives = {
        x["host"]: x["eta_s"]
        for x in truth["links"]
        if x["wearing_out"] and x["eta_s"] is not None and x["eta_s"] <= 30 * 86400
    }
    tp = [h for h in found if h in positives]
    errors = sorted(abs(math.log2(found[h] / positives[h])) for h in tp)
    return {
        "links": n,
        "positives": len(positives),
        "found": len(found),
        "precision": len(tp) / len(found) if found else float("nan"),
        "recall": len(tp) / len(positives) if positives else float("nan"),
        "eta_log2_error_median": statistics.median(errors) if errors else float("nan"),
        "eta_log2_error_p90": errors[int(0.9 * (len(errors) - 1))] if errors else float("nan"),
        "within_factor_2": sum(e <= 1 for e in errors) / len(errors) if errors else float("nan"),
    }


def cost(n: int, tmp: Path, seed: int) -> dict[str, float]:
    days = tmp / "timing"
    write_wearout(days, population(n, seed=seed + 1))
    daily = sorted(days.glob("node-*.prom"))
    last_day = tmp / "last-day"
    last_day.mkdir()
    shutil.copy(daily[-1], last_day)
    t14, _ = _run("analyze", str(days), "--json", os.devnull)
    t1, _ = _run("analyze", str(last_day), "--json", os.devnull)
    inputs = tmp / "cron-in"
    inputs.mkdir()
    cron = ["cron", "--inputs", str(inputs), "--state", str(tmp / "state"), "--history", str(tmp / "hist")]
    times = []
    for day in daily:
        shutil.copy(day, inputs)
        times.append(_run(*cron)[0])
    return {
        "ports": n,
        "analyze_14_days_s": t14,
        "analyze_1_day_s": t1,
        "analyze_ratio": t14 / t1,
        "cron_day_1_s": times[0],
        "cron_day_14_s": times[-1],
        "cron_ratio": times[-1] / times[0],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", type=int, default=200, help="links in the accuracy population")
    ap.add_argument("--timing-links", type=int, default=1000, help="ports in the timing population")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fabricscope-wearout-") as d:
        tmp = Path(d)
        acc = accuracy(args.links, tmp, args.seed)
        print(json.dumps(acc, indent=1))
        c = cost(args.timing_links, tmp, args.seed)
        print(json.dumps(c, indent=1))
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

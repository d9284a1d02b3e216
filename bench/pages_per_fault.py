"""Pages per fault: what an on-call engineer is handed for each scenario, against its ground truth.

A page is a warning or critical incident, or a warning or critical finding in no incident. The
faults of a scenario are its truth's expected incidents (or, for a scenario without them, its
expected findings' distinct ports). Prints one line per scenario and seed and the totals.

    python bench/pages_per_fault.py                      # the committed sample_traces/scenarios
    python bench/pages_per_fault.py --seeds 11,12,13     # held-out seeds of every scenario, simulated
    python bench/pages_per_fault.py --seeds 11 --scenario fanin-loss-tx
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from fabricscope.pipeline import run_analysis
from fabricscope.simulate import SCENARIOS, simulate

SEVERE = ("warning", "critical")


def faults_of(truth: dict) -> int:
    """The number of faults a scenario's truth holds."""
    if truth.get("incidents"):
        return len(truth["incidents"])
    ports = {(e["kind"], e["host"], tuple(e.get("device") or ()), e.get("port")) for e in truth["expected"]}
    return len(ports)


def pages_of(path: Path) -> tuple[int, list[str]]:
    """The pages an analysis of ``path`` makes, and their titles."""
    a = run_analysis(path, strict=False)
    titles = [f"{i.severity} {i.title}" for i in a.incidents if i.severity in SEVERE]
    held = {
        (c["finding"]["kind"], c["finding"]["host"], c["finding"].get("start"))
        for i in a.incidents
        for c in i.consequences
    }
    held |= {(i.root["kind"], i.root["host"], i.root.get("start")) for i in a.incidents}
    for r in a.findings.filter(a.findings["severity"].is_in(SEVERE)).iter_rows(named=True):
        if (r["kind"], r["host"], r["start"]) not in held:
            titles.append(f"{r['severity']} standalone {r['kind']} on {r['host']} {r['device']}")
    return len(titles), titles


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="", help="comma-separated seeds to simulate (default: the committed traces)")
    p.add_argument("--scenario", action="append", help="only these scenarios")
    p.add_argument("--verbose", action="store_true", help="print every page's title")
    args = p.parse_args()
    names = args.scenario or sorted(SCENARIOS)
    total_pages = total_faults = 0
    with tempfile.TemporaryDirectory() as tmp:
        runs: list[tuple[str, str, Path]] = []
        if args.seeds:
            for name in names:
                for seed in args.seeds.split(","):
                    out = Path(tmp) / f"{name}-{seed}"
                    simulate(out, name, seed=int(seed))
                    runs.append((name, seed, out))
        else:
            root = Path(__file__).resolve().parents[1] / "sample_traces" / "scenarios"
            runs = [(n, "committed", root / n) for n in names if (root / n).is_dir()]
        for name, seed, path in runs:
            truth = json.loads((path / "truth.json").read_text())
            faults = faults_of(truth)
            pages, titles = pages_of(path)
            total_pages += pages
            total_faults += faults
            mark = "" if pages == faults else "  <-- " + ("extra pages" if pages > faults else "missed")
            print(f"{name:<34} {seed:>9}  faults {faults}  pages {pages}{mark}")
            if args.verbose or pages != faults:
                for t in titles:
                    print(f"      {t}")
    ratio = total_pages / max(total_faults, 1)
    print(f"total: {total_faults} fault(s), {total_pages} page(s), {ratio:.2f} pages per fault")


if __name__ == "__main__":
    main()

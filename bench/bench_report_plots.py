"""Report plots: CPU time per port plot of this checkout against an earlier revision's, in one run.

    python bench/bench_report_plots.py [--before REV] [--ports 4] [--rounds 3]

The earlier revision's ``fabricscope/report/build.py`` (``git show REV:...``) is loaded beside this
checkout's; both plot the same ports of ``sample_traces/scenarios/pfc-storm`` (the worst first),
rounds alternating, and the best round's CPU seconds per port count. Before the plots were drawn
in one format, each port was drawn as SVG and as PNG; now the HTML report draws SVG and the
Markdown report PNG.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

from fabricscope.doors.report import gather, plots

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "sample_traces" / "scenarios" / "pfc-storm"


def load_revision(rev: str) -> types.ModuleType:
    """The report builder module as it was at ``rev``."""
    text = subprocess.run(
        ["git", "show", f"{rev}:python/fabricscope/doors/report/build.py"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "report_build_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("report_build_before", path)
    if spec is None or spec.loader is None:
        sys.exit(f"cannot load the report builder of {rev}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="577e380", help="revision to compare with (default 577e380)")
    ap.add_argument("--ports", type=int, default=4, help="ports plotted per round (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    args = ap.parse_args()
    before = load_revision(args.before)
    data = gather([TRACE], strict=False)
    ports = plots._port_frames(data, args.ports)

    def cpu(plot: Callable[..., object]) -> float:
        start = time.process_time()
        for key, rates, findings in ports:
            plot(key, rates, findings, data.gauges)
        return (time.process_time() - start) / len(ports)

    runs: dict[str, list[float]] = {f"SVG and PNG ({args.before})": [], "SVG (HTML report)": [], "PNG (Markdown)": []}
    for _ in range(args.rounds):
        runs[f"SVG and PNG ({args.before})"].append(cpu(before._plot_port))
        runs["SVG (HTML report)"].append(cpu(lambda *a: plots._plot_port(*a, "svg")))
        runs["PNG (Markdown)"].append(cpu(lambda *a: plots._plot_port(*a, "png")))
    base = min(runs[f"SVG and PNG ({args.before})"])
    print(f"{len(ports)} ports of {TRACE.name}, best of {args.rounds} rounds, CPU seconds per port:")
    for name, seconds in runs.items():
        print(f"  {name:28s} {min(seconds):.3f} s   ratio {min(seconds) / base:.2f}")


if __name__ == "__main__":
    main()

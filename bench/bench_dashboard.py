"""Dashboard page load times: every page on the sample traces, then on 10^7 simulated samples.

    python bench/bench_dashboard.py [--samples 10000000] [--hosts 64] [--skip-scale | --only-scale]
                                     [--repeat 3] [--browser]

Each page is run through Streamlit's AppTest (the same script run the server does for a browser,
without the network and the browser's drawing):

* **cold**: caches cleared, so the source is read, rated and analysed (what the first visitor
  after a change of the data waits for);
* **warm**: the median of ``--repeat`` further runs (every later visitor and every widget click).

Then ``fabricscope simulate --scale PORTSx12xREADINGS`` writes a Prometheus federation dump of about
``--samples`` samples into ``bench/data/dashboard-scale/`` (reused when present) and the same is
measured there, with the most points any chart of the page sends to the browser (the aggregation
bound, ``aggregates.MAX_POINTS`` per series).

``--browser`` also times each page in headless Chromium against ``fabricscope dashboard``: from
navigation until the script has finished and the page is drawn (Streamlit's status widget gone),
first visit (cold server) and the median of later visits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import streamlit as st
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboards" / "app.py"
PAGES = ["overview", "port", "topology", "layers", "expected", "whatif"]
SCALE_DIR = ROOT / "bench" / "data" / "dashboard-scale"


def run_page(page: str, source: str) -> tuple[float, int, int]:
    """Seconds for one script run, the most points in one chart, and the number of charts."""
    at = AppTest.from_file(str(APP), default_timeout=1800)
    at.query_params["source"] = source
    at.switch_page(f"app_pages/{page}.py")
    t = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t
    if at.exception:
        raise RuntimeError(f"{page} on {source}: {at.exception[0].value}")
    points = 0
    charts = at.get("vega_lite_chart")
    for c in charts:
        for ds in c.proto.datasets:
            points = max(points, pa.ipc.open_stream(ds.data.data).read_all().num_rows)
    return elapsed, points, len(charts)


def measure(source: str, repeat: int) -> list[dict[str, object]]:
    rows = []
    st.cache_resource.clear()
    st.cache_data.clear()
    for page in PAGES:
        cold, points, charts = run_page(page, source)
        warm = statistics.median(run_page(page, source)[0] for _ in range(repeat))
        # Only the first page pays for reading and analysing; later pages find it cached.
        rows.append({"page": page, "cold_s": cold, "warm_s": warm, "charts": charts, "max_points": points})
    return rows


def show(title: str, rows: list[dict[str, object]]) -> None:
    print(f"\n{title}")
    print(f"{'page':<10} {'first run s':>11} {'warm s':>8} {'charts':>6} {'max points/chart':>17}")
    for r in rows:
        print(f"{r['page']:<10} {r['cold_s']:>11.3f} {r['warm_s']:>8.3f} {r['charts']!s:>6} {r['max_points']:>17,}")


def browser_times(data_dir: Path, source: str, repeat: int) -> list[dict[str, object]]:
    """Seconds from navigation to a finished, drawn page in headless Chromium, per page."""
    import signal
    import socket
    import urllib.request

    from playwright.sync_api import sync_playwright

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "fabricscope", "dashboard", "--data", str(data_dir), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.3)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})

            def visit(path: str) -> float:
                t = time.perf_counter()
                page.goto(f"{url}/{path}?source={source}", wait_until="domcontentloaded")
                page.locator("h1").first.wait_for(state="visible", timeout=600_000)
                page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=600_000)
                return time.perf_counter() - t

            for page_name in PAGES:
                path = "" if page_name == "overview" else page_name
                first = visit(path)
                warm = statistics.median(visit(path) for _ in range(repeat))
                rows.append({"page": page_name, "cold_s": first, "warm_s": warm, "charts": "-", "max_points": 0})
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    return rows


def scale_data(out: Path, samples: int, hosts: int) -> int:
    """Write (once) a scale-mode federation dump of about ``samples`` samples; returns the count."""
    import fabricscope

    if not out.exists():
        # scale mode: hosts x 8 HCAs x 12 counters per scrape; the sample count sets the scrapes.
        ports, counters, interval = hosts * 8, 12, 15.0
        scrapes = max(2, samples // (ports * counters))
        cmd = [
            sys.executable,
            "-m",
            "fabricscope",
            "simulate",
            str(out),
            "--scale",
            f"{ports}x{counters}x{scrapes}",
        ]
        cmd += ["--interval", str(interval)]
        subprocess.run(cmd, check=True)
    return sum(frame.height for frame in fabricscope.scan(str(out)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--hosts", type=int, default=64, help="hosts of the scale data (8 HCAs each; 8000: a large fabric)")
    ap.add_argument("--only-scale", action="store_true", help="skip the sample traces")
    ap.add_argument("--browser", action="store_true", help="also time pages in headless Chromium")
    args = ap.parse_args()
    sys.path.insert(0, str(APP.parent))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    os.environ["FABRICSCOPE_DATA"] = str(ROOT / "sample_traces")
    for source in [] if args.only_scale else ["scenarios/pfc-storm", "."]:
        show(
            f"sample_traces/{source.strip('.')} (first run includes reading and analysing)",
            measure(source, args.repeat),
        )
    if args.browser:
        for source in ["scenarios/pfc-storm", "."]:
            rows = browser_times(ROOT / "sample_traces", source, args.repeat)
            show(f"Chromium, sample_traces/{source.strip('.')}: navigation to drawn page", rows)

    if args.skip_scale:
        return
    out = SCALE_DIR if args.hosts == 64 else SCALE_DIR.with_name(f"{SCALE_DIR.name}-{args.hosts}-hosts")
    n = scale_data(out, args.samples, args.hosts)
    os.environ["FABRICSCOPE_DATA"] = str(out.parent)
    t = time.perf_counter()
    rows = measure(out.name, args.repeat)
    show(f"scale: {n:,} samples, {args.hosts:,} hosts ({time.perf_counter() - t:.1f} s in total)", rows)


if __name__ == "__main__":
    main()

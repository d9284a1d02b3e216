"""End to end: `fabricscope dashboard` serves every page to headless Chromium (Debian's chromium).

Screenshots of every page are saved under out/screenshots/ as test artifacts.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.conftest import ROOT, SAMPLES

CHROMIUM = os.environ.get("FABRICSCOPE_CHROMIUM", "/usr/bin/chromium")
if not Path(CHROMIUM).is_file():
    pytest.skip(f"Chromium not installed at {CHROMIUM} (CI: apt-get install -y chromium)", allow_module_level=True)

# Chromium is there, so the test must run: a missing Playwright is an error, not a skip.
from playwright import sync_api  # noqa: E402

SHOTS = ROOT / "out" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

# url path, source, what the page must show once loaded
PAGES = [
    ("", "scenarios/pfc-storm", ["Fabric health", "CRITICAL", "pfcstorm-gpu03/eth0", "Worst ports"]),
    ("port", "scenarios/pfc-storm", ["Throughput against line rate", "Pause ratio per priority", "pfc_storm"]),
    ("topology", "scenarios/link-flap", ["Topology unknown for this source", "Flapping", "flap-gpu03"]),
    ("topology", ".", ["44 cable(s) from ibnetdiscover", "Cable matrix"]),
    ("layers", "scenarios/nvlink-saturated", ["Bottleneck verdicts", "nvlink saturates first"]),
    ("expected", "scenarios/link-degraded", ["Port throughput against line rate", "ndr200"]),
    (
        "whatif",
        "scenarios/nvlink-saturated",
        ["What-if", "All-reduce time", "gradient gb", "InfiniBand vs RoCEv2 break-even"],
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "fabricscope", "dashboard", "--data", str(SAMPLES), "--port", str(port)]
    log = tmp_path_factory.mktemp("dashboard") / "server.log"
    log_fh = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=log_fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"dashboard did not start (exit {proc.poll()}):\n{log.read_text(errors='replace')}")
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log_fh.close()


def test_server_binds_to_localhost_only(server: str) -> None:
    port = int(server.rsplit(":", 1)[1])
    addrs = {ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), port, socket.AF_INET)} - {"127.0.0.1"}
    for addr in addrs:
        with socket.socket() as s, pytest.raises(OSError):
            s.settimeout(1)
            s.connect((addr, port))


def test_every_page_in_chromium(server: str) -> None:
    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    SHOTS.mkdir(parents=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            for path, source, expected in PAGES:
                page.goto(f"{server}/{path}?source={source}", wait_until="domcontentloaded")
                page.get_by_text(expected[0], exact=False).first.wait_for(state="visible", timeout=90_000)
                for text in expected[1:]:
                    # table cells live in the data grid's accessible DOM (drawn on a canvas): attached, not visible
                    page.get_by_text(text, exact=False).first.wait_for(state="attached", timeout=90_000)
                # the script has finished when Streamlit's status widget is gone
                page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=90_000)
                # widgets whose code is loaded on demand show a skeleton until their chunk arrives
                page.wait_for_load_state("networkidle")
                page.wait_for_selector('[data-testid="stSkeleton"]', state="detached", timeout=30_000)
                assert page.locator('[data-testid="stException"]').count() == 0, f"exception on /{path}"
                name = (path or "overview") + ("-" + source.replace("/", "_").strip(".") if source != "." else "")
                page.screenshot(path=str(SHOTS / f"{name.rstrip('-')}.png"), full_page=True)
            assert not errors, errors
        finally:
            browser.close()
    shots = sorted(p.name for p in SHOTS.glob("*.png"))
    assert len(shots) == len(PAGES)
    assert all((SHOTS / s).stat().st_size > 10_000 for s in shots)


def test_path_traversal_is_refused_in_the_browser(server: str) -> None:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{server}/?source=../../etc", wait_until="domcontentloaded")
            page.get_by_text("Refused", exact=False).first.wait_for(state="visible", timeout=60_000)
            assert page.get_by_text("Critical").count() == 0
        finally:
            browser.close()


def test_upload_is_analysed_leniently(server: str) -> None:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{server}/?source=scenarios/trap-counter-reset", wait_until="domcontentloaded")
            page.get_by_text("OK", exact=False).first.wait_for(state="visible", timeout=90_000)
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
                str(SAMPLES / "ethtool" / "roce01-eth2.log")
            )
            # roce01's priority-3 PFC storm (sample_traces/README.md) turns the status critical
            page.get_by_text("upload: roce01-eth2.log", exact=False).first.wait_for(state="visible", timeout=90_000)
            page.get_by_text("CRITICAL", exact=False).first.wait_for(state="visible", timeout=90_000)
            page.get_by_text("pfc_storm", exact=False).first.wait_for(state="attached", timeout=90_000)
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "overview-upload.png"), full_page=True)
        finally:
            browser.close()

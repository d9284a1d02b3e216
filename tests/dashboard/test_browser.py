"""End to end: `fabricscope dashboard` serves every page to headless Chromium (Debian's chromium).

Screenshots of every page are saved under out/screenshots/ as test artifacts.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.conftest import ROOT, SAMPLES, running_dashboard

CHROMIUM = os.environ.get("FABRICSCOPE_CHROMIUM", "/usr/bin/chromium")
if not Path(CHROMIUM).is_file():
    # A failure, never a skip: a machine without Chromium must not pass the dashboard unseen.
    pytest.fail(f"Chromium not installed at {CHROMIUM} (apt-get install -y chromium)", pytrace=False)

from playwright import sync_api  # noqa: E402

SHOTS = ROOT / "out" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

# url path, source, what the page must show once loaded
PAGES = [
    ("", "scenarios/pfc-storm", ["Fabric health", "CRITICAL", "pfcstorm-gpu03/eth0", "Worst ports"]),
    ("", ".", ["Fabric health", "all of sample_traces/", "CRITICAL", "Worst ports"]),
    ("port", "scenarios/pfc-storm", ["Throughput against line rate", "Pause ratio per priority", "pfc_storm"]),
    ("topology", "scenarios/link-flap", ["Topology unknown for this source", "Flapping", "flap-gpu03"]),
    (
        "topology",
        ".",
        ["104 cable(s) from ibnetdiscover, lldpctl-json, lldpctl-keyvalue, sonic-lldp-table", "Cable matrix"],
    ),
    ("layers", "scenarios/nvlink-saturated", ["Bottleneck verdicts", "nvlink saturates first"]),
    ("expected", "scenarios/link-degraded", ["Port throughput against line rate", "ndr200"]),
    (
        "whatif",
        "scenarios/nvlink-saturated",
        ["What-if", "All-reduce time", "gradient gb", "InfiniBand vs RoCEv2 break-even"],
    ),
]


WIDTHS = (1400, 800)  # a desktop browser window, and a narrow one (half a laptop screen)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_dashboard(tmp_path_factory.mktemp("dashboard") / "server.log") as (url, _proc):
        yield url


def test_server_binds_to_localhost_only(server: str) -> None:
    port = int(server.rsplit(":", 1)[1])
    addrs = {ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), port, socket.AF_INET)} - {"127.0.0.1"}
    for addr in addrs:
        with socket.socket() as s, pytest.raises(OSError):
            s.settimeout(1)
            s.connect((addr, port))


def _settle(page: sync_api.Page) -> None:
    # the script has finished when Streamlit's status widget is gone
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=90_000)
    # widgets whose code is loaded on demand show a skeleton until their chunk arrives
    page.wait_for_load_state("networkidle")
    page.wait_for_selector('[data-testid="stSkeleton"]', state="detached", timeout=30_000)


def _full_screenshot(page: sync_api.Page, path: Path) -> None:
    """The whole page: Streamlit scrolls inside its main block, so grow the window to its height first."""
    size = page.viewport_size or {"width": 1400, "height": 1000}
    height = page.evaluate("Math.max(...[...document.querySelectorAll('*')].map(e => e.scrollHeight))")
    page.set_viewport_size({"width": size["width"], "height": min(int(height), 8000)})
    page.wait_for_timeout(500)  # charts re-lay out to the new size
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def test_every_page_in_chromium(server: str) -> None:
    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    SHOTS.mkdir(parents=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1000})
                errors: list[str] = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                for path, source, expected in PAGES:
                    page.goto(f"{server}/{path}?source={source}", wait_until="domcontentloaded")
                    page.get_by_text(expected[0], exact=False).first.wait_for(state="visible", timeout=90_000)
                    for text in expected[1:]:
                        # table cells live in the data grid's accessible DOM (drawn on a canvas): attached
                        page.get_by_text(text, exact=False).first.wait_for(state="attached", timeout=90_000)
                    _settle(page)
                    assert page.locator('[data-testid="stException"]').count() == 0, f"exception on /{path}"
                    # Nothing wider than the window: no horizontal scrolling of the page itself.
                    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                    assert overflow <= 0, f"/{path} at {width} px is {overflow} px too wide"
                    name = (path or "overview") + ("-" + source.replace("/", "_").strip(".") if source != "." else "")
                    _full_screenshot(page, SHOTS / f"{name.rstrip('-')}-{width}.png")
                assert not errors, errors
                page.close()
        finally:
            browser.close()
    shots = sorted(p.name for p in SHOTS.glob("*.png"))
    assert len(shots) == len(PAGES) * len(WIDTHS)
    assert all((SHOTS / s).stat().st_size > 10_000 for s in shots)


def test_report_in_chromium(tmp_path: Path) -> None:
    from fabricscope.doors.report.build import write_report

    report = tmp_path / "report.html"
    write_report([SAMPLES / "scenarios" / "pfc-storm"], report, max_ports=2)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1000})
                page.goto(report.as_uri())
                # The first screen holds the verdict and the worst finding.
                verdict = page.locator(".verdict").bounding_box()
                first = page.locator("table.findings").first.bounding_box()
                assert verdict is not None and first is not None
                assert verdict["y"] < first["y"] < 1000, (verdict, first)
                assert page.locator("table.findings tr.critical").first.is_visible()
                # Inputs are collapsed: their table is not shown until opened.
                assert not page.locator("#inputs + details table").first.is_visible()
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, f"the report at {width} px is {overflow} px too wide"
                page.screenshot(path=str(SHOTS / f"report-pfc-storm-{width}.png"), full_page=True)
                page.close()
            page = browser.new_page()
            page.goto(report.as_uri())
            page.emulate_media(media="print")
            pdf = page.pdf(format="A4")
            assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
            (SHOTS / "report-pfc-storm.pdf").write_bytes(pdf)
        finally:
            browser.close()


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


def test_overview_from_a_prometheus_server_in_chromium(
    prometheus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fabricscope dashboard --prometheus URL`, nothing else: the Overview of pfc-storm, pulled."""
    from urllib.parse import urlencode

    monkeypatch.delenv("FABRICSCOPE_DATA")  # no directory: the server is the only source

    query = urlencode(
        {
            "source": prometheus,
            "since": "2026-12-04T16:00:00Z",
            "until": "2026-12-04T16:05:00Z",
            "match": 'instance=~"pfcstorm-.*"',
        }
    )
    with (
        running_dashboard(tmp_path / "server.log", data=["--prometheus", prometheus]) as (url, _proc),
        sync_api.sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{url}/?{query}", wait_until="domcontentloaded")
            page.get_by_text("Fabric health", exact=False).first.wait_for(state="visible", timeout=90_000)
            for text in (
                "CRITICAL",
                f"{prometheus} · 2026-12-04 16:00:00 .. 2026-12-04 16:05:00 UTC",
                "Worst ports",
                "pfcstorm-gpu03/eth0",
                "Time range (UTC)",
                "Refresh from the server",
            ):
                page.get_by_text(text, exact=False).first.wait_for(state="attached", timeout=90_000)
            _settle(page)
            assert page.locator('[data-testid="stException"]').count() == 0
            assert page.locator('[data-testid="stAlertContentError"]').count() == 0
            assert page.get_by_text("data directory", exact=False).count() == 0
            assert page.get_by_text("1 server(s)", exact=False).count() == 1
            assert not errors, errors
            SHOTS.mkdir(parents=True, exist_ok=True)
            _full_screenshot(page, SHOTS / "overview-prometheus-1400.png")
        finally:
            browser.close()

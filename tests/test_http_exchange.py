"""One HTTP exchange, whole or not at all: deadlines, cut bodies and redirected POSTs, through the CLI.

Every server is a real socket on 127.0.0.1: the hostile ones from :mod:`tests.hostile_http`, and
Debian's ``prometheus-alertmanager`` (:mod:`tests.alertmanager_server`) behind a redirecting
front. Each test checks the exit status, the message (the URL without its credentials, what was
expected) and what was, or was not, delivered.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fabricscope.doors.cron import alertmanager
from fabricscope.transport import Connection

from tests import alertmanager_server as am
from tests.hostile_http import EXPORTER_TEXT, chunked_cut_short, cut_short, slow_headers
from tests.prometheus_server import Endpoint
from tests.test_alertmanager import ETH, _grow_steps, _lifecycle

FABRICSCOPE = Path(sys.executable).with_name("fabricscope")
PASSWORD = "pw-6b1d-exchange-never-print"
QUERY_TOKEN = "qtok-93ae-exchange-never-print"
# A hanging regression fails its test instead of holding the suite: the slow servers below send
# their headers for 300 s, far beyond every deadline the tests give and beyond this guard.
GUARD_S = 120


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FABRICSCOPE), *args], capture_output=True, text=True, timeout=GUARD_S, check=False, env=dict(os.environ)
    )


def cron(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run(
        "cron",
        "--inputs",
        str(tmp / "in"),
        "--state",
        str(tmp / "state"),
        "--history",
        str(tmp / "hist"),
        "--json",
        str(tmp / "run.json"),
        "--textfile",
        str(tmp / "fabricscope.prom"),
        *extra,
    )


def storm_inputs(tmp: Path) -> None:
    """The first part of the pfc-storm scenario's ethtool log: one critical incident, one alert to send."""
    (tmp / "in").mkdir()
    _grow_steps(tmp / "in" / ETH.name)[0]()


def test_headers_sent_one_byte_at_a_time_end_at_the_deadline() -> None:
    # One byte every 0.2 s never trips the 1 s socket timeout: only a deadline over the whole
    # exchange, headers included, ends it.
    with Endpoint(slow_headers(0.2)) as ep:
        r = run("analyze", ep.url, "--deadline", "2", "--timeout", "1", "--retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"{ep.url}/api/v1/status/buildinfo: no response: the deadline of 2 s passed (--deadline)" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_deadline_spans_every_request_of_a_pull() -> None:
    # A server that answers the probe and the names at once, then drips the data request's headers.
    slow = slow_headers(0.2)

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        if path == "/api/v1/status/buildinfo":
            answer(h, {"status": "success", "data": {"version": "2.45.0"}})
        elif path == "/api/v1/label/__name__/values":
            answer(h, {"status": "success", "data": ["node_infiniband_port_data_received_bytes_total"]})
        else:
            slow(h)

    with Endpoint(handle) as ep:
        r = run("analyze", ep.url, "--deadline", "3", "--timeout", "2", "--retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"{ep.url}/api/v1/read: no response: the deadline of 3 s passed (--deadline)" in r.stderr
    assert [p.split("?", 1)[0] for p, _ in ep.requests] == [
        "/api/v1/status/buildinfo",
        "/api/v1/label/__name__/values",
        "/api/v1/read",
    ]


def answer(h: http.server.BaseHTTPRequestHandler, doc: object) -> None:
    payload = json.dumps(doc).encode()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(payload)))
    h.end_headers()
    h.wfile.write(payload)


def test_a_slow_alertmanager_costs_cron_one_bounded_attempt(tmp_path: Path) -> None:
    storm_inputs(tmp_path)
    with Endpoint(slow_headers(0.2)) as slow:
        args = [str(FABRICSCOPE), "cron", "--inputs", str(tmp_path / "in"), "--state", str(tmp_path / "state")]
        args += ["--history", str(tmp_path / "hist"), "--alertmanager", slow.url, "--timeout", "2"]
        first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The first run is delivering (it holds the locks): a second run waits for them and runs.
            deadline = time.monotonic() + GUARD_S
            while not slow.requests and first.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            second = cron(tmp_path, "--alertmanager", slow.url, "--timeout", "2", "--wait", "20")
            first_out, first_err = first.communicate(timeout=GUARD_S)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
    assert first.returncode == 2, first_out + first_err
    assert first_out.startswith("FABRICSCOPE CRITICAL")
    message = f"{slow.url}/api/v2/alerts: no response: the deadline of 2 s passed (--timeout)"
    assert f"alertmanager {slow.url}: not delivered ({message}); the next run sends again" in first_err
    assert second.returncode == 2, second.stdout + second.stderr
    assert second.stdout.startswith("FABRICSCOPE CRITICAL")
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["alertmanager"] == [{"url": slow.url, "firing": 1, "resolved": 0, "error": message}]
    assert "fabricscope_" in (tmp_path / "fabricscope.prom").read_text()
    assert not json.loads((tmp_path / "state" / "alertmanager.json").read_text())
    assert [p for p, _ in slow.requests] == ["/api/v2/alerts", "/api/v2/alerts"]


def test_the_alertmanager_deadline_names_the_bound_it_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Above the delivery cap, --timeout is not what ended the delivery: the message names the cap.
    monkeypatch.setattr(alertmanager, "MAX_TIMEOUT_S", 1.0)
    now = dt.datetime(2026, 12, 1, 1, tzinfo=dt.timezone.utc)
    with Endpoint(slow_headers(0.2, 60.0)) as slow:
        opts = alertmanager.AlertmanagerOptions(urls=(slow.url,), connection=Connection(timeout_s=30.0))
        [delivery] = alertmanager.deliver(opts, _lifecycle(), tmp_path, now)
    assert delivery.error == (
        f"{slow.url}/api/v2/alerts: no response: the deadline of 1 s passed "
        "(one Alertmanager delivery takes at most 1 s; --timeout lowers it)"
    )


def test_a_body_shorter_than_its_content_length_is_an_error() -> None:
    cut = EXPORTER_TEXT.rindex(b"\n", 0, len(EXPORTER_TEXT) // 2) + 1  # half, at a line boundary
    with Endpoint(cut_short(EXPORTER_TEXT, cut)) as ep:
        url = ep.url.replace("http://", f"http://ops:{PASSWORD}@") + f"/metrics?token={QUERY_TOKEN}"
        r = run("analyze", url, "--retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr
    assert (
        f"{ep.url}/metrics: HTTP 200: the body ended after {cut} of the {len(EXPORTER_TEXT)} bytes its "
        "Content-Length declares (the connection closed early)" in r.stderr
    )
    for text in (r.stdout, r.stderr):
        assert PASSWORD not in text and QUERY_TOKEN not in text


def test_a_chunked_body_without_its_last_chunk_is_an_error() -> None:
    cut = EXPORTER_TEXT.rindex(b"\n", 0, len(EXPORTER_TEXT) // 2) + 1
    with Endpoint(chunked_cut_short(EXPORTER_TEXT, cut)) as ep:
        r = run("analyze", ep.url + "/metrics", "--retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr
    assert (
        f"{ep.url}/metrics: HTTP 200: the chunked body ended after {cut} bytes, before its last chunk "
        "(the connection closed early)" in r.stderr
    )


def redirect_every_path(target: str, status: int) -> Endpoint:
    """A front that answers every request with ``status`` and ``Location: target + path``."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        h.rfile.read(int(h.headers.get("Content-Length") or 0))
        h.send_response(status)
        h.send_header("Location", target + h.path)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return Endpoint(handle)


def test_a_post_redirected_as_a_get_is_not_delivered_a_307_is(tmp_path: Path) -> None:
    storm_inputs(tmp_path)
    with am.serve(tmp_path / "am") as target:
        for status in (301, 302, 303):
            with redirect_every_path(target, status) as front:
                r = cron(tmp_path, "--alertmanager", front.url)
            assert r.returncode == 2, r.stdout + r.stderr
            [delivery] = json.loads((tmp_path / "run.json").read_text())["alertmanager"]
            assert delivery["error"] == (
                f"{front.url}/api/v2/alerts: HTTP {status}: refused to follow the redirect of a POST to "
                f"{target}/api/v2/alerts: it would become a GET without its body (only 307 and 308 repeat a POST, "
                "RFC 9110 section 15.4)"
            )
            assert "the next run sends again" in r.stderr
            # Nothing arrived, and nothing is recorded as delivered: the next run sends again.
            assert am.get(target, "/api/v2/alerts") == []
            assert front.url not in json.loads((tmp_path / "state" / "alertmanager.json").read_text())
        with redirect_every_path(target, 307) as front:
            r = cron(tmp_path, "--alertmanager", front.url)
        assert r.returncode == 2, r.stdout + r.stderr
        assert json.loads((tmp_path / "run.json").read_text())["alertmanager"] == [
            {"url": front.url, "firing": 1, "resolved": 0, "error": None}
        ]
        [alert] = am.get(target, "/api/v2/alerts")
        assert alert["labels"]["kind"] == "pfc_storm" and alert["labels"]["host"] == "pfcstorm-gpu03"
        assert front.url in json.loads((tmp_path / "state" / "alertmanager.json").read_text())

"""The HTTP policy against hostile servers, through the ``fabricscope`` command line.

Every server here is a real socket on 127.0.0.1 (:mod:`tests.hostile_http`). Each test checks
the exit status, the message, and that no secret reaches stdout, stderr or a written file.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import rendered_markdown
from tests.hostile_http import (
    EXPORTER_TEXT,
    HttpsEndpoint,
    body,
    drip,
    endless,
    error,
    exporter,
    exposition,
    gzip_bomb,
    gzipped,
    not_found,
    redirect_to,
)
from tests.prometheus_server import Endpoint

FABRICSCOPE = Path(sys.executable).with_name("fabricscope")
TOKEN = "tok-3c1d-hostile-never-print"
PASSWORD = "pw-9a7e-hostile-never-print"
HEADER = "hdr-51f0-hostile-never-print"
QUERY_TOKEN = "qtok-e2b4-hostile-never-print"
SECRETS = (TOKEN, PASSWORD, HEADER, QUERY_TOKEN)
METRIC_RX = "node_infiniband_port_data_received_bytes_total"
# Every command runs with this guard: a regression that hangs fails the test instead of the suite.
GUARD_S = 120


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FABRICSCOPE), *args], capture_output=True, text=True, timeout=GUARD_S, cwd=cwd, check=False
    )


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    p = tmp_path / "token"
    p.write_text(TOKEN + "\n")
    return p


def test_a_redirect_to_another_origin_carries_no_credential(tmp_path: Path, token_file: Path) -> None:
    with Endpoint(exporter) as other, Endpoint(redirect_to(other.url + "/metrics")) as first:
        out = tmp_path / "findings.json"
        r = run(
            "analyze",
            first.url + "/metrics",
            "--bearer-token-file",
            str(token_file),
            "--prometheus-header",
            f"X-Scope-OrgID={HEADER}",
            "--json",
            str(out),
        )
    assert r.returncode in (0, 1, 2), r.stderr
    doc = json.loads(out.read_text())
    assert doc["inputs"][0]["records"] > 0
    # The first origin got the credentials; the redirect's target got none of them.
    first_sent = [{k.lower(): v for k, v in h.items()} for p, h in first.requests if p == "/metrics"]
    assert first_sent and first_sent[0]["authorization"] == f"Bearer {TOKEN}"
    other_sent = [{k.lower(): v for k, v in h.items()} for p, h in other.requests if p == "/metrics"]
    assert len(other_sent) == 1
    assert "authorization" not in other_sent[0] and "x-scope-orgid" not in other_sent[0]
    assert_no_secret(r.stdout, r.stderr, out.read_text())


def test_a_redirect_on_the_same_origin_keeps_the_credentials(token_file: Path) -> None:
    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        if h.path == "/metrics":
            redirect_to("/metrics/real", 307)(h)
        elif h.path == "/metrics/real":
            exposition(h)
        else:
            not_found(h)

    with Endpoint(handle) as ep:
        r = run("analyze", ep.url + "/metrics", "--bearer-token-file", str(token_file))
    assert r.returncode in (0, 1, 2), r.stderr
    real = [{k.lower(): v for k, v in h.items()} for p, h in ep.requests if p == "/metrics/real"]
    assert real and real[0]["authorization"] == f"Bearer {TOKEN}"


def test_https_is_never_downgraded_to_http(tmp_path: Path, token_file: Path) -> None:
    with Endpoint(exporter) as plain, HttpsEndpoint(redirect_to(plain.url + "/metrics"), tmp_path) as tls:
        r = run("analyze", tls.url + "/metrics", "--ca-file", str(tls.ca_file), "--bearer-token-file", str(token_file))
    assert r.returncode == 3, r.stderr
    assert f"{tls.url}/metrics: HTTP 302: refused a redirect from https to plain http ({plain.url}/metrics)" in r.stderr
    assert not [p for p, _ in plain.requests if p == "/metrics"]
    assert_no_secret(r.stdout, r.stderr)


def test_redirects_are_bounded() -> None:
    with Endpoint(redirect_to("/metrics")) as ep:
        r = run("analyze", ep.url + "/metrics", "--retries", "0")
    assert r.returncode == 3, r.stderr
    assert f"{ep.url}/metrics: no response: more than 5 redirects" in r.stderr
    assert [p for p, _ in ep.requests].count("/metrics") == 6


def test_a_gzip_bomb_is_stopped_at_the_document_limit() -> None:
    # 1 GiB of zeros in about 1 MB of gzip: stopped once 256 MiB (max_document_bytes) came out.
    with Endpoint(body(gzip_bomb(1 << 30), encoding="gzip")) as ep:
        r = run("analyze", ep.url + "/metrics")
    assert r.returncode == 3, r.stderr
    assert f"{ep.url}/metrics: HTTP 200: the gzip body decompresses to more than 268435456 bytes" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_document_limit_option_sets_the_budget() -> None:
    with Endpoint(body(gzip_bomb(8 << 20), encoding="gzip")) as ep:
        r = run("analyze", ep.url + "/metrics", "--limit", "max_document_bytes=1000000")
    assert r.returncode == 3, r.stderr
    assert "the gzip body decompresses to more than 1000000 bytes" in r.stderr


def test_an_endless_body_is_cut_at_the_budget() -> None:
    with Endpoint(endless) as ep:
        r = run("analyze", ep.url + "/metrics", "--limit", "max_document_bytes=4000000")
    assert r.returncode == 3, r.stderr
    assert (
        f"{ep.url}/metrics: HTTP 200: the response is more than 4000000 bytes (max_document_bytes; "
        "raise it with --limit max_document_bytes=N)" in r.stderr
    )


def test_a_declared_oversized_body_is_refused_before_reading() -> None:
    with Endpoint(body(EXPORTER_TEXT, length=10**12)) as ep:
        r = run("analyze", ep.url + "/metrics")
    assert r.returncode == 3, r.stderr
    assert "the response declares 1000000000000 bytes: more than 268435456 bytes" in r.stderr


def test_a_dripping_server_is_cut_at_the_deadline() -> None:
    # One byte every 0.5 s never trips the 30 s socket timeout: only the deadline ends it.
    with Endpoint(drip(0.5)) as ep:
        r = run("analyze", ep.url + "/metrics", "--deadline", "2", "--retries", "0")
    assert r.returncode == 3, r.stderr
    assert f"{ep.url}/metrics: no response: the deadline of 2 s passed (--deadline)" in r.stderr


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (
            b"\x1f\x8b\x08\x00garbage-not-deflate" * 4,
            "expected a gzip body (Content-Encoding: gzip), found corrupt data",
        ),
        (gzipped(EXPORTER_TEXT)[:200], "the gzip body is truncated (it ended inside a compressed member)"),
    ],
    ids=["corrupt", "truncated"],
)
def test_bad_gzip_is_an_input_error_not_a_crash(payload: bytes, expected: str) -> None:
    with Endpoint(body(payload, encoding="gzip")) as ep:
        r = run("analyze", ep.url + "/metrics")
    assert r.returncode == 3, r.stderr
    assert f"{ep.url}/metrics: HTTP 200: {expected}" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_multi_member_gzip_body_is_read_whole(tmp_path: Path) -> None:
    half = len(EXPORTER_TEXT) // 2
    cut = EXPORTER_TEXT.rindex(b"\n", 0, half) + 1
    payload = gzipped(EXPORTER_TEXT[:cut]) + gzipped(EXPORTER_TEXT[cut:])
    out = tmp_path / "f.json"
    with Endpoint(body(payload, encoding="gzip")) as ep, Endpoint(exporter) as plain:
        r = run("analyze", ep.url + "/metrics", "--json", str(out))
        assert r.returncode in (0, 1, 2), r.stderr
        rows = json.loads(out.read_text())["inputs"][0]["records"]
        r = run("analyze", plain.url + "/metrics", "--json", str(out))
    assert rows == json.loads(out.read_text())["inputs"][0]["records"] > 0


def test_a_token_with_a_line_break_is_refused_without_printing_it(tmp_path: Path) -> None:
    bad = tmp_path / "token"
    bad.write_text(f"{TOKEN}\n{TOKEN}-second-line\n")
    with Endpoint(exporter) as ep:
        cron = [
            "cron",
            "--prometheus",
            ep.url + "/metrics",
            "--state",
            str(tmp_path / "s"),
            "--history",
            str(tmp_path / "h"),
        ]
        for command in (["analyze", ep.url + "/metrics"], cron):
            r = run(*command, "--bearer-token-file", str(bad))
            assert r.returncode == 3, (command, r.stdout, r.stderr)
            assert f"the bearer token file {bad} holds a line break" in r.stdout + r.stderr
            assert_no_secret(r.stdout, r.stderr)
    # Nothing was sent with a broken header.
    assert not ep.requests


def test_a_server_echoing_secrets_is_redacted(token_file: Path) -> None:
    echo = f"denied: token {TOKEN} tenant {HEADER} key {QUERY_TOKEN} pass {PASSWORD}".encode()
    with Endpoint(error(401, echo)) as ep:
        url = ep.url.replace("http://", f"http://ops:{PASSWORD}@") + f"/metrics?key={QUERY_TOKEN}"
        r = run(
            "analyze", url, "--bearer-token-file", str(token_file), "--prometheus-header", f"X-Scope-OrgID={HEADER}"
        )
    assert r.returncode == 3, r.stderr
    assert (
        f"{ep.url}/metrics/api/v1/status/buildinfo: HTTP 401: "
        "denied: token <redacted> tenant <redacted> key <redacted> pass <redacted>" in r.stderr
    )
    assert_no_secret(r.stdout, r.stderr)


def test_control_characters_from_a_server_are_escaped() -> None:
    with Endpoint(error(500, b"boom\x1b[2J\x07\xc2\x9b all fine")) as ep:
        r = run("analyze", ep.url + "/metrics", "--retries", "0")
    assert r.returncode == 3, r.stderr
    assert "HTTP 500: boom\\x1b[2J\\x07\\x9b all fine" in r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr


def test_credentials_over_plain_http_and_insecure_tls_are_warned(tmp_path: Path, token_file: Path) -> None:
    with Endpoint(exporter) as ep:
        r = run("analyze", ep.url + "/metrics", "--bearer-token-file", str(token_file))
    assert r.returncode in (0, 1, 2), r.stderr
    assert f"{ep.url}/metrics: credentials are sent over plain http://" in r.stderr
    with HttpsEndpoint(exporter, tmp_path) as tls:
        r = run("analyze", tls.url + "/metrics", "--insecure")
    assert r.returncode in (0, 1, 2), r.stderr
    assert f"{tls.url}/metrics: TLS certificates are not verified (--insecure)" in r.stderr
    # Without credentials plain http is not warned about.
    with Endpoint(exporter) as ep:
        r = run("analyze", ep.url + "/metrics")
    assert "plain http" not in r.stderr


def test_a_report_never_holds_the_credentials_of_its_inputs(tmp_path: Path) -> None:
    for fmt in ("html", "md"):
        out = tmp_path / f"r.{fmt}"
        with Endpoint(exporter) as ep:
            url = ep.url.replace("http://", f"http://ops:{PASSWORD}@") + f"/metrics?token={QUERY_TOKEN}"
            r = run("report", url, "-o", str(out), "-q")
        assert r.returncode == 0, r.stderr
        text = out.read_text()
        # The Markdown report shows the URL as text (markdown_text: no autolink of it).
        assert f"{ep.url}/metrics" in (rendered_markdown(text) if fmt == "md" else text)
        assert_no_secret(r.stdout, r.stderr, text)


def test_a_chunk_whose_response_outgrows_the_budget_is_split() -> None:
    from tests.hostile_http import QueryApi

    api = QueryApi("node_infiniband_port_data_received_bytes_total", {"device": "mlx5_0", "port": "1"})
    start_s = 1_796_400_000
    api.samples = [((start_s + i) * 1000, str(1000 * i)) for i in range(600)]  # 10 min at 1 s
    with Endpoint(api) as ep:
        r = run(
            "analyze",
            ep.url,
            "--since",
            "2026-12-04T16:00:00Z",
            "--until",
            "2026-12-04T16:10:00Z",
            "--limit",
            "max_document_bytes=6000",
            "--json",
            "-",
        )
    # The first 15-minute chunk's JSON (~15 KB) is beyond 6000 bytes: pulled in halves, nothing lost.
    assert r.returncode in (0, 1, 2), r.stderr
    (server,) = json.loads(r.stdout)["inputs"]
    assert server["records"] == 600 and server["rejected"] == 0
    queries = [p for p, _ in ep.requests if p.startswith("/api/v1/query")]
    assert len(queries) > 4


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_an_oversized_answer_is_refused_after_one_narrower_request(declared: bool) -> None:
    from tests.hostile_http import oversized_query_api

    # Every query answers 1.2 MB, whatever its range, against a 1 MB budget: the pull asks once
    # for a narrower range (the same answer), then refuses, naming the budget and its option.
    with Endpoint(oversized_query_api(METRIC_RX, 1_200_000, declared=declared)) as ep:
        r = run(
            "analyze",
            ep.url,
            "--since",
            "2026-12-04T16:00:00Z",
            "--until",
            "2026-12-04T17:00:00Z",
            "--limit",
            "max_document_bytes=1000000",
        )
    assert r.returncode == 3, r.stderr
    what = "the response declares 1200000 bytes: " if declared else "the response is "
    assert (
        f"{ep.url}/api/v1/query: HTTP 200: {what}more than 1000000 bytes (max_document_bytes; raise it with "
        "--limit max_document_bytes=N): the range 2026-12-04T16:"
    ) in r.stderr, r.stderr
    assert ", already narrowed once" in r.stderr
    assert [p for p, _ in ep.requests].count("/api/v1/query") == 2

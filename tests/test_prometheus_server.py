"""Reading a real Prometheus server and live exporter endpoints.

The server is Debian's ``prometheus`` holding a TSDB built with ``promtool`` from the sample
traces and scenarios (exact millisecond timestamps); analysing it over a scenario's time range
must give the findings the scenario's files give. These tests fail, never skip, when the
binaries are missing (``.ci/run`` installs them).
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.exceptions import InputError, RemoteError
from fabricscope.pipeline import run_analysis
from fabricscope.reading.prometheus import RemoteOptions, load_url, probe
from fabricscope.simulate import check_truth
from fabricscope.transport import Connection, redact

from tests.prometheus_server import Endpoint as _Endpoint
from tests.prometheus_server import binaries, prometheus_text_to_openmetrics, serve

REPO = Path(__file__).resolve().parent.parent
SCENARIOS_DIR = REPO / "sample_traces" / "scenarios"
FABRICSCOPE = Path(sys.executable).with_name("fabricscope")
# The scenarios whose scrape file the test server loads (plain text; a gzipped one is read from files only).
SCENARIOS = sorted({p.parent.parent.name for p in SCENARIOS_DIR.glob("*/prometheus/*.prom")})
FINDING_KEY = ["kind", "severity", "host", "device", "port", "priority", "layer", "start", "end", "metric"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        binaries()
    except FileNotFoundError as e:
        pytest.fail(str(e))
    work = tmp_path_factory.mktemp("prometheus")
    sources = sorted(SCENARIOS_DIR.glob("*/prometheus/*.prom")) + sorted(
        (REPO / "sample_traces/prometheus").glob("*.prom")
    )
    om = work / "traces.om"
    prometheus_text_to_openmetrics(sources, om)
    with serve(om, work) as url:
        yield url


def _key(findings: pl.DataFrame) -> list[tuple[object, ...]]:
    return sorted(findings.select(FINDING_KEY).rows(), key=repr)


def _range(path: Path) -> tuple[dt.datetime, dt.datetime]:
    """``[first sample, last sample + 1 ms)`` of the files (datetimes: exact to the microsecond)."""
    t = fabricscope.read(path)["time"]
    first, last = t.min(), t.max()
    assert isinstance(first, dt.datetime) and isinstance(last, dt.datetime)
    return first, last + dt.timedelta(milliseconds=1)


def _ns(t: dt.datetime) -> int:
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1) * 1000


def test_the_server_is_recognised_by_its_api(server: str) -> None:
    assert probe(server) == "prometheus"
    assert probe(server + "/-/healthy") == "exporter"


#: Each server API and the reader that decodes it (the rows' ``source``).
API_READERS = {"read": "prometheus-remote-read", "query": "prometheus-api"}


@pytest.mark.parametrize("api", sorted(API_READERS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_server_gives_the_findings_of_the_files(server: str, scenario: str, api: str) -> None:
    files = SCENARIOS_DIR / scenario / "prometheus"
    truth = json.loads((SCENARIOS_DIR / scenario / "truth.json").read_text())
    since, until = _range(files)
    # Every scenario shares one time range on the server: its hosts pick it out. The filter is
    # neutral on the files (they hold only these hosts).
    hosts = truth["hosts"]
    from_files = run_analysis(files, hosts=hosts)
    assert _key(from_files.findings) == _key(run_analysis(files).findings)
    remote = RemoteOptions(api=api)
    from_server = run_analysis(server, since=since, until=until, hosts=hosts, remote=remote)
    assert _key(from_server.findings) == _key(from_files.findings)
    assert check_truth(from_server.findings, truth) == check_truth(from_files.findings, truth)
    # The samples themselves: the same rows, exact values and timestamps.
    rows_files = fabricscope.read(files).filter(pl.col("host").cast(pl.String).is_in(hosts))
    got = fabricscope.load(server, remote=RemoteOptions(since=_ns(since), until=_ns(until), api=api)).samples
    got = got.filter(pl.col("host").cast(pl.String).is_in(hosts))
    cols = ["time", "host", "device", "port", "priority", "counter", "value_u64", "value_f64", "scale", "is_counter"]
    order = ["host", "device", "port", "priority", "counter", "time"]

    def canon(df: pl.DataFrame) -> pl.DataFrame:
        return df.select(cols).with_columns(pl.col(pl.Categorical).cast(pl.String)).sort(order, nulls_last=True)

    assert canon(got).equals(canon(rows_files))
    assert set(got["source"].cast(pl.String).unique()) == {API_READERS[api]}


def test_pulls_in_chunks_and_through_query_range(server: str) -> None:
    files = SCENARIOS_DIR / "pfc-storm" / "prometheus"
    since, until = _range(files)
    whole = fabricscope.load(server, remote=RemoteOptions(since=_ns(since), until=_ns(until))).samples
    order = ["host", "device", "counter", "port", "priority", "time"]
    for api in API_READERS:
        # 7-second chunks: many requests, no sample lost or doubled at their edges, either API.
        chunked = fabricscope.load(
            server, remote=RemoteOptions(since=_ns(since), until=_ns(until), chunk_s=7, api=api)
        ).samples
        assert chunked.height == whole.height > 0
        assert chunked.drop("source").sort(order).equals(whole.drop("source").sort(order))
    # query_range resamples onto a step grid anchored at ``since``, across chunks too.
    ranged = fabricscope.load(
        server, remote=RemoteOptions(since=_ns(since), until=_ns(until), step_s=10, chunk_s=35)
    ).samples
    assert ranged.height > 0
    assert ((ranged["time"].dt.epoch("ns") - _ns(since)) % 10_000_000_000 == 0).all()
    # Label matchers narrow the pull on the server, read by remote read as PromQL reads them
    # (double, single or back quotes, escapes, every operator).
    for match in [
        ('instance=~"pfcstorm-gpu01:.*"',),
        ('{instance=~\'pfcstorm-gpu0[1]:.*\', job!="no\\"pe"}', "device!~`x|y`"),
    ]:
        for api in API_READERS:
            one = fabricscope.load(
                server, remote=RemoteOptions(since=_ns(since), until=_ns(until), match=match, api=api)
            ).samples
            assert set(one["host"].cast(pl.String).unique()) == {"pfcstorm-gpu01"}, (match, api)
            assert one.height == whole.filter(pl.col("host") == "pfcstorm-gpu01").height
    with pytest.raises(ValueError, match="cannot read the label matcher"):
        load_url(server, RemoteOptions(since=_ns(since), until=_ns(until), match=("instance=gpu01",), api="read"))


def test_cli_analyses_a_server_like_files(server: str, tmp_path: Path) -> None:
    files = SCENARIOS_DIR / "ib-symbol-errors" / "prometheus"
    truth = json.loads((SCENARIOS_DIR / "ib-symbol-errors" / "truth.json").read_text())
    since, until = _range(files)
    iso = [t.isoformat() for t in (since, until)]
    hosts = ",".join(truth["hosts"])

    def run(*args: str) -> tuple[int, dict[str, object]]:
        out = subprocess.run(
            [str(FABRICSCOPE), "analyze", *args, "--hosts", hosts, "--json", "-"], capture_output=True, text=True
        )
        return out.returncode, json.loads(out.stdout)

    rc_files, doc_files = run(str(files))
    # User info in the URL is sent as basic auth (the server ignores it) and never shown.
    with_user = server.replace("http://", "http://ops:hunter2@")
    rc_server, doc_server = run(with_user, "--since", iso[0], "--until", iso[1])
    rc_query, doc_query = run(server, "--since", iso[0], "--until", iso[1], "--prometheus-api", "query")
    assert rc_server == rc_query == rc_files == 2  # CRITICAL: symbol errors

    def comparable(doc: dict[str, object], reader: str) -> list[dict[str, object]]:
        # Everything equal but the evidence's reader name: it says which API (or file format)
        # the samples came from; the input list says from where.
        out = []
        for f in doc["findings"]:  # type: ignore[attr-defined]
            ev = dict(f["evidence"])
            assert ev.pop("source", reader) == reader
            out.append({**f, "evidence": ev})
        return out

    assert comparable(doc_server, "prometheus-remote-read") == comparable(doc_files, "prometheus")
    assert comparable(doc_query, "prometheus-api") == comparable(doc_files, "prometheus")
    assert len(doc_server["findings"]) > 0  # type: ignore[arg-type]
    assert [(i["path"], i["format"]) for i in doc_server["inputs"]] == [  # type: ignore[attr-defined]
        (server, "prometheus-remote-read")
    ]
    assert [(i["path"], i["format"]) for i in doc_query["inputs"]] == [(server, "prometheus-api")]  # type: ignore[attr-defined]
    assert "hunter2" not in json.dumps(doc_server) and "ops" not in json.dumps(doc_server["inputs"])


# --- live exporter endpoints -------------------------------------------------------------------

EXPORTER_TEXT = (REPO / "tests/fixtures/prometheus/e2e-output.infiniband.prom").read_bytes()


def _exporter(h: http.server.BaseHTTPRequestHandler) -> None:
    if h.path != "/metrics":
        h.send_response(404)
        h.end_headers()
        return
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; version=0.0.4")
    h.end_headers()
    h.wfile.write(EXPORTER_TEXT)


def test_live_scrape_of_an_exporter(tmp_path: Path) -> None:
    with _Endpoint(_exporter) as ep:
        samples, _attrs, report = load_url(ep.url + "/metrics", RemoteOptions(repeat=3, interval_s=0.05))
    # The buildinfo probe (under the URL's path, as for a server behind a prefix), then three scrapes.
    assert [p for p, _ in ep.requests] == ["/metrics/api/v1/status/buildinfo"] + ["/metrics"] * 3
    (tmp_path / "x.prom").write_bytes(EXPORTER_TEXT)
    one = fabricscope.load(tmp_path / "x.prom", host="127.0.0.1", time=0)
    assert samples.height == 3 * one.samples.height > 0
    assert samples["time"].n_unique() == 3
    assert set(samples["host"].cast(pl.String).unique()) == {"127.0.0.1"}
    cols = ["device", "port", "counter", "value_u64", "value_f64"]
    first = samples.filter(pl.col("time") == samples["time"].min()).select(cols)
    assert (
        first.with_columns(pl.col(pl.Categorical).cast(pl.String))
        .sort(cols[:3])
        .equals(one.samples.select(cols).with_columns(pl.col(pl.Categorical).cast(pl.String)).sort(cols[:3]))
    )
    assert report["path"] == ep.url + "/metrics" and report["format"] == "prometheus"


def _forbid_api(h: http.server.BaseHTTPRequestHandler) -> None:
    if "/api/" in h.path:
        h.send_response(403)
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        h.wfile.write(b"forbidden: missing tenant header\n")
    else:
        _exporter(h)


def test_a_refused_credential_is_not_taken_for_an_exporter() -> None:
    # A server behind an authenticating proxy answers 401/403 on its API: that says nothing about
    # what it serves, so the refusal is reported instead of scraping /metrics of the wrong thing.
    with _Endpoint(_forbid_api) as ep:
        with pytest.raises(RemoteError) as err:
            probe(ep.url)
        assert err.value.status == 403
        assert f"{ep.url}/api/v1/status/buildinfo: HTTP 403" in str(err.value)
        with pytest.raises(RemoteError):
            load_url(ep.url, RemoteOptions(connection=Connection(retries=0)))
        # Only the probe was asked, once per call: nothing was scraped.
        assert [p for p, _ in ep.requests] == ["/api/v1/status/buildinfo"] * 2


def test_an_exporter_without_the_api_is_an_exporter() -> None:
    # An exporter answers every path with its text (not the API's JSON): scraped, not refused.
    with _Endpoint(_exporter) as ep:
        assert probe(ep.url + "/metrics") == "exporter"


def test_cli_scrapes_an_exporter() -> None:
    with _Endpoint(_exporter) as ep:
        out = subprocess.run(
            [str(FABRICSCOPE), "analyze", ep.url + "/metrics", "--repeat", "2", "--interval", "0.05", "--json", "-"],
            capture_output=True,
            text=True,
        )
    assert out.returncode in (0, 1, 2), out.stderr
    doc = json.loads(out.stdout)
    assert doc["inputs"][0]["path"] == ep.url + "/metrics"
    assert [p for p, _ in ep.requests].count("/metrics") == 2


def _forward_without_remote_read(server: str) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    """A front for the real server that has no remote read (as Thanos Query, VictoriaMetrics and
    some proxies have none): ``/api/v1/read`` answers 404, everything else is the server's."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        # The request body is read first, as a server does: answering with it unread can reset
        # the connection before the client sees the status.
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        if h.path.startswith("/api/v1/read"):
            h.send_response(404)
            h.send_header("Content-Length", "19")
            h.end_headers()
            h.wfile.write(b"404 page not found\n")
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() in ("content-type", "accept-encoding")}
        req = urllib.request.Request(server + h.path, data=body, headers=headers, method=h.command)
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
            h.send_response(r.status)
            for k in ("Content-Type", "Content-Encoding"):
                if r.headers.get(k):
                    h.send_header(k, r.headers[k])
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)

    return handle


def test_a_server_without_remote_read_is_pulled_through_the_query_api(server: str) -> None:
    files = SCENARIOS_DIR / "pfc-storm" / "prometheus"
    since, until = _range(files)
    opts = RemoteOptions(since=_ns(since), until=_ns(until))
    direct = fabricscope.load(server, remote=opts).samples
    with _Endpoint(_forward_without_remote_read(server)) as front:
        fallen = fabricscope.load(front.url, remote=opts).samples
        by_default = len(front.requests)
        with pytest.raises(RemoteError) as err:
            load_url(front.url, replace(opts, api="read", connection=Connection(retries=0)))
    order = ["host", "device", "counter", "port", "priority", "time"]
    assert set(direct["source"].cast(pl.String).unique()) == {"prometheus-remote-read"}
    assert set(fallen["source"].cast(pl.String).unique()) == {"prometheus-api"}
    assert fallen.drop("source").sort(order).equals(direct.drop("source").sort(order))
    paths = [p.split("?")[0] for p, _ in front.requests]
    default, explicit = paths[:by_default], paths[by_default:]
    # The default tries remote read first (one request per name group; the first 404 cancels the
    # group's requests not yet sent), then goes on through the query API; the explicit read
    # tries again and stops there. (A read already in flight when the first 404 came back may reach
    # the server after the first query: the server sees concurrent requests in its own order.)
    first_query = default.index("/api/v1/query")
    assert first_query > 2 and set(default[2:first_query]) == {"/api/v1/read"}
    assert set(default[first_query:]) <= {"/api/v1/query", "/api/v1/read"}
    assert explicit[-1] == "/api/v1/read" and "/api/v1/read" in explicit and "/api/v1/query" not in explicit
    # A server pull never asks for gzip (the server's CPU, not the network, is what it costs).
    assert not any("gzip" in h.get("Accept-Encoding", "") for p, h in front.requests if p.startswith("/api/v1/q"))
    # Asked for remote read explicitly, the 404 is the error, naming the URL and status.
    assert err.value.status == 404 and str(err.value).startswith(front.url + "/api/v1/read: HTTP 404")


def test_api_choice_is_checked(server: str) -> None:
    with pytest.raises(ValueError, match="needs a step"):
        RemoteOptions(api="query_range").server_api()
    with pytest.raises(ValueError, match="cannot be used with api='read'"):
        RemoteOptions(api="read", step_s=15).server_api()
    with pytest.raises(ValueError, match="unknown Prometheus API"):
        RemoteOptions(api="graphite").server_api()
    assert [RemoteOptions().server_api(), RemoteOptions(step_s=15).server_api()] == ["read", "query_range"]
    # From the CLI: a contradiction is an input error (exit 3) that says what to do.
    run = subprocess.run(
        [str(FABRICSCOPE), "analyze", server, "--prometheus-api", "query_range"], capture_output=True, text=True
    )
    assert run.returncode == 3 and "api='query_range' needs a step (step_s, --step)" in run.stderr, run.stderr
    run = subprocess.run(
        [str(FABRICSCOPE), "analyze", server, "--prometheus-api", "soap"], capture_output=True, text=True
    )
    assert run.returncode == 3 and "invalid choice: 'soap'" in run.stderr, run.stderr


# --- failures, credentials ---------------------------------------------------------------------

SECRET_TOKEN = "tok-5f1e9c0a-never-print-me"
SECRET_PASSWORD = "pw-77c3-never-print-me"
SECRET_HEADER = "hdr-0b9d-never-print-me"


def _deny(h: http.server.BaseHTTPRequestHandler) -> None:
    body = b'{"status":"error","errorType":"unauthorized","error":"bad credentials"}'
    h.send_response(401)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    h.wfile.write(body)


def test_credentials_are_sent_and_never_shown(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(SECRET_TOKEN + "\n")
    basic = tmp_path / "basic"
    basic.write_text(f"ops:{SECRET_PASSWORD}\n")
    out_json = tmp_path / "findings.json"
    with _Endpoint(_deny) as ep:
        url = ep.url.replace("http://", f"http://ops:{SECRET_PASSWORD}@") + "/?token=" + SECRET_TOKEN
        run = subprocess.run(
            [
                str(FABRICSCOPE),
                "-v",
                "analyze",
                url,
                "--bearer-token-file",
                str(token),
                "--prometheus-header",
                f"X-Scope-OrgID={SECRET_HEADER}",
                "--json",
                str(out_json),
            ],
            capture_output=True,
            text=True,
        )
        with pytest.raises(RemoteError) as err:
            load_url(ep.url, RemoteOptions(connection=Connection(basic_auth_file=str(basic), retries=0)))
    assert run.returncode == 3
    assert f"{ep.url}/api/v1/status/buildinfo: HTTP 401: unauthorized: bad credentials" in run.stderr, run.stderr
    assert "HTTP 401" in run.stderr
    shown = run.stdout + run.stderr + (out_json.read_text() if out_json.exists() else "") + str(err.value)
    for secret in (SECRET_TOKEN, SECRET_PASSWORD, SECRET_HEADER):
        assert secret not in shown
    # The secrets did travel, in headers only.
    sent = [{k.lower(): v for k, v in h.items()} for _, h in ep.requests]
    assert any(h.get("authorization") == f"Bearer {SECRET_TOKEN}" for h in sent)
    assert any(h.get("x-scope-orgid") == SECRET_HEADER for h in sent)
    assert err.value.status == 401 and isinstance(err.value, InputError)


def test_failures_name_the_url_and_status_and_retry_with_backoff() -> None:
    def broken(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(503)
        h.end_headers()
        h.wfile.write(b"overloaded\n")

    with _Endpoint(broken) as ep, pytest.raises(RemoteError) as err:
        load_url(ep.url + "/metrics", RemoteOptions(connection=Connection(retries=2, backoff_s=0.01)))
    assert err.value.status == 503
    assert str(err.value).startswith(ep.url + "/metrics: HTTP 503: overloaded")
    assert "after 3 attempts" in str(err.value)
    # The probe is tried once; the scrape three times.
    assert [p for p, _ in ep.requests].count("/metrics") == 3

    # Nothing listening: no status, the URL named, exit 3 from the CLI.
    with _Endpoint(broken) as ep:
        dead = ep.url
    with pytest.raises(RemoteError) as err:
        probe(dead)
    assert err.value.status is None and str(err.value).startswith(dead)
    run = subprocess.run([str(FABRICSCOPE), "analyze", dead, "--timeout", "2"], capture_output=True, text=True)
    assert run.returncode == 3 and dead in run.stderr, run.stderr


def test_redact() -> None:
    assert redact("https://u:p@h:9090/x?y=z#f") == "https://h:9090/x"
    assert redact("http://[::1]:9090") == "http://[::1]:9090"


def test_cli_reports_a_server(server: str, tmp_path: Path) -> None:
    files = SCENARIOS_DIR / "pfc-storm" / "prometheus"
    since, until = _range(files)
    out = tmp_path / "r.md"
    run = subprocess.run(
        [
            str(FABRICSCOPE),
            "report",
            server,
            "--since",
            since.isoformat(),
            "--until",
            until.isoformat(),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2, run.stderr  # Nagios CRITICAL: the storm
    text = out.read_text()
    # the storm's incident names the storming NIC (the server holds every scenario's scrapes, so
    # the window holds other scenarios' faults too)
    assert "PFC pause storm from pfcstorm-gpu03 eth0" in text
    assert server.split("//")[1] in text  # the input is named


def test_cron_pulls_only_the_new_range_and_keeps_its_watermark_on_crash(server: str, tmp_path: Path) -> None:
    from fabricscope.doors.cron import CronOptions, run_cron

    files = SCENARIOS_DIR / "pfc-storm" / "prometheus"
    since, until = _range(files)
    hosts = json.loads((SCENARIOS_DIR / "pfc-storm" / "truth.json").read_text())["hosts"]
    middle = since + (until - since) / 2
    remote = RemoteOptions(match=(f'instance=~"({"|".join(hosts)}):.*"',))
    state, history = tmp_path / "state", tmp_path / "history"

    def opts(now: dt.datetime) -> CronOptions:
        return CronOptions(inputs=[], state=state, history=history, now=now, prometheus=[server], remote=remote)

    def watermark() -> int:
        return json.loads((state / "state.json").read_text())["files"][server]["watermark_ns"]

    all_rows = fabricscope.read(files).filter(pl.col("counter") != "DCGM_FI_PROF_NVLINK_TX_BYTES")
    first = run_cron(opts(middle))
    assert watermark() == _ns(middle)
    before = all_rows.filter(pl.col("time") < middle).height
    assert 0 < first.samples <= before
    # A run killed after writing the history but before its commit leaves the watermark alone...
    env = {**os.environ, "FABRICSCOPE_CRASH_AT": "after-history"}
    code = (
        "import datetime as dt, sys; from pathlib import Path; "
        "from fabricscope.doors.cron import CronOptions, run_cron; "
        "from fabricscope.reading.prometheus import RemoteOptions; "
        f"run_cron(CronOptions(inputs=[], state=Path({str(state)!r}), history=Path({str(history)!r}), "
        f"now=dt.datetime.fromisoformat({until.isoformat()!r}), prometheus=[{server!r}], "
        f"remote=RemoteOptions(match=({remote.match[0]!r},))))"
    )
    crashed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert crashed.returncode == -9, crashed.stderr
    assert watermark() == _ns(middle)
    # ...and the next run pulls [middle, until) once: every sample stored exactly once.
    second = run_cron(opts(until))
    assert watermark() == _ns(until)
    stored = pl.read_parquet(history / "samples", hive_partitioning=True)
    assert stored.unique(subset=["host", "device", "port", "priority", "counter", "time"]).height == stored.height
    assert first.samples + second.samples == stored.height

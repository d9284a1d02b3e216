"""The dashboard over a real Prometheus server: the sidebar's server source and time-range picker.

The server is Debian's ``prometheus`` serving the pfc-storm and link-flap scenarios (see the
``prometheus`` fixture); nothing imitates its API. A scenario pulled over its time range must
show the findings its files show.
"""

from __future__ import annotations

import http.server
import time
from pathlib import Path

import allowed_sources
import data
import polars as pl
import pytest
from fabricscope.doors.dashboard import ENV_REMOTE_FILE, remote_environment
from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.transport import Connection
from streamlit.testing.v1 import AppTest

from tests.conftest import rendered_markdown as rendered
from tests.dashboard.conftest import APP, SAMPLES, free_port
from tests.dashboard.test_pages import frame, metrics
from tests.prometheus_server import Endpoint

# pfc-storm's Prometheus samples: 16:00:00.001 .. 16:04:00.053 UTC; link-flap's share that range,
# so label matchers pick a scenario out.
SINCE, UNTIL = "2026-12-04T16:00:00Z", "2026-12-04T16:05:00Z"
FILES = "scenarios/pfc-storm/prometheus"
PFC_STORM = 'instance=~"pfcstorm-.*"'
SECRET_PASSWORD = "pw-7f3a-never-shown"
SECRET_TOKEN = "tok-51c2-never-shown"
SECRET_HEADER = "hdr-a0e4-never-shown"


@pytest.fixture(autouse=True)
def _remote_file(tmp_path: Path) -> None:
    global _REMOTE_FILE
    _REMOTE_FILE = tmp_path / "remote.json"


_REMOTE_FILE = Path("remote.json")  # each test's own (the fixture above)


def describe(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """The remote-source file the command writes for the app, holding ``text``."""
    _REMOTE_FILE.write_text(text)
    monkeypatch.setenv(ENV_REMOTE_FILE, str(_REMOTE_FILE))


def configure(monkeypatch: pytest.MonkeyPatch, *urls: str, options: RemoteOptions | None = None) -> None:
    """What ``fabricscope dashboard --prometheus URL ...`` hands the app; fresh caches."""
    describe(monkeypatch, remote_environment(urls, options))
    data.load_remote.clear()
    data.source_kind.clear()


def run(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def every_text(at: AppTest) -> str:
    """Everything the page shows as text, the sidebar and the tables' cells included."""
    parts: list[str] = []
    for kind in ("markdown", "caption", "error", "success", "info", "warning", "title", "subheader", "metric"):
        for e in at.get(kind):
            parts.append(rendered(str(getattr(e, "value", ""))) + str(getattr(e, "label", "")))
    for w in (*at.sidebar.selectbox, *at.sidebar.text_input):
        parts.append(f"{w.label} {w.value} {getattr(w, 'options', '')}")
    for d in at.dataframe:
        parts.append(d.value.to_csv())
    return "\n".join(parts)


def shown_state(at: AppTest) -> str:
    """The session's sidebar state (what a page could echo back)."""
    keys = ("source", "remote_match", "remote_range", "remote_since", "remote_until")
    return repr({k: at.session_state[k] for k in keys if k in at.session_state})


def comparable(findings: pl.DataFrame) -> list[tuple[object, ...]]:
    return sorted(findings.select("severity", "kind", "host", "device", "port", "start", "end").rows(), key=repr)


def test_server_source_shows_the_findings_of_the_scenario_files(
    prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, prometheus)
    from_files = run("overview", source=FILES)
    at = run("overview", source=prometheus, since=SINCE, until=UNTIL, match=PFC_STORM)
    assert not at.error, [rendered(e.value) for e in at.error]
    # The server is offered first, under its URL; the range and the matchers came from the link.
    assert at.sidebar.selectbox[0].value == prometheus
    assert at.sidebar.selectbox[0].options[0] == prometheus
    assert at.sidebar.selectbox[1].value == "Custom"
    assert [t.value for t in at.sidebar.text_input] == [PFC_STORM, SINCE, UNTIL]
    # pfc-storm's truth, as the files give it: 2 critical, 2 warning, worst port pfcstorm-gpu03/eth0.
    m = metrics(at)
    assert (m["Critical"], m["Warning"]) == ("2", "2")
    assert m == metrics(from_files)
    assert m["Last data (UTC)"] == "2026-12-04 16:04:00"
    worst = frame(at, "worst")
    assert worst["port"][0] == "pfcstorm-gpu03/eth0"
    assert worst.equals(frame(from_files, "worst"))
    assert {"pfc_storm", "pfc_congestion", "packet_loss"} <= set(frame(at, "message")["kind"])
    ds = data.load_remote(prometheus, *_range_ns(), (PFC_STORM,), 1, 0.0, 0, "")
    files = data.load_source(str(SAMPLES / FILES), data.fingerprint(SAMPLES / FILES), FILES)
    assert comparable(ds.findings) == comparable(files.findings)
    assert ds.mode == "server"
    assert [i["format"] for i in ds.inputs] == ["prometheus-remote-read"]
    text = every_text(at)
    assert f"{prometheus} · 2026-12-04 16:00:00 .. 2026-12-04 16:05:00 UTC" in text
    assert "(pulled now)" in text


def _range_ns() -> tuple[int, int]:
    return allowed_sources.parse_time(SINCE), allowed_sources.parse_time(UNTIL)


def test_matchers_pick_the_scenario_out_of_the_server(prometheus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The server holds link-flap over the same range: the matchers decide.
    configure(monkeypatch, prometheus)
    since, until = SINCE, UNTIL
    both = run("overview", source=prometheus, since=since, until=until)
    hosts = set(frame(both, "message")["host"])
    assert {"pfcstorm-gpu03", "flap-gpu03"} <= hosts
    flap = run("overview", source=prometheus, since=since, until=until, match='instance=~"flap-.*"')
    assert set(frame(flap, "message")["host"]) == {h for h in hosts if h.startswith("flap-")}
    assert "link_flap" in set(frame(flap, "message")["kind"])
    # Configured matchers (--match) always apply, ANDed with the page's.
    configure(monkeypatch, prometheus, options=RemoteOptions(match=(PFC_STORM,)))
    only = run("overview", source=prometheus, since=since, until=until)
    assert {h for h in frame(only, "message")["host"]} <= {f"pfcstorm-gpu0{i}" for i in range(1, 5)}
    assert "server's configured ones always apply" in only.sidebar.text_input[0].help


def test_presets_count_back_from_the_anchor_and_refresh_moves_it(
    prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, prometheus)
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["source"] = prometheus
    at.query_params["range"] = "15m"
    at.query_params["match"] = PFC_STORM
    # Pin the anchor just after pfc-storm's end: "last 15 min" then covers the whole scenario.
    at.session_state["remote_anchor_ns"] = allowed_sources.parse_time("2026-12-04T16:10:00Z")
    at.run()
    assert not at.exception and not at.error
    assert at.sidebar.selectbox[1].value == "Last 15 min"
    assert metrics(at)["Critical"] == "2"
    assert "2026-12-04 15:55:00 .. 2026-12-04 16:10:00 UTC" in every_text(at)
    # Refresh: the presets count back from now (no data there: an empty, healthy fabric).
    at.sidebar.button[0].click().run()
    assert not at.exception
    assert at.session_state["remote_refresh"] == 1
    before = time.time_ns()
    at.sidebar.button[0].click().run()
    assert not at.exception
    assert at.session_state["remote_refresh"] == 2
    assert before // 1_000_000 * 1_000_000 <= at.session_state["remote_anchor_ns"] <= time.time_ns()
    assert metrics(at)["Last data (UTC)"] == "none"
    # Other presets are offered.
    assert at.sidebar.selectbox[1].options == ["Last 15 min", "Last 1 h", "Last 6 h", "Last 24 h", "Custom"]


def test_server_only_dashboard_offers_no_files(prometheus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FABRICSCOPE_DATA")
    configure(monkeypatch, prometheus)
    assert allowed_sources.list_sources() == [prometheus]
    at = run("overview", since=SINCE, until=UNTIL)  # no ?source=: the server is the default
    assert at.sidebar.selectbox[0].options == [prometheus]
    assert {"pfcstorm-gpu03", "flap-gpu03"} <= set(frame(at, "message")["host"])
    refused = run("overview", source="scenarios/pfc-storm")
    assert [rendered(e.value) for e in refused.error] == [
        "Refused: 'scenarios/pfc-storm' is not one of the configured servers"
    ]


def test_a_url_the_operator_did_not_configure_is_never_read(prometheus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, prometheus)
    with Endpoint(lambda h: h.send_error(500)) as ep:
        at = run("overview", source=ep.url)
        assert ep.requests == []
    assert at.error and at.error[0].value.startswith("Refused:")


def test_bad_matchers_and_ranges_are_errors_not_queries(prometheus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, prometheus)
    injected = run("overview", source=prometheus, since=SINCE, until=UNTIL, match='job="x"} or {__name__=~".+"')
    assert [rendered(e.value) for e in injected.error] == [
        "Label matchers: expected a comma between matchers at '} or {__name__=~\".+\"'"
    ]
    backwards = run("overview", source=prometheus, since=UNTIL, until=SINCE)
    assert rendered(backwards.error[0].value) == (
        "Time range: since 2026-12-04 16:05:00 is not before until 2026-12-04 16:00:00"
    )
    garbled = run("overview", source=prometheus, since="yesterday", until=UNTIL)
    assert rendered(garbled.error[0].value).startswith("Time range: 'yesterday' is not an ISO 8601 time")
    huge = run("overview", source=prometheus, since="2026-01-01T00:00:00Z", until=UNTIL)
    assert rendered(huge.error[0].value).startswith("Time range: at most 7 days at once")
    assert not metrics(huge)


# --- errors: the URL and the status, never a traceback or a credential ------------------------------


def test_a_broken_configuration_is_an_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    # Set by hand (the command checks its URLs): a port out of range, credentials in the URL.
    describe(monkeypatch, '{"urls": ["http://ops:pw-0c1e@prom:99999"]}')
    at = run("overview")
    assert [rendered(e.value) for e in at.error] == [
        "Cannot use the configured servers: FABRICSCOPE_REMOTE_FILE: URL 1: not a valid URL: Port out of range 0-65535"
    ]
    describe(monkeypatch, "{not json")
    assert rendered(run("overview").error[0].value) == (
        "Cannot use the configured servers: FABRICSCOPE_REMOTE_FILE holds no fabricscope remote-source description "
        "(JSONDecodeError)"
    )
    # The command removes the file when the server stops: a page still open then says so.
    _REMOTE_FILE.unlink()
    assert rendered(run("overview").error[0].value) == (
        f"Cannot use the configured servers: FABRICSCOPE_REMOTE_FILE: cannot read {_REMOTE_FILE}: "
        "No such file or directory"
    )


def test_closed_port_is_an_error_naming_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    configure(monkeypatch, url, options=RemoteOptions(connection=Connection(retries=0)))
    at = run("overview", source=url)
    assert not at.exception
    (error,) = at.error
    err_value = rendered(error.value)
    assert err_value.startswith(f"Cannot read {url}: {url}/api/v1/status/buildinfo: no response: ")
    assert "Connection refused" in err_value or "ConnectionRefused" in err_value
    assert not metrics(at)


def test_unauthorised_is_an_error_with_the_status_and_no_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text(SECRET_TOKEN + "\n")

    def deny(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(401)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "65")
        h.end_headers()
        h.wfile.write(b'{"status":"error","errorType":"unauthorized","error":"no access"}'.ljust(65))

    with Endpoint(deny) as ep:
        configured = ep.url.replace("http://", f"http://ops:{SECRET_PASSWORD}@")
        conn = Connection(bearer_token_file=str(token), headers=(("X-Scope-OrgID", SECRET_HEADER),), retries=0)
        configure(monkeypatch, configured, options=RemoteOptions(connection=conn))
        at = run("overview", source=ep.url)
        sent = [{k.lower(): v for k, v in h.items()} for _, h in ep.requests]
    assert not at.exception
    # The browser names the source by its URL without credentials.
    assert at.sidebar.selectbox[0].value == ep.url
    (error,) = at.error
    err_value = rendered(error.value)
    assert err_value.startswith(f"Cannot read {ep.url}: {ep.url}/")
    assert "HTTP 401: unauthorized: no access" in err_value
    text = every_text(at) + shown_state(at)
    for secret in (SECRET_PASSWORD, SECRET_TOKEN, SECRET_HEADER):
        assert secret not in text
    # ... while the credentials did travel, in headers.
    assert any(h.get("authorization") == f"Bearer {SECRET_TOKEN}" for h in sent)
    assert any(h.get("x-scope-orgid") == SECRET_HEADER for h in sent)


def test_credentials_in_the_configured_url_stay_out_of_the_page(
    prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configured = prometheus.replace("http://", f"http://ops:{SECRET_PASSWORD}@")
    configure(monkeypatch, configured)
    at = run("overview", source=prometheus, since=SINCE, until=UNTIL, match=PFC_STORM)
    assert not at.error
    assert metrics(at)["Critical"] == "2"
    text = every_text(at) + shown_state(at)
    assert SECRET_PASSWORD not in text and "ops:" not in text
    assert prometheus in text


# --- an exporter endpoint: scraped, no time range -------------------------------------------------

EXPORTER_TEXT = (SAMPLES.parent / "tests/fixtures/prometheus/e2e-output.infiniband.prom").read_bytes()


def _exporter(h: http.server.BaseHTTPRequestHandler) -> None:
    h.send_response(200 if h.path == "/metrics" else 404)
    h.send_header("Content-Type", "text/plain; version=0.0.4")
    h.send_header("Content-Length", str(len(EXPORTER_TEXT) if h.path == "/metrics" else 0))
    h.end_headers()
    if h.path == "/metrics":
        h.wfile.write(EXPORTER_TEXT)


def test_exporter_source_is_scraped(monkeypatch: pytest.MonkeyPatch) -> None:
    with Endpoint(_exporter) as ep:
        configure(monkeypatch, ep.url + "/metrics", options=RemoteOptions(repeat=2, interval_s=1))
        at = run("overview", source=ep.url + "/metrics")
        paths = [p for p, _ in ep.requests]
    assert not at.error, [rendered(e.value) for e in at.error]
    # Recognised as no server (its buildinfo is a 404), then scraped twice; no time-range picker.
    assert paths.count("/metrics") == 2
    assert set(paths) == {"/metrics/api/v1/status/buildinfo", "/metrics"}
    assert [w.label for w in at.sidebar.number_input] == ["Scrapes", "Seconds between scrapes"]
    assert [w.value for w in at.sidebar.number_input] == [2, 1.0]
    assert [s.label for s in at.sidebar.selectbox] == ["Data source"]
    assert f"{ep.url}/metrics · 2 scrape(s) 1 s apart" in every_text(at)
    inputs = frame(at, "rejected")
    assert inputs["format"].to_list() == ["prometheus"]
    assert inputs["records"][0] > 0


@pytest.mark.parametrize("page", ["port", "topology", "layers", "expected", "whatif"])
def test_every_page_renders_from_the_server(page: str, prometheus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, prometheus)
    at = run(page, source=prometheus, since=SINCE, until=UNTIL, match=PFC_STORM)
    assert not at.error, [rendered(e.value) for e in at.error]
    assert at.title[0].value
    # The sidebar keeps the server, its range and matchers on every page.
    assert at.sidebar.selectbox[0].value == prometheus
    assert [t.value for t in at.sidebar.text_input] == [PFC_STORM, SINCE, UNTIL]
    if page == "port":
        assert at.selectbox[0].value == "pfcstorm-gpu03/eth0"  # the worst port first, as for the files


def test_a_server_echoing_a_query_token_shows_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    query_token = "qtok-9d21-never-shown"
    echo = f"bad key {query_token} for tenant {SECRET_HEADER}\x1b[2J".encode()

    def deny(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(403)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(echo)))
        h.end_headers()
        h.wfile.write(echo)

    with Endpoint(deny) as ep:
        conn = Connection(headers=(("X-Scope-OrgID", SECRET_HEADER),), retries=0)
        configure(monkeypatch, f"{ep.url}/?key={query_token}", options=RemoteOptions(connection=conn))
        at = run("overview", source=ep.url + "/")
    assert not at.exception
    (error,) = at.error
    err_value = rendered(error.value)
    assert "HTTP 403: bad key <redacted> for tenant <redacted>\\x1b[2J" in err_value
    text = every_text(at) + shown_state(at)
    for secret in (query_token, SECRET_HEADER, "\x1b"):
        assert secret not in text

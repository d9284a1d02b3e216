"""`fabricscope cron --alertmanager`: incidents as alerts in a real Alertmanager (Debian's binary).

The pfc-storm scenario's ethtool log grows over three cron runs (as in test_cron.py's lifecycle
tests): the first two see the storm on pfcstorm-gpu03 (one incident), the third has new data after
the storm and resolves it. Alertmanager must show one alert (not one per run), grouped by its
route, notify its receiver firing then resolved; a down Alertmanager must not change cron's status
or state, and must get the resolution it missed when it is back.
"""

from __future__ import annotations

import datetime as dt
import http.server
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fabricscope.doors.cron.alertmanager import ALERTNAME, AlertmanagerOptions, incident_alerts
from fabricscope.doors.cron.incident_lifecycle import INCIDENTS_SCHEMA

from . import alertmanager_server as am
from .conftest import SAMPLES
from .prometheus_server import Endpoint

ETH = SAMPLES / "scenarios" / "pfc-storm" / "ethtool" / "pfcstorm-gpu03-eth0.log"
# Snapshot times (s) after which the log is cut: runs see up to 16:02:00, 16:03:20, then the rest.
CUTS_AT = [1796400120, 1796400200]


def _cuts() -> list[int]:
    text = ETH.read_text()
    return [text.index(f"\n{t}\n") + 1 for t in CUTS_AT]


def _grow_steps(dst: Path) -> list[Callable[[], None]]:
    data = ETH.read_bytes()
    bounds = [0, *_cuts(), len(data)]

    def step(a: int, b: int) -> Callable[[], None]:
        def append() -> None:
            with dst.open("ab") as f:
                f.write(data[a:b])

        return append

    return [step(a, b) for a, b in itertools.pairwise(bounds)]


def cron(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "fabricscope",
            "cron",
            "--inputs",
            str(tmp / "in"),
            "--state",
            str(tmp / "state"),
            "--history",
            str(tmp / "hist"),
            "--json",
            str(tmp / "run.json"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ),
    )


def _wait_for(what: str, check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen in {timeout_s} s")
        time.sleep(0.2)


class Webhook:
    """Alertmanager's receiver: records every notification's JSON body."""

    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []

        def handle(h: http.server.BaseHTTPRequestHandler) -> None:
            body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
            self.notes.append(json.loads(body))
            h.send_response(200)
            h.end_headers()

        self.endpoint = Endpoint(handle)

    def statuses(self) -> list[str]:
        return [n["status"] for n in self.notes]


@pytest.fixture
def webhook() -> Any:
    hook = Webhook()
    with hook.endpoint:
        yield hook


def test_incident_fires_groups_and_resolves_in_alertmanager(tmp_path: Path, webhook: Webhook) -> None:
    (tmp_path / "in").mkdir()
    steps = _grow_steps(tmp_path / "in" / ETH.name)
    with am.serve(tmp_path / "am", webhook=webhook.endpoint.url) as url:
        opts = ("--alertmanager", url, "--fabric", "lab-a", "--evidence-url", "http://dash/?incident={incident_id}")
        steps[0]()
        first = cron(tmp_path, *opts)
        assert first.returncode == 2, first.stdout + first.stderr
        doc = json.loads((tmp_path / "run.json").read_text())
        [incident] = doc["incident_lifecycle"]
        assert doc["alertmanager"] == [{"url": url, "firing": 1, "resolved": 0, "error": None}]
        alerts = am.get(url, "/api/v2/alerts")
        assert len(alerts) == 1
        alert = alerts[0]
        assert alert["labels"] == {
            "alertname": ALERTNAME,
            "fabric": "lab-a",
            "incident_id": incident["incident_id"],
            "rule": "pause_storm_head_of_line",
            "kind": "pfc_storm",
            "host": "pfcstorm-gpu03",
            "device": "eth0",
            "priority": "3",
            "severity": "critical",
        }  # no port label: ethtool names the netdev, not a port number
        assert alert["status"]["state"] == "active"
        assert alert["annotations"]["title"] == incident["title"]
        assert alert["annotations"]["action"] == incident["action"]
        assert alert["annotations"]["evidence"] == f"http://dash/?incident={incident['incident_id']}"
        assert alert["generatorURL"] == alert["annotations"]["evidence"]
        assert "pfc_congestion" in alert["annotations"]["description"]
        # valid for 4 run intervals (60 s default) from the run
        ends = dt.datetime.fromisoformat(alert["endsAt"].replace("Z", "+00:00"))
        assert dt.timedelta(seconds=200) < ends - dt.datetime.now(dt.timezone.utc) <= dt.timedelta(seconds=240)
        groups = am.get(url, "/api/v2/alerts/groups")
        assert [g["labels"] for g in groups] == [{"fabric": "lab-a", "kind": "pfc_storm"}]
        fp = alert["fingerprint"]
        _wait_for("the firing notification", lambda: "firing" in webhook.statuses())
        assert webhook.notes[0]["groupLabels"] == {"fabric": "lab-a", "kind": "pfc_storm"}

        # Second run: the storm goes on; the re-send is the same alert (same fingerprint), not a second one.
        steps[1]()
        second = cron(tmp_path, *opts)
        assert second.returncode == 2
        alerts = am.get(url, "/api/v2/alerts")
        assert [a["fingerprint"] for a in alerts] == [fp]
        assert json.loads((tmp_path / "run.json").read_text())["alertmanager"][0]["firing"] == 1

        # Third run: new data after the storm resolves the incident; the alert ends now.
        steps[2]()
        third = cron(tmp_path, *opts)
        assert third.returncode == 0, third.stdout
        doc = json.loads((tmp_path / "run.json").read_text())
        assert doc["incident_lifecycle"] == []
        assert doc["alertmanager"] == [{"url": url, "firing": 0, "resolved": 1, "error": None}]
        assert am.get(url, "/api/v2/alerts") == []
        _wait_for("the resolved notification", lambda: "resolved" in webhook.statuses())
        resolved = next(n for n in webhook.notes if n["status"] == "resolved")
        assert [a["labels"]["incident_id"] for a in resolved["alerts"]] == [incident["incident_id"]]
        # Nothing more to send: a fourth run (no new data) sends nothing.
        fourth = cron(tmp_path, *opts)
        assert json.loads((tmp_path / "run.json").read_text())["alertmanager"] == [
            {"url": url, "firing": 0, "resolved": 0, "error": None}
        ]
        assert fourth.returncode == 0


def test_down_alertmanager_neither_fails_the_run_nor_loses_the_resolution(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    steps = _grow_steps(tmp_path / "in" / ETH.name)
    port = am.free_port()
    url = f"http://127.0.0.1:{port}"
    opts = ("--alertmanager", url)
    with am.serve(tmp_path / "am1", port=port):
        steps[0]()
        assert cron(tmp_path, *opts).returncode == 2
        assert len(am.get(url, "/api/v2/alerts")) == 1
    # Alertmanager down: the storm goes on, then resolves. Cron's status and state are its own.
    steps[1]()
    down = cron(tmp_path, *opts)
    assert down.returncode == 2
    assert f"alertmanager {url}: not delivered" in down.stderr
    assert "Traceback" not in down.stderr
    steps[2]()
    down = cron(tmp_path, *opts)
    assert down.returncode == 0
    doc = json.loads((tmp_path / "run.json").read_text())
    [delivery] = doc["alertmanager"]
    assert (delivery["firing"], delivery["resolved"]) == (0, 1) and "127.0.0.1" in delivery["error"]
    assert doc["run"]["samples"] > 0  # the run stored its data
    # Back up (a fresh server, as after a restart that lost its data): the next run, with nothing
    # new to read, still sends the resolution it missed, and then records it as delivered.
    with am.serve(tmp_path / "am2", port=port):
        back = cron(tmp_path, *opts)
        assert back.returncode == 0
        doc = json.loads((tmp_path / "run.json").read_text())
        assert doc["run"]["samples"] == 0
        assert doc["alertmanager"] == [{"url": url, "firing": 0, "resolved": 1, "error": None}]
        assert am.get(url, "/api/v2/alerts") == []
        again = cron(tmp_path, *opts)
        assert json.loads((tmp_path / "run.json").read_text())["alertmanager"][0]["resolved"] == 0
        assert again.returncode == 0


def _lifecycle(**row: Any) -> pl.DataFrame:
    base = {
        "incident_id": "inc-1",
        "rule": "r",
        "root_kind": "link_errors",
        "host": "gpu01",
        "device": "mlx5_0",
        "port": 1,
        "priority": None,
        "metric": "symbol_errors",
        "severity": "warning",
        "title": "t",
        "action": "a",
        "first_seen": dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc),
        "last_seen": dt.datetime(2026, 12, 1, 0, 5, tzinfo=dt.timezone.utc),
        "resolved_at": None,
        "runs": 1,
        "members": "not json",
    }
    return pl.DataFrame([base | row], schema=INCIDENTS_SCHEMA)


def test_a_severity_change_resolves_the_old_label_set() -> None:
    now = dt.datetime(2026, 12, 1, 1, tzinfo=dt.timezone.utc)
    opts = AlertmanagerOptions(urls=("http://x",))
    alerts, firing, resolved = incident_alerts(_lifecycle(), {}, now, opts)
    assert (len(alerts), resolved) == (1, 0)
    assert alerts[0]["startsAt"] == "2026-12-01T00:00:00.000Z" and alerts[0]["endsAt"] == "2026-12-01T01:04:00.000Z"
    assert "port" in alerts[0]["labels"] and "priority" not in alerts[0]["labels"]
    worse, _, resolved = incident_alerts(_lifecycle(severity="critical"), firing, now, opts)
    assert resolved == 1
    assert [a["labels"]["severity"] for a in worse] == ["critical", "warning"]
    assert worse[1]["endsAt"] == "2026-12-01T01:00:00.000Z"  # the old label set ends now


def test_resolution_time_is_the_lifecycle_s_never_the_future() -> None:
    now = dt.datetime(2026, 12, 1, 1, tzinfo=dt.timezone.utc)
    opts = AlertmanagerOptions(urls=("http://x",))
    _, firing, _ = incident_alerts(_lifecycle(), {}, now, opts)
    past = _lifecycle(resolved_at=dt.datetime(2026, 12, 1, 0, 10, tzinfo=dt.timezone.utc))
    alerts, now_firing, resolved = incident_alerts(past, firing, now, opts)
    assert (resolved, now_firing) == (1, {})
    assert alerts == [
        {
            "labels": firing["inc-1"]["labels"],
            "startsAt": "2026-12-01T00:00:00.000Z",
            "endsAt": "2026-12-01T00:10:00.000Z",
        }
    ]
    future = _lifecycle(resolved_at=dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc))
    alerts, _, _ = incident_alerts(future, firing, now, opts)
    assert alerts[0]["endsAt"] == "2026-12-01T01:00:00.000Z"


def test_usage_alertmanager_options_in_cron_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fabricscope", "cron", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for opt in ("--alertmanager URL", "--fabric NAME", "--alert-interval SECONDS", "--alertmanager-bearer-token-file"):
        assert opt in out


def test_example_alert_rules_pass_promtool() -> None:
    # The example rules for the textfile metrics: valid (check) and firing as documented (test).
    from .prometheus_server import binaries

    _, promtool = binaries()
    rules = Path(__file__).resolve().parent.parent / "docs" / "alerting"
    check = subprocess.run(
        [promtool, "check", "rules", "fabricscope.rules.yml"], cwd=rules, capture_output=True, text=True
    )
    assert check.returncode == 0 and "SUCCESS: 5 rules found" in check.stdout, check.stdout + check.stderr
    test = subprocess.run(
        [promtool, "test", "rules", "fabricscope.rules.test.yml"], cwd=rules, capture_output=True, text=True
    )
    assert test.returncode == 0, test.stdout + test.stderr


def test_rules_name_only_metrics_the_textfile_writes(tmp_path: Path) -> None:
    import re

    from fabricscope.doors.cron.fault_lifecycle import active_findings
    from fabricscope.doors.cron.textfile import write_textfile
    from fabricscope.reading.history import LIFECYCLE_SCHEMA

    tf = tmp_path / "f.prom"
    ports = pl.DataFrame({"host": ["h"], "device": ["mlx5_0"], "port": [1]})
    write_textfile(
        str(tf), active_findings(pl.DataFrame(schema=LIFECYCLE_SCHEMA)), ports, dt.datetime.now(dt.timezone.utc), 0.1
    )
    written = set(re.findall(r"^# TYPE (\w+)", tf.read_text(), flags=re.M))
    text = (Path(__file__).resolve().parent.parent / "docs" / "alerting" / "fabricscope.rules.yml").read_text()
    used = set(re.findall(r"\b(fabricscope_\w+)", text))
    assert used and used <= written, used - written


def test_a_received_storm_is_one_incident_and_one_alert(tmp_path: Path) -> None:
    # sample_traces/ethtool: roce01 eth2 receives pause without end on priority 3. The storm and its
    # pause ratio on the same port are one fault: one incident, one alert, and neither finding is
    # paged alone beside it.
    (tmp_path / "in").mkdir()
    src = SAMPLES / "ethtool"
    for f in src.iterdir():
        (tmp_path / "in" / f.name).write_bytes(f.read_bytes())
    with am.serve(tmp_path / "am") as url:
        r = cron(tmp_path, "--alertmanager", url, "--fabric", "lab-b")
        assert r.returncode == 2, r.stdout + r.stderr
        doc = json.loads((tmp_path / "run.json").read_text())
        (inc,) = doc["incident_lifecycle"]
        assert (inc["rule"], inc["root_kind"], inc["host"]) == ("pause_storm_received", "pfc_storm", "roce01")
        assert [(m["kind"], m["relation"]) for m in inc["members"]] == [("pfc_congestion", "same_port")]
        assert sorted(f["kind"] for f in doc["faults"] if f["severity"] != "info") == ["pfc_congestion", "pfc_storm"]
        (alert,) = am.get(url, "/api/v2/alerts")
        assert alert["labels"]["alertname"] == "FabricscopeIncident"
        assert alert["labels"]["incident_id"] == inc["incident_id"]
        assert (alert["labels"]["kind"], alert["labels"]["host"], alert["labels"]["fabric"]) == (
            "pfc_storm",
            "roce01",
            "lab-b",
        )
        assert "fault_id" not in alert["labels"]


def test_credentials_never_shown_in_errors_or_state(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    _grow_steps(tmp_path / "in" / ETH.name)[0]()
    port = am.free_port()  # nothing listens: the delivery fails
    token = tmp_path / "token"
    token.write_text("tok-s3cret\n")
    r = cron(
        tmp_path,
        "--alertmanager",
        f"http://admin:pw-s3cret@127.0.0.1:{port}/?key=q-s3cret",
        "--alertmanager-bearer-token-file",
        str(token),
    )
    assert r.returncode == 2
    assert f"alertmanager http://127.0.0.1:{port}/: not delivered" in r.stderr
    state = (tmp_path / "state" / "alertmanager.json").read_text()
    for text in (r.stdout, r.stderr, (tmp_path / "run.json").read_text(), state):
        assert "s3cret" not in text

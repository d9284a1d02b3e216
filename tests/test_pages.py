"""A page is a fault: one warning or critical incident per fault of the fabric, through every door.

The fan-in scenarios are simulated here at several sizes (3 to 16 exchange partners, one or two NICs
per host, with and without LLDP) and read through ``fabricscope analyze``; the committed scenarios
through ``fabricscope cron`` with a real Alertmanager (Debian's binary), whose alert count, the
Nagios line and the textfile's ``fabricscope_incidents`` gauge must all equal the faults.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fabricscope.incidents.correlate import EPISODE_GAP, correlate
from fabricscope.incidents.findings import make_findings
from fabricscope.simulate import simulate

from . import alertmanager_server as am
from . import cli_runner
from .conftest import SAMPLES

SCENARIOS = SAMPLES / "scenarios"
SEVERE = ("warning", "critical")


def _analyze(path: Path, tmp: Path) -> dict[str, Any]:
    out = tmp / "findings.json"
    code, _, err = cli_runner.run_cli(["analyze", str(path), "--json", str(out)], process=False)
    assert code in (1, 2), err
    return json.loads(out.read_text())


def _pages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Warning and critical incidents, after checking that no such finding stands alone."""
    alone = [f for f in doc["findings"] if f["severity"] in SEVERE and f["incident"] is None]
    assert alone == [], "a warning or critical finding outside every incident is a page of its own"
    return [i for i in doc["incidents"] if i["severity"] in SEVERE]


@pytest.mark.parametrize(
    ("scenario", "hosts", "nics", "lldp"),
    [
        ("fanin-loss", 4, 1, None),
        ("fanin-loss", 7, 2, None),
        ("fanin-loss", 9, 2, "sonic"),
        ("fanin-loss-tx", 17, 1, None),
        ("fanin-loss-tx", 5, 2, "lldpctl"),
    ],
)
def test_a_lossy_port_is_one_page_whatever_its_partners(
    tmp_path: Path, scenario: str, hosts: int, nics: int, lldp: str | None
) -> None:
    simulate(tmp_path / "in", scenario, hosts=hosts, nics=nics, seed=hosts, lldp=lldp)
    [page] = _pages(_analyze(tmp_path / "in", tmp_path))
    lossy = "fanin-gpu01" if scenario == "fanin-loss" else "fanintx-gpu02"
    assert (page["root"]["host"], page["root"]["device"], page["root"]["kind"]) == (lossy, "mlx5_0", "lossy_collapse")
    # every host it exchanges with is a member, and no member carries its own cable's fix
    assert sorted(page["hosts"]) == sorted(f"{lossy[:-2]}{i:02d}" for i in range(1, hosts + 1))
    assert page["action"].startswith(f"replace or reseat the cable/transceiver of {lossy} mlx5_0 port 1")
    partners = [c for c in page["consequences"] if c["relation"] == "fan_in"]
    assert {c["finding"]["host"] for c in partners} == set(page["hosts"]) - {lossy}
    path = " -> ".join(partners[0]["path"])
    assert "exchange partners" in path and "within 3%" in path


def test_two_lossy_ports_in_two_jobs_are_two_pages(tmp_path: Path) -> None:
    simulate(tmp_path / "in", "trap-two-lossy-jobs", hosts=12, nics=2, seed=5)
    pages = _pages(_analyze(tmp_path / "in", tmp_path))
    assert sorted(p["root"]["host"] for p in pages) == ["twolossy-gpu01", "twolossy-gpu12"]
    a, b = sorted(pages, key=lambda p: p["root"]["host"])
    assert set(a["hosts"]) == {f"twolossy-gpu{i:02d}" for i in range(1, 7)}
    assert set(b["hosts"]) == {f"twolossy-gpu{i:02d}" for i in range(7, 13)}


# ---- the rule, as a pure function ------------------------------------------------------------

T = dt.datetime(2026, 12, 4, 14, tzinfo=dt.timezone.utc)


def _f(kind: str, host: str, metric: str, at_min: float, **kw: Any) -> dict[str, Any]:
    start = T + dt.timedelta(minutes=at_min)
    return {
        "kind": kind,
        "severity": kw.pop("severity", "critical"),
        "host": host,
        "device": kw.pop("device", "mlx5_3"),
        "port": 1,
        "metric": metric,
        "observed": kw.pop("observed", 10.0),
        "start": start,
        "end": start + dt.timedelta(minutes=kw.pop("minutes", 5)),
        "message": "m",
        "evidence": kw.pop("evidence", {}),
        **kw,
    }


def test_symbol_and_receive_errors_on_one_port_are_one_incident() -> None:
    incidents = correlate(
        make_findings(
            [
                _f("link_errors", "h", "symbol_errors", 0),
                _f("link_errors", "h", "port_rcv_errors", 1, severity="warning"),
                _f("link_flap", "h", "link_downed_events", 30),
            ]
        )
    )
    [one] = incidents
    assert one.severity == "critical" and len(one.consequences) == 2
    assert {c["path"][-1] for c in one.consequences} >= {"the same port: link_flap on h mlx5_3 port 1"}


def test_the_same_port_a_day_apart_is_two_episodes() -> None:
    later = EPISODE_GAP.total_seconds() / 60 + 60
    incidents = correlate(
        make_findings(
            [_f("link_flap", "h", "link_downed_events", 0), _f("link_flap", "h", "link_downed_events", later)]
        )
    )
    assert len(incidents) == 2


def test_a_count_that_is_not_the_sum_of_its_partners_joins_nothing() -> None:
    def loss(host: str, direction: str, events: float) -> dict[str, Any]:
        return _f(
            "packet_loss",
            host,
            f"loss_rate_{direction}",
            0,
            severity="warning",
            device="mlx5_0",
            observed=1e-4,
            evidence={"direction": direction, "events": events},
        )

    # 30,000 sent-side events against partners adding up to 20,000: no fan-in, three pages
    apart = correlate(make_findings([loss("x", "tx", 30000), loss("a", "rx", 10000), loss("b", "rx", 10000)]))
    assert len(apart) == 3
    # the same partners adding up to the sender's 20,200 (within 3%): one page, the sender its root
    [one] = correlate(make_findings([loss("x", "tx", 20200), loss("a", "rx", 10000), loss("b", "rx", 10000)]))
    assert one.root["host"] == "x" and {c["relation"] for c in one.consequences} == {"fan_in"}


# ---- every door counts the same pages: cron, its textfile and a real Alertmanager ------------


@pytest.mark.parametrize(
    ("scenario", "faults"),
    [("fanin-loss", 1), ("trap-two-lossy-jobs", 2), ("link-flap-windows", 1), ("storm-one-leaf", 1)],
)
def test_cron_pages_alerts_and_textfile_count_the_faults(tmp_path: Path, scenario: str, faults: int) -> None:
    shutil.copytree(SCENARIOS / scenario, tmp_path / "in", ignore=shutil.ignore_patterns("truth.json"))
    truth = json.loads((SCENARIOS / scenario / "truth.json").read_text())
    assert len(truth["incidents"]) == faults
    with am.serve(tmp_path / "am") as url:
        code, out, err = cli_runner.run_cli(
            [
                "cron",
                "--inputs",
                str(tmp_path / "in"),
                "--state",
                str(tmp_path / "state"),
                "--history",
                str(tmp_path / "hist"),
                "--textfile",
                str(tmp_path / "fabricscope.prom"),
                "--json",
                str(tmp_path / "run.json"),
                "--alertmanager",
                url,
            ],
            process=False,
        )
        assert code == 2, out + err
        alerts = am.get(url, "/api/v2/alerts")
    assert len(alerts) == faults
    roots = sorted((i["root"]["kind"], i["root"]["host"]) for i in truth["incidents"])
    assert sorted((a["labels"]["kind"], a["labels"]["host"]) for a in alerts) == roots
    # the Nagios line counts the same pages and names each by its root
    counted = sum(int(n) for n in out.split(" - ", 1)[1].split(":", 1)[0].split()[::2])
    assert counted == faults, out
    for kind, host in roots:
        assert f"{kind} {host}/" in out
    prom = (tmp_path / "fabricscope.prom").read_text()
    paged = sum(int(line.rsplit(" ", 1)[1]) for line in prom.splitlines() if line.startswith("fabricscope_incidents{"))
    assert paged == faults
    doc = json.loads((tmp_path / "run.json").read_text())
    assert len(doc["incident_lifecycle"]) == faults
    # each alert names every host its incident reached (its consequences' hosts, root first)
    for alert in alerts:
        inc = next(i for i in doc["incident_lifecycle"] if i["incident_id"] == alert["labels"]["incident_id"])
        hosts = alert["annotations"]["hosts"].split(", ")
        assert hosts[0] == inc["host"] and set(hosts) == {inc["host"], *(m["host"] for m in inc["members"])}


def test_cron_names_a_port_with_two_loss_counters_once(tmp_path: Path) -> None:
    code, out, err = cli_runner.run_cli(
        [
            "cron",
            "--inputs",
            str(SAMPLES / "sysfs-grep"),
            "--state",
            str(tmp_path / "state"),
            "--history",
            str(tmp_path / "hist"),
        ],
        process=False,
    )
    assert code == 1, out + err
    assert out.startswith("FABRICSCOPE WARNING - 1 warning: packet_loss roce02/mlx5_0/1 |"), out

"""SONiC switch-side PFC (``show pfc counters``, ``show pfcwd stats``, ``show queue counters``) and the
switch watchdog's ``pfc_storm`` warning, through the CLI.

Spot values are read by hand from the fixtures (tests/fixtures/sonic_pfc/SOURCES.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl

from . import cli_runner

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "sonic_pfc"


def samples(tmp_path: Path, path: Path, *extra: str) -> tuple[dict, dict[tuple[str, str, int | None, str], float]]:
    """(the parse report's input, {(host, device, priority, counter): value})."""
    out = tmp_path / "s.parquet"
    r = cli_runner.fabricscope("parse", str(path), "--json", "--time", "1764686822", "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    df = pl.read_parquet(out).with_columns(pl.col("host", "device", "counter").cast(pl.String))
    rows = {
        (h, d, p, c): float(v if v is not None else f)
        for h, d, p, c, v, f in df.select("host", "device", "priority", "counter", "value_u64", "value_f64").iter_rows()
    }
    assert len(rows) == df.height
    return report, rows


def test_show_pfc_counters_rx_and_tx(tmp_path: Path) -> None:
    report, rows = samples(tmp_path, FIX / "sonic-utilities-pfcstat-show-pfc-counters.txt")
    assert report["format"] == "sonic-pfc"
    host = "sonic-utilities-pfcstat-show-pfc-counters"  # the file name names the switch
    assert rows[(host, "Ethernet0", 0, "rx_pause_frames")] == 1200  # `1,200`
    assert rows[(host, "Ethernet4", 3, "rx_pause_frames")] == 403
    assert rows[(host, "Ethernet8", 7, "tx_pause_frames")] == 817
    assert len(rows) == 3 * 8 * 2


def test_multi_asic_na_rows_are_unknown(tmp_path: Path) -> None:
    _, rows = samples(tmp_path, FIX / "sonic-utilities-pfcstat-multi-asic-all.txt", "--host", "sw1")
    assert rows[("sw1", "Ethernet-BP4", 3, "rx_pause_frames")] == 803
    assert not any(d == "Ethernet-BP256" for _, d, _, _ in rows)  # N/A: no sample
    assert len(rows) == 4 * 8 * 2


def test_history_table(tmp_path: Path) -> None:
    _, rows = samples(tmp_path, FIX / "sonic-utilities-pfcstat-history.txt", "--host", "sw1")
    assert rows[("sw1", "Ethernet4", 3, "rx_pause_transitions")] == 43
    assert rows[("sw1", "Ethernet0", 0, "rx_pause_duration_us")] == 12_000_000


def test_pfcwd_stats(tmp_path: Path) -> None:
    _, rows = samples(tmp_path, FIX / "sonic-utilities-pfcwd-show-stats.txt", "--host", "sw1")
    assert rows[("sw1", "Ethernet0", 3, "pfcwd_stormed_state")] == 1
    assert rows[("sw1", "Ethernet4", 3, "pfcwd_stormed_state")] == 0
    assert rows[("sw1", "Ethernet8", 4, "pfcwd_storms_detected_events")] == 3
    assert rows[("sw1", "Ethernet8", 4, "pfcwd_storms_restored_events")] == 2
    assert rows[("sw1", "Ethernet0", 3, "pfcwd_tx_dropped_packets")] == 300
    assert rows[("sw1", "Ethernet0", 3, "pfcwd_last_storm_rx_dropped_packets")] == 200
    _, rows = samples(tmp_path, FIX / "sonic-utilities-pfcwd-multi-asic-with-queues.txt", "--host", "sw1")
    # queues 15, 13, 10 have no PFC priority; status N/A is unknown
    assert {(d, p) for _, d, p, _ in rows} == {("Ethernet0", 3)}
    assert ("sw1", "Ethernet0", 3, "pfcwd_stormed_state") not in rows
    assert rows[("sw1", "Ethernet0", 3, "pfcwd_rx_dropped_packets")] == 49


def test_queue_counters(tmp_path: Path) -> None:
    report, rows = samples(tmp_path, FIX / "sonic-utilities-queue-counters.txt", "--host", "sw1")
    assert rows[("sw1", "Ethernet0", 3, "switch_queue_tx_packets")] == 52
    assert rows[("sw1", "Ethernet4", 7, "switch_queue_dropped_bytes")] == 80
    assert not any(p is None for _, _, p, _ in rows)
    assert len(rows) == 3 * 8 * 4
    assert any("skipped 66 queue rows" in w for w in report["warnings"]), report["warnings"]


def test_a_user_posted_output_names_its_switch_from_the_prompt(tmp_path: Path) -> None:
    _, rows = samples(tmp_path, FIX / "sonic-buildimage-issue9430-z9332-pfcwd-and-pfc-tx.txt")
    assert rows[("sonic-10432", "Ethernet4", 3, "pfcwd_tx_dropped_packets")] == 56035
    assert rows[("sonic-10432", "Ethernet6", 3, "pfcwd_rx_dropped_packets")] == 361565
    assert rows[("sonic-10432", "Ethernet6", 3, "tx_pause_frames")] == 15437
    _, rows = samples(tmp_path, FIX / "sonic-buildimage-issue5540-pfcstat-last-cached.txt", "--host", "sw")
    assert rows[("sw", "Ethernet4", 0, "rx_pause_frames")] == 0


def test_hostile_rows(tmp_path: Path) -> None:
    text = (FIX / "sonic-utilities-pfcwd-show-stats.txt").read_text()
    lines = text.splitlines()
    bad = [*lines[:3], lines[3].replace("100/100", "1e9/x"), "Ethernet9:3  \x1b[0mstormed\x00", lines[4]]
    bad.append(
        "Ethernet12:3     stormed                        99999999999999999999999/0       1/1       1/1   0/0   0/0"
    )
    p = tmp_path / "bad.txt"
    p.write_text("\n".join(bad) + "\n")
    strict = cli_runner.fabricscope(
        "parse", str(p), "--format", "sonic-pfc", "--host", "sw", "-o", str(tmp_path / "o.parquet")
    )
    assert strict.returncode == 3
    assert "bad.txt" in strict.stderr and "line 4" in strict.stderr, strict.stderr
    report, rows = samples(tmp_path, p, "--format", "sonic-pfc", "--host", "sw", "--lenient")
    assert report["bad_records"] == 3
    assert rows[("sw", "Ethernet8", 4, "pfcwd_storms_detected_events")] == 3


LLDP = """# host: leaf01
LocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr
-----------  --------------  -----------------  ------------  -----------------
Ethernet0    gpu01           0c:42:a1:00:00:01  R             eth0
Ethernet4    gpu02           0c:42:a1:00:00:02  R             eth0
--------------------------------------------------
Total entries displayed:  2
"""

ETHTOOL = """# host: {host}
# ethtool -S eth0
1764686822
NIC statistics:
     tx_prio3_pause: {a}
     rx_prio3_pause: 0
1764686882
NIC statistics:
     tx_prio3_pause: {b}
     rx_prio3_pause: 0
"""


def analyze(d: Path, tmp_path: Path) -> dict:
    out = tmp_path / f"{d.name}.json"
    r = cli_runner.fabricscope("analyze", str(d), "--json", str(out))
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    return json.loads(out.read_text())


def test_a_switch_declared_storm_is_a_warning_on_its_port_joined_to_the_host_behind_it(tmp_path: Path) -> None:
    d = tmp_path / "storm"
    d.mkdir()
    (d / "leaf01.pfcwd.txt").write_text(
        "# host: leaf01\nadmin@leaf01:~$ show pfcwd stats\n"
        + (FIX / "sonic-utilities-pfcwd-show-stats.txt").read_text()
    )
    (d / "leaf01.show-lldp-table.txt").write_text(LLDP)
    (d / "gpu01.ethtool.txt").write_text(ETHTOOL.format(host="gpu01", a=1000, b=90000))
    (d / "gpu02.ethtool.txt").write_text(ETHTOOL.format(host="gpu02", a=10, b=12))
    doc = analyze(d, tmp_path)
    switch = sorted(
        (f for f in doc["findings"] if f["kind"] == "pfc_storm" and f["host"] == "leaf01"), key=lambda f: f["device"]
    )
    # Ethernet0:3 stormed (1 storm, 300 + 300 dropped); Ethernet8:4 stormed (3 storms); Ethernet4:3 is
    # operational with 2 storms detected and 100 + 100 dropped since the counters were cleared
    assert [(f["device"], f["priority"], f["severity"], f["observed"]) for f in switch] == [
        ("Ethernet0", 3, "warning", 600.0),
        ("Ethernet4", 3, "warning", 200.0),
        ("Ethernet8", 4, "warning", 600.0),
    ]
    e0 = switch[0]
    assert e0["evidence"]["rule"] == "pfc_storm.switch_watchdog"
    assert e0["evidence"]["peer"]["name"] == "gpu01 eth0"
    assert "gpu01 eth0 (LLDP)" in e0["message"]
    assert "stormed now" in e0["message"]
    # Ethernet8 has no LLDP neighbour: no peer is invented
    assert switch[2]["evidence"]["peer"] is None


STORMING_NIC = """# host: gpu01
# ethtool -S eth0
{t0}
NIC statistics:
     tx_prio3_pause: 1000
     tx_prio3_pause_duration: 1000000
{t1}
NIC statistics:
     tx_prio3_pause: 900000
     tx_prio3_pause_duration: 60900000
{t2}
NIC statistics:
     tx_prio3_pause: 1800000
     tx_prio3_pause_duration: 120850000
"""


def test_a_switch_declared_storm_and_the_storming_nic_behind_it_are_one_incident(tmp_path: Path) -> None:
    d = tmp_path / "storm"
    d.mkdir()
    (d / "leaf01.pfcwd.txt").write_text(
        "# host: leaf01\nadmin@leaf01:~$ show pfcwd stats\n"
        + (FIX / "sonic-utilities-pfcwd-show-stats.txt").read_text()
    )
    (d / "leaf01.show-lldp-table.txt").write_text(LLDP)
    # gpu01 sends pause on priority 3 for 99.9% of two minutes ending when the switch was read (the
    # pfcwd snapshot has no time of its own: it takes its file's)
    now = int(time.time())
    (d / "gpu01.ethtool.txt").write_text(STORMING_NIC.format(t0=now - 120, t1=now - 60, t2=now))
    doc = analyze(d, tmp_path)
    (nic,) = {f["incident"] for f in doc["findings"] if f["host"] == "gpu01"}
    (incident,) = [i for i in doc["incidents"] if i["id"] == nic]
    # the NIC is the root; the switch port whose watchdog caught its pause, its LLDP neighbour, is
    # the same fault, joined over the cable
    assert (incident["root"]["host"], incident["root"]["device"]) == ("gpu01", "eth0")
    assert incident["rule"] == "pause_storm_head_of_line"
    (switch,) = [c for c in incident["consequences"] if c["finding"]["host"] == "leaf01"]
    assert (switch["finding"]["device"], switch["relation"]) == ("Ethernet0", "cable")
    assert switch["path"] == ["gpu01 eth0", "cable to leaf01 port Ethernet0", "leaf01 Ethernet0"]
    # the other stormed switch ports have no NIC in the inputs behind them: one incident each
    assert sorted((f["device"], f["role"]) for f in doc["findings"] if f["incident"] != nic) == [
        ("Ethernet4", "root"),
        ("Ethernet8", "root"),
    ]


def test_a_watchdog_that_declared_nothing_gives_no_finding(tmp_path: Path) -> None:
    d = tmp_path / "calm"
    d.mkdir()
    calm = (FIX / "sonic-utilities-pfcwd-show-stats.txt").read_text().splitlines()[:2]
    row = "Ethernet0:3  operational" + " " * 24 + "0/0       100/0         100/0" + " " * 18 + "0/0" + " " * 16 + "0/0"
    (d / "leaf01.pfcwd.txt").write_text("# host: leaf01\n" + "\n".join([*calm, row]) + "\n")
    (d / "gpu01.ethtool.txt").write_text(ETHTOOL.format(host="gpu01", a=10, b=12))
    doc = analyze(d, tmp_path)
    assert [f for f in doc["findings"] if f["kind"] == "pfc_storm"] == []

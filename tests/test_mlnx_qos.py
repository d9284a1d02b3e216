"""``mlnx_qos -i <if>`` reader and the lossless-configuration audit, through the CLI.

Spot values are read by hand from the fixtures (tests/fixtures/mlnx_qos/SOURCES.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from . import cli_runner

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "mlnx_qos"


def parse(tmp_path: Path, path: Path, *extra: str) -> tuple[dict, dict[tuple[str, str], str]]:
    """(the parse report's input, {(device, key): value}) of one input."""
    out = tmp_path / "s.parquet"
    r = cli_runner.fabricscope(
        "parse", str(path), "--json", "--host", "h1", "--time", "1764686822", "-o", str(out), *extra
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    df = pl.read_parquet(tmp_path / "s.attributes.parquet").with_columns(pl.col("device", "key").cast(pl.String))
    rows = {(d, k): v for d, k, v in df.select("device", "key", "value").iter_rows()}
    assert len(rows) == df.height
    return report, rows


def test_mlnx_ofed_4_2_layout(tmp_path: Path) -> None:
    report, rows = parse(tmp_path, FIX / "mellanox-community-doc2792-mlnx-ofed-4.2.txt")
    assert report["format"] == "mlnx-qos"
    assert rows[("eth2", "qos.dcbx")] == "OS controlled"
    assert rows[("eth2", "qos.trust")] == "dscp"
    assert rows[("eth2", "qos.cable_len_m")] == "10"
    # enabled 1 0 1 0 0 0 1 1
    assert rows[("eth2", "qos.pfc.priorities")] == "0,2,6,7"
    assert [rows[("eth2", f"qos.pfc.enable.{p}")] for p in range(8)] == ["1", "0", "1", "0", "0", "0", "1", "1"]
    # prio:3 dscp:31,30,29,28,27,26,25,24,
    assert rows[("eth2", "qos.dscp2prio.26")] == "3"
    assert rows[("eth2", "qos.dscp2prio.0")] == "0"
    assert rows[("eth2", "qos.dscp2prio.63")] == "7"
    assert sum(1 for _, k in rows if k.startswith("qos.dscp2prio.")) == 64
    # tc: 0 ... priority: 1; tc: 6 strict; tc: 7 bw 40%
    assert rows[("eth2", "qos.prio_tc.1")] == "0"
    assert rows[("eth2", "qos.tc.6.tsa")] == "strict"
    assert rows[("eth2", "qos.tc.7.bw_percent")] == "40"
    assert not any(k.startswith("qos.buffer") for _, k in rows)


def test_newer_layout_with_buffer_row(tmp_path: Path) -> None:
    report, rows = parse(tmp_path, FIX / "kubernetes-recipes-mofed-container-buffer-row.txt")
    assert report["format"] == "mlnx-qos"
    assert rows[("eth0", "qos.pfc.priorities")] == "3"
    assert rows[("eth0", "qos.buffer.3")] == "1"
    assert rows[("eth0", "qos.buffer.0")] == "0"
    assert rows[("eth0", "qos.tc.3.bw_percent")] == "100"


def test_current_layout_with_receive_buffers(tmp_path: Path) -> None:
    _, rows = parse(tmp_path, FIX / "constructed-mlnx-tools-2023-buffers.txt")
    assert rows[("ens1f0np0", "qos.buffer_size_bytes.0")] == "130944"
    assert rows[("ens1f0np0", "qos.buffer_size_bytes.2")] == "0"
    assert rows[("ens1f0np0", "qos.max_buffer_size_bytes")] == "262016"
    assert rows[("ens1f0np0", "qos.cable_len_m")] == "7"
    assert rows[("ens1f0np0", "qos.pfc.priorities")] == "3"
    assert rows[("ens1f0np0", "qos.prio_tc.3")] == "3"
    assert rows[("ens1f0np0", "qos.tc.7.tsa")] == "vendor"


def test_hostile_lines_name_file_and_line_and_lenient_keeps_the_rest(tmp_path: Path) -> None:
    text = (FIX / "constructed-mlnx-tools-2023-buffers.txt").read_text()
    bad = text.replace("\tenabled     0   0   0   1", "\tenabled     0   0   0   9").replace(
        "Cable len: 7", "Cable len: 99999999999999999999"
    )
    bad += "\x1b[31mgarbage\x00\n" + "tc: 9 ratelimit: unlimited\n"
    p = tmp_path / "bad.txt"
    p.write_text(bad)
    strict = cli_runner.fabricscope(
        "parse", str(p), "--format", "mlnx-qos", "--host", "h1", "-o", str(tmp_path / "o.parquet")
    )
    assert strict.returncode == 3
    assert "bad.txt" in strict.stderr and "line 14" in strict.stderr, strict.stderr
    report, rows = parse(tmp_path, p, "--format", "mlnx-qos", "--lenient")
    assert report["bad_records"] == 4
    assert rows[("ens1f0np0", "qos.trust")] == "dscp"
    assert ("ens1f0np0", "qos.pfc.priorities") not in rows
    # truncated mid-line: what was read stays
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.index("Cable len")] + "Cable le")
    report, rows = parse(tmp_path, cut, "--format", "mlnx-qos", "--lenient")
    assert report["bad_records"] == 1
    assert rows[("ens1f0np0", "qos.buffer_size_bytes.1")] == "130944"


QOS = """# host: {host}
$ mlnx_qos -i ens1f0
DCBX mode: OS controlled
Priority trust state: {trust}
Cable len: 7
PFC configuration:
\tpriority    0   1   2   3   4   5   6   7
\tenabled     {pfc}
tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%
\t priority:  3
"""

ETHTOOL = """# host: {host}
# ethtool -S ens1f0
1764686822
NIC statistics:
     rx_prio3_pause: 1000
     tx_prio3_pause: 200
     rx_prio3_pause_duration: 5000
1764686882
NIC statistics:
     rx_prio3_pause: 1500
     tx_prio3_pause: 260
     rx_prio3_pause_duration: 5600
"""

ON3 = "0   0   0   1   0   0   0   0"
ON4 = "0   0   0   0   1   0   0   0"


def fleet(d: Path, pfc: dict[str, str], trust: dict[str, str] | None = None, ecn: dict[str, str] | None = None) -> Path:
    d.mkdir()
    for host, vector in pfc.items():
        (d / f"{host}.mlnx_qos.txt").write_text(
            QOS.format(host=host, pfc=vector, trust=(trust or {}).get(host, "dscp"))
        )
        (d / f"{host}.ethtool.txt").write_text(ETHTOOL.format(host=host))
    for host, value in (ecn or {}).items():
        (d / f"{host}.ecn.txt").write_text(
            f"# host: {host}\n/sys/class/net/ens1f0/ecn/roce_np/enable/3:{value}\n"
            f"/sys/class/net/ens1f0/ecn/roce_rp/enable/3:1\n"
        )
    return d


def audit(d: Path, tmp_path: Path) -> list[dict]:
    out = tmp_path / f"{d.name}.json"
    r = cli_runner.fabricscope("analyze", str(d), "--json", str(out))
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    doc = json.loads(out.read_text())
    return [f for f in doc["findings"] if f["kind"] == "lossless_misconfig"]


def test_a_host_whose_pfc_priority_differs_from_its_traffic(tmp_path: Path) -> None:
    d = fleet(tmp_path / "fleet", {"gpu01": ON3, "gpu02": ON3, "gpu03": ON4, "gpu04": ON3})
    found = audit(d, tmp_path)
    assert [(f["host"], f["device"], f["priority"], f["metric"]) for f in found] == [
        ("gpu03", "ens1f0", 3, "pfc_priority_mismatch")
    ]
    (f,) = found
    assert f["severity"] == "warning"
    assert "pauses on priority 3 but PFC is enabled on priority 4" in f["message"]
    assert f["evidence"]["fix"] == "mlnx_qos -i ens1f0 --pfc 0,0,0,1,0,0,0,0"
    assert f["evidence"]["rule"] == "lossless_misconfig.pfc_priority_mismatch"


def test_trust_and_ecn_against_the_fleet(tmp_path: Path) -> None:
    d = fleet(
        tmp_path / "trust",
        {"gpu01": ON3, "gpu02": ON3, "gpu03": ON3, "gpu04": ON3},
        trust={"gpu02": "pcp"},
        ecn={"gpu01": "1", "gpu02": "1", "gpu03": "1", "gpu04": "0"},
    )
    found = sorted((f["host"], f["metric"], f["evidence"]["fix"]) for f in audit(d, tmp_path))
    assert found == [
        ("gpu02", "trust_mismatch", "mlnx_qos -i ens1f0 --trust dscp"),
        ("gpu04", "ecn_np_disabled", "echo 1 > /sys/class/net/ens1f0/ecn/roce_np/enable/3"),
    ]


def test_a_healthy_fleet_gives_no_finding(tmp_path: Path) -> None:
    d = fleet(
        tmp_path / "healthy",
        {"gpu01": ON3, "gpu02": ON3, "gpu03": ON3, "gpu04": ON3},
        ecn={h: "1" for h in ("gpu01", "gpu02", "gpu03", "gpu04")},
    )
    assert audit(d, tmp_path) == []

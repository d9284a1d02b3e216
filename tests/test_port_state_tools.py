"""Port-state tools a host prints (``ibstat``, ``ibstatus``, ``ibv_devinfo``) and the states they hold.

Each reader gives the canonical gauges sysfs gives for the same facts (``port_state_id``,
``port_phys_state_id``, ``link_rate_bytes_per_s``, ``link_width_lanes``) so ``port_down`` and
``link_degraded`` judge them unchanged; a file holding only states is judged, not UNKNOWN. Values
below were read by hand from the fixtures. Everything goes through the CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from . import cli_runner

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"


def fabricscope(*args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, process=process)


def parse(tmp_path: Path, path: Path, *extra: str) -> tuple[dict, pl.DataFrame, pl.DataFrame]:
    """(input report, gauges {device, port, counter, value}, attributes) of one input."""
    out = tmp_path / "s.parquet"
    r = fabricscope("parse", str(path), "--json", "--host", "h1", "--time", "1764686822", "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    samples = pl.read_parquet(out).with_columns(
        pl.col("device", "counter").cast(pl.String),
        pl.coalesce(pl.col("value_u64").cast(pl.Float64), pl.col("value_f64")).alias("value"),
    )
    side = tmp_path / "s.attributes.parquet"
    attrs = (
        pl.read_parquet(side).with_columns(pl.col("device", "key").cast(pl.String)) if side.exists() else pl.DataFrame()
    )
    return report, samples, attrs


def gauge(samples: pl.DataFrame, device: str, counter: str, port: int | None = 1) -> float | None:
    row = samples.filter(
        (pl.col("device") == device)
        & (pl.col("counter") == counter)
        & (pl.col("port").is_null() if port is None else pl.col("port") == port)
    )
    return None if row.is_empty() else row["value"][0]


def attr(attrs: pl.DataFrame, device: str, key: str, port: int | None = 1) -> str | None:
    row = attrs.filter(
        (pl.col("device") == device)
        & (pl.col("key") == key)
        & (pl.col("port").is_null() if port is None else pl.col("port") == port)
    )
    return None if row.is_empty() else row["value"][0]


def analyze(tmp_path: Path, path: Path) -> tuple[int, list[dict]]:
    out = tmp_path / "findings.json"
    r = fabricscope("analyze", str(path), "--host", "gpu01", "--json", str(out))
    assert r.returncode in (0, 1, 2, 3), r.stderr
    return r.returncode, json.loads(out.read_text())["findings"]


# --- ibstat ------------------------------------------------------------------------------------


def test_ibstat_rdma_core_39_spaces_and_ibpanic(tmp_path: Path) -> None:
    report, s, a = parse(tmp_path, FIX / "ibstat/gpud-rdma-core-39-a100-ibpanic.txt")
    assert report["format"] == "ibstat" and report["bad_records"] == 0
    # eight CAs, three gauges each (no width: ibstat prints the rate only)
    assert s.height == 24
    assert gauge(s, "mlx5_0", "port_state_id") == 4.0
    assert gauge(s, "mlx5_0", "port_phys_state_id") == 5.0
    assert gauge(s, "mlx5_0", "link_rate_bytes_per_s") == 25_000_000_000.0  # Rate: 200
    assert gauge(s, "mlx5_0", "link_width_lanes") is None
    assert attr(a, "mlx5_0", "lid") == "13247" and attr(a, "mlx5_0", "sm_lid") == "1"
    assert attr(a, "mlx5_0", "port_guid") == "0x00155dfffd3411eb"
    assert attr(a, "mlx5_0", "cap_mask") == "0xa651ec48"
    assert attr(a, "mlx5_0", "link_layer") == "InfiniBand"
    assert attr(a, "mlx5_0", "node_guid_hex", None) == "0x00155dfffe3411eb"
    assert attr(a, "mlx5_0", "hca_type", None) == "MT4124"
    assert attr(a, "mlx5_0", "fw_ver", None) == "20.41.1000"
    assert attr(a, "mlx5_0", "node_type", None) == "hca"
    assert any("ibpanic" in w and "mlx5_8" in w for w in report["warnings"])


def test_ibstat_rdma_core_47_tabs_polling_is_a_port_down_warning(tmp_path: Path) -> None:
    report, s, a = parse(tmp_path, FIX / "ibstat/gpud-rdma-core-47-h100-polling.txt")
    assert report["format"] == "ibstat" and report["bad_records"] == 0
    assert gauge(s, "mlx5_11", "port_state_id") == 1.0
    assert gauge(s, "mlx5_11", "port_phys_state_id") == 2.0  # Polling
    assert gauge(s, "mlx5_1", "link_rate_bytes_per_s") == 12_500_000_000.0  # Rate: 100
    assert attr(a, "mlx5_1", "port_guid") == "0x0000000000000000"
    assert attr(a, "mlx5_0", "link_layer") == "Ethernet"
    code, findings = analyze(tmp_path, FIX / "ibstat/gpud-rdma-core-47-h100-polling.txt")
    down = {(f["device"], f["severity"]) for f in findings if f["kind"] == "port_down"}
    assert ("mlx5_11", "warning") in down  # an HCA port Polling: the host is off the fabric
    assert ("mlx5_5", "info") in down  # Disabled: administrative
    assert code == 1


# --- ibstatus ----------------------------------------------------------------------------------


def test_ibstatus_sysfs_values_as_sysfs_reads_them(tmp_path: Path) -> None:
    report, s, a = parse(tmp_path, FIX / "ibstatus/gpud-rdma-core-39-a100.txt")
    assert report["format"] == "ibstatus" and report["bad_records"] == 0
    assert gauge(s, "mlx5_0", "link_rate_bytes_per_s") == 25_000_000_000.0  # 200 Gb/sec (4X HDR)
    assert gauge(s, "mlx5_0", "link_width_lanes") == 4.0
    assert gauge(s, "mlx5_0", "port_state_id") == 4.0
    assert attr(a, "mlx5_0", "lid") == "0x33bf"
    assert attr(a, "mlx5_0", "default_gid") == "fe80:0000:0000:0000:0015:5dff:fd34:11eb"
    assert gauge(s, "mlx5_8", "link_rate_bytes_per_s") == 5_000_000_000.0  # 40 Gb/sec (4X QDR)
    assert attr(a, "mlx5_8", "link_layer") == "Ethernet"
    assert attr(a, "mlx5_8", "default_gid") is None  # `unknown`: the script could not read it


def test_ibstatus_host_with_every_port_down_is_one_warning_on_the_host(tmp_path: Path) -> None:
    report, s, _ = parse(tmp_path, FIX / "ibstatus/nccl-1935-all-ports-down.txt")
    assert report["format"] == "ibstatus"
    assert set(s.filter(pl.col("counter") == "port_state_id")["value"].to_list()) == {1.0}
    out = tmp_path / "doc.json"
    r = fabricscope(
        "analyze", str(FIX / "ibstatus/nccl-1935-all-ports-down.txt"), "--host", "gpu01", "--json", str(out)
    )
    assert r.returncode == 1, r.stderr  # WARNING: judged, not "nothing analysed"
    doc = json.loads(out.read_text())
    down = [f for f in doc["findings"] if f["kind"] == "port_down"]
    # every port Disabled (an administrative state, info on its own): the host is off the fabric
    host = [f for f in down if f["severity"] == "warning"]
    assert [(f["host"], f["device"], f["port"], f["observed"]) for f in host] == [("gpu01", None, None, 5.0)]
    assert host[0]["evidence"]["rule"] == "port_down.host_off_fabric"
    assert "none of its 5 HCA port(s) has a link" in host[0]["message"]
    assert sorted(f["device"] for f in down if f["severity"] == "info") == [
        "mlx5_11",
        "mlx5_2",
        "mlx5_3",
        "mlx5_4",
        "mlx5_5",
    ]
    # one server, one page
    assert len(doc["incidents"]) == 1


def test_a_host_with_one_port_up_is_not_off_the_fabric(tmp_path: Path) -> None:
    # ibstat with a Polling port and a Disabled one beside Active ports: each port judged alone
    code, findings = analyze(tmp_path, FIX / "ibstat/gpud-rdma-core-47-h100-polling.txt")
    rules = sorted(f["evidence"]["rule"] for f in findings if f["kind"] == "port_down")
    assert rules == ["port_down.phys_state", "port_down.phys_state"]
    assert code == 1


# --- ibv_devinfo -------------------------------------------------------------------------------


def test_ibv_devinfo_vv_width_speed_and_invalid_speed(tmp_path: Path) -> None:
    report, s, a = parse(tmp_path, FIX / "ibv-devinfo/ucx-9908-vv-cx6-hdr.txt")
    assert report["format"] == "ibv-devinfo" and report["bad_records"] == 0
    assert gauge(s, "mlx5_0", "port_state_id") == 4.0  # PORT_ACTIVE (4)
    assert gauge(s, "mlx5_0", "port_phys_state_id") == 5.0  # LINK_UP (5)
    assert gauge(s, "mlx5_0", "link_width_lanes") == 4.0  # 4X (2)
    assert gauge(s, "mlx5_0", "link_rate_bytes_per_s") == 25_000_000_000.0  # 4 x 50.0 Gbps (64)
    assert attr(a, "mlx5_0", "lid") == "4" and attr(a, "mlx5_0", "link_layer") == "InfiniBand"
    assert attr(a, "mlx5_0", "node_guid_hex", None) == "0x88e9a4ffff25a462"
    assert attr(a, "mlx5_0", "fw_ver", None) == "20.37.1700"
    # mlx5_1: down, disabled, `invalid speed (0)`: no rate
    assert gauge(s, "mlx5_1", "port_state_id") == 1.0
    assert gauge(s, "mlx5_1", "port_phys_state_id") == 3.0
    assert gauge(s, "mlx5_1", "link_rate_bytes_per_s") is None
    assert attr(a, "mlx5_1", "lid") == "65535"


def test_ibv_devinfo_plain_with_prompt(tmp_path: Path) -> None:
    report, s, a = parse(tmp_path, FIX / "ibv-devinfo/deepep-38-plain-cx7.txt")
    assert report["format"] == "ibv-devinfo" and report["bad_records"] == 0
    assert s.height == 1 and gauge(s, "mlx5_0", "port_state_id") == 1.0  # no -v: no phys_state
    assert attr(a, "mlx5_0", "board_id", None) == "MT_0000000838"
    assert attr(a, "mlx5_0", "vendor_part_id", None) == "4129"


# --- states alone are judged -------------------------------------------------------------------


def test_rdma_link_polling_port_is_a_warning(tmp_path: Path) -> None:
    code, findings = analyze(tmp_path, FIX / "rdma-link/link-show-ib-rccl.txt")
    (f,) = [f for f in findings if f["kind"] == "port_down"]
    assert (f["device"], f["port"], f["severity"]) == ("mlx5_7", 1, "warning")
    assert "Polling" in f["message"]
    assert code == 1


# --- node_exporter speed -----------------------------------------------------------------------


def test_negative_node_exporter_speed_is_unknown_not_a_degraded_link(tmp_path: Path) -> None:
    path = FIX / "prometheus/node_exporter-speed-unknown-docker0.prom"
    _, s, _ = parse(tmp_path, path)
    speed = s.filter((pl.col("device") == "docker0") & (pl.col("counter") == "link_rate_bytes_per_s"))
    assert speed["value"].drop_nulls().to_list() == []  # -125000 (speed -1): no value
    assert gauge(s, "eth0", "link_rate_bytes_per_s", None) == 1_250_000_000.0
    code, findings = analyze(tmp_path, path)
    assert [f for f in findings if f["kind"] == "link_degraded"] == []
    assert code == 0


def test_a_1gbe_port_is_not_judged_against_10gbe_ports_of_another_host(tmp_path: Path) -> None:
    """Two real scrapes: 13 devices at 10 GbE on one host, a 1 GbE NIC on another; no adapter model."""
    ten = tmp_path / "host-a.prom"
    ten.write_bytes((FIX / "prometheus/node_exporter-speed-unknown-docker0.prom").read_bytes())
    one = tmp_path / "host-b.prom"
    one.write_bytes((FIX / "prometheus/node_exporter-speed-1gbe-enp3s0.prom").read_bytes())
    out = tmp_path / "findings.json"
    r = fabricscope("analyze", str(ten), str(one), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert [f for f in json.loads(out.read_text())["findings"] if f["kind"] == "link_degraded"] == []


# --- hostile input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "good", "bad", "expected"),
    [
        ("ibstat", "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n", "\t\tRate: fast", "a rate in Gb/s"),
        ("ibstat", "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n", "\t\tState\x00\x01: x", "`Key: value`"),
        ("ibstat", "CA 'mlx5_0'\n\tCA type: MT4129\n", "\tNode GUID: 0xZZ", "a hex GUID"),
        (
            "ibstatus",
            "Infiniband device 'mlx5_0' port 1 status:\n\tbase lid:\t 0x1\n",
            "\trate:\t\t 99999999999999999999 Gb/sec (4X)",
            "a rate like",
        ),
        ("ibstatus", "Infiniband device 'mlx5_0' port 1 status:\n\tbase lid:\t 0x1\n", "garbage", "header or a"),
        (
            "ibv-devinfo",
            "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\t\tport:\t1\n",
            "\t\t\tstate:\t\t\tPORT_ACTIVE",
            "a state like",
        ),
        ("ibv-devinfo", "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n", "\tbad\x07 line", "printable"),
    ],
)
def test_hostile_lines(tmp_path: Path, fmt: str, good: str, bad: str, expected: str) -> None:
    path = tmp_path / "in.txt"
    path.write_text(good + bad + "\n")
    args = ["--format", fmt, "--host", "h", "--time", "1764686822", "-o", str(tmp_path / "s.parquet")]
    r = fabricscope("parse", str(path), *args)
    assert r.returncode != 0
    assert expected in r.stderr and "in.txt" in r.stderr and "line" in r.stderr, r.stderr
    r = fabricscope("parse", str(path), *args, "--lenient", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inputs"][0]["bad_records"] == 1


def test_truncated_and_invalid_utf8(tmp_path: Path) -> None:
    args = ["--host", "h", "--time", "1764686822", "-o", str(tmp_path / "s.parquet"), "--json", "--lenient"]
    cut = tmp_path / "cut.txt"
    cut.write_bytes(b"CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Act\xff\n\t\tRate: 4")
    r = fabricscope("parse", str(cut), "--format", "ibstat", *args)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    assert report["bad_records"] == 1  # the invalid UTF-8 line; `Rate: 4` is read
    assert report["rows"] == 1

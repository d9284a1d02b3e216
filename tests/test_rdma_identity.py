"""A RoCE NIC's two names: ``ibdev2netdev`` and ``rdma link show`` readers, and entity resolution.

A NIC is ``eth0`` to ethtool and node_exporter and ``mlx5_0`` port 1 to sysfs hw_counters and
``rdma statistic``; these two tools say which is which. Everything goes through the CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from fabricscope.fabric.entities import Conflict, apply, resolve
from fabricscope.incidents.findings import empty_findings

from . import cli_runner

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"
SCENARIO = REPO / "sample_traces" / "scenarios" / "roce-no-lossless"


def fabricscope(*args: str, process: bool = True) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, process=process)


def attributes(tmp_path: Path, path: Path, *extra: str) -> tuple[str, dict[tuple[str, int | None, str], str]]:
    """(detected format, {(device, port, key): value}) of one input read by ``fabricscope parse``."""
    out = tmp_path / "s.parquet"
    r = fabricscope("parse", str(path), "--json", "--host", "h1", "--time", "1764686822", "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    fmt = json.loads(r.stdout)["inputs"][0]["format"]
    df = pl.read_parquet(tmp_path / "s.attributes.parquet").with_columns(pl.col("device", "key").cast(pl.String))
    # `rdma link` also names each device an HCA (`node_type`, for `port_down`): not an identity fact
    df = df.filter(pl.col("key") != "node_type")
    assert set(df["host"].cast(pl.String)) == {"h1"}
    rows = {(d, p, k): v for d, p, k, v in df.select("device", "port", "key", "value").iter_rows()}
    assert len(rows) == df.height  # no (device, port, key) twice
    return fmt, rows


def test_ibdev2netdev_column_t_with_annotations(tmp_path: Path) -> None:
    fmt, rows = attributes(tmp_path, FIX / "ibdev2netdev/column-t-cluster-health.txt")
    assert fmt == "ibdev2netdev"
    assert len(rows) == 24  # 12 ports x (netdev, netdev_carrier)
    assert rows[("mlx5_7", 1, "netdev")] == "enp157s0f0np0"
    assert rows[("mlx5_7", 1, "netdev_carrier")] == "Up"
    assert rows[("mlx5_11", 1, "netdev")] == "ibp220s0"
    assert rows[("mlx5_11", 1, "netdev_carrier")] == "Down"
    assert sorted(v for (_d, _p, k), v in rows.items() if k == "netdev_carrier").count("Up") == 2


def test_ibdev2netdev_verbose_and_old_style(tmp_path: Path) -> None:
    fmt, rows = attributes(tmp_path, FIX / "ibdev2netdev/constructed-verbose.txt")
    assert fmt == "ibdev2netdev"
    assert rows == {
        ("mlx5_0", 1, "netdev"): "ens1f0np0",
        ("mlx5_0", 1, "netdev_carrier"): "Up",
        ("mlx5_0", 1, "state"): "ACTIVE",
        ("mlx5_0", 1, "pci_address"): "0000:3b:00.0",
        ("mlx5_0", None, "fw_ver"): "22.36.1010",
        ("mlx5_1", 1, "netdev"): "ens1f1np1",
        ("mlx5_1", 1, "netdev_carrier"): "Down",
        ("mlx5_1", 1, "state"): "DOWN",  # printed padded: `(DOWN  )`
        ("mlx5_1", 1, "pci_address"): "0000:3b:00.1",
        ("mlx5_1", None, "fw_ver"): "22.36.1010",
        # no PCI device found: the line starts with a blank
        ("mlx5_2", 1, "netdev"): "ibp26s0",
        ("mlx5_2", 1, "netdev_carrier"): "Up",
        ("mlx5_2", 1, "state"): "ACTIVE",
        ("mlx5_2", None, "fw_ver"): "28.39.1002",
    }
    fmt, rows = attributes(tmp_path, FIX / "ibdev2netdev/constructed-old-style.txt")
    assert (fmt, rows) == ("ibdev2netdev", {("mlx4_0", 1, "netdev"): "ib0", ("mlx4_0", 2, "netdev"): "ib1"})


def test_rdma_link_show_text_both_iproute2_layouts(tmp_path: Path) -> None:
    fmt, rows = attributes(tmp_path, FIX / "rdma-link/link-show-3fs-cx6dx.txt")
    assert fmt == "rdma-link"
    assert rows == {
        ("mlx5_0", 1, "state"): "ACTIVE",
        ("mlx5_0", 1, "phys_state"): "LINK_UP",
        ("mlx5_0", 1, "netdev"): "p1p1",
        ("mlx5_1", 1, "state"): "ACTIVE",
        ("mlx5_1", 1, "phys_state"): "LINK_UP",
        ("mlx5_1", 1, "netdev"): "p1p2",
    }
    fmt, rows = attributes(tmp_path, FIX / "rdma-link/link-show-ib-rccl.txt")
    assert (fmt, rows) == (
        "rdma-link",
        {
            ("mlx5_7", 1, "subnet_prefix"): "fe80:0000:0000:0000",
            ("mlx5_7", 1, "lid"): "3403",
            ("mlx5_7", 1, "sm_lid"): "1",
            ("mlx5_7", 1, "lmc"): "0",
            ("mlx5_7", 1, "state"): "DOWN",
            ("mlx5_7", 1, "phys_state"): "POLLING",
        },
    )
    fmt, rows = attributes(tmp_path, FIX / "rdma-link/constructed-link-show-iproute2-4.16.txt")
    assert fmt == "rdma-link"
    assert rows[("mlx5_0", 1, "netdev")] == "ens1f0" and rows[("mlx5_1", 1, "lid")] == "12"
    assert len(rows) == 9


def test_rdma_link_show_json(tmp_path: Path) -> None:
    fmt, rows = attributes(tmp_path, FIX / "rdma-link/constructed-link-show.json")
    assert fmt == "rdma-link"
    assert rows[("mlx5_0", 1, "netdev")] == "ens1f0np0"
    assert rows[("mlx5_0", 1, "netdev_index")] == "4"
    assert rows[("mlx5_0", 1, "phys_state")] == "LINK_UP"  # sysfs's key
    assert rows[("mlx5_1", 1, "lid")] == "7"
    assert not any(k in ("caps", "ifindex", "ifname") for _d, _p, k in rows)
    assert len(rows) == 10  # 4 for the RoCE port, 6 for the InfiniBand one
    # the first iproute2 versions put `<dev>/<port>` in `ifname`
    old = tmp_path / "old.json"
    old.write_text('[{"ifindex":0,"port":1,"ifname":"mlx5_0/1","state":"ACTIVE","netdev":"eth2"}]')
    assert attributes(tmp_path, old)[1] == {("mlx5_0", 1, "state"): "ACTIVE", ("mlx5_0", 1, "netdev"): "eth2"}


@pytest.mark.parametrize(
    ("fmt", "good", "bad", "expected"),
    [
        ("ibdev2netdev", "mlx5_0 port 1 ==> eth0 (Up)", "mlx5_1 port 1 ==>", "`<rdma device> port <n> ==> <netdev>"),
        ("ibdev2netdev", "mlx5_0 port 1 ==> eth0 (Up)", "mlx5_1 port 99999 ==> eth1 (Up)", "port <n> ==>"),
        ("ibdev2netdev", "mlx5_0 port 1 ==> eth0 (Up)", "garbage here", "an `ibdev2netdev` line"),
        ("rdma-link", "link mlx5_0/1 state ACTIVE", "link mlx5_1/1 state", "a value after `state`"),
        ("rdma-link", "link mlx5_0/1 state ACTIVE", "link mlx5_1 state ACTIVE", "`link <device>/<port>"),
        ("rdma-link", "link mlx5_0/1 state ACTIVE", "\x00\x01 binary", "`link <device>/<port>"),
    ],
)
def test_hostile_lines_name_what_was_expected(tmp_path: Path, fmt: str, good: str, bad: str, expected: str) -> None:
    path = tmp_path / "in.txt"
    path.write_text(f"{good}\n{bad}\n")
    args = ["--format", fmt, "-q", "--host", "h", "--time", "1764686822", "-o", str(tmp_path / "s.parquet")]
    # The binary line runs the console script in a process; the others the CLI in this one.
    process = "\x00" in bad
    r = fabricscope("parse", str(path), *args, process=process)
    assert r.returncode != 0
    assert expected in r.stderr and "in.txt" in r.stderr and "line 2" in r.stderr, r.stderr
    # lenient mode counts the bad record and keeps the good line
    r = fabricscope("parse", str(path), *args, "--lenient", "--json", process=process)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    assert (report["bad_records"], report["attribute_rows"]) == (
        1,
        2,
    )  # ibdev2netdev: two lines; rdma-link: the line and its device's `node_type`


@pytest.mark.parametrize("fmt", ["ibdev2netdev", "rdma-link"])
def test_invalid_utf8_truncated_json_and_empty(tmp_path: Path, fmt: str) -> None:
    args = ["--format", fmt, "--host", "h", "--time", "1764686822", "-o", str(tmp_path / "s.parquet"), "--json"]
    bad = tmp_path / "bad.txt"
    line = b"mlx5_0 port 1 ==> eth0 (Up)" if fmt == "ibdev2netdev" else b"link mlx5_0/1 netdev eth0"
    bad.write_bytes(line + b"\n\xff\xfe garbage\n")
    # rdma-link runs the console script in a process; ibdev2netdev the CLI in this one.
    process = fmt == "rdma-link"
    r = fabricscope("parse", str(bad), *args, "--lenient", process=process)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    assert (report["bad_records"], report["attribute_rows"]) == (
        1,
        2,
    )  # ibdev2netdev: two lines; rdma-link: the line and its device's `node_type`
    r = fabricscope("parse", str(bad), *args, process=process)
    assert r.returncode != 0 and "UTF-8 text" in r.stderr, r.stderr
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    r = fabricscope("parse", str(empty), *args, process=process)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inputs"][0]["attribute_rows"] == 0
    if fmt == "rdma-link":
        cut = tmp_path / "cut.json"
        cut.write_text('[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACT')
        r = fabricscope("parse", str(cut), *args)
        assert r.returncode != 0 and "an `rdma -j link show` JSON array" in r.stderr, r.stderr


def _analyze(path: Path, tmp_path: Path) -> dict:
    out = tmp_path / "findings.json"
    r = fabricscope("analyze", str(path), "--json", str(out))
    assert r.returncode in (1, 2), r.stderr
    return json.loads(out.read_text())


def _members(doc: dict) -> list[tuple[str, str, str | None, int | None]]:
    (inc,) = doc["incidents"]
    found = [inc["root"]] + [c["finding"] for c in inc["consequences"]]
    return sorted((f["kind"], f["host"], f["device"], f["port"]) for f in found)


def test_cli_one_nic_one_member_with_ibdev2netdev(tmp_path: Path) -> None:
    """roce-no-lossless: without ibdev2netdev gpu03's NIC is two members (eth0, mlx5_0); with it, one."""
    without = tmp_path / "without"
    shutil.copytree(SCENARIO, without)
    shutil.rmtree(without / "ibdev2netdev")
    before = _analyze(without, tmp_path)
    assert _members(before) == [
        ("lossless_misconfig", "nolossless-gpu03", "eth0", None),
        ("lossless_misconfig", "nolossless-gpu03", "mlx5_0", 1),
        ("packet_loss", "nolossless-gpu02", "mlx5_0", 1),
        ("packet_loss", "nolossless-gpu03", "eth0", None),
        ("packet_loss", "nolossless-gpu03", "mlx5_0", 1),
    ]
    after = _analyze(SCENARIO, tmp_path)
    assert _members(after) == [
        ("lossless_misconfig", "nolossless-gpu03", "mlx5_0", 1),
        ("packet_loss", "nolossless-gpu02", "mlx5_0", 1),
        ("packet_loss", "nolossless-gpu03", "mlx5_0", 1),
    ]
    (inc,) = after["incidents"]
    assert inc["root"]["kind"] == "lossless_misconfig" and inc["entity"] == "nolossless-gpu03 mlx5_0 port 1"
    assert not [f for f in after["findings"] if f["device"] == "eth0"]
    # the eth0 observation is kept as evidence of the one finding
    (root,) = [f for f in after["findings"] if f["kind"] == "lossless_misconfig"]
    seen = root["evidence"]["also_seen"]
    assert [(s["host"], s["device"], s["port"]) for s in seen] == [("nolossless-gpu03", "eth0", None)]


def test_cli_entities_table_has_netdev_and_rdma_aliases(tmp_path: Path) -> None:
    out = tmp_path / "s.parquet"
    r = fabricscope("parse", str(SCENARIO), "-q", "-o", str(out))
    assert r.returncode == 0, r.stderr
    ent = pl.read_parquet(tmp_path / "s.entities.parquet")
    gpu03 = ent.filter(pl.col("name") == "nolossless-gpu03 mlx5_0")
    # one entity (keyed by the sysfs node GUID) with both names
    assert gpu03["entity"].n_unique() == 1 and gpu03["entity"][0].startswith("hca:0x")
    aliases = set(gpu03.select("alias", "alias_kind").iter_rows())
    assert {("eth0", "netdev"), ("mlx5_0", "rdma_device")} <= aliases
    assert ent.filter(pl.col("alias_kind") == "netdev").height == 4  # one per host


def test_a_netdev_two_rdma_ports_claim_is_a_conflict_left_as_read() -> None:
    attrs = pl.DataFrame(
        {
            "host": ["h1", "h1"],
            "device": ["mlx5_0", "mlx5_1"],
            "port": [1, 1],
            "key": ["netdev", "netdev"],
            "value": ["eth0", "eth0"],
            "source": ["ibdev2netdev", "rdma-link"],
        }
    )
    ent = resolve(hosts=["h1"], attributes=attrs)
    assert ent.netdevs == {}
    assert ent.conflicts == [
        Conflict(
            kind="netdev",
            name="h1 eth0",
            claims=("mlx5_0 port 1", "mlx5_1 port 1"),
            decision="not joined: left as read",
        )
    ]
    findings = pl.concat(
        [
            empty_findings(),
            pl.DataFrame({"kind": ["packet_loss"], "severity": ["warning"], "host": ["h1"], "device": ["eth0"]}),
        ],
        how="diagonal_relaxed",
    )
    assert apply(findings, ent)["device"].to_list() == ["eth0"]


def test_cli_sysfs_tree_net_device_infiniband_link(tmp_path: Path) -> None:
    """A copied sysfs tree: ``class/net/eth2/device/infiniband/mlx5_1`` and ``dev_port`` 0 -> port 1."""
    root = tmp_path / "sys"
    net = root / "class/net/eth2"
    (net / "device/infiniband/mlx5_1").mkdir(parents=True)
    (net / "dev_port").write_text("0\n")
    (net / "operstate").write_text("up\n")
    other = root / "class/net/eno1"  # a NIC without RDMA: no attribute
    other.mkdir(parents=True)
    (other / "operstate").write_text("up\n")
    port = root / "class/infiniband/mlx5_1/ports/1/counters"
    port.mkdir(parents=True)
    (port / "port_rcv_data").write_text("1000\n")
    fmt, rows = attributes(tmp_path, root)
    assert fmt == "sysfs"
    assert {k: v for k, v in rows.items() if k[2] == "netdev"} == {("mlx5_1", 1, "netdev"): "eth2"}

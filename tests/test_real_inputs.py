"""Real-world input variants through the command line: the files operators actually keep.

Each case runs the installed ``fabricscope`` console script in a subprocess, on a real (or
source-built, see the fixture folder's SOURCES.md) fixture, and checks exit status and content.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import polars as pl

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"


def fabricscope(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, cwd=REPO)


def parse_json(path: Path, *extra: str) -> dict[str, object]:
    r = fabricscope("parse", str(path), "--json", "-q", "--host", "h1", "--time", "1764686822", *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_ibnetdiscover_topology_file_is_detected_and_gives_links() -> None:
    topo = FIX / "ib/ibnetdiscover-topology/3.topo"
    doc = parse_json(topo)
    assert doc["inputs"][0]["format"] == "ibnetdiscover"
    assert doc["inputs"][0]["bad_records"] == 0
    r = fabricscope("topology", str(topo), "--json")
    assert r.returncode == 0, r.stderr
    links = json.loads(r.stdout)
    assert len(links) == 10
    edr = next(lk for lk in links if lk["node_guid"] == "0xe41d2d030061f957")
    assert (edr["node_name"], edr["port"], edr["peer_node_name"], edr["peer_port"]) == (
        "r-ufm216 HCA-2",
        1,
        "SwitchIB Mellanox Technologies",
        34,
    )
    assert (edr["speed"], edr["data_rate_gbps"], edr["tier"], edr["peer_tier"]) == ("EDR", 100.0, "hca", "leaf")
    # forced format works too, and the ibdiagnet net_dump now gives links as well
    r = fabricscope("topology", str(FIX / "ib/constructed/ibdiagnet2.net_dump"), "--json")
    assert r.returncode == 0, r.stderr
    assert {(lk["node_name"], lk["port"]) for lk in json.loads(r.stdout)} == {
        ("node01 HCA-1", 1),
        ("node02 HCA-1", 1),
        ("MF0;leaf01:MQM8700/U1", 41),
    }


def test_nccl_tests_two_node_logs_read_strictly_and_leniently(tmp_path: Path) -> None:
    for name in (
        "eks-efa-2node-tag-output.log",
        "eks-efa-2node-tag-output-interleaved.log",
        "eks-efa-2node-srun-label.log",
    ):
        for extra in ((), ("--lenient",)):
            out = tmp_path / f"{name}{len(extra)}.parquet"
            r = fabricscope("parse", str(FIX / "nccl-tests" / name), "-q", "-o", str(out), "--time", "0", *extra)
            assert r.returncode == 0, r.stdout + r.stderr
            res = pl.read_parquet(tmp_path / f"{out.stem}.nccl_results.parquet")
            assert res.height == 62, name
            row = res.filter((pl.col("size_bytes") == 4_194_304) & (pl.col("placement") == "out_of_place"))
            assert row["time_us"].to_list() == [1745.4], name
            assert set(res["host"].to_list()) == {"test-nccl-efa-worker-0"}


def test_perftest_transcripts_give_only_result_rows(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    r = fabricscope(
        "parse", str(FIX / "perftest/transcript-server-client-history.txt"), "-q", "-o", str(out), "--time", "0"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    res = pl.read_parquet(tmp_path / "p.perftest_results.parquet")
    assert res["run"].to_list() == [0, 1]
    assert res["bw_average_gbit_per_s"].to_list() == [92.40, 92.40]
    # a block cut short names its header and the value counts
    bad = tmp_path / "cut.txt"
    text = (FIX / "perftest/deepops-roce-transcript.txt").read_text()
    bad.write_text(text.replace("92.42              92.40              0.176230", "92.42"))
    r = fabricscope("parse", str(bad), "-q", "--time", "0")
    assert r.returncode == 3
    assert "BW average[Gb/sec]" in r.stderr and "5 values; this row has 3" in r.stderr


def test_ethtool_without_header_is_not_prometheus(tmp_path: Path) -> None:
    out = tmp_path / "e.parquet"
    src = FIX / "ethtool/headerless/eth0-tail-n2.txt"
    r = fabricscope("parse", str(src), "-q", "-o", str(out), "--host", "h1", "--time", "0", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["inputs"][0]["format"] == "ethtool"
    df = pl.read_parquet(out)
    assert df.height == 16
    assert not any(c.endswith(":") for c in df["counter"].cast(pl.String).to_list())
    # forced through the Prometheus reader the lines are refused with the reason
    r = fabricscope("parse", str(src), "-q", "--format", "prometheus", "--host", "h1", "--time", "0")
    assert r.returncode == 3 and "ethtool -S" in r.stderr


def test_port_down_after_a_cable_is_pulled() -> None:
    r = fabricscope("analyze", str(FIX / "ib/constructed/iblinkinfo-port17-lost.txt"), "--json", "-")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    down = [f for f in doc["findings"] if f["kind"] == "port_down"]
    warn = {(f["device"], f["port"]): f for f in down if f["severity"] == "warning"}
    # the pulled cable is one finding naming both ends (leaf01 port 17 and gpu05's HCA port), the
    # HCA end's own observation in its evidence; gpu07's port has no cable in the dump to join
    assert set(warn) == {("0x0c42a103008982a4", 17), ("0xb8cef60300025bb0", 1)}
    ev = warn[("0x0c42a103008982a4", 17)]["evidence"]
    assert ev["cable"] == ["gpu05 mlx5_0 port 1", "leaf01 port 17"]
    assert [(x["device"], x["port"]) for x in ev["also_seen"]] == [("0xb8cef60300025ba0", 1)]
    msg = warn[("0x0c42a103008982a4", 17)]["message"]
    assert msg.startswith("port 17 of switch MF0;leaf01:MQM8790-HS2F/U1 is Polling: cable unplugged or bad")
    assert "had a link earlier" in msg and "gpu05 mlx5_0 port 1" in msg
    assert warn[("0x0c42a103008982a4", 17)]["start"] == "2025-12-02T15:47:02Z"
    # the never-used switch ports are one info finding; the disabled one is info on its own
    info = [f for f in down if f["severity"] == "info"]
    assert {f["port"] for f in info} == {None, 18}
    summary = next(f for f in info if f["port"] is None)
    assert summary["observed"] == 34.0 and "(5-16, 19-40)" in summary["message"]


def test_a_malformed_file_in_a_directory_does_not_discard_the_rest(tmp_path: Path) -> None:
    d = tmp_path / "dumps"
    d.mkdir()
    shutil.copy(FIX / "ib/constructed/iblinkinfo-port17-lost.txt", d / "a-iblinkinfo.txt")
    (d / "b-broken.prom").write_text('# TYPE x counter\nx{a="1"} 1\nx{a="1" 2\n')
    r = fabricscope("analyze", str(d), "--json", "-")
    # a warning finding and an unreadable input: UNKNOWN (3)
    assert r.returncode == 3, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "unknown"
    errors = {Path(i["path"]).name: i.get("error") for i in doc["inputs"]}
    assert errors["a-iblinkinfo.txt"] is None
    assert "b-broken.prom" in errors["b-broken.prom"] and "line 3" in errors["b-broken.prom"]
    assert any(f["kind"] == "port_down" and f["port"] == 17 for f in doc["findings"])
    text = fabricscope("analyze", str(d))
    assert text.returncode == 3
    assert "UNKNOWN" in text.stdout and "1 input(s) could not be read" in text.stdout
    # a critical finding is worse than an unreadable input: CRITICAL (2)
    shutil.copy(REPO / "sample_traces/ethtool/roce01-eth2.log", d / "c-roce01-eth2.log")
    r = fabricscope("analyze", str(d), "--json", "-")
    assert r.returncode == 2 and json.loads(r.stdout)["status"] == "critical"
    # --lenient keeps its meaning: the bad record is skipped and counted, the input stays
    r = fabricscope("analyze", str(d), "--json", "-", "--lenient")
    assert r.returncode == 2
    broken = next(i for i in json.loads(r.stdout)["inputs"] if i["path"].endswith("b-broken.prom"))
    assert ("error" in broken, broken["rejected"], broken["records"]) == (False, 1, 1)


def test_an_rccl_log_after_an_rdma_link_line_stays_an_rccl_log(tmp_path: Path) -> None:
    # a `link mlx5_7/1 ... state ACTIVE ...` line before a two-node MI300X rccl-tests run
    out = tmp_path / "r.parquet"
    src = FIX / "nccl-tests/rccl-mi300x-2node-after-rdma-link.txt"
    r = fabricscope("parse", str(src), "-q", "-o", str(out), "--time", "0", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    assert (report["format"], report["bad_records"]) == ("nccl-tests", 0)
    res = pl.read_parquet(tmp_path / "r.nccl_results.parquet")
    assert res.height == 10  # 5 sizes, out-of-place and in-place
    assert set(res["collective"]) == {"all_reduce"} and set(res["host"]) == {"inst-aq8lt-oke-rdma"}
    at_8g = res.filter(pl.col("size_bytes") == 8_589_934_592).sort("placement")
    assert at_8g["placement"].to_list() == ["in_place", "out_of_place"]
    assert at_8g["busbw_gb_per_s"].to_list() == [356.87, 357.04]
    assert at_8g["time_us"].to_list() == [45132.0, 45110.0]


def test_old_alltoall_rows_with_a_blank_redop_cell_are_read(tmp_path: Path) -> None:
    out = tmp_path / "a.parquet"
    src = FIX / "nccl-tests/alltoall-empty-redop-msccl-16gpu.txt"
    r = fabricscope("parse", str(src), "-q", "-o", str(out), "--time", "0", "--json")  # strict: no bad row
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["inputs"][0]["bad_records"] == 0
    res = pl.read_parquet(tmp_path / "a.nccl_results.parquet")
    assert res.height == 14  # 7 rows, out-of-place and in-place
    assert res["redop"].null_count() == 14 and set(res["dtype"]) == {"float"}
    first = res.filter(pl.col("size_bytes") == 1_048_576).sort("placement")
    assert first["count"].to_list() == [16384, 16384]
    assert first["time_us"].to_list() == [0.50, 571.5]
    assert first["busbw_gb_per_s"].to_list() == [1957.39, 1.72]
    last = res.filter((pl.col("size_bytes") == 67_108_864) & (pl.col("placement") == "out_of_place"))
    assert (last["time_us"].item(), last["algbw_gb_per_s"].item()) == (29605.0, 2.27)


def test_lldp_port_ids_that_are_an_ifindex_take_the_port_description() -> None:
    # Junos sends `PortID: local 541` (its SNMP ifIndex) and `PortDescr: ge-0/0/17`; an Arista
    # neighbour's `ifname Ethernet48` keeps its name over its free-text description
    src = FIX / "lldpctl/derived-junos-ifindex-port-keyvalue.txt"
    r = fabricscope("topology", str(src), "--json")
    assert r.returncode == 0, r.stderr
    links = json.loads(r.stdout)
    assert sorted((x["node_name"], x["port_name"], x["peer_node_name"], x["peer_port_name"]) for x in links) == [
        ("gpu-r12 eth0", "eth0", "spn-500-paula-sw", "ge-0/0/17"),
        ("gpu-r12 eth1", "eth1", "spn-500-paula-dtg01-sw.spn.disney.com", "Ethernet48"),
    ]


def test_nccl_log_with_open_mpi_warnings_between_runs(tmp_path: Path) -> None:
    """nccl-tests 2.18.3, two runs of one log, each after Open MPI's `1st MCA variable: ...` help text."""
    out = tmp_path / "m.parquet"
    src = FIX / "nccl-tests/spcx-2node-16gpu-mca-warnings-2.18.3.log"
    r = fabricscope("parse", str(src), "--json", "-o", str(out), "--time", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["inputs"][0]["bad_records"] == 0
    res = pl.read_parquet(tmp_path / "m.nccl_results.parquet")
    assert sorted(res["run"].unique().to_list()) == [0, 1]
    assert res.height == 96  # 24 sizes x out-of-place/in-place x 2 runs
    row = res.filter(
        (pl.col("run") == 1) & (pl.col("size_bytes") == 16_777_216) & (pl.col("placement") == "out_of_place")
    )
    assert row["time_us"].to_list() == [8506.65] and row["busbw_gb_per_s"].to_list() == [3.70]
    assert set(res["avg_busbw_gb_per_s"].to_list()) == {17.8413, 16.5583}


def test_perftest_table_without_banner_named_by_its_command(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    r = fabricscope(
        "parse", str(FIX / "perftest/send_bw_no_banner_arm_issue65.txt"), "-q", "-o", str(out), "--time", "0"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    res = pl.read_parquet(tmp_path / "p.perftest_results.parquet")
    assert res["test"].to_list() == ["send_bw", "send_bw"]  # not unknown_bw
    assert res["device"].to_list() == ["mlx5_0", "mlx5_0"]
    assert res["size_bytes"].to_list() == [1024, 1024]
    assert res["iterations"].to_list() == [1000, 1000]

"""The NVLink domain as a failure domain, through the CLI, cron and the dashboard.

* a GPU link with CRC errors is one ``link_errors`` finding (layer ``nvlink``) on that GPU and link;
* a steady background of a few CRC errors an hour and a driver reload raise nothing;
* an NVL72 rack losing an NVSwitch tray is one incident rooted at the domain, every tray a member;
* ``nvidia-smi -q``: identity and the Fabric block, sentinels unknown, a bad fabric status a finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.simulate import check_incidents, check_truth, simulate

from tests.cli_runner import fabricscope as cli

FIX = Path(__file__).resolve().parent / "fixtures" / "nvidia-smi-q"
DOMAIN = "5d2c6a90-3f61-4b8e-9a47-1c0e7b25d9f3/clique 32766"


def _analyze(path: Path, tmp: Path, *, process: bool = False) -> tuple[int, dict]:
    out = tmp / "findings.json"
    r = cli("analyze", str(path), "--json", str(out), process=process)
    assert r.returncode in (0, 1, 2), r.stderr
    return r.returncode, json.loads(out.read_text())


def _loud(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["severity"] != "info"]


@pytest.fixture(scope="module")
def crc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("nvlink-crc")
    simulate(d, "nvlink-crc")
    return d


@pytest.fixture(scope="module")
def trap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("trap-nvlink")
    simulate(d, "trap-nvlink-background")
    return d


@pytest.fixture(scope="module")
def nvl72(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("nvl72")
    simulate(d, "nvl72-tray-lost")
    return d


def test_bad_link_is_one_link_errors_finding_on_its_gpu(crc: Path, tmp_path: Path) -> None:
    code, doc = _analyze(crc, tmp_path, process=True)
    assert code == 2
    nvl = [f for f in doc["findings"] if f["kind"] == "link_errors"]
    assert len(nvl) == 1, nvl
    f = nvl[0]
    assert (f["host"], f["device"], f["port"], f["layer"], f["severity"]) == (
        "nvlcrc-gpu02",
        "gpu3",
        7,
        "nvlink",
        "critical",
    )
    assert f["metric"] == "nvlink_crc_errors"
    assert f["evidence"]["critical_per_s"] == 100.0 and "DCGM" in f["evidence"]["threshold_source"]
    assert f["evidence"]["peak_rate_per_s"] > 100
    assert set(f["evidence"]["counters"]) == {"nvlink_crc_errors", "nvlink_replay_errors"}
    truth = json.loads((crc / "truth.json").read_text())
    got = check_truth(
        pl.DataFrame(doc["findings"]).with_columns(
            pl.col("start").str.to_datetime(time_zone="UTC"), pl.col("end").str.to_datetime(time_zone="UTC")
        ),
        truth,
    )
    assert got == {"missing": [], "unexpected": [], "forbidden": []}
    # one page: the finding is one incident
    assert len(doc["incidents"]) == 1 and doc["incidents"][0]["root"]["device"] == "gpu3"
    assert "dcgmi diag" in doc["incidents"][0]["action"]


def test_background_errors_and_a_driver_reload_raise_nothing(trap: Path, tmp_path: Path) -> None:
    code, doc = _analyze(trap, tmp_path)
    assert code == 0, _loud(doc)
    assert _loud(doc) == [] and doc["incidents"] == []
    # the reload is data quality: one info per GPU of the host that reloaded, on the NVLink layer
    resets = [f for f in doc["findings"] if f["kind"] == "counter_anomaly" and f["metric"].startswith("nvlink_")]
    assert resets and {f["layer"] for f in resets} == {"nvlink"}
    assert {f["host"] for f in resets} == {"nvlbg-gpu01"}
    assert len(resets) <= 8


def test_lost_switch_tray_is_one_incident_naming_the_domain(nvl72: Path, tmp_path: Path) -> None:
    code, doc = _analyze(nvl72, tmp_path)
    assert code == 2
    truth = json.loads((nvl72 / "truth.json").read_text())
    assert check_incidents(doc["incidents"], truth) == {
        "missing": [],
        "missing_members": [],
        "stray_members": [],
        "false_merges": [],
        "extra": [],
    }
    [inc] = [i for i in doc["incidents"] if i["severity"] != "info"]
    assert inc["root"]["kind"] == "nvlink_domain"
    assert DOMAIN in inc["root"]["host"] and inc["root"]["device"] == "nvswitch tray 3"
    trays = {c["finding"]["host"] for c in inc["consequences"]}
    assert len(trays) == 18
    assert DOMAIN in inc["title"]


def test_cron_pages_the_bad_link_once_and_the_trap_never(crc: Path, trap: Path, tmp_path: Path) -> None:
    args = [
        "cron",
        "--state",
        str(tmp_path / "s1"),
        "--history",
        str(tmp_path / "h1"),
        "--json",
        str(tmp_path / "a.json"),
    ]
    r = cli(*args[:1], "--inputs", str(crc), *args[1:], process=False)
    assert r.returncode == 2, r.stdout + r.stderr
    doc = json.loads((tmp_path / "a.json").read_text())
    nvl = [f for f in doc["findings"] if f["kind"] == "link_errors"]
    assert [(f["host"], f["device"], f["port"], f["layer"]) for f in nvl] == [("nvlcrc-gpu02", "gpu3", 7, "nvlink")]
    r = cli(
        "cron",
        "--inputs",
        str(trap),
        "--state",
        str(tmp_path / "s2"),
        "--history",
        str(tmp_path / "h2"),
        "--json",
        str(tmp_path / "b.json"),
        process=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_dashboard_overview_shows_the_domain_incident(nvl72: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from tests.dashboard.conftest import APP

    monkeypatch.setenv("FABRICSCOPE_DATA", str(nvl72.parent))
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["source"] = nvl72.name
    at.switch_page("app_pages/overview.py").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = " ".join(str(e.value) for e in (*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success))
    assert "nvlink domain" in texts.lower() and "5d2c6a90" in texts


def test_nvidia_smi_q_identity_and_fabric() -> None:
    # driver 535 on an HGX H100: Fabric has State and Status only
    p = FIX / "gpud-535.161.08-h100.txt"
    res = fabricscope.run_analysis(p, host="h1", keep_detail=True)
    assert [i["format"] for i in res.inputs] == ["nvidia-smi-q"]
    attrs = res.attributes.with_columns(pl.col("key").cast(pl.String), pl.col("value").cast(pl.String))
    got = dict(attrs.filter(pl.col("device").cast(pl.String) == "gpu0").select("key", "value").iter_rows())
    assert got["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert got["gpu_uuid"] == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert got["gpu_bus_id"] == "00000000:19:00.0"
    assert got["driver_version"] == "535.161.08"
    assert (got["fabric_state"], got["fabric_status"]) == ("Completed", "Success")
    assert got["gpu_module_id"] == "2"
    # Completed/Success is healthy
    assert [f for f in res.findings.to_dicts() if f["kind"].startswith("nvlink")] == []


def test_nvidia_smi_q_driver_560_without_a_fabric_is_unknown_not_a_fault() -> None:
    # driver 560 on a TITAN V: every Fabric field N/A (no NVLink fabric), never a finding
    res = fabricscope.run_analysis(FIX / "gpud-560.35.03-titan-v.txt", host="h1", keep_detail=True)
    attrs = res.attributes.with_columns(pl.col("key").cast(pl.String), pl.col("value").cast(pl.String))
    got = dict(attrs.filter(pl.col("device").cast(pl.String) == "gpu0").select("key", "value").iter_rows())
    assert got["gpu_name"] == "NVIDIA TITAN V" and got["driver_version"] == "560.35.03"
    assert not any(k.startswith("fabric_") for k in got)
    assert [f for f in res.findings.to_dicts() if f["kind"].startswith("nvlink")] == []


@pytest.mark.parametrize(
    ("name", "severity", "words"),
    [
        ("fabric-insufficient-resources.txt", "critical", "Insufficient Resources"),
        ("fabric-unhealthy.txt", "warning", "Unhealthy"),
    ],
)
def test_bad_fabric_status_is_a_finding(tmp_path: Path, name: str, severity: str, words: str) -> None:
    d = tmp_path / "in"
    d.mkdir()
    (d / "node07.txt").write_text("# host: node07\n" + (FIX / name).read_text())
    _, doc = _analyze(d, tmp_path)
    [f] = [f for f in doc["findings"] if f["kind"] == "nvlink_fabric"]
    assert (f["host"], f["severity"], f["layer"]) == ("node07", severity, "nvlink")
    assert words in f["message"]


def test_key_widths_of_other_drivers(tmp_path: Path) -> None:
    # constructed: 36- and 32-column keys (older drivers), tabs, a second snapshot
    text = (
        "# host: n1\n==============NVSMI LOG==============\n\n"
        "Timestamp                           : Mon Apr  9 12:25:59 2018\n"
        "Driver Version                      : 367.106\n\n"
        "Attached GPUs                       : 1\n"
        "GPU 0000:00:1E.0\n"
        "    Product Name                    : Tesla K80\n"
        "    GPU UUID                        : GPU-00000000-1111-2222-3333-444444444444\n"
        "==============NVSMI LOG==============\n"
        "Timestamp                       : Mon Apr  9 12:26:59 2018\n"
        "GPU 0000:00:1E.0\n"
        "\tProduct Name                : Tesla K80\n"
    )
    p = tmp_path / "q.txt"
    p.write_text(text)
    res = fabricscope.run_analysis(p, keep_detail=True)
    a = res.attributes.with_columns(pl.col("key").cast(pl.String), pl.col("value").cast(pl.String))
    names = a.filter(pl.col("key") == "gpu_name")
    assert names["value"].to_list() == ["Tesla K80", "Tesla K80"]
    assert names["time"].dt.epoch("s").to_list() == [1523276759, 1523276819]
    assert a.filter(pl.col("key") == "gpu_uuid")["value"].to_list() == ["GPU-00000000-1111-2222-3333-444444444444"]


def test_cron_pages_the_lost_tray_once_with_its_72_xids(nvl72: Path, tmp_path: Path) -> None:
    # 18 trays' fabric state, one domain finding and an XID on each of the 72 GPUs: one page in
    # the Nagios line and the textfile, the domain's
    r = cli(
        "cron",
        "--inputs",
        str(nvl72),
        "--state",
        str(tmp_path / "s"),
        "--history",
        str(tmp_path / "h"),
        "--textfile",
        str(tmp_path / "t.prom"),
        "--json",
        str(tmp_path / "a.json"),
        process=False,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.startswith("FABRICSCOPE CRITICAL - 1 critical: nvlink_domain nvlink domain 5d2c6a90")
    text = (tmp_path / "t.prom").read_text()
    assert 'fabricscope_incidents{severity="critical"} 1' in text
    assert 'fabricscope_incidents{severity="warning"} 0' in text
    doc = json.loads((tmp_path / "a.json").read_text())
    assert sum(1 for f in doc["findings"] if f["kind"] == "gpu_xid") == 72
    [inc] = [i for i in doc["incident_lifecycle"] if i["severity"] != "info"]
    assert inc["root_kind"] == "nvlink_domain"


_TRAY_Q = Path(__file__).resolve().parents[1] / "sample_traces" / "scenarios" / "nvl72-tray-lost" / "nvidia-smi-q"


def _two_node_job(d: Path, second_domain: str, busbw_gb_per_s: float) -> Path:
    """Two GB200 trays' ``nvidia-smi -q`` (healthy) and an all_reduce_perf log of their 8 GPUs."""
    d.mkdir()
    first = (_TRAY_Q / "nvl72-gpu01.txt").read_text()
    healthy = first.replace(": Unhealthy", ": Healthy").replace(": Degraded", ": Full")
    uuid = "5d2c6a90-3f61-4b8e-9a47-1c0e7b25d9f3"
    (d / "tray-a.txt").write_text(healthy)
    (d / "tray-b.txt").write_text(healthy.replace("nvl72-gpu01", "nvl72-gpu02").replace(uuid, second_domain))
    lines = ["1796400000", "# nThread 1 nGpus 1 minBytes 8589934592 maxBytes 8589934592", "#", "# Using devices"]
    for rank in range(8):
        host = "nvl72-gpu01" if rank < 4 else "nvl72-gpu02"
        lines.append(
            f"#  Rank {rank:>2} Group  0 Pid {41000 + rank:>6} on {host} device {rank % 4:>2} "
            f"[0000:{0x18 + rank % 4:02x}:00] NVIDIA GB200"
        )
    algbw = busbw_gb_per_s * 8 / (2 * 7)
    us = 8589934592 / (algbw * 1e9) * 1e6
    cols = f"{us:>9.0f} {algbw:>7.2f} {busbw_gb_per_s:>7.2f} {0:>6}"
    lines += [
        "#",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        f"  8589934592    2147483648     float     sum      -1 {cols} {cols}",
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {busbw_gb_per_s:.3f} ",
    ]
    (d / "all_reduce_perf.log").write_text("\n".join(lines) + "\n")
    return d


def test_a_job_inside_one_nvlink_domain_is_judged_against_nvlink_across_two_against_the_network(
    tmp_path: Path,
) -> None:
    # 300 GB/s of bus bandwidth between two trays: poor for one NVL72 domain (NVLink5), more than
    # the network could carry between two domains
    same = _two_node_job(tmp_path / "same", "5d2c6a90-3f61-4b8e-9a47-1c0e7b25d9f3", 300.0)
    _, doc = _analyze(same, tmp_path)
    [f] = [f for f in doc["findings"] if f["kind"] == "underperformance"]
    assert f["layer"] == "nvlink" and f["severity"] == "critical"
    assert f["evidence"]["nvlink_domains"] == [DOMAIN]
    assert "its 2 nodes share the NVLink domain " + DOMAIN in f["evidence"]["expectation_source"]
    other = "0b9f7c1e-2d4a-4f6b-8c3d-9e5a1b7f2c40"
    split = _two_node_job(tmp_path / "split", other, 300.0)
    _, doc = _analyze(split, tmp_path)
    assert [f for f in doc["findings"] if f["kind"] == "underperformance"] == []
    # and a slow one across the boundary is judged against the network, naming both domains
    slow = _two_node_job(tmp_path / "slow", other, 20.0)
    _, doc = _analyze(slow, tmp_path)
    [f] = [f for f in doc["findings"] if f["kind"] == "underperformance"]
    assert f["layer"] == "network"
    assert sorted(f["evidence"]["nvlink_domains"]) == sorted([DOMAIN, f"{other}/clique 32766"])
    assert "the traffic between them crosses the network" in f["evidence"]["expectation_source"]


PROM_FIX = Path(__file__).resolve().parent / "fixtures" / "prometheus"


def test_dcgm_fabric_fields_are_judged_as_the_fabric_block(tmp_path: Path) -> None:
    # gpu0: Success but the health mask says degraded bandwidth; gpu1: the fabric manager failed;
    # gpu2: not supported, healthy mask; gpu3: DCGM's blank (unknown)
    _, doc = _analyze(PROM_FIX / "dcgm-fabric-fields.prom", tmp_path)
    [f] = [f for f in doc["findings"] if f["kind"] == "nvlink_fabric"]
    assert (f["host"], f["severity"], f["layer"]) == ("hgx-a01", "critical", "nvlink")
    assert "gpu1: fabric status Failure" in f["message"]
    assert "gpu0: bandwidth Degraded" in f["message"]
    assert "gpu2" not in f["message"] and "gpu3" not in f["message"]


@pytest.mark.parametrize(("model", "found"), [("NVIDIA H100 80GB HBM3", True), ("NVIDIA GB200", False)])
def test_fabric_manager_not_started_is_a_fault_on_hgx_not_on_a_rack_scale_gpu(
    tmp_path: Path, model: str, found: bool
) -> None:
    # DCGM reports Not Started where no fabric manager runs: a GB200's NVSwitches are the rack's
    line = (
        f'DCGM_FI_DEV_FABRIC_MANAGER_STATUS{{gpu="0",UUID="GPU-0",device="nvidia0",modelName="{model}",'
        'Hostname="node1"} 1\n'
    )
    p = tmp_path / "dcgm.prom"
    p.write_text("# TYPE DCGM_FI_DEV_FABRIC_MANAGER_STATUS gauge\n" + line)
    _, doc = _analyze(p, tmp_path)
    got = [f for f in doc["findings"] if f["kind"] == "nvlink_fabric"]
    assert bool(got) is found
    if found:
        assert "gpu0: fabric state Not Started" in got[0]["message"]


RACKS = Path(__file__).resolve().parents[1] / "sample_traces" / "scenarios" / "nvl72-jobs-two-racks"


def test_two_racks_scenario_judges_each_job_at_its_domain_boundary(tmp_path: Path) -> None:
    # through the CLI: the job inside rack A against NVLink5, the job across the racks against the network
    code, doc = _analyze(RACKS, tmp_path, process=True)
    assert code == 2
    truth = json.loads((RACKS / "truth.json").read_text())
    assert check_truth(fabricscope.run_analysis([str(RACKS)]).findings, truth) == {
        "missing": [],
        "unexpected": [],
        "forbidden": [],
    }
    [f] = [f for f in doc["findings"] if f["kind"] == "underperformance"]
    assert (f["host"], f["layer"], f["severity"]) == ("racks-gpu01", "nvlink", "critical")
    assert f["evidence"]["nvlink_domains"] == ["3a7e51c2-94d0-4b6f-a1e8-6c2f0d9b7a15/clique 32766"]
    assert "of the 774 GB/s the nvlink should give" in f["message"]
    # through cron: one page, the rack-A job's
    r = cli(
        "cron",
        "--inputs",
        str(RACKS),
        "--state",
        str(tmp_path / "s"),
        "--history",
        str(tmp_path / "h"),
        "--textfile",
        str(tmp_path / "t.prom"),
        process=False,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.startswith("FABRICSCOPE CRITICAL - 1 critical: underperformance racks-gpu01")
    assert 'fabricscope_incidents{severity="critical"} 1' in (tmp_path / "t.prom").read_text()


def test_dashboard_overview_shows_the_rack_job_against_nvlink(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from tests.dashboard.conftest import APP

    monkeypatch.setenv("FABRICSCOPE_DATA", str(RACKS.parent))
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["source"] = RACKS.name
    at.switch_page("app_pages/overview.py").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = " ".join(str(e.value) for e in (*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success))
    assert "underperformance" in texts and "racks-gpu01" in texts

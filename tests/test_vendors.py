"""Non-mlx5 RoCE NICs and older tool versions, read through the command line.

Real ``ethtool -S`` of a Broadcom bnxt_en port and an Intel E810 (``ice``) PF, the old
``nvidia-smi nvlink -g 0`` KBytes layout, the all-links-inactive notice, OFED 1.x perfquery field
names and dcgm-exporter's MIG/metadata labels (provenance in each fixture folder's SOURCES.md);
and a PFC storm simulated on a Broadcom and on an Intel NIC, found as ``pfc_storm`` on priority 3.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
SCENARIOS = REPO / "sample_traces" / "scenarios"


def fabricscope(*args: str, process: bool = True) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, process=process, cwd=REPO)


def parsed(tmp_path: Path, path: Path, *extra: str) -> pl.DataFrame:
    out = tmp_path / "samples.parquet"
    r = fabricscope("parse", str(path), "-q", "--host", "h1", "--time", "1764686822", "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    return pl.read_parquet(out).with_columns(pl.col("device", "counter").cast(pl.String))


def value(df: pl.DataFrame, device: str, counter: str, priority: int | None = None) -> int:
    rows = df.filter(
        (pl.col("device") == device) & (pl.col("counter") == counter) & pl.col("priority").eq_missing(priority)
    )
    assert rows.height == 1, (device, counter, priority, rows)
    return int(rows["value_u64"].item())


def test_bnxt_en_port_stats_map_with_priorities_and_rings_are_indexed(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "ethtool/vendors/eth0-bnxt_en-ethq.txt")
    assert value(df, "eth0", "phy_rx_discards") == 49337  # rx_stat_discard
    assert value(df, "eth0", "rx_buffer_passed_thres_events") == 417  # rx_buffer_passed_threshold
    assert value(df, "eth0", "phy_rx_bits") == 4621497487696704  # rx_bits
    assert value(df, "eth0", "rx_pfc_frames") == 0
    # every per-priority PFC counter of the port stats ext lands on its priority
    for counter in (
        "rx_pause_frames",  # rx_pfc_ena_frames_pri<p>
        "tx_pause_frames",
        "rx_pause_duration_us",  # pfc_pri<p>_rx_duration_us
        "tx_pause_duration_us",
        "rx_pause_transitions",
        "tx_pause_transitions",
        "prio_rx_bytes",  # rx_bytes_pri<p>
        "prio_tx_packets",
    ):
        prios = df.filter((pl.col("device") == "eth0") & (pl.col("counter") == counter))["priority"]
        assert sorted(prios.drop_nulls().to_list()) == list(range(8)), counter
    # rx_pause_frames / tx_pause_frames without a priority are 802.3x global pause
    assert value(df, "eth0", "rx_pause_frames") == 0
    # `[3]: rx_discards` is ring 3's rx_discards, not a counter named `[3]: rx_discards`
    assert value(df, "eth0/queue3", "rx_discards") == 10573381
    assert value(df, "eth0/queue11", "rx_discards") == 9244693
    assert sorted(d for d in df["device"].unique() if d.startswith("eth0/queue")) == sorted(
        f"eth0/queue{i}" for i in range(12)
    )
    assert not df.filter(pl.col("counter").str.contains(r"^\[")).height


def test_ice_xon_xoff_per_priority_and_queues(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "ethtool/vendors/eth0-ice-ethq.txt")
    for counter in ("rx_xoff_frames", "rx_xon_frames", "tx_xoff_frames", "tx_xon_frames"):
        per_prio = df.filter((pl.col("counter") == counter) & pl.col("priority").is_not_null())
        assert sorted(per_prio["priority"].to_list()) == list(range(8)), counter
        assert value(df, "eth0", counter) == 0  # link_xoff_rx.nic ...: 802.3x, priority null
    assert value(df, "eth0", "phy_rx_bytes") == 848255752  # rx_bytes.nic
    assert value(df, "eth0", "netdev_rx_bytes") == 848243014  # rx_bytes (the VSI)
    assert value(df, "eth0/queue0", "rx_packets") == 487528  # rx_queue_0_packets
    assert value(df, "eth0/queue1", "tx_bytes") == 16142  # tx_queue_1_bytes
    assert not df.filter(pl.col("counter").str.contains("queue_")).height


def test_counters_vendor_lists_each_drivers_spellings() -> None:
    r = fabricscope("counters", "--vendor", "intel", "--json")
    assert r.returncode == 0, r.stderr
    rows = {c["name"]: c for c in json.loads(r.stdout)}
    assert "ethtool:rx_priority_{p}_xoff.nic [ice]" in rows["rx_xoff_frames"]["spellings"]
    assert "sysfs:hw_counters/cnpHandled [irdma]" in rows["rp_cnp_handled_packets"]["spellings"]
    assert "ethtool:port.rx_priority_{p}_xoff_rx [i40e]" in rows["rx_xoff_frames"]["spellings"]
    # only Intel's spellings: mlx5's `hw_counters/rp_cnp_handled` is not listed for intel
    assert all("[" in s for c in rows.values() for s in c["spellings"])
    r = fabricscope("counters", "--vendor", "bnxt_en", "--csv")
    assert r.returncode == 0, r.stderr
    assert "pfc_pri{p}_tx_duration_us" in r.stdout
    r = fabricscope("counters", "--vendor", "nosuchnic")
    assert r.returncode == 3  # a usage error: Nagios UNKNOWN, as for every command
    assert "no counter spelled by vendor 'nosuchnic'" in r.stderr


@pytest.mark.parametrize("vendor", ["bnxt", "ice"])
def test_pfc_storm_on_broadcom_and_intel_nics_is_found_on_priority_3(tmp_path: Path, vendor: str) -> None:
    out = tmp_path / vendor
    r = fabricscope("simulate", "--scenario", f"pfc-storm-{vendor}", str(out))
    assert r.returncode == 0, r.stderr
    log = (out / "ethtool" / f"pfcstorm{vendor}-gpu03-eth0.log").read_text()
    # the logs are in the vendor's dialect, not mlx5's
    assert ("pfc_pri3_tx_duration_us" if vendor == "bnxt" else "tx_priority_3_xoff.nic") in log
    assert "tx_prio3_pause" not in log
    r = fabricscope("analyze", str(out), "--json", "-")
    assert r.returncode == 2, r.stdout + r.stderr
    findings = json.loads(r.stdout)["findings"]
    storms = [f for f in findings if f["kind"] == "pfc_storm"]
    assert [(f["host"], f["device"], f["priority"], f["severity"]) for f in storms] == [
        (f"pfcstorm{vendor}-gpu03", "eth0", 3, "critical")
    ]
    rule = json.loads(storms[0]["evidence"])["rule"] if isinstance(storms[0]["evidence"], str) else None
    rule = rule or storms[0]["evidence"]["rule"]
    assert rule == ("pfc_storm.no_transition" if vendor == "bnxt" else "pfc_storm.xoff_refresh")
    # the storm's drops are the storm's, not a lossy link's
    assert not [f for f in findings if f["kind"] == "lossy_collapse"]


def test_nvidia_smi_nvlink_g_kbytes_pairs(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "nvidia-smi/nvlink-g0-kbytes-v100.txt")
    assert df.height == 36  # 18 links x (Rx0, Tx0)
    rx = df.filter(
        (pl.col("device") == "gpu0") & (pl.col("port") == 1) & (pl.col("counter") == "nvlink_counter0_rx_bytes")
    )
    assert rx["value_u64"].to_list() == [100 * 1024]
    rx = df.filter(
        (pl.col("device") == "gpu1") & (pl.col("port") == 2) & (pl.col("counter") == "nvlink_counter0_rx_bytes")
    )
    assert rx["value_u64"].to_list() == [50 * 1024]


def test_all_links_inactive_is_an_attribute_and_a_warning(tmp_path: Path) -> None:
    path = FIX / "nvidia-smi/nvlink-s-all-inactive.txt"
    r = fabricscope("parse", str(path), "--json", "-q", "--host", "h1", "--time", "1764686822")
    assert r.returncode == 0, r.stderr
    warnings = json.loads(r.stdout)["inputs"][0]["warnings"]
    assert any("gpu1: nvidia-smi reports all NVLink links inactive" in w for w in warnings), warnings
    out = tmp_path / "s.parquet"
    assert fabricscope("parse", str(path), "-q", "--host", "h1", "--time", "1764686822", "-o", str(out)).returncode == 0
    attrs = pl.read_parquet(tmp_path / "s.attributes.parquet").filter(pl.col("key") == "nvlink_state")
    assert sorted(attrs["device"].cast(pl.String).to_list()) == ["gpu0", "gpu1"]
    assert set(attrs["value"]) == {"all links inactive"}


def test_ofed1_perfquery_names_are_canonical_and_judged(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "ib/perfquery-ofed1/lid12-port1.txt")
    assert value(df, "lid:12", "symbol_errors") == 7836
    assert value(df, "lid:12", "link_error_recovery_events") == 255
    assert value(df, "lid:12", "port_rcv_errors") == 412
    # XmtData counts 4-octet words: stored x4 with scale 4; the pegged register stays visible
    row = df.filter(pl.col("counter") == "port_xmit_data_bytes")
    assert (row["value_u64"].item(), row["scale"].item()) == (4 * (2**32 - 1), 4)
    assert not df.filter(pl.col("counter").is_in(["SymbolErrors", "XmtData"])).height


def test_dcgm_metadata_labels_are_attributes_and_mig_instances_devices(tmp_path: Path) -> None:
    path = FIX / "prometheus/dcgm-mig-labels.prom"
    r = fabricscope("parse", str(path), "-q", "--time", "1764686822")
    assert r.returncode != 0
    assert "line 8" in r.stderr and "not the text `ERROR - FAILED TO CONVERT TO STRING`" in r.stderr, r.stderr
    df = parsed(tmp_path, path, "--lenient")
    assert value(df, "gpu0", "pcie_tx_bytes_per_s") == 1825361  # despite DCGM_FI_PROCESS_NAME
    assert value(df, "gpu1", "gpu_temperature_celsius") == 56
    mig = df.filter(pl.col("counter") == "DCGM_FI_PROF_GR_ENGINE_ACTIVE").sort("device")
    assert mig["device"].to_list() == ["gpu0/mig1", "gpu0/mig2"]
    assert mig["value_f64"].to_list() == [0.381124, 0.104417]
    attrs = pl.read_parquet(tmp_path / "samples.attributes.parquet").with_columns(
        pl.col("device", "key").cast(pl.String)
    )
    profile = attrs.filter((pl.col("device") == "gpu0/mig1") & (pl.col("key") == "GPU_I_PROFILE"))
    assert profile["value"].to_list() == ["2g.12gb"]
    proc = attrs.filter(pl.col("key") == "DCGM_FI_PROCESS_NAME")
    assert sorted(proc["device"].to_list()) == ["gpu0", "gpu1"]


def test_rdma_statistic_text_wrapped_pretty_and_qp_counters(tmp_path: Path) -> None:
    wrapped = parsed(tmp_path, FIX / "rdma-statistic/stat-show-wrapped-rocep1s0f5.txt")
    pretty = parsed(tmp_path, FIX / "rdma-statistic/stat-show-pretty-rocep1s0f5.txt")
    # one record over four lines and one counter per line read the same 21 counters
    assert wrapped.height == pretty.height == 21
    assert set(wrapped["counter"]) == set(pretty["counter"])
    assert {"np_cnp_sent_packets", "rp_cnp_handled_packets", "duplicate_requests"} <= set(wrapped["counter"])
    assert set(wrapped["device"]) == {"rocep1s0f5"} and set(wrapped["port"]) == {1}
    qp = parsed(tmp_path, FIX / "rdma-statistic/stat-qp-show-mlx5.txt")
    # a QP counter is not the port: its own sub-device; pid and comm are attributes
    assert set(qp["device"]) == {"mlx5_2/counter5"} and qp.height == 18
    attrs = pl.read_parquet(tmp_path / "samples.attributes.parquet").with_columns(pl.col("key").cast(pl.String))
    assert dict(zip(attrs["key"], attrs["value"], strict=True)) == {"pid": "31609", "comm": "client.1"}


def test_rdma_statistic_json_maps_each_drivers_names(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "rdma-statistic/constructed-stat-show-json-two-vendors.json")
    assert value(df, "mlx5_0", "rx_out_of_buffer_packets") == 135
    assert value(df, "mlx5_0", "np_ecn_marked_roce_packets") == 21278189006
    assert value(df, "rocep8s0f0", "rp_cnp_handled_packets") == 4711  # irdma cnpHandled
    assert value(df, "rocep8s0f0", "np_cnp_sent_packets") == 815  # irdma cnpSent
    assert value(df, "rocep8s0f0", "ip4InDiscards") == 3  # no canonical meaning: kept raw


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("link mlx5_0/1 rx_write_requests abc\n", "an unsigned decimal value for `rx_write_requests`, not `abc`"),
        ("link mlx5_0/1 rx_write_requests 18446744073709551616\n", "not `18446744073709551616`"),
        ("link mlx5_0/1 rx_write_requests 1 out_of_buffer\n", "a value after the counter name `out_of_buffer`"),
        ("link mlx5_0 rx_write_requests 1\n", "`link <device>/<port>`"),
        ('[{"ifname":"mlx5_0","port":1,"rx_write_requests":', "an `rdma -j statistic show` JSON array"),
        ('[{"ifname":"mlx5_0","port":1,"rx_write_requests":-5}]', "an unsigned integer for `rx_write_requests`"),
    ],
)
def test_rdma_statistic_hostile_input_names_what_was_expected(tmp_path: Path, text: str, expected: str) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    # The value past 64 bits runs the console script in a process; the others the CLI in this one.
    process = "18446744073709551616" in text
    args = ["--format", "rdma-statistic", "-q", "--host", "h"]
    r = fabricscope("parse", str(bad), *args, "--time", "1764686822", process=process)
    assert r.returncode != 0
    assert expected in r.stderr and "bad.txt" in r.stderr, r.stderr
    # lenient mode counts the bad record and keeps the good ones
    r = fabricscope("parse", str(bad), *args, "--lenient", "--json", "--time", "1", process=process)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inputs"][0]["bad_records"] == 1


def test_rdma_statistic_invalid_utf8_is_a_bad_record(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"link mlx5_0/1 rx_write_requests 7\n\xff\xfe garbage\n")
    out = tmp_path / "s.parquet"
    args = ["--format", "rdma-statistic", "--lenient", "-q", "--host", "h", "--time", "1764686822"]
    r = fabricscope("parse", str(bad), *args, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert pl.read_parquet(out)["value_u64"].to_list() == [7]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GPU 0: Tesla V100 (UUID: GPU-1)\n\t Link 0: Rx0: x KBytes, Tx0: 1 KBytes\n", "`<counter>: <n> KBytes` pairs"),
        ("GPU 0: Tesla V100 (UUID: GPU-1)\n\t Link 0: Rx0: 5 KBytes, Tx0 KBytes\n", "`<counter>: <n> KBytes` pairs"),
    ],
)
def test_nvlink_kbytes_hostile_pairs_are_bad_records(tmp_path: Path, text: str, expected: str) -> None:
    bad = tmp_path / "nvlink.txt"
    bad.write_text(text)
    r = fabricscope("parse", str(bad), "--format", "nvidia-smi-nvlink", "-q", "--host", "h", "--time", "1")
    assert r.returncode != 0 and expected in r.stderr and "line 2" in r.stderr, r.stderr


def test_ethtool_queue_lines_that_are_not_queues_stay_counters(tmp_path: Path) -> None:
    log = tmp_path / "eth0.txt"
    log.write_text(
        "NIC statistics:\n     rx_64_byte_packets: 5\n     [x]: rx_discards: 6\n     [2]: rx_discards: 7\n"
        "     rx_queue_1_bytes: 8\n     tx_3_pkts: 9\n"
    )
    df = parsed(tmp_path, log)
    got = {(d, c): v for d, c, v in df.select("device", "counter", "value_u64").iter_rows()}
    assert got == {
        ("eth0", "rx_64_byte_packets"): 5,  # qede's size bucket, not queue 64
        ("eth0", "[x]: rx_discards"): 6,  # not an index: kept as read
        ("eth0/queue2", "rx_discards"): 7,
        ("eth0/queue1", "rx_bytes"): 8,
        ("eth0/queue3", "tx_pkts"): 9,
    }


def test_ionic_pause_time_per_priority_and_queues(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "ethtool/vendors/enp65s0-ionic-constructed.txt")
    assert value(df, "enp65s0", "rx_pause_duration_us", 3) == 2998711  # rx_pripause_3_1us_count
    assert value(df, "enp65s0", "tx_pause_duration_us", 3) == 4410
    assert value(df, "enp65s0", "rx_pause_duration_us") == 0  # rx_pause_1us_count: 802.3x
    assert value(df, "enp65s0", "prio_rx_packets", 3) == 890112345  # frames_rx_pri_3
    assert value(df, "enp65s0", "rx_pfc_frames") == 48112  # frames_rx_pripause
    assert value(df, "enp65s0", "phy_rx_discards") == 37  # frames_rx_dropped
    assert value(df, "enp65s0", "phy_rx_bytes") == 3712340055121  # octets_rx_all
    assert value(df, "enp65s0/queue0", "rx_dropped") == 3  # rx_0_dropped
    assert value(df, "enp65s0/queue0", "rxq_cq_compl_count") == 1104


def test_qede_totals_discards_and_queues(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "ethtool/vendors/ens2f0-qede-constructed.txt")
    assert value(df, "ens2f0", "rx_pfc_frames") == 3301
    assert value(df, "ens2f0", "phy_rx_discards") == 905  # brb_discards
    assert value(df, "ens2f0", "rx_out_of_buffer_packets") == 14  # no_buff_discards
    assert value(df, "ens2f0", "phy_rx_crc_errors") == 1
    assert value(df, "ens2f0", "rx_64_byte_packets") == 120034  # a size bucket, not queue 64
    assert value(df, "ens2f0/queue0", "rcv_pkts") == 5523101
    assert value(df, "ens2f0/queue0/tc1", "xmit_pkts") == 12
    assert value(df, "ens2f0/queue1/xdp", "xmit_pkts") == 5


def test_i40e_queues_are_sub_devices_and_xon_xoff_are_per_priority(tmp_path: Path) -> None:
    df = parsed(tmp_path, FIX / "ethtool/vendors/eth0-i40e-v2.3.2k-ethq.txt")
    # `rx-3.packets` is queue 3's rx_packets, not a counter named `rx-3.packets`
    assert value(df, "eth0/queue3", "rx_packets") == 36938887991
    assert value(df, "eth0/queue0", "tx_bytes") == 4404820986920
    assert value(df, "eth0/queue17", "tx_packets") == 0
    queues = {d for d in df["device"].unique() if d.startswith("eth0/queue")}
    assert queues == {f"eth0/queue{i}" for i in range(64)}
    assert set(df.filter(pl.col("device") != "eth0")["counter"]) == {"rx_bytes", "rx_packets", "tx_bytes", "tx_packets"}
    assert not df.filter(pl.col("counter").str.contains(r"^(rx|tx)-\d")).height
    # 418 stat lines: 256 on the 64 queues, 162 on the port, under 133 names instead of 418
    assert df.height == 418 and df["counter"].n_unique() == 133
    # port.{rx,tx}_priority_<p>_{xon,xoff}_{rx,tx}: PFC XON/XOFF per priority; port.link_*: 802.3x
    for counter in ("rx_xoff_frames", "rx_xon_frames", "tx_xoff_frames", "tx_xon_frames"):
        per_prio = df.filter((pl.col("counter") == counter) & pl.col("priority").is_not_null())
        assert sorted(per_prio["priority"].to_list()) == list(range(8)), counter
        assert value(df, "eth0", counter, 3) == 0
        assert value(df, "eth0", counter) == 0
    assert value(df, "eth0", "phy_rx_bytes") == 35954341339678  # port.rx_bytes
    assert value(df, "eth0", "netdev_rx_bytes") == 34195001351783  # rx_bytes (the VSI)
    # the earlier layout: `tx-0.tx_packets`, no `_rx`/`_tx` suffix on the priority counters
    older = parsed(tmp_path, FIX / "ethtool/vendors/eth0-i40e-ethq.txt")
    assert value(older, "eth0/queue11", "rx_bytes") == 2974550330599
    assert value(older, "eth0/queue0", "tx_packets") == 27274035294
    assert value(older, "eth0", "rx_xoff_frames", 7) == 0
    assert sorted(older.filter(pl.col("counter") == "tx_xon_frames")["priority"].drop_nulls().to_list()) == list(
        range(8)
    )


def test_rdma_statistic_sessions_behind_prompts_and_mode_lines(tmp_path: Path) -> None:
    # `$rdma statistic ...` (no blank after the prompt) then one counter per line
    mana = FIX / "rdma-statistic/stat-show-mana-prompt-without-blank.txt"
    r = fabricscope("parse", str(mana), "--json", "-q", "--host", "h1", "--time", "1764686822")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)["inputs"][0]
    assert (report["format"], report["rows"], report["bad_records"]) == ("rdma-statistic", 26, 0)
    df = parsed(tmp_path, mana)
    assert set(df["device"]) == {"mana_0"} and set(df["port"]) == {1}
    assert value(df, "mana_0", "requester_timeout") == 45
    assert value(df, "mana_0", "general_hw_error") == 6
    assert value(df, "mana_0", "requester_retries_exceeded") == 5
    assert value(df, "mana_0", "current_rate") == 100000
    # `mode supported` and `mode` lines name optional counters (no values) before and after the
    # record; only the `statistic show` record gives rows, with the optional counters at its end
    session = parsed(tmp_path, FIX / "rdma-statistic/stat-mode-supported-then-show-mlx5.txt")
    assert set(session["device"]) == {"rocep8s0f0"} and session.height == 30
    assert value(session, "rocep8s0f0", "cc_rx_cnp_pkts") == 0
    assert value(session, "rocep8s0f0", "rp_cnp_handled_packets") == 0  # rp_cnp_handled
    assert "optional-counters" not in set(session["counter"])

"""Detectors: for each, a positive case, a near miss that stays silent, and the traps."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.incidents.findings import FINDINGS_SCHEMA

from .test_rates import samples

T0 = dt.datetime(2026, 12, 2, 8, 0, tzinfo=dt.timezone.utc)


def series(counter: str, values: list[int], *, step: int = 10, **entity: object) -> list[tuple]:
    e = {"host": "h1", "device": "mlx5_0", "port": 1, "priority": None, "is_counter": True, **entity}
    return [
        (
            i * step,
            counter,
            v,
            4 if counter.endswith("data_bytes") else 1,
            e["host"],
            e["device"],
            e["port"],
            e["priority"],
            e["is_counter"],
        )
        for i, v in enumerate(values)
    ]


def findings(rows: list[tuple], **kw: object) -> pl.DataFrame:
    f = fabricscope.analyze(samples(rows), **kw)
    assert f.schema == FINDINGS_SCHEMA
    return f


def kinds(f: pl.DataFrame, severity: str | None = None) -> list[str]:
    g = f if severity is None else f.filter(pl.col("severity") == severity)
    return g["kind"].to_list()


# --- link_errors -------------------------------------------------------------------------------


def test_symbol_errors_above_120_per_hour_warn_and_merge_into_one_window() -> None:
    # 2 errors per 10 s = 720/h > 120/h, sustained over 5 intervals: one finding, one window
    f = findings(series("symbol_errors", [100, 102, 104, 106, 108, 110]))
    le = f.filter(pl.col("kind") == "link_errors")
    assert le.height == 1
    row = le.row(0, named=True)
    assert row["severity"] == "warning"
    assert row["metric"] == "symbol_errors"
    assert row["observed"] == pytest.approx(0.2)
    assert row["start"] == T0 and row["end"] == T0 + dt.timedelta(seconds=50)
    ev = json.loads(row["evidence"])
    assert ev["count"] == 10 and ev["rule"] == "link_errors.symbol_errors"
    assert "NVSentinel" in ev["threshold_source"]


def test_symbol_errors_above_10_per_second_are_critical() -> None:
    f = findings(series("symbol_errors", [0, 500, 1000]))
    assert kinds(f, "critical") == ["link_errors"]


def test_symbol_error_near_miss_stays_silent() -> None:
    # one error in 60 s = 60/h < 120/h
    f = findings(series("symbol_errors", [7, 7, 7, 8, 8, 8, 8], step=10))
    assert "link_errors" not in kinds(f)


def test_any_local_link_integrity_error_is_critical() -> None:
    f = findings(series("local_link_integrity_errors", [0, 0, 1]))
    assert kinds(f, "critical") == ["link_errors"]


def test_saturated_error_counter_is_info_only() -> None:
    # a pegged 16-bit symbol_error counter hides how many errors happened: no rate, info anomaly
    f = findings(series("symbol_errors", [65_535, 65_535, 65_535]))
    assert kinds(f) == ["counter_anomaly"]
    assert f["severity"].to_list() == ["info"]
    assert "saturated" in f["message"][0]


def test_reset_error_counter_is_not_an_error_burst() -> None:
    f = findings(series("port_rcv_errors", [9_000, 9_000, 3, 3]))
    assert "link_errors" not in kinds(f)
    assert "counter_anomaly" in kinds(f)


def test_sparse_sampling_gap_still_counts_errors_but_no_rate_spike() -> None:
    rows = [*series("port_rcv_errors", [0, 0, 0, 0]), (600, "port_rcv_errors", 50, 1, "h1", "mlx5_0", 1, None, True)]
    f = findings(rows)
    le = f.filter(pl.col("kind") == "link_errors")
    assert le.height == 1  # 50 errors are still 50 errors
    assert json.loads(le["evidence"][0])["count"] == 50
    assert "gap" in " ".join(f.filter(pl.col("kind") == "counter_anomaly")["message"].to_list())


# --- link_flap ---------------------------------------------------------------------------------


def test_link_downed_increment_is_a_critical_flap() -> None:
    f = findings(series("link_downed_events", [3, 3, 4, 4]))
    flap = f.filter(pl.col("kind") == "link_flap")
    assert flap["severity"].to_list() == ["critical"]
    assert flap["observed"].to_list() == [1.0]


def test_state_bouncing_is_a_flap_but_down_for_maintenance_is_not() -> None:
    bounce = series("port_state_id", [4, 1, 4, 4], is_counter=False)
    maint = series("port_state_id", [1, 1, 1, 1], is_counter=False, device="mlx5_1")
    f = findings(bounce + maint)
    flap = f.filter(pl.col("kind") == "link_flap")
    assert flap["device"].to_list() == ["mlx5_0"]
    assert flap["metric"].to_list() == ["port_state_id"]


# --- link_degraded -----------------------------------------------------------------------------


def _rates_gauges(rates_by_dev: dict[str, int], lanes_by_dev: dict[str, int]) -> list[tuple]:
    rows = []
    for dev, r in rates_by_dev.items():
        rows += series("link_rate_bytes_per_s", [r, r], is_counter=False, device=dev)
        rows += series("link_width_lanes", [lanes_by_dev[dev]] * 2, is_counter=False, device=dev)
    return rows


def test_port_below_majority_is_degraded() -> None:
    rows = _rates_gauges(
        {"mlx5_0": 50_000_000_000, "mlx5_1": 50_000_000_000, "mlx5_2": 50_000_000_000, "mlx5_3": 25_000_000_000},
        {"mlx5_0": 4, "mlx5_1": 4, "mlx5_2": 4, "mlx5_3": 2},
    )
    f = findings(rows)
    d = f.filter(pl.col("kind") == "link_degraded")
    assert d["device"].to_list() == ["mlx5_3"]
    assert d["expected"].to_list() == [50_000_000_000.0]
    assert "width 2X, expected 4X" in d["message"][0]


def test_uniform_ports_are_not_degraded_but_profile_override_judges_them() -> None:
    rows = _rates_gauges({f"mlx5_{i}": 25_000_000_000 for i in range(4)}, {f"mlx5_{i}": 4 for i in range(4)})
    assert "link_degraded" not in kinds(findings(rows))
    forced = findings(rows, profile="ndr400")
    assert kinds(forced).count("link_degraded") == 4


# --- ib_congestion -----------------------------------------------------------------------------


def _wait(ratio: float, n: int = 5) -> list[int]:
    per_interval = int(ratio * 10 * 50e9 * 8 / 64)  # 10 s intervals on a 50 GB/s port
    return [10**10 + i * per_interval for i in range(n)]


def test_xmit_wait_above_10_percent_is_congestion() -> None:
    rows = series("port_xmit_wait_ticks", _wait(0.2)) + series(
        "link_rate_bytes_per_s", [50_000_000_000] * 5, is_counter=False
    )
    f = findings(rows)
    c = f.filter(pl.col("kind") == "ib_congestion").row(0, named=True)
    assert c["severity"] == "warning"
    assert c["observed"] == pytest.approx(0.2, rel=1e-6)
    assert json.loads(c["evidence"])["lost_bytes_per_s"] == pytest.approx(10e9, rel=1e-6)


def test_xmit_wait_states_what_the_port_moved_from_its_most_preferred_byte_counter() -> None:
    # A RoCE port: RDMA bytes (vport, 30 GB/s) and wire bytes (every protocol, 40 GB/s). The
    # transmitted-bytes role ranks the RDMA counter first, so the finding uses it, not an average.
    line = series("link_rate_bytes_per_s", [50_000_000_000] * 5, is_counter=False)
    rdma = series("vport_rdma_tx_unicast_bytes", [i * 300_000_000_000 for i in range(5)])
    wire = series("phy_tx_bytes", [i * 400_000_000_000 for i in range(5)])
    f = findings(series("port_xmit_wait_ticks", _wait(0.2)) + line + rdma + wire)
    e = json.loads(f.filter(pl.col("kind") == "ib_congestion")["evidence"][0])
    assert e["sent_bytes_per_s"] == pytest.approx(30e9)
    f = findings(series("port_xmit_wait_ticks", _wait(0.2)) + line + wire)
    e = json.loads(f.filter(pl.col("kind") == "ib_congestion")["evidence"][0])
    assert e["sent_bytes_per_s"] == pytest.approx(40e9)


def test_xmit_wait_near_miss_and_critical() -> None:
    assert "ib_congestion" not in kinds(findings(series("port_xmit_wait_ticks", _wait(0.08))))
    assert kinds(findings(series("port_xmit_wait_ticks", _wait(0.6))), "critical") == ["ib_congestion"]


def test_saturated_32_bit_xmit_wait_is_anomaly_not_congestion_number() -> None:
    # the node_exporter fixture's mlx4 port_xmit_wait is pegged at 2^32-1
    f = findings(series("port_xmit_wait_ticks", [2**32 - 1, 2**32 - 1, 2**32 - 1]))
    assert kinds(f) == ["counter_anomaly"]


# --- config and the whole pipeline -------------------------------------------------------------


def test_config_file_overrides_thresholds(tmp_path: Path) -> None:
    cfg = tmp_path / "t.toml"
    cfg.write_text("[link_errors.symbol_errors]\nwarning_per_s = 1.0\n")
    rows = series("symbol_errors", [100, 102, 104, 106])
    assert "link_errors" in kinds(findings(rows))
    assert "link_errors" not in kinds(findings(rows, config=cfg))
    bad = tmp_path / "bad.toml"
    bad.write_text("[link_errors.symbol_errorz]\nwarning_per_s = 1.0\n")
    with pytest.raises(ValueError, match="symbol_errorz"):
        findings(rows, config=bad)


def test_sample_traces_findings() -> None:
    f = fabricscope.analyze("sample_traces")
    top = f.filter(pl.col("severity") != "info").select("kind", "host", "device").rows()
    assert ("link_errors", "gpu02", "mlx5_1") in top
    assert ("link_degraded", "gpu04", "mlx5_1") in top
    assert ("ib_congestion", "gpu03", "mlx5_0") in top
    assert ("ib_congestion", "gpu03", "mlx5_1") in top
    # RoCE: roce01/eth2 priority 3 paused 60% then 99.5% without a break (a storm); roce02 loses
    # ~6e-6 of its RoCE packets both ways while its DCQCN loop (ECN marks, CNPs) works
    roce = ["pfc_storm", "pfc_congestion", "ecn_congestion", "packet_loss", "lossy_collapse", "lossless_misconfig"]
    got = f.filter(pl.col("kind").is_in(roce) & pl.col("host").is_in(["roce01", "roce02"]))
    assert got.sort("kind", "metric").select("kind", "severity", "host", "device", "priority").rows() == [
        ("ecn_congestion", "info", "roce02", "mlx5_0", None),
        ("packet_loss", "warning", "roce02", "mlx5_0", None),
        ("packet_loss", "warning", "roce02", "mlx5_0", None),
        ("pfc_congestion", "critical", "roce01", "eth2", 3),
        ("pfc_storm", "critical", "roce01", "eth2", 3),
    ]
    # the sysfs tree's pegged 32-bit port_xmit_wait on gpu02/mlx5_0 is data quality, not a fault
    assert not f.filter(
        (pl.col("host") == "gpu02") & (pl.col("device") == "mlx5_0") & (pl.col("severity") != "info")
    ).height


def test_real_node_exporter_sysfs_fixture_pegged_xmit_wait_single_snapshot(fixtures_dir: Path) -> None:
    # node_exporter's sysfs fixture: mlx4_0 port 1 port_xmit_wait = 4294967295 (2^32-1), one snapshot
    root = fixtures_dir / "sysfs" / "node_exporter" / "sys"
    f = fabricscope.run_analysis(root, time="2026-12-02T00:00:00Z").findings
    sat = f.filter((pl.col("kind") == "counter_anomaly") & (pl.col("metric") == "port_xmit_wait_ticks"))
    assert sat.select("device", "port", "severity").rows() == [("mlx4_0", 1, "info")]
    assert "2^32-1" in sat["message"][0]
    assert f.filter(pl.col("severity") != "info").is_empty()


def test_link_flap_names_the_peer_and_sees_both_ends(samples_dir: Path) -> None:
    links = fabricscope.load(samples_dir / "ib" / "fabric-ibnetdiscover-p.txt").tables["links"]
    # leaf01 port 31 <-> spine01 port 1 both count a link-down: a cable, not one port
    rows = series("link_downed_events", [0, 0, 1], host="fab", device="0x98039b0300bb0001", port=31) + series(
        "link_downed_events", [5, 5, 6], host="fab", device="0x98039b0300aa0001", port=1
    )
    f = fabricscope.run_analysis(samples(rows), tables={"links": links}).findings
    flaps = f.filter(pl.col("kind") == "link_flap").sort("device")
    # one cable, one finding: it names both ends, the other end's observation in its evidence
    assert flaps.height == 1
    ev = json.loads(flaps["evidence"][0])
    assert ev["cable"] == ["ib-leaf01 port 31", "ib-spine01 port 1"]
    assert ev["both_ends"] is True
    assert "saw it too" in flaps["message"][0]
    assert flaps["device"][0] == "0x98039b0300aa0001"
    assert ev["peer"] == {"node_guid": "0x98039b0300bb0001", "port": 31, "name": "MF0;ib-leaf01:MQM9700/U1"}
    assert [(x["device"], x["port"]) for x in ev["also_seen"]] == [("0x98039b0300bb0001", 31)]

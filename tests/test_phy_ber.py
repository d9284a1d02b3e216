"""phy_ber through `fabricscope analyze`: a dying cable is found by its raw BER while symbol errors are still 0."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "mlxlink"


def findings(*args: str) -> dict:
    r = cli_runner.fabricscope("analyze", *args, "--json", "-", cwd=REPO)
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    return json.loads(r.stdout)


def test_dying_cable_found_by_raw_ber_before_any_symbol_error() -> None:
    out = findings(str(FIX / "constructed-ndr-dying-cable-series.txt"))
    by_kind = {(f["kind"], f["metric"]): f for f in out["findings"]}
    wear = by_kind[("link_wearout", "phy_lane_raw_ber_ratio")]
    assert wear["host"] == "gpu-node07" and wear["device"] == "mlx5_0" and wear["port"] == 1
    assert wear["severity"] == "warning" and "wearing out" in wear["message"]
    ev = json.loads(wear["evidence"]) if isinstance(wear["evidence"], str) else wear["evidence"]
    assert ev["lane"] == 3 and ev["fec_limit"] == 2.4e-4 and ev["raw_ber"] == 1e-4
    # no symbol error, no effective error: nothing else saw it
    assert not [f for f in out["findings"] if f["metric"] in ("symbol_errors", "phy_effective_ber_ratio")]
    # the module's own alarm thresholds
    assert by_kind[("transceiver_alarm", "module_temperature_celsius")]["observed"] == 79
    assert by_kind[("transceiver_alarm", "module_rx_power_dbm")]["expected"] == -10.41


def test_rising_raw_ber_is_wearout_before_it_nears_the_limit() -> None:
    # the first three snapshots: raw BER 1e-11 -> 3e-6, lane 3 at 1e-5 (still a decade and more below 2.4e-4)
    out = findings(str(FIX / "constructed-ndr-dying-cable-series.txt"), "--until", "1767232801")
    wear = [f for f in out["findings"] if f["kind"] == "link_wearout"]
    assert len(wear) == 1 and "rose" in wear[0]["message"], out["findings"]
    assert not [f for f in out["findings"] if f["kind"] in ("link_errors", "transceiver_alarm")]


def test_healthy_link_at_1e_15_gives_no_finding() -> None:
    out = findings(str(FIX / "constructed-ndr-healthy.txt"))
    assert out["findings"] == [], out["findings"]


def test_real_outputs_are_healthy() -> None:
    for name in ("bluefield3-mft4.30-m-c.txt", "connectx4-forum-c.txt", "sichek-400g-module-and-counters.txt"):
        out = findings(str(FIX / name), "--host", "h1", "--time", "1764686822")
        assert not [f for f in out["findings"] if f["kind"] in ("link_errors", "link_wearout", "transceiver_alarm")], (
            name,
            out["findings"],
        )


def test_mlxsw_leaf_pause_reaches_the_pfc_counters(tmp_path: Path) -> None:
    stats = tmp_path / "swp1-ethtool.txt"
    stats.write_text(
        "# ethtool -S swp1\nNIC statistics:\n     rx_pause_prio_3: 120\n     rx_pause_duration_prio_3: 5000\n"
        "     tx_pause_prio_3: 7\n     ecn_marked: 42\n     discard_egress_general: 3\n"
    )
    out = tmp_path / "s.parquet"
    r = cli_runner.fabricscope("parse", str(stats), "-q", "--host", "leaf01", "--time", "1", "-o", str(out), cwd=REPO)
    assert r.returncode == 0, r.stderr
    df = pl.read_parquet(out).with_columns(pl.col("counter").cast(pl.String))
    got = {(c, p): v for c, p, v in df.select("counter", "priority", "value_u64").iter_rows()}
    assert got[("rx_pause_frames", 3)] == 120
    assert got[("rx_pause_duration_us", 3)] == 5000
    assert got[("tx_pause_frames", 3)] == 7
    assert got[("tx_ecn_marked_packets", None)] == 42
    assert got[("phy_tx_discards", None)] == 3

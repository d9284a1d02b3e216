"""mlxlink (NVIDIA MFT / mstflint) text and --json: real outputs of several layouts, read through the CLI.

Spot values are read by hand from the fixtures (tests/fixtures/mlxlink/SOURCES.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "mlxlink"


def fabricscope(*args: str, process: bool = True):
    return cli_runner.fabricscope(*args, process=process, cwd=REPO)


def parsed(tmp_path: Path, path: Path, *extra: str) -> tuple[pl.DataFrame, dict]:
    out = tmp_path / "samples.parquet"
    r = fabricscope("parse", str(path), "--json", "--time", "1764686822", "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    df = pl.read_parquet(out).with_columns(pl.col("host", "device", "counter").cast(pl.String))
    return df, json.loads(r.stdout)


def value(df: pl.DataFrame, device: str, counter: str) -> float:
    rows = df.filter((pl.col("device") == device) & (pl.col("counter") == counter))
    assert rows.height == 1, (device, counter, rows)
    u, f = rows["value_u64"].item(), rows["value_f64"].item()
    return float(u if u is not None else f)


def test_bluefield3_mft_4_30_module_and_counters(tmp_path: Path) -> None:
    df, report = parsed(tmp_path, FIX / "bluefield3-mft4.30-m-c.txt")
    inp = report["inputs"][0]
    assert inp["format"] == "mlxlink" and inp["bad_records"] == 0
    # host from the echoed prompt `ubuntu@bluefield-1:...$`, devices from `-d /dev/mst/...`
    assert set(df["host"]) == {"bluefield-1"}
    assert {"mt41692_pciconf0", "mt41692_pciconf0.1"} <= set(df["device"])
    assert value(df, "mt41692_pciconf0", "phy_counters_age_seconds") == pytest.approx(25074.8 * 60)
    assert value(df, "mt41692_pciconf0.1", "phy_counters_age_seconds") == pytest.approx(25075.2 * 60)
    assert value(df, "mt41692_pciconf0", "phy_raw_ber_ratio") == pytest.approx(15e-255)
    assert value(df, "mt41692_pciconf0", "link_downed_events") == 0
    assert value(df, "mt41692_pciconf0", "link_error_recovery_events") == 0
    # four lanes, each its own sub-device
    for lane in range(4):
        assert value(df, f"mt41692_pciconf0/lane{lane}", "phy_lane_raw_errors") == 0
    # a passive copper cable has no DDM: `N/A` temperature/power are no rows
    assert df.filter(pl.col("counter").str.starts_with("module_")).is_empty()
    assert df.filter(pl.col("port") != 1).is_empty()


def test_bluefield3_attributes(tmp_path: Path) -> None:
    out = tmp_path / "s.parquet"
    r = fabricscope("parse", str(FIX / "bluefield3-mft4.30-m-c.txt"), "-q", "--time", "1764686822", "-o", str(out))
    assert r.returncode == 0, r.stderr
    attrs = pl.read_parquet(out.with_name("s.attributes.parquet")).with_columns(pl.col(pl.Categorical).cast(pl.String))
    first = {a["key"]: a["value"] for a in attrs.filter(pl.col("device") == "mt41692_pciconf0").iter_rows(named=True)}
    assert first["fec_mode"] == "Standard RS-FEC - RS(528,514)"
    assert first["link_speed"] == "100G"
    assert first["troubleshooting_recommendation"] == "No issue was observed"
    assert first["mft_version"] == "mft 4.30.1-8"
    assert first["module_serial_number"] == "S2202655321-1"
    assert "troubleshooting_group_opcode" not in first  # N/A


def test_connectx4_forum_layout_old_order_and_collapsed_padding(tmp_path: Path) -> None:
    df, report = parsed(tmp_path, FIX / "connectx4-forum-c.txt", "--host", "h1")
    assert report["inputs"][0]["bad_records"] == 0
    dev = "mt4115_pciconf0"
    assert value(df, dev, "phy_raw_ber_ratio") == pytest.approx(3e-12)
    assert value(df, dev, "phy_effective_errors") == 0
    assert value(df, dev, "phy_counters_age_seconds") == pytest.approx(1715.4 * 60)
    lanes = [value(df, f"{dev}/lane{i}", "phy_lane_raw_errors") for i in range(4)]
    assert lanes == [26711, 0, 0, 9108]
    # this older MFT prints no link down / recovery counters
    assert df.filter(pl.col("counter") == "link_downed_events").is_empty()


def test_connectx4_eye_opening(tmp_path: Path) -> None:
    df, _ = parsed(tmp_path, FIX / "connectx4-forum-e.txt", "--host", "h1")
    heights = [value(df, f"mt4115_pciconf0/lane{i}", "phy_lane_eye_height_millivolts") for i in range(4)]
    assert heights == [48, 53, 57, 37]


def test_sichek_400g_module_thresholds_and_ansi_colours(tmp_path: Path) -> None:
    df, report = parsed(tmp_path, FIX / "sichek-400g-module-and-counters.txt")
    assert report["inputs"][0]["bad_records"] == 0
    assert set(df["host"]) == {"clnet36"}
    d = "mlx5_1"
    assert value(df, d, "module_temperature_celsius") == 54
    assert value(df, d, "module_temperature_low_alarm_celsius") == -5
    assert value(df, d, "module_temperature_high_alarm_celsius") == 75
    assert value(df, d, "module_voltage_millivolts") == pytest.approx(3261.2)
    assert value(df, d, "module_rx_power_low_alarm_dbm") == pytest.approx(-10.41)
    assert value(df, d, "module_tx_power_high_alarm_dbm") == 5
    assert value(df, f"{d}/lane2", "module_rx_power_dbm") == pytest.approx(2.281)
    assert value(df, f"{d}/lane3", "module_tx_power_dbm") == pytest.approx(1.761)
    assert value(df, f"{d}/lane0", "module_tx_bias_milliamps") == pytest.approx(8.38)
    # ANSI-coloured BERs
    assert value(df, d, "phy_raw_ber_ratio") == pytest.approx(2e-9)
    assert value(df, f"{d}/lane2", "phy_lane_raw_errors") == 7692183445


def test_ndr_layout_symbol_errors_and_per_lane_ber(tmp_path: Path) -> None:
    df, report = parsed(tmp_path, FIX / "constructed-ndr-dying-cable-series.txt")
    assert report["inputs"][0]["time_source"] != "mtime"
    last = df.filter(pl.col("time") == pl.col("time").max())
    assert value(last, "mlx5_0", "symbol_errors") == 0
    assert value(last, "mlx5_0", "phy_raw_ber_ratio") == pytest.approx(4e-5)
    assert value(last, "mlx5_0/lane3", "phy_lane_raw_ber_ratio") == pytest.approx(1e-4)
    assert df["time"].n_unique() == 4


def test_json_result_output_shape(tmp_path: Path) -> None:
    df, report = parsed(tmp_path, FIX / "mlx5_0-constructed-json.json", "--host", "h1")
    assert report["inputs"][0]["format"] == "mlxlink-json"
    # the device comes from the file name
    assert value(df, "mlx5_0", "phy_counters_age_seconds") == pytest.approx(25074.8 * 60)
    assert [value(df, f"mlx5_0/lane{i}", "phy_lane_raw_errors") for i in range(4)] == [0, 0, 0, 0]
    assert math.isclose(value(df, "mlx5_0", "phy_effective_ber_ratio"), 15e-255)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Physical Counters and BER Info\n------------------------------\nRaw Physical BER : lots\n", "a number"),
        ("Physical Counters and BER Info\n-----\nRaw Physical Errors Per Lane : 1,x,3\n", "a number"),
        ("Raw Physical BER : 2E-9\n", "inside a titled section"),
        ("Module Info\n-----------\nTemperature [C] : 54 [-5..hot]\n", "a number"),
        ("Module Info\n-----------\n\x01\x02garbage\n", "section title over a line of dashes"),
    ],
)
def test_hostile_input_names_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    args = ["--format", "mlxlink", "-q", "--host", "h", "--time", "1764686822"]
    r = fabricscope("parse", str(bad), *args)
    assert r.returncode != 0
    assert expected in r.stderr and "bad.txt" in r.stderr, r.stderr
    r = fabricscope("parse", str(bad), *args, "--lenient", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inputs"][0]["bad_records"] >= 1


def test_huge_numbers_and_truncated_json_do_not_panic(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text(
        "Physical Counters and BER Info\n------------------------------\n"
        "Raw Physical Errors Per Lane : 99999999999999999999999999,1\nRaw Physical BER : 1E-999\n"
    )
    df, _ = parsed(tmp_path, big, "--format", "mlxlink", "--host", "h")
    assert value(df, "unknown/lane1", "phy_lane_raw_errors") == 1
    assert value(df, "unknown/lane0", "phy_lane_raw_errors") == pytest.approx(1e26)
    trunc = tmp_path / "mlx5_0.json"
    trunc.write_text((FIX / "mlx5_0-constructed-json.json").read_text()[:300])
    r = fabricscope("parse", str(trunc), "--format", "mlxlink-json", "-q", "--host", "h", "--time", "1")
    assert r.returncode != 0 and "mlx5_0.json" in r.stderr, r.stderr
    r = fabricscope(
        "parse", str(trunc), "--format", "mlxlink-json", "--lenient", "--json", "--host", "h", "--time", "1"
    )
    assert r.returncode == 0 and json.loads(r.stdout)["inputs"][0]["bad_records"] == 1

"""``dcgmi dmon -e <fields>`` output: its own format, not Prometheus text, mapped to the counters the
DCGM exporter's ``DCGM_FI_*`` metrics map to. Values read by hand from the fixtures; through the CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl

from . import cli_runner

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "dcgmi-dmon"
T0 = 1_764_686_822


def fabricscope(*args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, process=process)


def parse(tmp_path: Path, path: Path, *extra: str) -> tuple[dict, pl.DataFrame]:
    out = tmp_path / "s.parquet"
    r = fabricscope("parse", str(path), "--json", "--host", "h1", "--time", str(T0), "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    samples = pl.read_parquet(out).with_columns(
        pl.col("device", "counter").cast(pl.String),
        pl.coalesce(pl.col("value_u64").cast(pl.Float64), pl.col("value_f64")).alias("value"),
    )
    return json.loads(r.stdout)["inputs"][0], samples


def test_dcgm_4_4_1_rows_are_samples_one_delay_apart(tmp_path: Path) -> None:
    report, s = parse(tmp_path, FIX / "dcgm-exporter-700-dcgm-4.4.1.txt")
    assert report["format"] == "dcgmi-dmon" and report["bad_records"] == 0
    # three samples of GPU 0, eight numeric fields each (VIUTL is N/A: no sample)
    assert s.height == 24
    assert set(s["device"]) == {"gpu0"}
    assert "VIUTL" not in set(s["counter"])
    # field 230 (XIDER) is the last XID, as DCGM_FI_DEV_XID_ERRORS is
    xider = s.filter(pl.col("counter") == "gpu_last_xid").sort("time")
    assert xider["value"].to_list() == [0.0, 0.0, 0.0]
    # `-d 1000` from the echoed command: one second apart
    secs = [t.timestamp() for t in xider["time"].to_list()]
    assert secs == [T0, T0 + 1, T0 + 2]


def test_field_short_names_map_to_the_exporters_counters(tmp_path: Path) -> None:
    report, s = parse(tmp_path, FIX / "constructed-pcie-nvlink.txt")
    assert report["format"] == "dcgmi-dmon" and report["bad_records"] == 0
    tx = s.filter((pl.col("device") == "gpu0") & (pl.col("counter") == "pcie_tx_bytes_per_s")).sort("time")
    assert tx["value"].to_list() == [864034668.0, 912337920.0]
    assert s.filter((pl.col("device") == "gpu0") & (pl.col("counter") == "nvlink_tx_bytes_per_s")).height == 2
    temp = s.filter(pl.col("counter") == "gpu_temperature_celsius").sort("time")
    assert temp.select("device", "value").rows() == [("gpu0", 34.0), ("gpu1", 36.0), ("gpu0", 35.0)]
    # GPU 1: N/A for the PCIe and NVLink fields, a blank temperature in the second sample
    assert s.filter(pl.col("device") == "gpu1").height == 1


def test_every_value_na_is_nothing_measured(tmp_path: Path) -> None:
    report, s = parse(tmp_path, FIX / "dcgm-244-dcgm-4.2.3-smact-na.txt")
    assert report["format"] == "dcgmi-dmon" and report["bad_records"] == 0
    assert s.height == 0
    r = fabricscope("analyze", str(FIX / "dcgm-244-dcgm-4.2.3-smact-na.txt"), "--host", "h1")
    assert r.returncode == 3  # no value at all: UNKNOWN, and not "cannot detect the format"
    assert "cannot detect" not in r.stderr


def test_hostile_rows(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("#Entity   PCITX        PCIRX\nID\nGPU 0     12           x1\nGPU 0 \x01 1 2\n")
    args = ["--format", "dcgmi-dmon", "--host", "h", "--time", str(T0), "-o", str(tmp_path / "s.parquet")]
    r = fabricscope("parse", str(path), *args)
    assert r.returncode != 0 and "in.txt" in r.stderr and "line 3" in r.stderr, r.stderr
    assert "a number or `N/A` in column `PCIRX`" in r.stderr
    r = fabricscope("parse", str(path), *args, "--lenient", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inputs"][0]["bad_records"] == 2

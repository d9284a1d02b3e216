"""Scale mode of the simulator: N ports x M counters x T readings of /federate text."""

from __future__ import annotations

from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.detect.rates import rates
from fabricscope.doors.cli import main
from fabricscope.simulate.scale import DEVICES_PER_HOST, parse_scale, scale_counters, write_scale


def test_counts_files_and_text(tmp_path: Path) -> None:
    res = write_scale(tmp_path, ports=20, counters=4, readings=7, files=3, interval_s=15.0)
    assert res["samples"] == 20 * 4 * 7
    files = sorted((tmp_path / "prometheus").iterdir())
    assert [f.name for f in files] == [f"federate-scale-00{i}.prom" for i in range(3)]
    assert sum(f.stat().st_size for f in files) == res["bytes"]
    first = files[0].read_text().splitlines()
    assert first[0] == "# TYPE node_infiniband_port_data_transmitted_bytes_total untyped"
    assert first[1].startswith(
        'node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",instance="scale-gpu00000:9100",'
        'job="node",port="1"} '
    )
    assert first[1].endswith(" 1796572800000")
    # One TYPE line per family and scrape, as /federate prints it.
    types = sum(line.startswith("# TYPE") for f in files for line in f.read_text().splitlines())
    assert types == 3 * 4 * 7

    df = fabricscope.read(tmp_path)
    assert df.height == 560
    assert df["host"].n_unique() == 3  # ceil(20 / 8) hosts
    assert df.select("host", "device").unique().height == 20
    assert set(df["counter"].cast(pl.String)) == {c for c, _, _ in scale_counters()[:4]}
    assert df["time"].n_unique() == 7
    assert (df["time"].max() - df["time"].min()).total_seconds() == 90.0


def test_values_are_healthy_counters(tmp_path: Path) -> None:
    write_scale(tmp_path, ports=16, counters=12, readings=20)
    r = rates(fabricscope.read(tmp_path))
    assert not r["reset"].any() and not r["wrapped"].any() and not r["gap"].any()
    data = r.filter(pl.col("counter") == "port_xmit_data_bytes")
    line = 50e9  # NDR 400 Gb/s in bytes/s
    assert data["rate_per_s"].min() >= 0.7 * 0.6 * line * 0.999
    assert data["rate_per_s"].max() <= 1.3 * 0.6 * line
    assert r.filter(pl.col("counter") == "symbol_errors")["delta"].sum() == 0
    assert (r.filter(pl.col("counter") == "port_xmit_data_bytes")["delta"] % 4 == 0).all()
    found = fabricscope.analyze(tmp_path, engine="local")
    assert found.filter(pl.col("severity") != "info").is_empty()


def test_parse_scale() -> None:
    assert parse_scale("8_192x12x1018") == (8192, 12, 1018)
    assert 8192 * 12 * 1018 > 10**8
    for bad in ("8192x12", "0x1x1", "ax1x1", "8x999x1"):
        with pytest.raises(ValueError, match="--scale"):
            parse_scale(bad)
    assert DEVICES_PER_HOST == 8


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path), "--scale", "16x2x3", "--files", "2"]) == 0
    assert "wrote 96 samples" in capsys.readouterr().out
    assert fabricscope.read(tmp_path).height == 96
    assert main(["simulate", str(tmp_path), "--scale", "16x2"]) == 3  # usage error: UNKNOWN


def test_cli_interval_and_scenario_scale_points_to_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 64 hosts x 8 HCAs x 12 counters, 11 scrapes 15 s apart: the dashboard benchmark's shape.
    assert main(["simulate", str(tmp_path), "--scale", "512x12x11", "--interval", "15"]) == 0
    assert "wrote 67,584 samples" in capsys.readouterr().out
    r = rates(fabricscope.read(tmp_path))
    assert not r["reset"].any()
    assert r["interval_s"].min() == pytest.approx(15.0) and r["interval_s"].max() == pytest.approx(15.0)
    assert r.filter(pl.col("counter") == "port_xmit_data_bytes")["rate_per_s"].max() <= 50e9
    assert main(["simulate", str(tmp_path / "old"), "--scenario", "scale"]) == 3
    assert "--scale PORTSxCOUNTERSxREADINGS" in capsys.readouterr().out

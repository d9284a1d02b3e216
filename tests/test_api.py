"""The public Python API on the bundled sample traces and small constructed inputs."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.exceptions import FabricscopeError, FormatError, InputError, UnknownFormatError

T0 = 1_796_200_000  # sample_traces/generate.py


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)


def test_public_api_is_curated() -> None:
    assert set(fabricscope.__all__) >= {"read", "scan", "load", "formats", "counters", "exceptions"}
    assert fabricscope.__version__ == "0.1.0"
    assert fabricscope.SCHEMA_VERSION == 1


def test_samples_schema_and_dtypes(samples_dir: Path) -> None:
    df = fabricscope.read(samples_dir)
    assert df.schema == pl.Schema(
        {
            "time": pl.Datetime("ns", "UTC"),
            "host": pl.Categorical(),
            "device": pl.Categorical(),
            "port": pl.UInt16,
            "priority": pl.UInt8,
            "counter": pl.Categorical(),
            "value_u64": pl.UInt64,
            "value_f64": pl.Float64,
            "scale": pl.UInt32,
            "is_counter": pl.Boolean,
            "source": pl.Categorical(),
        }
    )
    assert set(df["source"].cast(pl.String).unique()) >= {"prometheus", "ethtool", "sysfs", "sysfs-grep"}
    assert set(df["host"].cast(pl.String).unique()) >= {"gpu01", "gpu02", "gpu03", "gpu04", "roce01", "roce02"}


def test_federate_values_hosts_and_timestamps(samples_dir: Path) -> None:
    df = fabricscope.read(samples_dir / "prometheus" / "federate-rail0.prom")
    # 4 hosts x 2 HCAs x 10 metric families x 6 scrapes
    assert df.height == 4 * 2 * 10 * 6
    wait = df.filter(
        (pl.col("counter") == "port_xmit_wait_ticks") & (pl.col("host") == "gpu03") & (pl.col("device") == "mlx5_0")
    ).sort("time")
    assert wait.height == 6
    assert wait["time"][0] == _utc(T0 + 0.017)  # millisecond timestamps kept exactly
    assert (wait["value_u64"].diff().drop_nulls() > 0).all()
    data = df.filter(pl.col("counter") == "port_xmit_data_bytes")
    assert (data["scale"] == 4).all()  # node_exporter already multiplied; the register unit is recorded
    assert data["is_counter"].all()  # federate says "untyped"; the vocabulary knows better
    rate = df.filter(pl.col("counter") == "link_rate_bytes_per_s")
    assert set(rate["value_u64"]) == {50_000_000_000, 25_000_000_000}  # gpu04/mlx5_1 trained at 2X
    assert not rate["is_counter"].any()


def test_ethtool_log_snapshots_priorities(samples_dir: Path) -> None:
    df = fabricscope.read(samples_dir / "ethtool" / "roce01-eth2.log")
    pause = df.filter((pl.col("counter") == "rx_pause_duration_us") & (pl.col("priority") == 3)).sort("time")
    assert pause["time"].to_list() == [_utc(T0 + 10 * i) for i in range(4)]
    assert pause["device"].cast(pl.String).unique().to_list() == ["eth2"]
    assert pause["host"].cast(pl.String).unique().to_list() == ["roce01"]
    assert pause["value_u64"].to_list() == [88_120_554, 88_320_554, 94_320_554, 104_270_554]
    # 802.3x/global and software counters have no priority
    assert df.filter(pl.col("counter") == "netdev_rx_packets")["priority"].null_count() == 4


def test_sysfs_tree_words_times_four_and_saturation_kept(samples_dir: Path) -> None:
    res = fabricscope.load(samples_dir / "sysfs")
    df = res.samples
    x = df.filter((pl.col("counter") == "port_xmit_data_bytes") & (pl.col("device") == "mlx5_0"))
    assert x["value_u64"].to_list() == [61_220_114_550_112 * 4]
    assert x["scale"].to_list() == [4]
    assert x["time"].to_list() == [_utc(T0 + 90)]
    assert x["host"].cast(pl.String).to_list() == ["gpu02"]
    wait = df.filter((pl.col("counter") == "port_xmit_wait_ticks") & (pl.col("device") == "mlx5_0"))
    assert wait["value_u64"].to_list() == [4_294_967_295]
    assert "lifespan" not in df["counter"].cast(pl.String).to_list()
    attrs = res.attributes
    ll = attrs.filter((pl.col("key") == "link_layer") & (pl.col("device") == "mlx5_1"))
    assert ll["value"].to_list() == ["InfiniBand"]
    rate = df.filter((pl.col("counter") == "link_rate_bytes_per_s") & (pl.col("device") == "mlx5_0"))
    assert rate["value_u64"].to_list() == [50_000_000_000]


def test_sysfs_grep_iso_timestamps(samples_dir: Path) -> None:
    df = fabricscope.read(samples_dir / "sysfs-grep")
    oos = df.filter(pl.col("counter") == "out_of_sequence_packets").sort("time")
    assert oos["value_u64"].to_list() == [1_104, 3_314]
    assert oos["time"].to_list() == [_utc(T0), _utc(T0 + 30)]
    assert oos["host"].cast(pl.String).unique().to_list() == ["roce02"]


def test_scan_yields_bounded_frames_that_add_up(samples_dir: Path) -> None:
    whole = fabricscope.read(samples_dir)
    s = fabricscope.scan(samples_dir, batch_rows=100)
    frames = list(s)
    assert all(f.height <= 100 for f in frames)
    assert sum(f.height for f in frames) == whole.height
    assert s.reports is not None and len(s.reports) == len(fabricscope.load(samples_dir).reports)
    assert s.bytes_total > 0


def test_gzip_and_zstd_inputs_read_like_plain(tmp_path: Path, samples_dir: Path) -> None:
    zstd = pytest.importorskip("zstandard")
    raw = (samples_dir / "ethtool" / "roce01-eth2.log").read_bytes()
    (tmp_path / "roce01-eth2.log.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "roce01-eth2.log.zst").write_bytes(zstd.ZstdCompressor().compress(raw))
    plain = fabricscope.read(samples_dir / "ethtool" / "roce01-eth2.log").drop("source")
    for name in ["roce01-eth2.log.gz", "roce01-eth2.log.zst"]:
        got = fabricscope.read(tmp_path / name).drop("source")
        assert got.equals(plain), name


def test_explicit_host_and_time_for_bare_ethtool(tmp_path: Path) -> None:
    p = tmp_path / "eth5.txt"
    p.write_text("NIC statistics:\n     rx_prio3_pause: 7\n     tx_pause_storm_error_events: 1\n")
    df = fabricscope.read(p, host="leaf7", time="2026-12-02T10:00:00Z")
    assert df["host"].cast(pl.String).unique().to_list() == ["leaf7"]
    assert df["time"].unique().to_list() == [dt.datetime(2026, 12, 2, 10, tzinfo=dt.timezone.utc)]
    res = fabricscope.load(p, host="leaf7", time=dt.datetime(2026, 12, 2, 10))
    assert res.reports[0].time_source == "argument"


def test_mtime_fallback_is_reported(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_text("# ethtool -S eth0\nNIC statistics:\n     rx_packets: 5\n")
    res = fabricscope.load(p, host="h")
    assert res.reports[0].time_source == "mtime"
    assert any("mtime" in w for w in res.reports[0].warnings)


def test_unknown_counters_are_kept_raw(tmp_path: Path) -> None:
    p = tmp_path / "x.prom"
    p.write_text('my_vendor_thing_total{device="mlx5_0",port="1",instance="h1:9100"} 42 1796200000000\n')
    df = fabricscope.read(p)
    assert df["counter"].cast(pl.String).to_list() == ["my_vendor_thing_total"]
    assert df["value_u64"].to_list() == [42]


def test_errors_name_file_line_and_expectation(tmp_path: Path) -> None:
    p = tmp_path / "bad.prom"
    p.write_text('# TYPE a counter\na{device="x"} 1\na{device="x" 2\n')
    with pytest.raises(FormatError) as ei:
        fabricscope.read(p)
    e = ei.value
    assert e.path == str(p)
    assert e.line == 3
    assert e.byte_offset == len('# TYPE a counter\na{device="x"} 1\n')
    assert e.expected
    assert isinstance(e, FabricscopeError)


def test_lenient_mode_keeps_good_rows_and_counts_bad(tmp_path: Path) -> None:
    p = tmp_path / "bad.prom"
    p.write_text(
        'a{device="x",instance="h"} 1 1796200000000\na{device="x" 2\na{device="x",instance="h"} 3 1796200001000\n'
    )
    res = fabricscope.load(p, strict=False)
    assert res.samples["value_u64"].to_list() == [1, 3]
    assert res.reports[0].bad_records == 1
    assert "line 2" in res.reports[0].errors[0]


def test_missing_input_and_garbage(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        fabricscope.read(tmp_path / "nope.prom")
    g = tmp_path / "garbage.bin"
    g.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(UnknownFormatError) as ei:
        fabricscope.read(g)
    assert ei.value.path == str(g)


def test_forced_panic_becomes_fabricscope_error() -> None:
    from fabricscope import _native

    with pytest.raises(FabricscopeError, match="internal error"):
        _native._panic_for_test()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        fabricscope.read("sample_traces", format="nonsense")
    with pytest.raises(ValueError, match="ISO 8601"):
        fabricscope.read("sample_traces", time="yesterday-ish")
    with pytest.raises(ValueError, match="no input paths"):
        fabricscope.read([])


def test_counters_and_formats_registry() -> None:
    c = fabricscope.counters()
    row = c.filter(pl.col("name") == "rx_pause_duration_us").row(0, named=True)
    assert row["unit"] == "microseconds"
    assert row["per_priority"] is True
    assert "ethtool:rx_prio{p}_pause_duration" in row["spellings"]
    assert "ethtool:prio{p}_rx_pause_duration" in row["spellings"]
    assert c["name"].n_unique() == c.height
    assert set(fabricscope.formats()["name"]) >= {
        "prometheus",
        "openmetrics",
        "ethtool",
        "sysfs",
        "sysfs-grep",
    }

"""Measured-performance, GPU and CXL readers through ``fabricscope.load``: the side tables
arrive in ``ReadResult.tables`` with the contract dtypes, and NVLink/CXL counters in the samples."""

from __future__ import annotations

from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.exceptions import FormatError

FIX = Path(__file__).resolve().parent / "fixtures"
T0 = 1_764_686_822

UTC_NS = pl.Datetime("ns", "UTC")

NCCL_RESULTS = {
    "host": pl.String,
    "time": UTC_NS,
    "run": pl.UInt32,
    "collective": pl.String,
    "size_bytes": pl.UInt64,
    "count": pl.UInt64,
    "dtype": pl.String,
    "redop": pl.String,
    "root": pl.Int32,
    "placement": pl.String,
    "time_us": pl.Float64,
    "algbw_gb_per_s": pl.Float64,
    "busbw_gb_per_s": pl.Float64,
    "wrong": pl.Int64,
    "n_ranks": pl.UInt32,
    "n_nodes": pl.UInt32,
    "gpus_per_node": pl.UInt32,
    "avg_busbw_gb_per_s": pl.Float64,
}
NCCL_RANKS = {
    "run": pl.UInt32,
    "rank": pl.UInt32,
    "host": pl.String,
    "pid": pl.UInt32,
    "cuda_device": pl.UInt32,
    "bus_id": pl.String,
    "gpu_name": pl.String,
}
PERFTEST = {
    "host": pl.String,
    "time": UTC_NS,
    "run": pl.UInt32,
    "test": pl.String,
    "kind": pl.String,
    "device": pl.String,
    "port": pl.UInt16,
    "link_type": pl.String,
    "mtu_bytes": pl.UInt32,
    "qps": pl.UInt32,
    "duration_mode": pl.Boolean,
    "size_bytes": pl.UInt64,
    "iterations": pl.UInt64,
    **{
        c: pl.Float64
        for c in [
            "bw_peak_gbit_per_s",
            "bw_average_gbit_per_s",
            "msg_rate_mpps",
            "lat_min_us",
            "lat_max_us",
            "lat_typical_us",
            "lat_avg_us",
            "lat_stdev_us",
            "lat_p99_us",
            "lat_p99_9_us",
        ]
    },
}
CXL_DEVICES = {
    "host": pl.String,
    "memdev": pl.String,
    "ram_size_bytes": pl.UInt64,
    "pmem_size_bytes": pl.UInt64,
    "serial": pl.String,
    "pci_host": pl.String,
    "numa_node": pl.Int32,
    "firmware_version": pl.String,
    "media_errors": pl.UInt64,
}


def test_nccl_log_tables_and_contract_dtypes() -> None:
    res = fabricscope.load(FIX / "nccl-tests" / "ztan-all_reduce-16xH100.txt", time=T0)
    assert set(res.tables) == {"nccl_results", "nccl_ranks"}
    results, ranks = res.tables["nccl_results"], res.tables["nccl_ranks"]
    assert dict(results.schema) == NCCL_RESULTS
    assert dict(ranks.schema) == NCCL_RANKS
    big = results.filter((pl.col("size_bytes") == 8_589_934_592) & (pl.col("placement") == "out_of_place")).row(
        0, named=True
    )
    assert (big["collective"], big["busbw_gb_per_s"], big["n_ranks"], big["n_nodes"], big["gpus_per_node"]) == (
        "all_reduce",
        338.82,
        16,
        2,
        8,
    )
    assert ranks["host"].unique().sort().to_list() == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert res.samples.is_empty()


def test_nccl_json_report() -> None:
    res = fabricscope.load(FIX / "nccl-tests" / "constructed-report.json")
    results = res.tables["nccl_results"]
    assert dict(results.schema) == NCCL_RESULTS
    assert results["collective"].unique().to_list() == ["all_gather"]
    assert results["wrong"].to_list() == [0, None, 0]


def test_perftest_table() -> None:
    res = fabricscope.load(
        [FIX / "perftest" / "write_bw_post_list_duration.txt", FIX / "perftest" / "read_lat_rxe_fused.txt"], time=T0
    )
    df = res.tables["perftest_results"]
    assert dict(df.schema) == PERFTEST
    bw = df.filter(pl.col("kind") == "bw").row(0, named=True)
    assert (bw["test"], bw["duration_mode"], bw["bw_peak_gbit_per_s"], bw["bw_average_gbit_per_s"]) == (
        "write_bw",
        True,
        None,
        0.48,
    )
    lat = df.filter(pl.col("kind") == "lat").row(0, named=True)
    assert (lat["lat_stdev_us"], lat["lat_p99_us"]) == (2465.90, 1216.65)


def test_cxl_inventory_and_pmu_counters() -> None:
    res = fabricscope.load(FIX / "cxl" / "cxl-list-memdevs.json", host="cxlhost")
    devices = res.tables["cxl_devices"]
    assert dict(devices.schema) == CXL_DEVICES
    assert devices["ram_size_bytes"].to_list() == [1_073_741_824, 137_438_953_472]
    assert devices["host"].to_list() == ["cxlhost", "cxlhost"]
    samples = fabricscope.read(FIX / "cxl" / "perf-stat-interval.csv", host="cxlhost")
    ticks = samples.filter(pl.col("counter") == "cxl_clock_ticks")
    assert ticks["value_u64"].to_list() == [0, 1_000_250_000, 2_000_250_000]
    assert ticks["device"].unique().to_list() == ["cxl_pmu_mem0.0"]
    vocab = fabricscope.counters()
    assert vocab.filter(pl.col("name") == "cxl_m2s_req_memrd")["layer"].to_list() == ["cxl"]


def test_nvlink_counters_in_samples() -> None:
    df = fabricscope.read(FIX / "nvidia-smi" / "constructed-snapshots.txt")
    tx = df.filter(pl.col("counter") == "nvlink_tx_bytes").sort("time")
    assert tx["value_u64"].to_list() == [1_024_000, 1_025_024_000]
    assert (tx["device"][0], tx["port"][0], tx["host"][0]) == ("gpu0", 0, "dgx07")


def test_formats_lists_the_new_readers() -> None:
    names = set(fabricscope.formats()["name"].to_list())
    assert {"nvidia-smi-nvlink", "nccl-tests", "nccl-tests-json", "perftest", "cxl-list", "perf-stat-cxl"} <= names


def test_bad_rows_raise_or_count(tmp_path: Path) -> None:
    text = (FIX / "nccl-tests" / "ring-8gb-ib.txt").read_text().replace("   53.48   93.58", "   53.4x   93.58")
    p = tmp_path / "ring.log"
    p.write_text(text)
    with pytest.raises(FormatError) as err:
        fabricscope.load(p, time=T0)
    assert err.value.line == 4
    res = fabricscope.load(p, time=T0, strict=False)
    assert res.reports[0].bad_records == 1
    assert res.tables["nccl_results"].height == 8

"""underperformance: perftest, nccl-tests and counters against what the hardware should give.

Frames follow the side-table contract of the readers (``nccl_results``, ``nccl_ranks``,
``perftest_results``: the dtypes tests/test_readers_perf.py checks the readers against); values
are from the real outputs in tests/fixtures/nccl-tests and tests/fixtures/perftest (provenance in
their SOURCES.md) unless a test says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fabricscope
import polars as pl
import pytest
from fabricscope.detect.underperformance import expected_busbw

from .test_bottleneck import counter, nic
from .test_rates import T0, samples
from .test_readers_perf import NCCL_RANKS as RANKS_SCHEMA
from .test_readers_perf import NCCL_RESULTS as NCCL_SCHEMA
from .test_readers_perf import PERFTEST as PERF_SCHEMA

FIX = Path(__file__).resolve().parent / "fixtures"

H100 = "NVIDIA H100 80GB HBM3"
MIB_S_TO_GBIT = 2**20 * 8 / 1e9


def nccl_rows(rows: list[tuple[int, float, float]], *, nodes: int, per_node: int, host: str = "n1") -> pl.DataFrame:
    """(size, out-of-place busbw, in-place busbw) rows of one all_reduce_perf run."""
    recs: list[dict[str, Any]] = []
    for size, oop, ip in rows:
        for placement, bus in (("out_of_place", oop), ("in_place", ip)):
            recs.append(
                {
                    "host": host,
                    "time": T0,
                    "run": 0,
                    "collective": "all_reduce",
                    "size_bytes": size,
                    "count": size // 4,
                    "dtype": "float",
                    "redop": "sum",
                    "root": -1,
                    "placement": placement,
                    "time_us": 1.0,
                    "algbw_gb_per_s": bus / 2,
                    "busbw_gb_per_s": bus,
                    "wrong": 0,
                    "n_ranks": nodes * per_node,
                    "n_nodes": nodes,
                    "gpus_per_node": per_node,
                    "avg_busbw_gb_per_s": None,
                }
            )
    return pl.DataFrame(recs, schema=NCCL_SCHEMA)


def ranks(gpu: str | None, n: int, hosts: tuple[str, ...] = ("n1",)) -> pl.DataFrame:
    per = n // len(hosts)
    return pl.DataFrame(
        [(0, r, hosts[r // per], 6899 + r, r % per, None, gpu) for r in range(n)], schema=RANKS_SCHEMA, orient="row"
    )


def perf_row(test: str, kind: str, size: int, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict.fromkeys(PERF_SCHEMA)
    base.update(
        host="gpu017",
        time=T0,
        run=0,
        test=test,
        kind=kind,
        device="mlx5_0",
        port=1,
        link_type="IB",
        mtu_bytes=4096,
        qps=1,
        duration_mode=False,
        size_bytes=size,
        iterations=5000,
    )
    base.update(kw)
    return base


def perf(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=PERF_SCHEMA)


def analyse(tables: dict[str, pl.DataFrame], rows: list[tuple] | None = None, **kw: Any) -> pl.DataFrame:
    base = rows or counter("symbol_errors", [0.0], host="elsewhere")
    f = fabricscope.run_analysis(samples(base), tables=tables, **kw).findings
    return f.filter(pl.col("kind") == "underperformance")


# --- nccl-tests ---------------------------------------------------------------------------------

# tests/fixtures/nccl-tests/ztan-all_reduce-16xH100.txt: 2 nodes x 8 H100, the three largest sizes
ZTAN = [(2147483648, 318.40, 318.52), (4294967296, 330.58, 330.51), (8589934592, 338.82, 337.35)]


def test_expected_busbw_from_the_topology() -> None:
    bw, layer, basis, assumed = expected_busbw(H100, 1, 8)
    assert (round(bw / 1e9, 2), layer, assumed) == (371.25, "nvlink", False)
    assert "https://github.com/NVIDIA/nccl-tests/issues/212" in basis
    # two nodes with 4 NDR400 NICs each: the network (4 x 47 GB/s) binds before NVLink
    bw, layer, basis, assumed = expected_busbw(H100, 2, 8, nics_per_node=4)
    assert (round(bw / 1e9, 2), layer, assumed) == (188.0, "network", False)
    assert "4 x ndr400" in basis
    # B200: NVLink 5; an H100 PCIe card has no NVSwitch
    assert expected_busbw("NVIDIA B200", 1, 8)[0] == pytest.approx(900e9 * 0.86)
    assert expected_busbw("NVIDIA H100 PCIe", 1, 8)[1] == "pcie"
    assert expected_busbw(None, 1, 8)[3] is True


def test_real_16xh100_run_meets_its_expectation() -> None:
    # 338.82 GB/s of min(NVLink4 371, 8 NICs x 47 = 376): 91%, above the 80% line
    f = analyse({"nccl_results": nccl_rows(ZTAN, nodes=2, per_node=8), "nccl_ranks": ranks(H100, 16, ("a", "b"))})
    assert f.is_empty()


def test_single_node_250_of_450_is_underperformance_on_nvlink() -> None:
    # nccl-tests #212: a single 8xH100 node reaching 250 GB/s busbw
    f = analyse(
        {"nccl_results": nccl_rows([(8589934592, 250.0, 249.0)], nodes=1, per_node=8), "nccl_ranks": ranks(H100, 8)}
    )
    assert f.height == 1
    r = f.row(0, named=True)
    assert (r["severity"], r["layer"], r["metric"], r["host"]) == ("warning", "nvlink", "busbw_gb_per_s", "n1")
    assert r["observed"] == 250.0
    assert r["expected"] == pytest.approx(371.25)
    ev = json.loads(r["evidence"])
    assert ev["ratio"] == pytest.approx(250 / 371.25)
    assert ev["expected_assumed"] is False
    assert ev["placements"] == {"out_of_place": 250.0, "in_place": 249.0}
    assert "nvlink4" in ev["expectation_source"]


def test_multi_node_limited_by_the_nics_read_from_counters() -> None:
    # nccl-tests #252: 95.10 GB/s at 8 GiB; this host shows 4 NDR400 HCAs in the same analysis
    rows: list[tuple] = []
    for d in range(4):
        rows += nic("n1", 0.3, n=2, device=f"mlx5_{d}")
    table = nccl_rows([(536870912, 93.46, 97.09), (8589934592, 95.10, 94.80)], nodes=2, per_node=8)
    f = analyse({"nccl_results": table, "nccl_ranks": ranks(H100, 16, ("n1", "n2"))}, rows)
    r = f.row(0, named=True)
    assert (r["layer"], r["severity"]) == ("network", "warning")
    assert r["expected"] == pytest.approx(188.0)
    assert json.loads(r["evidence"])["ratio"] == pytest.approx(95.10 / 188.0)
    # without the counters one NIC per GPU is assumed: 8 x 47 = 376 > NVLink, so NVLink is the limit
    f = analyse({"nccl_results": table, "nccl_ranks": ranks(H100, 16, ("n1", "n2"))})
    r = f.row(0, named=True)
    assert (r["layer"], r["severity"]) == ("nvlink", "critical")
    assert r["expected"] == pytest.approx(371.25)


def test_small_messages_only_are_not_judged() -> None:
    small = nccl_rows([(1048576, 9.68, 9.49), (16777216, 32.18, 33.06)], nodes=2, per_node=8)
    assert analyse({"nccl_results": small, "nccl_ranks": ranks(H100, 16, ("a", "b"))}).is_empty()


def test_pcie_cards_are_judged_against_pcie() -> None:
    # 8x H100 PCIe without NVSwitch reach 35-45 GB/s (alayanew reference table)
    f = analyse(
        {
            "nccl_results": nccl_rows([(8589934592, 40.0, 40.0)], nodes=1, per_node=8),
            "nccl_ranks": ranks("NVIDIA H100 PCIe", 8),
        }
    )
    assert f.is_empty()


def test_unknown_gpu_assumes_the_configured_nvlink() -> None:
    f = analyse({"nccl_results": nccl_rows([(8589934592, 200.0, 200.0)], nodes=1, per_node=8)})
    ev = json.loads(f["evidence"][0])
    assert ev["expected_assumed"] is True and ev["gpu_name"] is None


# --- perftest -----------------------------------------------------------------------------------


def ndr_port(host: str = "gpu017") -> list[tuple]:
    return [(0, "link_rate_bytes_per_s", 50_000_000_000, 1, host, "mlx5_0", 1, None, False)]


def test_real_ndr_write_bw_passes() -> None:
    # tests/fixtures/perftest/write_bw_sweep_mib.txt: 46688.00 MiB/s at 1 MiB = 391.6 Gb/s of 400
    t = perf(
        [
            perf_row("write_bw", "bw", 65536, bw_average_gbit_per_s=46550.40 * MIB_S_TO_GBIT),
            perf_row("write_bw", "bw", 1048576, bw_average_gbit_per_s=46688.00 * MIB_S_TO_GBIT),
        ]
    )
    assert analyse({"perftest_results": t}, ndr_port()).is_empty()


@pytest.mark.parametrize(("gbps", "severity"), [(361.0, None), (359.0, "warning"), (199.0, "critical")])
def test_write_bw_against_90_percent_of_port_rate(gbps: float, severity: str | None) -> None:
    t = perf([perf_row("write_bw", "bw", 65536, bw_average_gbit_per_s=gbps)])
    f = analyse({"perftest_results": t}, ndr_port())
    if severity is None:
        assert f.is_empty()
        return
    r = f.row(0, named=True)
    assert (r["severity"], r["device"], r["port"], r["layer"]) == (severity, "mlx5_0", 1, "network")
    assert (r["observed"], r["expected"]) == (gbps, 400.0)
    ev = json.loads(r["evidence"])
    assert ev["ratio"] == pytest.approx(gbps / 400)
    assert ev["expectation_source"] == "port rate gauge" and ev["expected_assumed"] is False


def test_bidirectional_doubles_the_expectation_and_ethernet_assumes_roce() -> None:
    t = perf([perf_row("write_bw_bidir", "bw", 65536, bw_average_gbit_per_s=700.0, link_type="Ethernet")])
    r = analyse({"perftest_results": t}).row(0, named=True)
    assert r["expected"] == 800.0
    ev = json.loads(r["evidence"])
    assert ev["expected_assumed"] is True and ev["expectation_source"] == "profile roce400"


def test_duration_mode_message_rate_run_is_not_a_bandwidth_verdict() -> None:
    # tests/fixtures/perftest/write_bw_post_list_duration.txt: 8-byte messages, peak 0.00, 0.48 Gb/s
    t = perf([perf_row("write_bw", "bw", 8, duration_mode=True, bw_average_gbit_per_s=0.48, msg_rate_mpps=7.498617)])
    assert analyse({"perftest_results": t}).is_empty()


def test_latency_limits() -> None:
    # tests/fixtures/perftest/read_lat_rxe_fused.txt: soft-RoCE read, t_typical 692.41 us
    t = perf(
        [
            perf_row("read_lat", "lat", 2, lat_typical_us=692.41, lat_avg_us=928.05, device="rxe0"),
            perf_row("write_lat", "lat", 2, lat_typical_us=1.9, device="mlx5_1"),
            perf_row("send_lat", "lat", 2, lat_typical_us=2.6, device="mlx5_2"),
            perf_row("atomic_lat", "lat", 8, lat_typical_us=9.0, device="mlx5_3"),
        ]
    )
    f = analyse({"perftest_results": t}).sort("device")
    assert f.select("device", "observed", "expected").rows() == [("mlx5_2", 2.6, 2.5), ("rxe0", 692.41, 4.5)]


# --- counters -----------------------------------------------------------------------------------


def test_busy_but_slow_port() -> None:
    # sending 30% of line rate while waiting for credits 65% of the time: busy 95%, slow
    f = analyse({}, nic("h1", 0.30, wait_ratio=0.65))
    r = f.row(0, named=True)
    assert (r["device"], r["port"], r["metric"], r["severity"]) == ("mlx5_0", 1, "tx_bytes_per_s", "info")
    assert r["observed"] == pytest.approx(0.30 * 50e9)
    assert r["expected"] == 50e9
    ev = json.loads(r["evidence"])
    assert ev["busy_ratio"] == pytest.approx(0.95)
    assert ev["ratio"] == pytest.approx(0.30)


@pytest.mark.parametrize(("tx", "wait"), [(0.60, 0.35), (0.30, 0.40)])
def test_busy_but_slow_near_misses(tx: float, wait: float) -> None:
    # fast enough (60% sent), or not busy enough (70%)
    assert analyse({}, nic("h1", tx, wait_ratio=wait)).is_empty()


def _needs_readers() -> None:
    res = fabricscope.load(FIX / "perftest" / "read_lat_rxe_fused.txt", strict=False)
    assert "perftest_results" in res.tables


def test_real_nccl_fixtures_meet_expectations() -> None:
    _needs_readers()
    a = fabricscope.run_analysis(FIX / "nccl-tests", strict=False)
    res = a.tables["nccl_results"]
    assert res.filter(pl.col("host") == "ztan-mig-235z")["busbw_gb_per_s"].max() == 338.82
    # 16xH100 at 91% of 371 GB/s, 2xH100 all_gather at 83%, the 10x8 all-to-all at 98% of its NIC
    # share; the log without rank lines and the single-GPU run are not judged. The 2-node EFA logs
    # (3.12 GB/s) name no NIC: judged against an assumed NDR400 NIC, so a warning that says so. The
    # Spectrum-X log's two 2x8 runs (P2P and SHM disabled, ~35 GB/s) name their GPUs "NVIDIA Graphics
    # Device", which no profile matches: judged against an assumed H100 NVLink domain, so warnings too.
    f = a.findings.filter(pl.col("kind") == "underperformance").sort("host", "observed")
    assert f.select("host", "metric", "observed", "expected", "severity").rows() == [
        ("R6KD-CX8aaS-GPU-14", "busbw_gb_per_s", 34.73, 371.25, "warning"),
        ("R6KD-CX8aaS-GPU-14", "busbw_gb_per_s", 35.08, 371.25, "warning"),
        ("test-nccl-efa-worker-0", "busbw_gb_per_s", 3.12, 47.0, "warning"),
    ]
    msgs = f["message"].to_list()
    assert "assumed an nvlink4 NVLink domain: its GPU model 'NVIDIA Graphics Device' matches no profile" in msgs[0]
    assert "assumed ndr400" in msgs[2]


def test_real_perftest_fixtures() -> None:
    _needs_readers()
    a = fabricscope.run_analysis(FIX / "perftest", strict=False)
    f = a.findings.filter(pl.col("kind") == "underperformance")
    # the NDR sweep passes (391.6 of 400 Gb/s), the 8-byte duration run is not a bandwidth verdict,
    # the soft-RoCE read latency fails the 4.5 us limit, and the ConnectX-3 write (4508.79 MiB/s)
    # is judged against the FDR 56 Gb/s its mlx4 device supports, a warning since no rate was read
    rows = sorted(f.select("device", "metric", "observed", "expected", "severity").rows())
    assert rows == [
        ("mlx4_0", "bw_average_gbit_per_s", pytest.approx(4508.79 * 2**20 * 8 / 1e9), 56.0, "warning"),
        # the deepops RoCE transcript and the server/client transcript: 92.4 Gb/s against an assumed
        # 400 Gb/s RoCE port (no rate in the input), so a warning, never critical
        ("mlx5_0", "bw_average_gbit_per_s", 92.4, 400.0, "warning"),
        ("mlx5_0", "bw_average_gbit_per_s", 92.4, 400.0, "warning"),
        ("rxe0", "lat_typical_us", 692.41, 4.5, "warning"),
    ]


def test_nulls_and_empty_tables_are_skipped_not_fatal() -> None:
    # no rank lines (n_nodes/gpus_per_node null, as nccl-tests #252's quoted table), N/A busbw,
    # perftest rows without device, port, size-dependent values
    nccl = nccl_rows([(8589934592, 95.10, 94.80)], nodes=2, per_node=8).with_columns(
        pl.lit(None, pl.UInt32).alias("n_nodes"), pl.lit(None, pl.UInt32).alias("gpus_per_node")
    )
    na = nccl_rows([(8589934592, 1.0, 1.0)], nodes=1, per_node=8).with_columns(
        pl.lit(None, pl.Float64).alias("busbw_gb_per_s")
    )
    pt = perf(
        [
            perf_row("write_bw", "bw", 65536, device=None, port=None, link_type=None),
            perf_row("read_lat", "lat", 2, device=None, port=None),
        ]
    )
    tables = {
        "nccl_results": pl.concat([nccl, na]),
        "nccl_ranks": pl.DataFrame(schema=RANKS_SCHEMA),
        "perftest_results": pt,
    }
    assert analyse(tables).is_empty()
    empty = {k: pl.DataFrame(schema=v.schema) for k, v in tables.items()}
    assert analyse(empty).is_empty()

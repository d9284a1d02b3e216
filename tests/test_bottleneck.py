"""bottleneck: layer utilisation per host and window, the layer that saturates first, verdicts."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.detect.bottleneck import LAYERS_SCHEMA
from fabricscope.detect.config import load_config

from .test_rates import T0, samples

REPO = Path(__file__).resolve().parent.parent
SCEN = REPO / "sample_traces" / "scenarios"
NDR = 50_000_000_000
NVL4 = 450e9


def gauge(
    counter: str, values: list[float], *, host: str = "h1", device: str = "gpu0", step: int = 10, first: int = 0
) -> list[tuple]:
    return [(first + i * step, counter, float(v), 1, host, device, None, None, False) for i, v in enumerate(values)]


def counter(
    name: str, per_s: list[float], *, host: str = "h1", device: str = "mlx5_0", port: int | None = 1, step: int = 10
) -> list[tuple]:
    """A cumulative counter rising by per_s[i] * step in interval i (from a large offset)."""
    v, out = 10**12, []
    for i in range(len(per_s) + 1):
        out.append((i * step, name, v, 4 if name.endswith("data_bytes") else 1, host, device, port, None, True))
        if i < len(per_s):
            v += round(per_s[i] * step)
    return out


def nic(host: str, tx_ratio: float, n: int = 6, wait_ratio: float = 0.0, device: str = "mlx5_0") -> list[tuple]:
    rows = counter("port_xmit_data_bytes", [tx_ratio * NDR] * n, host=host, device=device)
    rows += counter("port_rcv_data_bytes", [0.5 * tx_ratio * NDR] * n, host=host, device=device)
    # PortXmitWait ticks of 64 bit times (ibdiagnet): wait_ratio of the time
    rows += counter("port_xmit_wait_ticks", [wait_ratio * NDR * 8 / 64] * n, host=host, device=device)
    rows += [(i * 10, "link_rate_bytes_per_s", NDR, 1, host, device, 1, None, False) for i in range(n + 1)]
    return rows


def gpus(host: str, counter_name: str, ratio: float, cap: float, n: int = 6, count: int = 8) -> list[tuple]:
    rows = []
    for g in range(count):
        # DCGM PROF gauges average the interval before each reading: 10..60 s fill the first window
        rows += gauge(counter_name, [ratio * cap] * n, host=host, device=f"gpu{g}", first=10)
    return rows


def run(rows: list[tuple], **kw: object) -> fabricscope.Analysis:
    return fabricscope.run_analysis(samples(rows), **kw)


def mine(a: fabricscope.Analysis) -> pl.DataFrame:
    return a.findings.filter(pl.col("kind") == "bottleneck")


def test_empty_when_no_layer_is_measured() -> None:
    a = run(counter("symbol_errors", [0.0, 0.0]))
    assert a.views["layers"].is_empty()
    assert a.views["layers"].schema == LAYERS_SCHEMA
    assert mine(a).is_empty()


def test_nvlink_saturated_node_is_a_warning_on_nvlink() -> None:
    rows = gpus("h1", "nvlink_tx_bytes_per_s", 0.97, NVL4) + nic("h1", 0.10)
    rows += gpus("h2", "nvlink_tx_bytes_per_s", 0.35, NVL4) + nic("h2", 0.10, device="mlx5_0")
    a = run(rows)
    assert a.views["layers"].schema == LAYERS_SCHEMA
    h1 = a.views["layers"].filter(pl.col("host") == "h1").sort("layer")
    # 60 s windows: readings at 10..60 s close the first window
    assert h1["layer"].to_list() == ["network", "nvlink"]
    nv = h1.filter(pl.col("layer") == "nvlink").row(0, named=True)
    assert nv["utilisation_ratio"] == pytest.approx(0.97)
    assert nv["capacity_bytes_per_s"] == NVL4
    assert nv["throughput_bytes_per_s"] == pytest.approx(0.97 * NVL4)
    assert nv["metric"] == "nvlink_tx_bytes_per_s"
    assert nv["window_end"] - nv["window_start"] == dt.timedelta(seconds=60)
    f = mine(a)
    warn = f.filter(pl.col("severity") == "warning")
    assert warn["host"].to_list() == ["h1"]
    w = warn.row(0, named=True)
    assert w["layer"] == "nvlink" and w["observed"] == pytest.approx(0.97) and w["expected"] == 0.9
    ev = json.loads(w["evidence"])
    assert ev["measured_bytes_per_s"] == pytest.approx(0.97 * NVL4)
    assert ev["expected_bytes_per_s"] == NVL4
    assert ev["other_layers_ratio"]["network"] == pytest.approx(0.10)
    assert "nvlink4" in ev["expectation_source"]
    # the other node gets an info verdict only
    info = f.filter(pl.col("host") == "h2").row(0, named=True)
    assert info["severity"] == "info" and info["layer"] == "nvlink"
    assert info["observed"] == pytest.approx(0.35)
    assert "not communication-bound" in info["message"]


def test_reading_on_a_window_boundary_closes_the_earlier_window() -> None:
    # readings at 0, 10, ..., 120 s: the 60 s reading belongs to [0, 60), the 120 s one to [60, 120)
    a = run(gauge("nvlink_tx_bytes_per_s", [0.1 * NVL4] * 7 + [0.9 * NVL4] * 6))
    lay = a.views["layers"].sort("window_start")
    assert lay["window_start"].to_list() == [T0 - dt.timedelta(seconds=60), T0, T0 + dt.timedelta(seconds=60)]
    assert lay["utilisation_ratio"].to_list() == pytest.approx([0.1, 0.1, 0.9])


def test_network_saturated_with_credit_waits_counted_as_busy_time() -> None:
    # 92% of line rate plus 5% of the time waiting for credits: 97% busy, saturated
    a = run(nic("h1", 0.92, wait_ratio=0.05) + gpus("h1", "nvlink_tx_bytes_per_s", 0.3, NVL4))
    net = a.views["layers"].filter(pl.col("layer") == "network").row(0, named=True)
    assert net["utilisation_ratio"] == pytest.approx(0.97)
    assert net["throughput_bytes_per_s"] == pytest.approx(0.92 * NDR)
    assert net["metric"] == "port_xmit_data_bytes+port_xmit_wait_ticks"
    w = mine(a).filter(pl.col("severity") == "warning").row(0, named=True)
    assert (w["layer"], w["device"], w["port"]) == ("network", "mlx5_0", 1)
    assert w["observed"] == pytest.approx(0.92)
    ev = json.loads(w["evidence"])
    assert ev["expectation_source"] == "port rate gauge"
    assert ev["utilisation_ratio"] == pytest.approx(0.97)
    assert ev["other_layers_ratio"] == {"nvlink": pytest.approx(0.3)}


def test_a_congested_port_is_busy_but_not_saturated() -> None:
    # 60% sent, 35% waiting for credits: 95% busy, but the stall is congestion (ib_congestion's finding)
    a = run(nic("h1", 0.60, wait_ratio=0.35))
    assert a.views["layers"]["utilisation_ratio"][0] == pytest.approx(0.95)
    f = mine(a)
    assert f["severity"].to_list() == ["info"]
    assert a.findings.filter(pl.col("kind") == "ib_congestion")["severity"].to_list() == ["warning"]


def test_near_miss_88_percent_is_not_saturated() -> None:
    a = run(nic("h1", 0.88))
    f = mine(a)
    assert f["severity"].to_list() == ["info"]
    assert "communication-bound" in f["message"][0] and "not" not in f["message"][0]


def test_roce_received_pause_counts_as_stall() -> None:
    rows = counter("phy_tx_bytes", [0.5 * NDR] * 6, device="eth2", port=None)
    rows += counter("rx_pause_duration_us", [0.4e6] * 6, device="eth2", port=None)
    rows = [(*r[:7], 3 if r[1] == "rx_pause_duration_us" else None, r[8]) for r in rows]
    a = run(rows, profile="roce400")
    net = a.views["layers"].row(0, named=True)
    assert net["utilisation_ratio"] == pytest.approx(0.9)
    assert net["metric"] == "phy_tx_bytes+rx_pause_duration_us"
    assert net["capacity_bytes_per_s"] == NDR


def test_nvidia_smi_link_counters_and_link_speeds() -> None:
    # 18 links at 26.562 GB/s (nvidia-smi nvlink -s on H100) each moving 20 GB/s
    rows = []
    for link in range(18):
        rows += counter("nvlink_tx_bytes", [20e9] * 6, device="gpu0", port=link)
    attrs = pl.DataFrame(
        [(T0, "h1", "gpu0", link, "nvlink_speed_gb_per_s", "26.562", "nvidia-smi") for link in range(18)],
        schema={
            "time": pl.Datetime("ns", "UTC"),
            "host": pl.Categorical(),
            "device": pl.Categorical(),
            "port": pl.UInt16,
            "key": pl.Categorical(),
            "value": pl.String,
            "source": pl.Categorical(),
        },
        orient="row",
    )
    a = run(rows, attributes=attrs)
    nv = a.views["layers"].row(0, named=True)
    assert nv["capacity_bytes_per_s"] == pytest.approx(18 * 26.562e9)
    assert nv["throughput_bytes_per_s"] == pytest.approx(18 * 20e9)
    assert nv["utilisation_ratio"] == pytest.approx(20 / 26.562)
    assert nv["metric"] == "nvlink_tx_bytes"


def test_pcie_capacity_follows_the_configured_profile() -> None:
    rows = gpus("h1", "pcie_rx_bytes_per_s", 0.46, 63e9, count=2)
    assert run(rows).views["layers"]["utilisation_ratio"][0] == pytest.approx(0.46)
    assert mine(run(rows))["severity"].to_list() == ["info"]
    cfg = load_config()
    cfg["bottleneck"]["pcie_profile"] = "pcie4x16"
    lay = run(rows, config=cfg).views["layers"].row(0, named=True)
    assert lay["capacity_bytes_per_s"] == 31.5e9
    assert lay["utilisation_ratio"] == pytest.approx(0.92)
    assert mine(run(rows, config=cfg)).select("severity", "layer").rows() == [("warning", "pcie")]


def test_cxl_data_messages_are_64_byte_lines() -> None:
    # 300 M MemData/s returned to the host = 19.2 GB/s of a 31.5 GB/s Gen5 x8 expander
    rows = counter("cxl_s2m_drs_memdata", [300e6] * 6, device="cxl_pmu_mem0.0", port=None)
    rows += counter("cxl_m2s_rwd_memwr", [100e6] * 6, device="cxl_pmu_mem0.0", port=None)
    lay = run(rows).views["layers"].row(0, named=True)
    assert lay["layer"] == "cxl"
    assert lay["throughput_bytes_per_s"] == pytest.approx(19.2e9)
    assert lay["utilisation_ratio"] == pytest.approx(19.2e9 / 31.5e9)
    assert lay["metric"] == "cxl_s2m_drs_memdata"


def test_only_the_first_layer_to_saturate_is_named() -> None:
    # both saturated: NVLink at 97% before the network at 92%
    rows = gpus("h1", "nvlink_tx_bytes_per_s", 0.97, NVL4) + nic("h1", 0.92)
    f = mine(run(rows))
    assert f.select("severity", "layer").rows() == [("warning", "nvlink")]
    assert "network 92%" in f["message"][0]


@pytest.mark.parametrize(
    ("scenario", "layer"),
    [("nvlink-bound", "nvlink"), ("network-bound", "network"), ("nvlink-saturated", "nvlink")],
)
def test_scenarios_with_a_known_bottleneck(scenario: str, layer: str) -> None:
    a = fabricscope.run_analysis(SCEN / scenario)
    truth = json.loads((SCEN / scenario / "truth.json").read_text())
    want = {e["host"] for e in truth["expected"] if e["kind"] == "bottleneck"}
    warn = mine(a).filter(pl.col("severity") == "warning")
    assert set(warn["host"]) == want
    assert set(warn["layer"]) == {layer}
    # every warned window is communication-bound and names the saturated share
    assert all(json.loads(e)["communication_bound"] for e in warn["evidence"])
    assert (warn["observed"] >= 0.9).all()


def test_balanced_scenario_gets_info_verdicts_with_every_layer() -> None:
    a = fabricscope.run_analysis(SCEN / "balanced")
    f = mine(a)
    assert set(f["severity"]) == {"info"}
    assert f.height == 3
    for ev in f["evidence"]:
        layers = json.loads(ev)["layers_ratio"]
        assert set(layers) == {"network", "nvlink", "pcie"}
        assert all(0.15 < u < 0.6 for u in layers.values())
        assert not json.loads(ev)["communication_bound"]
    # the layers frame has every layer for every host and window
    assert a.views["layers"].group_by("host").agg(pl.col("layer").n_unique())["layer"].to_list() == [3, 3, 3]


def test_real_nvidia_smi_snapshots() -> None:
    # tests/fixtures/nvidia-smi/constructed-snapshots.txt: link 0 Data Rx 2000 -> 2002000 KiB in 10 s,
    # link 2 listed at 26.562 GB/s by `nvlink -s`
    fix = Path(__file__).resolve().parent / "fixtures" / "nvidia-smi" / "constructed-snapshots.txt"
    a = fabricscope.run_analysis(fix, strict=False)
    lay = a.views["layers"].row(0, named=True)
    assert (lay["host"], lay["layer"], lay["metric"]) == ("dgx07", "nvlink", "nvlink_rx_bytes")
    assert lay["throughput_bytes_per_s"] == pytest.approx(2_000_000 * 1024 / 10)
    assert lay["capacity_bytes_per_s"] == pytest.approx(26.562e9)


def test_windows_end_where_the_hosts_data_ends() -> None:
    # nvlink-saturated's data ends at 16:04:00; its last 60 s bin starts at 16:04:00 and must not
    # claim the minute after it (the window used to read 16:01 .. 16:05).
    a = fabricscope.run_analysis(SCEN / "nvlink-saturated")
    last = dt.datetime(2026, 12, 4, 16, 4, tzinfo=dt.timezone.utc)
    second = dt.timedelta(seconds=1)  # scrapes land a few ms after the 10 s grid
    assert last <= a.views["layers"]["window_end"].max() < last + second
    warn = a.findings.filter((pl.col("kind") == "bottleneck") & (pl.col("severity") == "warning")).row(0, named=True)
    assert (warn["host"], warn["layer"]) == ("nvlink-gpu03", "nvlink")
    assert last <= warn["end"] < last + second

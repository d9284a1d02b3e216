"""Prometheus exporters' real metric names and labels, through the ``fabricscope`` command line.

node_exporter's InfiniBand names are checked against the list derived from its collector source;
node_exporter's netdev/netclass names against the canonical ``netdev_*`` counters; a ``curl`` of
node_exporter takes its host from ``node_uname_info``; dcgm-exporter scraped by Prometheus on
Kubernetes keeps the workload's ``exported_*`` labels as attributes and the GPU's machine as host.
Fixtures and their provenance: ``tests/fixtures/prometheus/SOURCES.md``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "prometheus"
TIME = "1764686822"

# Names node_exporter prints that are not counters: the `*_info` series (the reader keeps its
# labels as device attributes) and the hw_counters cache lifetime in whole seconds (10 ms on mlx5,
# printed as 0; the sysfs reader keeps the same file as an attribute, not a counter).
NOT_COUNTERS = {"node_infiniband_info", "node_infiniband_lifespan_seconds"}


def fabricscope(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, cwd=REPO)


def parsed(tmp_path: Path, *args: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Samples and attributes of ``fabricscope parse ARGS`` (strings, not categoricals)."""
    run = tmp_path / f"parse{len(list(tmp_path.iterdir()))}"
    run.mkdir()
    out = run / "samples.parquet"
    r = fabricscope("parse", *args, "-q", "--time", TIME, "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    strings = pl.col("host", "device", "counter")
    samples = pl.read_parquet(out).with_columns(strings.cast(pl.String))
    attrs_path = run / "samples.attributes.parquet"
    if not attrs_path.exists():  # written only when the input had attributes
        return samples, pl.DataFrame(schema={"host": pl.String, "device": pl.String, "key": pl.String})
    attrs = pl.read_parquet(attrs_path).with_columns(pl.col("host", "device", "key").cast(pl.String))
    return samples, attrs


def prometheus_spellings() -> dict[str, str]:
    """Every ``prometheus:`` spelling of the vocabulary, as ``fabricscope counters`` prints it."""
    r = fabricscope("counters", "--json")
    assert r.returncode == 0, r.stderr
    out = {}
    for c in json.loads(r.stdout):
        for s in c["spellings"]:
            namespace, _, raw = s.partition(":")
            if namespace == "prometheus":
                out[raw] = c["name"]
    return out


def test_vocabulary_maps_exactly_the_infiniband_names_node_exporter_prints() -> None:
    printed = set((FIX / "node_exporter-infiniband-metric-names.txt").read_text().split())
    assert len(printed) == 64
    mapped = {raw: c for raw, c in prometheus_spellings().items() if raw.startswith("node_infiniband_")}
    assert sorted(printed - NOT_COUNTERS - set(mapped)) == []
    # no other exporter prints node_infiniband_*: every mapped name is one node_exporter prints
    assert sorted(set(mapped) - printed) == []
    assert printed >= NOT_COUNTERS
    # the names that used to be misspelt, and the newer ones
    assert mapped["node_infiniband_out_of_buffer_drops_total"] == "rx_out_of_buffer_packets"
    assert mapped["node_infiniband_req_cqes_errors_total"] == "req_cqe_errors"
    assert mapped["node_infiniband_resp_cqes_errors_total"] == "resp_cqe_errors"
    assert mapped["node_infiniband_port_receive_switch_relay_errors_total"] == "port_rcv_switch_relay_errors"
    assert mapped["node_infiniband_port_discards_received_total"] == "port_rcv_discards"
    assert mapped["node_infiniband_rx_write_requests_total"] == "rx_write_requests"
    assert mapped["node_infiniband_rx_read_requests_total"] == "rx_read_requests"
    assert mapped["node_infiniband_rx_atomic_requests_total"] == "rx_atomic_requests"
    # the main RoCE receive-drop counter carries the loss role the detectors read
    r = fabricscope("counters", "--role", "rx_loss", "--json")
    assert r.returncode == 0, r.stderr
    assert "rx_out_of_buffer_packets" in {c["name"] for c in json.loads(r.stdout)}


def test_node_network_names_are_the_netdev_counters_of_the_sysfs_reader() -> None:
    spellings = prometheus_spellings()
    expected = {
        "node_network_receive_bytes_total": "netdev_rx_bytes",
        "node_network_transmit_bytes_total": "netdev_tx_bytes",
        "node_network_receive_packets_total": "netdev_rx_packets",
        "node_network_transmit_packets_total": "netdev_tx_packets",
        "node_network_receive_errs_total": "netdev_rx_errors",
        "node_network_transmit_errs_total": "netdev_tx_errors",
        "node_network_receive_drop_total": "netdev_rx_dropped",
        "node_network_transmit_drop_total": "netdev_tx_dropped",
        "node_network_carrier_changes_total": "netdev_carrier_changes",
        "node_network_speed_bytes": "link_rate_bytes_per_s",
    }
    assert {raw: spellings.get(raw) for raw in expected} == expected


def test_node_exporter_hw_counters_read_with_their_canonical_names(tmp_path: Path) -> None:
    samples, attrs = parsed(tmp_path, str(FIX / "node_exporter-mlx5-hw-counters.prom"), "--host", "roce01")
    value = dict(zip(samples["counter"], samples["value_u64"], strict=True))
    # spot values, as in the fixture (procfs's mlx5_0 port 1 hw_counters and counters files)
    assert value["rx_out_of_buffer_packets"] == 0
    assert value["req_cqe_errors"] == 3481
    assert value["resp_cqe_errors"] == 8109
    assert value["req_cqe_flush_errors"] == 80
    assert value["resp_cqe_flush_errors"] == 4708
    assert value["rx_read_requests"] == 175_528_982  # written 1.75528982e+08
    assert value["rx_write_requests"] == 742_114
    assert value["roce_adp_retrans_events"] == 99
    assert value["roce_adp_retrans_to_events"] == 4
    assert value["roce_slow_restart_cnp_packets"] == 131
    assert value["local_ack_timeout_errors"] == 131
    assert value["duplicate_requests"] == 41
    assert value["port_rcv_switch_relay_errors"] == 0
    assert value["port_rcv_packets"] == 541_889_824
    assert value["port_rcv_data_bytes"] == 72_505_381_512  # node_exporter multiplied by 4 already
    # the cache lifetime stays under its own name: no canonical counter
    assert value["node_infiniband_lifespan_seconds"] == 0
    assert not [c for c in samples["counter"] if c.startswith("node_infiniband_") and "lifespan" not in c]
    assert set(samples["host"]) == {"roce01"} and set(samples["device"]) == {"mlx5_0"}
    info = dict(zip(attrs["key"], attrs["value"], strict=True))
    assert info == {"board_id": "SM_2001000001034", "firmware_version": "14.28.2006", "hca_type": "MT4118"}


def test_an_out_of_buffer_drops_increase_is_a_packet_loss_finding(tmp_path: Path) -> None:
    # Two scrapes of one port 60 s apart (`while :; do date +%s; curl ...; sleep 60; done`): the
    # fixture, then the same exposition with 5,000 more receive drops and 1,000,000 more packets.
    first = (FIX / "node_exporter-mlx5-hw-counters.prom").read_text()
    drops = 'node_infiniband_out_of_buffer_drops_total{device="mlx5_0",port="1"} '
    packets = 'node_infiniband_port_packets_received_total{device="mlx5_0",port="1"} '
    assert drops + "0\n" in first and packets + "5.41889824e+08\n" in first
    second = first.replace(drops + "0\n", drops + "5000\n").replace(
        packets + "5.41889824e+08\n", packets + "5.42889824e+08\n"
    )
    scrapes = tmp_path / "scrapes.prom"
    scrapes.write_text(f"{TIME}\n{first}{int(TIME) + 60}\n{second}")
    r = fabricscope("analyze", str(scrapes), "--host", "roce01", "--json", "-")
    assert r.returncode in (1, 2), r.stdout + r.stderr
    doc = json.loads(r.stdout)
    loss = [f for f in doc["findings"] if f["kind"] == "packet_loss"]
    assert len(loss) == 1, doc["findings"]
    f = loss[0]
    assert (f["host"], f["device"], f["port"], f["metric"]) == ("roce01", "mlx5_0", 1, "loss_rate_rx")
    assert f["evidence"]["counts"] == {"rx_out_of_buffer_packets": 5000.0}
    assert f["evidence"]["packets"] == 1_000_000
    assert abs(f["observed"] - 5e-3) < 1e-12


def test_a_curl_scrape_takes_its_host_from_node_uname_info(tmp_path: Path) -> None:
    path = FIX / "node_exporter-curl-statshouse.prom"
    # node_uname_info is the last series of the scrape; every series before it is on its host,
    # even with a host argument (that names inputs which name no host)
    for extra in ([], ["--host", "h1"]):
        samples, attrs = parsed(tmp_path, str(path), *extra)
        assert set(samples["host"]) == {"gp-thinkpad-x1-v2"}
        assert set(attrs["host"]) == {"gp-thinkpad-x1-v2"}
    dropped = samples.filter(pl.col("counter") == "netdev_rx_dropped").sort("device")
    assert dropped["device"].to_list() == ["enp0s31f6", "lo", "tun0", "virbr0", "virbr0-nic", "wlp0s20f3"]
    assert dropped["value_u64"].to_list() == [0] * 6
    assert samples.filter(pl.col("counter") == "netdev_rx_errors").height == 6
    status = samples.filter(pl.col("counter") == "node_timex_status")
    assert (status["host"].item(), status["value_u64"].item()) == ("gp-thinkpad-x1-v2", 24577)
    uname = dict(zip(attrs["key"], attrs["value"], strict=True))
    assert uname["release"] == "5.15.0-58-generic" and uname["machine"] == "x86_64"
    # a host directive still names the host
    directed = tmp_path / "directed.prom"
    directed.write_text("# host: gpu021\n" + path.read_text())
    samples, _ = parsed(tmp_path, str(directed))
    assert set(samples["host"]) == {"gpu021"}


def test_node_network_bytes_are_netdev_counters(tmp_path: Path) -> None:
    samples, _ = parsed(tmp_path, str(FIX / "node_exporter-network-kwok.prom"), "--host", "kwok01")
    rx = samples.filter(pl.col("counter") == "netdev_rx_bytes")
    got = dict(zip(rx["device"], rx["value_u64"], strict=True))
    assert got["ens160"] == 4_922_513_571  # written 4.922513571e+09
    assert got["lo"] == 1_315_043_556_550
    assert got["nerdctl0"] == 8772
    assert len(got) == 9
    # a netclass property without a canonical meaning stays under its own name
    proto = samples.filter(pl.col("counter") == "node_network_protocol_type")
    assert dict(zip(proto["device"], proto["value_u64"], strict=True))["lo"] == 772


def test_kubernetes_scrape_of_dcgm_exporter_keeps_workload_labels_as_attributes(tmp_path: Path) -> None:
    samples, attrs = parsed(tmp_path, str(FIX / "dcgm-k8s-exported-labels.prom"), "--host", "h1")
    # no label of the scrape target or of the workload becomes part of a counter's name
    assert sorted(set(samples["counter"])) == ["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL", "gpu_temperature_celsius"]
    rows = sorted(samples.select("host", "device", "counter", "value_u64").iter_rows())
    assert rows == [
        ("k8s-gpu1", "gpu0", "DCGM_FI_DEV_FB_USED", 21383),
        ("node-1", "gpu2", "DCGM_FI_DEV_GPU_UTIL", 12),  # not the service `nvidia-dcgm-exporter.gpu-operator`
        ("node-3", "gpu2", "DCGM_FI_DEV_GPU_UTIL", 87),  # not the target IP 10.10.11.11
        ("worker1", "gpu0", "gpu_temperature_celsius", 41),  # two workloads on one GPU: one series
        ("worker1", "gpu0", "gpu_temperature_celsius", 41),
    ]

    def values(host: str, key: str) -> list[str]:
        return sorted(attrs.filter((pl.col("host") == host) & (pl.col("key") == key))["value"])

    assert values("worker1", "exported_pod") == ["pod1", "pod2"]
    assert values("worker1", "exported_container") == ["ai-artifactory-control", "somecontainer"]
    assert values("worker1", "exported_namespace") == ["default"]
    assert values("worker1", "pod") == ["dcgm-exporter-dev-78z52"]
    assert values("worker1", "instance") == ["someip:9400"]
    assert values("node-3", "instance") == ["10.10.11.11:9400"]
    assert values("node-3", "kubernetes_node") == ["node-3"]
    assert values("node-1", "instance") == ["nvidia-dcgm-exporter.gpu-operator:9400"]
    assert not attrs.filter(pl.col("key") == "Hostname").height

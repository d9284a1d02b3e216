//! `nvidia-smi nvlink` counters, status and errors.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{V, fixture, read, read_with, temp_file};
use fabricscope_core::ReadOptions;
use fabricscope_core::formats::{Format, detect};

#[test]
fn throughput_kib_to_bytes() {
    let p = fixture("nvidia-smi/nvlink-gt-d-h800.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::NvidiaSmiNvlink));
    let out = read(&p).unwrap();
    let tx = out.counter("nvlink_tx_bytes");
    assert_eq!(tx.len(), 1);
    assert_eq!(tx[0].value, V::U(5_863_784 * 1024));
    assert_eq!((tx[0].device.as_str(), tx[0].port, tx[0].is_counter), ("gpu0", Some(0), true));
    assert_eq!(out.counter("nvlink_rx_bytes")[0].value, V::U(5_863_677 * 1024));
    let uuid: Vec<_> = out.attrs.iter().filter(|a| a.key == "gpu_uuid").collect();
    assert_eq!(uuid[0].value, "GPU-34bf77d1-c686-6821-79a8-32d326c5039c");
}

#[test]
fn status_speeds_are_attributes() {
    let out = read(fixture("nvidia-smi/nvlink-s-gb200.txt")).unwrap();
    let speeds: Vec<_> = out.attrs.iter().filter(|a| a.key == "nvlink_speed_gb_per_s").collect();
    assert_eq!(speeds.len(), 20);
    assert_eq!((speeds[17].device.as_str(), speeds[17].port, speeds[17].value.as_str()), ("gpu0", Some(17), "53.125"));
    assert_eq!(speeds[19].device, "gpu1");
    assert!(out.rows.is_empty());
}

#[test]
fn error_counters_without_uuid() {
    let p = fixture("nvidia-smi/nvlink-e-gb300.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::NvidiaSmiNvlink));
    let out = read(&p).unwrap();
    assert_eq!(out.counter("nvlink_replay_errors")[0].value, V::U(0));
    assert_eq!(out.counter("nvlink_recovery_errors").len(), 1);
    assert_eq!(out.counter("nvlink_crc_errors").len(), 1);
}

#[test]
fn snapshots_inactive_links_and_old_counters() {
    let out = read(fixture("nvidia-smi/constructed-snapshots.txt")).unwrap();
    let tx = out.counter("nvlink_tx_bytes");
    assert_eq!(
        tx.iter().map(|r| (r.time_ns, r.value.clone())).collect::<Vec<_>>(),
        vec![(1_764_686_822_000_000_000, V::U(1_024_000)), (1_764_686_832_000_000_000, V::U(1_025_024_000)),]
    );
    assert_eq!(tx[0].host, "dgx07");
    assert_eq!(out.counter("nvlink_raw_tx_bytes").len(), 1);
    assert_eq!(out.counter("nvlink_counter0_tx_bytes")[0].value, V::U(7 * 1024));
    assert_eq!(out.counter("nvlink_replay_errors")[0].value, V::U(3));
    let state: Vec<_> =
        out.attrs.iter().filter(|a| a.key == "link_state").map(|a| (a.port, a.value.as_str())).collect();
    assert_eq!(state, vec![(Some(1), "inactive"), (Some(2), "active")]);
}

#[test]
fn hostile_input() {
    let text = "GPU 0: NVIDIA H800 (UUID: GPU-1)\n Link 0: Data Tx: 12x KiB\n Link 0: Data Rx: 99999999999999999999999 KiB\n Link 1: Data Tx: 5 MiB\n Link 2: fast\n\u{1}\u{2}\n Link 0: Data Tx: 18014398509481983 KiB\n";
    let p = temp_file("bad.txt", text.as_bytes());
    assert!(read(&p).is_err());
    let out = read_with(&[p], &ReadOptions { strict: false, ..ReadOptions::default() }).unwrap();
    assert_eq!(out.reports[0].bad_records, 4);
    // KiB x 1024 beyond u64 falls back to a float, never wraps.
    assert_eq!(out.counter("nvlink_tx_bytes")[0].value, V::U(18_014_398_509_481_983 * 1024));
    let e = read(temp_file("empty.txt", b"")).unwrap();
    assert!(e.rows.is_empty());
}

/// DCGM exporter GPU link metrics through the Prometheus reader (the GPU link gauges): PCIe link
/// training gauges, PROF NVLink bytes as a rate gauge, per-link `_L<n>` counters kept raw (the
/// reader has no per-link label to put in `port`), blank sentinels null.
#[test]
fn dcgm_gpu_link_metrics() {
    let text = "# TYPE DCGM_FI_DEV_PCIE_LINK_GEN gauge\n\
DCGM_FI_DEV_PCIE_LINK_GEN{gpu=\"0\",UUID=\"GPU-abc\",modelName=\"L20\"} 1\n\
DCGM_FI_DEV_PCIE_LINK_WIDTH{gpu=\"0\",UUID=\"GPU-abc\",modelName=\"L20\"} 8\n\
DCGM_FI_DEV_PCIE_MAX_LINK_GEN{gpu=\"0\",UUID=\"GPU-abc\",modelName=\"L20\"} 4\n\
DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH{gpu=\"0\",UUID=\"GPU-abc\",modelName=\"L20\"} 16\n\
# TYPE DCGM_FI_PROF_NVLINK_TX_BYTES counter\n\
DCGM_FI_PROF_NVLINK_TX_BYTES{gpu=\"0\",UUID=\"GPU-715daa1d-db6f-9e69-ab48-190158bd5360\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"axa\"} 0\n\
DCGM_FI_DEV_NVLINK_BANDWIDTH_L0{gpu=\"0\",UUID=\"GPU-abc\"} 123\n\
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"0\",UUID=\"GPU-abc\"} 9223372036854775794\n";
    let o = ReadOptions { time_ns: Some(1_764_686_822_000_000_000), ..ReadOptions::default() };
    let out = read_with(&[temp_file("dcgm.prom", text.as_bytes())], &o).unwrap();
    let one = |c: &str| {
        let r = out.counter(c);
        assert_eq!(r.len(), 1, "{c}");
        (r[0].value.clone(), r[0].is_counter, r[0].device.clone())
    };
    assert_eq!(one("pcie_link_generation"), (V::U(1), false, "gpu0".into()));
    assert_eq!(one("pcie_link_width_lanes"), (V::U(8), false, "gpu0".into()));
    assert_eq!(one("pcie_link_max_generation").0, V::U(4));
    assert_eq!(one("pcie_link_max_width_lanes").0, V::U(16));
    // Declared a counter by the exporter's CSV, but the PROF field is a rate: a gauge.
    assert_eq!(one("nvlink_tx_bytes_per_s"), (V::U(0), false, "gpu0".into()));
    assert_eq!(one("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0").0, V::U(123));
    assert_eq!(one("nvlink_bandwidth_total").0, V::Null);
}

#[test]
fn query_identity_and_fabric_block() {
    let p = fixture("nvidia-smi-q/gpud-535.161.08-h100.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::NvidiaSmiQ));
    let out = read(&p).unwrap();
    let get = |k: &str| out.attrs.iter().filter(|a| a.key == k).map(|a| a.value.clone()).collect::<Vec<_>>();
    assert_eq!(get("gpu_name"), ["NVIDIA H100 80GB HBM3"]);
    assert_eq!(get("gpu_uuid"), ["GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"]);
    assert_eq!(get("gpu_bus_id"), ["00000000:19:00.0"]);
    assert_eq!(get("driver_version"), ["535.161.08"]);
    // driver 535's Fabric block has State and Status only
    assert_eq!(get("fabric_state"), ["Completed"]);
    assert_eq!(get("fabric_status"), ["Success"]);
    assert!(get("fabric_clique_id").is_empty());
    // `Replays Since Reset` (PCIe) is not read
    assert!(out.rows.is_empty());
    assert!(out.attrs.iter().all(|a| a.device == "gpu0" && a.port.is_none()));
}

#[test]
fn query_driver_560_fabric_block_all_unknown() {
    // driver 560 adds CliqueId, ClusterUUID and Health; a GPU without an NVLink fabric says N/A
    let p = fixture("nvidia-smi-q/gpud-560.35.03-titan-v.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::NvidiaSmiQ));
    let out = read(&p).unwrap();
    let get = |k: &str| out.attrs.iter().filter(|a| a.key == k).map(|a| a.value.clone()).collect::<Vec<_>>();
    assert_eq!(get("gpu_name"), ["NVIDIA TITAN V"]);
    assert_eq!(get("driver_version"), ["560.35.03"]);
    for unknown in
        ["fabric_state", "fabric_status", "fabric_clique_id", "fabric_cluster_uuid", "fabric_health_bandwidth"]
    {
        assert!(get(unknown).is_empty(), "{unknown}");
    }
}

#[test]
fn query_bad_input_never_panics() {
    for text in [
        "GPU 00000000:18:00.0\n    Fabric\n        State : \n",
        "    Fabric\n        State                             : Completed\n",
        "==============NVSMI LOG==============\nTimestamp : yesterday\nGPU 0:0.0\n\tProduct Name:\u{7f}\n",
    ] {
        let p = temp_file("q.txt", text.as_bytes());
        let opts = ReadOptions {
            format: Some(Format::NvidiaSmiQ),
            host: Some("h".into()),
            time_ns: Some(1),
            strict: false,
            ..ReadOptions::default()
        };
        let _ = read_with(&[p], &opts);
    }
}

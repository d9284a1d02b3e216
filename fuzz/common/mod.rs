//! The one harness every reader target shares: feed the bytes through the real driver
//! (`read_bytes`: decompression, encoding checks, limits, the reader, lenient counting) in strict
//! and lenient mode, with small batches and a small line limit so the flush and limit paths run
//! on fuzzer-sized inputs. Any panic, overflow or runaway allocation is a finding; errors are fine.
//!
//! Every target's body is [`run_target`], so the cargo-fuzz targets and the stable-toolchain smoke
//! run (`rust/fabricscope-core/tests/fuzz_smoke.rs`, in CI) execute the same code, and clippy
//! compiles it with the workspace.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use fabricscope_core::{Event, Format, Limits, ReadOptions, read_bytes};

/// Read `data` as `format` (`None`: detect from content) and check the report against the rows
/// actually delivered.
pub fn read_as(format: Option<Format>, data: &[u8]) {
    for strict in [true, false] {
        let opts = ReadOptions {
            format,
            // Formats without in-file time would otherwise stat the (nonexistent) path for mtime.
            time_ns: Some(1_764_686_822_000_000_000),
            host: None,
            strict,
            batch_rows: 64,
            chunk_bytes: 0, // the driver's minimum (64 KiB): less zero-filling per execution
            limits: Limits { max_line_bytes: 4096, max_labels: 16, ..Limits::default() },
            ..ReadOptions::default()
        };
        let rows = AtomicU64::new(0);
        let sink = |ev: Event| {
            if let Event::Samples(b) = ev {
                rows.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
            }
            true
        };
        if let Ok(report) = read_bytes(data, Path::new("fuzz-input"), &opts, &sink) {
            // The report counts exactly the rows the sink received: no row lost or invented.
            assert_eq!(report.rows, rows.load(Ordering::Relaxed), "report.rows disagrees with delivered rows");
            if strict {
                assert_eq!(report.bad_records, 0, "strict mode skipped a record instead of failing");
            }
        }
    }
}

/// Every fuzz target: one per reader (its format forced; the sysfs tree reader walks
/// directories, which bytes cannot express), `detect` (any reader from content) and `capture`.
pub const TARGETS: &[&str] = &[
    "capture",
    "cxl_list",
    "dcgmi_dmon",
    "detect",
    "ethtool",
    "ibdev2netdev",
    "ibdiagnet_db_csv",
    "ibdiagnet_net_dump",
    "iblinkinfo",
    "ibnetdiscover",
    "ibqueryerrors",
    "ibstat",
    "ibstatus",
    "ibswinfo",
    "ibv_devinfo",
    "lldpctl_json",
    "lldpctl_keyvalue",
    "mlnx_qos",
    "mlxlink",
    "mlxlink_json",
    "nccl_tests",
    "nccl_tests_json",
    "nvidia_smi_nvlink",
    "nvidia_smi_q",
    "openmetrics",
    "perf_stat_cxl",
    "perfquery",
    "perftest",
    "prometheus",
    "prometheus_api",
    "prometheus_remote_read",
    "rdma_link",
    "rdma_statistic",
    "sonic_lldp_table",
    "sonic_pfc",
    "sysfs_grep",
    "telegraf",
    "ufm_csv",
    "ufm_json",
];

/// Run the fuzz target `name` (one of [`TARGETS`]) on `data`.
///
/// # Panics
/// On an unknown target name, and on any finding (a panic of the code under test).
pub fn run_target(name: &str, data: &[u8]) {
    match name {
        "detect" => {
            // Name hints only break ties; try one that carries a hint and one that does not.
            let _ = fabricscope_core::formats::detect(data, "ethtool-S.log");
            let _ = fabricscope_core::formats::detect(data, "x");
            read_as(None, data);
        }
        "capture" => {
            let _ = fabricscope_core::packets::capture_stats(data, true);
            let _ = fabricscope_core::packets::capture_stats(data, false);
            // Also as if it were pcapng with a valid magic in front.
            let mut ng = vec![0x0a, 0x0d, 0x0d, 0x0a];
            ng.extend_from_slice(data);
            let _ = fabricscope_core::packets::capture_stats(&ng, false);
        }
        _ => {
            let format = Format::from_name(&name.replace('_', "-"))
                .unwrap_or_else(|| panic!("fuzz target {name} names no format"));
            read_as(Some(format), data);
        }
    }
}

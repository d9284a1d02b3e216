//! The one harness every reader target shares: feed the bytes through the real driver
//! (`read_bytes`: decompression, encoding checks, limits, the reader, lenient counting) in strict
//! and lenient mode, with small batches and a small line limit so the flush and limit paths run
//! on fuzzer-sized inputs. Any panic, overflow or runaway allocation is a finding; errors are fine.

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

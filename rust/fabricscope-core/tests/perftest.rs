//! perftest bandwidth and latency tables into `perftest_results`.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use common::{fixture, read, read_with, temp_file};
use fabricscope_core::ReadOptions;
use fabricscope_core::formats::{Format, detect};

fn results(out: &common::Output) -> &RecordBatch {
    let t: Vec<_> = out.tables.iter().filter(|(n, _)| *n == "perftest_results").collect();
    assert_eq!(t.len(), 1);
    &t[0].1
}

fn f(b: &RecordBatch, col: &str, i: usize) -> Option<f64> {
    let a = b.column_by_name(col).unwrap().as_primitive::<Float64Type>();
    a.is_valid(i).then(|| a.value(i))
}

fn s(b: &RecordBatch, col: &str, i: usize) -> Option<String> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    a.is_valid(i).then(|| a.value(i).to_owned())
}

#[test]
fn duration_mode_gbit_table() {
    let p = fixture("perftest/write_bw_post_list_duration.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::Perftest));
    let out = read(&p).unwrap();
    let b = results(&out);
    assert_eq!(b.num_rows(), 1);
    assert_eq!(s(b, "test", 0).as_deref(), Some("write_bw"));
    assert_eq!(s(b, "kind", 0).as_deref(), Some("bw"));
    assert_eq!(s(b, "device", 0).as_deref(), Some("ib0"));
    assert_eq!(s(b, "link_type", 0).as_deref(), Some("Ethernet"));
    assert_eq!(b.column_by_name("mtu_bytes").unwrap().as_primitive::<UInt32Type>().value(0), 4096);
    assert_eq!(b.column_by_name("qps").unwrap().as_primitive::<UInt32Type>().value(0), 1);
    assert!(b.column_by_name("duration_mode").unwrap().as_boolean().value(0));
    assert_eq!(f(b, "bw_peak_gbit_per_s", 0), None);
    assert_eq!(f(b, "bw_average_gbit_per_s", 0), Some(0.48));
    assert_eq!(f(b, "msg_rate_mpps", 0), Some(7.498_617));
    assert_eq!(b.column_by_name("iterations").unwrap().as_primitive::<UInt64Type>().value(0), 224_958_464);
}

#[test]
fn mib_sweep_converts_to_gbit() {
    let out = read(fixture("perftest/write_bw_sweep_mib.txt")).unwrap();
    let b = results(&out);
    assert_eq!(b.num_rows(), 2);
    // 46550.40 MiB/s x 2^20 x 8 / 1e9 = 390.49 Gbit/s.
    let avg = f(b, "bw_average_gbit_per_s", 0).unwrap();
    assert!((avg - 46550.40 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9, "{avg}");
    assert!(!b.column_by_name("duration_mode").unwrap().as_boolean().value(0));
    assert!(f(b, "bw_peak_gbit_per_s", 0).is_some());
    assert_eq!(s(b, "host", 1).as_deref(), Some("gpu017"));
    assert_eq!(s(b, "link_type", 1).as_deref(), Some("IB"));
    let t = b.column_by_name("time").unwrap().as_primitive::<arrow_array::types::TimestampNanosecondType>();
    assert_eq!(t.value(0), 1_764_686_822_000_000_000);
}

#[test]
fn fused_latency_columns_and_warning_line() {
    let out = read(fixture("perftest/read_lat_rxe_fused.txt")).unwrap();
    let b = results(&out);
    assert_eq!(b.num_rows(), 1);
    assert_eq!(s(b, "test", 0).as_deref(), Some("read_lat"));
    assert_eq!(f(b, "lat_min_us", 0), Some(453.06));
    assert_eq!(f(b, "lat_stdev_us", 0), Some(2465.90));
    assert_eq!(f(b, "lat_p99_us", 0), Some(1216.65));
    assert_eq!(f(b, "lat_p99_9_us", 0), Some(37330.73));
    assert_eq!(f(b, "bw_average_gbit_per_s", 0), None);
    assert_eq!(out.reports[0].bad_records, 0);
}

#[test]
fn hostile_tables() {
    let text = std::fs::read_to_string(fixture("perftest/write_bw_sweep_mib.txt")).unwrap();
    // damage inside the result block (before its closing dashed line)
    let bad = text.replace(" 1048576    5000             46690.12", " 1048576    50x0             46690.12").replace(
        " 1048576    50x0",
        " 99999999999999999999999 1 1.00 1.00 1.0\n\u{0}\u{1}junk\n 65536 5000 1.0\n 1048576    50x0",
    );
    let p = temp_file("bad.txt", bad.as_bytes());
    assert!(read(&p).is_err());
    let out = read_with(&[p], &ReadOptions { strict: false, ..ReadOptions::default() }).unwrap();
    assert_eq!(out.reports[0].bad_records, 3);
    assert_eq!(results(&out).num_rows(), 1);
    // A table cut before its first row yields nothing, and no error.
    let cut = &text[..text.find(" 65536").unwrap()];
    let out = read(temp_file("cut.txt", cut.as_bytes())).unwrap();
    assert!(out.tables.is_empty());
}

/// Detection is strict: no fixture of the earlier formats is taken for an issue-8 format, and each
/// issue-8 fixture is detected as its own.
#[test]
fn detection_does_not_misfire_on_other_fixtures() {
    let ours = [
        Format::NvidiaSmiNvlink,
        Format::NcclTests,
        Format::NcclTestsJson,
        Format::Perftest,
        Format::CxlList,
        Format::PerfStatCxl,
    ];
    let mut checked = 0;
    let mut stack = vec![fixture("")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(fixture("")).unwrap().to_string_lossy().into_owned();
            let mine = ["nccl-tests/", "perftest/", "nvidia-smi/", "cxl/"].iter().any(|d| rel.starts_with(d));
            if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("md")) {
                continue;
            }
            let head = std::fs::read(&p).unwrap();
            let head = &head[..head.len().min(64 << 10)];
            let got = detect(head, &p.file_name().unwrap().to_string_lossy());
            if mine {
                assert!(got.is_some_and(|f| ours.contains(&f)), "{rel}: {got:?}");
            } else {
                assert!(!got.is_some_and(|f| ours.contains(&f)), "{rel} misdetected as {got:?}");
            }
            checked += 1;
        }
    }
    assert!(checked > 40, "{checked}");
}

#[test]
fn terminal_transcripts_give_only_their_result_blocks() {
    // real: prompts, commands, comments, a CPU-frequency warning inside the block
    let out = read(fixture("perftest/deepops-roce-transcript.txt")).unwrap();
    assert_eq!(out.reports[0].format, Some(Format::Perftest));
    assert_eq!(out.reports[0].bad_records, 0, "{:?}", out.reports[0].errors);
    let b = results(&out);
    assert_eq!(b.num_rows(), 1);
    assert_eq!((f(b, "bw_average_gbit_per_s", 0), s(b, "link_type", 0).as_deref()), (Some(92.40), Some("Ethernet")));
    // server and client output of one test, history lines before, between and after: 2 runs
    for strict in [true, false] {
        let p = fixture("perftest/transcript-server-client-history.txt");
        let out = read_with(&[p], &ReadOptions { strict, ..ReadOptions::default() }).unwrap();
        assert_eq!(out.reports[0].bad_records, 0, "{:?}", out.reports[0].errors);
        let b = results(&out);
        assert_eq!(b.num_rows(), 2);
        let run = b.column_by_name("run").unwrap().as_primitive::<UInt32Type>();
        assert_eq!((run.value(0), run.value(1)), (0, 1));
        assert_eq!((f(b, "bw_peak_gbit_per_s", 0), f(b, "bw_average_gbit_per_s", 1)), (Some(92.42), Some(92.40)));
        let size = b.column_by_name("size_bytes").unwrap().as_primitive::<UInt64Type>();
        assert_eq!((size.value(0), size.value(1)), (65536, 65536));
    }
}

#[test]
fn a_malformed_block_names_the_real_cause() {
    let head = "                    RDMA_Write BW Test\n Link type       : IB\n---------------------------------------------------------------------------------------\n";
    let table = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
    // a row cut short inside the block
    let p = temp_file("cut-row.txt", format!("{head}{table} 65536      5000             92.42\n").as_bytes());
    let err = read(&p).err().unwrap().to_string();
    assert!(
        err.contains("line 5") && err.contains("MsgRate[Mpps]") && err.contains("5 values; this row has 3"),
        "{err}"
    );
    // rows without their header
    let p =
        temp_file("no-header.txt", format!("{head} 65536      5000             92.42    92.40   0.17\n").as_bytes());
    let err = read_with(&[p], &ReadOptions { format: Some(Format::Perftest), ..ReadOptions::default() })
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("line 4") && err.contains("results header of the write_bw run"), "{err}");
    // history lines alone are not results (and not errors)
    let p = temp_file(
        "history.txt",
        format!("{head}{table} 65536 5000 92.42 92.40 0.17\n---\n  12  ib_write_bw -d mlx5_0\n").as_bytes(),
    );
    let out = read(&p).unwrap();
    assert_eq!((results(&out).num_rows(), out.reports[0].bad_records), (1, 0));
}

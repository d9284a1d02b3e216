//! nccl-tests text logs and `-J` JSON into `nccl_results` / `nccl_ranks`.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use common::{fixture, read, read_with, temp_file};
use fabricscope_core::ReadOptions;
use fabricscope_core::formats::{Format, detect};

fn table<'a>(out: &'a common::Output, name: &str) -> Vec<&'a RecordBatch> {
    out.tables.iter().filter(|(n, _)| *n == name).map(|(_, b)| b).collect()
}

fn strs(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    (0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i).to_owned())).collect()
}

fn f64s(b: &RecordBatch, col: &str) -> Vec<Option<f64>> {
    let a = b.column_by_name(col).unwrap().as_primitive::<Float64Type>();
    (0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))).collect()
}

#[test]
fn real_16_gpu_all_reduce_log() {
    let path = fixture("nccl-tests/ztan-all_reduce-16xH100.txt");
    let head = std::fs::read(&path).unwrap();
    assert_eq!(detect(&head, "x"), Some(Format::NcclTests));
    let out = read(&path).unwrap();
    let res = table(&out, "nccl_results");
    assert_eq!(res.len(), 1);
    let b = res[0];
    // 31 sizes x 2 placements.
    assert_eq!(b.num_rows(), 62);
    assert!(strs(b, "collective").iter().all(|c| c.as_deref() == Some("all_reduce")));
    assert!(strs(b, "host").iter().all(|h| h.as_deref() == Some("ztan-mig-235z")));
    let last = b.num_rows() - 2;
    let size = b.column_by_name("size_bytes").unwrap().as_primitive::<UInt64Type>();
    assert_eq!(size.value(last), 8_589_934_592);
    assert_eq!(strs(b, "placement")[last].as_deref(), Some("out_of_place"));
    assert_eq!(f64s(b, "time_us")[last], Some(47535.0));
    assert_eq!(f64s(b, "busbw_gb_per_s")[last], Some(338.82));
    assert_eq!(f64s(b, "busbw_gb_per_s")[last + 1], Some(337.35));
    assert_eq!(f64s(b, "avg_busbw_gb_per_s")[0], Some(70.742));
    let u32s = |c: &str| b.column_by_name(c).unwrap().as_primitive::<UInt32Type>().value(0);
    assert_eq!((u32s("n_ranks"), u32s("n_nodes"), u32s("gpus_per_node")), (16, 2, 8));
    assert_eq!(b.column_by_name("root").unwrap().as_primitive::<Int32Type>().value(0), -1);
    assert_eq!(b.column_by_name("wrong").unwrap().as_primitive::<Int64Type>().value(0), 0);
    let ranks = table(&out, "nccl_ranks");
    assert_eq!(ranks[0].num_rows(), 16);
    assert_eq!(strs(ranks[0], "host")[8].as_deref(), Some("ztan-mig-gq73"));
    assert_eq!(strs(ranks[0], "bus_id")[2].as_deref(), Some("0000:0b:00"));
    assert_eq!(strs(ranks[0], "gpu_name")[0].as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(out.reports[0].bad_records, 0);
    assert!(out.rows.is_empty());
}

#[test]
fn na_wrong_is_null_and_collective_from_command() {
    let out = read(fixture("nccl-tests/alltoall-na-rtx5090.txt")).unwrap();
    let b = table(&out, "nccl_results")[0];
    assert_eq!(b.num_rows(), 2);
    let wrong = b.column_by_name("wrong").unwrap().as_primitive::<Int64Type>();
    assert!(wrong.is_valid(0) && wrong.is_null(1));
    assert_eq!(strs(b, "collective")[0].as_deref(), Some("alltoall"));
    assert_eq!(f64s(b, "algbw_gb_per_s")[1], Some(43046.10));
    assert_eq!(f64s(b, "avg_busbw_gb_per_s")[0], Some(0.0));
}

#[test]
fn old_error_column_and_inferred_collective() {
    let p = fixture("nccl-tests/old-error-column-128gpu.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::NcclTests));
    let out = read(&p).unwrap();
    let b = table(&out, "nccl_results")[0];
    assert_eq!(b.num_rows(), 12);
    // The old `error` column is a maximum error, not a count: null.
    assert_eq!(b.column_by_name("wrong").unwrap().null_count(), 12);
    assert_eq!(b.column_by_name("root").unwrap().null_count(), 12);
    // No rank lines, no program name: the collective cannot be inferred without n.
    assert_eq!(strs(b, "collective")[0].as_deref(), Some("unknown"));
    assert_eq!(b.column_by_name("n_ranks").unwrap().null_count(), 12);
}

#[test]
fn several_runs_and_timestamps() {
    let log = "# Collective test starting: all_gather_perf\n\
#  Rank  0 Group  0 Pid   1 on nodeA device  0 [0000:18:00] NVIDIA H100\n\
#  Rank  1 Group  0 Pid   1 on nodeA device  1 [0000:2a:00] NVIDIA H100\n\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong            timestamp\n\
  1073741824     134217728     float    none      -1   1.2e+04   89.48   44.74      0   1.1e+04   97.61   48.81      0  2026-12-02 14:00:07\n\
# Out of bounds values : 0 OK\n\
# Avg bus bandwidth    : 46.775 \n\
#\n\
# Collective test concluded: all_gather_perf\n\
# Collective test starting: broadcast_perf\n\
#  Rank  0 Group  0 Pid   1 on nodeA device  0 [0000:18:00] NVIDIA H100\n\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
        1024           256     float    none       0    10.00    0.10    0.10      0    10.00    0.10    0.10      0\n\
# Avg bus bandwidth    : 0.1 \n\
# Collective test concluded: broadcast_perf\n";
    let p = temp_file("two.log", log.as_bytes());
    let out = read(&p).unwrap();
    let b = table(&out, "nccl_results")[0];
    assert_eq!(b.num_rows(), 4);
    assert_eq!(
        strs(b, "collective"),
        vec![Some("all_gather".into()), Some("all_gather".into()), Some("broadcast".into()), Some("broadcast".into())]
    );
    let run = b.column_by_name("run").unwrap().as_primitive::<UInt32Type>();
    assert_eq!((run.value(0), run.value(2)), (0, 1));
    assert_eq!(f64s(b, "time_us")[0], Some(12_000.0));
    let t = b.column_by_name("time").unwrap().as_primitive::<arrow_array::types::TimestampNanosecondType>();
    assert_eq!(t.value(0), 1_796_220_007_000_000_000);
    assert_eq!(f64s(b, "avg_busbw_gb_per_s"), vec![Some(46.775), Some(46.775), Some(0.1), Some(0.1)]);
    let ranks = table(&out, "nccl_ranks")[0];
    assert_eq!(ranks.num_rows(), 3);
}

#[test]
fn json_report() {
    let p = fixture("nccl-tests/constructed-report.json");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::NcclTestsJson));
    let out = read(&p).unwrap();
    let b = table(&out, "nccl_results")[0];
    // The second in-place result is "nan": not a measurement, not a row.
    assert_eq!(b.num_rows(), 3);
    assert_eq!(strs(b, "collective")[0].as_deref(), Some("all_gather"));
    assert_eq!(f64s(b, "busbw_gb_per_s"), vec![Some(302.53125), Some(308.0175), Some(307.99125)]);
    assert_eq!(b.column_by_name("root").unwrap().as_primitive::<Int32Type>().value(0), -1);
    let wrong = b.column_by_name("wrong").unwrap().as_primitive::<Int64Type>();
    assert!(wrong.is_valid(0) && wrong.is_null(1));
    assert_eq!(f64s(b, "avg_busbw_gb_per_s")[0], Some(306.18));
    assert_eq!(strs(b, "host")[0].as_deref(), Some("dgx07"));
    assert_eq!(table(&out, "nccl_ranks")[0].num_rows(), 2);
}

#[test]
fn hostile_logs() {
    let good = std::fs::read_to_string(fixture("nccl-tests/ring-8gb-ib.txt")).unwrap();
    // Truncated mid-row, garbage and binary junk between rows, a huge number.
    let mut bad =
        good.replace("  2147483648     536870912     float     sum      -1    39871", "  2147483648     5368");
    bad.insert_str(
        bad.find("  4294967296").unwrap(),
        "1e999 1 2 3\n\u{1}\u{2}garbage\n99999999999999999999999 1 float sum -1 1 1 1 0 1 1 1 0\n",
    );
    let p = temp_file("bad.log", bad.as_bytes());
    assert!(read(&p).is_err(), "strict mode rejects a damaged row");
    let lenient = ReadOptions { strict: false, ..ReadOptions::default() };
    let out = read_with(&[p], &lenient).unwrap();
    assert_eq!(out.reports[0].bad_records, 3);
    assert_eq!(table(&out, "nccl_results")[0].num_rows(), 8);
    let e = read(temp_file("empty.log", b"")).unwrap();
    assert!(e.tables.is_empty());
    let j = temp_file(
        "cut.json",
        br#"{"version":2,"start_time":"2026-12-02 14:00:00","nccl_version":1,"results":[{"size":8"#,
    );
    assert!(read(&j).is_err());
    let out = read_with(&[j], &lenient).unwrap();
    assert_eq!(out.reports[0].bad_records, 1);
}

#[test]
fn mpirun_tagged_output() {
    // `mpirun --tag-output` prefixes every line; the rows must not be lost.
    let log = "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n\
[1,0]<stdout>:#  Rank  0 Group  0 Pid   11 on gpu01 device  0 [0000:18:00] NVIDIA H100\n\
[1,0]<stdout>:#  Rank  1 Group  0 Pid   12 on gpu02 device  0 [0000:18:00] NVIDIA H100\n\
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
[1,0]<stdout>:   268435456      67108864     float     sum      -1   5700.0   47.09   47.09      0   5690.0   47.18   47.18      0\n\
[1,0]<stdout>:# Avg bus bandwidth    : 47.135 \n";
    let out = read(temp_file("tagged.log", log.as_bytes())).unwrap();
    let b = table(&out, "nccl_results")[0];
    assert_eq!(b.num_rows(), 2);
    assert_eq!(strs(b, "host")[0].as_deref(), Some("gpu01"));
    // 2 ranks, busbw = algbw x 2(n-1)/n = algbw: all_reduce inferred from the factor and `sum`.
    assert_eq!(strs(b, "collective")[0].as_deref(), Some("all_reduce"));
    let nn = b.column_by_name("n_nodes").unwrap().as_primitive::<UInt32Type>();
    assert_eq!(nn.value(0), 2);
}

#[test]
fn real_two_node_tag_output_logs_read_strictly_with_every_row() {
    // 31 sizes (0 B .. 1 GiB) x 2 placements, 2 ranks on 2 nodes, same values in all three forms
    for name in
        ["eks-efa-2node-tag-output.log", "eks-efa-2node-tag-output-interleaved.log", "eks-efa-2node-srun-label.log"]
    {
        let path = fixture(&format!("nccl-tests/{name}"));
        assert_eq!(detect(&std::fs::read(&path).unwrap(), name), Some(Format::NcclTests), "{name}");
        for strict in [true, false] {
            let out = read_with(std::slice::from_ref(&path), &ReadOptions { strict, ..ReadOptions::default() })
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out.reports[0].bad_records, 0, "{name}: {:?}", out.reports[0].errors);
            let b = table(&out, "nccl_results")[0];
            assert_eq!(b.num_rows(), 62, "{name}");
            let size = b.column_by_name("size_bytes").unwrap().as_primitive::<UInt64Type>();
            let i = (0..b.num_rows()).find(|&i| size.value(i) == 1_048_576).unwrap();
            assert_eq!((f64s(b, "time_us")[i], f64s(b, "busbw_gb_per_s")[i + 1]), (Some(583.4), Some(1.81)), "{name}");
            let j = (0..b.num_rows()).find(|&i| size.value(i) == 4_194_304).unwrap();
            assert_eq!((f64s(b, "time_us")[j], f64s(b, "time_us")[j + 1]), (Some(1745.4), Some(1673.2)), "{name}");
            assert_eq!(f64s(b, "avg_busbw_gb_per_s")[0], Some(1.15327));
            let u32s = |c: &str| b.column_by_name(c).unwrap().as_primitive::<UInt32Type>().value(0);
            assert_eq!((u32s("n_ranks"), u32s("n_nodes")), (2, 2), "{name}");
            assert_eq!(strs(b, "host")[0].as_deref(), Some("test-nccl-efa-worker-0"));
        }
    }
}

#[test]
fn a_tagged_row_cut_at_the_end_of_the_file_is_reported_not_read() {
    let log = "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n[1,0]<stdout>:     1048576        262144     float     sum      -1    583.4    1.80    1.80      0    579.6    1.81    1.81      0\n[1,0]<stdout>:     2097152        524288     float     sum      -1[1,1]<stdout>:h1:21 NCCL INFO x\n";
    let p = temp_file("cut-tagged.log", log.as_bytes());
    let out = read(&p).unwrap();
    assert_eq!(table(&out, "nccl_results")[0].num_rows(), 2);
    assert!(out.reports[0].warnings.iter().any(|w| w.contains("[1,0]<stdout>:") && w.contains("without a line end")));
}

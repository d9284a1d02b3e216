//! CXL: `cxl list` inventory and `perf stat` CXL PMU counters.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use common::{V, fixture, read, read_with, temp_file};
use fabricscope_core::ReadOptions;
use fabricscope_core::formats::{Format, detect};

fn devices(out: &common::Output) -> &RecordBatch {
    &out.tables.iter().find(|(n, _)| *n == "cxl_devices").unwrap().1
}

#[test]
fn topology_listing_with_human_sizes() {
    let p = fixture("cxl/cxl-list-topology-u.json");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::CxlList));
    let out = read(&p).unwrap();
    let b = devices(&out);
    assert_eq!(b.num_rows(), 2);
    let memdev = b.column_by_name("memdev").unwrap().as_string::<i32>();
    assert_eq!((memdev.value(0), memdev.value(1)), ("mem2", "mem6"));
    assert_eq!(b.column_by_name("ram_size_bytes").unwrap().as_primitive::<UInt64Type>().value(0), 268_435_456);
    assert_eq!(b.column_by_name("serial").unwrap().as_string::<i32>().value(1), "0x5");
    assert_eq!(b.column_by_name("pci_host").unwrap().as_string::<i32>().value(0), "cxl_mem.1");
    assert_eq!(b.column_by_name("numa_node").unwrap().as_primitive::<Int32Type>().value(0), 1);
}

#[test]
fn memdev_array_with_integers() {
    let out = read(fixture("cxl/cxl-list-memdevs.json")).unwrap();
    let b = devices(&out);
    assert_eq!(b.num_rows(), 2);
    let ram = b.column_by_name("ram_size_bytes").unwrap().as_primitive::<UInt64Type>();
    assert_eq!((ram.value(0), ram.value(1)), (1_073_741_824, 137_438_953_472));
    assert_eq!(b.column_by_name("serial").unwrap().as_string::<i32>().value(1), "0x2c8001e51");
    assert_eq!(b.column_by_name("firmware_version").unwrap().as_string::<i32>().value(0), "BWFW VERSION 00");
    let me = b.column_by_name("media_errors").unwrap().as_primitive::<UInt64Type>();
    assert!(me.is_null(0));
    assert_eq!(me.value(1), 1);
    assert!(b.column_by_name("numa_node").unwrap().is_null(1));
}

#[test]
fn hostile_cxl_list() {
    let lenient = ReadOptions { strict: false, ..ReadOptions::default() };
    let p = temp_file("cut.json", br#"[{"memdev":"mem0","ram_size":1073741824},{"memdev":"mem1","ram_"#);
    assert!(read(&p).is_err());
    let out = read_with(&[p], &lenient).unwrap();
    assert_eq!(out.reports[0].bad_records, 1);
    let p = temp_file("bad.json", br#"[{"memdev":"mem0","ram_size":"12 parsecs"},{"memdev":"mem1","ram_size":-5},{"memdev":"mem2","ram_size":18446744073709551615}]"#);
    let out = read_with(&[p], &lenient).unwrap();
    assert_eq!(out.reports[0].bad_records, 2);
    assert_eq!(devices(&out).num_rows(), 1);
}

#[test]
fn perf_stat_intervals_become_cumulative_counters() {
    let p = fixture("cxl/perf-stat-interval.csv");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::PerfStatCxl));
    let out = read(&p).unwrap();
    let start = 1_796_220_000_000_000_000i64;
    let ticks: Vec<_> = out.counter("cxl_clock_ticks").iter().map(|r| (r.time_ns, r.value.clone())).collect();
    assert_eq!(
        ticks,
        vec![
            (start, V::U(0)),
            (start + 1_001_044_469, V::U(1_000_250_000)),
            (start + 2_002_090_112, V::U(2_000_250_000)),
        ]
    );
    let snp = out.counter("cxl_h2d_req_snpcur");
    assert_eq!(snp[2].value, V::U(96_757_023_245_321));
    assert_eq!(snp[0].device, "cxl_pmu_mem0.0");
    let rd = out.counter("cxl_m2s_req_memrd");
    assert_eq!(rd[1].value, V::Null);
}

#[test]
fn perf_stat_totals_with_thousands_separators() {
    let p = fixture("cxl/perf-stat-totals.txt");
    assert_eq!(detect(&std::fs::read(&p).unwrap(), "x"), Some(Format::PerfStatCxl));
    let out = read(&p).unwrap();
    let snp = out.counter("cxl_h2d_req_snpcur");
    let start = 1_796_220_000_000_000_000i64;
    assert_eq!(
        snp.iter().map(|r| (r.time_ns, r.value.clone())).collect::<Vec<_>>(),
        vec![(start, V::U(0)), (start + 2_002_090_112, V::U(96_757_023_244_321)),]
    );
    assert_eq!(out.counter("cxl_d2h_req_rdshared")[1].value, V::Null);
    assert!(out.counter("cycles").is_empty());
}

#[test]
fn perf_stat_hostile() {
    let text = "1.0,12x,,cxl_pmu_mem0.0/clock_ticks/,1,100.00,,\n\u{1}\u{2}junk cxl_pmu_mem0.0/clock_ticks/\n1.5,5,,cxl_pmu_mem0.0/clock_ticks/,1,100.00,,\n# started on yesterday\n";
    let p = temp_file("bad.csv", text.as_bytes());
    assert!(read(&p).is_err());
    let out = read_with(&[p], &ReadOptions { strict: false, ..ReadOptions::default() }).unwrap();
    assert_eq!(out.reports[0].bad_records, 3);
    assert_eq!(out.counter("cxl_clock_ticks").len(), 2);
}

mod never_panic {
    use super::*;
    use proptest::prelude::*;

    /// Fragments of every issue-8 format, shuffled with arbitrary bytes: any mix must yield rows or
    /// counted bad records, never a panic, in both modes.
    fn fragments() -> impl Strategy<Value = Vec<u8>> {
        let pieces: Vec<&'static [u8]> = vec![
            b"GPU 0: NVIDIA H100 (UUID: GPU-1)\n",
            b"\t Link 0: Data Tx: 5 KiB\n",
            b"\t Link 1: <inactive>\n",
            b" Link 2: 26.5 GB/s\n",
            b" Link 0: Replay Errors: 7\n",
            b"#  Rank  0 Group  0 Pid 1 on h device 0 [0000:01:00] G\n",
            b"#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n",
            b"  8  2  float  sum  -1  1.2e+04  0.00  0.00  0  12.0  0.1  0.1  N/A\n",
            b"# Avg bus bandwidth    : 1.5 \n",
            b"# Collective test starting: all_reduce_perf\n",
            b" #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]\n",
            b" 2 1000 1.00 2.00 1.50 1.60 2465.901216.65 3.00\n",
            b" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n",
            b" 65536 100 0.00 1.5 0.1\n",
            b"                    RDMA_Write BW Test\n",
            b" Dual-port : OFF\t\tDevice : mlx5_0\n",
            b"1.0,12,,cxl_pmu_mem0.0/clock_ticks/,1,100.00,,\n",
            b"<not counted>      cxl_pmu_mem0.0/m2s_req_memrd/\n",
            b"# started on Wed Dec  2 14:00:00 2026\n",
            b"1764686822\n",
            "\u{e9}\u{20ac}.\u{1f600}\n".as_bytes(),
        ];
        prop::collection::vec(
            prop_oneof![
                prop::sample::select(pieces).prop_map(<[u8]>::to_vec),
                prop::collection::vec(any::<u8>(), 0..12),
            ],
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn benchmark_and_cxl_readers_never_panic_on_fragments(bytes in fragments()) {
            let p = temp_file("prop.txt", &bytes);
            for format in [
                Format::NvidiaSmiNvlink,
                Format::NcclTests,
                Format::NcclTestsJson,
                Format::Perftest,
                Format::CxlList,
                Format::PerfStatCxl,
            ] {
                for strict in [true, false] {
                    let o = ReadOptions {
                        format: Some(format),
                        strict,
                        time_ns: Some(1_764_686_822_000_000_000),
                        host: Some("h".into()),
                        ..ReadOptions::default()
                    };
                    // Strict mode may refuse the input, with a typed error; lenient mode must not.
                    let res = read_with(std::slice::from_ref(&p), &o);
                    if !strict {
                        prop_assert!(res.is_ok(), "{format:?}: {:?}", res.err());
                    }
                }
            }
        }
    }
}

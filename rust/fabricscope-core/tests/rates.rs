//! The rate kernel on hand-made batches: wraps, saturation, resets, duplicates, order, errors.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt32Type};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, UInt32Array, UInt64Array};
use fabricscope_core::Error;
use fabricscope_core::rates::{OverflowMode, OverflowRule, RateColumns, RateOptions, Rates, rates};

const COLS: RateColumns<'static> = RateColumns {
    keys: &["host", "counter"],
    counter: "counter",
    time: "time",
    value_u64: "value_u64",
    value_f64: "value_f64",
    scale: "scale",
    is_counter: "is_counter",
};

/// Counter code 0 wraps at 32 bits, code 1 saturates at 16 bits, code 2 has no rule.
const RULES: [(u32, OverflowRule); 2] = [
    (0, OverflowRule { mode: OverflowMode::Wrap, bits: 32 }),
    (1, OverflowRule { mode: OverflowMode::Saturate, bits: 16 }),
];

/// Rows of (host code, counter code, seconds, value).
fn batch(rows: &[(u32, u32, i64, u64)]) -> RecordBatch {
    let col = |a: ArrayRef| a;
    RecordBatch::try_from_iter([
        ("time", col(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2 * 1_000_000_000))))),
        ("host", col(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.0))))),
        ("counter", col(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.1))))),
        ("value_u64", col(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.3))))),
        ("value_f64", col(Arc::new(Float64Array::from(vec![None; rows.len()])))),
        ("scale", col(Arc::new(UInt32Array::from(vec![1u32; rows.len()])))),
        ("is_counter", col(Arc::new(BooleanArray::from(vec![true; rows.len()])))),
    ])
    .expect("valid batch")
}

fn floats(b: &RecordBatch, name: &str) -> Vec<Option<f64>> {
    b.column_by_name(name).expect("column").as_primitive::<Float64Type>().iter().collect()
}

fn ints(b: &RecordBatch, name: &str) -> Vec<i64> {
    b.column_by_name(name).expect("column").as_primitive::<Int64Type>().values().to_vec()
}

fn series(b: &RecordBatch) -> Vec<u32> {
    b.column_by_name("series").expect("column").as_primitive::<UInt32Type>().values().to_vec()
}

/// The kernel with every option at its default, and with one row per parallel task: both must
/// give the same result; the first is returned.
fn run(batches: &[RecordBatch], opts: &RateOptions) -> fabricscope_core::Result<Rates> {
    let out = rates(batches, &COLS, &RULES, opts)?;
    let split = rates(batches, &COLS, &RULES, &RateOptions { min_rows_per_task: 1, ..*opts })?;
    assert_eq!(out.intervals, split.intervals);
    assert_eq!(out.series_rows, split.series_rows);
    Ok(out)
}

fn flags(b: &RecordBatch, name: &str) -> Vec<bool> {
    b.column_by_name(name).expect("column").as_boolean().iter().map(|v| v.expect("no nulls")).collect()
}

#[test]
fn wrap_reset_saturation_and_unknown_counter() {
    let rows = [
        (0, 0, 0, (1 << 32) - 100), // wraps to 50: 150
        (0, 0, 1, 50),
        (0, 0, 2, 10), // lower half: reset
        (0, 1, 0, 65_000),
        (0, 1, 10, 65_535), // pegged: no delta
        (1, 2, 0, 1 << 40),
        (1, 2, 4, (1 << 40) + 400),
    ];
    let Rates { intervals: out, series_rows } = run(&[batch(&rows)], &RateOptions::default()).expect("rates");
    assert_eq!(out.num_rows(), 4);
    assert_eq!(floats(&out, "delta"), [Some(150.0), None, None, Some(400.0)]);
    assert_eq!(floats(&out, "rate_per_s"), [Some(150.0), None, None, Some(100.0)]);
    assert_eq!(flags(&out, "wrapped"), [true, false, false, false]);
    assert_eq!(flags(&out, "reset"), [false, true, false, false]);
    assert_eq!(flags(&out, "saturated"), [false, false, true, false]);
    // Three series, numbered in order of first appearance; each interval's end time and series.
    assert_eq!(series_rows, [0, 3, 5]);
    assert_eq!(series(&out), [0, 0, 1, 2]);
    assert_eq!(ints(&out, "end"), [1_000_000_000, 2_000_000_000, 10_000_000_000, 4_000_000_000]);
    assert_eq!(ints(&out, "start"), [0, 1_000_000_000, 0, 0]);
}

#[test]
fn shuffled_rows_across_batches_with_duplicates_last_read_wins() {
    // One series read out of order over two batches; t=10 read twice (200 read last).
    let first = batch(&[(0, 2, 20, 300), (0, 2, 10, 150)]);
    let second = batch(&[(0, 2, 0, 100), (0, 2, 10, 200), (0, 2, 30, 400)]);
    let out = run(&[first, second], &RateOptions::default()).expect("rates");
    assert_eq!(floats(&out.intervals, "delta"), [Some(100.0), Some(100.0), Some(100.0)]);
    assert_eq!(floats(&out.intervals, "value"), [Some(200.0), Some(300.0), Some(400.0)]);
    assert_eq!(ints(&out.intervals, "end"), [10_000_000_000, 20_000_000_000, 30_000_000_000]);
    assert_eq!(out.series_rows, [0]);
}

#[test]
fn gap_longer_than_three_median_intervals_has_no_rate() {
    let rows: Vec<_> = [0, 10, 20, 30, 200, 210].iter().map(|&t| (0, 2, t, 1_000 * t as u64)).collect();
    let out = run(&[batch(&rows)], &RateOptions::default()).expect("rates").intervals;
    assert_eq!(flags(&out, "gap"), [false, false, false, true, false]);
    assert_eq!(floats(&out, "rate_per_s"), [Some(1000.0), Some(1000.0), Some(1000.0), None, Some(1000.0)]);
}

#[test]
fn missing_or_mistyped_columns_are_argument_errors() {
    let b = batch(&[(0, 0, 0, 1)]);
    let cols = RateColumns { time: "when", ..COLS };
    let err = rates(std::slice::from_ref(&b), &cols, &RULES, &RateOptions::default()).expect_err("no column");
    assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("\"when\"")), "{err}");
    let wide = RecordBatch::try_from_iter([
        ("time", Arc::new(Int64Array::from(vec![0])) as ArrayRef),
        ("host", Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef),
    ])
    .expect("valid batch");
    let err = rates(&[wide], &COLS, &RULES, &RateOptions::default()).expect_err("u64 codes");
    assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("uint8, uint16 or uint32")), "{err}");
}

#[test]
fn many_series_over_batches_same_result_in_one_task_or_several() {
    // 60 series x 30 readings (wraps near 2^32, a reset, duplicates), in a scrambled order over
    // three batches: the split into parallel tasks must not change a bit of the result.
    let mut rows = Vec::new();
    for t in 0..30i64 {
        for s in 0..60u32 {
            let value = match s % 3 {
                0 => ((1u64 << 32) - 40_000 + 3_000 * t as u64) % (1 << 32),
                1 => {
                    if t == 17 {
                        5
                    } else {
                        1_000 * t as u64
                    }
                }
                _ => 65_000 + t as u64 * 30,
            };
            rows.push((s / 3, s % 3, t * 10 + i64::from(s % 7 == 0 && t % 5 == 0) * 10, value));
        }
    }
    // A fixed scramble (multiplicative stride, coprime with the length).
    let n = rows.len();
    let scrambled: Vec<_> = (0..n).map(|i| rows[(i * 7_919) % n]).collect();
    let (first, rest) = scrambled.split_at(n / 3);
    let (second, third) = rest.split_at(n / 3);
    let out = run(&[batch(first), batch(second), batch(third)], &RateOptions::default()).expect("rates");
    assert_eq!(out.series_rows.len(), 60);
    let wrapped = flags(&out.intervals, "wrapped").iter().filter(|w| **w).count();
    let reset = flags(&out.intervals, "reset").iter().filter(|r| **r).count();
    assert_eq!((wrapped, reset), (20, 20));
    // Series in order of first appearance; each series' intervals in time order.
    let ids = series(&out.intervals);
    assert!(ids.windows(2).all(|w| w[0] <= w[1]));
    let end = ints(&out.intervals, "end");
    assert!(ids.windows(2).zip(end.windows(2)).all(|(s, e)| s[0] != s[1] || e[0] < e[1]));
}

#[test]
fn six_wide_keys_with_huge_codes_still_separate_every_series() {
    // 2,050 series x 2 readings; six key columns of 2,050 distinct codes each (their product
    // overflows a u64, so the keys are renumbered between levels), one of them near u32::MAX
    // (compacted through a map instead of a table).
    const KEYS: [&str; 6] = ["k0", "k1", "k2", "k3", "k4", "k5"];
    let cols = RateColumns { keys: &KEYS, counter: "k5", ..COLS };
    let n_series = 2_050u32;
    let rows: Vec<(u32, i64)> = (0..2).flat_map(|t| (0..n_series).map(move |s| (s, t))).collect();
    let key = |k: usize, s: u32| if k == 0 { 4_000_000_000 - s } else { (s * [1, 7, 11, 13, 17, 19][k]) % 2_053 };
    let mut columns: Vec<(&str, ArrayRef)> = KEYS
        .iter()
        .enumerate()
        .map(|(k, name)| (*name, Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| key(k, r.0)))) as ArrayRef))
        .collect();
    let n = rows.len();
    columns.extend([
        ("time", Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1 * 15_000_000_000))) as ArrayRef),
        (
            "value_u64",
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| 1_000 * r.1 as u64 + u64::from(r.0)))),
        ),
        ("value_f64", Arc::new(Float64Array::from(vec![None; n]))),
        ("scale", Arc::new(UInt32Array::from(vec![1u32; n]))),
        ("is_counter", Arc::new(BooleanArray::from(vec![true; n]))),
    ]);
    let input = RecordBatch::try_from_iter(columns).expect("valid batch");
    for min_rows_per_task in [1, 1 << 16] {
        let opts = RateOptions { min_rows_per_task, ..RateOptions::default() };
        let out = rates(std::slice::from_ref(&input), &cols, &[], &opts).expect("rates");
        assert_eq!(out.series_rows, (0..n_series).collect::<Vec<_>>());
        assert_eq!(series(&out.intervals), (0..n_series).collect::<Vec<_>>());
        assert!(floats(&out.intervals, "delta").iter().all(|d| *d == Some(1_000.0)));
        assert!(floats(&out.intervals, "rate_per_s").iter().all(|r| (r.expect("rate") - 1_000.0 / 15.0).abs() < 1e-12));
    }
}

#[test]
fn shuffled_series_spanning_centuries_sorts_with_duplicates_in_read_order() {
    // Times ~250 years apart (too far apart to pack with the read position into one u64),
    // out of order, with t=0 read twice (700 read last).
    let rows = [(0, 2, 4_000_000_000, 900), (0, 2, 0, 600), (0, 2, -4_000_000_000, 100), (0, 2, 0, 700)];
    let out = run(&[batch(&rows)], &RateOptions::default()).expect("rates").intervals;
    assert_eq!(ints(&out, "end"), [0, 4_000_000_000_000_000_000]);
    assert_eq!(ints(&out, "start"), [-4_000_000_000_000_000_000, 0]);
    assert_eq!(floats(&out, "delta"), [Some(600.0), Some(200.0)]);
}

#[test]
fn overflow_rule_comes_from_the_vocabulary_by_counter_name() {
    // PMA data counters: 32-bit saturating unless a reading exceeds it (then 64-bit wrapping).
    assert_eq!(OverflowRule::of_counter("port_xmit_data_bytes"), OverflowRule { mode: OverflowMode::Wide, bits: 32 });
    assert_eq!(OverflowRule::of_counter("port_rcv_errors"), OverflowRule { mode: OverflowMode::Saturate, bits: 16 });
    assert_eq!(
        OverflowRule::of_counter("rx_out_of_buffer_packets"),
        OverflowRule { mode: OverflowMode::Wrap, bits: 32 }
    );
    assert_eq!(
        OverflowRule::of_counter("ext_port_xmit_data_bytes"),
        OverflowRule { mode: OverflowMode::Wrap, bits: 64 }
    );
    // A name outside the vocabulary: 64-bit wrapping, so a decrease is a reset.
    assert_eq!(OverflowRule::of_counter("vendor_private_counter"), OverflowRule::UNKNOWN);
    assert_eq!(OverflowRule::of_counter("port_rcv_errors").register_max(), 65_535);
    assert_eq!(OverflowRule::UNKNOWN.register_max(), u64::MAX);
}

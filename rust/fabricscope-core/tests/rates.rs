//! The rate kernel on hand-made batches: wraps, saturation, resets, duplicates, order, errors.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, UInt32Array, UInt64Array};
use fabricscope_core::Error;
use fabricscope_core::rates::{OverflowMode, OverflowRule, RateColumns, RateOptions, rates};

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
    let out = rates(&[batch(&rows)], &COLS, &RULES, &RateOptions::default()).expect("rates");
    assert_eq!(out.num_rows(), 4);
    assert_eq!(floats(&out, "delta"), [Some(150.0), None, None, Some(400.0)]);
    assert_eq!(floats(&out, "rate_per_s"), [Some(150.0), None, None, Some(100.0)]);
    assert_eq!(flags(&out, "wrapped"), [true, false, false, false]);
    assert_eq!(flags(&out, "reset"), [false, true, false, false]);
    assert_eq!(flags(&out, "saturated"), [false, false, true, false]);
    let row: Vec<u32> = out.column(0).as_primitive::<UInt32Type>().values().to_vec();
    assert_eq!(row, [1, 2, 4, 6]);
}

#[test]
fn shuffled_rows_across_batches_with_duplicates_last_read_wins() {
    // One series read out of order over two batches; t=10 read twice (200 read last).
    let first = batch(&[(0, 2, 20, 300), (0, 2, 10, 150)]);
    let second = batch(&[(0, 2, 0, 100), (0, 2, 10, 200), (0, 2, 30, 400)]);
    let out = rates(&[first, second], &COLS, &RULES, &RateOptions::default()).expect("rates");
    assert_eq!(floats(&out, "delta"), [Some(100.0), Some(100.0), Some(100.0)]);
    let row: Vec<u32> = out.column(0).as_primitive::<UInt32Type>().values().to_vec();
    assert_eq!(row, [3, 0, 4]);
}

#[test]
fn gap_longer_than_three_median_intervals_has_no_rate() {
    let rows: Vec<_> = [0, 10, 20, 30, 200, 210].iter().map(|&t| (0, 2, t, 1_000 * t as u64)).collect();
    let out = rates(&[batch(&rows)], &COLS, &RULES, &RateOptions::default()).expect("rates");
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

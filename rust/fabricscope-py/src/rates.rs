//! `rates`: the rate kernel over an Arrow table (argument conversion only).

use std::sync::Arc;

use arrow_array::UInt32Array;
use fabricscope_core::rates::{OverflowRule, RateColumns, RateOptions, rates_schema};
use fabricscope_core::vocabulary::COUNTERS;
use pyo3::prelude::*;
use pyo3_arrow::{PyArray, PyTable};

use crate::error::{guarded, to_py_err};

/// Rate the counter rows of `table` (columns `time`, the six series key codes, `value_u64`,
/// `value_f64`, `scale`, `is_counter`). `counters` names the `counter` codes: `(code, name)`;
/// each name's overflow rule comes from the vocabulary (codes not named, and names outside the
/// vocabulary, are 64-bit wrapping). Returns the intervals (`series, start, end, interval_s,
/// value, delta, rate_per_s, scale, wrapped, saturated, reset, gap`) and, per series, the input
/// row of its first reading. `min_rows_per_task` only changes how the work is split (1 forces
/// the parallel path on small tables). The GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (table, counters, *, gap_factor=3.0, min_gap_s=0.0, min_rows_per_task=None))]
pub fn rates(
    py: Python<'_>,
    table: PyTable,
    counters: Vec<(u32, String)>,
    gap_factor: f64,
    min_gap_s: f64,
    min_rows_per_task: Option<usize>,
) -> PyResult<(PyTable, PyArray)> {
    let rules: Vec<(u32, OverflowRule)> =
        counters.into_iter().map(|(code, name)| (code, OverflowRule::of_counter(&name))).collect();
    let (batches, _) = table.into_inner();
    let opts = RateOptions {
        gap_factor,
        min_gap_s,
        min_rows_per_task: min_rows_per_task.unwrap_or(RateOptions::default().min_rows_per_task),
    };
    // The batches are only read; a panic cannot leave them half-modified.
    let batches = std::panic::AssertUnwindSafe(batches);
    let result = guarded(py, move || {
        let batches = batches;
        let cols = RateColumns {
            keys: &["host", "device", "port", "priority", "counter", "source"],
            counter: "counter",
            time: "time",
            value_u64: "value_u64",
            value_f64: "value_f64",
            scale: "scale",
            is_counter: "is_counter",
        };
        fabricscope_core::rates::rates(&batches.0, &cols, &rules, &opts)
    })?;
    let out = result.map_err(|e| to_py_err(py, &e))?;
    let series_rows = PyArray::from_array_ref(Arc::new(UInt32Array::from(out.series_rows)));
    Ok((PyTable::try_new(vec![out.intervals], rates_schema())?, series_rows))
}

/// Every vocabulary counter's overflow rule as the rate kernel applies it: `(counter, mode,
/// bits, register_max)` with mode `none`, `saturate`, `wrap` or `wide` (`saturate@bits|wrap@64`)
/// and the register maximum `2^bits - 1` of the basic width.
#[pyfunction]
pub fn overflow_rules() -> Vec<(&'static str, &'static str, u8, u64)> {
    COUNTERS
        .iter()
        .map(|c| {
            let rule = OverflowRule::of_counter(c.name);
            (c.name, rule.mode.as_str(), rule.bits, rule.register_max())
        })
        .collect()
}

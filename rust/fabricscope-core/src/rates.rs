//! Counters into rates over Arrow arrays: per-series deltas, rates and data-quality flags.
//!
//! The semantics are those of the Polars reference (`fabricscope.rates.rates_reference`), row for
//! row and bit for bit; this module only computes them with less work:
//!
//! * **Series ids** come from the key columns' integer codes (dictionary codes of the
//!   categorical columns, port and priority numbers): each column's codes are compacted to the
//!   values present, combined in mixed radix, and numbered densely in order of first appearance.
//!   No string is compared and no hash of the six keys is sorted.
//! * **Ordering** is a stable counting sort by series id (one histogram, one scatter), which
//!   keeps read order inside a series; a series that is not already in time order (shuffled
//!   inputs) is then sorted by time on its own, stably, so duplicates keep read order.
//! * **One pass per series** drops duplicate timestamps (the last reading wins), decides the
//!   series' overflow width, takes the median interval, and emits every interval with its delta,
//!   rate and flags (`wrapped`, `saturated`, `reset`, `gap`).
//!
//! Rules (each output row is one interval between two consecutive readings of a series):
//! a decrease of a `wrap@N` counter (N < 64) whose earlier register reading was in the upper half
//! of its range is a wrap and the delta adds the range; any other decrease is a reset (no delta);
//! an interval ending on a register pegged at `2^N - 1` of a saturating counter is `saturated`
//! (no delta); `saturate@32|wrap@64` counters are 64-bit wrapping when any reading of the series
//! exceeds the 32-bit register, else 32-bit saturating; an interval longer than `gap_factor`
//! times the series' median interval (and longer than `min_gap_s`) is a gap (no rate).

use std::sync::Arc;

use ahash::AHashMap;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float64Type, Int64Type, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, PrimitiveArray, RecordBatch, UInt32Array};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};

/// How a counter behaves at the top of its register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowMode {
    /// Not a wrapping or saturating register (gauges, plain 64-bit values): a decrease is a reset.
    None,
    /// Stops at `2^bits - 1` (IBA PMA PortCounters).
    Saturate,
    /// Wraps to zero at `2^bits` (mlx5 Q counters at 32 bits).
    Wrap,
    /// `saturate@bits|wrap@64`: saturating unless a reading exceeds the basic register.
    Wide,
}

/// Overflow rule of one counter: mode and register width in bits (the basic width for `Wide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverflowRule {
    /// Mode.
    pub mode: OverflowMode,
    /// Register width in bits, 1..=64.
    pub bits: u8,
}

impl OverflowRule {
    /// The rule of a counter without one in the vocabulary: 64-bit wrapping (never wraps in
    /// practice, so a decrease is a reset).
    pub const UNKNOWN: OverflowRule = OverflowRule { mode: OverflowMode::Wrap, bits: 64 };

    fn register_max(self) -> u64 {
        if self.bits >= 64 { u64::MAX } else { (1u64 << self.bits) - 1 }
    }
}

/// Options of [`rates`].
#[derive(Debug, Clone, Copy)]
pub struct RateOptions {
    /// An interval longer than this many times the series' median interval is a gap.
    pub gap_factor: f64,
    /// Intervals no longer than this (seconds) are never gaps.
    pub min_gap_s: f64,
}

impl Default for RateOptions {
    fn default() -> Self {
        RateOptions { gap_factor: 3.0, min_gap_s: 0.0 }
    }
}

/// Names of the columns [`rates`] reads. `keys` are the series keys (integer codes: dictionary
/// codes, port, priority), in the order that defines a series; `counter` must be one of them.
#[derive(Debug, Clone)]
pub struct RateColumns<'a> {
    /// Series key columns (unsigned integers of at most 32 bits, nullable).
    pub keys: &'a [&'a str],
    /// The key column holding the counter's code, looked up in the rules.
    pub counter: &'a str,
    /// Reading time (int64 or timestamp, nanoseconds, no nulls).
    pub time: &'a str,
    /// Exact integer value (uint64, nullable).
    pub value_u64: &'a str,
    /// Other value (float64, nullable).
    pub value_f64: &'a str,
    /// Stored units per register unit (uint32).
    pub scale: &'a str,
    /// Rows to rate (boolean; others and nulls are skipped).
    pub is_counter: &'a str,
}

/// Schema of the [`rates`] result: `row` (the input row of the interval's end, counting rows
/// across batches), `start` (nanoseconds), `interval_s`, `value`, `delta`, `rate_per_s`, and the
/// flags `wrapped`, `saturated`, `reset`, `gap`. Rows are ordered by series (in order of first
/// appearance), then time.
pub fn rates_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("row", DataType::UInt32, false),
        Field::new("start", DataType::Int64, false),
        Field::new("interval_s", DataType::Float64, false),
        Field::new("value", DataType::Float64, true),
        Field::new("delta", DataType::Float64, true),
        Field::new("rate_per_s", DataType::Float64, true),
        Field::new("wrapped", DataType::Boolean, false),
        Field::new("saturated", DataType::Boolean, false),
        Field::new("reset", DataType::Boolean, false),
        Field::new("gap", DataType::Boolean, false),
    ]))
}

/// Most rows [`rates`] takes in one call: row numbers and two value-kind bits share a `u32`.
pub const MAX_ROWS: usize = 1 << 30;

const KIND_NULL: u32 = 0;
const KIND_INT: u32 = 1;
const KIND_FLOAT: u32 = 2;
const KIND_SHIFT: u32 = 30;
const ROW_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// One reading, gathered into series order: 24 bytes, so the scatter writes one small record.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    time: i64,
    /// `u64` value, or the bits of the `f64` value (see the kind bits of `row_kind`).
    bits: u64,
    /// Input row in the low 30 bits, value kind in the top two.
    row_kind: u32,
    scale: u32,
}

impl Reading {
    fn row(self) -> u32 {
        self.row_kind & ROW_MASK
    }
    fn kind(self) -> u32 {
        self.row_kind >> KIND_SHIFT
    }
    fn as_u64(self) -> Option<u64> {
        (self.kind() == KIND_INT).then_some(self.bits)
    }
    /// The value as one float: the exact integer when there is one, else the float value.
    fn as_f64(self) -> Option<f64> {
        match self.kind() {
            KIND_INT => Some(self.bits as f64),
            KIND_FLOAT => Some(f64::from_bits(self.bits)),
            _ => None,
        }
    }
    /// The register reading (`value / scale`); none for floats and a zero scale, as in Polars
    /// (integer division by zero is null there).
    fn raw(self) -> Option<u64> {
        match (self.as_u64(), self.scale) {
            (Some(v), s) if s != 0 => Some(v / u64::from(s)),
            _ => None,
        }
    }
}

/// A series key column: its integer codes, read row by row as `code + 1` (0 for null).
enum KeyCodes<'a> {
    U8(&'a [u8], Option<&'a NullBuffer>),
    U16(&'a [u16], Option<&'a NullBuffer>),
    U32(&'a [u32], Option<&'a NullBuffer>),
}

impl<'a> KeyCodes<'a> {
    fn new(name: &str, array: &'a dyn Array) -> Result<Self> {
        let nulls = array.logical_nulls().is_some().then(|| array.nulls()).flatten();
        Ok(match array.data_type() {
            DataType::UInt8 => KeyCodes::U8(array.as_primitive::<UInt8Type>().values(), nulls),
            DataType::UInt16 => KeyCodes::U16(array.as_primitive::<UInt16Type>().values(), nulls),
            DataType::UInt32 => KeyCodes::U32(array.as_primitive::<UInt32Type>().values(), nulls),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "rates: key column {name:?} must be uint8, uint16 or uint32 codes, not {other}"
                )));
            }
        })
    }

    /// Call `f(row, code + 1)` for every row (0 for null), with the type dispatch outside the loop.
    fn for_each(&self, mut f: impl FnMut(usize, u64)) {
        fn run<T: Copy + Into<u64>>(v: &[T], nulls: Option<&NullBuffer>, f: &mut impl FnMut(usize, u64)) {
            match nulls {
                None => v.iter().enumerate().for_each(|(i, &x)| f(i, x.into() + 1)),
                Some(n) => v.iter().enumerate().for_each(|(i, &x)| f(i, if n.is_null(i) { 0 } else { x.into() + 1 })),
            }
        }
        match self {
            KeyCodes::U8(v, n) => run(v, *n, &mut f),
            KeyCodes::U16(v, n) => run(v, *n, &mut f),
            KeyCodes::U32(v, n) => run(v, *n, &mut f),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> u64 {
        let (v, nulls) = match self {
            KeyCodes::U8(v, n) => (u64::from(v[i]), n),
            KeyCodes::U16(v, n) => (u64::from(v[i]), n),
            KeyCodes::U32(v, n) => (u64::from(v[i]), n),
        };
        match nulls {
            Some(n) if n.is_null(i) => 0,
            _ => v + 1,
        }
    }
}

/// Codes of one key column compacted to the values present: small dense tables instead of the
/// raw code range (a global string cache can number far more names than one table holds).
struct Compaction {
    /// Raw `code + 1` to compact code, when the raw range is small enough for a table.
    table: Vec<u32>,
    /// Otherwise a map.
    map: AHashMap<u64, u32>,
    len: u32,
}

impl Compaction {
    #[inline]
    fn get(&self, raw: u64) -> u64 {
        if self.table.is_empty() {
            u64::from(self.map.get(&raw).copied().unwrap_or(0))
        } else {
            u64::from(self.table[raw as usize])
        }
    }
}

/// Numbers compound keys densely in order of first appearance.
enum Densify {
    Table(Vec<u32>),
    Map(AHashMap<u64, u32>),
}

impl Densify {
    fn new(cardinality: u64, rows: usize) -> Self {
        // A table costs 4 bytes per possible key; worth it up to a few times the rows.
        if cardinality <= (2 * rows as u64).max(1 << 16) {
            Densify::Table(vec![u32::MAX; cardinality as usize])
        } else {
            Densify::Map(AHashMap::with_capacity(1024))
        }
    }

    #[inline]
    fn id(&mut self, key: u64, next: &mut u32) -> u32 {
        match self {
            Densify::Table(t) => {
                let slot = &mut t[key as usize];
                if *slot == u32::MAX {
                    *slot = *next;
                    *next += 1;
                }
                *slot
            }
            Densify::Map(m) => *m.entry(key).or_insert_with(|| {
                let id = *next;
                *next += 1;
                id
            }),
        }
    }
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    batch.column_by_name(name).ok_or_else(|| Error::InvalidArgument(format!("rates: the input has no column {name:?}")))
}

fn wrong_type(name: &str, expected: &str, found: &DataType) -> Error {
    Error::InvalidArgument(format!("rates: column {name:?} must be {expected}, not {found}"))
}

/// The columns of one batch, typed.
struct BatchColumns<'a> {
    keys: Vec<KeyCodes<'a>>,
    counter: KeyCodes<'a>,
    time: &'a [i64],
    value_u64: &'a PrimitiveArray<UInt64Type>,
    value_f64: &'a PrimitiveArray<Float64Type>,
    scale: &'a PrimitiveArray<UInt32Type>,
    is_counter: &'a BooleanArray,
}

impl<'a> BatchColumns<'a> {
    fn new(batch: &'a RecordBatch, cols: &RateColumns<'_>) -> Result<Self> {
        let keys =
            cols.keys.iter().map(|k| KeyCodes::new(k, column(batch, k)?.as_ref())).collect::<Result<Vec<_>>>()?;
        let counter = KeyCodes::new(cols.counter, column(batch, cols.counter)?.as_ref())?;
        let time = column(batch, cols.time)?;
        if time.null_count() > 0 {
            return Err(Error::InvalidArgument(format!("rates: column {:?} has null times", cols.time)));
        }
        let time = match time.data_type() {
            DataType::Int64 => time.as_primitive::<Int64Type>().values().as_ref(),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                time.as_primitive::<TimestampNanosecondType>().values().as_ref()
            }
            other => return Err(wrong_type(cols.time, "int64 or timestamp[ns]", other)),
        };
        let value_u64 = column(batch, cols.value_u64)?;
        let value_f64 = column(batch, cols.value_f64)?;
        let scale = column(batch, cols.scale)?;
        let is_counter = column(batch, cols.is_counter)?;
        Ok(BatchColumns {
            keys,
            counter,
            time,
            value_u64: value_u64
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(|| wrong_type(cols.value_u64, "uint64", value_u64.data_type()))?,
            value_f64: value_f64
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(|| wrong_type(cols.value_f64, "float64", value_f64.data_type()))?,
            scale: scale
                .as_primitive_opt::<UInt32Type>()
                .ok_or_else(|| wrong_type(cols.scale, "uint32", scale.data_type()))?,
            is_counter: is_counter
                .as_boolean_opt()
                .ok_or_else(|| wrong_type(cols.is_counter, "boolean", is_counter.data_type()))?,
        })
    }

    #[inline]
    fn reading(&self, i: usize, row: u32) -> Reading {
        let (kind, bits) = if self.value_u64.is_valid(i) {
            (KIND_INT, self.value_u64.value(i))
        } else if self.value_f64.is_valid(i) {
            (KIND_FLOAT, self.value_f64.value(i).to_bits())
        } else {
            (KIND_NULL, 0)
        };
        // A null scale makes the register reading unknown, like a zero scale.
        let scale = if self.scale.is_valid(i) { self.scale.value(i) } else { 0 };
        Reading { time: self.time[i], bits, row_kind: row | (kind << KIND_SHIFT), scale }
    }
}

/// `a < b` as Polars compares floats: NaN is equal to NaN and greater than every number.
#[inline]
fn float_lt(a: f64, b: f64) -> bool {
    if a.is_nan() { false } else { b.is_nan() || a < b }
}

/// Kleene AND of three-valued booleans (None = null), as Polars evaluates `&`.
fn and3(values: &[Option<bool>]) -> Option<bool> {
    if values.contains(&Some(false)) {
        Some(false)
    } else if values.contains(&None) {
        None
    } else {
        Some(true)
    }
}

/// The median as Polars computes it (linear interpolation between the two middle values).
fn median(values: &mut [f64]) -> f64 {
    let n = values.len();
    let mid = (n - 1) / 2;
    let (_, lower, upper) = values.select_nth_unstable_by(mid, f64::total_cmp);
    let lower = *lower;
    if n % 2 == 1 {
        return lower;
    }
    let upper = upper.iter().copied().fold(f64::INFINITY, f64::min);
    lower + (upper - lower) * 0.5
}

/// Output columns under construction.
struct Out {
    row: Vec<u32>,
    start: Vec<i64>,
    interval_s: Vec<f64>,
    value: Vec<f64>,
    value_valid: BooleanBufferBuilder,
    delta: Vec<f64>,
    delta_valid: BooleanBufferBuilder,
    rate: Vec<f64>,
    rate_valid: BooleanBufferBuilder,
    wrapped: BooleanBufferBuilder,
    saturated: BooleanBufferBuilder,
    reset: BooleanBufferBuilder,
    gap: BooleanBufferBuilder,
}

impl Out {
    fn with_capacity(n: usize) -> Self {
        Out {
            row: Vec::with_capacity(n),
            start: Vec::with_capacity(n),
            interval_s: Vec::with_capacity(n),
            value: Vec::with_capacity(n),
            value_valid: BooleanBufferBuilder::new(n),
            delta: Vec::with_capacity(n),
            delta_valid: BooleanBufferBuilder::new(n),
            rate: Vec::with_capacity(n),
            rate_valid: BooleanBufferBuilder::new(n),
            wrapped: BooleanBufferBuilder::new(n),
            saturated: BooleanBufferBuilder::new(n),
            reset: BooleanBufferBuilder::new(n),
            gap: BooleanBufferBuilder::new(n),
        }
    }

    fn finish(mut self) -> Result<RecordBatch> {
        fn floats(values: Vec<f64>, valid: &mut BooleanBufferBuilder) -> ArrayRef {
            let nulls = NullBuffer::new(valid.finish());
            let nulls = (nulls.null_count() > 0).then_some(nulls);
            Arc::new(Float64Array::new(ScalarBuffer::from(values), nulls))
        }
        fn flags(b: &mut BooleanBufferBuilder) -> ArrayRef {
            Arc::new(BooleanArray::new(b.finish(), None))
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::new(ScalarBuffer::from(self.row), None)),
            Arc::new(Int64Array::new(ScalarBuffer::from(self.start), None)),
            Arc::new(Float64Array::new(ScalarBuffer::from(self.interval_s), None)),
            floats(self.value, &mut self.value_valid),
            floats(self.delta, &mut self.delta_valid),
            floats(self.rate, &mut self.rate_valid),
            flags(&mut self.wrapped),
            flags(&mut self.saturated),
            flags(&mut self.reset),
            flags(&mut self.gap),
        ];
        RecordBatch::try_new(rates_schema(), columns)
            .map_err(|e| Error::InvalidArgument(format!("rates: cannot build the result: {e}")))
    }
}

/// Effective rule of one series after looking at its readings (`Wide` resolved).
#[derive(Clone, Copy)]
struct SeriesRule {
    mode: OverflowMode,
    bits: u8,
    max: u64,
}

fn series_rule(rule: OverflowRule, readings: &[Reading]) -> SeriesRule {
    let max = rule.register_max();
    match rule.mode {
        OverflowMode::Wide => {
            if readings.iter().any(|r| r.raw().is_some_and(|raw| raw > max)) {
                SeriesRule { mode: OverflowMode::Wrap, bits: 64, max: u64::MAX }
            } else {
                SeriesRule { mode: OverflowMode::Saturate, bits: rule.bits, max }
            }
        }
        mode => SeriesRule { mode, bits: rule.bits, max },
    }
}

/// Nanoseconds to seconds as the Polars reference computes them: whole seconds plus the remainder
/// (exact for whole-second intervals), the remainder multiplied by the reciprocal of 1e9 (Polars'
/// optimiser turns the division into that multiplication, which can differ in the last bit).
#[inline]
fn seconds(ns: i64) -> f64 {
    const NS: i64 = 1_000_000_000;
    const PER_NS: f64 = 1.0 / 1e9;
    ns.div_euclid(NS) as f64 + ns.rem_euclid(NS) as f64 * PER_NS
}

/// Emit the intervals of one series (readings in time order, duplicates already dropped).
fn emit_series(readings: &[Reading], rule: SeriesRule, opts: &RateOptions, scratch: &mut Vec<f64>, out: &mut Out) {
    scratch.clear();
    scratch.extend(readings.windows(2).map(|w| seconds(w[1].time.wrapping_sub(w[0].time))));
    let threshold = opts.gap_factor * median(scratch);
    let half = rule.max / 2 + 1;
    for w in readings.windows(2) {
        let (prev, cur) = (w[0], w[1]);
        let interval_s = seconds(cur.time.wrapping_sub(prev.time));
        let (u, pu) = (cur.as_u64(), prev.as_u64());
        let (f, pf) = (cur.as_f64(), prev.as_f64());
        let both_int = u.is_some() && pu.is_some();
        let decreased = match (u, pu, f, pf) {
            (Some(u), Some(pu), _, _) => Some(u < pu),
            (_, _, Some(f), Some(pf)) => Some(float_lt(f, pf)),
            _ => None,
        };
        let (raw, prev_raw) = (cur.raw(), prev.raw());
        let pegged = rule.mode == OverflowMode::Saturate && raw == Some(rule.max);
        let wrapped = and3(&[
            Some(rule.mode == OverflowMode::Wrap && rule.bits < 64 && both_int),
            decreased,
            prev_raw.map(|p| p >= half),
        ]);
        let reset = and3(&[decreased, wrapped.map(|w| !w)]);
        let delta = if both_int {
            match (wrapped, decreased, u, pu, raw, prev_raw) {
                (Some(true), _, _, _, Some(raw), Some(prev_raw)) => Some(
                    (rule.max.wrapping_sub(prev_raw).wrapping_add(raw).wrapping_add(1)) as f64 * f64::from(cur.scale),
                ),
                (Some(true), ..) => None,
                (_, Some(false), Some(u), Some(pu), _, _) => Some(u.wrapping_sub(pu) as f64),
                _ => None,
            }
        } else {
            match (decreased, f, pf) {
                (Some(false), Some(f), Some(pf)) => Some(f - pf),
                _ => None,
            }
        };
        let reset = reset == Some(true);
        let delta = if pegged || reset || f.is_none() { None } else { delta };
        let gap = interval_s > threshold && interval_s > opts.min_gap_s;
        let rate = if gap || interval_s <= 0.0 { None } else { delta.map(|d| d / interval_s) };
        out.row.push(cur.row());
        out.start.push(prev.time);
        out.interval_s.push(interval_s);
        out.value.push(f.unwrap_or(0.0));
        out.value_valid.append(f.is_some());
        out.delta.push(delta.unwrap_or(0.0));
        out.delta_valid.append(delta.is_some());
        out.rate.push(rate.unwrap_or(0.0));
        out.rate_valid.append(rate.is_some());
        out.wrapped.append(wrapped == Some(true));
        out.saturated.append(pegged);
        out.reset.append(reset);
        out.gap.append(gap);
    }
}

/// Rate every counter row of `batches` (one table split in batches).
///
/// Args: `rules` maps a counter code (the `counter` column's integer) to its overflow rule;
/// codes without one get [`OverflowRule::UNKNOWN`].
///
/// Returns one batch in [`rates_schema`]; its `row` column numbers input rows across batches, so
/// the caller gathers the key columns (and the end time) from its own table.
///
/// Errors: a missing column or one of an unexpected type, null times, or more than
/// [`MAX_ROWS`] rows ([`Error::InvalidArgument`]).
pub fn rates(
    batches: &[RecordBatch],
    cols: &RateColumns<'_>,
    rules: &[(u32, OverflowRule)],
    opts: &RateOptions,
) -> Result<RecordBatch> {
    let typed = batches.iter().map(|b| BatchColumns::new(b, cols)).collect::<Result<Vec<_>>>()?;
    let lens: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    let total: usize = lens.iter().sum();
    if total > MAX_ROWS {
        return Err(Error::InvalidArgument(format!(
            "rates: {total} rows exceed the {MAX_ROWS} one call takes; partition the input by host"
        )));
    }

    // Compact each key column, then combine them in mixed radix; a column that would overflow
    // the u64 key starts a new level that is numbered densely first.
    let compactions: Vec<Compaction> = (0..cols.keys.len())
        .map(|k| {
            let columns: Vec<&KeyCodes<'_>> = typed.iter().map(|t| &t.keys[k]).collect();
            Compaction::build_refs(&columns, total)
        })
        .collect();
    let mut keys: Vec<u64> = Vec::new();
    let mut cardinality: u64 = 1;
    for (k, comp) in compactions.iter().enumerate() {
        let card = u64::from(comp.len.max(1));
        if let Some(c) = cardinality.checked_mul(card) {
            cardinality = c;
        } else {
            // Renumber what we have densely (at most `total` ids), then continue.
            let mut dense = Densify::new(cardinality, total);
            let mut next = 0u32;
            for key in &mut keys {
                *key = u64::from(dense.id(*key, &mut next));
            }
            cardinality = u64::from(next.max(1)) * card;
        }
        if k == 0 {
            keys = vec![0; total];
        }
        let mut base = 0usize;
        for (t, &len) in typed.iter().zip(&lens) {
            let part = &mut keys[base..base + len];
            if comp.table.is_empty() {
                t.keys[k].for_each(|i, raw| part[i] = part[i] * card + comp.get(raw));
            } else {
                let table = comp.table.as_slice();
                t.keys[k].for_each(|i, raw| part[i] = part[i] * card + u64::from(table[raw as usize]));
            }
            base += len;
        }
    }
    if keys.is_empty() {
        keys = vec![0; total];
    }

    // Dense series ids of the counter rows (first appearance), and each series' row count.
    let mut dense = Densify::new(cardinality, total);
    let mut next = 0u32;
    let mut counts: Vec<u32> = Vec::new();
    let mut series_of: Vec<u64> = keys; // reused in place: key -> series id (u32::MAX: not rated)
    let mut at = 0usize;
    let mut rated = 0usize;
    for (t, &len) in typed.iter().zip(&lens) {
        for i in 0..len {
            let key = series_of[at];
            series_of[at] = if t.is_counter.is_valid(i) && t.is_counter.value(i) {
                let id = dense.id(key, &mut next);
                if id as usize == counts.len() {
                    counts.push(0);
                }
                counts[id as usize] += 1;
                rated += 1;
                u64::from(id)
            } else {
                u64::from(u32::MAX)
            };
            at += 1;
        }
    }
    drop(dense);
    let n_series = counts.len();

    // Stable counting sort by series: the scatter gathers each reading next to its series.
    let mut offsets: Vec<usize> = Vec::with_capacity(n_series + 1);
    let mut acc = 0usize;
    offsets.push(0);
    for &c in &counts {
        acc += c as usize;
        offsets.push(acc);
    }
    drop(counts);
    let mut fill: Vec<usize> = offsets[..n_series].to_vec();
    let mut sorted = vec![Reading::default(); rated];
    let mut counter_code: Vec<u32> = vec![0; n_series];
    let mut at = 0usize;
    for (t, &len) in typed.iter().zip(&lens) {
        for i in 0..len {
            let s = series_of[at];
            if s != u64::from(u32::MAX) {
                let s = s as usize;
                let slot = fill[s];
                if slot == offsets[s] {
                    counter_code[s] = (t.counter.get(i).wrapping_sub(1)) as u32;
                }
                sorted[slot] = t.reading(i, at as u32);
                fill[s] = slot + 1;
            }
            at += 1;
        }
    }
    drop(series_of);
    drop(fill);

    let mut rule_by_code: AHashMap<u32, OverflowRule> = AHashMap::with_capacity(rules.len());
    rule_by_code.extend(rules.iter().copied());

    let mut out = Out::with_capacity(rated.saturating_sub(n_series));
    let mut kept: Vec<Reading> = Vec::new();
    let mut scratch: Vec<f64> = Vec::new();
    for s in 0..n_series {
        let series = &mut sorted[offsets[s]..offsets[s + 1]];
        if series.len() < 2 {
            continue;
        }
        if series.windows(2).any(|w| w[1].time < w[0].time) {
            // Stable: readings of one time keep read order, so the last one read stays last.
            series.sort_by_key(|r| r.time);
        }
        // Duplicate timestamps: keep the last reading of each time.
        kept.clear();
        for (j, r) in series.iter().enumerate() {
            if series.get(j + 1).is_none_or(|next| next.time != r.time) {
                kept.push(*r);
            }
        }
        if kept.len() < 2 {
            continue;
        }
        let rule = rule_by_code.get(&counter_code[s]).copied().unwrap_or(OverflowRule::UNKNOWN);
        emit_series(&kept, series_rule(rule, &kept), opts, &mut scratch, &mut out);
    }
    out.finish()
}

impl Compaction {
    fn build_refs(columns: &[&KeyCodes<'_>], rows: usize) -> Self {
        let mut max = 0u64;
        for c in columns {
            c.for_each(|_, raw| max = max.max(raw));
        }
        let mut out = Compaction { table: Vec::new(), map: AHashMap::new(), len: 0 };
        let direct = max < (4 * rows as u64).max(1 << 16);
        if direct {
            out.table = vec![u32::MAX; max as usize + 1];
        }
        for c in columns {
            c.for_each(|_, raw| {
                if direct {
                    let slot = &mut out.table[raw as usize];
                    if *slot == u32::MAX {
                        *slot = out.len;
                        out.len += 1;
                    }
                } else if let std::collections::hash_map::Entry::Vacant(e) = out.map.entry(raw) {
                    e.insert(out.len);
                    out.len += 1;
                }
            });
        }
        out
    }
}

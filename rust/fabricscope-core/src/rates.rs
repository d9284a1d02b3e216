//! Counters into rates over Arrow arrays: per-series deltas, rates and data-quality flags.
//!
//! The semantics are those of the Polars reference (`fabricscope.detect.rates.rates_reference`), row for
//! row and bit for bit; this module only computes them with less work:
//!
//! * **Series ids** come from the key columns' integer codes (dictionary codes of the
//!   categorical columns, port and priority numbers): each column's codes are compacted to the
//!   values present, combined in mixed radix (one pass over cache-sized row blocks, in parallel),
//!   and numbered densely in order of first appearance. No string is compared and no hash of the
//!   six keys is sorted.
//! * **Ordering** is a stable counting sort by series id (one histogram, one scatter), which
//!   keeps read order inside a series; a series that is not already in time order (shuffled
//!   inputs) is then sorted by time on its own, stably, so duplicates keep read order.
//! * **One pass per series** drops duplicate timestamps (the last reading wins), decides the
//!   series' overflow width and takes the median interval; a second one emits every interval with
//!   its delta, rate and flags (`wrapped`, `saturated`, `reset`, `gap`) straight into the output
//!   arrays, at offsets known from the first pass.
//! * **Both cores**: the series are cut into ranges of about equal row counts; the scatter, the
//!   per-series passes and the output of each range run as independent tasks (rayon), each writing
//!   its own disjoint part of the sorted readings and of the output arrays.
//!
//! Rules (each output row is one interval between two consecutive readings of a series):
//! a decrease of a `wrap@N` counter (N < 64) whose earlier register reading was in the upper half
//! of its range is a wrap and the delta adds the range; any other decrease is a reset (no delta);
//! an interval ending on a register pegged at `2^N - 1` of a saturating counter is `saturated`
//! (no delta); `saturate@32|wrap@64` counters are 64-bit wrapping when any reading of the series
//! exceeds the 32-bit register, else 32-bit saturating; an interval longer than `gap_factor`
//! times the series' median interval (and longer than `min_gap_s`) is a gap (no rate).

use std::ops::Range;
use std::sync::Arc;

use ahash::AHashMap;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float64Type, Int64Type, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, PrimitiveArray, RecordBatch, UInt32Array};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use rayon::prelude::*;

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

impl OverflowMode {
    /// Lowercase name: `none`, `saturate`, `wrap`, `wide`.
    pub fn as_str(self) -> &'static str {
        match self {
            OverflowMode::None => "none",
            OverflowMode::Saturate => "saturate",
            OverflowMode::Wrap => "wrap",
            OverflowMode::Wide => "wide",
        }
    }
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

    /// The rule of the vocabulary counter `name`: its [`crate::vocabulary::Overflow`] (the
    /// counter's default; the samples name the reader, not the spelling, so a spelling's override
    /// cannot be told apart), or [`OverflowRule::UNKNOWN`] for a name outside the vocabulary.
    pub fn of_counter(name: &str) -> OverflowRule {
        use crate::vocabulary::Overflow;
        match crate::vocabulary::counter(name).map(|c| c.overflow) {
            Some(Overflow::Saturate(bits)) => OverflowRule { mode: OverflowMode::Saturate, bits },
            Some(Overflow::Wrap(bits)) => OverflowRule { mode: OverflowMode::Wrap, bits },
            Some(Overflow::SaturateOrWide { basic, .. }) => OverflowRule { mode: OverflowMode::Wide, bits: basic },
            Some(Overflow::None) => OverflowRule { mode: OverflowMode::None, bits: 64 },
            None => OverflowRule::UNKNOWN,
        }
    }

    /// The register maximum of the rule's (basic) width: `2^bits - 1`.
    pub fn register_max(self) -> u64 {
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
    /// Fewest rows worth a parallel task: inputs of fewer than twice this many rows run on one
    /// thread. The result does not depend on it (tests set it to 1 to run the parallel path on
    /// small inputs).
    pub min_rows_per_task: usize,
}

/// fabricscope default: below ~64k rows a task costs more to schedule than it saves.
pub const DEFAULT_MIN_ROWS_PER_TASK: usize = 1 << 16;

impl Default for RateOptions {
    fn default() -> Self {
        RateOptions { gap_factor: 3.0, min_gap_s: 0.0, min_rows_per_task: DEFAULT_MIN_ROWS_PER_TASK }
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

/// Schema of [`Rates::intervals`]: `series` (index into [`Rates::series_rows`]), `start` and
/// `end` (nanoseconds), `interval_s`, `value`, `delta`, `rate_per_s`, `scale` (of the reading at
/// `end`), and the flags `wrapped`, `saturated`, `reset`, `gap`. Rows are ordered by series (in
/// order of first appearance), then time.
pub fn rates_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("series", DataType::UInt32, false),
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
        Field::new("interval_s", DataType::Float64, false),
        Field::new("value", DataType::Float64, true),
        Field::new("delta", DataType::Float64, true),
        Field::new("rate_per_s", DataType::Float64, true),
        Field::new("scale", DataType::UInt32, false),
        Field::new("wrapped", DataType::Boolean, false),
        Field::new("saturated", DataType::Boolean, false),
        Field::new("reset", DataType::Boolean, false),
        Field::new("gap", DataType::Boolean, false),
    ]))
}

/// Result of [`rates`].
#[derive(Debug, Clone)]
pub struct Rates {
    /// One row per interval, in [`rates_schema`].
    pub intervals: RecordBatch,
    /// Per series id: the input row (counting across batches) of its first reading, from which
    /// the caller takes the series' key values. Series are numbered in order of first appearance.
    pub series_rows: Vec<u32>,
}

/// Most rows [`rates`] takes in one call: row numbers fit a `u32` with room for markers.
pub const MAX_ROWS: usize = 1 << 30;

const KIND_NULL: u64 = 0;
const KIND_INT: u64 = 1;
const KIND_FLOAT: u64 = 2;

/// One reading as stored in series order: `[time, value bits, scale << 32 | position << 2 | kind]`
/// (position: within its series, set only to sort it). A plain array of integers, so the big
/// buffer is allocated zeroed by the allocator (no initialising pass).
type Packed = [u64; 3];

/// Bits of a reading's position in its series ([`MAX_ROWS`] is 2^30, so 30 bits suffice).
const POSITION_BITS: u64 = 0xFFFF_FFFC;

/// One reading, unpacked.
#[derive(Debug, Clone, Copy)]
struct Reading {
    time: i64,
    /// `u64` value, or the bits of the `f64` value (see `kind`).
    bits: u64,
    kind: u64,
    scale: u32,
}

impl Reading {
    #[inline]
    fn unpack(p: &Packed) -> Self {
        Reading { time: p[0] as i64, bits: p[1], kind: p[2] & 3, scale: (p[2] >> 32) as u32 }
    }
    #[inline]
    fn as_u64(self) -> Option<u64> {
        (self.kind == KIND_INT).then_some(self.bits)
    }
    /// The value as one float: the exact integer when there is one, else the float value.
    #[inline]
    fn as_f64(self) -> Option<f64> {
        match self.kind {
            KIND_INT => Some(self.bits as f64),
            KIND_FLOAT => Some(f64::from_bits(self.bits)),
            _ => None,
        }
    }
    /// The register reading (`value / scale`); none for floats and a zero scale, as in Polars
    /// (integer division by zero is null there).
    #[inline]
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

    fn len(&self) -> usize {
        match self {
            KeyCodes::U8(v, _) => v.len(),
            KeyCodes::U16(v, _) => v.len(),
            KeyCodes::U32(v, _) => v.len(),
        }
    }

    /// Call `f(i - rows.start, code + 1)` for every row `i` of `rows` (0 for null), with the type
    /// dispatch outside the loop.
    fn for_each_in(&self, rows: Range<usize>, mut f: impl FnMut(usize, u64)) {
        fn run<T: Copy + Into<u64>>(
            v: &[T],
            nulls: Option<&NullBuffer>,
            rows: Range<usize>,
            f: &mut impl FnMut(usize, u64),
        ) {
            let start = rows.start;
            let part = &v[rows];
            match nulls {
                None => part.iter().enumerate().for_each(|(j, &x)| f(j, x.into() + 1)),
                Some(n) => part.iter().enumerate().for_each(|(j, &x)| {
                    f(j, if n.is_null(start + j) { 0 } else { x.into() + 1 });
                }),
            }
        }
        match self {
            KeyCodes::U8(v, n) => run(v, *n, rows, &mut f),
            KeyCodes::U16(v, n) => run(v, *n, rows, &mut f),
            KeyCodes::U32(v, n) => run(v, *n, rows, &mut f),
        }
    }

    fn for_each(&self, f: impl FnMut(usize, u64)) {
        self.for_each_in(0..self.len(), f);
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
    fn build(columns: &[&KeyCodes<'_>], rows: usize) -> Self {
        // One pass marks the codes present in a table that grows with the largest code seen;
        // a code past the table's limit switches to a map (a second pass, rare).
        let limit = (4 * rows as u64).max(1 << 16);
        let mut present: Vec<bool> = Vec::new();
        let mut too_large = false;
        for c in columns {
            c.for_each(|_, raw| {
                if let Some(slot) = present.get_mut(raw as usize) {
                    *slot = true;
                } else if raw < limit {
                    let len = (raw as usize + 1).max(2 * present.len()).min(limit as usize);
                    present.resize(len, false);
                    present[raw as usize] = true;
                } else {
                    too_large = true;
                }
            });
        }
        let mut out = Compaction { table: Vec::new(), map: AHashMap::new(), len: 0 };
        if too_large {
            for c in columns {
                c.for_each(|_, raw| {
                    if let std::collections::hash_map::Entry::Vacant(e) = out.map.entry(raw) {
                        e.insert(out.len);
                        out.len += 1;
                    }
                });
            }
        } else {
            out.table = present
                .iter()
                .map(|&p| {
                    if p {
                        out.len += 1;
                        out.len - 1
                    } else {
                        u32::MAX
                    }
                })
                .collect();
        }
        out
    }

    /// Fold this column into the keys of rows `rows`: `key = key * len + compact code`.
    fn fold(&self, codes: &KeyCodes<'_>, rows: Range<usize>, keys: &mut [u64]) {
        let card = u64::from(self.len.max(1));
        if self.table.is_empty() {
            let map = &self.map;
            codes.for_each_in(rows, |j, raw| {
                keys[j] = keys[j] * card + u64::from(map.get(&raw).copied().unwrap_or(0));
            });
        } else {
            let table = self.table.as_slice();
            codes.for_each_in(rows, |j, raw| keys[j] = keys[j] * card + u64::from(table[raw as usize]));
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

    /// The id of `key`, and whether it is new.
    #[inline]
    fn id(&mut self, key: u64, next: &mut u32) -> (u32, bool) {
        match self {
            Densify::Table(t) => {
                let slot = &mut t[key as usize];
                if *slot == u32::MAX {
                    *slot = *next;
                    *next += 1;
                    (*slot, true)
                } else {
                    (*slot, false)
                }
            }
            Densify::Map(m) => {
                let mut new = false;
                let id = *m.entry(key).or_insert_with(|| {
                    new = true;
                    let id = *next;
                    *next += 1;
                    id
                });
                (id, new)
            }
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
    fn reading(&self, i: usize) -> Packed {
        let (kind, bits) = if self.value_u64.is_valid(i) {
            (KIND_INT, self.value_u64.value(i))
        } else if self.value_f64.is_valid(i) {
            (KIND_FLOAT, self.value_f64.value(i).to_bits())
        } else {
            (KIND_NULL, 0)
        };
        // A null scale makes the register reading unknown, like a zero scale.
        let scale = if self.scale.is_valid(i) { self.scale.value(i) } else { 0 };
        [self.time[i] as u64, bits, u64::from(scale) << 32 | kind]
    }
}

/// `a < b` as Polars compares floats: NaN is equal to NaN and greater than every number.
#[inline]
fn float_lt(a: f64, b: f64) -> bool {
    if a.is_nan() { false } else { b.is_nan() || a < b }
}

/// Kleene AND of three-valued booleans (None = null), as Polars evaluates `&`.
#[inline]
fn and3(values: [Option<bool>; 3]) -> Option<bool> {
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

/// Effective rule of one series after looking at its readings (`Wide` resolved).
#[derive(Clone, Copy)]
struct SeriesRule {
    mode: OverflowMode,
    bits: u8,
    max: u64,
}

impl SeriesRule {
    const PLACEHOLDER: SeriesRule = SeriesRule { mode: OverflowMode::None, bits: 64, max: u64::MAX };
}

fn series_rule(rule: OverflowRule, readings: &[Packed]) -> SeriesRule {
    let max = rule.register_max();
    match rule.mode {
        OverflowMode::Wide => {
            if readings.iter().any(|r| Reading::unpack(r).raw().is_some_and(|raw| raw > max)) {
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

// Bits of the per-row flag byte, unpacked into the validity and flag bitmaps at the end.
const F_VALUE: u8 = 1;
const F_DELTA: u8 = 2;
const F_RATE: u8 = 4;
const F_WRAPPED: u8 = 8;
const F_SATURATED: u8 = 16;
const F_RESET: u8 = 32;
const F_GAP: u8 = 64;

/// A range of rows of the output arrays, written by one task.
struct OutPart<'a> {
    series: &'a mut [u32],
    start: &'a mut [u64],
    end: &'a mut [i64],
    interval_s: &'a mut [f64],
    value: &'a mut [f64],
    delta: &'a mut [f64],
    rate: &'a mut [f64],
    scale: &'a mut [u32],
    flags: &'a mut [u8],
}

impl<'a> OutPart<'a> {
    /// The first `n` rows, and the rest.
    fn split(self, n: usize) -> (OutPart<'a>, OutPart<'a>) {
        let (series, series_rest) = self.series.split_at_mut(n);
        let (start, start_rest) = self.start.split_at_mut(n);
        let (end, end_rest) = self.end.split_at_mut(n);
        let (interval_s, interval_rest) = self.interval_s.split_at_mut(n);
        let (value, value_rest) = self.value.split_at_mut(n);
        let (delta, delta_rest) = self.delta.split_at_mut(n);
        let (rate, rate_rest) = self.rate.split_at_mut(n);
        let (scale, scale_rest) = self.scale.split_at_mut(n);
        let (flags, flags_rest) = self.flags.split_at_mut(n);
        (
            OutPart { series, start, end, interval_s, value, delta, rate, scale, flags },
            OutPart {
                series: series_rest,
                start: start_rest,
                end: end_rest,
                interval_s: interval_rest,
                value: value_rest,
                delta: delta_rest,
                rate: rate_rest,
                scale: scale_rest,
                flags: flags_rest,
            },
        )
    }
}

/// Emit the intervals of one series (readings in time order, duplicates already dropped) into
/// `out`, which has exactly `readings.len() - 1` rows.
fn emit_series(
    series: u32,
    readings: &[Packed],
    rule: SeriesRule,
    threshold: f64,
    min_gap_s: f64,
    out: &mut OutPart<'_>,
) {
    let half = rule.max / 2 + 1;
    let wrapping = rule.mode == OverflowMode::Wrap && rule.bits < 64;
    let saturating = rule.mode == OverflowMode::Saturate;
    out.series.fill(series);
    for (j, w) in readings.windows(2).enumerate() {
        let (prev, cur) = (Reading::unpack(&w[0]), Reading::unpack(&w[1]));
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
        let pegged = saturating && raw == Some(rule.max);
        let wrapped = and3([Some(wrapping && both_int), decreased, prev_raw.map(|p| p >= half)]);
        let reset = and3([decreased, wrapped.map(|w| !w), Some(true)]);
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
        let gap = interval_s > threshold && interval_s > min_gap_s;
        let rate = if gap || interval_s <= 0.0 { None } else { delta.map(|d| d / interval_s) };
        out.start[j] = prev.time as u64;
        out.end[j] = cur.time;
        out.interval_s[j] = interval_s;
        out.value[j] = f.unwrap_or(0.0);
        out.delta[j] = delta.unwrap_or(0.0);
        out.rate[j] = rate.unwrap_or(0.0);
        out.scale[j] = cur.scale;
        let bit = |on: bool, flag: u8| if on { flag } else { 0 };
        out.flags[j] = bit(f.is_some(), F_VALUE)
            | bit(delta.is_some(), F_DELTA)
            | bit(rate.is_some(), F_RATE)
            | bit(wrapped == Some(true), F_WRAPPED)
            | bit(pegged, F_SATURATED)
            | bit(reset, F_RESET)
            | bit(gap, F_GAP);
    }
}

/// Sort one series' readings by time; readings of one time keep read order (the last one read
/// stays last), as a stable sort would leave them.
fn sort_by_time(series: &mut [Packed], keys: &mut Vec<u64>, scratch: &mut Vec<Packed>) {
    let (min, max) = series.iter().fold((i64::MAX, i64::MIN), |(lo, hi), r| (lo.min(r[0] as i64), hi.max(r[0] as i64)));
    let position_bits = usize::BITS - series.len().leading_zeros();
    let span = (i128::from(max) - i128::from(min)) as u128;
    if span >> (64 - position_bits) == 0 {
        // Usual case: (time - earliest, read position) packed in one u64; integers sort fastest.
        keys.clear();
        keys.extend(
            series
                .iter()
                .enumerate()
                .map(|(pos, r)| ((r[0] as i64).wrapping_sub(min) as u64) << position_bits | pos as u64),
        );
        keys.sort_unstable();
        let mask = (1u64 << position_bits) - 1;
        scratch.clear();
        scratch.extend(keys.iter().map(|k| series[(k & mask) as usize]));
        series.copy_from_slice(scratch);
    } else {
        // Times too far apart to share a u64 with the position: the position goes into the
        // reading's spare bits and an unstable sort by (time, position) gives the stable order.
        for (pos, r) in series.iter_mut().enumerate() {
            r[2] = (r[2] & !POSITION_BITS) | ((pos as u64) << 2);
        }
        series.sort_unstable_by_key(|r| (r[0] as i64, r[2] & POSITION_BITS));
    }
}

/// Run `f` on every item, in parallel when `parallel`.
fn run_tasks<T: Send, R: Send>(items: Vec<T>, parallel: bool, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if parallel { items.into_par_iter().map(f).collect() } else { items.into_iter().map(f).collect() }
}

/// Cut `slice` into consecutive pieces of the given lengths.
fn split_lengths<T>(mut slice: &mut [T], lengths: impl IntoIterator<Item = usize>) -> Vec<&mut [T]> {
    let mut parts = Vec::new();
    for len in lengths {
        let (head, tail) = slice.split_at_mut(len);
        parts.push(head);
        slice = tail;
    }
    parts
}

/// Cut the series (row offsets `offsets`, one more than series) into at most `tasks` consecutive
/// ranges of about equal row counts.
fn series_ranges(offsets: &[usize], tasks: usize) -> Vec<Range<usize>> {
    let n_series = offsets.len() - 1;
    let rated = offsets[n_series];
    let mut cuts: Vec<usize> = vec![0];
    for t in 1..tasks {
        let target = rated * t / tasks;
        let s = offsets.partition_point(|&o| o < target).min(n_series);
        if s > *cuts.last().unwrap_or(&0) {
            cuts.push(s);
        }
    }
    cuts.push(n_series);
    cuts.dedup();
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// A block of input rows: batch, rows inside it, and the position of its first row overall.
#[derive(Clone)]
struct Block {
    batch: usize,
    rows: Range<usize>,
    base: usize,
}

/// Cache-sized blocks of rows (the key pass keeps one block of keys in L1/L2 across columns).
fn blocks(lens: &[usize]) -> Vec<Block> {
    const BLOCK_ROWS: usize = 1 << 14;
    let mut out = Vec::new();
    let mut base = 0;
    for (batch, &len) in lens.iter().enumerate() {
        let mut at = 0;
        while at < len {
            let end = (at + BLOCK_ROWS).min(len);
            out.push(Block { batch, rows: at..end, base: base + at });
            at = end;
        }
        base += len;
    }
    out
}

/// Rate every counter row of `batches` (one table split in batches).
///
/// Args: `rules` maps a counter code (the `counter` column's integer) to its overflow rule;
/// codes without one get [`OverflowRule::UNKNOWN`].
///
/// Returns the intervals in [`rates_schema`] and, per series, the input row of its first reading
/// (rows counted across batches), so the caller takes the key columns from its own table.
///
/// Errors: a missing column or one of an unexpected type, null times, or more than
/// [`MAX_ROWS`] rows ([`Error::InvalidArgument`]).
pub fn rates(
    batches: &[RecordBatch],
    cols: &RateColumns<'_>,
    rules: &[(u32, OverflowRule)],
    opts: &RateOptions,
) -> Result<Rates> {
    let typed = batches.iter().map(|b| BatchColumns::new(b, cols)).collect::<Result<Vec<_>>>()?;
    let lens: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    let total: usize = lens.iter().sum();
    if total > MAX_ROWS {
        return Err(Error::InvalidArgument(format!(
            "rates: {total} rows exceed the {MAX_ROWS} one call takes; partition the input by host"
        )));
    }
    let min_rows = opts.min_rows_per_task.max(1);
    let parallel = total >= 2 * min_rows;

    // Series keys: compact each key column (columns in parallel), then fold the columns into one
    // u64 per row in mixed radix, block by block. A column that would overflow the u64 starts a
    // new level: the keys so far are first renumbered densely (at most `total` values).
    let compactions: Vec<Compaction> = run_tasks((0..cols.keys.len()).collect(), parallel, |k| {
        let columns: Vec<&KeyCodes<'_>> = typed.iter().map(|t| &t.keys[k]).collect();
        Compaction::build(&columns, total)
    });
    let mut levels: Vec<Vec<usize>> = vec![Vec::new()];
    let mut level_card: u64 = 1;
    for (k, comp) in compactions.iter().enumerate() {
        let card = u64::from(comp.len.max(1));
        if card == 1 {
            continue; // one value (or none): adds nothing to the key
        }
        if let Some(c) = level_card.checked_mul(card) {
            level_card = c;
            if let Some(l) = levels.last_mut() {
                l.push(k);
            }
        } else {
            levels.push(vec![k]);
            level_card = (total as u64).max(1) * card;
        }
    }
    let row_blocks = blocks(&lens);
    let mut keys: Vec<u64> = vec![0; total];
    let mut cardinality: u64 = 1;
    for (l, level) in levels.iter().enumerate() {
        if l > 0 {
            let mut dense = Densify::new(cardinality, total);
            let mut next = 0u32;
            for key in &mut keys {
                *key = u64::from(dense.id(*key, &mut next).0);
            }
            cardinality = u64::from(next.max(1));
        }
        let parts = split_lengths(&mut keys, row_blocks.iter().map(|b| b.rows.len()));
        let work: Vec<_> = row_blocks.iter().zip(parts).collect();
        run_tasks(work, parallel, |(block, part)| {
            for &k in level {
                compactions[k].fold(&typed[block.batch].keys[k], block.rows.clone(), part);
            }
        });
        for &k in level {
            cardinality = cardinality.saturating_mul(u64::from(compactions[k].len.max(1)));
        }
    }
    drop(compactions);

    // Dense series ids of the counter rows in order of first appearance (u32::MAX: not rated),
    // each series' row count, first row and counter code.
    let mut dense = Densify::new(cardinality, total);
    let mut next = 0u32;
    let mut counts: Vec<u32> = Vec::new();
    let mut series_rows: Vec<u32> = Vec::new();
    let mut counter_codes: Vec<u32> = Vec::new();
    let mut series_of: Vec<u32> = vec![0; total];
    let mut rated = 0usize;
    for (t, block) in row_blocks.iter().map(|b| (&typed[b.batch], b)) {
        let is_counter = t.is_counter;
        for i in block.rows.clone() {
            let at = block.base + i - block.rows.start;
            series_of[at] = if is_counter.is_valid(i) && is_counter.value(i) {
                let (id, new) = dense.id(keys[at], &mut next);
                if new {
                    counts.push(0);
                    series_rows.push(at as u32);
                    counter_codes.push(t.counter.get(i).wrapping_sub(1) as u32);
                }
                counts[id as usize] += 1;
                rated += 1;
                id
            } else {
                u32::MAX
            };
        }
    }
    drop(dense);
    let n_series = counts.len();

    // Ranges of series of about equal row counts, one task each: as many as threads for the
    // scatter (each of its tasks scans every row), a few times more for the per-series passes
    // (which cost nothing extra when cut finer, and balance better when a core is busy).
    let mut offsets: Vec<usize> = Vec::with_capacity(n_series + 1);
    let mut acc = 0usize;
    offsets.push(0);
    for &c in &counts {
        acc += c as usize;
        offsets.push(acc);
    }
    drop(counts);
    let threads = rayon::current_num_threads().max(2);
    let tasks = |most: usize| if parallel { (rated / min_rows).clamp(1, most) } else { 1 };
    let scatter_ranges = series_ranges(&offsets, tasks(threads));
    let ranges = series_ranges(&offsets, tasks(4 * threads));

    // Stable counting sort by series: each task scans every row and gathers the readings of its
    // own series, next to each other, in read order.
    let mut sorted: Vec<Packed> = vec![[0; 3]; rated];
    {
        let parts = split_lengths(&mut sorted, scatter_ranges.iter().map(|r| offsets[r.end] - offsets[r.start]));
        let work: Vec<_> = scatter_ranges.iter().cloned().zip(parts).collect();
        let (typed, series_of, offsets) = (&typed, &series_of, &offsets);
        run_tasks(work, scatter_ranges.len() > 1, |(range, part)| {
            let (lo, width) = (range.start as u32, range.len() as u32);
            let base = offsets[range.start];
            let mut fill: Vec<usize> = offsets[range].iter().map(|o| o - base).collect();
            let mut at = 0usize;
            for t in typed {
                let n = t.time.len();
                for (i, &s) in series_of[at..at + n].iter().enumerate() {
                    let local = s.wrapping_sub(lo);
                    if local < width {
                        let slot = &mut fill[local as usize];
                        part[*slot] = t.reading(i);
                        *slot += 1;
                    }
                }
                at += n;
            }
        });
    }

    let mut rule_by_code: AHashMap<u32, OverflowRule> = AHashMap::with_capacity(rules.len());
    rule_by_code.extend(rules.iter().copied());

    // Per series: time order, duplicates dropped in place (`kept` readings at the start of its
    // slice), effective rule and gap threshold.
    let mut kept: Vec<u32> = vec![0; n_series];
    let mut plans: Vec<(SeriesRule, f64)> = vec![(SeriesRule::PLACEHOLDER, 0.0); n_series];
    {
        let parts = split_lengths(&mut sorted, ranges.iter().map(|r| offsets[r.end] - offsets[r.start]));
        let kept_parts = split_lengths(&mut kept, ranges.iter().map(Range::len));
        let plan_parts = split_lengths(&mut plans, ranges.iter().map(Range::len));
        let work: Vec<_> = ranges.iter().cloned().zip(parts).zip(kept_parts.into_iter().zip(plan_parts)).collect();
        let (offsets, counter_codes, rule_by_code) = (&offsets, &counter_codes, &rule_by_code);
        run_tasks(work, ranges.len() > 1, |((range, part), (kept, plans))| {
            let base = offsets[range.start];
            let mut scratch: Vec<f64> = Vec::new();
            let (mut sort_keys, mut sort_scratch): (Vec<u64>, Vec<Packed>) = (Vec::new(), Vec::new());
            for (j, s) in range.enumerate() {
                let series = &mut part[offsets[s] - base..offsets[s + 1] - base];
                if series.len() < 2 {
                    kept[j] = series.len() as u32;
                    continue;
                }
                if series.windows(2).any(|w| (w[1][0] as i64) < (w[0][0] as i64)) {
                    sort_by_time(series, &mut sort_keys, &mut sort_scratch);
                }
                // Duplicate timestamps: keep the last reading of each time.
                let mut n = 0usize;
                for i in 0..series.len() {
                    if i + 1 == series.len() || series[i + 1][0] != series[i][0] {
                        series[n] = series[i];
                        n += 1;
                    }
                }
                kept[j] = n as u32;
                if n < 2 {
                    continue;
                }
                let readings = &series[..n];
                let rule = rule_by_code.get(&counter_codes[s]).copied().unwrap_or(OverflowRule::UNKNOWN);
                scratch.clear();
                scratch.extend(readings.windows(2).map(|w| seconds((w[1][0] as i64).wrapping_sub(w[0][0] as i64))));
                plans[j] = (series_rule(rule, readings), opts.gap_factor * median(&mut scratch));
            }
        });
    }

    // Output offsets per series, then every interval written in place by its range's task.
    let mut out_offsets: Vec<usize> = Vec::with_capacity(n_series + 1);
    let mut acc = 0usize;
    out_offsets.push(0);
    for &k in &kept {
        acc += (k as usize).saturating_sub(1);
        out_offsets.push(acc);
    }
    let n_out = acc;
    // The row keys and series ids are no longer needed: their memory (already mapped, at least as
    // many rows as the output) holds the `start` and `series` columns, which saves page faults.
    let mut series_col = series_of;
    series_col.truncate(n_out);
    let mut start = keys;
    start.truncate(n_out);
    let mut end: Vec<i64> = vec![0; n_out];
    let mut interval_s: Vec<f64> = vec![0.0; n_out];
    let mut value: Vec<f64> = vec![0.0; n_out];
    let mut delta: Vec<f64> = vec![0.0; n_out];
    let mut rate: Vec<f64> = vec![0.0; n_out];
    let mut scale: Vec<u32> = vec![0; n_out];
    let mut flags: Vec<u8> = vec![0; n_out];
    {
        let mut rest = OutPart {
            series: &mut series_col,
            start: &mut start,
            end: &mut end,
            interval_s: &mut interval_s,
            value: &mut value,
            delta: &mut delta,
            rate: &mut rate,
            scale: &mut scale,
            flags: &mut flags,
        };
        let mut out_parts = Vec::with_capacity(ranges.len());
        for r in &ranges {
            let (head, tail) = rest.split(out_offsets[r.end] - out_offsets[r.start]);
            out_parts.push(head);
            rest = tail;
        }
        let parts = split_lengths(&mut sorted, ranges.iter().map(|r| offsets[r.end] - offsets[r.start]));
        let work: Vec<_> = ranges.iter().cloned().zip(parts).zip(out_parts).collect();
        let (offsets, out_offsets, kept, plans) = (&offsets, &out_offsets, &kept, &plans);
        run_tasks(work, ranges.len() > 1, |((range, part), mut out)| {
            let base = offsets[range.start];
            for s in range {
                let n = kept[s] as usize;
                if n < 2 {
                    continue;
                }
                let readings = &part[offsets[s] - base..offsets[s] - base + n];
                let (mut head, tail) = out.split(out_offsets[s + 1] - out_offsets[s]);
                let (rule, threshold) = plans[s];
                emit_series(s as u32, readings, rule, threshold, opts.min_gap_s, &mut head);
                out = tail;
            }
        });
    }
    drop(sorted);

    // The flag bytes into the validity and flag bitmaps.
    let bits = [F_VALUE, F_DELTA, F_RATE, F_WRAPPED, F_SATURATED, F_RESET, F_GAP];
    let bitmaps: Vec<BooleanBuffer> =
        run_tasks(bits.to_vec(), parallel, |bit| BooleanBuffer::collect_bool(n_out, |i| flags[i] & bit != 0));
    drop(flags);
    let floats = |values: Vec<f64>, valid: &BooleanBuffer| -> ArrayRef {
        let nulls = NullBuffer::new(valid.clone());
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        Arc::new(Float64Array::new(ScalarBuffer::from(values), nulls))
    };
    let flag = |b: &BooleanBuffer| -> ArrayRef { Arc::new(BooleanArray::new(b.clone(), None)) };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::new(ScalarBuffer::from(series_col), None)),
        Arc::new(Int64Array::new(ScalarBuffer::new(Buffer::from_vec(start), 0, n_out), None)),
        Arc::new(Int64Array::new(ScalarBuffer::from(end), None)),
        Arc::new(Float64Array::new(ScalarBuffer::from(interval_s), None)),
        floats(value, &bitmaps[0]),
        floats(delta, &bitmaps[1]),
        floats(rate, &bitmaps[2]),
        Arc::new(UInt32Array::new(ScalarBuffer::from(scale), None)),
        flag(&bitmaps[3]),
        flag(&bitmaps[4]),
        flag(&bitmaps[5]),
        flag(&bitmaps[6]),
    ];
    let intervals = RecordBatch::try_new(rates_schema(), columns)
        .map_err(|e| Error::InvalidArgument(format!("rates: cannot build the result: {e}")))?;
    Ok(Rates { intervals, series_rows })
}

//! The canonical tables and their builders.
//!
//! **samples** (one row per observation; `docs/schema.md` is the prose version):
//!
//! | column | Arrow type | notes |
//! |---|---|---|
//! | `time` | timestamp[ns, UTC] | when the value was read |
//! | `host` | dictionary<int32, utf8> | machine or switch name |
//! | `device` | dictionary<int32, utf8> | `mlx5_0`, `eth2`, `gpu3`, or a node GUID `0x...` |
//! | `port` | uint16, nullable | IB port number; null for netdevs and GPUs |
//! | `priority` | uint8, nullable | 0-7 for per-priority counters |
//! | `counter` | dictionary<int32, utf8> | canonical name, or the raw name when unknown |
//! | `value_u64` | uint64, nullable | exact integer value (set for integer sources) |
//! | `value_f64` | float64, nullable | set when the value is not an exact non-negative integer |
//! | `scale` | uint32 | stored value = hardware register x scale (4 for IB data words) |
//! | `is_counter` | bool | cumulative counter (rate it) or gauge |
//! | `source` | dictionary<int32, utf8> | reader that produced the row |
//!
//! At most one of `value_u64`/`value_f64` is set; both null means "not available" (`N/A (no PMA)`,
//! DCGM blank sentinels).
//!
//! **port_attributes**: `time, host, device, port, key, value (utf8), source`: the non-numeric facts
//! (link layer, rate text, firmware, GUIDs) that explain the numbers.

use std::sync::Arc;

use ahash::AHashMap;
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};

/// Version of the samples and port-attributes schemas. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Metadata key carrying [`SCHEMA_VERSION`] in every schema we produce.
pub const SCHEMA_VERSION_KEY: &str = "fabricscope.schema_version";

fn dict_utf8() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

fn with_version(fields: Vec<Field>) -> SchemaRef {
    let meta = [(SCHEMA_VERSION_KEY.to_owned(), SCHEMA_VERSION.to_string())].into_iter().collect();
    Arc::new(Schema::new_with_metadata(fields, meta))
}

/// Schema of the samples table.
pub fn samples_schema() -> SchemaRef {
    with_version(vec![
        Field::new("time", time_type(), false),
        Field::new("host", dict_utf8(), false),
        Field::new("device", dict_utf8(), false),
        Field::new("port", DataType::UInt16, true),
        Field::new("priority", DataType::UInt8, true),
        Field::new("counter", dict_utf8(), false),
        Field::new("value_u64", DataType::UInt64, true),
        Field::new("value_f64", DataType::Float64, true),
        Field::new("scale", DataType::UInt32, false),
        Field::new("is_counter", DataType::Boolean, false),
        Field::new("source", dict_utf8(), false),
    ])
}

/// Schema of the port-attributes table.
pub fn attributes_schema() -> SchemaRef {
    with_version(vec![
        Field::new("time", time_type(), false),
        Field::new("host", dict_utf8(), false),
        Field::new("device", dict_utf8(), false),
        Field::new("port", DataType::UInt16, true),
        Field::new("key", dict_utf8(), false),
        Field::new("value", DataType::Utf8, false),
        Field::new("source", dict_utf8(), false),
    ])
}

/// A value as read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// Exact non-negative integer.
    U64(u64),
    /// Anything else numeric (negative, fractional, NaN, infinities, beyond 2^53 from a float).
    F64(f64),
    /// Not available.
    Null,
}

impl Value {
    /// Normalise a float read from a float-only source: integral, non-negative values that a
    /// float represents exactly (<= 2^53) become `U64`, so `1.493376e+07` and `14933760` agree.
    pub fn from_f64(v: f64) -> Value {
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        if (0.0..=EXACT).contains(&v) && v.fract() == 0.0 { Value::U64(v as u64) } else { Value::F64(v) }
    }

    /// Apply a parse-time multiplier. Integer overflow falls back to a float rather than wrapping.
    #[must_use]
    pub fn multiplied(self, by: u32) -> Value {
        if by == 1 {
            return self;
        }
        match self {
            Value::U64(v) => v.checked_mul(u64::from(by)).map_or(Value::F64(v as f64 * f64::from(by)), Value::U64),
            Value::F64(v) => Value::F64(v * f64::from(by)),
            Value::Null => Value::Null,
        }
    }
}

/// Interns strings into dense `i32` dictionary keys.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    map: AHashMap<Box<str>, i32>,
    values: Vec<Box<str>>,
}

impl Interner {
    /// Key of `s`, inserting it if new.
    pub fn intern(&mut self, s: &str) -> i32 {
        if let Some(&k) = self.map.get(s) {
            return k;
        }
        let k = self.values.len() as i32;
        self.values.push(s.into());
        self.map.insert(s.into(), k);
        k
    }

    /// The string for a key.
    pub fn get(&self, key: i32) -> Option<&str> {
        self.values.get(key as usize).map(AsRef::as_ref)
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when nothing is interned.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn dictionary(&self, keys: Vec<i32>) -> Result<DictionaryArray<Int32Type>, ArrowError> {
        let values = StringArray::from_iter_values(self.values.iter().map(AsRef::as_ref));
        DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), Arc::new(values))
    }
}

/// The strings of `text` that end at `ends` (each starts where the one before it ends), as an
/// Arrow string array; an error past the 2 GiB its 32-bit offsets reach.
fn strings_array(text: &str, ends: &[usize]) -> Result<StringArray, ArrowError> {
    let too_large = || ArrowError::InvalidArgumentError("strings of one batch exceed 2 GiB".into());
    let offsets = std::iter::once(Ok(0))
        .chain(ends.iter().map(|&e| i32::try_from(e).map_err(|_| too_large())))
        .collect::<Result<Vec<i32>, ArrowError>>()?;
    StringArray::try_new(OffsetBuffer::new(ScalarBuffer::from(offsets)), Buffer::from(text.as_bytes()), None)
}

/// The key that `intern` gives the string that has key `key` in `from`, remembered in `map` (by
/// `key`; -1: not yet), so that each string is interned once.
pub(crate) fn translate_key(map: &mut Vec<i32>, from: &Interner, key: i32, intern: impl FnOnce(&str) -> i32) -> i32 {
    let Ok(at) = usize::try_from(key) else { return intern("") };
    if let Some(&k) = map.get(at)
        && k >= 0
    {
        return k;
    }
    let k = intern(from.get(key).unwrap_or_default());
    if map.len() <= at {
        map.resize(at + 1, -1);
    }
    if let Some(slot) = map.get_mut(at) {
        *slot = k;
    }
    k
}

/// One row of the samples table, with strings already interned in the builder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Nanoseconds since the Unix epoch, UTC.
    pub time_ns: i64,
    /// Key from [`SampleBuilder::host`].
    pub host: i32,
    /// Key from [`SampleBuilder::device`].
    pub device: i32,
    /// Port number.
    pub port: Option<u16>,
    /// Priority 0-7.
    pub priority: Option<u8>,
    /// Key from [`SampleBuilder::counter`].
    pub counter: i32,
    /// The value (already multiplied).
    pub value: Value,
    /// Hardware-to-stored factor.
    pub scale: u32,
    /// Counter (true) or gauge (false).
    pub is_counter: bool,
}

#[derive(Default)]
struct NullableColumn<T> {
    values: Vec<T>,
    valid: Option<BooleanBufferBuilder>,
}

impl<T: Copy + Default> NullableColumn<T> {
    fn push(&mut self, v: Option<T>) {
        if let Some(x) = v {
            self.values.push(x);
            if let Some(b) = &mut self.valid {
                b.append(true);
            }
        } else {
            {
                let b = self.valid.get_or_insert_with(|| {
                    let mut b = BooleanBufferBuilder::new(self.values.capacity().max(1024));
                    b.append_n(self.values.len(), true);
                    b
                });
                self.values.push(T::default());
                b.append(false);
            }
        }
    }

    fn reserve(&mut self, rows: usize) {
        self.values.reserve(rows);
        if let Some(b) = &mut self.valid {
            b.reserve(rows);
        }
    }

    fn take(&mut self) -> (Vec<T>, Option<NullBuffer>) {
        let values = std::mem::take(&mut self.values);
        let nulls = self.valid.take().map(|mut b| NullBuffer::new(b.finish()));
        (values, nulls)
    }
}

/// Accumulates samples and emits [`RecordBatch`]es of the samples schema.
pub struct SampleBuilder {
    hosts: Interner,
    devices: Interner,
    counters: Interner,
    source: Interner,
    time: Vec<i64>,
    host: Vec<i32>,
    device: Vec<i32>,
    port: NullableColumn<u16>,
    priority: NullableColumn<u8>,
    counter: Vec<i32>,
    value_u64: NullableColumn<u64>,
    value_f64: NullableColumn<f64>,
    scale: Vec<u32>,
    is_counter: BooleanBufferBuilder,
    rows_total: u64,
}

impl SampleBuilder {
    /// A builder whose rows all carry `source` (the reader's name).
    pub fn new(source: &str) -> Self {
        let mut src = Interner::default();
        src.intern(source);
        SampleBuilder {
            hosts: Interner::default(),
            devices: Interner::default(),
            counters: Interner::default(),
            source: src,
            time: Vec::new(),
            host: Vec::new(),
            device: Vec::new(),
            port: NullableColumn::default(),
            priority: NullableColumn::default(),
            counter: Vec::new(),
            value_u64: NullableColumn::default(),
            value_f64: NullableColumn::default(),
            scale: Vec::new(),
            is_counter: BooleanBufferBuilder::new(1024),
            rows_total: 0,
        }
    }

    /// Intern a host name.
    pub fn host(&mut self, s: &str) -> i32 {
        self.hosts.intern(s)
    }
    /// Intern a device name.
    pub fn device(&mut self, s: &str) -> i32 {
        self.devices.intern(s)
    }
    /// Intern a counter name.
    pub fn counter(&mut self, s: &str) -> i32 {
        self.counters.intern(s)
    }
    /// The interned host names.
    pub fn hosts(&self) -> &Interner {
        &self.hosts
    }
    /// The interned device names.
    pub fn devices(&self) -> &Interner {
        &self.devices
    }

    /// Append one row.
    pub fn push(&mut self, s: &Sample) {
        self.time.push(s.time_ns);
        self.host.push(s.host);
        self.device.push(s.device);
        self.port.push(s.port);
        self.priority.push(s.priority);
        self.counter.push(s.counter);
        match s.value {
            Value::U64(v) => {
                self.value_u64.push(Some(v));
                self.value_f64.push(None);
            }
            Value::F64(v) => {
                self.value_u64.push(None);
                self.value_f64.push(Some(v));
            }
            Value::Null => {
                self.value_u64.push(None);
                self.value_f64.push(None);
            }
        }
        self.scale.push(s.scale);
        self.is_counter.append(s.is_counter);
        self.rows_total += 1;
    }

    /// Rows buffered and not yet emitted.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// Rows the columns hold without reallocating.
    pub fn capacity(&self) -> usize {
        self.time.capacity()
    }

    /// Make room for `rows` more rows in every column. A reader that sees a large input reserves
    /// a whole batch once: growing million-row columns by doubling copies them and touches twice
    /// the pages (untouched reserved pages cost no memory).
    pub fn reserve(&mut self, rows: usize) {
        self.time.reserve(rows);
        self.host.reserve(rows);
        self.device.reserve(rows);
        self.port.reserve(rows);
        self.priority.reserve(rows);
        self.counter.reserve(rows);
        self.value_u64.reserve(rows);
        self.value_f64.reserve(rows);
        self.scale.reserve(rows);
        self.is_counter.reserve(rows);
    }

    /// True when no rows are buffered.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Rows pushed over the builder's life.
    pub fn rows_total(&self) -> u64 {
        self.rows_total
    }

    /// Emit the buffered rows as one batch and start a new one (dictionaries are kept, so keys
    /// stay stable across batches of one input).
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let n = self.time.len();
        let time = TimestampNanosecondArray::from(std::mem::take(&mut self.time)).with_timezone("UTC");
        let host = self.hosts.dictionary(std::mem::take(&mut self.host))?;
        let device = self.devices.dictionary(std::mem::take(&mut self.device))?;
        let (pv, pn) = self.port.take();
        let port = UInt16Array::new(pv.into(), pn);
        let (qv, qn) = self.priority.take();
        let priority = UInt8Array::new(qv.into(), qn);
        let counter = self.counters.dictionary(std::mem::take(&mut self.counter))?;
        let (uv, un) = self.value_u64.take();
        let value_u64 = UInt64Array::new(uv.into(), un);
        let (fv, fnull) = self.value_f64.take();
        let value_f64 = Float64Array::new(fv.into(), fnull);
        let scale = UInt32Array::from(std::mem::take(&mut self.scale));
        let is_counter = BooleanArray::new(self.is_counter.finish(), None);
        let source = self.source.dictionary(vec![0; n])?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(time),
            Arc::new(host),
            Arc::new(device),
            Arc::new(port),
            Arc::new(priority),
            Arc::new(counter),
            Arc::new(value_u64),
            Arc::new(value_f64),
            Arc::new(scale),
            Arc::new(is_counter),
            Arc::new(source),
        ];
        RecordBatch::try_new(samples_schema(), columns)
    }
}

/// One row of the port-attributes table (strings interned in the builder).
#[derive(Debug, Clone)]
pub struct Attribute<'a> {
    /// Nanoseconds since the epoch, UTC.
    pub time_ns: i64,
    /// Host key.
    pub host: i32,
    /// Device key.
    pub device: i32,
    /// Port.
    pub port: Option<u16>,
    /// Attribute name (`link_layer`, `rate`, `fw_ver`, `node_guid`, ...).
    pub key: &'a str,
    /// Attribute value as text.
    pub value: &'a str,
}

/// Accumulates port attributes. Shares host/device dictionaries through its own interners.
pub struct AttributeBuilder {
    hosts: Interner,
    devices: Interner,
    keys: Interner,
    source: Interner,
    time: Vec<i64>,
    host: Vec<i32>,
    device: Vec<i32>,
    port: NullableColumn<u16>,
    key: Vec<i32>,
    /// Values side by side in one buffer (no allocation per row), and where each ends.
    value: String,
    value_ends: Vec<usize>,
    /// This builder's host and device keys by the samples builder's keys (-1: not yet), for
    /// [`Self::push_keyed`]: a reader that emits an attribute per label set would otherwise
    /// hash the same host text for every one.
    host_of: Vec<i32>,
    device_of: Vec<i32>,
    /// The last attribute name [`Self::push_keyed`] interned, and its key.
    last_key: Option<(Box<str>, i32)>,
}

impl AttributeBuilder {
    /// A builder whose rows all carry `source`.
    pub fn new(source: &str) -> Self {
        let mut src = Interner::default();
        src.intern(source);
        AttributeBuilder {
            hosts: Interner::default(),
            devices: Interner::default(),
            keys: Interner::default(),
            source: src,
            time: Vec::new(),
            host: Vec::new(),
            device: Vec::new(),
            port: NullableColumn::default(),
            key: Vec::new(),
            value: String::new(),
            value_ends: Vec::new(),
            host_of: Vec::new(),
            device_of: Vec::new(),
            last_key: None,
        }
    }

    /// Append one attribute; host and device are given as text.
    pub fn push(&mut self, time_ns: i64, host: &str, device: &str, port: Option<u16>, key: &str, value: &str) {
        self.time.push(time_ns);
        let h = self.hosts.intern(host);
        self.host.push(h);
        let d = self.devices.intern(device);
        self.device.push(d);
        self.port.push(port);
        let k = self.keys.intern(key);
        self.key.push(k);
        self.value.push_str(value);
        self.value_ends.push(self.value.len());
    }

    /// Append one attribute whose host and device are keys of `samples` (as a [`Sample`] carries
    /// them). The rows are the same as [`Self::push`] with their texts would make.
    pub fn push_keyed(&mut self, samples: &SampleBuilder, a: &Attribute<'_>) {
        self.time.push(a.time_ns);
        let h = translate_key(&mut self.host_of, samples.hosts(), a.host, |s| self.hosts.intern(s));
        self.host.push(h);
        let d = translate_key(&mut self.device_of, samples.devices(), a.device, |s| self.devices.intern(s));
        self.device.push(d);
        self.port.push(a.port);
        // A scrape's attributes are mostly one name (`job`) over and over.
        let k = match &self.last_key {
            Some((text, k)) if **text == *a.key => *k,
            _ => {
                let k = self.keys.intern(a.key);
                self.last_key = Some((a.key.into(), k));
                k
            }
        };
        self.key.push(k);
        self.value.push_str(a.value);
        self.value_ends.push(self.value.len());
    }

    /// Rows buffered.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Emit the buffered rows.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let n = self.time.len();
        let time = TimestampNanosecondArray::from(std::mem::take(&mut self.time)).with_timezone("UTC");
        let host = self.hosts.dictionary(std::mem::take(&mut self.host))?;
        let device = self.devices.dictionary(std::mem::take(&mut self.device))?;
        let (pv, pn) = self.port.take();
        let port = UInt16Array::new(pv.into(), pn);
        let key = self.keys.dictionary(std::mem::take(&mut self.key))?;
        let value = strings_array(&self.value, &self.value_ends)?;
        self.value.clear();
        self.value_ends.clear();
        let source = self.source.dictionary(vec![0; n])?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(time),
            Arc::new(host),
            Arc::new(device),
            Arc::new(port),
            Arc::new(key),
            Arc::new(value),
            Arc::new(source),
        ];
        RecordBatch::try_new(attributes_schema(), columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn float_values_normalise_to_exact_integers_only_when_exact() {
        assert_eq!(Value::from_f64(1.493_376e7), Value::U64(14_933_760));
        assert_eq!(Value::from_f64(0.5), Value::F64(0.5));
        assert_eq!(Value::from_f64(-1.0), Value::F64(-1.0));
        assert_eq!(Value::from_f64(1e300), Value::F64(1e300));
        assert!(matches!(Value::from_f64(f64::NAN), Value::F64(v) if v.is_nan()));
        assert_eq!(Value::U64(u64::MAX).multiplied(4), Value::F64(u64::MAX as f64 * 4.0));
        assert_eq!(Value::U64(10).multiplied(4), Value::U64(40));
    }

    #[test]
    fn builder_emits_nulls_and_dictionary_keys() {
        let mut builder = SampleBuilder::new("test");
        let host = builder.host("gpu01");
        let device = builder.device("mlx5_0");
        let counter = builder.counter("port_xmit_data_bytes");
        builder.push(&Sample {
            time_ns: 1,
            host,
            device,
            port: Some(1),
            priority: None,
            counter,
            value: Value::U64(u64::MAX),
            scale: 4,
            is_counter: true,
        });
        builder.push(&Sample {
            time_ns: 2,
            host,
            device,
            port: None,
            priority: Some(3),
            counter,
            value: Value::Null,
            scale: 1,
            is_counter: false,
        });
        let batch = builder.finish().expect("valid batch");
        assert_eq!(batch.num_rows(), 2);
        let port = batch.column(3).as_any().downcast_ref::<UInt16Array>().expect("u16");
        assert!(port.is_valid(0) && port.is_null(1));
        let v = batch.column(6).as_any().downcast_ref::<UInt64Array>().expect("u64");
        assert_eq!(v.value(0), u64::MAX);
        assert!(v.is_null(1));
        assert_eq!(batch.schema().metadata().get(SCHEMA_VERSION_KEY).map(String::as_str), Some("1"));
        // a second batch from the same builder starts empty
        assert_eq!(builder.finish().expect("empty").num_rows(), 0);
    }
}

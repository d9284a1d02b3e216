//! Shared helpers for the core's integration tests: read inputs through the real driver and
//! flatten the Arrow batches into plain rows that tests can compare exactly.
#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float64Type, Int32Type, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use fabricscope_core::{Event, InputReport, ReadOptions, Result, read_paths};

/// A value as the tests see it.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    U(u64),
    F(f64),
    Null,
}

/// One flattened samples row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub time_ns: i64,
    pub host: String,
    pub device: String,
    pub port: Option<u16>,
    pub priority: Option<u8>,
    pub counter: String,
    pub value: V,
    pub scale: u32,
    pub is_counter: bool,
    pub source: String,
}

/// One flattened attributes row.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    pub time_ns: i64,
    pub host: String,
    pub device: String,
    pub port: Option<u16>,
    pub key: String,
    pub value: String,
}

fn dict_str(batch: &RecordBatch, col: &str, i: usize) -> String {
    let d = batch.column_by_name(col).unwrap().as_dictionary::<Int32Type>();
    let key = d.keys().value(i) as usize;
    d.values().as_string::<i32>().value(key).to_owned()
}

pub fn rows_of(batch: &RecordBatch) -> Vec<Row> {
    let time = batch.column_by_name("time").unwrap().as_primitive::<TimestampNanosecondType>();
    let port = batch.column_by_name("port").unwrap().as_primitive::<UInt16Type>();
    let prio = batch.column_by_name("priority").unwrap().as_primitive::<UInt8Type>();
    let vu = batch.column_by_name("value_u64").unwrap().as_primitive::<UInt64Type>();
    let vf = batch.column_by_name("value_f64").unwrap().as_primitive::<Float64Type>();
    let scale = batch.column_by_name("scale").unwrap().as_primitive::<UInt32Type>();
    let isc = batch.column_by_name("is_counter").unwrap().as_boolean();
    (0..batch.num_rows())
        .map(|i| Row {
            time_ns: time.value(i),
            host: dict_str(batch, "host", i),
            device: dict_str(batch, "device", i),
            port: port.is_valid(i).then(|| port.value(i)),
            priority: prio.is_valid(i).then(|| prio.value(i)),
            counter: dict_str(batch, "counter", i),
            value: if vu.is_valid(i) {
                V::U(vu.value(i))
            } else if vf.is_valid(i) {
                V::F(vf.value(i))
            } else {
                V::Null
            },
            scale: scale.value(i),
            is_counter: isc.value(i),
            source: dict_str(batch, "source", i),
        })
        .collect()
}

pub fn attrs_of(batch: &RecordBatch) -> Vec<Attr> {
    let time = batch.column_by_name("time").unwrap().as_primitive::<TimestampNanosecondType>();
    let port = batch.column_by_name("port").unwrap().as_primitive::<UInt16Type>();
    let value = batch.column_by_name("value").unwrap().as_string::<i32>();
    (0..batch.num_rows())
        .map(|i| Attr {
            time_ns: time.value(i),
            host: dict_str(batch, "host", i),
            device: dict_str(batch, "device", i),
            port: port.is_valid(i).then(|| port.value(i)),
            key: dict_str(batch, "key", i),
            value: value.value(i).to_owned(),
        })
        .collect()
}

/// Everything one read produced.
pub struct Output {
    pub rows: Vec<Row>,
    pub attrs: Vec<Attr>,
    pub reports: Vec<InputReport>,
    /// Batches of other named tables (`Event::Table`), in arrival order.
    pub tables: Vec<(&'static str, RecordBatch)>,
}

impl Output {
    /// Rows for a counter, in read order.
    pub fn counter(&self, name: &str) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.counter == name).collect()
    }
}

/// The columns of a `links` row with Ethernet (LLDP) ends, in the order [`ethernet_links`] gives them.
pub const ETHERNET_LINK_COLUMNS: [&str; 9] = [
    "node_name",
    "port_name",
    "node_type",
    "tier",
    "peer_node_name",
    "peer_port_name",
    "peer_node_type",
    "peer_tier",
    "source",
];

/// Every `links` row of a read whose ends are Ethernet ports (LLDP: no GUID, no port number, both
/// checked), as [`ETHERNET_LINK_COLUMNS`] (`None` for a null).
pub fn ethernet_links(out: &Output) -> Vec<[Option<String>; 9]> {
    let mut v = Vec::new();
    for (name, b) in &out.tables {
        assert_eq!(*name, "links");
        for c in ["node_guid", "peer_node_guid"] {
            assert_eq!(b.column_by_name(c).unwrap().null_count(), b.num_rows(), "{c}: Ethernet ends have no GUID");
        }
        for c in ["port", "peer_port"] {
            let p = b.column_by_name(c).unwrap().as_primitive::<UInt16Type>();
            assert_eq!(p.null_count(), b.num_rows(), "{c}: Ethernet ports are named, not numbered");
        }
        for i in 0..b.num_rows() {
            v.push(ETHERNET_LINK_COLUMNS.map(|c| {
                let a = b.column_by_name(c).unwrap().as_string::<i32>();
                a.is_valid(i).then(|| a.value(i).to_owned())
            }));
        }
    }
    v
}

/// Read `paths` with `opts` through the real driver.
pub fn read_with(paths: &[PathBuf], opts: &ReadOptions) -> Result<Output> {
    let samples = Mutex::new(Vec::new());
    let attrs = Mutex::new(Vec::new());
    let tables = Mutex::new(Vec::new());
    let sink = |ev: Event| {
        match ev {
            Event::Samples(b) => samples.lock().unwrap().extend(rows_of(&b)),
            Event::Attributes(b) => attrs.lock().unwrap().extend(attrs_of(&b)),
            Event::Table { name, batch } => tables.lock().unwrap().push((name, batch)),
        }
        true
    };
    let reports = read_paths(paths, opts, &sink)?;
    Ok(Output {
        rows: samples.into_inner().unwrap(),
        attrs: attrs.into_inner().unwrap(),
        reports,
        tables: tables.into_inner().unwrap(),
    })
}

/// Read one path with default (strict) options.
pub fn read(path: impl AsRef<Path>) -> Result<Output> {
    read_with(&[path.as_ref().to_path_buf()], &ReadOptions::default())
}

/// Path of a file under the repository's `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

/// Write `content` to a fresh temporary file named `name` and return its path.
pub fn temp_file(name: &str, content: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabricscope-test-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

//! `read`, `Scanner`, `formats`, `counters`: argument conversion and Arrow export only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use fabricscope_core::formats::{prometheus_api, remote_read};
use fabricscope_core::vocabulary::{COUNTERS, SPELLINGS, Spelling, VENDOR_SPELLINGS};
use fabricscope_core::{
    Error, Event, FORMATS, Format, InputReport, ReadOptions, ReaderPool, attributes_schema, read_bytes,
    read_paths_with, samples_schema, total_input_bytes,
};
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyDict;
use pyo3_arrow::{PyRecordBatch, PySchema, PyTable};

use crate::error::{guarded, to_py_err};
use crate::rules::limits_arg;

#[allow(clippy::too_many_arguments)]
fn options(
    format: Option<&str>,
    host: Option<String>,
    time_ns: Option<i64>,
    strict: bool,
    batch_rows: usize,
    limits: Option<&Bound<'_, PyDict>>,
    link_speed_gbps: Option<f64>,
    bin_seconds: f64,
    regular_files_only: bool,
) -> PyResult<ReadOptions> {
    let format = match format {
        None => None,
        Some(f) if f.eq_ignore_ascii_case("auto") => None,
        Some(f) => Some(Format::from_name(f).ok_or_else(|| {
            let names: Vec<&str> = FORMATS.iter().map(|i| i.name).collect();
            PyValueError::new_err(format!("unknown format {f:?}; expected \"auto\" or one of {}", names.join(", ")))
        })?),
    };
    if batch_rows == 0 {
        return Err(PyValueError::new_err("batch_rows must be positive"));
    }
    // Packet captures: PFC quanta need the link speed; aggregates need a bin width.
    let link_speed_bps = match link_speed_gbps {
        None => None,
        Some(g) if g.is_finite() && g > 0.0 && g <= 1e6 => Some((g * 1e9).round() as u64),
        Some(g) => return Err(PyValueError::new_err(format!("link_speed_gbps must be positive, got {g}"))),
    };
    if !(1e-9..=9e9).contains(&bin_seconds) {
        return Err(PyValueError::new_err(format!("bin_seconds must be positive, got {bin_seconds}")));
    }
    Ok(ReadOptions {
        format,
        host,
        time_ns,
        strict,
        batch_rows,
        // Unset limits take the core's defaults (the one place they are written).
        limits: limits_arg(limits)?,
        link_speed_bps,
        bin_ns: (bin_seconds * 1e9).round() as i64,
        regular_files_only,
        ..ReadOptions::default()
    })
}

fn report_dict<'py>(py: Python<'py>, r: &InputReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", r.path.display().to_string())?;
    d.set_item("format", r.format.map(Format::name))?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("rows", r.rows)?;
    d.set_item("attribute_rows", r.attribute_rows)?;
    d.set_item("bad_records", r.bad_records)?;
    d.set_item("errors", r.errors.clone())?;
    d.set_item("warnings", r.warnings.clone())?;
    d.set_item("time_source", r.time_source.as_str())?;
    d.set_item("time_resolution_ns", r.time_resolution_ns)?;
    d.set_item("names_no_host", r.names_no_host)?;
    d.set_item("failed", r.failed)?;
    Ok(d)
}

/// Readers kept from one read for the next: reads of one run that share a pool resolve a
/// fabric's label sets once, not once per input. Holds its readers' caches until dropped.
#[pyclass(module = "fabricscope._native", name = "ReaderPool", frozen)]
pub struct PyReaderPool(Arc<ReaderPool>);

#[pymethods]
impl PyReaderPool {
    #[new]
    fn new() -> Self {
        PyReaderPool(Arc::new(ReaderPool::default()))
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// `(samples, attributes, {name: table}, reports)`.
type ReadOutput<'py> = (PyTable, PyTable, Bound<'py, PyDict>, Vec<Bound<'py, PyDict>>);

/// Read every input and return `(samples, attributes, {other_table_name: table}, reports)`.
#[pyfunction]
#[pyo3(signature = (paths, *, format=None, host=None, time_ns=None, strict=true, batch_rows=1<<20,
                    limits=None, link_speed_gbps=None, bin_seconds=1.0, readers=None))]
#[allow(clippy::too_many_arguments)]
pub fn read<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    format: Option<&str>,
    host: Option<String>,
    time_ns: Option<i64>,
    strict: bool,
    batch_rows: usize,
    limits: Option<&Bound<'py, PyDict>>,
    link_speed_gbps: Option<f64>,
    bin_seconds: f64,
    readers: Option<&Bound<'py, PyReaderPool>>,
) -> PyResult<ReadOutput<'py>> {
    let opts = options(format, host, time_ns, strict, batch_rows, limits, link_speed_gbps, bin_seconds, false)?;
    let pool = readers.map(|r| Arc::clone(&r.get().0));
    collect(py, move |sink| read_paths_with(&paths, &opts, sink, pool.as_deref()))
}

/// Run `read` (releasing the GIL) with a sink that gathers every batch, and export the tables.
fn collect(
    py: Python<'_>,
    read: impl FnOnce(&(dyn Fn(Event) -> bool + Sync)) -> Result<Vec<InputReport>, Error> + Send + std::panic::UnwindSafe,
) -> PyResult<ReadOutput<'_>> {
    let (result, samples, attributes, tables) = guarded(py, move || {
        let samples = Mutex::new(Vec::<RecordBatch>::new());
        let attributes = Mutex::new(Vec::<RecordBatch>::new());
        let tables = Mutex::new(BTreeMap::<&'static str, Vec<RecordBatch>>::new());
        let sink = |ev: Event| match ev {
            Event::Samples(b) => samples.lock().map(|mut v| v.push(b)).is_ok(),
            Event::Attributes(b) => attributes.lock().map(|mut v| v.push(b)).is_ok(),
            Event::Table { name, batch } => tables.lock().map(|mut t| t.entry(name).or_default().push(batch)).is_ok(),
        };
        let result = read(&sink);
        (
            result,
            samples.into_inner().unwrap_or_default(),
            attributes.into_inner().unwrap_or_default(),
            tables.into_inner().unwrap_or_default(),
        )
    })?;
    let reports = result.map_err(|e| to_py_err(py, &e))?;
    let samples = PyTable::try_new(samples, samples_schema())?;
    let attributes = PyTable::try_new(attributes, attributes_schema())?;
    let other = PyDict::new(py);
    for (name, batches) in tables {
        let Some(schema) = batches.first().map(RecordBatch::schema) else { continue };
        other.set_item(name, PyTable::try_new(batches, schema)?)?;
    }
    let reports = reports.iter().map(|r| report_dict(py, r)).collect::<PyResult<Vec<_>>>()?;
    Ok((samples, attributes, other, reports))
}

/// Read one in-memory input (a Prometheus API response, a scraped exposition) named `name` in
/// reports and errors; returns what :func:`read` returns.
///
/// A `bytes` object is read where Python holds it (no copy: an HTTP body of hundreds of MB is
/// held once while it is decoded); a `bytearray` is copied.
#[pyfunction]
#[pyo3(signature = (data, name, *, format=None, host=None, time_ns=None, strict=true, batch_rows=1<<20,
                    limits=None))]
#[allow(clippy::too_many_arguments)]
pub fn read_buffer<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    name: String,
    format: Option<&str>,
    host: Option<String>,
    time_ns: Option<i64>,
    strict: bool,
    batch_rows: usize,
    limits: Option<&Bound<'py, PyDict>>,
) -> PyResult<ReadOutput<'py>> {
    let opts = options(format, host, time_ns, strict, batch_rows, limits, None, 1.0, false)?;
    collect(py, move |sink| read_bytes(&data, name.as_ref(), &opts, sink).map(|r| vec![r]))
}

/// The metric names among `names` that the counter vocabulary knows (what a server pull asks for).
#[pyfunction]
pub fn known_prometheus_metrics(names: Vec<String>) -> Vec<String> {
    names.into_iter().filter(|n| prometheus_api::is_known_metric(n)).collect()
}

/// The body of a Prometheus remote read request (`POST /api/v1/read`) for the raw samples of
/// `[start_ms, end_ms]` (both inclusive) of the series every `(name, op, value)` matcher selects
/// (`op` one of `=`, `!=`, `=~`, `!~`): a snappy-compressed protobuf `ReadRequest`.
#[pyfunction]
pub fn remote_read_request(
    py: Python<'_>,
    start_ms: i64,
    end_ms: i64,
    matchers: Vec<(String, String, String)>,
) -> PyResult<Bound<'_, pyo3::types::PyBytes>> {
    let mut parsed = Vec::with_capacity(matchers.len());
    for (name, op, value) in matchers {
        let Some(op) = remote_read::MatchOp::parse(&op) else {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "label matcher operator {op:?} for {name:?}: expected one of =, !=, =~, !~"
            )));
        };
        parsed.push((name, op, value));
    }
    Ok(pyo3::types::PyBytes::new(py, &remote_read::encode_request(start_ms, end_ms, &parsed)))
}

enum Msg {
    Batch(Event),
    Done(Result<Vec<InputReport>, Error>),
    Panicked(String),
}

/// Streams `("samples" | "attributes", RecordBatch)` pairs while a background thread parses, so
/// inputs larger than memory can be processed batch by batch. Iterating releases the GIL while
/// waiting.
#[pyclass(module = "fabricscope._native", name = "Scanner")]
pub struct Scanner {
    // Mutex only to make the class Sync for pyo3; there is one consumer.
    rx: Option<Arc<Mutex<Receiver<Msg>>>>,
    reports: Option<Vec<InputReport>>,
    progress: Arc<AtomicU64>,
    total: u64,
}

#[pymethods]
impl Scanner {
    #[new]
    #[pyo3(signature = (paths, *, format=None, host=None, time_ns=None, strict=true, batch_rows=1<<20,
                        limits=None, link_speed_gbps=None, bin_seconds=1.0, readers=None,
                        regular_files_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        format: Option<&str>,
        host: Option<String>,
        time_ns: Option<i64>,
        strict: bool,
        batch_rows: usize,
        limits: Option<&Bound<'_, PyDict>>,
        link_speed_gbps: Option<f64>,
        bin_seconds: f64,
        readers: Option<&Bound<'_, PyReaderPool>>,
        regular_files_only: bool,
    ) -> PyResult<Self> {
        let pool = readers.map(|r| Arc::clone(&r.get().0));
        let mut opts = options(
            format,
            host,
            time_ns,
            strict,
            batch_rows,
            limits,
            link_speed_gbps,
            bin_seconds,
            regular_files_only,
        )?;
        let progress = Arc::new(AtomicU64::new(0));
        opts.progress = Some(progress.clone());
        let total = py.detach(|| total_input_bytes(&paths));
        // A small bound keeps memory flat: the parser waits while Python consumes.
        let (tx, rx): (SyncSender<Msg>, Receiver<Msg>) = sync_channel(4);
        std::thread::Builder::new()
            .name("fabricscope-scan".into())
            .spawn(move || {
                let done_tx = tx.clone();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let sink = |ev: Event| tx.send(Msg::Batch(ev)).is_ok();
                    read_paths_with(&paths, &opts, &sink, pool.as_deref())
                }));
                let msg = match outcome {
                    Ok(res) => Msg::Done(res),
                    Err(p) => Msg::Panicked(
                        p.downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| p.downcast_ref::<String>().cloned())
                            .unwrap_or_default(),
                    ),
                };
                let _ = done_tx.send(msg);
            })
            .map_err(|e| PyValueError::new_err(format!("cannot start the reader thread: {e}")))?;
        Ok(Scanner { rx: Some(Arc::new(Mutex::new(rx))), reports: None, progress, total })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<(&'static str, PyRecordBatch)> {
        let Some(rx) = self.rx.clone() else { return Err(PyStopIteration::new_err(())) };
        let msg = py.detach(move || rx.lock().map_err(|_| std::sync::mpsc::RecvError).and_then(|r| r.recv()));
        match msg {
            Ok(Msg::Batch(Event::Samples(b))) => Ok(("samples", PyRecordBatch::new(b))),
            Ok(Msg::Batch(Event::Attributes(b))) => Ok(("attributes", PyRecordBatch::new(b))),
            Ok(Msg::Batch(Event::Table { name, batch })) => Ok((name, PyRecordBatch::new(batch))),
            Ok(Msg::Done(Ok(reports))) => {
                self.reports = Some(reports);
                self.rx = None;
                Err(PyStopIteration::new_err(()))
            }
            Ok(Msg::Done(Err(e))) => {
                self.rx = None;
                Err(to_py_err(py, &e))
            }
            Ok(Msg::Panicked(what)) => {
                self.rx = None;
                Err(crate::error::InternalError::new_err(format!("internal error (please report): {what}")))
            }
            Err(_) => {
                self.rx = None;
                Err(crate::error::InternalError::new_err("the reader thread stopped without a result"))
            }
        }
    }

    /// Per-input reports; available once iteration has finished.
    fn reports<'py>(&self, py: Python<'py>) -> PyResult<Option<Vec<Bound<'py, PyDict>>>> {
        self.reports.as_ref().map(|rs| rs.iter().map(|r| report_dict(py, r)).collect()).transpose()
    }

    /// Input bytes consumed so far (compressed size for compressed inputs).
    #[getter]
    fn bytes_read(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    /// Total input bytes (0 if unknown).
    #[getter]
    fn bytes_total(&self) -> u64 {
        self.total
    }
}

/// The compression a file starting with `head` uses (`"gzip"`, `"zstd"`), or `None`.
#[pyfunction]
pub fn compression(head: &[u8]) -> Option<&'static str> {
    fabricscope_core::read::compression_of(head)
}

/// The supported formats.
#[pyfunction]
pub fn formats(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    FORMATS
        .iter()
        .map(|f| {
            let d = PyDict::new(py);
            d.set_item("name", f.name)?;
            d.set_item("aliases", f.aliases.to_vec())?;
            d.set_item("appendable", f.appendable)?;
            d.set_item("emits_links", f.emits_links)?;
            d.set_item("about_its_host", f.about_its_host)?;
            d.set_item("produced_by", f.produced_by)?;
            d.set_item("detection", f.detection)?;
            d.set_item("timestamps", f.timestamps)?;
            d.set_item("time_resolution", f.time_resolution.describe())?;
            d.set_item("time_resolution_ns", f.time_resolution.ns())?;
            Ok(d)
        })
        .collect()
}

/// The counter vocabulary: one dict per canonical counter, with its source spellings.
#[pyfunction]
pub fn counters(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    COUNTERS
        .iter()
        .map(|c| {
            let d = PyDict::new(py);
            d.set_item("name", c.name)?;
            d.set_item("unit", c.unit.as_str())?;
            d.set_item("kind", c.kind.as_str())?;
            d.set_item("overflow", c.overflow.describe())?;
            d.set_item("layer", c.layer.as_str())?;
            d.set_item("per_priority", c.per_priority)?;
            d.set_item("description", c.description)?;
            d.set_item("roles", c.roles.iter().map(|r| r.role.as_str()).collect::<Vec<_>>())?;
            d.set_item("role_ranks", c.roles.iter().map(|r| u32::from(r.rank)).collect::<Vec<_>>())?;
            d.set_item("stands_for", c.stands_for)?;
            let spelled = |s: &Spelling| {
                if s.multiply == 1 {
                    format!("{}:{}", s.namespace.as_str(), s.raw)
                } else {
                    format!("{}:{} (x{})", s.namespace.as_str(), s.raw, s.multiply)
                }
            };
            let mut spellings: Vec<String> = SPELLINGS.iter().filter(|s| s.counter == c.name).map(spelled).collect();
            // Vendor spellings carry the drivers that print them: `ethtool:rx_pfc_frames [bnxt_en, qede]`.
            let mut drivers: Vec<&str> = Vec::new();
            for vs in VENDOR_SPELLINGS.iter().filter(|v| v.spelling.counter == c.name) {
                // Listed even when the generic table has the same name: it says who prints it.
                spellings.push(format!("{} [{}]", spelled(&vs.spelling), vs.drivers.join(", ")));
                drivers.extend(vs.drivers.iter().copied());
            }
            drivers.sort_unstable();
            drivers.dedup();
            d.set_item("spellings", spellings)?;
            d.set_item("drivers", drivers)?;
            Ok(d)
        })
        .collect()
}

/// Arrow schema of the samples table.
#[pyfunction]
pub fn samples_schema_arrow() -> PySchema {
    PySchema::new(samples_schema())
}

/// Arrow schema of the `packet_events` table.
#[pyfunction]
pub fn events_schema_arrow() -> PySchema {
    PySchema::new(fabricscope_core::packets::events_schema())
}

/// Arrow schema of the port-attributes table.
#[pyfunction]
pub fn attributes_schema_arrow() -> PySchema {
    PySchema::new(attributes_schema())
}

/// Raise a Rust panic inside the guarded boundary (tests check it becomes `InternalError`).
#[pyfunction]
pub fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    guarded(py, || -> () { panic!("deliberate test panic") })
}

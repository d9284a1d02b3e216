//! The read driver: expands paths, decompresses, detects formats, streams line chunks into
//! readers, resolves hosts and timestamps, and reports per input. Several inputs are read in
//! parallel (rayon); each input streams in bounded chunks.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::error::{Error, Position, Result, excerpt};
use crate::formats::{self, Format, LineReader};
use crate::schema::{Attribute, AttributeBuilder, Sample, SampleBuilder};
use crate::timestamp::{FILE_NAME_RESOLUTION_NS, Stamp, timestamp_from_file_name};

/// Resource bounds. Every limit has an option that raises it; errors name that option.
///
/// Memory per input is bounded by these plus the streaming chunk: a line reader holds at most
/// one chunk and one `max_line_bytes` line; a whole-document reader (UFM JSON) at most
/// `max_document_bytes`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest accepted line in bytes (`max_line_bytes`).
    pub max_line_bytes: usize,
    /// Most bytes one compressed input may expand to (`max_decompressed_bytes`).
    pub max_decompressed_bytes: u64,
    /// Most labels on one Prometheus sample (`max_labels`).
    pub max_labels: usize,
    /// Largest decompressed/compressed ratio of a gzip or zstd input (`max_decompression_ratio`),
    /// checked once it has produced [`RATIO_GRACE_BYTES`]: a gzip bomb reaches ~1030:1, a zstd
    /// bomb far more, while telemetry text compresses 3-35:1 with gzip and up to ~90:1 with
    /// `zstd -19` (measured on repeated scrapes; docs/security.md).
    pub max_decompression_ratio: u64,
    /// Largest document a whole-document reader (UFM JSON) holds in memory
    /// (`max_document_bytes`); its parse tree takes a few times that.
    pub max_document_bytes: u64,
}

/// Decompressed bytes an input may produce before `max_decompression_ratio` applies: small
/// highly compressible files are harmless, only a long run at a bomb's ratio is refused.
pub const RATIO_GRACE_BYTES: u64 = 64 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 1 << 20,
            max_decompressed_bytes: 256 << 30,
            max_labels: 128,
            max_decompression_ratio: 250,
            max_document_bytes: 256 << 20,
        }
    }
}

impl Limits {
    /// The limits' names, as options and messages spell them (`--limit NAME=VALUE`).
    pub const NAMES: [&'static str; 5] =
        ["max_line_bytes", "max_labels", "max_decompressed_bytes", "max_decompression_ratio", "max_document_bytes"];

    /// Every limit by name, in [`Limits::NAMES`] order.
    pub fn named(&self) -> [(&'static str, u64); 5] {
        [
            ("max_line_bytes", self.max_line_bytes as u64),
            ("max_labels", self.max_labels as u64),
            ("max_decompressed_bytes", self.max_decompressed_bytes),
            ("max_decompression_ratio", self.max_decompression_ratio),
            ("max_document_bytes", self.max_document_bytes),
        ]
    }

    /// The defaults with the limits in `named` set by name (the inverse of [`Limits::named`]).
    /// `Err` names the first unknown name (with the accepted ones) or bad value.
    pub fn from_named<'n>(named: impl IntoIterator<Item = (&'n str, u64)>) -> std::result::Result<Limits, String> {
        let mut limits = Limits::default();
        for (name, value) in named {
            limits.set(name, value)?;
        }
        Ok(limits)
    }

    /// `Ok` for a limit's name; `Err` names the accepted ones.
    pub fn check_name(name: &str) -> std::result::Result<(), String> {
        if Self::NAMES.contains(&name) {
            Ok(())
        } else {
            Err(format!("unknown limit {name:?}; expected one of {}", Self::NAMES.join(", ")))
        }
    }

    /// Set one limit by name. `Err` names what was expected: a known name and a positive value
    /// that fits the platform's sizes.
    pub fn set(&mut self, name: &str, value: u64) -> std::result::Result<(), String> {
        Self::check_name(name)?;
        if value == 0 {
            return Err(format!("limit {name} must be a positive integer, got 0"));
        }
        let size = |v: u64| usize::try_from(v).map_err(|_| format!("limit {name}: {v} does not fit this platform"));
        match name {
            "max_line_bytes" => self.max_line_bytes = size(value)?,
            "max_labels" => self.max_labels = size(value)?,
            "max_decompressed_bytes" => self.max_decompressed_bytes = value,
            "max_decompression_ratio" => self.max_decompression_ratio = value,
            "max_document_bytes" => self.max_document_bytes = value,
            _ => return Err(format!("unknown limit {name:?}; expected one of {}", Self::NAMES.join(", "))),
        }
        Ok(())
    }
}

/// How to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Force a format; `None` detects per input from content.
    pub format: Option<Format>,
    /// Host for inputs that name none (labels and in-file directives win).
    pub host: Option<String>,
    /// Timestamp (ns, UTC) for inputs without their own (in-file lines and file names win).
    pub time_ns: Option<i64>,
    /// Raise on the first bad record (true) or count and skip bad records (false).
    pub strict: bool,
    /// Rows per emitted batch.
    pub batch_rows: usize,
    /// Bytes per chunk handed to a reader.
    pub chunk_bytes: usize,
    /// Resource bounds.
    pub limits: Limits,
    /// Compressed bytes consumed so far, for progress bars.
    pub progress: Option<Arc<AtomicU64>>,
    /// Packet captures: link speed for converting PFC/PAUSE quanta (512 bit times) to time;
    /// `None` uses the pcapng `if_speed` option, else 400 Gb/s.
    pub link_speed_bps: Option<u64>,
    /// Packet captures: width of the time bins aggregated into the samples table, ns.
    pub bin_ns: i64,
    /// Read only regular files: a named input that is a FIFO, a socket or a device is skipped
    /// with a warning and never opened in a way that can block (a FIFO without a writer would
    /// block an open for ever). Files found by walking a directory are always read this way; a
    /// FIFO the caller names is otherwise read as a stream.
    pub regular_files_only: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            host: None,
            time_ns: None,
            strict: true,
            batch_rows: 1 << 20,
            chunk_bytes: 4 << 20,
            limits: Limits::default(),
            progress: None,
            link_speed_bps: None,
            bin_ns: 1_000_000_000,
            regular_files_only: false,
        }
    }
}

/// Where the timestamps of an input's rows came from, when the format has none of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSource {
    /// Every row had a timestamp from the input itself.
    InFile,
    /// A timestamp in the file or directory name.
    FileName,
    /// The explicit `time` argument.
    Argument,
    /// The file's modification time (last resort; a warning is reported).
    Mtime,
}

impl TimeSource {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeSource::InFile => "in-file",
            TimeSource::FileName => "file-name",
            TimeSource::Argument => "argument",
            TimeSource::Mtime => "mtime",
        }
    }
}

/// What happened to one input.
#[derive(Debug, Clone)]
pub struct InputReport {
    /// The input path (a file, or a sysfs tree root).
    pub path: PathBuf,
    /// The format used, if one was determined.
    pub format: Option<Format>,
    /// Decompressed bytes read.
    pub bytes: u64,
    /// Sample rows produced.
    pub rows: u64,
    /// Attribute rows produced.
    pub attribute_rows: u64,
    /// Records skipped as malformed (lenient mode).
    pub bad_records: u64,
    /// The first few problems, as messages naming position and expectation.
    pub errors: Vec<String>,
    /// Non-fatal remarks (mtime used as time, host unknown, ...).
    pub warnings: Vec<String>,
    /// Where fallback timestamps came from (`InFile` when none were needed).
    pub time_source: TimeSource,
    /// The coarsest resolution (ns) of the times the input states for its rows: the format's
    /// fixed resolution (Prometheus text 1 ms), a capture header's, the digits of its timestamp
    /// lines (`date +%s` 1 s, `date +%s.%N` 1 ns) or of a file-name stamp (1 s). `None` when
    /// unknown: rows dated by the time argument or the mtime, a reader that does not state it
    /// (times whose unit is judged by magnitude), or no rows.
    pub time_resolution_ns: Option<i64>,
    /// True when some rows name no host and no host argument was given: they use host `unknown`
    /// (a caller may name it from the path).
    pub names_no_host: bool,
    /// True when the input could not be read at all (lenient mode keeps going).
    pub failed: bool,
}

impl InputReport {
    fn new(path: &Path) -> Self {
        InputReport {
            path: path.to_path_buf(),
            format: None,
            bytes: 0,
            rows: 0,
            attribute_rows: 0,
            bad_records: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            time_source: TimeSource::InFile,
            time_resolution_ns: None,
            names_no_host: false,
            failed: false,
        }
    }
}

/// Output of the driver, delivered to the caller's sink as it is produced.
#[derive(Debug)]
pub enum Event {
    /// A batch of the samples table.
    Samples(RecordBatch),
    /// A batch of the port-attributes table.
    Attributes(RecordBatch),
    /// A batch of another named table a reader produces besides samples (`packet_events`,
    /// `links`, ...). Batches of one name share one schema.
    Table {
        /// Table name, snake_case; the Python side exposes it under this name.
        name: &'static str,
        /// The rows.
        batch: RecordBatch,
    },
}

const MAX_REPORTED_ERRORS: usize = 20;

/// State a reader works against: builders, options, error policy, host and time fallbacks.
pub struct ReadContext<'a> {
    /// The input being read.
    pub path: &'a Path,
    /// Sample rows.
    pub samples: SampleBuilder,
    /// Attribute rows.
    pub attributes: AttributeBuilder,
    opts: &'a ReadOptions,
    fallback_time: Option<(i64, TimeSource)>,
    host_hint: Option<String>,
    report: InputReport,
    sink: &'a (dyn Fn(Event) -> bool + Sync),
    cancel: &'a AtomicBool,
}

impl<'a> ReadContext<'a> {
    fn new(
        path: &'a Path,
        format: Format,
        opts: &'a ReadOptions,
        sink: &'a (dyn Fn(Event) -> bool + Sync),
        cancel: &'a AtomicBool,
    ) -> Self {
        let mut report = InputReport::new(path);
        report.format = Some(format);
        ReadContext {
            path,
            samples: SampleBuilder::new(format.name()),
            attributes: AttributeBuilder::new(format.name()),
            opts,
            fallback_time: None,
            host_hint: None,
            report,
            sink,
            cancel,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ReadOptions {
        self.opts
    }

    /// True in strict mode.
    pub fn strict(&self) -> bool {
        self.opts.strict
    }

    /// Build a format error for this input.
    pub fn format_error(&self, position: Position, expected: &str, found: &[u8]) -> Error {
        Error::Format {
            path: self.path.to_path_buf(),
            position,
            expected: expected.to_owned(),
            found: excerpt(found, 80),
        }
    }

    /// Report a malformed record: an error in strict mode, counted and skipped otherwise.
    pub fn bad_record(&mut self, position: Position, expected: &str, found: &[u8]) -> Result<()> {
        let err = self.format_error(position, expected, found);
        if self.opts.strict {
            return Err(err);
        }
        self.report.bad_records += 1;
        if self.report.errors.len() < MAX_REPORTED_ERRORS {
            self.report.errors.push(err.to_string());
        }
        Ok(())
    }

    /// Report a bad record with a ready-made error (limits, ...).
    pub fn bad_record_error(&mut self, err: Error) -> Result<()> {
        if self.opts.strict {
            return Err(err);
        }
        self.report.bad_records += 1;
        if self.report.errors.len() < MAX_REPORTED_ERRORS {
            self.report.errors.push(err.to_string());
        }
        Ok(())
    }

    /// Add a non-fatal remark to the report (deduplicated).
    pub fn warn(&mut self, msg: impl Into<String>) {
        let msg = msg.into();
        if !self.report.warnings.contains(&msg) && self.report.warnings.len() < MAX_REPORTED_ERRORS {
            self.report.warnings.push(msg);
        }
    }

    /// Note the resolution of a time the input states (a capture header, a timestamp line); the
    /// report keeps the coarsest.
    pub fn note_time_resolution_ns(&mut self, resolution_ns: i64) {
        let r = resolution_ns.max(1);
        self.report.time_resolution_ns = Some(self.report.time_resolution_ns.map_or(r, |seen| seen.max(r)));
    }

    /// A time the input states (a timestamp line) for the rows that follow: its nanoseconds, its
    /// resolution noted in the report.
    pub fn stated_time(&mut self, stamp: Stamp) -> i64 {
        self.note_time_resolution_ns(stamp.resolution_ns);
        stamp.ns
    }

    /// Timestamp for rows whose input gave none: file name, argument, then mtime (warned).
    pub fn fallback_time_ns(&mut self) -> Result<i64> {
        if let Some((t, src)) = self.fallback_time {
            self.report.time_source = src;
            if src == TimeSource::FileName {
                self.note_time_resolution_ns(FILE_NAME_RESOLUTION_NS);
            }
            return Ok(t);
        }
        let (t, src) = resolve_fallback_time(self.path, self.opts)?;
        if src == TimeSource::Mtime {
            self.warn(format!(
                "no timestamp in the input, its name or the arguments: using the file's mtime ({})",
                format_ns(t)
            ));
        }
        self.fallback_time = Some((t, src));
        self.report.time_source = src;
        if src == TimeSource::FileName {
            self.note_time_resolution_ns(FILE_NAME_RESOLUTION_NS);
        }
        Ok(t)
    }

    /// Host for rows whose input names none: the explicit argument, else a hint from the path
    /// (sysfs trees), else `unknown` (warned).
    pub fn fallback_host(&mut self) -> String {
        if let Some(h) = &self.opts.host {
            return h.clone();
        }
        if let Some(h) = &self.host_hint {
            return h.clone();
        }
        self.report.names_no_host = true;
        self.warn("no host in the input and no host argument: rows use host \"unknown\"");
        "unknown".to_owned()
    }

    /// Explicit host argument, if any.
    pub fn host_argument(&self) -> Option<&str> {
        self.opts.host.as_deref()
    }

    /// Append a sample; emits a batch when the builder is full.
    pub fn push(&mut self, s: &Sample) -> Result<()> {
        self.samples.push(s);
        if self.samples.len() >= self.opts.batch_rows {
            self.flush_samples()?;
        }
        Ok(())
    }

    /// Append an attribute.
    pub fn push_attribute(&mut self, host: &str, device: &str, a: &Attribute<'_>) -> Result<()> {
        self.attributes.push(a.time_ns, host, device, a.port, a.key, a.value);
        self.report.attribute_rows += 1;
        if self.attributes.len() >= self.opts.batch_rows {
            self.flush_attributes()?;
        }
        Ok(())
    }

    /// Append an attribute whose host and device are keys of [`Self::samples`], as in a
    /// [`Sample`]: the same rows as [`Self::push_attribute`] with their texts.
    pub fn push_attribute_keyed(&mut self, a: &Attribute<'_>) -> Result<()> {
        self.attributes.push_keyed(&self.samples, a);
        self.report.attribute_rows += 1;
        if self.attributes.len() >= self.opts.batch_rows {
            self.flush_attributes()?;
        }
        Ok(())
    }

    fn flush_samples(&mut self) -> Result<()> {
        if self.samples.is_empty() {
            return Ok(());
        }
        self.report.rows += self.samples.len() as u64;
        let batch = self.samples.finish().map_err(|e| Error::InvalidArgument(format!("arrow: {e}")))?;
        if !(self.sink)(Event::Samples(batch)) {
            self.cancel.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Deliver a batch of another named table (see [`Event::Table`]).
    pub fn emit_table(&mut self, name: &'static str, batch: RecordBatch) {
        if batch.num_rows() > 0 && !(self.sink)(Event::Table { name, batch }) {
            self.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Record the number of bytes consumed (binary readers report their own).
    pub fn set_bytes(&mut self, bytes: u64) {
        self.report.bytes = bytes;
    }

    fn flush_attributes(&mut self) -> Result<()> {
        if self.attributes.is_empty() {
            return Ok(());
        }
        let batch = self.attributes.finish().map_err(|e| Error::InvalidArgument(format!("arrow: {e}")))?;
        if !(self.sink)(Event::Attributes(batch)) {
            self.cancel.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// True when the consumer went away or another input failed in strict mode.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    fn finish(mut self) -> Result<InputReport> {
        self.flush_samples()?;
        self.flush_attributes()?;
        // Rows dated by the format's own timestamps carry its fixed resolution; rows dated by a
        // fallback carry the fallback's (noted when it was taken).
        let had_rows = self.report.rows + self.report.attribute_rows > 0;
        if had_rows
            && self.report.time_source == TimeSource::InFile
            && let Some(r) = self.report.format.and_then(|f| f.info().time_resolution.ns())
        {
            self.note_time_resolution_ns(r);
        }
        Ok(self.report)
    }
}

/// Human-readable UTC time for messages.
pub fn format_ns(t: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn resolve_fallback_time(path: &Path, opts: &ReadOptions) -> Result<(i64, TimeSource)> {
    // The file name first, then up to two parent directory names (`snap-20261202T1447Z/sys`).
    for comp in path.components().rev().take(3) {
        if let Some(t) = timestamp_from_file_name(&comp.as_os_str().to_string_lossy()) {
            return Ok((t, TimeSource::FileName));
        }
    }
    if let Some(t) = opts.time_ns {
        return Ok((t, TimeSource::Argument));
    }
    let meta = std::fs::metadata(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let mtime = meta.modified().map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let ns = match mtime.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    };
    Ok((ns, TimeSource::Mtime))
}

/// One unit of work after expanding the given paths.
#[derive(Debug, Clone)]
enum Unit {
    /// A file named by the caller (undetectable content is an error).
    File(PathBuf),
    /// A file found by walking a directory (undetectable content is skipped with a warning:
    /// a README beside the dumps must not fail the run).
    WalkedFile(PathBuf),
    SysfsTree {
        root: PathBuf,
        host_hint: Option<String>,
    },
    Failed(PathBuf, String),
}

/// Is `dir` the root of a sysfs copy: `.../sys`, `.../class`, `.../class/{infiniband,net}`, one
/// IB device, one net device, `.../ports`, or one port directory?
fn sysfs_root_kind(dir: &Path) -> bool {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join("class/infiniband").is_dir()
        || dir.join("class/net").is_dir()
        || (name == "class" && (dir.join("infiniband").is_dir() || dir.join("net").is_dir()))
        || (name == "infiniband" && has_child_with(dir, "ports"))
        || (name == "net" && has_child_with(dir, "statistics"))
        || dir.join("ports").is_dir()
        || (dir.join("statistics").is_dir() && dir.join("operstate").is_file())
        || (name == "ports" && (has_child_with(dir, "counters") || has_child_with(dir, "hw_counters")))
        || dir.join("counters").is_dir()
        || dir.join("hw_counters").is_dir()
}

fn has_child_with(dir: &Path, sub: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| rd.flatten().any(|e| e.path().join(sub).is_dir()))
}

fn local_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The host a sysfs tree belongs to: the live machine for `/sys`, else the directory that
/// contains `sys/` (`gpu017/sys/class/infiniband/...` gives `gpu017`).
fn sysfs_host_hint(root: &Path) -> Option<String> {
    let canon = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if canon.starts_with("/sys") {
        return local_hostname();
    }
    let mut p = canon.as_path();
    loop {
        if p.file_name().is_some_and(|n| n == "sys") {
            return p.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
        }
        match p.parent() {
            Some(parent) => p = parent,
            None => return None,
        }
    }
}

fn expand(paths: &[PathBuf], opts: &ReadOptions) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    let mut visited = std::collections::HashSet::new();
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(source) => {
                let err = Error::Io { path: p.clone(), source };
                if opts.strict {
                    return Err(err);
                }
                units.push(Unit::Failed(p.clone(), err.to_string()));
                continue;
            }
        };
        if meta.is_dir() {
            walk(p, opts, &mut units, &mut visited)?;
        } else {
            units.push(Unit::File(p.clone()));
        }
    }
    Ok(units)
}

fn walk(
    dir: &Path,
    opts: &ReadOptions,
    units: &mut Vec<Unit>,
    visited: &mut std::collections::HashSet<PathBuf>,
) -> Result<()> {
    // Symlink loops: never enter the same real directory twice.
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !visited.insert(canon) {
        return Ok(());
    }
    if opts.format == Some(Format::SysfsTree) || (opts.format.is_none() && sysfs_root_kind(dir)) {
        units.push(Unit::SysfsTree { root: dir.to_path_buf(), host_hint: sysfs_host_hint(dir) });
        return Ok(());
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(source) => {
            let err = Error::Io { path: dir.to_path_buf(), source };
            if opts.strict {
                return Err(err);
            }
            units.push(Unit::Failed(dir.to_path_buf(), err.to_string()));
            return Ok(());
        }
    };
    let mut children: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    children.sort();
    for child in children {
        let name = child.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue; // editor swap files, .git, our own cron state
        }
        match std::fs::metadata(&child) {
            Ok(m) if m.is_dir() => walk(&child, opts, units, visited)?,
            Ok(_) => units.push(Unit::WalkedFile(child)),
            Err(source) => {
                // dangling symlink or permission problem
                let err = Error::Io { path: child.clone(), source };
                if opts.strict {
                    return Err(err);
                }
                units.push(Unit::Failed(child, err.to_string()));
            }
        }
    }
    Ok(())
}

/// What one input found by [`expand_inputs`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A file named by the caller (undetectable content is an error).
    File,
    /// A file found by walking a directory (undetectable content is skipped with a warning).
    Walked,
    /// A sysfs tree (a copy of `/sys/class/infiniband`, `/sys/class/net`, one device, one port
    /// ...), read as a whole.
    SysfsTree,
    /// A path that cannot be opened or listed; reading it reports the error.
    Failed,
}

impl InputKind {
    /// `file`, `walked`, `sysfs-tree` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::File => "file",
            InputKind::Walked => "walked",
            InputKind::SysfsTree => "sysfs-tree",
            InputKind::Failed => "failed",
        }
    }
}

/// The inputs `paths` expand to, in reading order: directories are walked (sorted, dot entries
/// skipped, a real directory entered once, so symlink loops end) and a directory that is a sysfs
/// tree is one input, never split into its counter files. With `format` set to the sysfs tree
/// format every directory is a tree; with another format set, none is. Never fails: a path that
/// cannot be read is a [`InputKind::Failed`] input.
pub fn expand_inputs(paths: &[PathBuf], format: Option<Format>) -> Vec<(PathBuf, InputKind)> {
    let opts = ReadOptions { format, strict: false, ..ReadOptions::default() };
    let units = expand(paths, &opts).unwrap_or_default();
    units
        .into_iter()
        .map(|u| match u {
            Unit::File(p) => (p, InputKind::File),
            Unit::WalkedFile(p) => (p, InputKind::Walked),
            Unit::SysfsTree { root, .. } => (root, InputKind::SysfsTree),
            Unit::Failed(p, _) => (p, InputKind::Failed),
        })
        .collect()
}

/// Total size in bytes of the inputs `paths` expand to (for progress bars).
pub fn total_input_bytes(paths: &[PathBuf]) -> u64 {
    let lenient = ReadOptions { strict: false, ..ReadOptions::default() };
    let Ok(units) = expand(paths, &lenient) else { return 0 };
    units
        .iter()
        .map(|u| match u {
            Unit::File(p) | Unit::WalkedFile(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
            Unit::SysfsTree { .. } | Unit::Failed(..) => 0,
        })
        .sum()
}

/// Read every input under `paths`, delivering batches to `sink` as they are produced (from
/// several threads). `sink` returns false to stop early. Returns one report per input, in input
/// order. In strict mode the first error (in input order) is returned instead.
pub fn read_paths(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &(dyn Fn(Event) -> bool + Sync),
) -> Result<Vec<InputReport>> {
    read_paths_with(paths, opts, sink, None)
}

/// [`read_paths`] with the readers of `pool`: the readers an earlier read left there serve
/// these inputs, and these inputs' readers are left there for the next read (a run that reads
/// its inputs one by one, in a fixed order, shares one pool). Without a pool, the inputs of this
/// read share one of their own.
pub fn read_paths_with(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &(dyn Fn(Event) -> bool + Sync),
    pool: Option<&ReaderPool>,
) -> Result<Vec<InputReport>> {
    if paths.is_empty() {
        return Err(Error::InvalidArgument("no input paths given".into()));
    }
    let units = expand(paths, opts)?;
    let cancel = AtomicBool::new(false);
    // A reader that finished an input may serve the next one: a fabric's label sets, resolved
    // once, serve every input that scrapes it. One input alone has no next.
    let own = (pool.is_none() && units.len() > 1).then(ReaderPool::default);
    let pool = pool.or(own.as_ref());
    let results: Vec<Result<InputReport>> = units
        .par_iter()
        .with_max_len(1)
        .map(|unit| {
            if cancel.load(Ordering::Relaxed) {
                let path = match unit {
                    Unit::File(p) | Unit::WalkedFile(p) | Unit::Failed(p, _) | Unit::SysfsTree { root: p, .. } => p,
                };
                let mut r = InputReport::new(path);
                r.failed = true;
                r.errors.push("not read: reading was stopped".into());
                return Ok(r);
            }
            let res = read_unit(unit, opts, sink, &cancel, pool);
            match res {
                Err(e) if opts.strict => {
                    cancel.store(true, Ordering::Relaxed);
                    Err(e)
                }
                Err(e) => {
                    let path = e.path().map_or_else(|| PathBuf::from("?"), Path::to_path_buf);
                    let mut r = InputReport::new(&path);
                    r.failed = true;
                    r.errors.push(e.to_string());
                    Ok(r)
                }
                ok => ok,
            }
        })
        .collect();
    results.into_iter().collect()
}

/// Line readers that finished an input, kept for the next input of their format (see
/// [`LineReader::carry_over`]); a reader that failed is not kept. A reader serves only reads of
/// its format with the limits it was used with (a label set cached under one `max_labels` is
/// not one under a smaller one).
#[derive(Default)]
pub struct ReaderPool(Mutex<Vec<(ReaderKey, Box<dyn LineReader>)>>);

/// What a pooled reader may serve: its format and the limits its caches were filled under.
type ReaderKey = (Format, usize);

impl ReaderPool {
    fn take(&self, format: Format, opts: &ReadOptions) -> Option<Box<dyn LineReader>> {
        let key = (format, opts.limits.max_labels);
        let mut readers = self.0.lock().ok()?;
        let at = readers.iter().position(|(k, _)| *k == key)?;
        Some(readers.swap_remove(at).1)
    }

    fn put(&self, format: Format, opts: &ReadOptions, reader: Box<dyn LineReader>) {
        if let Ok(mut readers) = self.0.lock() {
            readers.push(((format, opts.limits.max_labels), reader));
        }
    }
}

impl std::fmt::Debug for ReaderPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.lock().map_or(0, |r| r.len());
        f.debug_struct("ReaderPool").field("readers", &held).finish()
    }
}

fn read_unit(
    unit: &Unit,
    opts: &ReadOptions,
    sink: &(dyn Fn(Event) -> bool + Sync),
    cancel: &AtomicBool,
    pool: Option<&ReaderPool>,
) -> Result<InputReport> {
    match unit {
        Unit::Failed(path, msg) => {
            let mut r = InputReport::new(path);
            r.failed = true;
            r.errors.push(msg.clone());
            Ok(r)
        }
        Unit::SysfsTree { root, host_hint } => {
            let mut ctx = ReadContext::new(root, Format::SysfsTree, opts, sink, cancel);
            ctx.host_hint.clone_from(host_hint);
            formats::sysfs::read_tree(root, &mut ctx)?;
            ctx.finish()
        }
        Unit::File(path) => read_file(path, opts.regular_files_only, opts, sink, cancel, pool),
        Unit::WalkedFile(path) => match read_file(path, true, opts, sink, cancel, pool) {
            Err(Error::UnknownFormat { reason, .. }) => {
                let mut r = InputReport::new(path);
                r.warnings.push(format!("skipped: not a recognised format ({reason})"));
                Ok(r)
            }
            other => other,
        },
    }
}

/// Counts compressed bytes as they are read, for progress and the decompression ratio.
struct Counting<R> {
    inner: R,
    progress: Option<Arc<AtomicU64>>,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(p) = &self.progress {
            p.fetch_add(n as u64, Ordering::Relaxed);
        }
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A decompression limit tripped inside [`Bounded`]; it travels inside an `io::Error` through
/// the readers and becomes [`Error::LimitExceeded`] in [`stream_error`].
#[derive(Debug)]
struct LimitTrip {
    what: &'static str,
    limit: u64,
    option: &'static str,
    byte_offset: u64,
}

impl std::fmt::Display for LimitTrip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} exceeds the limit of {} (raise it with {})", self.what, self.limit, self.option)
    }
}

impl std::error::Error for LimitTrip {}

/// The decompressed side of a gzip/zstd input: refuses to produce more than
/// `max_decompressed_bytes`, or more than `max_decompression_ratio` times the compressed bytes
/// consumed (after [`RATIO_GRACE_BYTES`]), so a bomb costs neither memory nor hours of CPU.
/// Text and binary readers both read through it.
struct Bounded<R> {
    inner: R,
    produced: u64,
    consumed: Arc<AtomicU64>,
    limits: Limits,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.produced += n as u64;
        let l = &self.limits;
        let trip = if self.produced > l.max_decompressed_bytes {
            Some(("decompressed size", l.max_decompressed_bytes, "max_decompressed_bytes"))
        } else if self.produced > RATIO_GRACE_BYTES
            && self.produced / self.consumed.load(Ordering::Relaxed).max(1) > l.max_decompression_ratio
        {
            Some(("decompression ratio", l.max_decompression_ratio, "max_decompression_ratio"))
        } else {
            None
        };
        match trip {
            Some((what, limit, option)) => {
                Err(std::io::Error::other(LimitTrip { what, limit, option, byte_offset: self.produced - n as u64 }))
            }
            None => Ok(n),
        }
    }
}

/// The error for a failed read of an input stream: a tripped decompression limit, a corrupt
/// gzip/zstd stream, or an I/O error on a plain file.
fn stream_error(path: &Path, codec: Codec, byte_offset: u64, e: std::io::Error) -> Error {
    if let Some(t) = e.get_ref().and_then(|inner| inner.downcast_ref::<LimitTrip>()) {
        return Error::LimitExceeded {
            path: path.to_path_buf(),
            position: Position { line: None, byte_offset: t.byte_offset },
            what: t.what,
            limit: t.limit,
            option: t.option,
        };
    }
    match codec {
        Codec::Plain => Error::Io { path: path.to_path_buf(), source: e },
        _ => Error::Decompress { path: path.to_path_buf(), codec: codec.name(), byte_offset, message: e.to_string() },
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    Plain,
    Gzip,
    Zstd,
}

/// The compression a stream starting with `head` uses (`"gzip"`, `"zstd"`), or `None` when it is
/// not compressed: the same test the reader applies before decompressing.
pub fn compression_of(head: &[u8]) -> Option<&'static str> {
    match Codec::of(head) {
        Codec::Plain => None,
        codec => Some(codec.name()),
    }
}

impl Codec {
    /// The codec whose magic number `head` starts with (RFC 1952 gzip, RFC 8878 zstd frame).
    fn of(head: &[u8]) -> Codec {
        if head.starts_with(&[0x1f, 0x8b]) {
            Codec::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Codec::Zstd
        } else {
            Codec::Plain
        }
    }

    fn name(self) -> &'static str {
        match self {
            Codec::Plain => "plain",
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        }
    }
}

/// What a path that is not a regular file is, in words (`None` for a regular file).
fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_file() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_dir() {
        Some("a directory")
    } else {
        Some("not a regular file")
    }
}

/// An input opened for reading, or what it is instead of a regular file.
enum Opened {
    File(File),
    NotRegular(&'static str),
}

/// Open `path` for reading; with `regular_only`, [`Opened::NotRegular`] (and nothing opened
/// that can block) when it is not a regular file.
///
/// The type is checked before the open, so a device is never opened (opening one can have
/// effects), and again on the open file, so a FIFO put in the file's place in between is found
/// too: that open does not wait for a writer (`O_NONBLOCK`), and on a regular file the flag
/// changes nothing.
fn open_input(path: &Path, regular_only: bool) -> Result<Opened> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    if !regular_only {
        return Ok(Opened::File(File::open(path).map_err(io)?));
    }
    if let Some(what) = not_regular(std::fs::metadata(path).map_err(io)?.file_type()) {
        return Ok(Opened::NotRegular(what));
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    Ok(match not_regular(file.metadata().map_err(io)?.file_type()) {
        Some(what) => Opened::NotRegular(what),
        None => Opened::File(file),
    })
}

/// Wrap a byte source in the decompressor its magic number asks for, bounded by the limits.
fn decoder<R: Read + Send + 'static>(
    source: R,
    path: &Path,
    opts: &ReadOptions,
) -> Result<(Box<dyn Read + Send>, Codec)> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let consumed = Arc::new(AtomicU64::new(0));
    let counting = Counting { inner: source, progress: opts.progress.clone(), consumed: consumed.clone() };
    let mut buffered = BufReader::with_capacity(1 << 20, counting);
    let head = buffered.fill_buf().map_err(io)?;
    let codec = Codec::of(head);
    let reader: Box<dyn Read + Send> = match codec {
        Codec::Plain => Box::new(buffered),
        Codec::Gzip => Box::new(Bounded {
            inner: flate2::bufread::MultiGzDecoder::new(buffered),
            produced: 0,
            consumed,
            limits: opts.limits,
        }),
        Codec::Zstd => Box::new(Bounded {
            inner: zstd::stream::read::Decoder::with_buffer(buffered).map_err(io)?,
            produced: 0,
            consumed,
            limits: opts.limits,
        }),
    };
    Ok((reader, codec))
}

/// Read until `buf` holds `want` bytes or the input ends. Returns true at end of input.
fn fill(
    reader: &mut dyn Read,
    buf: &mut Vec<u8>,
    want: usize,
    path: &Path,
    codec: Codec,
    produced: u64,
) -> Result<bool> {
    while buf.len() < want {
        let old = buf.len();
        buf.resize(want, 0);
        match reader.read(&mut buf[old..]) {
            Ok(0) => {
                buf.truncate(old);
                return Ok(true);
            }
            Ok(n) => buf.truncate(old + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(old),
            Err(e) => {
                buf.truncate(old);
                return Err(stream_error(path, codec, produced + old as u64, e));
            }
        }
    }
    Ok(false)
}

fn read_file(
    path: &Path,
    regular_only: bool,
    opts: &ReadOptions,
    sink: &(dyn Fn(Event) -> bool + Sync),
    cancel: &AtomicBool,
    pool: Option<&ReaderPool>,
) -> Result<InputReport> {
    let file = match open_input(path, regular_only)? {
        Opened::File(file) => file,
        Opened::NotRegular(what) => {
            // Not an error: a FIFO or a socket among a directory's files holds no counters.
            let mut r = InputReport::new(path);
            r.warnings.push(format!("not a regular file ({what}): not read"));
            return Ok(r);
        }
    };
    let (reader, codec) = decoder(file, path, opts)?;
    read_stream(path, reader, codec, opts, sink, cancel, pool)
}

/// Read one in-memory input (plain, gzip or zstd) through the same path as a file: detection
/// (unless `opts.format` forces one), encoding checks, limits, the reader, lenient counting.
/// `path` only names the input in errors and reports; set `opts.time_ns` for formats without
/// timestamps, or the fallback looks for the file's mtime. Used by the fuzz targets.
///
/// ```
/// use fabricscope_core::{ReadOptions, read_bytes};
/// let opts = ReadOptions { time_ns: Some(0), ..ReadOptions::default() };
/// let report = read_bytes(b"up{instance=\"h\"} 1\n", "x.prom".as_ref(), &opts, &|_| true).unwrap();
/// assert_eq!(report.rows, 1);
/// ```
pub fn read_bytes(
    data: &[u8],
    path: &Path,
    opts: &ReadOptions,
    sink: &(dyn Fn(Event) -> bool + Sync),
) -> Result<InputReport> {
    let cancel = AtomicBool::new(false);
    let (reader, codec) = decoder(std::io::Cursor::new(data.to_vec()), path, opts)?;
    read_stream(path, reader, codec, opts, sink, &cancel, None)
}

fn read_stream(
    path: &Path,
    mut reader: Box<dyn Read + Send>,
    codec: Codec,
    opts: &ReadOptions,
    sink: &(dyn Fn(Event) -> bool + Sync),
    cancel: &AtomicBool,
    pool: Option<&ReaderPool>,
) -> Result<InputReport> {
    let chunk = opts.chunk_bytes.max(64 << 10);
    let mut buf: Vec<u8> = Vec::with_capacity(chunk + (64 << 10));
    let mut eof = fill(&mut *reader, &mut buf, chunk, path, codec, 0)?;

    // Encoding: strip a UTF-8 BOM; refuse UTF-16/32 with a clear message.
    let mut pos = Position { line: Some(1), byte_offset: 0 };
    if buf.starts_with(&[0xef, 0xbb, 0xbf]) {
        buf.drain(..3);
        pos.byte_offset = 3;
    } else if buf.starts_with(&[0xff, 0xfe]) || buf.starts_with(&[0xfe, 0xff]) {
        return Err(Error::Format {
            path: path.to_path_buf(),
            position: Position { line: Some(1), byte_offset: 0 },
            expected: "UTF-8 text".into(),
            found: "a UTF-16/UTF-32 byte-order mark (convert with `iconv -f UTF-16 -t UTF-8`)".into(),
        });
    }

    let format = if let Some(f) = opts.format {
        f
    } else {
        {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let head = &buf[..buf.len().min(64 << 10)];
            match formats::detect(head, &name) {
                Some(f) => f,
                None if buf.is_empty() => {
                    // An empty input is not an error: it simply has no rows.
                    let mut r = InputReport::new(path);
                    r.warnings.push("empty input".into());
                    return Ok(r);
                }
                None => {
                    return Err(Error::UnknownFormat {
                        path: path.to_path_buf(),
                        reason: format!("first bytes {}", excerpt(head, 40)),
                    });
                }
            }
        }
    };
    if let Some(mut binary) = format.binary_reader() {
        let mut ctx = ReadContext::new(path, format, opts, sink, cancel);
        let bytes = binary.read(&buf, &mut *reader, &mut ctx).map_err(|e| match e {
            Error::Io { source, .. } => stream_error(path, codec, 0, source),
            other => other,
        })?;
        ctx.set_bytes(bytes);
        return ctx.finish();
    }
    let Some(mut line_reader) = pool.and_then(|p| p.take(format, opts)).or_else(|| format.line_reader()) else {
        return Err(Error::InvalidArgument(format!(
            "{}: format {} reads directories, not files",
            path.display(),
            format.name()
        )));
    };
    let mut ctx = ReadContext::new(path, format, opts, sink, cancel);
    let max_line = opts.limits.max_line_bytes;
    loop {
        if ctx.cancelled() {
            break;
        }
        if eof {
            if !buf.is_empty() {
                if buf.last() != Some(&b'\n') {
                    // Every tool we read ends its lines with `\n`: a last line without one was
                    // most likely cut (full disk, rotation mid-write), and a cut number still
                    // parses (`123456` -> `12`). It is read, but the report says so.
                    ctx.warn(format!(
                        "the input does not end with a newline at byte {}: its last line may be truncated",
                        pos.byte_offset + buf.len() as u64
                    ));
                }
                line_reader.feed(&buf, pos, &mut ctx)?;
                pos.byte_offset += buf.len() as u64;
            }
            break;
        }
        if let Some(last_nl) = memchr::memrchr(b'\n', &buf) {
            let end = last_nl + 1;
            line_reader.feed(&buf[..end], pos, &mut ctx)?;
            let newlines = memchr::memchr_iter(b'\n', &buf[..end]).count() as u64;
            pos.line = pos.line.map(|l| l + newlines);
            pos.byte_offset += end as u64;
            buf.drain(..end);
            let want = chunk.max(buf.len() + (64 << 10));
            eof = fill(&mut *reader, &mut buf, want, path, codec, pos.byte_offset)?;
        } else if buf.len() > max_line {
            // One line longer than the limit: report it, then skip to its end.
            ctx.bad_record_error(Error::LimitExceeded {
                path: path.to_path_buf(),
                position: pos,
                what: "line length",
                limit: max_line as u64,
                option: "max_line_bytes",
            })?;
            let mut skipped = buf.len() as u64;
            buf.clear();
            loop {
                eof = fill(&mut *reader, &mut buf, chunk, path, codec, pos.byte_offset + skipped)?;
                if let Some(nl) = memchr::memchr(b'\n', &buf) {
                    skipped += nl as u64 + 1;
                    buf.drain(..=nl);
                    break;
                }
                skipped += buf.len() as u64;
                buf.clear();
                if eof {
                    break;
                }
            }
            pos.byte_offset += skipped;
            pos.line = pos.line.map(|l| l + 1);
            if !eof {
                eof = fill(&mut *reader, &mut buf, chunk, path, codec, pos.byte_offset)?;
            }
        } else {
            let want = buf.len() + chunk.min(max_line + 1);
            eof = fill(&mut *reader, &mut buf, want, path, codec, pos.byte_offset)?;
        }
    }
    line_reader.finish(&mut ctx)?;
    if let Some(pool) = pool
        && line_reader.carry_over(&mut ctx)
    {
        pool.put(format, opts, line_reader);
    }
    ctx.set_bytes(pos.byte_offset);
    ctx.finish()
}

//! Prometheus text exposition 0.0.4 and OpenMetrics 1.0, as node_exporter, infiniband_exporter,
//! DCGM exporter and Prometheus `/federate` write them, one scrape or many concatenated
//! (`while :; do date +%s; curl -s host:9100/metrics; sleep 10; done >> scrapes.prom`).
//!
//! Lines:
//! * `# HELP` and `# UNIT` are skipped; `# TYPE` records the family type (it decides `is_counter`
//!   for metrics the vocabulary does not know); `# EOF` ends an OpenMetrics exposition, and more
//!   content after it is a new, concatenated scrape. Any other comment, and any bare line that is
//!   not a sample, is tried as a directive: a timestamp line dates the following samples that carry
//!   no timestamp of their own, `# host: NAME` names the host of series without host labels.
//! * Samples `name{labels} value [timestamp] [# exemplar]`. Label values may hold `\\`, `\"`, `\n`
//!   escapes and any of `}`, `,`, `=`, blanks; blanks after commas and a trailing comma are allowed,
//!   and fields may be separated by any run of spaces and tabs.
//!
//! Values: a plain integer token (`123`, `+123`) is read exactly as a u64, never through a float;
//! anything else (`1.493376e+07`, `-3`, `NaN`, `+Inf`, integers beyond u64) as the f64 it denotes,
//! normalised by [`Value::from_f64`] ([`crate::number::float_value`]: exact, and without a float
//! for the integers <= 2^53 that exporters write as `1.8527668e+07`). Timestamps: milliseconds (Prometheus) or seconds (OpenMetrics), stored as
//! ns; a Prometheus timestamp with a fraction or below 1e11 is read as seconds, an OpenMetrics
//! integer timestamp of 1e11 or more as milliseconds (both warned once).
//!
//! Each series is resolved once per distinct `name{labels}` text and cached:
//! * host: label `exported_instance` or `instance` (port stripped), else `hostname`, `Hostname`,
//!   `host`, `node`, else a `# host:` directive, else the `nodename` of the scrape's
//!   `node_uname_info` (a `curl` of node_exporter has no `instance`), else the host argument /
//!   `unknown`. A `Hostname`/`hostname` label wins over an `instance` that is not that host
//!   (a Kubernetes target address: a pod IP, a service name) or a qualified form of it;
//! * device: `gpu<gpu>` for DCGM metrics (`gpu<gpu>/mig<GPU_I_ID>` for a MIG instance), the infiniband_exporter `guid` (`0x` + 16 lowercase hex
//!   digits), else label `device`, else empty; port: label `port` (u16); priority: label
//!   `priority`/`prio` 0-7, or the priority in a `node_ethtool_*` name;
//! * counter: the vocabulary's canonical name (`node_ethtool_*` names are mapped back to their
//!   `ethtool -S` spelling first), else the raw metric name. Labels that are neither identity nor
//!   metadata are appended in sorted canonical form (`name{duplex="full",mode="1000baseT"}`) so
//!   distinct series never collapse into one;
//! * metadata labels (`UUID`, `modelName`, `pci_bus_id`, `DCGM_FI_PROCESS_NAME`, `GPU_I_PROFILE`, the XID
//!   gauge's `err_code` and `err_msg`, `job`,
//!   `pod`, ..., every `exported_*` label but `exported_instance`, and the Kubernetes discovery
//!   labels `kubernetes_*`, `app_kubernetes_io_*`, `helm_sh_*`) become port attributes, once per
//!   (host, device, port, key, value) and input; `*_info` series with value 1 become attributes
//!   only (every label except host/device/port identity), with no sample row;
//! * DCGM blank sentinels (int64 >= 0x7ffffffffffffff0, fp64 2^47..2^47+5) become null values.
//!
//! An empty label value is the same as no label (Prometheus semantics) and is ignored.
//!
//! A file that holds one scrape meets every label set for the first time in its first family. A
//! new label set that differs from the last one resolved the long way only in its host and device
//! values (the next device, or the next host, of that family) is resolved from that one, its
//! [`Shape`]: the same labels in the same places give the same roles, attributes, port and
//! priority, so only the two names are looked up.

use std::borrow::Cow;
use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use hashbrown::HashTable;
use memchr::{memchr2, memchr3, memrchr2};

use crate::error::{Error, Position, Result};
use crate::formats::{Directive, LineReader, feed_lines, parse_directive};
use crate::number;
use crate::read::ReadContext;
use crate::schema::{Attribute, Interner, Sample, Value, translate_key};
use crate::vocabulary::{self, Kind, Mapping, Namespace};

/// Which dialect: decides the unit of sample timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Text 0.0.4: timestamps are integer milliseconds.
    Prometheus,
    /// OpenMetrics 1.0: timestamps are (possibly fractional) seconds.
    OpenMetrics,
}

/// Cached series beyond this count are dropped and resolved again (bounded memory on inputs with
/// millions of distinct series).
const MAX_CACHED_SERIES: usize = 1 << 20;
/// Chunks of at least this size come from inputs big enough to fill a samples batch.
const LARGE_CHUNK_BYTES: usize = 1 << 20;
/// At most this many rows are reserved ahead (about 45 MB of columns, address space until used).
const MAX_RESERVED_ROWS: usize = 1 << 20;
/// DCGM int64 blank / not-found / not-supported values start here (`DCGM_INT64_BLANK`).
const DCGM_INT64_BLANK: u64 = 0x7fff_ffff_ffff_fff0;
/// DCGM fp64 blank values are 2^47 plus 0..=5 (`DCGM_FP64_BLANK`), printed as floats.
const DCGM_FP64_BLANK: u64 = 1 << 47;
/// Below this magnitude an integer timestamp is taken as seconds (1e11 ms is March 1973).
const SECONDS_LIMIT: u64 = 100_000_000_000;
const NS_PER_S: i64 = 1_000_000_000;
const NS_PER_MS: i64 = 1_000_000;

/// Labels that describe a series rather than distinguish it: kept as attributes, not in the name.
const METADATA_LABELS: &[&str] = &[
    "UUID",
    "uuid",
    "modelName",
    "pci_bus_id",
    "DCGM_FI_DRIVER_VERSION",
    // dcgm-exporter: the process using the GPU and the MIG profile describe the series.
    "DCGM_FI_PROCESS_NAME",
    "DCGM_FI_CUDA_DRIVER_VERSION",
    "GPU_I_PROFILE",
    // dcgm-exporter 3.3.6-3.4.2 on: the XID gauge's own value and the catalogue's text for it.
    "err_code",
    "err_msg",
    "job",
    "exported_job",
    "container",
    "namespace",
    "pod",
    "service",
    "endpoint",
    "switch",
    "hca",
    "lid",
];

/// Label name prefixes that describe a series, as [`METADATA_LABELS`] do: Prometheus renames a
/// label the target also sets to `exported_<name>` (dcgm-exporter's `pod`, `namespace` and
/// `container` of the workload on a GPU, when the scrape adds the exporter pod's own), and
/// Kubernetes service discovery copies the target's labels (`kubernetes_node`,
/// `app_kubernetes_io_name`, `helm_sh_chart`). `exported_instance` is a host label, taken first.
const METADATA_PREFIXES: &[&str] = &["exported_", "kubernetes_", "app_kubernetes_io_", "helm_sh_"];

/// The metric whose `nodename` label names the machine in every node_exporter scrape.
const UNAME_SERIES: &[u8] = b"node_uname_info{";

/// A `# TYPE` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MetricType {
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    Summary,
    Info,
    StateSet,
    Untyped,
}

impl MetricType {
    fn parse(s: &[u8]) -> Option<MetricType> {
        Some(match s {
            b"counter" => MetricType::Counter,
            b"gauge" => MetricType::Gauge,
            b"histogram" => MetricType::Histogram,
            b"gaugehistogram" => MetricType::GaugeHistogram,
            b"summary" => MetricType::Summary,
            b"info" => MetricType::Info,
            b"stateset" => MetricType::StateSet,
            b"untyped" | b"unknown" => MetricType::Untyped,
            _ => return None,
        })
    }
}

/// Data needed only on the first sample of a series (attributes) or by `*_info` series.
#[derive(Debug)]
struct Cold {
    /// Attribute names and values, as keys of [`AttrState::strings`].
    attrs: Vec<(i32, i32)>,
    /// An `*_info` series: attributes when its value is 1, an ordinary sample otherwise.
    info: bool,
    /// Counter name of an info series, interned only if a value other than 1 shows up.
    counter_name: Box<str>,
    emitted: bool,
}

/// Everything a sample line needs, resolved once per distinct series text.
#[derive(Debug)]
struct Series {
    host: i32,
    device: i32,
    port: Option<u16>,
    priority: Option<u8>,
    /// Counter key; -1 while an info series has not needed one.
    counter: i32,
    multiply: u32,
    scale: u32,
    is_counter: bool,
    dcgm: bool,
    /// A gauge that cannot be negative: a negative sample is the exporter's "unknown".
    nonnegative: bool,
    cold: Option<Box<Cold>>,
}

/// What a metric name resolves to, once per name and input (its family type may change it: the
/// names are resolved again after a `# TYPE` line that changes a type).
// Four independent facts of a name, each read per sample: flags say what they mean.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug)]
struct NameInfo {
    multiply: u32,
    scale: u32,
    /// The priority an `node_ethtool_*` name carries.
    name_priority: Option<u8>,
    /// An `*_info` series: attributes when its value is 1.
    info: bool,
    is_counter: bool,
    dcgm: bool,
    /// A rate, width or state gauge: negative values are sentinels (node_exporter's
    /// `node_network_speed_bytes` is -125000 when the kernel's speed is -1, unknown).
    nonnegative: bool,
    /// The counter name before any extra labels: the vocabulary's canonical name, else the name.
    base: Box<str>,
    /// Counter key of `base` (series without extra labels); -1 until a series needs it.
    counter: i32,
}

/// What a label set (`{device="mlx5_0",instance="gpu017:9100",job="node",port="1"}`) resolves
/// to, once per label set and input: the families of a scrape repeat the label sets of a host.
#[derive(Debug, Clone)]
struct LabelSet {
    host: i32,
    device: i32,
    port: Option<u16>,
    priority: Option<u8>,
    /// What `host` and `device` are keys of, and whether a series of this label set took the
    /// attributes to emit in this input (every later one would find them emitted already).
    keys: Keys,
    /// It has distinguishing labels: the hot path's question, answered without reading `detail`.
    has_extras: bool,
    /// The distinguishing labels and the attributes, when there are any: shared by the label
    /// sets resolved from one [`Shape`], so that a cached label set is a few words.
    detail: Option<Arc<Detail>>,
}

/// What the host and device keys of a cached [`LabelSet`] are keys of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// This input's dictionaries; the attributes are not emitted yet.
    Unclaimed,
    /// This input's dictionaries; the attributes are emitted.
    Claimed,
    /// The reader's own dictionaries ([`Carried`]): the label set was resolved in an earlier
    /// input, and is not met in this one yet.
    Carried,
}

/// The host and device names of label sets carried from one input to the next (see
/// [`LineReader::carry_over`]), and this input's keys of those met so far.
#[derive(Debug, Default)]
struct Carried {
    hosts: Interner,
    devices: Interner,
    /// This input's key of each carried host (by its key in `hosts`), -1 until one is needed.
    host_keys: Vec<i32>,
    device_keys: Vec<i32>,
}

impl Carried {
    /// Make a carried label set's keys this input's: its names interned as resolving it would.
    fn bring(&mut self, set: &mut LabelSet, ctx: &mut ReadContext<'_>) {
        set.host = translate_key(&mut self.host_keys, &self.hosts, set.host, |h| ctx.samples.host(h));
        set.device = translate_key(&mut self.device_keys, &self.devices, set.device, |d| ctx.samples.device(d));
        set.keys = Keys::Unclaimed;
    }
}

/// What a label set holds besides host, device, port and priority.
#[derive(Debug, PartialEq, Eq)]
struct Detail {
    /// The labels that distinguish series, as they follow the counter name
    /// (`{duplex="full",mode="1000baseT"}`), or empty.
    extras: Box<str>,
    /// Attribute names and values (keys of [`AttrState::strings`]), in label order.
    attrs: Box<[(i32, i32)]>,
}

impl LabelSet {
    fn extras(&self) -> &str {
        self.detail.as_ref().map_or("", |d| &d.extras)
    }

    fn attrs(&self) -> &[(i32, i32)] {
        self.detail.as_ref().map_or(&[], |d| &d.attrs)
    }
}

/// The port attributes emitted so far, and the attribute texts by key.
#[derive(Debug, Default)]
struct AttrState {
    seen: Emitted,
    strings: Interner,
}

/// The port attributes (host, device, port, name, value) emitted so far. A scrape holds a few
/// ports per host and an attribute or two per port, and writes a host's ports one after another:
/// each host's first ones are kept in a short list of its own, which the next ports of that host
/// find in the processor's cache, and only the rest in one set of all hosts.
#[derive(Debug, Default)]
struct Emitted {
    /// By host key, at most [`LISTED_PER_HOST`] each.
    by_host: Vec<Vec<PortAttr>>,
    /// The attributes of hosts whose list is full.
    more: AHashSet<AttrKey>,
}

/// An attribute of a host's port, packed for a list search that compares two words: device and
/// port (`0x1_0000 | port`, 0 without one), then name and value.
type PortAttr = [u64; 2];

/// Attributes of one host kept in its list before its others go to the shared set.
const LISTED_PER_HOST: usize = 32;

/// Room a host's list is made with: a host's HCAs and NICs with an attribute or two each, in one
/// allocation.
const LISTED_FIRST: usize = 16;

impl Emitted {
    /// Whether `key` is emitted for the first time (and from now on, not).
    fn insert(&mut self, key: AttrKey) -> bool {
        let (host, device, port, name, value) = key;
        let Ok(h) = usize::try_from(host) else { return self.more.insert(key) };
        if self.by_host.len() <= h {
            self.by_host.resize_with(h + 1, Vec::new);
        }
        let Some(list) = self.by_host.get_mut(h) else { return self.more.insert(key) };
        let port = port.map_or(0, |p| 0x1_0000 | u32::from(p));
        let item =
            [u64::from(device as u32) << 32 | u64::from(port), u64::from(name as u32) << 32 | u64::from(value as u32)];
        if list.contains(&item) {
            return false;
        }
        // A host's attributes go to the set only once its list is full, so an attribute a list
        // with room does not hold is new.
        if list.len() < LISTED_PER_HOST {
            if list.capacity() == 0 {
                list.reserve_exact(LISTED_FIRST);
            }
            list.push(item);
            return true;
        }
        self.more.insert(key)
    }
}

/// Why a sample line could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    /// Malformed: what was expected.
    Bad(&'static str),
    /// More labels than `max_labels`.
    TooManyLabels,
}

/// What resolving a series text gave.
enum Resolved {
    /// A series without state of its own (no extra labels, not `*_info`): its name's and label
    /// set's cache slots.
    Plain { name: u32, sets: usize, labels: u32 },
    /// A series with state of its own, for the series cache.
    Series(Series),
    /// The line was a directive after all (`time: 1764686822` looks like a sample).
    Directive,
}

/// Where the state of a series is.
#[derive(Debug, Clone, Copy)]
enum Found {
    /// No state of its own: its metric name's and label set's cache slots.
    Plain { name: u32, sets: usize, labels: u32 },
    /// Its slot in the series cache.
    Series(u32),
    /// Not seen before.
    New(Miss),
}

/// The hashes a lookup that missed computed, for the inserts that follow.
#[derive(Debug, Clone, Copy, Default)]
struct Miss {
    /// Of the series text, when the series cache was asked.
    series: Option<u64>,
    /// Of the label set, when the label-set cache was asked.
    labels: Option<u64>,
    /// The metric name's slot and where the name ends in the series text, when the lookup found
    /// it (a valid name, resolved already).
    name: Option<(u32, usize)>,
}

/// Where the fields of a sample line are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parts<'a> {
    /// End of `name{labels}`.
    key_end: usize,
    value: &'a [u8],
    timestamp: Option<&'a [u8]>,
}

/// One parsed label.
#[derive(Debug)]
struct Label<'a> {
    name: &'a str,
    /// Borrowed from the line unless it held escapes.
    value: Cow<'a, str>,
    /// Offset of the value's first byte in the label set's text.
    at: usize,
    role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Distinguishes series: appended to the counter name.
    Extra,
    /// Consumed as host, device, port or priority (or empty).
    Identity,
    /// Describes the series: becomes an attribute.
    Metadata,
}

/// A timestamp token that is not a number.
#[derive(Debug, Clone, Copy)]
struct BadTimestamp;

type AttrKey = (i32, i32, Option<u16>, i32, i32);

/// Streaming reader for Prometheus/OpenMetrics text.
pub struct PrometheusReader {
    flavor: Flavor,
    series: TextCache<Series>,
    names: TextCache<NameInfo>,
    /// Label sets of other metrics and of `DCGM_FI_*` metrics (which read a `gpu` label).
    label_sets: [TextCache<LabelSet>; 2],
    /// The pattern of each label-set cache's next label set.
    shapes: [Option<Shape>; 2],
    /// Reused by each label set resolved the long way for its attributes.
    scratch_attrs: Vec<(i32, i32)>,
    /// Names of the label sets carried over from earlier inputs.
    carried: Carried,
    /// A label-set cache holds a label set whose host is not a label's value (it comes from the
    /// input: a directive, `node_uname_info`, the file name), or a `port` label that is not a
    /// port (which this input warns about once): it cannot serve another input.
    input_bound: [bool; 2],
    types: AHashMap<Box<str>, MetricType>,
    attrs: AttrState,
    /// Last timestamp directive: dates samples without their own timestamp.
    directive_time: Option<i64>,
    /// Last `# host: NAME` directive.
    directive_host: Option<String>,
    /// The `nodename`s of the `node_uname_info` lines of the current chunk, by the absolute byte
    /// offset of their line, and the index of the first one at or after the current line.
    uname_marks: Vec<(u64, String)>,
    uname_next: usize,
    /// The `nodename` of the scrape the current line belongs to: the next `node_uname_info` line
    /// (node_exporter writes it near the end of a scrape), else the last one seen.
    uname_host: Option<String>,
    fallback_time: Option<i64>,
    fallback_host: Option<String>,
    /// Content seen since the last `# EOF`.
    open_exposition: bool,
    warned: Warned,
}

/// Warnings given once per input.
#[derive(Debug, Default, Clone, Copy)]
struct Warned {
    seconds: bool,
    millis: bool,
    port: bool,
}

/// What a `name: value` line is, when a Prometheus read meets one.
const ETHTOOL_SHAPED: &str = "a Prometheus sample `name{labels} value` (a metric name ending in `:` before a bare value is `ethtool -S` output: read it with format=ethtool)";

impl PrometheusReader {
    /// A reader for one input.
    pub fn new(flavor: Flavor) -> Self {
        PrometheusReader {
            flavor,
            series: TextCache::default(),
            names: TextCache::default(),
            label_sets: [TextCache::default(), TextCache::default()],
            shapes: [None, None],
            scratch_attrs: Vec::new(),
            carried: Carried::default(),
            input_bound: [false; 2],
            types: AHashMap::new(),
            attrs: AttrState::default(),
            directive_time: None,
            directive_host: None,
            uname_marks: Vec::new(),
            uname_next: 0,
            uname_host: None,
            fallback_time: None,
            fallback_host: None,
            open_exposition: false,
            warned: Warned::default(),
        }
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let line = trim_blanks(raw);
        let Some(&first) = line.first() else { return Ok(()) };
        if first == b'#' {
            return self.comment(line, pos, ctx);
        }
        self.open_exposition = true;

        // Hot path: value and timestamp tokens taken from the end of the line, and the text before
        // them found in the caches (its metric name and label set, or the whole series text). A
        // hit proves that text is a complete, validated series, so the forward parse below would
        // have split the line the same way.
        let mut tail = None;
        if let Some(p) = split_tail(line)
            && let Some((value, float_syntax)) = parse_value(p.value)
            && let Ok(ts) = self.optional_timestamp(p.timestamp, ctx)
            && let Some(key) = line.get(..p.key_end)
        {
            match self.lookup(key) {
                Found::New(miss) => {
                    // A new label set of a known (so valid) metric name, the key ending in `}`:
                    // when its labels parse, they end at the key's last byte, and the forward
                    // split below would find these same value and timestamp tokens after them.
                    // So the series is resolved now; if the labels do not parse, the long way
                    // reports what the line lacks first.
                    if miss.name.is_some()
                        && key.last() == Some(&b'}')
                        && let Ok(found) = self.resolve_found(line, key, miss, ctx)
                    {
                        let Some(found) = found else { return Ok(()) };
                        let time = sample_time(ts, self.directive_time, &mut self.fallback_time, ctx)?;
                        return self.emit(found, value, float_syntax, time, ctx);
                    }
                    tail = Some((p, miss, value, float_syntax, ts));
                }
                found => {
                    let time = sample_time(ts, self.directive_time, &mut self.fallback_time, ctx)?;
                    return self.emit(found, value, float_syntax, time, ctx);
                }
            }
        }

        let parts = match split_sample(line) {
            Ok(p) => p,
            Err(expected) => {
                // DCGM exporter writes `ERROR - FAILED TO CONVERT TO STRING` where a field has no
                // value: name that text rather than complain about what follows it.
                if let Some(text) = non_numeric_value(line) {
                    let expected = format!("a sample value (a number, NaN, +Inf or -Inf), not the text `{text}`");
                    return self.not_a_sample(line, pos, &expected, ctx);
                }
                return self.not_a_sample(line, pos, expected, ctx);
            }
        };
        // The forward split usually finds what the tail split found: value and timestamp are
        // parsed already, and the series text was looked up (and not found) already.
        let missed = tail.filter(|t| t.0.key_end == parts.key_end).map(|t| t.1);
        let (value, float_syntax, ts) = match tail {
            Some((p, _, value, float_syntax, ts)) if p == parts => (value, float_syntax, ts),
            _ => {
                let Some((value, float_syntax)) = parse_value(parts.value) else {
                    return self.not_a_sample(line, pos, "a sample value (a number, NaN, +Inf or -Inf)", ctx);
                };
                let ts = match parts.timestamp {
                    Some(tok) => match self.parse_timestamp(tok, ctx) {
                        Some(t) => Some(t),
                        None => return self.not_a_sample(line, pos, "a timestamp after the value", ctx),
                    },
                    None => None,
                };
                (value, float_syntax, ts)
            }
        };
        let key = line.get(..parts.key_end).unwrap_or(line);
        // `rx_packets: 1260062` is a valid exposition line by the grammar (a metric name may hold
        // colons) but no exporter writes a name ending in `:` before its value: it is `ethtool -S`
        // output without its `NIC statistics:` header.
        if key.last() == Some(&b':') && !key.contains(&b'{') && parts.value.iter().all(u8::is_ascii_digit) {
            return self.not_a_sample(line, pos, ETHTOOL_SHAPED, ctx);
        }

        // A series seen before, written with other spacing or an exemplar.
        let hash = match missed.map_or_else(|| self.lookup(key), Found::New) {
            Found::New(hash) => hash,
            found => {
                let time = sample_time(ts, self.directive_time, &mut self.fallback_time, ctx)?;
                return self.emit(found, value, float_syntax, time, ctx);
            }
        };

        let Some(found) = self.new_series(line, key, hash, pos, ctx)? else { return Ok(()) };
        let time = sample_time(ts, self.directive_time, &mut self.fallback_time, ctx)?;
        self.emit(found, value, float_syntax, time, ctx)
    }

    /// Where the state of the series `key` is, if it was seen before. Most series have no state
    /// of their own (their metric name and label set say everything): they are found by those
    /// two, which exporters repeat in the same order in every family and scrape.
    fn lookup(&mut self, key: &[u8]) -> Found {
        let name_end = memchr3(b'{', b' ', b'\t', key).unwrap_or(key.len());
        let (name, rest) = key.split_at(name_end);
        if rest.is_empty() && name.last() == Some(&b':') {
            // A directive (`time: 1764686822`) or `ethtool -S` output: the long way.
            return Found::New(Miss::default());
        }
        let Ok(name_slot) = self.names.find(name) else { return Found::New(Miss::default()) };
        let Some(info) = self.names.get(name_slot) else { return Found::New(Miss::default()) };
        if !info.info {
            let sets = usize::from(info.dcgm);
            let set_slot = match self.label_sets[sets].find(rest) {
                Ok(slot) => slot,
                Err(hash) => {
                    return Found::New(Miss { series: None, labels: Some(hash), name: Some((name_slot, name_end)) });
                }
            };
            if self.label_sets[sets].get(set_slot).is_some_and(|l| !l.has_extras) {
                return Found::Plain { name: name_slot, sets, labels: set_slot };
            }
        }
        // Extra labels or an `*_info` metric: state of its own, in the series cache.
        match self.series.find(key) {
            Ok(slot) => Found::Series(slot),
            Err(hash) => Found::New(Miss { series: Some(hash), labels: None, name: Some((name_slot, name_end)) }),
        }
    }

    /// Push one sample of a series found by [`Self::lookup`] or made by [`Self::new_series`].
    fn emit(
        &mut self,
        found: Found,
        value: Value,
        float_syntax: bool,
        time_ns: i64,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        match found {
            Found::Series(slot) => match self.series.get_mut(slot) {
                Some(s) => emit(s, value, float_syntax, time_ns, &mut self.attrs, ctx),
                None => Ok(()),
            },
            Found::Plain { name, sets, labels } => {
                let (Some(n), Some(l)) = (self.names.get_mut(name), self.label_sets[sets].get_mut(labels)) else {
                    return Ok(());
                };
                if n.counter < 0 {
                    n.counter = ctx.samples.counter(&n.base);
                }
                let value = if (n.dcgm && is_dcgm_blank(value, float_syntax)) || (n.nonnegative && is_negative(value)) {
                    Value::Null
                } else {
                    value
                };
                // The first sample of a label set emits its attributes.
                if l.keys != Keys::Claimed {
                    if l.keys == Keys::Carried {
                        self.carried.bring(l, ctx);
                    }
                    l.keys = Keys::Claimed;
                    let (host, device, port) = (l.host, l.device, l.port);
                    for &(k, v) in l.attrs() {
                        if self.attrs.seen.insert((host, device, port, k, v))
                            && let (Some(key), Some(value)) = (self.attrs.strings.get(k), self.attrs.strings.get(v))
                        {
                            let a = Attribute { time_ns, host, device, port, key, value };
                            ctx.push_attribute_keyed(&a)?;
                        }
                    }
                }
                ctx.push(&Sample {
                    time_ns,
                    host: l.host,
                    device: l.device,
                    port: l.port,
                    priority: n.name_priority.or(l.priority),
                    counter: n.counter,
                    value: value.multiplied(n.multiply),
                    scale: n.scale,
                    is_counter: n.is_counter,
                })
            }
            Found::New(_) => Ok(()),
        }
    }

    /// One sample of the series `key` (`name{label="value",...}`, as an exposition writes it)
    /// that comes from outside a text line: the Prometheus HTTP API's JSON. It is resolved and
    /// emitted exactly as a text sample of that series would be, so host, device, port,
    /// priority, counter name, attributes and DCGM blanks follow the same conventions. `value`
    /// is the value token; the server stores float64, so it counts as written in float syntax.
    pub fn push_series_sample(
        &mut self,
        key: &[u8],
        value: &[u8],
        time_ns: i64,
        pos: Position,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        let Some((value, _)) = parse_value(value) else {
            return ctx.bad_record(pos, "a sample value (a number, NaN, +Inf or -Inf)", value);
        };
        self.push_series_value(key, value, time_ns, pos, ctx)
    }

    /// [`Self::push_series_sample`] with the value already decoded (remote read's float64,
    /// normalised as the HTTP API's text of it would be).
    pub fn push_series_value(
        &mut self,
        key: &[u8],
        value: Value,
        time_ns: i64,
        pos: Position,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        let found = match self.lookup(key) {
            Found::New(hash) => match self.new_series(key, key, hash, pos, ctx)? {
                Some(found) => found,
                None => return Ok(()),
            },
            found => found,
        };
        self.emit(found, value, true, time_ns, ctx)
    }

    /// Many samples of one series (remote read's `TimeSeries`): resolved once, then emitted as
    /// [`Self::push_series_value`] would emit each.
    pub fn push_series_values(
        &mut self,
        key: &[u8],
        values: impl IntoIterator<Item = (Value, i64)>,
        pos: Position,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        let mut values = values.into_iter();
        // One lookup per series: a second one would find the series where the cache predicts its
        // successor, and link the series to itself.
        let found = match self.lookup(key) {
            Found::New(hash) => {
                let Some((value, time_ns)) = values.next() else { return Ok(()) };
                // The first sample resolves (and caches) the series, or reports why it cannot.
                let Some(found) = self.new_series(key, key, hash, pos, ctx)? else {
                    // Unresolvable: each sample is reported, as one by one.
                    for (value, time_ns) in values {
                        self.push_series_value(key, value, time_ns, pos, ctx)?;
                    }
                    return Ok(());
                };
                self.emit(found, value, true, time_ns, ctx)?;
                found
            }
            found => found,
        };
        for (value, time_ns) in values {
            self.emit(found, value, true, time_ns, ctx)?;
        }
        Ok(())
    }

    /// Resolve a series text seen for the first time (`miss`: what its lookup computed);
    /// `None` when the line was a directive or a bad record already reported (lenient mode).
    fn new_series(
        &mut self,
        line: &[u8],
        key: &[u8],
        miss: Miss,
        pos: Position,
        ctx: &mut ReadContext<'_>,
    ) -> Result<Option<Found>> {
        match self.resolve_found(line, key, miss, ctx) {
            Ok(found) => Ok(found),
            Err(Fail::Bad(expected)) => self.not_a_sample(line, pos, expected, ctx).map(|()| None),
            Err(Fail::TooManyLabels) => {
                let limit = ctx.options().limits.max_labels as u64;
                ctx.bad_record_error(Error::LimitExceeded {
                    path: ctx.path.to_path_buf(),
                    position: pos,
                    what: "number of labels on one sample",
                    limit,
                    option: "max_labels",
                })
                .map(|()| None)
            }
        }
    }

    /// [`Self::resolve`], and a series with state of its own kept in the series cache; `None`
    /// for a directive.
    fn resolve_found(
        &mut self,
        line: &[u8],
        key: &[u8],
        miss: Miss,
        ctx: &mut ReadContext<'_>,
    ) -> Result<Option<Found>, Fail> {
        Ok(match self.resolve(line, key, miss, ctx)? {
            Resolved::Plain { name, sets, labels } => Some(Found::Plain { name, sets, labels }),
            Resolved::Series(s) => {
                let hash = miss.series.unwrap_or_else(|| self.series.hash(key));
                Some(Found::Series(self.series.insert(key, hash, s)))
            }
            Resolved::Directive => None,
        })
    }

    fn comment(&mut self, line: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(rest) = line.strip_prefix(b"# ") {
            let rest = trim_blanks(rest);
            if rest == b"EOF" {
                self.open_exposition = false;
                return Ok(());
            }
            self.open_exposition = true;
            let (keyword, decl) = rest.split_at(memchr2(b' ', b'\t', rest).unwrap_or(rest.len()));
            match keyword {
                b"HELP" | b"UNIT" => return Ok(()),
                b"TYPE" => return self.type_line(decl, line, pos, ctx),
                _ => {}
            }
        } else {
            self.open_exposition = true;
        }
        if let Ok(text) = std::str::from_utf8(line) {
            match parse_directive(text) {
                Some(Directive::Time(t)) => self.directive_time = Some(ctx.stated_time(t)),
                Some(Directive::Host(h)) => self.set_host(h),
                Some(Directive::Device(_)) | None => {}
            }
        }
        Ok(())
    }

    fn type_line(&mut self, decl: &[u8], line: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`# TYPE <metric name> <counter|gauge|histogram|summary|untyped|...>`";
        let mut words = decl.split(|b| *b == b' ' || *b == b'\t').filter(|w| !w.is_empty());
        let (Some(name), Some(kind), None) = (words.next(), words.next(), words.next()) else {
            return ctx.bad_record(pos, EXPECTED, line);
        };
        let (Some(kind), true) = (MetricType::parse(kind), valid_metric_name(name)) else {
            return ctx.bad_record(pos, EXPECTED, line);
        };
        let Ok(name) = std::str::from_utf8(name) else {
            return ctx.bad_record(pos, EXPECTED, line);
        };
        if self.types.get(name) != Some(&kind) {
            self.types.insert(name.into(), kind);
            // Cached series and names may have been resolved without (or with another) type.
            self.series.clear();
            self.names.clear();
        }
        Ok(())
    }

    fn set_host(&mut self, host: String) {
        if self.directive_host.as_deref() != Some(host.as_str()) {
            self.directive_host = Some(host);
            self.forget_default_host();
        }
    }

    /// The host of series without host labels changed: series and label sets resolved with the
    /// old one are resolved again.
    fn forget_default_host(&mut self) {
        self.series.clear();
        for sets in &mut self.label_sets {
            sets.clear();
        }
    }

    /// Find the `node_uname_info` lines of a chunk (their `nodename`), before its lines are read:
    /// node_exporter writes that series near the end of a scrape, after the series it names.
    fn mark_uname_lines(&mut self, chunk: &[u8], start: Position, max_labels: usize) {
        self.uname_marks.clear();
        self.uname_next = 0;
        for at in memchr::memmem::find_iter(chunk, UNAME_SERIES) {
            if at > 0 && chunk.get(at - 1) != Some(&b'\n') {
                continue;
            }
            let rest = chunk.get(at..).unwrap_or_default();
            let line = rest.get(..memchr::memchr(b'\n', rest).unwrap_or(rest.len())).unwrap_or_default();
            let Ok(parts) = split_sample(trim_blanks(line)) else { continue };
            let labels = line.get(UNAME_SERIES.len() - 1..parts.key_end).unwrap_or_default();
            let Ok(labels) = parse_labels(labels, max_labels) else { continue };
            if let Some(name) = labels.iter().find(|l| l.name == "nodename" && !l.value.is_empty()) {
                self.uname_marks.push((start.byte_offset + at as u64, name.value.to_string()));
            }
        }
        if let Some((_, first)) = self.uname_marks.first() {
            let first = first.clone();
            self.set_uname_host(first);
        }
    }

    /// Called before each line: past a `node_uname_info` line, the next one names the host.
    fn follow_uname_lines(&mut self, pos: Position) {
        let Some(&(at, _)) = self.uname_marks.get(self.uname_next) else { return };
        if pos.byte_offset <= at {
            return;
        }
        self.uname_next += 1;
        if let Some((_, next)) = self.uname_marks.get(self.uname_next) {
            let next = next.clone();
            self.set_uname_host(next);
        }
    }

    fn set_uname_host(&mut self, host: String) {
        if self.uname_host.as_deref() != Some(host.as_str()) {
            self.uname_host = Some(host);
            if self.directive_host.is_none() {
                self.forget_default_host();
            }
        }
    }

    /// A line that is not a valid sample: a directive (timestamp or host line), else a bad record.
    fn not_a_sample(&mut self, line: &[u8], pos: Position, expected: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Ok(text) = std::str::from_utf8(line) {
            match parse_directive(text) {
                Some(Directive::Time(t)) => {
                    self.directive_time = Some(ctx.stated_time(t));
                    return Ok(());
                }
                Some(Directive::Host(h)) => {
                    self.set_host(h);
                    return Ok(());
                }
                Some(Directive::Device(_)) | None => {}
            }
        }
        ctx.bad_record(pos, expected, line)
    }

    /// `Ok(None)` without a token, `Ok(Some(ns))` for a valid one.
    fn optional_timestamp(
        &mut self,
        tok: Option<&[u8]>,
        ctx: &mut ReadContext<'_>,
    ) -> Result<Option<i64>, BadTimestamp> {
        match tok {
            None => Ok(None),
            Some(t) => self.parse_timestamp(t, ctx).map(Some).ok_or(BadTimestamp),
        }
    }

    fn parse_timestamp(&mut self, tok: &[u8], ctx: &mut ReadContext<'_>) -> Option<i64> {
        let int = number::parse_i64_token(tok);
        match (self.flavor, int) {
            (Flavor::Prometheus, Some(v)) if v.unsigned_abs() >= SECONDS_LIMIT => v.checked_mul(NS_PER_MS),
            (Flavor::OpenMetrics, Some(v)) if v.unsigned_abs() >= SECONDS_LIMIT => {
                if !self.warned.millis {
                    self.warned.millis = true;
                    ctx.warn("OpenMetrics timestamps look like milliseconds (>= 1e11): read as milliseconds");
                }
                v.checked_mul(NS_PER_MS)
            }
            (flavor, _) => {
                let ns = parse_seconds(tok)?;
                if flavor == Flavor::Prometheus && !self.warned.seconds {
                    self.warned.seconds = true;
                    ctx.warn("Prometheus timestamps look like seconds (a fraction, or below 1e11), not milliseconds: read as seconds");
                }
                Some(ns)
            }
        }
    }

    /// Type of the family `name` belongs to (`foo_total` belongs to `# TYPE foo counter`).
    fn family_type(&self, name: &str) -> Option<MetricType> {
        if let Some(t) = self.types.get(name) {
            return Some(*t);
        }
        ["_total", "_created", "_count", "_sum", "_bucket", "_gcount", "_gsum", "_info"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).and_then(|base| self.types.get(base)).copied())
    }

    /// Resolve a series text seen for the first time: its metric name and its label set, each
    /// resolved once per input and cached (a scrape repeats every label set once per family).
    /// `miss`: what the lookup of `key` that just missed found (the name) and computed (hashes).
    fn resolve(&mut self, line: &[u8], key: &[u8], miss: Miss, ctx: &mut ReadContext<'_>) -> Result<Resolved, Fail> {
        // A name found by the lookup was validated and resolved when it was cached.
        let (name_slot, rest) = if let Some((slot, name_end)) = miss.name {
            (slot, key.get(name_end..).unwrap_or_default())
        } else {
            let (name_bytes, rest) = key.split_at(memchr3(b'{', b' ', b'\t', key).unwrap_or(key.len()));
            match self.resolve_name(line, name_bytes, rest, ctx)? {
                Some(slot) => (slot, rest),
                None => return Ok(Resolved::Directive),
            }
        };
        self.resolve_with_name(rest, name_slot, miss.labels, ctx)
    }

    /// The cache slot of the metric name `name_bytes` (`rest`: the label set after it), `None`
    /// when the line is a directive (`time: 1764686822`).
    fn resolve_name(
        &mut self,
        line: &[u8],
        name_bytes: &[u8],
        rest: &[u8],
        ctx: &mut ReadContext<'_>,
    ) -> Result<Option<u32>, Fail> {
        if !valid_metric_name(name_bytes) {
            return Err(Fail::Bad("a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
        }
        let name = std::str::from_utf8(name_bytes).map_err(|_| Fail::Bad("an ASCII metric name"))?;
        if rest.is_empty() && name.ends_with(':') {
            // `time: 1764686822` and `host: gpu017` are directives, not metrics named `time:`.
            if let Ok(text) = std::str::from_utf8(line) {
                match parse_directive(text) {
                    Some(Directive::Time(t)) => {
                        self.directive_time = Some(ctx.stated_time(t));
                        return Ok(None);
                    }
                    Some(Directive::Host(h)) => {
                        self.set_host(h);
                        return Ok(None);
                    }
                    Some(Directive::Device(_)) | None => {}
                }
            }
        }
        let name_slot = match self.names.find(name_bytes) {
            Ok(slot) => slot,
            Err(hash) => {
                let info = self.name_info(name);
                if self.names.is_full() {
                    // Cached series refer to their names.
                    self.series.clear();
                }
                self.names.insert(name_bytes, hash, info)
            }
        };
        Ok(Some(name_slot))
    }

    /// [`Self::resolve`] once the metric name is in the names cache (`name_slot`).
    /// `labels_hash`: the hash of the label set `rest` when its lookup just missed.
    fn resolve_with_name(
        &mut self,
        rest: &[u8],
        name_slot: u32,
        labels_hash: Option<u64>,
        ctx: &mut ReadContext<'_>,
    ) -> Result<Resolved, Fail> {
        let Some(&NameInfo { info, dcgm, nonnegative, .. }) = self.names.get(name_slot) else {
            return Err(Fail::Bad("a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
        };

        if info {
            // `*_info` series are few, and their extra labels are attributes too: not cached.
            let labels = self.resolve_labels(rest, dcgm, None, ctx)?;
            let Some(name) = self.names.get(name_slot) else {
                return Err(Fail::Bad("a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
            };
            let counter_name = format!("{}{}", name.base, labels.extras());
            return Ok(Resolved::Series(Series {
                host: labels.host,
                device: labels.device,
                port: labels.port,
                priority: name.name_priority.or(labels.priority),
                counter: -1,
                multiply: name.multiply,
                scale: name.scale,
                is_counter: name.is_counter,
                dcgm,
                nonnegative,
                cold: Some(Box::new(Cold {
                    attrs: labels.attrs().to_vec(),
                    info: true,
                    counter_name: counter_name.into(),
                    emitted: false,
                })),
            }));
        }

        let sets = usize::from(dcgm);
        let set_slot = match labels_hash.map_or_else(|| self.label_sets[sets].find(rest), Err) {
            Ok(slot) => slot,
            Err(hash) => {
                let labels = match self.resolve_by_shape(sets, rest, ctx) {
                    Some(labels) => labels,
                    None => self.resolve_labels(rest, dcgm, Some(sets), ctx)?,
                };
                if self.label_sets[sets].is_full() {
                    // Cached series refer to their label sets.
                    self.series.clear();
                }
                self.label_sets[sets].insert(rest, hash, labels)
            }
        };
        let (Some(name), Some(labels)) = (self.names.get_mut(name_slot), self.label_sets[sets].get_mut(set_slot))
        else {
            return Err(Fail::Bad("a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
        };
        if !labels.has_extras {
            return Ok(Resolved::Plain { name: name_slot, sets, labels: set_slot });
        }
        if labels.keys == Keys::Carried {
            self.carried.bring(labels, ctx);
        }
        let counter = ctx.samples.counter(&format!("{}{}", name.base, labels.extras()));
        // The first series of a label set emits its attributes.
        let cold = (labels.keys == Keys::Unclaimed && !labels.attrs().is_empty()).then(|| {
            labels.keys = Keys::Claimed;
            Box::new(Cold { attrs: labels.attrs().to_vec(), info: false, counter_name: Box::default(), emitted: false })
        });
        Ok(Resolved::Series(Series {
            host: labels.host,
            device: labels.device,
            port: labels.port,
            priority: name.name_priority.or(labels.priority),
            counter,
            multiply: name.multiply,
            scale: name.scale,
            is_counter: name.is_counter,
            dcgm,
            nonnegative,
            cold,
        }))
    }

    /// What the metric `name` means: counter mapping, priority, type.
    fn name_info(&self, name: &str) -> NameInfo {
        let family = self.family_type(name);
        let (mapping, name_priority) = map_counter(name);
        let info = mapping.is_none()
            && name.ends_with("_info")
            && matches!(family, None | Some(MetricType::Gauge | MetricType::Info | MetricType::Untyped));
        let is_counter = mapping.map_or_else(|| type_is_counter(name, family), |m| m.def.kind == Kind::Counter);
        NameInfo {
            multiply: mapping.map_or(1, |m| m.multiply),
            scale: mapping.map_or(1, |m| m.scale),
            name_priority,
            info,
            is_counter,
            dcgm: name.starts_with("DCGM_FI_"),
            nonnegative: mapping.is_some_and(|m| {
                m.def.kind == Kind::Gauge
                    && matches!(
                        m.def.unit,
                        vocabulary::Unit::BytesPerSecond | vocabulary::Unit::Lanes | vocabulary::Unit::StateId
                    )
            }),
            base: mapping.map_or(name, |m| m.def.name).into(),
            counter: -1,
        }
    }

    /// Resolve a label set (`{...}` after a metric name, or nothing): host, device, port and
    /// priority labels, the labels that distinguish series, and the attributes. `dcgm`: the
    /// metric is a DCGM one, whose `gpu` label names the device. `cached`: the label-set cache
    /// it is for, whose [`Shape`] it becomes when it can be one; `None` for an `*_info` series,
    /// whose distinguishing labels are attributes too.
    ///
    /// Label names are distinct (`parse_labels` checks), so one pass over the labels finds each
    /// one this reads by a `match` on its name (compiled to a few integer comparisons), rather
    /// than a scan of the labels per name; host and device texts are borrowed from the line.
    fn resolve_labels(
        &mut self,
        rest: &[u8],
        dcgm: bool,
        cached: Option<usize>,
        ctx: &mut ReadContext<'_>,
    ) -> Result<LabelSet, Fail> {
        let info = cached.is_none();
        let mut labels = parse_labels(rest, ctx.options().limits.max_labels)?;
        let mut at = KnownLabels::default();
        for (i, l) in labels.iter_mut().enumerate() {
            if l.value.is_empty() {
                // An empty value is no label.
                l.role = Role::Identity;
                continue;
            }
            let slot = match l.name {
                "exported_instance" => &mut at.host[0],
                "instance" => &mut at.host[1],
                "hostname" => &mut at.host[2],
                "Hostname" => &mut at.host[3],
                "host" => &mut at.host[4],
                "node" => &mut at.host[5],
                "gpu" => &mut at.gpu,
                "GPU_I_ID" => &mut at.gpu_i_id,
                "guid" => &mut at.guid,
                "device" => &mut at.device,
                "port" => &mut at.port,
                "priority" => &mut at.priority,
                "prio" => &mut at.prio,
                name => {
                    // No identity label has a metadata name: deciding it here is deciding it
                    // after the identity labels are taken.
                    if is_metadata_label(name) {
                        l.role = Role::Metadata;
                    }
                    continue;
                }
            };
            *slot = Some(i);
        }
        // Host: the first present of the host labels, in order of preference; any other present
        // one is an attribute.
        let mut host: Option<Cow<'_, str>> = None;
        let mut host_from_instance = false;
        // The label the host is its value of (its index, and whether that carries a port), when
        // no other value decides it.
        let mut host_label = None;
        for (rank, &i) in at.host.iter().enumerate() {
            let Some(l) = i.and_then(|i| labels.get_mut(i)) else { continue };
            if host.is_none() {
                // `exported_instance` and `instance` carry the scrape port.
                host = Some(if rank <= 1 { map_cow(&l.value, strip_port) } else { l.value.clone() });
                host_from_instance = rank == 1;
                host_label = i.map(|i| (i, rank <= 1));
                l.role = Role::Identity;
            } else {
                l.role = Role::Metadata;
            }
        }
        // dcgm-exporter (or a relabeling) sets `Hostname`/`hostname` to the machine's name: that
        // label (the first of them in label order) wins over an `instance` that names something
        // else (a pod IP, a service name; see `instance_names_host`).
        let machine = match (at.host[2], at.host[3]) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if host_from_instance && machine.is_some() {
            // Which of the two names the host depends on both values.
            host_label = None;
        }
        if host_from_instance
            && let Some(machine) = machine
            && let Some(name) = labels.get(machine).map(|l| l.value.clone())
            && !host.as_deref().is_some_and(|instance| instance_names_host(instance, &name))
        {
            if let Some(l) = at.host[1].and_then(|i| labels.get_mut(i)) {
                l.role = Role::Metadata;
            }
            if let Some(l) = labels.get_mut(machine) {
                l.role = Role::Identity;
            }
            host = Some(name);
        }
        // Device.
        let mut take = |i: Option<usize>, role: Role| {
            let l = labels.get_mut(i?)?;
            l.role = role;
            Some(l.value.clone())
        };
        let gpu = if dcgm { take(at.gpu, Role::Identity) } else { None };
        // The label the device is the value of, when it is one label's value as written.
        let mut device_label = None;
        let device: Cow<'_, str> = if let Some(g) = gpu {
            // A MIG instance is its own device: `gpu0/mig3` (dcgm-exporter `GPU_I_ID`).
            let name = match take(at.gpu_i_id, Role::Identity) {
                Some(mig) => format!("gpu{g}/mig{mig}"),
                None => format!("gpu{g}"),
            };
            take(at.device, Role::Metadata);
            Cow::Owned(name)
        } else if let Some(g) = take(at.guid, Role::Identity) {
            // A label that is not a GUID is kept as the device name, lowercased.
            Cow::Owned(crate::guid::normalize_guid(&g).unwrap_or_else(|| g.trim().to_ascii_lowercase()))
        } else if let Some(d) = take(at.device, Role::Identity) {
            device_label = at.device;
            d
        } else {
            Cow::Borrowed("")
        };
        // Port.
        let mut port = None;
        if let Some(l) = at.port.and_then(|i| labels.get_mut(i)) {
            if let Some(p) = parse_port(&l.value) {
                port = Some(p);
                l.role = Role::Identity;
            } else {
                if let Some(bound) = cached.and_then(|c| self.input_bound.get_mut(c)) {
                    *bound = true;
                }
                if !self.warned.port {
                    self.warned.port = true;
                    ctx.warn(
                        "a `port` label is not a port number 0-65535: port left null, the label kept in the counter name",
                    );
                }
            }
        }
        // Priority: `prio` wins over `priority` when both hold one.
        let mut priority = None;
        for i in [at.priority, at.prio] {
            if let Some(l) = i.and_then(|i| labels.get_mut(i))
                && let [d @ b'0'..=b'7'] = l.value.as_bytes()
            {
                priority = Some(d - b'0');
                l.role = Role::Identity;
            }
        }

        let extra_count = labels.iter().filter(|l| l.role == Role::Extra).count();
        let mut extra_text = String::new();
        if extra_count > 0 {
            let mut extras: Vec<&Label<'_>> = labels.iter().filter(|l| l.role == Role::Extra).collect();
            extras.sort_unstable_by(|a, b| a.name.cmp(b.name));
            extra_text.reserve(16 * extras.len());
            extra_text.push('{');
            for (i, l) in extras.iter().enumerate() {
                if i > 0 {
                    extra_text.push(',');
                }
                extra_text.push_str(l.name);
                extra_text.push_str("=\"");
                push_escaped(&mut extra_text, &l.value);
                extra_text.push('"');
            }
            extra_text.push('}');
        }
        let strings = &mut self.attrs.strings;
        let mut attrs = std::mem::take(&mut self.scratch_attrs);
        attrs.clear();
        attrs.extend(
            labels
                .iter()
                .filter(|l| l.role == Role::Metadata || (info && l.role == Role::Extra))
                .map(|l| (strings.intern(l.name), strings.intern(&l.value))),
        );
        let has_extras = !extra_text.is_empty();
        // The previous label set's, mostly (one `job` for a whole scrape).
        let detail = if extra_text.is_empty() && attrs.is_empty() {
            None
        } else {
            match cached.and_then(|c| self.shapes.get(c)?.as_ref()?.set.detail.as_ref()) {
                Some(d) if *d.extras == *extra_text && *d.attrs == *attrs => Some(Arc::clone(d)),
                _ => Some(Arc::new(Detail { extras: extra_text.into(), attrs: attrs.as_slice().into() })),
            }
        };
        self.scratch_attrs = attrs;

        let host = if let Some(h) = host {
            ctx.samples.host(&h)
        } else {
            if let Some(bound) = cached.and_then(|c| self.input_bound.get_mut(c)) {
                *bound = true;
            }
            if let Some(h) = self.directive_host.as_deref().or(self.uname_host.as_deref()) {
                ctx.samples.host(h)
            } else {
                let h = self.fallback_host.get_or_insert_with(|| ctx.fallback_host());
                ctx.samples.host(h)
            }
        };
        let set = LabelSet {
            host,
            device: ctx.samples.device(&device),
            port,
            priority,
            keys: Keys::Unclaimed,
            has_extras,
            detail,
        };
        if let Some(cache) = cached
            && let Some(shape) = self.shapes.get_mut(cache)
        {
            // Only a label set whose host is one label's value can be a pattern: with no host
            // label the host comes from the position in the input.
            let mut varying = Vec::with_capacity(2);
            let mut borrowed = true;
            let mut span = |i: usize, what: Varying| {
                if let Some(l) = labels.get(i) {
                    borrowed &= matches!(l.value, Cow::Borrowed(_));
                    varying.push((l.at, l.at + l.value.len(), what));
                }
            };
            if let Some((i, strip_port)) = host_label {
                span(i, Varying::Host { strip_port });
            }
            if let Some(i) = device_label {
                span(i, Varying::Device);
            }
            varying.sort_unstable_by_key(|v| v.0);
            *shape = (host_label.is_some() && borrowed).then(|| Shape {
                text: rest.into(),
                varying,
                set: set.clone(),
                last_host: (Vec::new(), -1),
                devices: Vec::new(),
                next_device: 0,
            });
        }
        Ok(set)
    }

    /// A label set resolved from the last one of its cache resolved the long way (its
    /// [`Shape`]), when its text is that one's with other host and device values (none empty,
    /// none escaped): the same labels, so the same roles, port, priority and attributes, and the
    /// two names interned as [`Self::resolve_labels`] interns them.
    fn resolve_by_shape(&mut self, cache: usize, rest: &[u8], ctx: &mut ReadContext<'_>) -> Option<LabelSet> {
        let shape = self.shapes.get_mut(cache)?.as_mut()?;
        let mut values: [(&[u8], Varying); 2] = [(b"", Varying::Device); 2];
        let (mut from, mut pos) = (0, 0);
        for (k, &(start, end, what)) in shape.varying.iter().enumerate() {
            let slot = values.get_mut(k)?;
            let fixed = shape.text.get(from..start)?;
            if rest.get(pos..pos + fixed.len())? != fixed {
                return None;
            }
            pos += fixed.len();
            let tail = rest.get(pos..)?;
            let len = find_quote_or_backslash(tail)?;
            if len == 0 || tail.get(len) != Some(&b'"') {
                return None;
            }
            *slot = (tail.get(..len)?, what);
            pos += len;
            from = end;
        }
        if rest.get(pos..)? != shape.text.get(from..)? {
            return None;
        }
        let values = values.get(..shape.varying.len())?;
        // The host or device a value names when this shape met it before (no need to check its
        // encoding again), else the value's text. Nothing is interned before every value is
        // known valid: a label set that goes the long way after all leaves the names as they were.
        let mut found: [Result<i32, &str>; 2] = [Err(""); 2];
        for (&(value, what), slot) in values.iter().zip(found.iter_mut()) {
            let known = match what {
                // A host's devices follow one another: its name was met for the one before.
                Varying::Host { .. } => (value == &*shape.last_host.0).then_some(shape.last_host.1),
                // A host's devices are the previous host's, mostly, in the same order: the one
                // after the last one found is tried first.
                Varying::Device => {
                    let n = shape.devices.len();
                    let at = (0..n)
                        .map(|k| (shape.next_device + k) % n)
                        .find(|&i| shape.devices.get(i).is_some_and(|d| *d.0 == *value));
                    at.and_then(|i| {
                        shape.next_device = i + 1;
                        shape.devices.get(i).map(|d| d.1)
                    })
                }
            };
            *slot = match known {
                Some(id) => Ok(id),
                None => Err(std::str::from_utf8(value).ok()?),
            };
        }
        let (mut host, mut device) = (shape.set.host, shape.set.device);
        for (&(value, what), found) in values.iter().zip(found) {
            let id = match (found, what) {
                (Ok(id), _) => id,
                (Err(text), Varying::Host { strip_port }) => {
                    let id = ctx.samples.host(if strip_port { self::strip_port(text) } else { text });
                    shape.last_host.0.clear();
                    shape.last_host.0.extend_from_slice(value);
                    shape.last_host.1 = id;
                    id
                }
                (Err(text), Varying::Device) => {
                    let id = ctx.samples.device(text);
                    if shape.devices.len() < SHAPE_DEVICES {
                        shape.devices.push((value.into(), id));
                        shape.next_device = shape.devices.len();
                    }
                    id
                }
            };
            match what {
                Varying::Host { .. } => host = id,
                Varying::Device => device = id,
            }
        }
        Some(LabelSet { host, device, ..shape.set.clone() })
    }
}

/// The last label set of a label-set cache resolved the long way, as the pattern of the next
/// ones: exporters write a family's label sets one device and host after another, with the same
/// label names and other values (`{device="mlx5_1",instance="gpu017:9100",job="node",port="1"}`
/// follows `{device="mlx5_0",...}`), and every one of them is new in a file that holds one
/// scrape.
#[derive(Debug)]
struct Shape {
    text: Box<[u8]>,
    /// Spans in `text` of the values of the host label and the device label, in text order.
    varying: Vec<(usize, usize, Varying)>,
    /// What `text` resolved to (not claimed: it was cached after this copy).
    set: LabelSet,
    /// The last host value met and its host.
    last_host: (Vec<u8>, i32),
    /// The first device values met (at most [`SHAPE_DEVICES`]) and their devices.
    devices: Vec<(Box<[u8]>, i32)>,
    /// Where in `devices` the next value is looked for first.
    next_device: usize,
}

/// Device values a [`Shape`] remembers: the HCAs, NICs or GPUs of one machine.
const SHAPE_DEVICES: usize = 16;

/// What a varying value of a [`Shape`] names.
#[derive(Debug, Clone, Copy)]
enum Varying {
    /// The host; `strip_port`: the label is an `instance`, which carries the scrape port.
    Host {
        strip_port: bool,
    },
    Device,
}

/// Where the labels [`PrometheusReader::resolve_labels`] reads are in a label set (indices of
/// labels with a value).
#[derive(Debug, Default)]
struct KnownLabels {
    /// The labels naming the host, in order of preference: `exported_instance`, `instance`,
    /// `hostname`, `Hostname`, `host`, `node`.
    host: [Option<usize>; 6],
    gpu: Option<usize>,
    gpu_i_id: Option<usize>,
    guid: Option<usize>,
    device: Option<usize>,
    port: Option<usize>,
    priority: Option<usize>,
    prio: Option<usize>,
}

/// A label that describes a series (one of [`METADATA_LABELS`], or with a prefix of
/// [`METADATA_PREFIXES`]).
fn is_metadata_label(name: &str) -> bool {
    METADATA_LABELS.contains(&name) || METADATA_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// `f` of a label value, still borrowed from the line when the value is.
fn map_cow<'a>(v: &Cow<'a, str>, f: impl Fn(&str) -> &str) -> Cow<'a, str> {
    match v {
        Cow::Borrowed(s) => Cow::Borrowed(f(s)),
        Cow::Owned(s) => Cow::Owned(f(s).to_owned()),
    }
}

impl LineReader for PrometheusReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        // A large chunk means a large input: room for a whole batch up front (bounded, whatever
        // batch size the caller asked for).
        let rows = ctx.options().batch_rows.min(MAX_RESERVED_ROWS);
        if chunk.len() >= LARGE_CHUNK_BYTES && ctx.samples.capacity() < rows {
            ctx.samples.reserve(rows.saturating_sub(ctx.samples.len()));
        }
        self.mark_uname_lines(chunk, start, ctx.options().limits.max_labels);
        if self.uname_marks.is_empty() {
            return feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx));
        }
        feed_lines(chunk, start, ctx, |line, pos, ctx| {
            self.follow_uname_lines(pos);
            self.line(line, pos, ctx)
        })
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if self.flavor == Flavor::OpenMetrics && self.open_exposition {
            ctx.warn("the OpenMetrics input does not end with `# EOF`: the last exposition may be truncated");
        }
        Ok(())
    }

    /// Keep the label-set caches for the next input (the same fabric's next scrape meets the
    /// same label sets): their host and device keys become the reader's own, and each becomes
    /// this input's again the first time the next input meets it. Everything else is the next
    /// input's own, as in a new reader: the series and metric names (a `# TYPE` line of the next
    /// input may change what a name means), shapes, directives, warnings, emitted attributes.
    fn carry_over(&mut self, ctx: &mut ReadContext<'_>) -> bool {
        if self.carried.hosts.len() + self.carried.devices.len() > MAX_CACHED_SERIES {
            self.carried = Carried::default();
            for sets in &mut self.label_sets {
                sets.clear();
            }
        }
        let mut host_keys = vec![-1; ctx.samples.hosts().len()];
        let mut device_keys = vec![-1; ctx.samples.devices().len()];
        let carried = &mut self.carried;
        for (sets, bound) in self.label_sets.iter_mut().zip(&mut self.input_bound) {
            if std::mem::take(bound) {
                sets.clear();
            }
            for set in sets.values_mut().filter(|s| s.keys != Keys::Carried) {
                let (hosts, devices) = (ctx.samples.hosts(), ctx.samples.devices());
                set.host = translate_key(&mut host_keys, hosts, set.host, |h| carried.hosts.intern(h));
                set.device = translate_key(&mut device_keys, devices, set.device, |d| carried.devices.intern(d));
                set.keys = Keys::Carried;
            }
        }
        carried.host_keys.clear();
        carried.device_keys.clear();
        let (flavor, label_sets, scratch_attrs, carried) = (
            self.flavor,
            std::mem::take(&mut self.label_sets),
            std::mem::take(&mut self.scratch_attrs),
            std::mem::take(&mut self.carried),
        );
        let strings = std::mem::take(&mut self.attrs.strings);
        *self = PrometheusReader { label_sets, scratch_attrs, carried, ..PrometheusReader::new(flavor) };
        self.attrs.strings = strings;
        true
    }
}

/// No slot.
const NO_SLOT: u32 = u32::MAX;

/// A cached value and where its text is in the cache's arena.
#[derive(Debug)]
struct Slot<T> {
    start: usize,
    /// Length of the text (a longer text is never found, so never reused).
    len: u32,
    /// The slot looked up after this one last time, or [`NO_SLOT`].
    next: u32,
    value: T,
}

/// Values resolved from texts (series texts, label sets, metric names), found by their text.
/// Exporters write the series of a scrape in the same order every time (and `/federate` sorts
/// them), so the entry after the previous lookup's is predicted from the last scrape and confirmed
/// with one comparison, without hashing the text. The texts live in one arena and the index holds
/// a slot number and 32 bits of the text's hash (a scrape of a large fabric has a few hundred
/// thousand label sets: the index stays small, and it grows without reading the slots), so a new
/// entry costs no allocation of its own, and a missed lookup hands its hash to the insert that
/// follows.
#[derive(Debug)]
struct TextCache<T> {
    /// (slot, upper half of the text's hash), placed by [`index_hash`] of that half.
    index: HashTable<(u32, u32)>,
    hasher: ahash::RandomState,
    text: Vec<u8>,
    slots: Vec<Slot<T>>,
    /// Slot of the previous lookup, or [`NO_SLOT`].
    last: u32,
}

impl<T> Default for TextCache<T> {
    fn default() -> Self {
        TextCache {
            index: HashTable::new(),
            hasher: ahash::RandomState::with_seeds(0x5eed, 0xfab, 0x7e1e, 0x3e7),
            text: Vec::new(),
            slots: Vec::new(),
            last: NO_SLOT,
        }
    }
}

/// Where the index places a text whose hash has `half` as its upper 32 bits: a function of the
/// entry alone, so that growing the index reads no slot.
fn index_hash(half: u32) -> u64 {
    u64::from(half).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The text of `slot` in `text`.
fn slot_text<'a, T>(text: &'a [u8], slot: &Slot<T>) -> &'a [u8] {
    text.get(slot.start..slot.start + slot.len as usize).unwrap_or_default()
}

impl<T> TextCache<T> {
    /// The slot holding `key` (remembered as the previous lookup's), or the hash of `key` for
    /// [`Self::insert`].
    fn find(&mut self, key: &[u8]) -> Result<u32, u64> {
        let predicted = self.slots.get(self.last as usize).map_or(NO_SLOT, |s| s.next);
        if let Some(s) = self.slots.get(predicted as usize)
            && slot_text(&self.text, s) == key
        {
            self.last = predicted;
            return Ok(predicted);
        }
        let hash = self.hash(key);
        let half = (hash >> 32) as u32;
        let (slots, text) = (&self.slots, &self.text);
        let found = self.index.find(index_hash(half), |&(at, h)| {
            h == half && slots.get(at as usize).is_some_and(|s| slot_text(text, s) == key)
        });
        let Some(&(at, _)) = found else { return Err(hash) };
        if let Some(prev) = self.slots.get_mut(self.last as usize) {
            prev.next = at;
        }
        self.last = at;
        Ok(at)
    }

    /// Keep `value` for `key` (whose hash [`Self::find`] gave) as the previous lookup's. The
    /// cache is bounded ([`MAX_CACHED_SERIES`] entries): a full one is emptied first.
    fn insert(&mut self, key: &[u8], hash: u64, value: T) -> u32 {
        if self.is_full() {
            self.clear();
        }
        let slot = self.slots.len() as u32;
        let start = self.text.len();
        self.text.extend_from_slice(key);
        let half = (hash >> 32) as u32;
        self.index.insert_unique(index_hash(half), (slot, half), |&(_, h)| index_hash(h));
        if let Some(prev) = self.slots.get_mut(self.last as usize) {
            prev.next = slot;
        }
        self.last = slot;
        let len = u32::try_from(key.len()).unwrap_or(u32::MAX);
        self.slots.push(Slot { start, len, next: NO_SLOT, value });
        slot
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    fn is_full(&self) -> bool {
        self.slots.len() >= MAX_CACHED_SERIES
    }

    fn get(&self, slot: u32) -> Option<&T> {
        self.slots.get(slot as usize).map(|s| &s.value)
    }

    fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        self.slots.get_mut(slot as usize).map(|s| &mut s.value)
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().map(|s| &mut s.value)
    }

    fn clear(&mut self) {
        self.index.clear();
        self.text.clear();
        self.slots.clear();
        self.last = NO_SLOT;
    }
}

/// Time of a sample: its own timestamp, else the last timestamp directive, else the input's
/// fallback (file name, argument, mtime), computed once.
fn sample_time(
    ts: Option<i64>,
    directive: Option<i64>,
    fallback: &mut Option<i64>,
    ctx: &mut ReadContext<'_>,
) -> Result<i64> {
    if let Some(t) = ts.or(directive) {
        return Ok(t);
    }
    if let Some(t) = *fallback {
        return Ok(t);
    }
    let t = ctx.fallback_time_ns()?;
    *fallback = Some(t);
    Ok(t)
}

/// Push one sample of a resolved series (and, the first time, its attributes).
fn emit(
    s: &mut Series,
    value: Value,
    float_syntax: bool,
    time_ns: i64,
    attrs: &mut AttrState,
    ctx: &mut ReadContext<'_>,
) -> Result<()> {
    let value = if (s.dcgm && is_dcgm_blank(value, float_syntax)) || (s.nonnegative && is_negative(value)) {
        Value::Null
    } else {
        value
    };
    if let Some(cold) = s.cold.as_deref_mut() {
        let is_one = value == Value::U64(1);
        if !cold.emitted && (!cold.info || is_one) {
            cold.emitted = true;
            for &(k, v) in &cold.attrs {
                if attrs.seen.insert((s.host, s.device, s.port, k, v))
                    && let (Some(key), Some(value)) = (attrs.strings.get(k), attrs.strings.get(v))
                {
                    let a = Attribute { time_ns, host: s.host, device: s.device, port: s.port, key, value };
                    ctx.push_attribute_keyed(&a)?;
                }
            }
        }
        if cold.info {
            if is_one {
                return Ok(());
            }
            if s.counter < 0 {
                s.counter = ctx.samples.counter(&cold.counter_name);
            }
        } else {
            s.cold = None;
        }
    }
    ctx.push(&Sample {
        time_ns,
        host: s.host,
        device: s.device,
        port: s.port,
        priority: s.priority,
        counter: s.counter,
        value: value.multiplied(s.multiply),
        scale: s.scale,
        is_counter: s.is_counter,
    })
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_blanks(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !is_blank(*b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_blank(*b)).map_or(start, |i| i + 1);
    s.get(start..end).unwrap_or_default()
}

fn skip_blanks(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(|b| is_blank(*b)) {
        i += 1;
    }
    i
}

fn find_blank(s: &[u8], i: usize) -> usize {
    s.get(i..).and_then(|r| memchr2(b' ', b'\t', r)).map_or(s.len(), |o| i + o)
}

/// Position of the `}` closing the label set opened at `open`, honouring quoted values.
fn find_close(line: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    loop {
        i += memchr2(b'"', b'}', line.get(i..)?)?;
        if line.get(i) == Some(&b'}') {
            return Some(i);
        }
        i += 1;
        loop {
            i += memchr2(b'"', b'\\', line.get(i..)?)?;
            if line.get(i) == Some(&b'\\') {
                i += 2;
            } else {
                i += 1;
                break;
            }
        }
    }
}

/// The text after the series when it does not start with a number: `ERROR - FAILED TO CONVERT TO
/// STRING` in `DCGM_FI_DEV_X{gpu="0"} ERROR - FAILED TO CONVERT TO STRING`. `None` when the value
/// token parses or the series itself is malformed.
fn non_numeric_value(line: &[u8]) -> Option<String> {
    let name_end = memchr3(b'{', b' ', b'\t', line)?;
    let mut i = name_end;
    if line.get(i) != Some(&b'{') {
        i = skip_blanks(line, i);
    }
    if line.get(i) == Some(&b'{') {
        i = find_close(line, i)? + 1;
    }
    let v_start = skip_blanks(line, i);
    let value = line.get(v_start..find_blank(line, v_start))?;
    if value.is_empty() || parse_value(value).is_some() {
        return None;
    }
    let text = String::from_utf8_lossy(line.get(v_start..)?);
    Some(text.chars().take(80).collect())
}

/// Split a sample line (leading blanks already trimmed) into series text, value and timestamp.
fn split_sample(line: &[u8]) -> Result<Parts<'_>, &'static str> {
    let name_end = memchr3(b'{', b' ', b'\t', line).ok_or("a metric name followed by a value")?;
    let mut key_end = name_end;
    let mut i = name_end;
    if line.get(i) != Some(&b'{') {
        i = skip_blanks(line, i);
    }
    if line.get(i) == Some(&b'{') {
        key_end = find_close(line, i).ok_or("a closing quote and `}` after the labels")? + 1;
        i = key_end;
    }
    let v_start = skip_blanks(line, i);
    if v_start == line.len() {
        return Err("a sample value after the series");
    }
    let v_end = find_blank(line, v_start);
    let value = line.get(v_start..v_end).unwrap_or_default();
    let t_start = skip_blanks(line, v_end);
    let timestamp = match line.get(t_start) {
        None | Some(b'#') => None,
        Some(_) => {
            let t_end = find_blank(line, t_start);
            let after = skip_blanks(line, t_end);
            if !matches!(line.get(after), None | Some(b'#')) {
                return Err("the end of the line (or an exemplar) after the timestamp");
            }
            Some(line.get(t_start..t_end).unwrap_or_default())
        }
    };
    Ok(Parts { key_end, value, timestamp })
}

/// Split a sample line (trimmed at both ends) from its end: `<key> <value>` or
/// `<key> <value> <timestamp>`, where a key is either `...}` or a name without blanks. Only a
/// candidate: callers must confirm the key (a cache hit) or fall back to [`split_sample`].
fn split_tail(line: &[u8]) -> Option<Parts<'_>> {
    // memrchr2 looks at the last 32 bytes at once: the timestamp and value are in them.
    let last_blank = memrchr2(b' ', b'\t', line)?;
    let last = line.get(last_blank + 1..)?;
    let rest_end = line.get(..last_blank)?.iter().rposition(|b| !is_blank(*b))? + 1;
    let rest = line.get(..rest_end)?;
    if rest.last() == Some(&b'}') {
        return Some(Parts { key_end: rest_end, value: last, timestamp: None });
    }
    let Some(blank) = memrchr2(b' ', b'\t', rest) else {
        return Some(Parts { key_end: rest_end, value: last, timestamp: None });
    };
    let value = rest.get(blank + 1..)?;
    let key_end = rest.get(..blank)?.iter().rposition(|b| !is_blank(*b))? + 1;
    Some(Parts { key_end, value, timestamp: Some(last) })
}

fn valid_metric_name(name: &[u8]) -> bool {
    match name.split_first() {
        Some((first, rest)) => {
            (first.is_ascii_alphabetic() || *first == b'_' || *first == b':')
                && rest.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b':')
        }
        None => false,
    }
}

/// Parse `{name="value", ...}` (possibly preceded by blanks), or nothing.
fn parse_labels(rest: &[u8], max_labels: usize) -> Result<Vec<Label<'_>>, Fail> {
    let mut out: Vec<Label<'_>> = Vec::new();
    // Checked once for the whole label set (names and values are then slices of it at ASCII
    // delimiters); an invalid one takes the check per label, which names the first bad part.
    let text = std::str::from_utf8(rest).ok();
    let mut i = skip_blanks(rest, 0);
    match rest.get(i) {
        None => return Ok(out),
        Some(b'{') => i += 1,
        Some(_) => return Err(Fail::Bad("`{` or a blank after the metric name")),
    }
    loop {
        i = skip_blanks(rest, i);
        match rest.get(i) {
            None => return Err(Fail::Bad("a closing `}` after the labels")),
            Some(b'}') => {
                i += 1;
                break;
            }
            Some(_) => {}
        }
        let start = i;
        while rest.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            i += 1;
        }
        let name_bytes = rest.get(start..i).unwrap_or_default();
        if name_bytes.first().is_none_or(u8::is_ascii_digit) {
            return Err(Fail::Bad("a label name ([a-zA-Z_][a-zA-Z0-9_]*)"));
        }
        let name = match text.and_then(|t| t.get(start..i)) {
            Some(name) => name,
            None => std::str::from_utf8(name_bytes).map_err(|_| Fail::Bad("an ASCII label name"))?,
        };
        i = skip_blanks(rest, i);
        if rest.get(i) != Some(&b'=') {
            return Err(Fail::Bad("`=` after a label name"));
        }
        i = skip_blanks(rest, i + 1);
        if rest.get(i) != Some(&b'"') {
            return Err(Fail::Bad("a double-quoted label value"));
        }
        i += 1;
        let tail = rest.get(i..).unwrap_or_default();
        let off = find_quote_or_backslash(tail).ok_or(Fail::Bad("a closing quote after a label value"))?;
        let at = i;
        let value = if tail.get(off) == Some(&b'"') {
            // No escapes (the usual case): the value is borrowed from the line.
            let value = match text.and_then(|t| t.get(i..i + off)) {
                Some(value) => value,
                None => std::str::from_utf8(tail.get(..off).unwrap_or_default())
                    .map_err(|_| Fail::Bad("a UTF-8 label value"))?,
            };
            i += off + 1;
            Cow::Borrowed(value)
        } else {
            Cow::Owned(unescape_value(rest, &mut i)?)
        };
        if out.len() >= max_labels {
            return Err(Fail::TooManyLabels);
        }
        if out.iter().any(|l| l.name == name) {
            return Err(Fail::Bad("distinct label names in one series"));
        }
        out.push(Label { name, value, at, role: Role::Extra });
        i = skip_blanks(rest, i);
        match rest.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                break;
            }
            _ => return Err(Fail::Bad("`,` or `}` after a label value")),
        }
    }
    if skip_blanks(rest, i) != rest.len() {
        return Err(Fail::Bad("a sample value after the labels"));
    }
    Ok(out)
}

/// The first `"` or `\\` of a label value: most values are a few bytes (a device, a port, a
/// host name), shorter than a vector search's set-up costs, so the first 32 bytes are read eight
/// at a time in a `u64` (a byte equal to the stop byte XORs to zero, and the lowest zero byte of
/// a word is found exactly by the borrow trick), the rest by a vector search.
fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let head = s.get(..32).unwrap_or(s);
    let mut words = head.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        let stops = zero_bytes(x ^ (ONES * u64::from(b'"'))) | zero_bytes(x ^ (ONES * u64::from(b'\\')));
        if stops != 0 {
            return Some(at + (stops.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    if let Some(i) = words.remainder().iter().position(|b| *b == b'"' || *b == b'\\') {
        return Some(at + i);
    }
    Some(32 + memchr2(b'"', b'\\', s.get(32..)?)?)
}

/// A label value with escapes, from `rest[*i..]` (just after its opening quote) to its closing
/// quote; `*i` is left after that quote.
fn unescape_value(rest: &[u8], i: &mut usize) -> Result<String, Fail> {
    let mut value = Vec::new();
    loop {
        let tail = rest.get(*i..).unwrap_or_default();
        let off = memchr2(b'"', b'\\', tail).ok_or(Fail::Bad("a closing quote after a label value"))?;
        value.extend_from_slice(tail.get(..off).unwrap_or_default());
        *i += off;
        if rest.get(*i) == Some(&b'"') {
            *i += 1;
            break;
        }
        match rest.get(*i + 1) {
            Some(b'\\') => value.push(b'\\'),
            Some(b'"') => value.push(b'"'),
            Some(b'n') => value.push(b'\n'),
            // Unknown escapes are kept as written (`C:\dir`).
            Some(&c) => value.extend_from_slice(&[b'\\', c]),
            None => return Err(Fail::Bad("a closing quote after a label value")),
        }
        *i += 2;
    }
    String::from_utf8(value).map_err(|_| Fail::Bad("a UTF-8 label value"))
}

/// `[::1]:9100` -> `::1`, `gpu017:9100` -> `gpu017`; a bare IPv6 address is left alone.
fn strip_port(s: &str) -> &str {
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split_once(']').map_or(s, |(addr, _)| addr);
    }
    // The first colon (a byte search: no `char` decoding of a host name).
    let split = s.bytes().position(|b| b == b':').and_then(|at| Some((s.get(..at)?, s.get(at + 1..)?)));
    match split {
        Some((host, port)) if !host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => s,
    }
}

/// Whether an `instance` (port stripped) names the machine `machine` calls itself: the same name
/// or a qualified form of it (`gpu017.cluster.local` for `gpu017`). A pod IP or a service name
/// (`nvidia-dcgm-exporter.gpu-operator`) names the exporter's pod, not the machine.
fn instance_names_host(instance: &str, machine: &str) -> bool {
    let (instance, machine) = (instance.to_ascii_lowercase(), machine.to_ascii_lowercase());
    instance == machine || instance.strip_prefix(&machine).is_some_and(|rest| rest.starts_with('.'))
}

fn parse_port(v: &str) -> Option<u16> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// Does the vocabulary map the metric `name` (directly, or a `node_ethtool_*` name through its
/// `ethtool -S` spelling)?
pub(crate) fn is_mapped_metric(name: &str) -> bool {
    map_counter(name).0.is_some()
}

/// The vocabulary mapping of a metric name, and the priority its name carries.
fn map_counter(name: &str) -> (Option<Mapping>, Option<u8>) {
    if let Some(m) = vocabulary::lookup(Namespace::Prometheus, name) {
        return (Some(m), None);
    }
    if let Some(rest) = name.strip_prefix("node_ethtool_") {
        let stripped = rest.strip_suffix("_total");
        for candidate in stripped.into_iter().chain([rest]) {
            let ethtool = unrename_ethtool(candidate);
            if let Some((template, p)) = vocabulary::split_priority(&ethtool)
                && let Some(m) = vocabulary::lookup(Namespace::Ethtool, &template)
            {
                return (Some(m), Some(p));
            }
            if let Some(m) = vocabulary::lookup(Namespace::Ethtool, &ethtool) {
                return (Some(m), None);
            }
        }
    }
    (None, None)
}

/// Undo node_exporter's `buildEthtoolFQName` renaming: `received` -> `rx`, `transmitted` -> `tx`
/// at `_` boundaries (`received_prio3_pause` -> `rx_prio3_pause`).
fn unrename_ethtool(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, word) in name.split('_').enumerate() {
        if i > 0 {
            out.push('_');
        }
        out.push_str(match word {
            "received" => "rx",
            "transmitted" => "tx",
            w => w,
        });
    }
    out
}

fn type_is_counter(name: &str, family: Option<MetricType>) -> bool {
    if name.ends_with("_created") {
        return false;
    }
    match family {
        Some(MetricType::Counter) => true,
        Some(MetricType::Histogram | MetricType::Summary) => {
            name.ends_with("_count") || name.ends_with("_sum") || name.ends_with("_bucket")
        }
        Some(MetricType::Gauge | MetricType::GaugeHistogram | MetricType::Info | MetricType::StateSet) => false,
        Some(MetricType::Untyped) | None => name.ends_with("_total"),
    }
}

pub(crate) fn push_escaped(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value, and whether it was written in float syntax. Inlined: returned through the
/// stack, the 24-byte result cost more than the parse (a store-forwarding stall per line).
#[allow(clippy::inline_always, reason = "measured: a call returning the result through the stack stalls every line")]
#[inline(always)]
fn parse_value(tok: &[u8]) -> Option<(Value, bool)> {
    if let Some(v) = number::parse_u64_digits(tok.strip_prefix(b"+").unwrap_or(tok)) {
        return Some((Value::U64(v), false));
    }
    // Rust also accepts `infinity`; Go (the exporters) writes `+Inf`, `-Inf`, `NaN`.
    Some((number::float_value(tok)?, true))
}

/// A negative value (only a float can be one).
fn is_negative(v: Value) -> bool {
    matches!(v, Value::F64(f) if f < 0.0)
}

fn is_dcgm_blank(v: Value, float_syntax: bool) -> bool {
    match v {
        Value::U64(x) => {
            x >= DCGM_INT64_BLANK || (float_syntax && (DCGM_FP64_BLANK..=DCGM_FP64_BLANK + 5).contains(&x))
        }
        Value::F64(f) => f >= DCGM_INT64_BLANK as f64,
        Value::Null => false,
    }
}

/// Seconds (`1764686822`, `1764686822.123456789`, `1.7646868e9`) to ns; decimal forms exactly.
fn parse_seconds(tok: &[u8]) -> Option<i64> {
    let (neg, body) = match tok.split_first() {
        Some((b'-', r)) => (true, r),
        Some((b'+', r)) => (false, r),
        _ => (false, tok),
    };
    let (int, frac) = match memchr::memchr(b'.', body) {
        Some(dot) => (body.get(..dot)?, body.get(dot + 1..)?),
        None => (body, &b""[..]),
    };
    let decimal = !(int.is_empty() && frac.is_empty())
        && int.iter().all(u8::is_ascii_digit)
        && frac.iter().all(u8::is_ascii_digit);
    if decimal {
        let mut secs: i64 = 0;
        for &d in int {
            secs = secs.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
        }
        let mut frac_ns: i64 = 0;
        for k in 0..9 {
            frac_ns = frac_ns * 10 + frac.get(k).map_or(0, |d| i64::from(d - b'0'));
        }
        let ns = secs.checked_mul(NS_PER_S)?.checked_add(frac_ns)?;
        return Some(if neg { -ns } else { ns });
    }
    let f: f64 = std::str::from_utf8(tok).ok()?.parse().ok()?;
    let ns = f * 1e9;
    (ns.is_finite() && ns.abs() < 9.2e18).then(|| ns.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_exact_integers_or_floats() {
        assert_eq!(parse_value(b"18446744073709551615"), Some((Value::U64(u64::MAX), false)));
        assert_eq!(parse_value(b"+7"), Some((Value::U64(7), false)));
        assert_eq!(parse_value(b"9007199254740993"), Some((Value::U64(9_007_199_254_740_993), false)));
        assert_eq!(parse_value(b"18446744073709551616"), Some((Value::F64(18_446_744_073_709_551_616.0), true)));
        assert_eq!(parse_value(b"1.493376e+07"), Some((Value::U64(14_933_760), true)));
        assert_eq!(parse_value(b"-3.5"), Some((Value::F64(-3.5), true)));
        assert_eq!(parse_value(b"+Inf"), Some((Value::F64(f64::INFINITY), true)));
        assert_eq!(parse_value(b"-Inf"), Some((Value::F64(f64::NEG_INFINITY), true)));
        assert_eq!(parse_value(b"Inf"), Some((Value::F64(f64::INFINITY), true)));
        assert!(matches!(parse_value(b"NaN"), Some((Value::F64(v), true)) if v.is_nan()));
        assert_eq!(parse_value(b""), None);
        assert_eq!(parse_value(b"+"), None);
        assert_eq!(parse_value(b"12abc"), None);
        assert_eq!(parse_value(b"\xff"), None);
    }

    #[test]
    fn port_attributes_are_new_once_past_a_full_host_list() {
        let mut e = Emitted::default();
        let many = LISTED_PER_HOST as i32 * 3;
        for round in [true, false] {
            for i in 0..many {
                assert_eq!(e.insert((5, i, Some(1), 0, 1)), round, "device {i}");
                assert_eq!(e.insert((0, i, None, 0, 1)), round, "device {i}");
            }
            assert_eq!(e.insert((-1, 0, None, 0, 1)), round);
        }
        assert!(e.insert((5, 0, Some(2), 0, 1)));
        assert!(e.insert((5, many, Some(1), 0, 1)));
        assert!(e.insert((5, 0, Some(1), 0, 2)));
        assert_eq!(e.by_host.get(5).map(Vec::len), Some(LISTED_PER_HOST));
    }

    #[test]
    fn series_end_honours_quotes_and_escapes() {
        let l = br#"m{a="}",b="x\"}y"} 1 2"#;
        let p = split_sample(l).expect("sample");
        assert_eq!(&l[..p.key_end], br#"m{a="}",b="x\"}y"}"#);
        assert_eq!((p.value, p.timestamp), (&b"1"[..], Some(&b"2"[..])));
        let p = split_sample(b"m\t\t 5 \t").expect("sample");
        assert_eq!((p.key_end, p.value, p.timestamp), (1, &b"5"[..], None));
        let p = split_sample(b"m {a=\"b\"} 5 # {trace_id=\"x\"} 1").expect("sample");
        assert_eq!((p.key_end, p.value, p.timestamp), (9, &b"5"[..], None));
        assert!(split_sample(b"m{a=\"b").is_err());
        assert!(split_sample(b"m{a=\"b\\").is_err());
        assert!(split_sample(b"m").is_err());
        assert!(split_sample(b"m 1 2 3").is_err());
        assert!(split_sample(b"m{a=\"b\"}").is_err());
    }

    #[test]
    fn tail_split_finds_key_value_and_timestamp() {
        let p = |l: &'static [u8]| split_tail(l).map(|p| (&l[..p.key_end], p.value, p.timestamp));
        assert_eq!(p(br#"m{a="x y"} 1"#), Some((&br#"m{a="x y"}"#[..], &b"1"[..], None)));
        assert_eq!(p(b"m{a=\"x\"} \t1 \t 2"), Some((&b"m{a=\"x\"}"[..], &b"1"[..], Some(&b"2"[..]))));
        assert_eq!(p(b"m 5"), Some((&b"m"[..], &b"5"[..], None)));
        assert_eq!(p(b"m 5 6"), Some((&b"m"[..], &b"5"[..], Some(&b"6"[..]))));
        // candidates a cache can never hold
        assert_eq!(p(b"m 1 2 3"), Some((&b"m 1"[..], &b"2"[..], Some(&b"3"[..]))));
        assert_eq!(p(b"m"), None);
        assert_eq!(p(b"m{a=\"b\"}5"), None);
    }

    #[test]
    fn labels_unescape_and_allow_blanks_and_a_trailing_comma() {
        let l = parse_labels(br#"{gpu="0", UUID="x" , p="a\\b\"c\nd",}"#, 128).expect("labels");
        let got: Vec<_> = l.iter().map(|l| (l.name, l.value.as_ref())).collect();
        assert_eq!(got, vec![("gpu", "0"), ("UUID", "x"), ("p", "a\\b\"c\nd")]);
        assert_eq!(parse_labels(b"{a=\"1\",b=\"2\"}", 1).err(), Some(Fail::TooManyLabels));
        assert!(parse_labels(b"{a=\"1\",a=\"2\"}", 9).is_err());
        assert!(parse_labels(b"{1a=\"1\"}", 9).is_err());
        assert!(parse_labels(b"{a=\"\xff\"}", 9).is_err());
        assert!(parse_labels(b"{a=1}", 9).is_err());
        assert!(parse_labels(b"", 9).is_ok_and(|l| l.is_empty()));
        assert!(parse_labels(b"{}", 9).is_ok_and(|l| l.is_empty()));
    }

    #[test]
    fn a_label_value_ends_at_its_first_quote_or_backslash() {
        let naive = |s: &[u8]| s.iter().position(|b| *b == b'"' || *b == b'\\');
        // Every length around the word and head boundaries, the stop at every place, and bytes
        // one off the stop bytes or with the high bit set (which a word trick could mistake).
        for len in 0..80 {
            for stop in [None, Some(b'"'), Some(b'\\')] {
                for at in 0..len.max(1) {
                    for fill in [b'a', b'!', b'#', b'[', b']', 0x80, 0xa2, 0xdc, 0xff, 0] {
                        let mut s = vec![fill; len];
                        if let (Some(b), Some(slot)) = (stop, s.get_mut(at)) {
                            *slot = b;
                        }
                        if let Some(last) = s.last_mut() {
                            *last = b'"';
                        }
                        assert_eq!(find_quote_or_backslash(&s), naive(&s), "{s:?}");
                    }
                }
            }
        }
        assert_eq!(find_quote_or_backslash(b"mlx5_0\",x"), Some(6));
        assert_eq!(find_quote_or_backslash(b"gpu00000.cluster.local:9100"), None);
    }

    #[test]
    fn a_text_value_is_named() {
        let line = br#"DCGM_FI_DEV_VGPU_INSTANCE_IDS{gpu="0"} ERROR - FAILED TO CONVERT TO STRING"#;
        assert_eq!(non_numeric_value(line).as_deref(), Some("ERROR - FAILED TO CONVERT TO STRING"));
        assert_eq!(non_numeric_value(b"up 1"), None);
        assert_eq!(non_numeric_value(b"up NaN 5 6"), None);
        assert_eq!(non_numeric_value(br#"up{a="}"#), None);
        assert_eq!(non_numeric_value(b"up"), None);
    }

    #[test]
    fn hosts_lose_their_port() {
        assert_eq!(strip_port("gpu017:9100"), "gpu017");
        assert_eq!(strip_port("10.0.0.5:9100"), "10.0.0.5");
        assert_eq!(strip_port("[::1]:9100"), "::1");
        assert_eq!(strip_port("[fd00::17]"), "fd00::17");
        assert_eq!(strip_port("fe80::1"), "fe80::1");
        assert_eq!(strip_port("gpu017"), "gpu017");
        assert_eq!(strip_port("gpu017:"), "gpu017:");
    }

    #[test]
    fn ethtool_names_map_back() {
        assert_eq!(unrename_ethtool("received_prio3_pause"), "rx_prio3_pause");
        assert_eq!(unrename_ethtool("port_received_dropped"), "port_rx_dropped");
        let (m, p) = map_counter("node_ethtool_received_prio3_pause");
        assert_eq!((m.map(|m| m.def.name), p), (Some("rx_pause_frames"), Some(3)));
        let (m, p) = map_counter("node_ethtool_received_packets_total");
        assert_eq!((m.map(|m| m.def.name), p), (Some("netdev_rx_packets"), None));
        let (m, p) = map_counter("node_ethtool_prio5_received_octets");
        assert_eq!((m.map(|m| m.def.name), p), (Some("prio_rx_bytes"), Some(5)));
        assert_eq!(map_counter("node_ethtool_received_broadcast").0, None);
    }

    #[test]
    fn timestamps_in_seconds_are_exact() {
        assert_eq!(parse_seconds(b"1764686822"), Some(1_764_686_822_000_000_000));
        assert_eq!(parse_seconds(b"1764686822.123456789"), Some(1_764_686_822_123_456_789));
        assert_eq!(parse_seconds(b"1764686822.5"), Some(1_764_686_822_500_000_000));
        assert_eq!(parse_seconds(b"-1.5"), Some(-1_500_000_000));
        assert_eq!(parse_seconds(b"1.7e9"), Some(1_700_000_000_000_000_000));
        assert_eq!(parse_seconds(b"1e30"), None);
        assert_eq!(parse_seconds(b"NaN"), None);
        assert_eq!(parse_seconds(b"."), None);
        assert_eq!(number::parse_i64_token(b"-1700000000000"), Some(-1_700_000_000_000));
        assert_eq!(number::parse_i64_token(b"99999999999999999999"), None);
    }

    #[test]
    fn negative_values() {
        assert!(is_negative(Value::F64(-125_000.0)));
        assert!(!is_negative(Value::F64(0.0)));
        assert!(!is_negative(Value::U64(1)));
    }

    #[test]
    fn dcgm_blanks() {
        assert!(is_dcgm_blank(Value::U64(9_223_372_036_854_775_794), false));
        assert!(!is_dcgm_blank(Value::U64(9_223_372_036_854_775_791), false));
        assert!(is_dcgm_blank(Value::U64(140_737_488_355_328), true));
        assert!(!is_dcgm_blank(Value::U64(140_737_488_355_328), false));
        assert!(is_dcgm_blank(Value::F64(9.3e18), true));
    }
}

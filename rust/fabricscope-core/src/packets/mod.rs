//! Packet captures (pcap, pcapng) of RoCEv2 / lossless-Ethernet fabrics.
//!
//! The reader streams a capture in bounded memory (the largest record plus per-flow and
//! per-interface state; never the whole file) and produces:
//! * the **`packet_events`** table ([`events_schema`]): one row per thing that matters: PFC XOFF /
//!   XON per priority, 802.3x PAUSE, CE-marked packets, CNPs, NAKs (sequence error, RNR, other),
//!   PSN gaps and retransmitted packets;
//! * **time-binned aggregates in the samples table**: cumulative counters (`capture_*`,
//!   `rx_pause_frames`) per interface and priority, one row per counter at the end of every bin
//!   that saw packets (plus a zero row at the start of the bin where a counter first moves), so
//!   rate-based detectors work on captures exactly as on device counters.
//!
//! Direction convention: a capture sees frames *at the capture point*; every frame is counted as
//! received there (`rx_pause_frames`), whatever direction it travelled on the link.
//!
//! Sequence analysis keys request streams by (source IP, destination IP, destination QP) and
//! compares PSNs with 24-bit serial arithmetic: a forward jump is a gap, a backward jump starts a
//! retransmission, and every packet whose PSN is below the highest PSN already reserved on the
//! flow is a retransmitted packet. An RDMA READ request reserves `ceil(len / PMTU)` PSNs; with the
//! PMTU unknown (no full first/middle packet seen yet) any landing inside the 256..4096-byte PMTU
//! range is accepted. READ responses, ACKs and CNPs travel in the reverse direction and are not
//! sequence-checked (their PSNs belong to the requester's space).

pub mod container;
pub mod decode;

use std::io::Read;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use ahash::AHashMap;
use arrow_array::builder::{
    StringBuilder, StringDictionaryBuilder, TimestampNanosecondBuilder, UInt8Builder, UInt16Builder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Position, Result};
use crate::formats::BinaryReader;
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use container::{Endian, Interface, MAX_RECORD, Stream};
use decode::{Frame, MacControl};

/// Name of the events side table.
pub const EVENTS_TABLE: &str = "packet_events";

/// Default link speed for converting PFC quanta to time (400 Gb/s).
pub const DEFAULT_LINK_SPEED_BPS: u64 = 400_000_000_000;

const EVENT_BATCH_ROWS: usize = 256 * 1024;
const PSN_MASK: u32 = 0x00FF_FFFF;
const PSN_HALF: u32 = 0x0080_0000;

/// Schema of the `packet_events` table (documented in `docs/schema.md`).
pub fn events_schema() -> SchemaRef {
    let dict = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("time", DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())), false),
        Field::new("host", dict(), false),
        Field::new("interface", dict(), false),
        Field::new("frame", DataType::UInt64, false),
        Field::new("kind", dict(), false),
        Field::new("src_ip", DataType::Utf8, true),
        Field::new("dst_ip", DataType::Utf8, true),
        Field::new("vlan", DataType::UInt16, true),
        Field::new("priority", DataType::UInt8, true),
        Field::new("opcode", DataType::UInt8, true),
        Field::new("dest_qp", DataType::UInt32, true),
        Field::new("psn", DataType::UInt32, true),
        Field::new("expected_psn", DataType::UInt32, true),
        Field::new("ecn", DataType::UInt8, true),
        Field::new("syndrome", DataType::UInt8, true),
        Field::new("quanta", DataType::UInt16, true),
        Field::new("pause_ns", DataType::UInt64, true),
        Field::new("length", DataType::UInt32, false),
    ]))
}

/// Exact totals of one capture (what the `.truth.json` files of the test captures list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packet records (EPB, SPB, PB, classic records).
    pub packets: u64,
    /// Sum of original (on-the-wire) lengths.
    pub bytes_on_wire: u64,
    /// RoCEv2 packets (UDP 4791 with a BTH).
    pub roce: u64,
    /// ... over IPv4.
    pub roce_ipv4: u64,
    /// ... over IPv6.
    pub roce_ipv6: u64,
    /// RoCEv2 packets with exactly one VLAN tag.
    pub vlan_tagged: u64,
    /// RoCEv2 packets with two or more VLAN tags.
    pub qinq: u64,
    /// IP packets with ECN = CE.
    pub ce: u64,
    /// IP packets with ECN = ECT(0).
    pub ect0: u64,
    /// CNPs (opcode 0x81 RoCEv2, 0x80 native IB).
    pub cnp: u64,
    /// Acknowledge packets (opcode 0x11): ACKs, NAKs and RNR NAKs.
    pub ack: u64,
    /// NAK sequence errors.
    pub nak_seq: u64,
    /// RNR NAKs.
    pub rnr_nak: u64,
    /// Other NAKs.
    pub nak_other: u64,
    /// Forward PSN jumps on request streams.
    pub psn_gap_events: u64,
    /// Backward PSN jumps (start of a retransmission).
    pub psn_backwards: u64,
    /// Request packets below the highest PSN already reserved on their flow.
    pub retransmitted_packets: u64,
    /// RDMA READ requests.
    pub read_requests: u64,
    /// RDMA READ responses.
    pub read_responses: u64,
    /// PFC frames.
    pub pfc: u64,
    /// PFC frames with at least one enabled priority pausing (quanta > 0).
    pub pfc_xoff: u64,
    /// PFC frames whose enabled priorities all resume (quanta 0).
    pub pfc_xon: u64,
    /// 802.3x PAUSE frames.
    pub pause: u64,
    /// PFC frames per enabled priority.
    pub pfc_prio_enable_counts: [u64; 8],
    /// Frames on interfaces with a link type we do not decode.
    pub undecoded: u64,
    /// Request streams tracked.
    pub flows: u64,
    /// Timestamp of the first packet that has one (ns).
    pub first_time_ns: Option<i64>,
    /// Timestamp of the last packet that has one (ns).
    pub last_time_ns: Option<i64>,
}

// Samples counters, in emission order. Index = column in the per-slot counter arrays.
const COUNTER_NAMES: [&str; 15] = [
    "capture_packets",
    "capture_bytes",
    "capture_roce_packets",
    "capture_roce_bytes",
    "capture_ce_marked_packets",
    "capture_cnp_packets",
    "capture_nak_seq_packets",
    "capture_rnr_nak_packets",
    "capture_psn_gap_events",
    "capture_retransmitted_packets",
    "capture_read_request_packets",
    "capture_pfc_xoff_frames",
    "capture_pfc_xon_frames",
    "rx_pause_frames",
    "capture_paused_time_us",
];
const NC: usize = COUNTER_NAMES.len();
const C_PACKETS: usize = 0;
const C_BYTES: usize = 1;
const C_ROCE_PACKETS: usize = 2;
const C_ROCE_BYTES: usize = 3;
const C_CE: usize = 4;
const C_CNP: usize = 5;
const C_NAK_SEQ: usize = 6;
const C_RNR: usize = 7;
const C_GAP: usize = 8;
const C_RETX: usize = 9;
const C_READ_REQ: usize = 10;
const C_XOFF: usize = 11;
const C_XON: usize = 12;
const C_PAUSE_FRAMES: usize = 13;
const C_PAUSED_US: usize = 14;

/// Priority slots per interface: 0-7, then 8 = no priority (untagged, 802.3x).
const SLOTS: usize = 9;

#[derive(Clone, Copy, Default)]
struct PauseState {
    since: Option<i64>,
    until: i64,
    acc_ns: u64,
}

#[derive(Clone, Copy)]
struct Flow {
    expected: u32,
    slack: u32,
    max_end: u32,
    /// Per-bin aggregates (reset when the bin is written to `packet_flows`).
    iface: u32,
    ip_version: u8,
    dirty: bool,
    packets: u64,
    bytes: u64,
    ce: u64,
    gaps: u64,
    retx: u64,
}

/// Builder of the `packet_flows` table: one row per request flow per bin with packets.
struct FlowRows {
    time: TimestampNanosecondBuilder,
    host: StringDictionaryBuilder<Int32Type>,
    iface: StringDictionaryBuilder<Int32Type>,
    src: StringBuilder,
    dst: StringBuilder,
    qp: UInt32Builder,
    packets: UInt64Builder,
    bytes: UInt64Builder,
    ce: UInt64Builder,
    gaps: UInt64Builder,
    retx: UInt64Builder,
    rows: usize,
}

/// Name of the per-flow aggregates side table.
pub const FLOWS_TABLE: &str = "packet_flows";

/// Schema of the `packet_flows` table (documented in `docs/schema.md`).
pub fn flows_schema() -> SchemaRef {
    let dict = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("time", DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())), false),
        Field::new("host", dict(), false),
        Field::new("interface", dict(), false),
        Field::new("src_ip", DataType::Utf8, false),
        Field::new("dst_ip", DataType::Utf8, false),
        Field::new("dest_qp", DataType::UInt32, false),
        Field::new("packets", DataType::UInt64, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("ce_marked_packets", DataType::UInt64, false),
        Field::new("psn_gap_events", DataType::UInt64, false),
        Field::new("retransmitted_packets", DataType::UInt64, false),
    ]))
}

impl FlowRows {
    fn new() -> Self {
        FlowRows {
            time: TimestampNanosecondBuilder::new().with_timezone("UTC"),
            host: StringDictionaryBuilder::new(),
            iface: StringDictionaryBuilder::new(),
            src: StringBuilder::new(),
            dst: StringBuilder::new(),
            qp: UInt32Builder::new(),
            packets: UInt64Builder::new(),
            bytes: UInt64Builder::new(),
            ce: UInt64Builder::new(),
            gaps: UInt64Builder::new(),
            retx: UInt64Builder::new(),
            rows: 0,
        }
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.time.finish()),
            Arc::new(self.host.finish()),
            Arc::new(self.iface.finish()),
            Arc::new(self.src.finish()),
            Arc::new(self.dst.finish()),
            Arc::new(self.qp.finish()),
            Arc::new(self.packets.finish()),
            Arc::new(self.bytes.finish()),
            Arc::new(self.ce.finish()),
            Arc::new(self.gaps.finish()),
            Arc::new(self.retx.finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(flows_schema(), cols).map_err(|e| Error::InvalidArgument(format!("arrow: {e}")))
    }
}

fn ip_string(version: u8, a: &[u8; 16]) -> String {
    if version == 4 {
        let [x0, x1, x2, x3, ..] = *a;
        Ipv4Addr::new(x0, x1, x2, x3).to_string()
    } else {
        Ipv6Addr::from(*a).to_string()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FlowKey {
    src: [u8; 16],
    dst: [u8; 16],
    qp: u32,
}

impl std::hash::Hash for FlowKey {
    /// Five integer writes instead of two length-prefixed byte slices: the flow table is looked
    /// up once per request packet. Every byte still goes into the (seeded) hash.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let word = |a: &[u8; 16], i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&a[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        h.write_u64(word(&self.src, 0));
        h.write_u64(word(&self.src, 8));
        h.write_u64(word(&self.dst, 0));
        h.write_u64(word(&self.dst, 8));
        h.write_u32(self.qp);
    }
}

/// Slots of the flow table's direct-mapped cache (a power of two).
const RECENT_FLOWS: usize = 1024;

/// Request flows: a hash map from key to index, the flows in creation order, and a small
/// direct-mapped cache in front of the map (slot from the QP and address words, no hashing of
/// the whole key), which a stream of packets over up to about a thousand active flows hits.
struct FlowTable {
    index: AHashMap<FlowKey, usize>,
    keys: Vec<FlowKey>,
    flows: Vec<Flow>,
    /// Flow index + 1 per slot (0 = empty).
    recent: Vec<u32>,
}

impl FlowTable {
    fn new() -> Self {
        FlowTable { index: AHashMap::new(), keys: Vec::new(), flows: Vec::new(), recent: vec![0; RECENT_FLOWS] }
    }

    #[inline]
    fn recent_slot(key: &FlowKey) -> usize {
        let w = |a: &[u8; 16], i: usize| u32::from_ne_bytes([a[i], a[i + 1], a[i + 2], a[i + 3]]);
        let h = key.qp
            ^ w(&key.src, 0)
            ^ w(&key.src, 12)
            ^ w(&key.dst, 0).rotate_left(16)
            ^ w(&key.dst, 12).rotate_left(16);
        (h.wrapping_mul(0x9E37_79B1) >> 22) as usize & (RECENT_FLOWS - 1)
    }

    /// Index of the flow of `key`, and whether it was created now (by `make`).
    #[inline]
    fn get_or_insert(&mut self, key: &FlowKey, make: impl FnOnce() -> Flow) -> (usize, bool) {
        let slot = Self::recent_slot(key);
        if let Some(&c) = self.recent.get(slot)
            && c != 0
            && self.keys.get(c as usize - 1) == Some(key)
        {
            return (c as usize - 1, false);
        }
        let (i, new) = match self.index.entry(*key) {
            std::collections::hash_map::Entry::Occupied(e) => (*e.get(), false),
            std::collections::hash_map::Entry::Vacant(v) => {
                let i = self.flows.len();
                v.insert(i);
                self.keys.push(*key);
                self.flows.push(make());
                (i, true)
            }
        };
        if let (Some(r), Ok(c)) = (self.recent.get_mut(slot), u32::try_from(i + 1)) {
            *r = c;
        }
        (i, new)
    }
}

/// An interface of the capture (global across pcapng sections).
struct Iface {
    name: String,
    linktype: u16,
    fcs_len: u8,
    speed_bps: u64,
    decodable: bool,
    /// Timestamp resolution and offset (pcapng); unused for classic pcap.
    clock: Interface,
}

#[derive(Clone, Copy)]
enum Kind {
    PfcXoff,
    PfcXon,
    Pause,
    Ce,
    Cnp,
    NakSeq,
    RnrNak,
    NakOther,
    PsnGap,
    Retransmitted,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::PfcXoff => "pfc_xoff",
            Kind::PfcXon => "pfc_xon",
            Kind::Pause => "pause",
            Kind::Ce => "ce",
            Kind::Cnp => "cnp",
            Kind::NakSeq => "nak_seq",
            Kind::RnrNak => "rnr_nak",
            Kind::NakOther => "nak_other",
            Kind::PsnGap => "psn_gap",
            Kind::Retransmitted => "retransmitted",
        }
    }
}

/// A dictionary column built from small integer codes (interface index, event kind): the key of
/// a code is looked up in a vector instead of hashing its string per row. Keys are assigned in
/// first-seen order and equal strings share a key, as `StringDictionaryBuilder` does, so the
/// arrays are the same; `finish` starts a fresh dictionary, as the builder's does.
#[derive(Default)]
struct CodedDictionary {
    keys: Vec<i32>,
    values: Vec<String>,
    /// Key of each code in the current batch (-1 = not seen yet).
    key_of: Vec<i32>,
}

impl CodedDictionary {
    #[inline]
    fn append(&mut self, code: usize, value: &str) {
        if let Some(&k) = self.key_of.get(code)
            && k >= 0
        {
            self.keys.push(k);
            return;
        }
        self.append_new(code, value);
    }

    #[cold]
    fn append_new(&mut self, code: usize, value: &str) {
        let k = self.values.iter().position(|v| v == value).unwrap_or_else(|| {
            self.values.push(value.to_owned());
            self.values.len() - 1
        }) as i32;
        if self.key_of.len() <= code {
            self.key_of.resize(code + 1, -1);
        }
        self.key_of[code] = k;
        self.keys.push(k);
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        let keys = Int32Array::from(std::mem::take(&mut self.keys));
        let values: ArrayRef = Arc::new(StringArray::from_iter_values(self.values.drain(..)));
        self.key_of.clear();
        let dict = DictionaryArray::<Int32Type>::try_new(keys, values)
            .map_err(|e| Error::InvalidArgument(format!("arrow: {e}")))?;
        Ok(Arc::new(dict))
    }
}

/// Append an IP address as text (IPv4 dotted quad, IPv6 RFC 5952) through a reused buffer.
fn append_ip(b: &mut StringBuilder, scratch: &mut String, version: u8, a: &[u8; 16]) {
    use std::fmt::Write as _;
    scratch.clear();
    let _ = if version == 4 {
        let [x0, x1, x2, x3, ..] = *a;
        write!(scratch, "{}", Ipv4Addr::new(x0, x1, x2, x3))
    } else {
        write!(scratch, "{}", Ipv6Addr::from(*a))
    };
    b.append_value(scratch.as_str());
}

struct Events {
    time: TimestampNanosecondBuilder,
    host: CodedDictionary,
    iface: CodedDictionary,
    frame: UInt64Builder,
    kind: CodedDictionary,
    src: StringBuilder,
    dst: StringBuilder,
    vlan: UInt16Builder,
    priority: UInt8Builder,
    opcode: UInt8Builder,
    qp: UInt32Builder,
    psn: UInt32Builder,
    expected: UInt32Builder,
    ecn: UInt8Builder,
    syndrome: UInt8Builder,
    quanta: UInt16Builder,
    pause_ns: UInt64Builder,
    length: UInt32Builder,
    rows: usize,
    scratch: String,
}

impl Events {
    fn new() -> Self {
        Events {
            time: TimestampNanosecondBuilder::new().with_timezone("UTC"),
            host: CodedDictionary::default(),
            iface: CodedDictionary::default(),
            frame: UInt64Builder::new(),
            kind: CodedDictionary::default(),
            src: StringBuilder::new(),
            dst: StringBuilder::new(),
            vlan: UInt16Builder::new(),
            priority: UInt8Builder::new(),
            opcode: UInt8Builder::new(),
            qp: UInt32Builder::new(),
            psn: UInt32Builder::new(),
            expected: UInt32Builder::new(),
            ecn: UInt8Builder::new(),
            syndrome: UInt8Builder::new(),
            quanta: UInt16Builder::new(),
            pause_ns: UInt64Builder::new(),
            length: UInt32Builder::new(),
            rows: 0,
            scratch: String::with_capacity(48),
        }
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.time.finish()),
            self.host.finish()?,
            self.iface.finish()?,
            Arc::new(self.frame.finish()),
            self.kind.finish()?,
            Arc::new(self.src.finish()),
            Arc::new(self.dst.finish()),
            Arc::new(self.vlan.finish()),
            Arc::new(self.priority.finish()),
            Arc::new(self.opcode.finish()),
            Arc::new(self.qp.finish()),
            Arc::new(self.psn.finish()),
            Arc::new(self.expected.finish()),
            Arc::new(self.ecn.finish()),
            Arc::new(self.syndrome.finish()),
            Arc::new(self.quanta.finish()),
            Arc::new(self.pause_ns.finish()),
            Arc::new(self.length.finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(events_schema(), cols).map_err(|e| Error::InvalidArgument(format!("arrow: {e}")))
    }
}

/// Per-packet context handed to the event writer.
struct Pkt<'a> {
    time: i64,
    iface: usize,
    frame: u64,
    f: &'a Frame,
    length: u32,
}

/// A row of the samples table waiting for the read context (strings are interned there).
struct PendingSample {
    time: i64,
    iface: usize,
    priority: Option<u8>,
    counter: usize,
    value: u64,
}

/// The analysis state of one capture: statistics, flows, bins, pending output.
pub struct Analyzer {
    /// Running totals.
    pub stats: Stats,
    host: String,
    ifaces: Vec<Iface>,
    link_speed_override: Option<u64>,
    bin_ns: i64,
    current_bin: Option<i64>,
    cum: Vec<[u64; NC]>,
    emitted: Vec<[bool; NC]>,
    seen: Vec<bool>,
    pause: Vec<PauseState>,
    flows: FlowTable,
    pmtu: u32,
    events: Events,
    pending: Vec<PendingSample>,
    /// Flows with packets in the current bin (indices into `flows`, in first-packet order).
    dirty: Vec<usize>,
    flow_rows: FlowRows,
    last_time: Option<i64>,
}

impl Analyzer {
    /// New analysis. `link_speed_bps` overrides per-interface speeds (pcapng `if_speed`).
    pub fn new(host: String, link_speed_bps: Option<u64>, bin_ns: i64) -> Self {
        Analyzer {
            stats: Stats::default(),
            host,
            ifaces: Vec::new(),
            link_speed_override: link_speed_bps.filter(|&s| s > 0),
            bin_ns: bin_ns.max(1),
            current_bin: None,
            cum: Vec::new(),
            emitted: Vec::new(),
            seen: Vec::new(),
            pause: Vec::new(),
            flows: FlowTable::new(),
            pmtu: 0,
            events: Events::new(),
            pending: Vec::new(),
            dirty: Vec::new(),
            flow_rows: FlowRows::new(),
            last_time: None,
        }
    }

    /// Register an interface; returns its global index.
    fn add_iface(&mut self, name: String, linktype: u16, fcs_len: u8, speed_bps: Option<u64>) -> usize {
        let speed = self.link_speed_override.or(speed_bps.filter(|&s| s > 0)).unwrap_or(DEFAULT_LINK_SPEED_BPS);
        let clock = Interface {
            linktype,
            snaplen: 0,
            name: None,
            units_per_sec: 1_000_000,
            ts_offset_s: 0,
            fcs_len,
            speed_bps,
        };
        self.ifaces.push(Iface {
            name,
            linktype,
            fcs_len,
            speed_bps: speed,
            decodable: decode::supported_linktype(linktype),
            clock,
        });
        self.cum.extend(std::iter::repeat_n([0u64; NC], SLOTS));
        self.emitted.extend(std::iter::repeat_n([false; NC], SLOTS));
        self.seen.extend(std::iter::repeat_n(false, SLOTS));
        self.pause.extend(std::iter::repeat_n(PauseState::default(), SLOTS));
        self.ifaces.len() - 1
    }

    fn bin_of(&self, t: i64) -> i64 {
        t.div_euclid(self.bin_ns) * self.bin_ns
    }

    /// Close the current bin: account paused time up to its end and queue the samples rows.
    fn flush_bin(&mut self) {
        let Some(start) = self.current_bin else { return };
        let end = start.saturating_add(self.bin_ns);
        for i in self.dirty.drain(..) {
            let (Some(key), Some(fl)) = (self.flows.keys.get(i), self.flows.flows.get_mut(i)) else { continue };
            let rows = &mut self.flow_rows;
            rows.time.append_value(start);
            rows.host.append_value(&self.host);
            rows.iface.append_value(self.ifaces.get(fl.iface as usize).map_or("", |i| i.name.as_str()));
            rows.src.append_value(ip_string(fl.ip_version, &key.src));
            rows.dst.append_value(ip_string(fl.ip_version, &key.dst));
            rows.qp.append_value(key.qp);
            rows.packets.append_value(fl.packets);
            rows.bytes.append_value(fl.bytes);
            rows.ce.append_value(fl.ce);
            rows.gaps.append_value(fl.gaps);
            rows.retx.append_value(fl.retx);
            rows.rows += 1;
            fl.dirty = false;
            (fl.packets, fl.bytes, fl.ce, fl.gaps, fl.retx) = (0, 0, 0, 0, 0);
        }
        for slot in 0..self.cum.len() {
            if !self.seen[slot] {
                continue;
            }
            let p = &mut self.pause[slot];
            if let Some(s) = p.since {
                let stop = p.until.min(end);
                p.acc_ns += stop.saturating_sub(s).max(0) as u64;
                p.since = if p.until <= end { None } else { Some(end) };
            }
            self.cum[slot][C_PAUSED_US] = p.acc_ns / 1000;
            let iface = slot / SLOTS;
            let prio = slot % SLOTS;
            let priority = (prio < 8).then_some(prio as u8);
            for c in 0..NC {
                let v = self.cum[slot][c];
                if v == 0 {
                    continue;
                }
                if !self.emitted[slot][c] {
                    self.emitted[slot][c] = true;
                    self.pending.push(PendingSample { time: start, iface, priority, counter: c, value: 0 });
                }
                self.pending.push(PendingSample { time: end, iface, priority, counter: c, value: v });
            }
        }
    }

    /// Advance the bin clock to `t`.
    #[inline]
    fn clock(&mut self, t: i64) {
        // Fast path: still inside the current bin (no division per packet).
        if let Some(cur) = self.current_bin
            && t >= cur
            && t - cur < self.bin_ns
        {
            return;
        }
        let b = self.bin_of(t);
        match self.current_bin {
            None => self.current_bin = Some(b),
            Some(cur) if b > cur => {
                self.flush_bin();
                self.current_bin = Some(b);
            }
            Some(_) => {}
        }
    }

    /// Finish: close the last bin.
    fn finish(&mut self) {
        self.flush_bin();
        self.current_bin = None;
        self.stats.flows = self.flows.flows.len() as u64;
    }

    fn event(&mut self, pkt: &Pkt<'_>, kind: Kind, fill: impl FnOnce(&mut Events)) {
        let ev = &mut self.events;
        ev.time.append_value(pkt.time);
        ev.host.append(0, &self.host);
        ev.iface.append(pkt.iface, &self.ifaces[pkt.iface].name);
        ev.frame.append_value(pkt.frame);
        ev.kind.append(kind as usize, kind.as_str());
        let frame = pkt.f;
        if let v @ (4 | 6) = frame.ip_version {
            append_ip(&mut ev.src, &mut ev.scratch, v, &frame.src);
            append_ip(&mut ev.dst, &mut ev.scratch, v, &frame.dst);
        } else {
            ev.src.append_null();
            ev.dst.append_null();
        }
        ev.vlan.append_option(frame.vlan);
        ev.length.append_value(pkt.length);
        fill(ev);
        ev.rows += 1;
    }

    /// Analyse one packet. `data` holds the captured bytes; `orig_len` the length on the wire.
    #[inline]
    fn packet(&mut self, iface: usize, time: Option<i64>, orig_len: u32, caplen: usize, data: &[u8], frame: u64) {
        if let Some(t) = time {
            self.stats.first_time_ns.get_or_insert(t);
            self.stats.last_time_ns = Some(t);
        }
        let time = time.or(self.last_time).unwrap_or(0);
        self.last_time = Some(time);
        self.clock(time);
        self.stats.packets += 1;
        self.stats.bytes_on_wire += u64::from(orig_len);
        let Some(info) = self.ifaces.get(iface) else { return };
        let base = iface * SLOTS;
        if !info.decodable {
            self.stats.undecoded += 1;
            self.seen[base + 8] = true;
            self.cum[base + 8][C_PACKETS] += 1;
            self.cum[base + 8][C_BYTES] += u64::from(orig_len);
            return;
        }
        // Strip the FCS only when the frame is complete (a snaplen cut already removed it).
        let fcs = usize::from(info.fcs_len);
        let data = if fcs > 0 && caplen as u64 == u64::from(orig_len) {
            data.get(..data.len().saturating_sub(fcs)).unwrap_or(data)
        } else {
            data
        };
        let mut f = Frame::default();
        if !decode::decode_into(info.linktype, data, &mut f) {
            return;
        }
        let slot = base + f.pcp.map_or(8, usize::from);
        self.seen[slot] = true;
        let cum = &mut self.cum[slot];
        cum[C_PACKETS] += 1;
        cum[C_BYTES] += u64::from(orig_len);
        let p = Pkt { time, iface, frame, f: &f, length: orig_len };
        if let Some(mc) = f.mac_control {
            self.mac_control(&p, mc);
            return;
        }
        if f.ip_version != 0 {
            match f.ecn {
                3 => {
                    self.stats.ce += 1;
                    self.cum[slot][C_CE] += 1;
                    self.event(&p, Kind::Ce, |e| {
                        e.ecn.append_value(3);
                        append_roce(e, f.roce.as_ref());
                        e.syndrome.append_option(f.roce.and_then(|r| r.syndrome));
                        e.priority.append_option(f.pcp);
                        e.expected.append_null();
                        e.quanta.append_null();
                        e.pause_ns.append_null();
                    });
                }
                2 => self.stats.ect0 += 1,
                _ => {}
            }
        }
        if let Some(r) = f.roce {
            self.roce(&p, slot, &r);
        }
    }

    fn mac_control(&mut self, p: &Pkt<'_>, mc: MacControl) {
        let speed = self.ifaces[p.iface].speed_bps;
        let base = p.iface * SLOTS;
        let quanta_ns = |q: u16| -> u64 { (u128::from(q) * 512 * 1_000_000_000 / u128::from(speed.max(1))) as u64 };
        match mc {
            MacControl::Pause(q) => {
                self.stats.pause += 1;
                let slot = base + 8;
                self.seen[slot] = true;
                self.cum[slot][C_PAUSE_FRAMES] += 1;
                let ns = quanta_ns(q);
                self.pause_frame(slot, p.time, ns);
                self.event(p, Kind::Pause, |e| {
                    e.priority.append_null();
                    e.quanta.append_value(q);
                    e.pause_ns.append_value(ns);
                    append_no_roce(e);
                });
            }
            MacControl::Pfc { enable, quanta } => {
                self.stats.pfc += 1;
                let mut any_xoff = false;
                for (n, &q) in quanta.iter().enumerate() {
                    if enable & (1 << n) == 0 {
                        continue;
                    }
                    self.stats.pfc_prio_enable_counts[n] += 1;
                    any_xoff |= q > 0;
                    let slot = base + n;
                    self.seen[slot] = true;
                    self.cum[slot][C_PAUSE_FRAMES] += 1;
                    self.cum[slot][if q > 0 { C_XOFF } else { C_XON }] += 1;
                    let ns = quanta_ns(q);
                    self.pause_frame(slot, p.time, ns);
                    let kind = if q > 0 { Kind::PfcXoff } else { Kind::PfcXon };
                    self.event(p, kind, |e| {
                        e.priority.append_value(n as u8);
                        e.quanta.append_value(q);
                        e.pause_ns.append_value(ns);
                        append_no_roce(e);
                    });
                }
                if any_xoff {
                    self.stats.pfc_xoff += 1;
                } else {
                    self.stats.pfc_xon += 1;
                }
            }
        }
    }

    /// Paused-time accounting: XOFF (ns > 0) pauses until t + ns (a refresh replaces the
    /// deadline), XON (0) resumes now.
    fn pause_frame(&mut self, slot: usize, t: i64, ns: u64) {
        let p = &mut self.pause[slot];
        if let Some(s) = p.since {
            let stop = p.until.min(t);
            if p.until <= t {
                p.acc_ns += stop.saturating_sub(s).max(0) as u64;
                p.since = None;
            }
        }
        if ns > 0 {
            if p.since.is_none() {
                p.since = Some(t);
            }
            p.until = t.saturating_add(ns as i64);
        } else if let Some(s) = p.since.take() {
            p.acc_ns += t.saturating_sub(s).max(0) as u64;
        }
    }

    #[inline]
    fn roce(&mut self, p: &Pkt<'_>, slot: usize, r: &decode::Roce) {
        let f = p.f;
        self.stats.roce += 1;
        match f.ip_version {
            4 => self.stats.roce_ipv4 += 1,
            _ => self.stats.roce_ipv6 += 1,
        }
        match f.tags {
            0 => {}
            1 => self.stats.vlan_tagged += 1,
            _ => self.stats.qinq += 1,
        }
        self.cum[slot][C_ROCE_PACKETS] += 1;
        self.cum[slot][C_ROCE_BYTES] += u64::from(p.length);
        let op = r.opcode;
        if op == 0x81 || op == 0x80 {
            self.stats.cnp += 1;
            self.cum[slot][C_CNP] += 1;
            self.roce_event(p, r, Kind::Cnp, None);
            return;
        }
        let transport = op >> 5;
        let low = op & 0x1F;
        if !matches!(transport, 0 | 1 | 5) {
            return; // UD, RD, vendor: no per-flow sequence to check
        }
        if low == 0x11 || low == 0x12 {
            if low == 0x11 {
                self.stats.ack += 1;
            }
            if let Some(s) = r.syndrome {
                match (s >> 5) & 3 {
                    0 => {}
                    1 => {
                        self.stats.rnr_nak += 1;
                        self.cum[slot][C_RNR] += 1;
                        self.roce_event(p, r, Kind::RnrNak, None);
                    }
                    3 if s.trailing_zeros() >= 5 => {
                        self.stats.nak_seq += 1;
                        self.cum[slot][C_NAK_SEQ] += 1;
                        self.roce_event(p, r, Kind::NakSeq, None);
                    }
                    _ => {
                        self.stats.nak_other += 1;
                        self.roce_event(p, r, Kind::NakOther, None);
                    }
                }
            }
            return;
        }
        if (0x0D..=0x10).contains(&low) {
            self.stats.read_responses += 1;
            if low == 0x0D || low == 0x0E {
                self.pmtu = self.pmtu.max(r.payload_len);
            }
            return;
        }
        // A request packet: sequence-check it.
        if matches!(low, 0x00 | 0x01 | 0x06 | 0x07) {
            self.pmtu = self.pmtu.max(r.payload_len);
        }
        let (n_min, n_max) = if low == 0x0C {
            self.stats.read_requests += 1;
            self.cum[slot][C_READ_REQ] += 1;
            let len = r.dma_len.unwrap_or(0);
            if self.pmtu >= 256 {
                let n = len.div_ceil(self.pmtu).max(1);
                (n, n)
            } else {
                (len.div_ceil(4096).max(1), len.div_ceil(256).max(1))
            }
        } else {
            (1, 1)
        };
        let key = FlowKey { src: f.src, dst: f.dst, qp: r.dest_qp };
        let psn = r.psn;
        let end = psn.wrapping_add(n_min) & PSN_MASK;
        let slack = n_max - n_min;
        let mut gap = None;
        let mut retx = false;
        let (index, created) = self.flows.get_or_insert(&key, || Flow {
            expected: end,
            slack,
            max_end: end,
            iface: p.iface as u32,
            ip_version: f.ip_version,
            dirty: false,
            packets: 0,
            bytes: 0,
            ce: 0,
            gaps: 0,
            retx: 0,
        });
        let Some(fl) = self.flows.flows.get_mut(index) else { return };
        if !created {
            let d = psn.wrapping_sub(fl.expected) & PSN_MASK;
            if d > fl.slack && d < PSN_HALF {
                gap = Some(fl.expected);
            }
            // Below the highest PSN already reserved: a retransmitted packet.
            retx = psn.wrapping_sub(fl.max_end) & PSN_MASK >= PSN_HALF;
            if d >= PSN_HALF {
                // Went back: the start of a retransmission (once per jump).
                self.stats.psn_backwards += 1;
            }
            fl.expected = end;
            fl.slack = slack;
            if end.wrapping_sub(fl.max_end) & PSN_MASK < PSN_HALF {
                fl.max_end = end;
            }
        }
        fl.packets += 1;
        fl.bytes += u64::from(p.length);
        fl.ce += u64::from(f.ecn == 3);
        fl.gaps += u64::from(gap.is_some());
        fl.retx += u64::from(retx);
        if !fl.dirty {
            fl.dirty = true;
            self.dirty.push(index);
        }
        if let Some(exp) = gap {
            self.stats.psn_gap_events += 1;
            self.cum[slot][C_GAP] += 1;
            self.roce_event(p, r, Kind::PsnGap, Some(exp));
        }
        if retx {
            self.stats.retransmitted_packets += 1;
            self.cum[slot][C_RETX] += 1;
            self.roce_event(p, r, Kind::Retransmitted, None);
        }
    }

    fn roce_event(&mut self, p: &Pkt<'_>, r: &decode::Roce, kind: Kind, expected: Option<u32>) {
        let f = p.f;
        self.event(p, kind, |e| {
            e.ecn.append_value(f.ecn);
            append_roce(e, Some(r));
            e.syndrome.append_option(r.syndrome);
            e.priority.append_option(f.pcp);
            e.expected.append_option(expected);
            e.quanta.append_null();
            e.pause_ns.append_null();
        });
    }
}

fn append_roce(e: &mut Events, r: Option<&decode::Roce>) {
    e.opcode.append_option(r.map(|r| r.opcode));
    e.qp.append_option(r.map(|r| r.dest_qp));
    e.psn.append_option(r.map(|r| r.psn));
}

fn append_no_roce(e: &mut Events) {
    e.opcode.append_null();
    e.qp.append_null();
    e.psn.append_null();
    e.expected.append_null();
    e.ecn.append_null();
    e.syndrome.append_null();
}

/// Where the reader's output goes: the driver's context, or a plain statistics run.
trait Out {
    fn bad(&mut self, offset: u64, expected: &str, found: &[u8]) -> Result<()>;
    fn warn(&mut self, msg: String);
    fn drain(&mut self, an: &mut Analyzer, force: bool) -> Result<()>;
    fn io(&self, e: std::io::Error) -> Error;
    fn cancelled(&self) -> bool;
    /// The capture clock's resolution (ns per timestamp unit) of an interface or file header.
    fn clock_resolution_ns(&mut self, ns: i64);
}

struct CtxOut<'c, 'a> {
    ctx: &'c mut ReadContext<'a>,
    host_key: i32,
    device_keys: Vec<i32>,
    counter_keys: [i32; NC],
}

impl Out for CtxOut<'_, '_> {
    fn bad(&mut self, offset: u64, expected: &str, found: &[u8]) -> Result<()> {
        let found = found.get(..found.len().min(16)).unwrap_or(found);
        self.ctx.bad_record(Position { line: None, byte_offset: offset }, expected, found)
    }

    fn warn(&mut self, msg: String) {
        self.ctx.warn(msg);
    }

    fn clock_resolution_ns(&mut self, ns: i64) {
        self.ctx.note_time_resolution_ns(ns);
    }

    fn drain(&mut self, an: &mut Analyzer, force: bool) -> Result<()> {
        if (force || an.events.rows >= EVENT_BATCH_ROWS) && an.events.rows > 0 {
            let batch = an.events.finish()?;
            self.ctx.emit_table(EVENTS_TABLE, batch);
        }
        if (force || an.flow_rows.rows >= EVENT_BATCH_ROWS) && an.flow_rows.rows > 0 {
            let batch = an.flow_rows.finish()?;
            self.ctx.emit_table(FLOWS_TABLE, batch);
        }
        if an.pending.is_empty() {
            return Ok(());
        }
        while self.device_keys.len() < an.ifaces.len() {
            let name = &an.ifaces[self.device_keys.len()].name;
            self.device_keys.push(self.ctx.samples.device(name));
        }
        for s in an.pending.drain(..) {
            let sample = Sample {
                time_ns: s.time,
                host: self.host_key,
                device: self.device_keys.get(s.iface).copied().unwrap_or(0),
                port: None,
                priority: s.priority,
                counter: self.counter_keys[s.counter],
                value: Value::U64(s.value),
                scale: 1,
                is_counter: true,
            };
            self.ctx.push(&sample)?;
        }
        Ok(())
    }

    fn io(&self, e: std::io::Error) -> Error {
        container::io_error(self.ctx.path, e)
    }

    fn cancelled(&self) -> bool {
        self.ctx.cancelled()
    }
}

struct StatsOut {
    strict: bool,
    bad: u64,
}

impl Out for StatsOut {
    fn bad(&mut self, offset: u64, expected: &str, found: &[u8]) -> Result<()> {
        if self.strict {
            return Err(container::format_error(std::path::Path::new("<capture>"), offset, expected, found));
        }
        self.bad += 1;
        Ok(())
    }
    fn warn(&mut self, _msg: String) {}
    fn drain(&mut self, an: &mut Analyzer, _force: bool) -> Result<()> {
        an.pending.clear();
        if an.events.rows >= EVENT_BATCH_ROWS {
            an.events.finish()?;
        }
        if an.flow_rows.rows >= EVENT_BATCH_ROWS {
            an.flow_rows.finish()?;
        }
        Ok(())
    }
    fn io(&self, e: std::io::Error) -> Error {
        container::io_error(std::path::Path::new("<capture>"), e)
    }
    fn cancelled(&self) -> bool {
        false
    }
    fn clock_resolution_ns(&mut self, _ns: i64) {}
}

/// Read a whole capture from bytes and return its totals (tests, benchmarks). `strict` as in
/// [`crate::ReadOptions::strict`]; lenient returns the number of skipped records too.
pub fn capture_stats(bytes: &[u8], strict: bool) -> Result<(Stats, u64)> {
    let mut empty: &[u8] = &[];
    let mut out = StatsOut { strict, bad: 0 };
    let mut an = Analyzer::new("capture".into(), None, 1_000_000_000);
    run(bytes, &mut empty, &mut an, &mut out)?;
    Ok((an.stats, out.bad))
}

/// The [`BinaryReader`] for pcap and pcapng.
#[derive(Debug, Default)]
pub struct CaptureReader;

impl BinaryReader for CaptureReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let host = ctx.fallback_host();
        let opts = ctx.options();
        let mut an = Analyzer::new(host.clone(), opts.link_speed_bps, opts.bin_ns);
        let host_key = ctx.samples.host(&host);
        let mut counter_keys = [0i32; NC];
        for (k, name) in counter_keys.iter_mut().zip(COUNTER_NAMES) {
            *k = ctx.samples.counter(name);
        }
        let mut out = CtxOut { ctx, host_key, device_keys: Vec::new(), counter_keys };
        let consumed = run(head, rest, &mut an, &mut out)?;
        if an.stats.undecoded > 0 {
            out.warn(format!(
                "{} frames on interfaces with a link type other than Ethernet / Linux cooked were counted, not decoded",
                an.stats.undecoded
            ));
        }
        Ok(consumed)
    }
}

fn run(head: &[u8], rest: &mut dyn Read, an: &mut Analyzer, out: &mut dyn Out) -> Result<u64> {
    let mut s = Stream::new(head, rest);
    s.ensure(12).map_err(|e| out.io(e))?;
    let res = if container::is_pcapng(s.window()) { read_pcapng(&mut s, an, out) } else { read_pcap(&mut s, an, out) };
    res?;
    an.finish();
    out.drain(an, true)?;
    Ok(s.offset())
}

fn read_pcap(s: &mut Stream<'_>, an: &mut Analyzer, out: &mut dyn Out) -> Result<()> {
    if !s.ensure(24).map_err(|e| out.io(e))? {
        let w = s.window().to_vec();
        return Err(format_err(out, 0, "a complete 24-byte pcap file header", &w));
    }
    let hdr = match container::parse_pcap_header(s.window()) {
        Ok(h) => h,
        Err(expected) => {
            let w = s.window().get(..24).unwrap_or(&[]).to_vec();
            return Err(format_err(out, 0, expected, &w));
        }
    };
    let iface = an.add_iface("capture0".into(), hdr.linktype, hdr.fcs_len, None);
    out.clock_resolution_ns(if hdr.nanos { 1 } else { 1_000 });
    if !decode::supported_linktype(hdr.linktype) {
        out.bad(
            20,
            "link type Ethernet (1), Linux cooked (113) or Linux cooked v2 (276)",
            &hdr.linktype.to_be_bytes(),
        )?;
    }
    s.consume(24);
    let rec_hdr = if hdr.modified { 24 } else { 16 };
    let e = hdr.endian;
    let limit = if hdr.snaplen == 0 { MAX_RECORD } else { (hdr.snaplen as usize).min(MAX_RECORD) };
    let mut frame = 0u64;
    loop {
        if frame.trailing_zeros() >= 16 {
            if out.cancelled() {
                break;
            }
            out.drain(an, false)?;
        }
        // Fast path: every complete, well-formed record already in the window, up to the next
        // cancellation check. Anything else (a record cut by the window edge, an oversized
        // length, the end of the input) goes through the checked path below, one record.
        let next_check = (frame | 0xFFFF) + 1;
        let window = s.window();
        let mut used = 0usize;
        while frame < next_check {
            let Some(rec) = window.get(used..used + rec_hdr) else { break };
            let (Some(sec), Some(frac), Some(incl), Some(orig)) =
                (e.u32(rec, 0), e.u32(rec, 4), e.u32(rec, 8), e.u32(rec, 12))
            else {
                break;
            };
            let incl = incl as usize;
            if incl > limit {
                break;
            }
            let Some(data) = window.get(used + rec_hdr..used + rec_hdr + incl) else { break };
            let ns = if hdr.nanos { u64::from(frac) } else { u64::from(frac) * 1000 };
            let t = i64::from(sec) * 1_000_000_000 + ns as i64;
            an.packet(iface, Some(t), orig, incl, data, frame);
            used += rec_hdr + incl;
            frame += 1;
        }
        s.consume(used);
        if frame == next_check {
            continue;
        }
        let off = s.offset();
        if !s.ensure(rec_hdr).map_err(|er| out.io(er))? {
            let w = s.window().to_vec();
            if !w.is_empty() {
                out.bad(off, "a complete pcap record header (file truncated)", &w)?;
            }
            break;
        }
        let w = s.window();
        let (Some(sec), Some(frac), Some(incl), Some(orig)) = (e.u32(w, 0), e.u32(w, 4), e.u32(w, 8), e.u32(w, 12))
        else {
            break;
        };
        let incl = incl as usize;
        if incl > limit {
            let found = w.get(..rec_hdr).unwrap_or(&[]).to_vec();
            let what = if incl > MAX_RECORD {
                format!("a captured length of at most {MAX_RECORD} bytes (got {incl})")
            } else {
                format!("a captured length of at most the snap length {} (got {incl})", hdr.snaplen)
            };
            out.bad(off, &what, &found)?;
            break; // no way to find the next record
        }
        if !s.ensure(rec_hdr + incl).map_err(|er| out.io(er))? {
            let found = s.window().get(..rec_hdr).unwrap_or(&[]).to_vec();
            out.bad(off, &format!("{incl} bytes of packet data (file truncated)"), &found)?;
            break;
        }
        let ns = if hdr.nanos { u64::from(frac) } else { u64::from(frac) * 1000 };
        let t = i64::from(sec) * 1_000_000_000 + ns as i64;
        let data = s.window().get(rec_hdr..rec_hdr + incl).unwrap_or(&[]);
        an.packet(iface, Some(t), orig, incl, data, frame);
        s.consume(rec_hdr + incl);
        frame += 1;
    }
    Ok(())
}

fn format_err(out: &mut dyn Out, offset: u64, expected: &str, found: &[u8]) -> Error {
    // Header errors are fatal in both modes: report through `bad` (which errors in strict mode),
    // else build the error ourselves.
    match out.bad(offset, expected, found) {
        Err(e) => e,
        Ok(()) => container::format_error(std::path::Path::new("<capture>"), offset, expected, found),
    }
}

const SHB: u32 = 0x0A0D_0D0A;

fn read_pcapng(s: &mut Stream<'_>, an: &mut Analyzer, out: &mut dyn Out) -> Result<()> {
    let mut endian = Endian::Little;
    let mut section: Vec<(usize, u32)> = Vec::new(); // (global iface, snaplen)
    let mut section_no = 0usize;
    let mut frame = 0u64;
    let mut blocks = 0u64;
    loop {
        if blocks.trailing_zeros() >= 16 {
            if out.cancelled() {
                break;
            }
            out.drain(an, false)?;
        }
        // Fast path: complete, consistent enhanced packet blocks on described interfaces that
        // are already in the window, up to the next cancellation check. Every other block (and
        // every inconsistency, to be reported) goes through the checked path below.
        let next_check = (blocks | 0xFFFF) + 1;
        let window = s.window();
        let mut used = 0usize;
        while blocks < next_check {
            if endian.u32(window, used) != Some(6) {
                break;
            }
            let Some(blen) = endian.u32(window, used + 4) else { break };
            let blen = blen as usize;
            if blen < 32 || !blen.is_multiple_of(4) || blen > MAX_RECORD {
                break;
            }
            let Some(block) = window.get(used..used + blen) else { break };
            if endian.u32(block, blen - 4) != Some(blen as u32) {
                break;
            }
            let body = block.get(8..blen - 4).unwrap_or(&[]);
            let (Some(id), Some(hi), Some(lo), Some(cap), Some(orig)) = (
                endian.u32(body, 0),
                endian.u32(body, 4),
                endian.u32(body, 8),
                endian.u32(body, 12),
                endian.u32(body, 16),
            ) else {
                break;
            };
            let Some(&(g, _snap)) = section.get(id as usize) else { break };
            let Some(data) = body.get(20..20 + cap as usize) else { break };
            let t = an.ifaces[g].clock.ts_ns((u64::from(hi) << 32) | u64::from(lo));
            an.packet(g, Some(t), orig, cap as usize, data, frame);
            frame += 1;
            blocks += 1;
            used += blen;
        }
        s.consume(used);
        if blocks == next_check {
            continue;
        }
        blocks += 1;
        let off = s.offset();
        if !s.ensure(12).map_err(|e| out.io(e))? {
            let w = s.window().to_vec();
            if !w.is_empty() {
                out.bad(off, "a complete pcapng block header (file truncated)", &w)?;
            }
            break;
        }
        let w = s.window();
        let raw_type = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        if raw_type == SHB {
            endian = match w.get(8..12) {
                Some([0x4D, 0x3C, 0x2B, 0x1A]) => Endian::Little,
                Some([0x1A, 0x2B, 0x3C, 0x4D]) => Endian::Big,
                _ => {
                    let found = w.get(..12).unwrap_or(&[]).to_vec();
                    out.bad(off, "a section header byte-order magic 1a2b3c4d", &found)?;
                    break;
                }
            };
        }
        let btype = endian.u32(w, 0).unwrap_or(0);
        let blen = endian.u32(w, 4).unwrap_or(0) as usize;
        if blen < 12 || !blen.is_multiple_of(4) || blen > MAX_RECORD {
            let found = w.get(..8).unwrap_or(&[]).to_vec();
            let expected = if blen > MAX_RECORD {
                format!("a block length of at most {MAX_RECORD} bytes (got {blen})")
            } else {
                format!("a block length that is a multiple of 4 and at least 12 (got {blen})")
            };
            out.bad(off, &expected, &found)?;
            break; // cannot find the next block
        }
        if !s.ensure(blen).map_err(|e| out.io(e))? {
            let found = s.window().get(..8).unwrap_or(&[]).to_vec();
            out.bad(off, &format!("a block of {blen} bytes (file truncated)"), &found)?;
            break;
        }
        let block = s.window().get(..blen).unwrap_or(&[]);
        let trailer = endian.u32(block, blen - 4).unwrap_or(0) as usize;
        if trailer != blen {
            let found = block.get(blen - 4..).unwrap_or(&[]).to_vec();
            out.bad(off, &format!("a trailing block length equal to the leading one ({blen})"), &found)?;
            // Lenient: trust the leading length and go on.
        }
        let body = block.get(8..blen - 4).unwrap_or(&[]);
        match btype {
            SHB => {
                section.clear();
                section_no += 1;
                let major = endian.u16(body, 4).unwrap_or(0);
                if major != 1 {
                    let found = body.get(..8).unwrap_or(&[]).to_vec();
                    out.bad(off, "pcapng major version 1", &found)?;
                }
            }
            1 => match container::parse_idb(endian, body) {
                Ok(idb) => {
                    let Interface { linktype, snaplen, name, fcs_len, speed_bps, units_per_sec, ts_offset_s } = idb;
                    let local = section.len();
                    let name = name.filter(|n| !n.is_empty()).unwrap_or_else(|| {
                        if section_no > 1 {
                            format!("capture{}.{local}", section_no - 1)
                        } else {
                            format!("capture{local}")
                        }
                    });
                    let g = an.add_iface(name, linktype, fcs_len, speed_bps);
                    // if_tsresol: units per second (10^-n or 2^-n s); a unit finer than 1 ns is 1.
                    out.clock_resolution_ns((1e9 / units_per_sec.max(1) as f64).round().max(1.0) as i64);
                    an.ifaces[g].clock =
                        Interface { linktype, snaplen, name: None, units_per_sec, ts_offset_s, fcs_len, speed_bps };
                    section.push((g, snaplen));
                }
                Err(expected) => {
                    let found = body.get(..8).unwrap_or(&[]).to_vec();
                    out.bad(off, expected, &found)?;
                }
            },
            6 | 2 => {
                // EPB: iface u32; PB: iface u16 + drops u16. Then ts_high, ts_low, caplen, len.
                let id = if btype == 6 {
                    endian.u32(body, 0).map(|v| v as usize)
                } else {
                    endian.u16(body, 0).map(usize::from)
                };
                let (Some(id), Some(hi), Some(lo), Some(cap), Some(orig)) =
                    (id, endian.u32(body, 4), endian.u32(body, 8), endian.u32(body, 12), endian.u32(body, 16))
                else {
                    let found = body.get(..20).unwrap_or(body).to_vec();
                    out.bad(off, "a packet block body of at least 20 bytes", &found)?;
                    s.consume(blen);
                    continue;
                };
                let cap = cap as usize;
                let Some(&(g, _snap)) = section.get(id) else {
                    out.bad(off, &format!("a packet on a described interface (interface {id} has no IDB)"), &[])?;
                    s.consume(blen);
                    continue;
                };
                let Some(data) = body.get(20..20 + cap) else {
                    let found = body.get(12..16).unwrap_or(&[]).to_vec();
                    out.bad(off, &format!("a captured length within the block (got {cap})"), &found)?;
                    s.consume(blen);
                    continue;
                };
                let t = an.ifaces[g].clock.ts_ns((u64::from(hi) << 32) | u64::from(lo));
                an.packet(g, Some(t), orig, cap, data, frame);
                frame += 1;
            }
            3 => {
                let Some(&(g, snap)) = section.first() else {
                    out.bad(off, "a simple packet block after an interface description", &[])?;
                    s.consume(blen);
                    continue;
                };
                let orig = endian.u32(body, 0).unwrap_or(0);
                let avail = body.len().saturating_sub(4);
                let mut cap = (orig as usize).min(avail);
                if snap > 0 {
                    cap = cap.min(snap as usize);
                }
                let data = body.get(4..4 + cap).unwrap_or(&[]);
                an.packet(g, None, orig, cap, data, frame);
                frame += 1;
            }
            _ => {} // NRB, ISB, DSB, custom and unknown blocks
        }
        s.consume(blen);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_emitted_counter_is_in_the_vocabulary() {
        for name in COUNTER_NAMES {
            assert!(crate::vocabulary::counter(name).is_some(), "{name}");
        }
    }

    #[test]
    fn flow_table_finds_every_flow_past_cache_collisions() {
        // Far more flows than cache slots, several per destination QP, visited interleaved:
        // every lookup returns the index the flow got when it was created.
        let key = |n: u32| {
            let mut src = [0u8; 16];
            src[..4].copy_from_slice(&(0x0A00_0000 + n / 7).to_be_bytes());
            FlowKey { src, dst: [9; 16], qp: n % 7 }
        };
        let blank = || Flow {
            expected: 0,
            slack: 0,
            max_end: 0,
            iface: 0,
            ip_version: 4,
            dirty: false,
            packets: 0,
            bytes: 0,
            ce: 0,
            gaps: 0,
            retx: 0,
        };
        let mut t = FlowTable::new();
        for n in 0..5000 {
            assert_eq!(t.get_or_insert(&key(n), blank), (n as usize, true));
        }
        for round in 0..3 {
            for n in (0..5000).rev().step_by(round + 1) {
                assert_eq!(t.get_or_insert(&key(n), blank), (n as usize, false));
            }
        }
        assert_eq!(t.flows.len(), 5000);
    }

    #[test]
    fn tsresol_and_timestamps() {
        assert_eq!(container::tsresol_units(6), Some(1_000_000));
        assert_eq!(container::tsresol_units(9), Some(1_000_000_000));
        assert_eq!(container::tsresol_units(0x8A), Some(1024));
        assert_eq!(container::tsresol_units(20), None);
        let i = Interface {
            linktype: 1,
            snaplen: 0,
            name: None,
            units_per_sec: 1024,
            ts_offset_s: 10,
            fcs_len: 0,
            speed_bps: None,
        };
        assert_eq!(i.ts_ns(1024 * 5 + 512), 15_500_000_000);
        // The microsecond and nanosecond shortcuts give what the general formula gives.
        let us = Interface { units_per_sec: 1_000_000, ts_offset_s: 0, ..i.clone() };
        assert_eq!(us.ts_ns(1_700_000_000_123_456), 1_700_000_000_123_456_000);
        let ns = Interface { units_per_sec: 1_000_000_000, ts_offset_s: -2, ..i.clone() };
        assert_eq!(ns.ts_ns(1_700_000_000_123_456_789), 1_699_999_998_123_456_789);
    }
}

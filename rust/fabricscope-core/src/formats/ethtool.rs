//! `ethtool -S <iface>` output: one snapshot or many appended to one log
//! (`while :; do date +%s; ethtool -S eth2; sleep 10; done >> eth2.log`).
//!
//! ```text
//! # ethtool -S eth0
//! NIC statistics:
//!      rx_packets: 1260062
//!      port.rx_dropped: 12028
//! ```
//!
//! Each stat line is split on its *last* `": "` and the name trimmed: names contain spaces, dots,
//! brackets and, in one mlx5 kernel, a trailing blank (`tx_pause_storm_warning_events `).
//! Per-priority names (`rx_prio3_pause`, the old `prio3_rx_pause`) map to one canonical counter
//! with the priority in its own column; unknown names are kept as they are.
//!
//! Per-queue and per-ring lines are indexed, not named: bnxt_en/bnx2x `[3]: rx_discards`, qede
//! `3: rcv_pkts`, `3_1: xmit_pkts` (queue 3, traffic class 1) and `3 [XDP]: xmit_pkts`, ice
//! `rx_queue_3_bytes`, i40e `tx-3.packets` (`tx-3.tx_packets` in later kernels), ionic `tx_3_pkts`
//! and `rxq_3_cq_compl_count` become the driver's stat name
//! (`rx_discards`, `rx_bytes`, `tx_pkts`, ...) on the sub-device `<if>/queue3` (`<if>/queue3/tc1`,
//! `<if>/queue3/xdp`), the way switch fans are `<switch>/fan<n>`. They keep the driver's name:
//! a queue's `rx_bytes` is not the netdev total.

use std::path::Path;

use ahash::AHashMap;

use crate::error::{Position, Result};
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use crate::vocabulary::{self, Kind, Namespace};

/// How a stat name maps to a row, resolved once per distinct name: logs repeat the same few
/// hundred names in every snapshot.
#[derive(Debug, Clone, Copy)]
struct Resolved {
    counter: i32,
    priority: Option<u8>,
    multiply: u32,
    scale: u32,
    is_counter: bool,
    /// The queue or ring a per-queue stat belongs to.
    queue: Option<QueueId>,
}

/// Which queue a per-queue stat line names: index, qede's traffic class, qede's XDP queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct QueueId {
    index: u32,
    tc: Option<u32>,
    xdp: bool,
}

impl QueueId {
    fn plain(index: u32) -> QueueId {
        QueueId { index, tc: None, xdp: false }
    }

    fn device(self, parent: &str) -> String {
        let tc = self.tc.map(|tc| format!("/tc{tc}")).unwrap_or_default();
        let xdp = if self.xdp { "/xdp" } else { "" };
        format!("{parent}/queue{}{tc}{xdp}", self.index)
    }
}

/// Time, host and device of the snapshot being read, as interned keys.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    time_ns: i64,
    host: i32,
    device: i32,
}

/// Streaming reader for `ethtool -S` snapshots.
#[derive(Default)]
pub struct EthtoolReader {
    /// Time and host from timestamp and `# host: NAME` lines.
    directives: DirectiveState,
    /// Last command echo naming the interface (`# ethtool -S eth0`).
    device: Option<String>,
    /// Device derived from the input's path, computed on first use.
    path_device: Option<String>,
    snapshot: Option<Snapshot>,
    names: AHashMap<Box<str>, Resolved>,
    /// Name of the snapshot's device, the parent of its queues.
    current_device: String,
    /// Interned sub-device keys of queues, by (parent device key, queue).
    queue_devices: AHashMap<(i32, QueueId), i32>,
}

impl EthtoolReader {
    /// A reader for one input.
    pub fn new() -> Self {
        EthtoolReader::default()
    }

    fn start_snapshot(&mut self, ctx: &mut ReadContext<'_>) -> Result<Snapshot> {
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let device = if let Some(d) = &self.device {
            d.clone()
        } else {
            if self.path_device.is_none() {
                let derived = device_from_path(ctx.path);
                if derived.is_none() {
                    ctx.warn(
                        "no interface in the input (`# ethtool -S <if>`) or its file name: rows use device \"unknown\"",
                    );
                }
                self.path_device = Some(derived.unwrap_or_else(|| "unknown".to_owned()));
            }
            self.path_device.clone().unwrap_or_default()
        };
        let snap = Snapshot { time_ns, host: ctx.samples.host(&host), device: ctx.samples.device(&device) };
        self.snapshot = Some(snap);
        self.current_device = device;
        Ok(snap)
    }

    fn resolve(&mut self, name: &str, ctx: &mut ReadContext<'_>) -> Resolved {
        if let Some(r) = self.names.get(name) {
            return *r;
        }
        let r = resolve_name(name, ctx);
        self.names.insert(name.into(), r);
        r
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        if trimmed == "NIC statistics:" {
            self.start_snapshot(ctx)?;
            return Ok(());
        }
        // Stat lines are indented; a directive never is. Trying the stat first for indented lines
        // keeps a counter called `host` or `time` a counter.
        let indented = line.starts_with([' ', '\t']);
        if !indented {
            if let Some(d) = parse_directive(line) {
                self.directive(d);
                return Ok(());
            }
            // Comments and shell prompts (`$ date +%s`) pasted with the output carry no data.
            if trimmed.starts_with('#') || trimmed.starts_with("$ ") {
                return Ok(());
            }
        }
        let Some((name, value)) = split_stat(line) else {
            if indented && let Some(d) = parse_directive(line) {
                self.directive(d);
                return Ok(());
            }
            return ctx.bad_record(pos, "`NIC statistics:`, a `<name>: <value>` line or a timestamp line", raw);
        };
        let Some(v) = parse_u64(value) else {
            return ctx.bad_record(pos, "an unsigned 64-bit decimal value after `: `", raw);
        };
        let snap = match self.snapshot {
            Some(s) => s,
            None => self.start_snapshot(ctx)?,
        };
        let r = self.resolve(name, ctx);
        let device = match r.queue {
            None => snap.device,
            Some(q) => {
                if let Some(d) = self.queue_devices.get(&(snap.device, q)) {
                    *d
                } else {
                    let d = ctx.samples.device(&q.device(&self.current_device));
                    self.queue_devices.insert((snap.device, q), d);
                    d
                }
            }
        };
        ctx.push(&Sample {
            time_ns: snap.time_ns,
            host: snap.host,
            device,
            port: None,
            priority: r.priority,
            counter: r.counter,
            value: Value::U64(v).multiplied(r.multiply),
            scale: r.scale,
            is_counter: r.is_counter,
        })
    }

    fn directive(&mut self, d: Directive) {
        match d {
            Directive::Time(t) => self.directives.set_time(t),
            Directive::Host(h) => self.directives.set_host(h),
            Directive::Device(dev) => self.device = Some(dev),
        }
        // The next stat line belongs to a new snapshot, dated and named by what was just read.
        self.snapshot = None;
    }
}

impl LineReader for EthtoolReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

fn resolve_name(name: &str, ctx: &mut ReadContext<'_>) -> Resolved {
    if let Some((queue, stat)) = split_queue(name) {
        return Resolved {
            counter: ctx.samples.counter(&stat),
            priority: None,
            multiply: 1,
            scale: 1,
            is_counter: true,
            queue: Some(queue),
        };
    }
    let known = vocabulary::split_priority(name)
        .and_then(|(template, p)| vocabulary::lookup(Namespace::Ethtool, &template).map(|m| (m, Some(p))))
        .or_else(|| vocabulary::lookup(Namespace::Ethtool, name).map(|m| (m, None)));
    match known {
        Some((m, priority)) => Resolved {
            counter: ctx.samples.counter(m.def.name),
            priority,
            multiply: m.multiply,
            scale: m.scale,
            is_counter: m.def.kind == Kind::Counter,
            queue: None,
        },
        None => Resolved {
            counter: ctx.samples.counter(name),
            priority: None,
            multiply: 1,
            scale: 1,
            is_counter: true,
            queue: None,
        },
    }
}

/// ionic's per-queue stat names (`ionic_stats.c` `ionic_tx_stats_desc`, `ionic_rx_stats_desc`):
/// `tx_<q>_<name>` is only a queue stat for these names, so that `rx_64_byte_packets` stays a
/// port counter.
const IONIC_QUEUE_STATS: &[&str] = &[
    "pkts",
    "bytes",
    "clean",
    "dma_map_err",
    "linearize",
    "frags",
    "tso",
    "tso_bytes",
    "hwstamp_valid",
    "hwstamp_invalid",
    "csum_none",
    "csum",
    "csum_complete",
    "csum_error",
    "vlan_inserted",
    "alloc_err",
    "dropped",
    "vlan_stripped",
];

fn decimal(s: &str) -> Option<u32> {
    (!s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// A per-queue stat name split into its queue and the driver's stat name (see the module doc).
fn split_queue(name: &str) -> Option<(QueueId, String)> {
    // `[3]: rx_discards` (bnxt_en, bnx2x)
    if let Some(rest) = name.strip_prefix('[')
        && let Some((index, stat)) = rest.split_once("]: ")
    {
        return Some((QueueId::plain(decimal(index)?), stat.trim().to_owned()));
    }
    // `3: rcv_pkts`, `3_1: xmit_pkts`, `3 [XDP]: xmit_pkts` (qede)
    if let Some((head, stat)) = name.split_once(": ") {
        let stat = stat.trim().to_owned();
        if let Some(index) = head.strip_suffix(" [XDP]").and_then(decimal) {
            return Some((QueueId { index, tc: None, xdp: true }, stat));
        }
        if let Some((index, tc)) = head.split_once('_') {
            return Some((QueueId { index: decimal(index)?, tc: Some(decimal(tc)?), xdp: false }, stat));
        }
        return Some((QueueId::plain(decimal(head)?), stat));
    }
    // `rx_queue_3_bytes` (ice, virtio_net)
    for dir in ["rx", "tx"] {
        if let Some(rest) = name.strip_prefix(dir).and_then(|r| r.strip_prefix("_queue_"))
            && let Some((index, stat)) = rest.split_once('_')
            && let Some(index) = decimal(index)
        {
            return Some((QueueId::plain(index), format!("{dir}_{stat}")));
        }
    }
    // `tx-17.packets`, `rx-3.bytes` (i40e), `tx-0.tx_packets` (i40e in later kernels): the
    // direction joins the stat name once, as ice's `tx_queue_3_packets` gives `tx_packets`.
    for dir in ["rx", "tx"] {
        if let Some(rest) = name.strip_prefix(dir).and_then(|r| r.strip_prefix('-'))
            && let Some((index, stat)) = rest.split_once('.')
            && let Some(index) = decimal(index)
            && !stat.is_empty()
        {
            let stat = if stat.starts_with(&format!("{dir}_")) { stat.to_owned() } else { format!("{dir}_{stat}") };
            return Some((QueueId::plain(index), stat));
        }
    }
    // `txq_3_stop`, `rxq_3_cq_compl_count` (ionic debug stats), `tx_3_pkts` (ionic)
    for prefix in ["txq", "rxq", "tx", "rx"] {
        if let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('_'))
            && let Some((index, stat)) = rest.split_once('_')
            && let Some(index) = decimal(index)
            && (prefix.ends_with('q') || IONIC_QUEUE_STATS.contains(&stat))
        {
            return Some((QueueId::plain(index), format!("{prefix}_{stat}")));
        }
    }
    None
}

/// Split `<name>: <value>` on the last `": "`; the name is trimmed and must not be empty.
fn split_stat(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.rsplit_once(": ")?;
    let name = name.trim();
    (!name.is_empty()).then_some((name, value.trim()))
}

/// A u64 written in plain decimal digits. Signs are refused: ethtool prints `%llu`, so `-1` or
/// `+1` means the text is not what we think it is.
fn parse_u64(s: &str) -> Option<u64> {
    crate::number::parse_u64_digits(s.as_bytes())
}

/// The interface an input's path names, for dumps that do not echo the command.
///
/// Rule, first match wins:
/// 1. a file named `statistics` (optionally compressed, `statistics.gz`) is `node_exporter`'s fixture
///    layout `ethtool/<if>/statistics`: the parent directory's name;
/// 2. otherwise the file name is cut at `_`, `-`, `.` and `+`, and the first piece that looks like a
///    Linux interface name is used: `eth`, `ib`, `bond`, `team`, `vlan`, `em`, `hsn` followed by a
///    digit (`eth2`, `ib0`, `bond0`), systemd predictable names `en{o,s,p,P,x}<digit>...`
///    (`ens1f0np0`, `enp65s0f0np0`, `eno1`), or `p<n>p<m>`. So `eth2.txt`,
///    `ethtool-S-ens1f0np0-20261202T1447Z.txt` and `gpu01_eth2_ethtool.log` give `eth2`,
///    `ens1f0np0` and `eth2` (`ethtool` itself is not an interface: no digit after `eth`). A VLAN
///    name loses its suffix (`eth0.100.txt` gives `eth0`).
///
/// `None` when neither applies.
pub fn device_from_path(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    if name == "statistics" || name.starts_with("statistics.") {
        let parent = path.parent()?.file_name()?.to_string_lossy().into_owned();
        return (!parent.is_empty()).then_some(parent);
    }
    name.split(['_', '-', '.', '+']).find(|t| looks_like_interface(t)).map(str::to_owned)
}

fn looks_like_interface(token: &str) -> bool {
    let b = token.as_bytes();
    if b.len() < 2 || !b.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    for prefix in ["eth", "ib", "bond", "team", "vlan", "em", "hsn"] {
        if let Some(rest) = token.strip_prefix(prefix)
            && rest.as_bytes().first().is_some_and(u8::is_ascii_digit)
        {
            return true;
        }
    }
    if let Some(rest) = token.strip_prefix("en") {
        let r = rest.as_bytes();
        return match (r.first(), r.get(1)) {
            (Some(b'x'), Some(c)) => c.is_ascii_hexdigit(),
            (Some(b'o' | b's' | b'p' | b'P'), Some(c)) => c.is_ascii_digit(),
            _ => false,
        };
    }
    // `p1p1`: biosdevname's PCI slot/port naming.
    if let Some(rest) = token.strip_prefix('p')
        && let Some((slot, port)) = rest.split_once('p')
    {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        return digits(slot) && digits(port);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_split_on_the_last_colon_space() {
        assert_eq!(split_stat("     rx_packets: 5"), Some(("rx_packets", "5")));
        assert_eq!(split_stat("     [3]: tx_bytes: 7"), Some(("[3]: tx_bytes", "7")));
        assert_eq!(split_stat("     tx_pause_storm_warning_events : 0"), Some(("tx_pause_storm_warning_events", "0")));
        assert_eq!(split_stat("     Queue[0] AllocFails: 0"), Some(("Queue[0] AllocFails", "0")));
        assert_eq!(split_stat("NIC statistics:"), None);
        assert_eq!(split_stat("   : 5"), None);
    }

    #[test]
    fn queue_lines_are_indexed() {
        let q = |n: &str| split_queue(n).map(|(q, s)| (q.device("eth0"), s));
        assert_eq!(q("[11]: rx_discards"), Some(("eth0/queue11".into(), "rx_discards".into())));
        assert_eq!(q("3: rcv_pkts"), Some(("eth0/queue3".into(), "rcv_pkts".into())));
        assert_eq!(q("3_1: xmit_pkts"), Some(("eth0/queue3/tc1".into(), "xmit_pkts".into())));
        assert_eq!(q("2 [XDP]: xmit_pkts"), Some(("eth0/queue2/xdp".into(), "xmit_pkts".into())));
        assert_eq!(q("rx_queue_0_bytes"), Some(("eth0/queue0".into(), "rx_bytes".into())));
        assert_eq!(q("tx_queue_12_packets"), Some(("eth0/queue12".into(), "tx_packets".into())));
        assert_eq!(q("tx_5_pkts"), Some(("eth0/queue5".into(), "tx_pkts".into())));
        assert_eq!(q("rxq_1_napi_poll_count"), Some(("eth0/queue1".into(), "rxq_napi_poll_count".into())));
        assert_eq!(q("tx-17.packets"), Some(("eth0/queue17".into(), "tx_packets".into())));
        assert_eq!(q("rx-3.bytes"), Some(("eth0/queue3".into(), "rx_bytes".into())));
        assert_eq!(q("tx-0.tx_packets"), Some(("eth0/queue0".into(), "tx_packets".into())));
        assert_eq!(q("rx-x.bytes"), None);
        // port counters that look like queue lines stay counters
        assert_eq!(q("rx_64_byte_packets"), None);
        assert_eq!(q("rx_1519_to_2047_byte_packets"), None);
        assert_eq!(q("Queue[0] AllocFails"), None);
        assert_eq!(q("[x]: rx_discards"), None);
        assert_eq!(q("rx_prio3_pause"), None);
        assert_eq!(q("[99999999999]: rx_discards"), None);
    }

    #[test]
    fn values_are_plain_u64() {
        assert_eq!(parse_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64("18446744073709551616"), None);
        assert_eq!(parse_u64("-1"), None);
        assert_eq!(parse_u64("+1"), None);
        assert_eq!(parse_u64("1.5"), None);
        assert_eq!(parse_u64(""), None);
    }

    #[test]
    fn devices_come_from_file_names() {
        let d = |p: &str| device_from_path(Path::new(p));
        assert_eq!(d("ethtool/eth0/statistics").as_deref(), Some("eth0"));
        assert_eq!(d("ethtool/bond0/statistics.gz").as_deref(), Some("bond0"));
        assert_eq!(d("logs/eth2.txt").as_deref(), Some("eth2"));
        assert_eq!(d("ethtool-S-ens1f0np0-20261202T1447Z.txt").as_deref(), Some("ens1f0np0"));
        assert_eq!(d("gpu01_eth2_ethtool.log").as_deref(), Some("eth2"));
        assert_eq!(d("enp65s0f0np0.log").as_deref(), Some("enp65s0f0np0"));
        assert_eq!(d("p1p2.txt").as_deref(), Some("p1p2"));
        assert_eq!(d("ethtool.txt"), None);
        assert_eq!(d("gpu01_stats.log"), None);
        assert_eq!(d("entry.txt"), None);
    }
}

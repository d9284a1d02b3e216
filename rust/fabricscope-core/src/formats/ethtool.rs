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
        ctx.push(&Sample {
            time_ns: snap.time_ns,
            host: snap.host,
            device: snap.device,
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
        },
        None => {
            Resolved { counter: ctx.samples.counter(name), priority: None, multiply: 1, scale: 1, is_counter: true }
        }
    }
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

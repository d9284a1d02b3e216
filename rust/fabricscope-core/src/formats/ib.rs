//! Shared pieces of the InfiniBand diagnostic readers: GUID normalisation, counter value
//! parsing (decimal, hex, "not supported" sentinels), epoch magnitudes, link speed and width
//! tables, and content detection for the formats of `perfquery`, `ibqueryerrors`, `iblinkinfo`,
//! `ibnetdiscover` (both forms), `ibdiagnet2.db_csv`, `ibdiagnet2.net_dump`, `ibswinfo`, UFM telemetry and
//! telegraf line protocol.

use ahash::AHashMap;

use crate::error::Result;
use crate::formats::Format;
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use crate::vocabulary::{self, Kind, Namespace};

/// Push gauges of one port (state ids, lanes, link rate): stored as read, scale 1, not counters.
pub fn push_port_gauges(
    ctx: &mut ReadContext<'_>,
    time_ns: i64,
    host: i32,
    device: i32,
    port: u16,
    gauges: &[(&str, Value)],
) -> Result<()> {
    for &(name, value) in gauges {
        let counter = ctx.samples.counter(name);
        ctx.push(&Sample {
            time_ns,
            host,
            device,
            port: Some(port),
            priority: None,
            counter,
            value,
            scale: 1,
            is_counter: false,
        })?;
    }
    Ok(())
}

/// How a raw counter name maps to a row, resolved once per distinct name.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    /// Interned counter key.
    pub counter: i32,
    /// Factor applied at parse time.
    pub multiply: u32,
    /// Recorded scale.
    pub scale: u32,
    /// Counter or gauge.
    pub is_counter: bool,
    /// True when the vocabulary knows the name.
    pub known: bool,
}

/// Per-input cache of name resolutions in one namespace (files repeat the same names per port).
#[derive(Debug)]
pub struct NameCache {
    namespace: Namespace,
    map: AHashMap<Box<str>, Resolved>,
}

impl NameCache {
    /// An empty cache for `namespace`.
    pub fn new(namespace: Namespace) -> Self {
        NameCache { namespace, map: AHashMap::new() }
    }

    /// Resolve `name`; unknown names keep their raw spelling as counters.
    pub fn get(&mut self, name: &str, ctx: &mut ReadContext<'_>) -> Resolved {
        if let Some(r) = self.map.get(name) {
            return *r;
        }
        let r = match vocabulary::lookup(self.namespace, name) {
            Some(m) => Resolved {
                counter: ctx.samples.counter(m.def.name),
                multiply: m.multiply,
                scale: m.scale,
                is_counter: m.def.kind == Kind::Counter,
                known: true,
            },
            None => {
                Resolved { counter: ctx.samples.counter(name), multiply: 1, scale: 1, is_counter: true, known: false }
            }
        };
        self.map.insert(name.into(), r);
        r
    }
}

pub use crate::guid::normalize_guid;

/// A counter value as the IB tools print it: decimal, or `0x` hex. The "not supported" sentinels
/// of ibdiagnet (`0xfffffffffffffffe`, `-1` from ibdiagnet 2.8.1) and the empty cell or `N/A`
/// become [`Value::Null`]. Floats (UFM gauges) go through [`Value::from_f64`]. `None` when the
/// text is not a number at all.
pub fn parse_value(s: &str) -> Option<Value> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") || t.eq_ignore_ascii_case("na") || t == "-1" {
        return Some(Value::Null);
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).ok()?;
        return Some(if v == 0xffff_ffff_ffff_fffe { Value::Null } else { Value::U64(v) });
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<u64>().ok().map(Value::U64);
    }
    let first = t.as_bytes().first()?;
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return None; // `nan`, `inf` and words are not counter values
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from_f64)
}

/// An epoch timestamp of unknown unit, by magnitude: below 1e11 seconds, below 1e14 milliseconds,
/// below 1e17 microseconds, else nanoseconds (UFM writes µs, telegraf ns by default, but both
/// can be configured). `None` for zero, negatives and values that overflow nanoseconds.
pub fn epoch_to_ns(v: u64) -> Option<i64> {
    if v == 0 {
        return None;
    }
    let ns = if v < 100_000_000_000 {
        v.checked_mul(1_000_000_000)?
    } else if v < 100_000_000_000_000 {
        v.checked_mul(1_000_000)?
    } else if v < 100_000_000_000_000_000 {
        v.checked_mul(1_000)?
    } else {
        v
    };
    i64::try_from(ns).ok()
}

/// IB link speed names with their per-lane signalling rate (what `iblinkinfo` prints) and
/// effective per-lane data rate after encoding (what a link can carry), both in Gb/s.
const SPEEDS: &[(&str, f64, f64)] = &[
    ("SDR", 2.5, 2.0),
    ("DDR", 5.0, 4.0),
    ("QDR", 10.0, 8.0),
    ("FDR10", 10.3125, 10.0),
    ("FDR", 14.0625, 13.636_363_636_363_637),
    ("EDR", 25.781_25, 25.0),
    ("HDR", 53.125, 50.0),
    ("NDR", 106.25, 100.0),
    ("XDR", 212.5, 200.0),
];

/// Canonical speed name for a speed name in any case (`EDR`, `edr`).
pub fn speed_name(s: &str) -> Option<&'static str> {
    SPEEDS.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(s.trim())).map(|(n, _, _)| *n)
}

/// Speed name for an `iblinkinfo` signalling string: `25.78125 Gbps`, `10.0 Gbps (FDR10)`.
pub fn speed_from_signalling(s: &str) -> Option<&'static str> {
    if s.contains("FDR10") {
        return Some("FDR10");
    }
    let num: f64 = s.split_whitespace().next()?.parse().ok()?;
    SPEEDS.iter().find(|(n, g, _)| *n != "FDR10" && (g - num).abs() < 1e-6).map(|(n, _, _)| *n)
}

/// Per-lane signalling rate of a speed name, Gb/s.
pub fn lane_signalling_gbps(name: &str) -> Option<f64> {
    SPEEDS.iter().find(|(n, _, _)| *n == name).map(|(_, g, _)| *g)
}

/// Per-lane effective data rate of a speed name, Gb/s.
pub fn lane_data_gbps(name: &str) -> Option<f64> {
    SPEEDS.iter().find(|(n, _, _)| *n == name).map(|(_, _, d)| *d)
}

/// Normalised width (`4x`) and lane count from `4x`, `4X`, `12X`.
pub fn width(s: &str) -> Option<(String, u32)> {
    let t = s.trim();
    let digits = t.strip_suffix('x').or_else(|| t.strip_suffix('X'))?;
    let lanes: u32 = digits.parse().ok()?;
    matches!(lanes, 1 | 2 | 4 | 8 | 12).then(|| (format!("{lanes}x"), lanes))
}

/// Content detection for the InfiniBand formats; `None` lets the generic rules run.
pub fn detect(text: &str) -> Option<Format> {
    let mut first: Option<&str> = None;
    let (mut dotted, mut netdiscover, mut line_protocol, mut linkinfo_blocks) = (0u32, 0u32, 0u32, 0u32);
    let mut switch_vitals = 0u32;
    for raw in text.lines().take(200) {
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if first.is_none() {
            first = Some(t);
        }
        if t.strip_prefix("START_").is_some_and(is_section_name) {
            return Some(Format::IbdiagnetDbCsv);
        }
        if crate::formats::common::net_dump_block_header(t).is_some() {
            return Some(Format::IbdiagnetNetDump);
        }
        if crate::formats::perfquery::parse_header(t).is_some() {
            return Some(Format::Perfquery);
        }
        if t.starts_with("Errors for ")
            || t.starts_with("Data Counters for ")
            || (t.starts_with("GUID 0x") && t.contains(" port ") && t.contains(": ["))
        {
            return Some(Format::Ibqueryerrors);
        }
        if crate::formats::ibnetdiscover::looks_like_topology_line(t) {
            return Some(Format::Ibnetdiscover);
        }
        if t.contains("==(") && (t.contains(")==>") || t.contains("Down/")) {
            return Some(Format::Iblinkinfo);
        }
        if (t.starts_with("Switch: 0x") || t.starts_with("CA: ")) && t.ends_with(':') {
            linkinfo_blocks += 1;
        } else if crate::formats::ibnetdiscover::looks_like_port_line(t) {
            netdiscover += 1;
        } else if crate::formats::ibswinfo::looks_like_vital(t) {
            switch_vitals += 1;
        } else if looks_like_dotted_field(t) {
            dotted += 1;
        } else if looks_like_line_protocol(t) {
            line_protocol += 1;
        }
    }
    let first = first?;
    if (first.starts_with('{') || first.starts_with('['))
        && text.contains("\"node_guid\"")
        && (text.contains("\"port_num\"") || text.contains("\"Port_Number\""))
    {
        return Some(Format::UfmJson);
    }
    if first.contains(',') {
        let cols: Vec<String> = first.split(',').map(|c| c.trim().to_ascii_lowercase()).collect();
        if cols.iter().any(|c| c == "timestamp") && cols.iter().any(|c| c == "node_guid") {
            return Some(Format::UfmCsv);
        }
    }
    if switch_vitals > 0 && netdiscover == 0 && dotted == 0 && line_protocol == 0 {
        return Some(Format::Ibswinfo);
    }
    if netdiscover > 0 {
        return Some(Format::Ibnetdiscover);
    }
    if dotted >= 2 {
        return Some(Format::Perfquery);
    }
    if line_protocol > 0 {
        return Some(Format::Telegraf);
    }
    if linkinfo_blocks > 0 {
        return Some(Format::Iblinkinfo);
    }
    None
}

/// An ibdiagnet section name: upper-case letters, digits and `_`.
pub fn is_section_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// `Name:.....value`: libibmad's dotted padding.
fn looks_like_dotted_field(t: &str) -> bool {
    let Some((name, rest)) = t.split_once(':') else { return false };
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && rest.starts_with("..")
        && rest.trim_start_matches('.').bytes().next().is_some()
}

/// `measurement,tag=v[,..] field=v[,..] [timestamp]`: what telegraf writes.
fn looks_like_line_protocol(t: &str) -> bool {
    let mut parts = t.split(' ');
    let (Some(head), Some(fields)) = (parts.next(), parts.next()) else { return false };
    let Some((measurement, tags)) = head.split_once(',') else { return false };
    let name_ok = measurement.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && measurement.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    let ts_ok = parts.next().is_none_or(|ts| !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit()));
    name_ok && tags.contains('=') && fields.contains('=') && !fields.starts_with('=') && ts_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_handle_hex_and_sentinels() {
        assert_eq!(parse_value("0x0000000000000010"), Some(Value::U64(16)));
        assert_eq!(parse_value("0xfffffffffffffffe"), Some(Value::Null));
        assert_eq!(parse_value("-1"), Some(Value::Null));
        assert_eq!(parse_value("N/A"), Some(Value::Null));
        assert_eq!(parse_value("42"), Some(Value::U64(42)));
        assert_eq!(parse_value("0.5"), Some(Value::F64(0.5)));
        assert_eq!(parse_value("abc"), None);
        assert_eq!(parse_value("nan"), None);
        assert_eq!(parse_value("0xé"), None);
    }

    #[test]
    fn epochs_by_magnitude() {
        assert_eq!(epoch_to_ns(1_709_652_347), Some(1_709_652_347_000_000_000));
        assert_eq!(epoch_to_ns(1_709_652_347_161), Some(1_709_652_347_161_000_000));
        assert_eq!(epoch_to_ns(1_709_652_347_161_873), Some(1_709_652_347_161_873_000));
        assert_eq!(epoch_to_ns(1_737_652_060_000_000_000), Some(1_737_652_060_000_000_000));
        assert_eq!(epoch_to_ns(0), None);
    }

    #[test]
    fn speeds_and_widths() {
        assert_eq!(speed_from_signalling("25.78125 Gbps"), Some("EDR"));
        assert_eq!(speed_from_signalling("10.0 Gbps (FDR10)"), Some("FDR10"));
        assert_eq!(speed_from_signalling("10.0 Gbps"), Some("QDR"));
        assert_eq!(speed_from_signalling("106.25 Gbps"), Some("NDR"));
        assert_eq!(speed_name("edr"), Some("EDR"));
        assert_eq!(width("4X"), Some(("4x".to_owned(), 4)));
        assert_eq!(width("3x"), None);
    }
}

//! `ibswinfo` output (switch vitals of unmanaged NVIDIA/Mellanox switches, read in-band over
//! MADs by the `ibswinfo` script). Two layouts, both `key <sep> value` with the unit in the key:
//!
//! ```text
//! =================================================
//! Quantum Mellanox Technologies
//! =================================================
//! part number        | MQM8790-HS2F
//! GUID               | 0x08c0eb0300d9f672
//! uptime (d-h:m:s)   | 96d-01:55:47
//! PSU0 status        | OK
//!      P/N           | MTEF-PSF-AC-C
//!      power (W)     | 154
//! temperature (C)    | 53
//! fan#1 (rpm)        | 6125
//! ```
//!
//! and the `-o vitals` form `cur.temp (C)       : 73`, `psu0.power (W)     : 92`,
//! `fan#1.speed (rpm)  : 6355`, `uptime (sec)       : 16982312`.
//!
//! * Numeric vitals become gauges: `switch_temperature_celsius`, `switch_max_temperature_celsius`,
//!   `switch_uptime_seconds` on the switch; `switch_fan_speed_rpm` on device `<switch>/fan<n>`
//!   and `switch_psu_power_watts` on `<switch>/psu<n>` (the schema has no fan or PSU column, and
//!   several fans in one row set would collide).
//! * Text facts become attributes with a null port: `part_number`, `serial_number`,
//!   `product_name`, `revision`, `ports`, `psid`, `guid`, `firmware_version`, `fan_status`, the
//!   title line (`title`); the indented lines under `PSU<n> status` (`P/N`, `S/N`, `DC power`,
//!   `fan status`) go to `<switch>/psu<n>` as `part_number`, `serial_number`, `dc_power`,
//!   `fan_status`, with `status`. Unknown keys are kept as attributes under a snake-cased key.
//! * An empty value (`fan#1 (rpm)        |`) is "not reported": no row. A non-numeric numeric
//!   vital (`temperature (C) | foo`) is a bad record.
//! * Device: the `GUID` line (normalised), else a GUID in the file name, else the file stem.
//!   Rows are held until the switch ends (end of input, or a new `====` banner after values) so
//!   the GUID, printed after the first facts, names all of them. Host: `# host:` lines, else the
//!   argument. Time: a timestamp line, else the fallbacks.

use crate::error::{Position, Result};
use crate::formats::ib;
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};

/// At most this many facts are held per switch (real output has about 50).
const MAX_PENDING: usize = 10_000;

/// Keys that identify ibswinfo output for content detection.
const KNOWN_KEYS: &[&str] = &[
    "part number",
    "serial number",
    "firmware version",
    "psid",
    "uptime (d-h:m:s)",
    "uptime (sec)",
    "temperature (c)",
    "max temp (c)",
    "cur.temp (c)",
    "max.temp (c)",
];

/// Split `key | value` or `key : value` (vitals). The key keeps its leading indentation.
fn split_kv(line: &str) -> Option<(&str, &str)> {
    if let Some((k, v)) = line.split_once('|') {
        return Some((k, v));
    }
    let (k, v) = line.split_once(" :").or_else(|| line.split_once(':'))?;
    Some((k, v))
}

/// True for a line that only ibswinfo prints (used by content detection).
pub fn looks_like_vital(t: &str) -> bool {
    let Some((k, _)) = split_kv(t) else { return false };
    let k = k.trim().to_ascii_lowercase();
    if k.is_empty() {
        return false;
    }
    if !t.contains('|') {
        // The colon form is common (ethtool `temperature (C): 45`): only vitals-mode keys count.
        return matches!(k.as_str(), "uptime (sec)" | "cur.temp (c)" | "max.temp (c)")
            || (k.starts_with("fan#") && k.ends_with(".speed (rpm)"))
            || (k.starts_with("psu") && k.ends_with(".power (w)"));
    }
    KNOWN_KEYS.contains(&k.as_str())
        || (k.starts_with("fan#") && k.ends_with("(rpm)"))
        || (k.starts_with("psu") && (k.ends_with(" status") || k.ends_with(".power (w)")))
}

/// `160d-10:38:53` (days-hours:minutes:seconds) in seconds.
fn parse_uptime(s: &str) -> Option<u64> {
    let (days, hms) = match s.split_once("d-") {
        Some((d, rest)) => (d.trim().parse::<u64>().ok()?, rest),
        None => (0, s),
    };
    let mut parts = hms.trim().split(':');
    let (h, m, sec) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (h, m, sec): (u64, u64, u64) = (h.parse().ok()?, m.parse().ok()?, sec.parse().ok()?);
    if m >= 60 || sec >= 60 {
        return None;
    }
    days.checked_mul(86_400)?.checked_add(h.checked_mul(3600)?)?.checked_add(m * 60 + sec)
}

/// `fan#3 (rpm)`, `fan#3.speed (rpm)` → 3.
fn fan_index(key: &str) -> Option<u32> {
    let rest = key.strip_prefix("fan#")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `psu0.power (w)` → 0; `psu1 status` → 1.
fn psu_index(key: &str) -> Option<u32> {
    let rest = key.strip_prefix("psu")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `firmware version` → `firmware_version`, `max temp (C)` → `max_temp_c`.
fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

#[derive(Debug, Clone)]
enum Fact {
    /// A gauge on the switch (`sub` empty) or a sub-device (`fan1`, `psu0`).
    Gauge { sub: String, counter: &'static str, value: Value },
    /// An attribute on the switch or a sub-device.
    Attr { sub: String, key: String, value: String },
}

/// Streaming reader for ibswinfo output.
#[derive(Default)]
pub struct IbswinfoReader {
    directives: DirectiveState,
    guid: Option<String>,
    /// The PSU the indented lines belong to.
    psu: Option<u32>,
    pending: Vec<Fact>,
    /// A `====` banner was seen since the last value (the next one may start a new switch).
    seen_values: bool,
    title_allowed: bool,
    overflow_warned: bool,
}

impl IbswinfoReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbswinfoReader { title_allowed: true, ..IbswinfoReader::default() }
    }

    fn hold(&mut self, fact: Fact, ctx: &mut ReadContext<'_>) {
        if self.pending.len() >= MAX_PENDING {
            if !self.overflow_warned {
                ctx.warn(format!("more than {MAX_PENDING} ibswinfo values for one switch: the rest are dropped"));
                self.overflow_warned = true;
            }
            return;
        }
        self.seen_values = true;
        self.pending.push(fact);
    }

    /// Emit what one switch printed.
    fn flush(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        self.psu = None;
        self.seen_values = false;
        self.title_allowed = true;
        if self.pending.is_empty() {
            self.guid = None;
            return Ok(());
        }
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        let switch = match self.guid.take() {
            Some(g) => g,
            None => crate::formats::common::guid_from_path(ctx.path).unwrap_or_else(|| {
                ctx.path.file_stem().map_or_else(|| "unknown".to_owned(), |s| s.to_string_lossy().into_owned())
            }),
        };
        let host = ctx.samples.host(&host_name);
        for fact in std::mem::take(&mut self.pending) {
            match fact {
                Fact::Gauge { sub, counter, value } => {
                    let name = if sub.is_empty() { switch.clone() } else { format!("{switch}/{sub}") };
                    let device = ctx.samples.device(&name);
                    let counter = ctx.samples.counter(counter);
                    ctx.push(&Sample {
                        time_ns,
                        host,
                        device,
                        port: None,
                        priority: None,
                        counter,
                        value,
                        scale: 1,
                        is_counter: false,
                    })?;
                }
                Fact::Attr { sub, key, value } => {
                    let name = if sub.is_empty() { switch.clone() } else { format!("{switch}/{sub}") };
                    let a = Attribute { time_ns, host: 0, device: 0, port: None, key: &key, value: &value };
                    ctx.push_attribute(&host_name, &name, &a)?;
                }
            }
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if t.bytes().all(|b| b == b'=') {
            // A banner after values starts the next switch's output.
            if self.seen_values {
                self.flush(ctx)?;
            }
            return Ok(());
        }
        if t.bytes().all(|b| b == b'-') {
            self.psu = None;
            self.title_allowed = false;
            return Ok(());
        }
        let Some((raw_key, value)) = split_kv(line) else {
            if let Some(d) = parse_directive(t) {
                match d {
                    Directive::Time(ts) => {
                        if self.seen_values {
                            self.flush(ctx)?;
                        }
                        self.directives.set_time(ts);
                    }
                    Directive::Host(h) => self.directives.set_host(h),
                    Directive::Device(_) => {}
                }
                return Ok(());
            }
            if t.starts_with('#') {
                return Ok(());
            }
            if self.title_allowed && !self.seen_values {
                self.title_allowed = false;
                self.hold(Fact::Attr { sub: String::new(), key: "title".into(), value: t.to_owned() }, ctx);
                // The banner under the title does not end this switch.
                self.seen_values = false;
                return Ok(());
            }
            if t.starts_with("ibswinfo") || t.starts_with("ERROR") || t.starts_with("error") {
                ctx.warn(format!("ibswinfo reported: {t}"));
                return Ok(());
            }
            return ctx.bad_record(pos, "a `key | value` or `key : value` line", raw);
        };
        self.title_allowed = false;
        let indented = raw_key.starts_with([' ', '\t']);
        let key = raw_key.trim().to_ascii_lowercase();
        let value = value.trim();
        if key.is_empty() {
            return ctx.bad_record(pos, "a key before the separator", raw);
        }
        if !indented {
            self.psu = None;
        }
        // `PSU1 status` opens a PSU; its indented lines follow.
        if let Some(n) = psu_index(&key).filter(|_| key.ends_with(" status")) {
            self.psu = Some(n);
            if !value.is_empty() {
                self.hold(Fact::Attr { sub: format!("psu{n}"), key: "status".into(), value: value.to_owned() }, ctx);
            }
            return Ok(());
        }
        if value.is_empty() {
            return Ok(()); // not reported
        }
        let gauge = |ctx: &mut ReadContext<'_>, this: &mut Self, sub: String, counter: &'static str| -> Result<()> {
            match ib::parse_value(value) {
                Some(v @ (Value::U64(_) | Value::F64(_))) => {
                    this.hold(Fact::Gauge { sub, counter, value: v }, ctx);
                    Ok(())
                }
                _ => ctx.bad_record(pos, &format!("a number for `{}`", raw_key.trim()), raw),
            }
        };
        if indented && let Some(n) = self.psu {
            let sub = format!("psu{n}");
            let attr_key = match key.as_str() {
                "power (w)" => return gauge(ctx, self, sub, "switch_psu_power_watts"),
                "p/n" => "part_number".to_owned(),
                "s/n" => "serial_number".to_owned(),
                other => snake(other),
            };
            self.hold(Fact::Attr { sub, key: attr_key, value: value.to_owned() }, ctx);
            return Ok(());
        }
        match key.as_str() {
            "temperature (c)" | "cur.temp (c)" => return gauge(ctx, self, String::new(), "switch_temperature_celsius"),
            "max temp (c)" | "max.temp (c)" => {
                return gauge(ctx, self, String::new(), "switch_max_temperature_celsius");
            }
            "uptime (sec)" => return gauge(ctx, self, String::new(), "switch_uptime_seconds"),
            "uptime (d-h:m:s)" => {
                let Some(secs) = parse_uptime(value) else {
                    return ctx.bad_record(pos, "an uptime `<days>d-<h>:<m>:<s>`", raw);
                };
                let fact =
                    Fact::Gauge { sub: String::new(), counter: "switch_uptime_seconds", value: Value::U64(secs) };
                self.hold(fact, ctx);
                return Ok(());
            }
            _ => {}
        }
        if key.ends_with("(rpm)")
            && let Some(n) = fan_index(&key)
        {
            return gauge(ctx, self, format!("fan{n}"), "switch_fan_speed_rpm");
        }
        if key.ends_with(".power (w)")
            && let Some(n) = psu_index(&key)
        {
            return gauge(ctx, self, format!("psu{n}"), "switch_psu_power_watts");
        }
        if key == "guid" {
            let Some(g) = ib::normalize_guid(value) else {
                return ctx.bad_record(pos, "a hex GUID", raw);
            };
            self.guid = Some(g.clone());
            self.hold(Fact::Attr { sub: String::new(), key: "guid".into(), value: g }, ctx);
            return Ok(());
        }
        let key = snake(&key);
        if key.is_empty() {
            return ctx.bad_record(pos, "a key with letters or digits", raw);
        }
        self.hold(Fact::Attr { sub: String::new(), key, value: value.to_owned() }, ctx);
        Ok(())
    }
}

impl LineReader for IbswinfoReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        self.flush(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_keys_and_detection() {
        assert_eq!(parse_uptime("160d-10:38:53"), Some(160 * 86_400 + 10 * 3600 + 38 * 60 + 53));
        assert_eq!(parse_uptime("10:38:53"), Some(38_333));
        assert_eq!(parse_uptime("1d-10:61:00"), None);
        assert_eq!(parse_uptime("xd-1:2:3"), None);
        assert_eq!(parse_uptime("99999999999999999d-1:2:3"), None);
        assert_eq!(fan_index("fan#12.speed (rpm)"), Some(12));
        assert_eq!(fan_index("fan#x (rpm)"), None);
        assert_eq!(psu_index("psu1.power (w)"), Some(1));
        assert_eq!(snake("max temp (C)"), "max_temp_c");
        assert_eq!(snake("é"), "");
        assert!(looks_like_vital("part number        | MSB7790-ES2F"));
        assert!(looks_like_vital("fan#1.speed (rpm)  : 6355"));
        assert!(looks_like_vital("psu0.power (W)     : 92"));
        assert!(!looks_like_vital("rx_packets: 5"));
        assert!(!looks_like_vital("temperature (C): 45"));
        assert!(looks_like_vital("temperature (C)    | 45"));
        assert!(!looks_like_vital("PortXmitData:....................5"));
    }
}

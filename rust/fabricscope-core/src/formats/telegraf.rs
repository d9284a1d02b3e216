//! Influx line protocol as telegraf writes it, for its `infiniband` and `ethtool` inputs.
//!
//! ```text
//! infiniband,device=mlx5_bond_0,host=hop-r640-12,port=1 port_xmit_data=85378896588i,VL15_dropped=0i 1737652060000000000
//! ethtool,driver=mlx5_core,host=gpu01,interface=eth2 rx_prio3_pause=5i,tx_bytes_phy=7i 1737652060000000000
//! ```
//!
//! * `measurement,tag=v,... field=v,... [timestamp]`; `\,` `\ ` `\=` escapes in names and tags;
//!   string fields (`"..."`, with `\"`) become port attributes; booleans are skipped.
//! * Values: `123i`/`123u` integers (negative ones as floats), floats, exponent floats.
//! * Timestamp: ns by default; s, ms and µs precisions are recognised by magnitude. Without one,
//!   the fallbacks apply.
//! * `infiniband`: tags `device`, `port`, `host`. Fields are the sysfs counter file names read
//!   raw, so `port_xmit_data` is in 4-octet words (telegraf does NOT multiply): x4, scale 4.
//!   `hw_counters` fields resolve through the sysfs `hw_counters/` vocabulary.
//! * `ethtool`: tags `interface` (device), `host`; fields through the ethtool vocabulary,
//!   per-priority names split into the priority column.
//! * Other measurements: device from `device`/`interface`, counter `<measurement>.<field>`.

use ahash::AHashMap;

use crate::error::{Position, Result};
use crate::formats::ib;
use crate::formats::{LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::vocabulary::{self, Kind, Namespace};

#[derive(Debug, Clone, Copy)]
struct Resolved {
    counter: i32,
    priority: Option<u8>,
    multiply: u32,
    scale: u32,
    is_counter: bool,
}

/// Streaming reader for telegraf line protocol.
#[derive(Default)]
pub struct TelegrafReader {
    names: AHashMap<(Box<str>, Box<str>), Resolved>,
    fallback_host: Option<String>,
}

/// Split at the first byte in `stops` that is not escaped with `\` (and, when `quotes`, not
/// inside a double-quoted string).
fn split_unescaped<'a>(s: &'a str, stops: &[u8], quotes: bool) -> (&'a str, Option<&'a str>) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut in_quotes = false;
    while let Some(&c) = b.get(i) {
        if c == b'\\' {
            i += 2;
            continue;
        }
        if quotes && c == b'"' {
            in_quotes = !in_quotes;
        } else if !in_quotes && stops.contains(&c) {
            return (s.get(..i).unwrap_or(s), s.get(i + 1..));
        }
        i += 1;
    }
    (s, None)
}

fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A field value: `Ok(Some(v))` numeric, `Ok(None)` a boolean (skipped), `Err(s)` a string.
fn field_value(s: &str) -> Option<Result<Option<Value>, String>> {
    if let Some(q) = s.strip_prefix('"') {
        return Some(Err(unescape(q.strip_suffix('"')?)));
    }
    if matches!(s, "t" | "T" | "true" | "True" | "TRUE" | "f" | "F" | "false" | "False" | "FALSE") {
        return Some(Ok(None));
    }
    if let Some(int) = s.strip_suffix('i').or_else(|| s.strip_suffix('u')) {
        if let Ok(v) = int.parse::<u64>() {
            return Some(Ok(Some(Value::U64(v))));
        }
        return int.parse::<i64>().ok().map(|v| Ok(Some(Value::F64(v as f64))));
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| Ok(Some(Value::from_f64(f))))
}

impl TelegrafReader {
    /// A reader for one input.
    pub fn new() -> Self {
        TelegrafReader::default()
    }

    fn resolve(&mut self, measurement: &str, field: &str, ctx: &mut ReadContext<'_>) -> Resolved {
        if let Some(r) = self.names.get(&(measurement.into(), field.into())) {
            return *r;
        }
        let known = match measurement {
            "infiniband" => vocabulary::lookup(Namespace::Telegraf, field)
                .or_else(|| vocabulary::lookup(Namespace::Sysfs, &format!("hw_counters/{field}")))
                .map(|m| (m, None)),
            "ethtool" => vocabulary::split_priority(field)
                .and_then(|(tpl, p)| vocabulary::lookup(Namespace::Ethtool, &tpl).map(|m| (m, Some(p))))
                .or_else(|| vocabulary::lookup(Namespace::Ethtool, field).map(|m| (m, None))),
            _ => None,
        };
        let r = if let Some((m, priority)) = known {
            Resolved {
                counter: ctx.samples.counter(m.def.name),
                priority,
                multiply: m.multiply,
                scale: m.scale,
                is_counter: m.def.kind == Kind::Counter,
            }
        } else {
            {
                let name = if matches!(measurement, "infiniband" | "ethtool") {
                    field.to_owned()
                } else {
                    format!("{measurement}.{field}")
                };
                Resolved {
                    counter: ctx.samples.counter(&name),
                    priority: None,
                    multiply: 1,
                    scale: 1,
                    is_counter: true,
                }
            }
        };
        self.names.insert((measurement.into(), field.into()), r);
        r
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`measurement,tag=value field=value[,...] [timestamp]`";
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("```") {
            return Ok(());
        }
        let (head, rest) = split_unescaped(t, b" ", false);
        let Some(rest) = rest else { return ctx.bad_record(pos, EXPECTED, raw) };
        let (fields, ts) = split_unescaped(rest, b" ", true);
        let (measurement, mut tags) = split_unescaped(head, b",", false);
        let measurement = unescape(measurement);
        let (mut host, mut device, mut port) = (None, None, None);
        while let Some(tg) = tags {
            let (one, more) = split_unescaped(tg, b",", false);
            tags = more;
            let (k, v) = split_unescaped(one, b"=", false);
            let Some(v) = v else { return ctx.bad_record(pos, "`tag=value` in the tag set", raw) };
            match k {
                "host" => host = Some(unescape(v)),
                "device" | "interface" => device = Some(unescape(v)),
                "port" => match v.parse::<u16>() {
                    Ok(p) => port = Some(p),
                    Err(_) => return ctx.bad_record(pos, "a numeric `port` tag", raw),
                },
                _ => {}
            }
        }
        let time_ns = match ts.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => match s.parse::<u64>().ok().and_then(ib::epoch_to_ns) {
                Some(t) => t,
                None => return ctx.bad_record(pos, "an integer epoch timestamp after the fields", raw),
            },
            None => ctx.fallback_time_ns()?,
        };
        let host_name = match host {
            Some(h) => h,
            None => self.fallback_host.get_or_insert_with(|| ctx.fallback_host()).clone(),
        };
        let device_name = device.unwrap_or_else(|| measurement.clone());
        let host_key = ctx.samples.host(&host_name);
        let device_key = ctx.samples.device(&device_name);
        let mut fields = Some(fields);
        while let Some(f) = fields {
            let (one, more) = split_unescaped(f, b",", true);
            fields = more;
            let (k, v) = split_unescaped(one, b"=", false);
            let (Some(v), false) = (v, k.is_empty()) else { return ctx.bad_record(pos, EXPECTED, raw) };
            let key = unescape(k);
            match field_value(v) {
                None => return ctx.bad_record(pos, "a numeric (`12i`, `1.5`), string or boolean field value", raw),
                Some(Ok(None)) => {}
                Some(Err(text)) => {
                    let a = Attribute { time_ns, host: 0, device: 0, port, key: &key, value: &text };
                    ctx.push_attribute(&host_name, &device_name, &a)?;
                }
                Some(Ok(Some(value))) => {
                    let r = self.resolve(&measurement, &key, ctx);
                    ctx.push(&Sample {
                        time_ns,
                        host: host_key,
                        device: device_key,
                        port,
                        priority: r.priority,
                        counter: r.counter,
                        value: value.multiplied(r.multiply),
                        scale: r.scale,
                        is_counter: r.is_counter,
                    })?;
                }
            }
        }
        Ok(())
    }
}

impl LineReader for TelegrafReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_quotes() {
        assert_eq!(split_unescaped(r"a\ b c", b" ", false), (r"a\ b", Some("c")));
        assert_eq!(split_unescaped(r#"x="a b",y=1 5"#, b" ", true), (r#"x="a b",y=1"#, Some("5")));
        assert_eq!(unescape(r"a\,b\ c"), "a,b c");
        assert_eq!(field_value("12i"), Some(Ok(Some(Value::U64(12)))));
        assert_eq!(field_value("-3i"), Some(Ok(Some(Value::F64(-3.0)))));
        assert_eq!(field_value("1.5"), Some(Ok(Some(Value::F64(1.5)))));
        assert_eq!(field_value("true"), Some(Ok(None)));
        assert_eq!(field_value("\"up\""), Some(Err("up".into())));
        assert_eq!(field_value("abc"), None);
    }
}

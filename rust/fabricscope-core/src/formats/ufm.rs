//! UFM telemetry exports: CSV (`/csv/metrics`, `/csv/xcset/<name>`) and JSON (fluentd telemetry
//! plugin messages, REST).
//!
//! **CSV**: a header, then one row per port, a trailing empty line. Identity columns (any case):
//! `timestamp` (µs epoch; s/ms/ns recognised by magnitude; a date string also works),
//! `node_guid`/`Node_GUID` (device, normalised), `port_num`/`Port_Number` (port), and
//! `source_id`, `tag`, `port_guid`, `sys_image_guid`, `node_description`, `aport`, `Device_ID`,
//! `port_label`, which are not counters and are skipped. Every other column is a counter through
//! the `ufm` vocabulary (unknown names kept raw). Cells are decimal, `0x` hex or floats; empty,
//! `N/A`, `-1` and `0xfffffffffffffffe` are null. A repeated header line (concatenated pulls)
//! starts a new table. Quoted cells are not supported (UFM does not write them).
//!
//! **Unit of `PortXmitDataExtended`**: UFM's own docs disagree (formats reference §4.3). We read
//! it as **bytes** (UFM-SDN telemetry field table; UFM's Grafana dashboards multiply its rate by
//! 8 to get bits/s), so no x4; the row records scale 4 (the register counts words). Calibrate
//! against perfquery or sysfs on one port if in doubt.
//!
//! **JSON**: the whole stream is read (at most `Limits::max_document_bytes`) and parsed as a sequence of
//! JSON values (one document, or several concatenated / one per line). Each value is a message
//! `{"values": [record, ...]}`, an array of records, or one record. A record has `node_guid`,
//! `port_num` and `timestamp` (µs; the message's outer timestamp is a local-time string without a
//! zone and is ignored). Keys carry their unit as a suffix (`_u_Packets`, `_f_u_Percent`); known
//! keys map to canonical counters, others keep their raw name. Non-numeric values of other keys
//! become port attributes.

use std::io::Read;

use crate::error::{Position, Result};
use crate::formats::ib::{self, NameCache, Resolved};
use crate::formats::{BinaryReader, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::vocabulary::Namespace;

// The stream is held in memory whole, bounded by `Limits::max_document_bytes` (256 MiB by
// default): a UFM message is one pull of the fabric, about 1 KiB per port, so even a 100k-port
// fabric stays far below it, while the parse tree of a crafted 1 GiB document would not fit.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Time,
    Guid,
    Port,
    Skip,
    Counter(i32),
}

fn identity(name: &str) -> Option<Column> {
    Some(match name.to_ascii_lowercase().as_str() {
        "timestamp" => Column::Time,
        "node_guid" => Column::Guid,
        "port_num" | "port_number" => Column::Port,
        "source_id" | "tag" | "port_guid" | "sys_image_guid" | "node_description" | "aport" | "device_id"
        | "port_label" | "node_name" | "hostname" => Column::Skip,
        _ => return None,
    })
}

/// Streaming reader for UFM telemetry CSV.
pub struct UfmCsvReader {
    header: Option<(String, Vec<Column>)>,
    resolved: Vec<Option<Resolved>>,
    names: NameCache,
    fallback_host: Option<String>,
}

impl Default for UfmCsvReader {
    fn default() -> Self {
        UfmCsvReader { header: None, resolved: Vec::new(), names: NameCache::new(Namespace::Ufm), fallback_host: None }
    }
}

impl UfmCsvReader {
    /// A reader for one input.
    pub fn new() -> Self {
        UfmCsvReader::default()
    }

    fn set_header(&mut self, t: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let mut cols = Vec::new();
        self.resolved.clear();
        for name in t.split(',').map(str::trim) {
            if let Some(c) = identity(name) {
                cols.push(c);
                self.resolved.push(None);
            } else {
                let r = self.names.get(name, ctx);
                cols.push(Column::Counter(r.counter));
                self.resolved.push(Some(r));
            }
        }
        if !cols.contains(&Column::Guid) {
            return ctx.bad_record(pos, "a UFM CSV header with a `node_guid`/`Node_GUID` column", raw);
        }
        self.header = Some((t.to_owned(), cols));
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
        let is_header = t.split(',').next().is_some_and(|c| c.trim().eq_ignore_ascii_case("timestamp"))
            || self.header.as_ref().is_none_or(|(h, _)| h == t);
        if is_header {
            return self.set_header(t, raw, pos, ctx);
        }
        let Some((_, cols)) = &self.header else { return Ok(()) };
        let cells: Vec<&str> = t.split(',').map(str::trim).collect();
        if cells.len() != cols.len() {
            let msg = format!("{} comma-separated cells as in the header (found {})", cols.len(), cells.len());
            return ctx.bad_record(pos, &msg, raw);
        }
        let (mut time, mut guid, mut port) = (None, None, None);
        for (c, cell) in cols.iter().zip(&cells) {
            match c {
                Column::Time => time = Some(*cell),
                Column::Guid => guid = Some(*cell),
                Column::Port => port = Some(*cell),
                Column::Skip | Column::Counter(_) => {}
            }
        }
        let Some(device) = guid.and_then(ib::normalize_guid) else {
            return ctx.bad_record(pos, "a hex node GUID in the `node_guid` column", raw);
        };
        let port = match port.filter(|p| !p.is_empty()) {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) => Some(n),
                Err(_) => return ctx.bad_record(pos, "a port number in the `port_num` column", raw),
            },
        };
        let time_ns = match time.filter(|s| !s.is_empty()) {
            Some(s) => {
                let parsed =
                    s.parse::<u64>().ok().and_then(ib::epoch_to_ns).or_else(|| crate::timestamp::parse_timestamp(s));
                match parsed {
                    Some(t) => t,
                    None => return ctx.bad_record(pos, "an epoch (µs) or date in the `timestamp` column", raw),
                }
            }
            None => ctx.fallback_time_ns()?,
        };
        // Validate the whole row before pushing any of it, so a rejected row leaves no partial rows.
        let mut values = Vec::with_capacity(cells.len());
        for (i, cell) in cells.iter().enumerate() {
            if let Some(Some(r)) = self.resolved.get(i) {
                let Some(v) = ib::parse_value(cell) else {
                    let msg = format!(
                        "a numeric value in column {} (cell {})",
                        i + 1,
                        crate::error::excerpt(cell.as_bytes(), 40)
                    );
                    return ctx.bad_record(pos, &msg, raw);
                };
                values.push((*r, v));
            }
        }
        let host_name = self.fallback_host.get_or_insert_with(|| ctx.fallback_host()).clone();
        let host = ctx.samples.host(&host_name);
        let dev = ctx.samples.device(&device);
        for (r, v) in values {
            ctx.push(&Sample {
                time_ns,
                host,
                device: dev,
                port,
                priority: None,
                counter: r.counter,
                value: v.multiplied(r.multiply),
                scale: r.scale,
                is_counter: r.is_counter,
            })?;
        }
        Ok(())
    }
}

impl LineReader for UfmCsvReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

/// Reader for UFM telemetry JSON (whole stream, bounded by `Limits::max_document_bytes`).
pub struct UfmJsonReader {
    names: NameCache,
}

impl Default for UfmJsonReader {
    fn default() -> Self {
        UfmJsonReader { names: NameCache::new(Namespace::Ufm) }
    }
}

impl UfmJsonReader {
    /// A reader for one input.
    pub fn new() -> Self {
        UfmJsonReader::default()
    }

    fn record(
        &mut self,
        rec: &serde_json::Map<String, serde_json::Value>,
        index: u64,
        host_name: &str,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        let pos = Position { line: None, byte_offset: 0 };
        let get = |k: &str| rec.iter().find(|(key, _)| key.eq_ignore_ascii_case(k)).map(|(_, v)| v);
        let Some(device) = get("node_guid").and_then(serde_json::Value::as_str).and_then(ib::normalize_guid) else {
            let msg = format!("record {index} to have a hex `node_guid` string");
            return ctx.bad_record(pos, &msg, b"");
        };
        let port = match get("port_num").or_else(|| get("port_number")) {
            None => None,
            Some(v) => {
                let Some(p) = v.as_u64().and_then(|p| u16::try_from(p).ok()) else {
                    let msg = format!("record {index} to have an integer `port_num`");
                    return ctx.bad_record(pos, &msg, b"");
                };
                Some(p)
            }
        };
        let time_ns = match get("timestamp").and_then(serde_json::Value::as_u64).and_then(ib::epoch_to_ns) {
            Some(t) => t,
            None => ctx.fallback_time_ns()?,
        };
        let host = ctx.samples.host(host_name);
        let dev = ctx.samples.device(&device);
        for (key, v) in rec {
            if identity(key).is_some() {
                continue;
            }
            let value = match v {
                serde_json::Value::Number(n) => match n.as_u64() {
                    Some(u) => Value::U64(u),
                    None => match n.as_f64() {
                        Some(f) => Value::from_f64(f),
                        None => continue,
                    },
                },
                serde_json::Value::Null => Value::Null,
                serde_json::Value::String(s) => {
                    let a = Attribute { time_ns, host: 0, device: 0, port, key, value: s };
                    ctx.push_attribute(host_name, &device, &a)?;
                    continue;
                }
                _ => continue,
            };
            let r = self.names.get(key, ctx);
            ctx.push(&Sample {
                time_ns,
                host,
                device: dev,
                port,
                priority: None,
                counter: r.counter,
                value: value.multiplied(r.multiply),
                scale: r.scale,
                is_counter: r.is_counter,
            })?;
        }
        Ok(())
    }

    fn value(&mut self, v: &serde_json::Value, index: &mut u64, host: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        match v {
            serde_json::Value::Array(items) => {
                for item in items {
                    self.value(item, index, host, ctx)?;
                }
            }
            serde_json::Value::Object(map) if map.contains_key("values") => {
                if let Some(inner) = map.get("values") {
                    self.value(inner, index, host, ctx)?;
                }
            }
            serde_json::Value::Object(map) => {
                *index += 1;
                self.record(map, *index, host, ctx)?;
            }
            _ => {
                let pos = Position { line: None, byte_offset: 0 };
                ctx.bad_record(pos, "a JSON object or array of port records", b"")?;
            }
        }
        Ok(())
    }
}

impl BinaryReader for UfmJsonReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = crate::formats::read_bounded(head, rest, ctx, "UFM JSON document size")?;
        let total = buf.len() as u64;
        let host = ctx.fallback_host();
        let mut index = 0u64;
        let stream = serde_json::Deserializer::from_slice(&buf).into_iter::<serde_json::Value>();
        for item in stream {
            match item {
                Ok(v) => self.value(&v, &mut index, &host, ctx)?,
                Err(e) => {
                    // A syntax error leaves the rest of the stream unreadable: report and stop.
                    let line = e.line() as u64;
                    let offset = line_offset(&buf, line) + e.column().saturating_sub(1) as u64;
                    let pos = Position { line: Some(line), byte_offset: offset };
                    let found = buf.get(offset as usize..).unwrap_or(&[]);
                    let found = found.get(..found.len().min(40)).unwrap_or(&[]);
                    ctx.bad_record(pos, &format!("valid JSON ({e})"), found)?;
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// Byte offset of the start of 1-based `line`.
fn line_offset(buf: &[u8], line: u64) -> u64 {
    if line <= 1 {
        return 0;
    }
    memchr::memchr_iter(b'\n', buf).nth((line - 2) as usize).map_or(buf.len() as u64, |i| i as u64 + 1)
}

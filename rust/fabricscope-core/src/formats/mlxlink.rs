//! `mlxlink` (NVIDIA MFT / mstflint) port reports: text and `--json`.
//!
//! ```text
//! Operational Info
//! ----------------
//! State                              : Active
//! FEC                                : Standard RS-FEC - RS(528,514)
//!
//! Physical Counters and BER Info
//! ------------------------------
//! Time Since Last Clear [Min]        : 25074.8
//! Effective Physical BER             : 15E-255
//! Raw Physical Errors Per Lane       : 0,0,0,0
//! Raw Physical BER                   : 15E-255
//!
//! Module Info
//! -----------
//! Temperature [C]                    : 54 [-5..75]
//! Rx Power Current [dBm]             : 1.886,1.989,2.281,1.976 [-10.41..6]
//! ```
//!
//! * Sections are a title over a line of dashes (mstflint `MlxlinkCmdPrint`); rows are
//!   `<label> : <value>`, the label padded (or, pasted from a web page, not). Values may carry ANSI
//!   colour codes (mlxlink colours them on a terminal): they are dropped. `N/A` is unknown: no row.
//! * Numeric labels go through the vocabulary (namespace `mlxlink`): BERs (`15E-255`, `2E-9`) are
//!   gauges `phy_*_ber_ratio`; error and link counters are counters; `Time Since Last Clear [Min]`
//!   becomes seconds. A comma-separated value is one value per lane: rows on the sub-device
//!   `<device>/lane<n>` (lanes from 0). A `[low..high]` suffix is the module's own alarm range:
//!   gauges `<label> [low]` / `<label> [high]` on the port.
//! * Text facts are port attributes: `link_state`, `link_phys_state`, `link_speed`, `link_width`,
//!   `fec_mode`, `troubleshooting_status_opcode`, `troubleshooting_group_opcode`,
//!   `troubleshooting_recommendation`, `firmware_version`, `mft_version`, `module_identifier`,
//!   `module_vendor`, `module_part_number`, `module_serial_number`, `cable_type`,
//!   `eye_physical_grade`, `eye_phase_opening_ps`.
//! * Device and port: the echoed command (`$ mlxlink -d mlx5_0 -p 1 -c`, `-d /dev/mst/mt4115_pciconf0`
//!   gives `mt4115_pciconf0`), or a `# device: NAME` line; port `-p`, else 1. Each echoed command
//!   starts a snapshot. Host: `# host:` line, the prompt's `user@host`, the driver's fallback. Time:
//!   timestamp lines, else the driver's fallbacks.
//! * `--json` (`{"status": ..., "result": {"output": {<section>: {<label>: value}}}}`): the same
//!   labels; per-lane values are `{"values": [...]}`. Read whole, bounded by `max_document_bytes`.

use crate::error::{Position, Result};
use crate::formats::{BinaryReader, DirectiveState, LineReader, feed_lines, read_bounded};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::vocabulary::{Namespace, lookup};

/// Section titles mlxlink prints (mstflint `HEADER_*` and `setPrintTitle` calls).
const SECTIONS: &[&str] = &[
    "Operational Info",
    "Supported Info",
    "Troubleshooting Info",
    "Tool Information",
    "Physical Counters and BER Info",
    "Module Info",
    "EYE Opening Info",
    "FEC Capability Info",
    "Test Mode Info",
    "Port Info",
];

/// True when the head is mlxlink text: two known section titles, each over a dash line.
pub fn looks_like_text(text: &str) -> bool {
    let mut titled = 0;
    let mut pending = false;
    for line in text.lines().take(400) {
        let t = strip_ansi(line.trim());
        if t.is_empty() {
            continue;
        }
        if pending && t.len() >= 4 && t.bytes().all(|b| b == b'-') {
            titled += 1;
            if titled >= 2 {
                return true;
            }
        }
        pending = SECTIONS.contains(&t.as_str());
    }
    false
}

/// True when the head is `mlxlink --json`: `result`/`output` around a known section title.
pub fn looks_like_json(text: &str) -> bool {
    text.contains("\"result\"")
        && text.contains("\"output\"")
        && ["\"Operational Info\"", "\"Physical Counters and BER Info\"", "\"Module Info\""]
            .iter()
            .any(|s| text.contains(s))
}

/// Drop ANSI escape sequences (`ESC [ ... letter`) mlxlink writes to colour values.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The attribute key of a text label, where the label is a fact worth keeping.
fn attribute_key(section: &str, label: &str) -> Option<&'static str> {
    Some(match (section, label) {
        ("Operational Info", "State") => "link_state",
        ("Operational Info", "Physical state") => "link_phys_state",
        ("Operational Info", "Speed") => "link_speed",
        ("Operational Info", "Width") => "link_width",
        ("Operational Info", "FEC") => "fec_mode",
        (_, "Status Opcode") => "troubleshooting_status_opcode",
        (_, "Group Opcode") => "troubleshooting_group_opcode",
        (_, "Recommendation") => "troubleshooting_recommendation",
        (_, "Firmware Version") => "firmware_version",
        (_, "MFT Version") => "mft_version",
        ("Module Info", "Identifier") => "module_identifier",
        ("Module Info", "Vendor Name") => "module_vendor",
        ("Module Info", "Vendor Part Number") => "module_part_number",
        ("Module Info", "Vendor Serial Number") => "module_serial_number",
        ("Module Info", "Cable Type") => "cable_type",
        (_, "Physical Grade") => "eye_physical_grade",
        (_, "Phase Eye Opening [psec]") => "eye_phase_opening_ps",
        _ => return None,
    })
}

/// A number as mlxlink prints it: `0`, `3261.2`, `-10.41`, `15E-255`. `None` when it is none.
fn number(s: &str) -> Option<Value> {
    let t = s.trim();
    if let Ok(v) = t.parse::<u64>() {
        return Some(Value::U64(v));
    }
    let v = t.parse::<f64>().ok().filter(|v| v.is_finite())?;
    Some(Value::from_f64(v))
}

/// Split `1.886,1.989 [-10.41..6]` into the values and the alarm range.
fn split_range(value: &str) -> (&str, Option<(&str, &str)>) {
    let v = value.trim();
    if let Some(open) = v.rfind('[')
        && v.ends_with(']')
    {
        let inner = &v[open + 1..v.len() - 1];
        if let Some((lo, hi)) = inner.split_once("..") {
            return (v[..open].trim(), Some((lo.trim(), hi.trim())));
        }
    }
    (v, None)
}

/// Whether a value is the tool's "not available".
fn is_na(v: &str) -> bool {
    let t = v.trim();
    t.is_empty() || t.eq_ignore_ascii_case("N/A") || t == "-"
}

/// Where rows go, and the state both readers share.
#[derive(Default)]
struct Sink {
    directives: DirectiveState,
    device: Option<String>,
    port: u16,
    warned_no_device: bool,
}

impl Sink {
    fn new() -> Self {
        Sink { port: 1, ..Sink::default() }
    }

    fn device(&mut self, ctx: &mut ReadContext<'_>) -> String {
        if let Some(d) = &self.device {
            return d.clone();
        }
        let derived = rdma_device_from_path(ctx.path).or_else(|| crate::formats::ethtool::device_from_path(ctx.path));
        if derived.is_none() && !self.warned_no_device {
            self.warned_no_device = true;
            ctx.warn(
                "no device in the input (`mlxlink -d <dev>` echo or `# device:` line): rows use device \"unknown\"",
            );
        }
        let d = derived.unwrap_or_else(|| "unknown".to_owned());
        self.device = Some(d.clone());
        d
    }

    fn host(&mut self, ctx: &mut ReadContext<'_>) -> String {
        self.directives.host(ctx)
    }

    fn push_value(&mut self, raw: &str, lane: Option<usize>, value: Value, ctx: &mut ReadContext<'_>) -> Result<bool> {
        let Some(m) = lookup(Namespace::Mlxlink, raw) else { return Ok(false) };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.host(ctx);
        let base = self.device(ctx);
        let device_name = match lane {
            Some(l) => format!("{base}/lane{l}"),
            None => base,
        };
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&device_name);
        let counter = ctx.samples.counter(m.def.name);
        let is_counter = m.def.kind == crate::vocabulary::Kind::Counter;
        ctx.push(&Sample {
            time_ns,
            host,
            device,
            port: Some(self.port),
            priority: None,
            counter,
            value: value.multiplied(m.multiply),
            scale: m.scale,
            is_counter,
        })?;
        Ok(true)
    }

    fn attribute(&mut self, key: &str, value: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.host(ctx);
        let device = self.device(ctx);
        let a = Attribute { time_ns, host: 0, device: 0, port: Some(self.port), key, value };
        ctx.push_attribute(&host, &device, &a)
    }

    /// One `<label> : <value>` row of a section. Returns false when a numeric label's value is
    /// not a number (a bad record).
    fn field(&mut self, section: &str, label: &str, value: &str, ctx: &mut ReadContext<'_>) -> Result<bool> {
        let value = strip_ansi(value);
        let value = value.trim();
        if is_na(value) {
            return Ok(true);
        }
        if let Some(key) = attribute_key(section, label) {
            self.attribute(key, value, ctx)?;
            return Ok(true);
        }
        if lookup(Namespace::Mlxlink, label).is_none() {
            return Ok(true);
        }
        let (values, range) = split_range(value);
        let parts: Vec<&str> = values.split(',').map(str::trim).collect();
        let per_lane = parts.len() > 1 || label.contains("Per Lane") || label.contains("Current [");
        for (i, p) in parts.iter().enumerate() {
            if is_na(p) {
                continue;
            }
            let Some(v) = number(p) else { return Ok(false) };
            self.push_value(label, per_lane.then_some(i), v, ctx)?;
        }
        if let Some((lo, hi)) = range {
            for (bound, text) in [("[low]", lo), ("[high]", hi)] {
                if is_na(text) {
                    continue;
                }
                let Some(v) = number(text) else { return Ok(false) };
                self.push_value(&format!("{label} {bound}"), None, v, ctx)?;
            }
        }
        Ok(true)
    }
}

/// An RDMA device name in a file name (`mlx5_0-counters.json`, `gpu1_mlx5_12.txt`): `mlx<n>_<m>`.
fn rdma_device_from_path(path: &std::path::Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let at = name.find("mlx")?;
    let rest = &name[at + 3..];
    let (generation, tail) = rest.split_once('_')?;
    let idx: String = tail.chars().take_while(char::is_ascii_digit).collect();
    (!generation.is_empty() && generation.bytes().all(|b| b.is_ascii_digit()) && !idx.is_empty())
        .then(|| format!("mlx{generation}_{idx}"))
}

/// The device and port an echoed `mlxlink` command names, and the prompt's host.
fn command_echo(t: &str) -> Option<(Option<String>, Option<u16>, Option<String>)> {
    let words: Vec<&str> = t.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "mlxlink" || w.ends_with("/mlxlink") || *w == "mstlink")?;
    let mut device = None;
    let mut port = None;
    let mut i = at + 1;
    while let Some(w) = words.get(i) {
        match *w {
            "-d" | "--device" => {
                device = words.get(i + 1).map(|d| d.rsplit('/').next().unwrap_or(d).to_owned());
                i += 1;
            }
            "-p" | "--port" => {
                port = words.get(i + 1).and_then(|p| p.parse::<u16>().ok());
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    // `ubuntu@bluefield-1:~/dir$ sudo mlxlink ...`, `[root@localhost ~]# mlxlink ...`
    let prompt = words.first().filter(|_| at > 0).copied().unwrap_or("");
    let host = prompt
        .trim_start_matches('[')
        .split_once('@')
        .map(|(_, rest)| rest.split([':', ' ', ']']).next().unwrap_or(rest).to_owned())
        .filter(|h| !h.is_empty());
    Some((device, port, host))
}

/// Streaming reader for mlxlink text output.
pub struct MlxlinkReader {
    sink: Sink,
    section: String,
    /// A line that may be a section title: it is one when a dash line follows.
    candidate: Option<(String, Position, Vec<u8>)>,
    notes: u64,
}

impl Default for MlxlinkReader {
    fn default() -> Self {
        MlxlinkReader { sink: Sink::new(), section: String::new(), candidate: None, notes: 0 }
    }
}

impl MlxlinkReader {
    /// A reader for one input.
    pub fn new() -> Self {
        MlxlinkReader::default()
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let clean = strip_ansi(line);
        let t = clean.trim();
        if t.is_empty() {
            return Ok(());
        }
        if t.len() >= 4 && t.bytes().all(|b| b == b'-') {
            if let Some((title, _, _)) = self.candidate.take() {
                self.section = title;
            }
            return Ok(());
        }
        if let Some((_, at, text)) = self.candidate.take() {
            ctx.bad_record(at, "a section title over a line of dashes, or a `<label> : <value>` row", &text)?;
        }
        if let Some((device, port, host)) = command_echo(t) {
            if device.is_some() {
                self.sink.device = device;
            }
            self.sink.port = port.unwrap_or(1);
            // `root@localhost` names no host worth keeping
            if let Some(h) = host.filter(|h| h != "localhost") {
                self.sink.directives.set_host(h);
            }
            self.section.clear();
            return Ok(());
        }
        if let Some(rest) = t.trim_start_matches('#').trim().strip_prefix("device:") {
            let d = rest.trim();
            if !d.is_empty() {
                self.sink.device = Some(d.rsplit('/').next().unwrap_or(d).to_owned());
            }
            return Ok(());
        }
        if self.sink.directives.apply_line(t) {
            return Ok(());
        }
        if t.starts_with("-W-") || t.starts_with("-I-") || t.starts_with("-E-") || t.starts_with('#') {
            self.notes += 1;
            return Ok(());
        }
        if !t.contains(':') && t.len() <= 64 {
            self.candidate = Some((t.to_owned(), pos, raw.to_vec()));
            return Ok(());
        }
        let Some((label, value)) = t.split_once(':') else {
            return ctx.bad_record(
                pos,
                "a `<label> : <value>` row, a section title or an echoed `mlxlink` command",
                raw,
            );
        };
        let label = label.trim();
        if self.section.is_empty() || label.is_empty() {
            return ctx.bad_record(pos, "a `<label> : <value>` row inside a titled section", raw);
        }
        let section = self.section.clone();
        if !self.sink.field(&section, label, value, ctx)? {
            return ctx.bad_record(pos, "a number (or `N/A`) for this mlxlink row", raw);
        }
        Ok(())
    }
}

impl LineReader for MlxlinkReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some((_, at, text)) = self.candidate.take() {
            ctx.bad_record(at, "a section title over a line of dashes, or a `<label> : <value>` row", &text)?;
        }
        if self.notes > 0 {
            ctx.warn(format!("skipped {} mlxlink note or comment lines (`-W-`, `-I-`, `#`)", self.notes));
        }
        Ok(())
    }
}

/// Reader for `mlxlink --json`.
pub struct MlxlinkJsonReader;

impl BinaryReader for MlxlinkJsonReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn std::io::Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = read_bounded(head, rest, ctx, "mlxlink JSON document")?;
        let len = buf.len() as u64;
        let doc: serde_json::Value = match serde_json::from_slice(&buf) {
            Ok(d) => d,
            Err(e) => {
                let pos = Position { line: Some(e.line() as u64), byte_offset: 0 };
                ctx.bad_record(pos, "a complete mlxlink --json document", e.to_string().as_bytes())?;
                return Ok(len);
            }
        };
        let Some(output) = doc.get("result").and_then(|r| r.get("output")).and_then(|o| o.as_object()) else {
            let pos = Position { line: Some(1), byte_offset: 0 };
            ctx.bad_record(pos, "`{\"result\": {\"output\": {<section>: {...}}}}`", b"no result.output object")?;
            return Ok(len);
        };
        let mut sink = Sink::new();
        for (section, rows) in output {
            let Some(rows) = rows.as_object() else { continue };
            for (label, value) in rows {
                let text = match value {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::Object(o) => match o.get("values").and_then(|v| v.as_array()) {
                        Some(vals) => vals
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(","),
                        None => continue,
                    },
                    _ => continue,
                };
                if !sink.field(section, label, &text, ctx)? {
                    let pos = Position { line: None, byte_offset: 0 };
                    let found = format!("{section} / {label}: {text}");
                    ctx.bad_record(pos, "a number (or `N/A`) for this mlxlink row", found.as_bytes())?;
                }
            }
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_text_and_json() {
        let text = "\nOperational Info\n----------------\nState : Active\n\nPhysical Counters and BER Info\n------------------------------\nRaw Physical BER : 2E-9\n";
        assert!(looks_like_text(text));
        assert!(!looks_like_text("Operational Info\nState : Active\n"));
        assert!(looks_like_json("{\"result\" : {\"output\" : {\"Operational Info\" : {}}}}"));
        assert!(!looks_like_json("{\"result\": {\"output\": 1}}"));
    }

    #[test]
    fn numbers_ranges_and_ansi() {
        assert_eq!(number("15E-255"), Some(Value::F64(15e-255)));
        assert_eq!(number("3946476397"), Some(Value::U64(3_946_476_397)));
        assert_eq!(number("-10.41"), Some(Value::F64(-10.41)));
        assert_eq!(number("N/A"), None);
        assert_eq!(number("99999999999999999999999"), Some(Value::F64(1e23)));
        assert_eq!(split_range("54 [-5..75]"), ("54", Some(("-5", "75"))));
        assert_eq!(split_range("1.886,1.989 [-10.41..6]"), ("1.886,1.989", Some(("-10.41", "6"))));
        assert_eq!(split_range("0,0,0,0"), ("0,0,0,0", None));
        assert_eq!(strip_ansi("\u{1b}[32m2E-9\u{1b}[0m"), "2E-9");
        assert_eq!(strip_ansi("\u{1b}[1;33mwarn\u{1b}[0m"), "warn");
    }

    #[test]
    fn command_echoes() {
        let (d, p, h) = command_echo("ubuntu@bluefield-1:~/x$ sudo mlxlink -d /dev/mst/mt41692_pciconf0.1 -p 1 -m -c")
            .expect("echo");
        assert_eq!(d.as_deref(), Some("mt41692_pciconf0.1"));
        assert_eq!(p, Some(1));
        assert_eq!(h.as_deref(), Some("bluefield-1"));
        let (d, p, h) = command_echo("[root@localhost ~]# mlxlink -d /dev/mst/mt4115_pciconf0 -c").expect("echo");
        assert_eq!((d.as_deref(), p, h.as_deref()), (Some("mt4115_pciconf0"), None, Some("localhost")));
        let (d, _, h) = command_echo("$ mlxlink -d mlx5_0 --show_counters").expect("echo");
        assert_eq!((d.as_deref(), h), (Some("mlx5_0"), None));
        assert!(command_echo("State : Active").is_none());
        let p = |s: &str| rdma_device_from_path(std::path::Path::new(s));
        assert_eq!(p("/x/mlx5_0-constructed-json.json").as_deref(), Some("mlx5_0"));
        assert_eq!(p("gpu1_mlx5_12.txt").as_deref(), Some("mlx5_12"));
        assert_eq!(p("mlxlink.txt"), None);
        // a truncated echo names no device and does not panic
        assert_eq!(command_echo("mlxlink -d").map(|(d, _, _)| d), Some(None));
    }
}

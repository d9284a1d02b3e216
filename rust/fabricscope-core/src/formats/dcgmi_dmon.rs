//! `dcgmi dmon -e <field ids>` output (NVIDIA DCGM `dcgmi/DeviceMonitor.cpp`): one row per entity
//! and sample, one column per field, under a header of the fields' short names.
//!
//! ```text
//! #Entity         XIDER        GNVERR       VIUTL             VMUSG
//! ID
//! GPU 0           N/A          N/A          N/A               0
//! GPU 0           0            0            N/A               0
//! ```
//!
//! * The header is `#Entity` then each field's short column name (`PCITX` for field 1009,
//!   `DCGM_FI_PROF_PCIE_TX_BYTES`; `dcgmi dmon -l` lists them), padded to the field's width; the
//!   line under it is `ID` and each field's unit (mostly blank). The header is printed again every
//!   few samples; a row whose field has no value leaves its column blank. Columns are cut where
//!   the header places them, so a blank cell is no value; a paste whose spacing no longer lines
//!   up is read by whitespace when it has one token per field.
//! * Entities: `GPU 0` → device `gpu0` (as the DCGM exporter's rows name GPUs), `GPU-I 1`,
//!   `GPU-CI 2`, `Switch 0`, `CPU 0`, `SW 0 LINK 3` → `gpu-i1`, `gpu-ci2`, `switch0`, `cpu0`,
//!   `sw0-link3`.
//! * `N/A` (the field is not supported or not yet sampled) is no sample. Short names in the
//!   vocabulary's `dcgmi` namespace map to the same canonical counters as the exporter's
//!   `DCGM_FI_*` metrics; others keep their short name as a gauge.
//! * Samples carry no time: a row for an entity already seen starts the next sample, dated the
//!   `-d <ms>` delay (from an echoed `dcgmi dmon ... -d N` command line; DCGM's default 1000 ms)
//!   after the previous one, from the input's timestamp line or the driver's fallback.

use crate::error::{Position, Result};
use crate::formats::common::prompt_command;
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use crate::vocabulary::{self, Kind, Namespace};

/// DCGM's default sampling delay (`dcgmi dmon --delay`), ms.
const DEFAULT_DELAY_MS: i64 = 1000;

/// The columns of a `#Entity` header: each short name and the byte offset it starts at.
fn header_columns(line: &str) -> Option<Vec<(String, usize)>> {
    let rest = line.strip_prefix("#Entity")?;
    let mut cols = Vec::new();
    let offset = "#Entity".len();
    for (i, token) in split_with_offsets(rest) {
        if !token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        cols.push((token.to_owned(), offset + i));
    }
    (!cols.is_empty()).then_some(cols)
}

/// Whitespace-separated tokens with their byte offsets.
fn split_with_offsets(s: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let rest = s.get(pos..)?;
        let start = pos + rest.find(|c: char| !c.is_whitespace())?;
        let after = s.get(start..)?;
        let len = after.find(char::is_whitespace).unwrap_or(after.len());
        pos = start + len;
        Some((start, s.get(start..start + len).unwrap_or("")))
    })
}

/// `GPU 0` → `gpu0`; `SW 0 LINK 3` → `sw0-link3`; `None` unless the words are names and numbers
/// that alternate, starting with a name.
fn device_name(entity: &str) -> Option<String> {
    let words: Vec<&str> = entity.split_whitespace().collect();
    if words.len() < 2 || !words.len().is_multiple_of(2) {
        return None;
    }
    let mut parts = Vec::new();
    for pair in words.chunks_exact(2) {
        let (kind, id) = (pair[0], pair[1]);
        let kind_ok = kind.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') && !kind.is_empty();
        let id_ok = !id.is_empty() && id.len() <= 10 && id.bytes().all(|b| b.is_ascii_digit());
        if !(kind_ok && id_ok) {
            return None;
        }
        parts.push(format!("{}{}", kind.to_ascii_lowercase(), id));
    }
    Some(parts.join("-"))
}

/// The `-d <ms>`/`--delay <ms>` of an echoed `dcgmi dmon` command line.
fn echoed_delay_ms(t: &str) -> Option<i64> {
    let cmd = prompt_command(t).unwrap_or(t);
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "dcgmi" || w.ends_with("/dcgmi"))?;
    (words.get(at + 1) == Some(&"dmon")).then_some(())?;
    let rest = words.get(at + 2..)?;
    let i = rest.iter().position(|w| *w == "-d" || *w == "--delay")?;
    let ms: i64 = rest.get(i + 1)?.parse().ok()?;
    (1..=86_400_000).contains(&ms).then_some(ms)
}

/// True when the input is `dcgmi dmon` output: its first significant line is a `#Entity`
/// header (comments are not skipped here: the header starts with `#`) and `ID` follows it.
pub fn looks_like(text: &str) -> bool {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty() && prompt_command(t).is_none() && crate::formats::parse_directive(t).is_none());
    let Some(first) = lines.next() else { return false };
    header_columns(first).is_some() && lines.next().is_some_and(|t| t == "ID" || t.starts_with("ID "))
}

/// Streaming reader for `dcgmi dmon` output.
#[derive(Default)]
pub struct DcgmiDmonReader {
    directives: DirectiveState,
    columns: Vec<(String, usize)>,
    delay_ms: Option<i64>,
    /// Index of the current sample and the entities it has a row for.
    sample: i64,
    seen: ahash::AHashSet<String>,
    base_ns: Option<i64>,
}

impl DcgmiDmonReader {
    /// A reader for one input.
    pub fn new() -> Self {
        DcgmiDmonReader::default()
    }

    /// Cells of a row: the entity and one value per column (`""` for a blank cell).
    fn cells<'a>(&self, line: &'a str) -> Option<(&'a str, Vec<&'a str>)> {
        let first = self.columns.first()?.1;
        // The tool's layout: cut where the header starts each column, on a blank.
        let on_blank = |at: usize| at >= line.len() || line.as_bytes().get(at.wrapping_sub(1)) == Some(&b' ');
        if self.columns.iter().all(|(_, at)| on_blank(*at)) {
            let entity = line.get(..first.min(line.len()))?.trim();
            let mut values = Vec::with_capacity(self.columns.len());
            for (i, (_, at)) in self.columns.iter().enumerate() {
                let end = self.columns.get(i + 1).map_or(line.len(), |(_, e)| *e).min(line.len());
                let start = (*at).min(line.len());
                values.push(line.get(start..end)?.trim());
            }
            if device_name(entity).is_some() && values.iter().all(|v| !v.contains(char::is_whitespace)) {
                return Some((entity, values));
            }
        }
        // Re-spaced (a paste, tabs): one token per column after an even number of entity words.
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let n = tokens.len().checked_sub(self.columns.len())?;
        let entity_words = tokens.get(..n)?;
        let start = line.find(entity_words.first()?)?;
        let last = entity_words.last()?;
        let end = line.get(start..)?.find(last)? + start + last.len();
        let entity = line.get(start..end)?;
        device_name(entity)?;
        Some((entity, tokens.get(n..)?.to_vec()))
    }

    fn row(&mut self, line: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some((entity, values)) = self.cells(line) else {
            return ctx.bad_record(pos, "an entity (`GPU 0`) and one value or `N/A` per `#Entity` column", raw);
        };
        let device = device_name(entity).unwrap_or_default();
        // Every cell is checked before any is kept: a damaged row gives no sample.
        let mut parsed: Vec<(usize, Value)> = Vec::with_capacity(values.len());
        for (i, value) in values.iter().enumerate() {
            if value.is_empty() || *value == "N/A" {
                continue;
            }
            let name = self.columns.get(i).map_or("", |(n, _)| n.as_str());
            let Ok(v) = value.parse::<f64>() else {
                let expected = format!("a number or `N/A` in column `{name}`");
                return ctx.bad_record(pos, &expected, raw);
            };
            if !v.is_finite() {
                let expected = format!("a finite number or `N/A` in column `{name}`");
                return ctx.bad_record(pos, &expected, raw);
            }
            parsed.push((i, value.parse::<u64>().map_or_else(|_| Value::from_f64(v), Value::U64)));
        }
        let mut seen = std::mem::take(&mut self.seen);
        if !seen.insert(device.clone()) {
            self.sample += 1;
            seen.clear();
            seen.insert(device.clone());
        }
        self.seen = seen;
        let base = if let Some(b) = self.base_ns {
            b
        } else {
            let b = self.directives.time_ns(ctx)?;
            self.base_ns = Some(b);
            b
        };
        let delay_ns = self.delay_ms.unwrap_or(DEFAULT_DELAY_MS).saturating_mul(1_000_000);
        let time_ns = base.saturating_add(self.sample.saturating_mul(delay_ns));
        let host_name = self.directives.host(ctx);
        let host = ctx.samples.host(&host_name);
        let dev = ctx.samples.device(&device);
        for (i, value) in parsed {
            let name = self.columns.get(i).map_or("", |(n, _)| n.as_str());
            let (counter, multiply, scale, is_counter) = match vocabulary::lookup(Namespace::Dcgmi, name) {
                Some(m) => (m.def.name, m.multiply, m.scale, m.def.kind == Kind::Counter),
                None => (name, 1, 1, false),
            };
            let counter = ctx.samples.counter(counter);
            ctx.push(&Sample {
                time_ns,
                host,
                device: dev,
                port: None,
                priority: None,
                counter,
                value: value.multiplied(multiply),
                scale,
                is_counter,
            })?;
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let line = line.trim_end();
        let t = line.trim_start();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(cols) = header_columns(line) {
            self.columns = cols;
            return Ok(());
        }
        if t == "ID" || (t.starts_with("ID ") && !self.columns.is_empty()) {
            return Ok(()); // the units line under the header
        }
        if let Some(ms) = echoed_delay_ms(t) {
            self.delay_ms = Some(ms);
            return Ok(());
        }
        if self.directives.apply_line(t) {
            self.base_ns = None;
            self.sample = 0;
            self.seen.clear();
            return Ok(());
        }
        if t.starts_with('#') || prompt_command(t).is_some() || t.starts_with("dmon was stopped") {
            return Ok(());
        }
        if line.chars().any(|c| c.is_control() && c != '\t') {
            return ctx.bad_record(pos, "printable text", raw);
        }
        if self.columns.is_empty() {
            return ctx.bad_record(pos, "a `#Entity <field> ...` header before the rows", raw);
        }
        self.row(line, raw, pos, ctx)
    }
}

impl LineReader for DcgmiDmonReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let cols = header_columns("#Entity   PCITX        PCIRX").expect("header");
        assert_eq!(cols, vec![("PCITX".to_owned(), 10), ("PCIRX".to_owned(), 23)]);
        assert!(header_columns("#Entity").is_none());
        assert!(header_columns("# Entity PCITX").is_none());
        assert!(header_columns("#Entity a=b").is_none());
    }

    #[test]
    fn entities() {
        assert_eq!(device_name("GPU 0").as_deref(), Some("gpu0"));
        assert_eq!(device_name("GPU-I 12").as_deref(), Some("gpu-i12"));
        assert_eq!(device_name("SW 0 LINK 3").as_deref(), Some("sw0-link3"));
        assert_eq!(device_name("GPU").as_deref(), None);
        assert_eq!(device_name("GPU x").as_deref(), None);
        assert_eq!(device_name("0 GPU").as_deref(), None);
    }

    #[test]
    fn delays() {
        assert_eq!(echoed_delay_ms("$ dcgmi dmon -i 0 -e 230,450 -d 1000 -c 3"), Some(1000));
        assert_eq!(echoed_delay_ms("dcgmi dmon -e 1002,1003 -c 10 -d 10000"), Some(10000));
        assert_eq!(echoed_delay_ms("dcgmi dmon -e 1002"), None);
        assert_eq!(echoed_delay_ms("dcgmi dmon -d -5"), None);
        assert_eq!(echoed_delay_ms("nvidia-smi dmon -d 5"), None);
    }

    #[test]
    fn detection() {
        assert!(looks_like("#Entity    SMACT\nID\nGPU 0      N/A\n"));
        assert!(looks_like("# dcgmi dmon -e 1009\n#Entity   PCITX\nID\nGPU 0  12\n"));
        assert!(!looks_like("#Entity    SMACT\nGPU 0 1\n"));
        assert!(!looks_like("# HELP x y\n# TYPE x gauge\nx 1\n"));
        assert!(!looks_like(""));
    }
}

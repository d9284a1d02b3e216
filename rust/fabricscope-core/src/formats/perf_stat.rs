//! `perf stat` output for CXL PMU events (kernel `drivers/perf/cxl_pmu.c`,
//! `Documentation/admin-guide/perf/cxl.rst`): `perf stat -a -e cxl_pmu_mem0.0/clock_ticks/ ...`,
//! as CSV (`-x,`) or the human table, totals or intervals (`-I <ms>`).
//!
//! ```text
//! # started on Wed Dec  2 14:00:00 2026
//!      1.001044469,96757023244321,,cxl_pmu_mem0.0/h2d_req_snpcur/,1001044469,100.00,,
//!      1.001044469,<not counted>,,cxl_pmu_mem0.0/clock_ticks/,0,100.00,,
//!      96,757,023,244,321      cxl_pmu_mem0.0/h2d_req_snpcur/
//! ```
//!
//! * Device: the PMU (`cxl_pmu_mem0.0`, the 0th CPMU of mem0); counter: `cxl_<event>` (registered
//!   events resolve through the vocabulary, others keep `cxl_<event>`). Only `cxl_pmu_*` events
//!   are read; other events in the same run are skipped.
//! * The value is the field before the (empty) unit in CSV, or the token before the event in the
//!   table, whose locale thousands separators (`,`) are removed. `<not counted>` and
//!   `<not supported>` are null.
//! * Interval mode prints per-interval deltas: they are summed into cumulative counters, with a
//!   zero at the start, so rates come out of the rate engine as for any counter. Time = start +
//!   the interval stamp. Totals (no `-I`) are one value over the run: stamped at start +
//!   `seconds time elapsed` with a zero at the start when both are known, else at the start.
//! * Start: the `# started on <ctime>` line (local time without zone: read as UTC, warned), else a
//!   timestamp line, else the driver's fallback. Host: `# host:` lines or the argument.

use ahash::AHashMap;

use crate::error::{Position, Result};
use crate::formats::common::parse_started;
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use crate::vocabulary::{Namespace, lookup};

/// True when the first bytes look like `perf stat` output with CXL PMU events.
pub fn looks_like(text: &str) -> bool {
    text.lines().take(400).any(|l| split_event(l).is_some())
}

/// Find a `cxl_pmu_mem<X>.<Y>/<event>/` reference in a line: (pmu, event).
fn split_event(line: &str) -> Option<(&str, &str)> {
    let at = line.find("cxl_pmu_")?;
    let rest = &line[at..];
    let (pmu, after) = rest.split_once('/')?;
    let (event, _) = after.split_once('/')?;
    let pmu_ok = pmu.len() > "cxl_pmu_".len()
        && pmu["cxl_pmu_".len()..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_');
    let ev_ok = !event.is_empty() && event.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'=');
    (pmu_ok && ev_ok).then_some((pmu, event))
}

/// One reading: value (None = not counted), interval stamp in seconds.
type Reading<'a> = (&'a str, &'a str, Option<u64>, Option<f64>);

/// Parse one line into a reading; `Err` names what was expected.
fn parse_line(t: &str) -> std::result::Result<Option<Reading<'_>>, &'static str> {
    let Some((pmu, event)) = split_event(t) else { return Ok(None) };
    let value_of = |s: &str| -> std::result::Result<Option<u64>, &'static str> {
        let s = s.trim();
        if s.starts_with("<not") || s == "counted>" || s == "supported>" {
            return Ok(None);
        }
        let digits: String = s.chars().filter(|c| *c != ',').collect();
        digits.parse::<u64>().map(Some).map_err(|_| "an integer count, `<not counted>` or `<not supported>`")
    };
    let stamp_of = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0 && s.contains('.'));
    let event_start = t.find("cxl_pmu_").unwrap_or(0);
    let head = &t[..event_start];
    if head.contains(',') && head.trim_end().ends_with(',') {
        // CSV: [interval,]value,unit,event,...
        let before = head.trim_end();
        let fields: Vec<&str> = before.strip_suffix(',').unwrap_or(before).split(',').collect();
        let (value, stamp) = match fields.as_slice() {
            [v, _unit] => (value_of(v)?, None),
            [s, v, _unit] => (value_of(v)?, stamp_of(s)),
            _ => return Err("`[interval,]value,unit,event` CSV fields"),
        };
        return Ok(Some((pmu, event, value, stamp)));
    }
    // Human table: [interval] value event
    let words: Vec<&str> = head.split_whitespace().collect();
    let (value, stamp) = match words.as_slice() {
        [v] => (value_of(v)?, None),
        [s, v] if stamp_of(s).is_some() => (value_of(v)?, stamp_of(s)),
        ["<not", c] | ["<not", c, ..] if c.ends_with('>') => (None, None),
        [s, "<not", _] => (None, stamp_of(s)),
        _ => return Err("`[interval] <count> <event>`"),
    };
    Ok(Some((pmu, event, value, stamp)))
}

/// Streaming reader for `perf stat` CXL PMU output.
#[derive(Default)]
pub struct PerfStatReader {
    directives: DirectiveState,
    start_ns: Option<i64>,
    elapsed_s: Option<f64>,
    /// Cumulative sums of interval deltas per (pmu, event).
    sums: AHashMap<(String, String), u64>,
    /// Totals (no `-I`) waiting for the elapsed time.
    totals: Vec<(String, String, Option<u64>)>,
    warned: bool,
}

impl PerfStatReader {
    /// A reader for one input.
    pub fn new() -> Self {
        PerfStatReader::default()
    }

    fn base(&mut self, ctx: &mut ReadContext<'_>) -> Result<i64> {
        match self.start_ns {
            Some(t) => Ok(t),
            None => self.directives.time_ns(ctx),
        }
    }

    fn push(&mut self, pmu: &str, event: &str, time_ns: i64, value: Value, ctx: &mut ReadContext<'_>) -> Result<()> {
        let name = lookup(Namespace::PerfStat, event).map_or_else(|| format!("cxl_{event}"), |m| m.def.name.to_owned());
        let host_name = self.directives.host(ctx);
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(pmu);
        let counter = ctx.samples.counter(&name);
        ctx.push(&Sample {
            time_ns,
            host,
            device,
            port: None,
            priority: None,
            counter,
            value,
            scale: 1,
            is_counter: true,
        })
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(s) = t.strip_prefix("# started on") {
            match parse_started(s) {
                Some(ns) => {
                    if !self.warned {
                        self.warned = true;
                        ctx.warn("perf stat `# started on` is local time without a zone: read as UTC");
                    }
                    self.start_ns = Some(ns);
                }
                None => return ctx.bad_record(pos, "`# started on <ctime>`", raw),
            }
            return Ok(());
        }
        if let Some(s) = t.strip_suffix("seconds time elapsed") {
            self.elapsed_s = s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
            return Ok(());
        }
        match parse_line(t) {
            Ok(Some((pmu, event, value, stamp))) => {
                let (pmu, event) = (pmu.to_owned(), event.to_owned());
                if let Some(s) = stamp {
                    let base = self.base(ctx)?;
                    let key = (pmu.clone(), event.clone());
                    if !self.sums.contains_key(&key) {
                        self.push(&pmu, &event, base, Value::U64(0), ctx)?;
                    }
                    let time_ns = base.saturating_add((s * 1e9).round() as i64);
                    let sum = self.sums.entry(key).or_insert(0);
                    let v = match value {
                        Some(d) => {
                            *sum = sum.saturating_add(d);
                            Value::U64(*sum)
                        }
                        None => Value::Null,
                    };
                    self.push(&pmu, &event, time_ns, v, ctx)
                } else {
                    self.totals.push((pmu, event, value));
                    Ok(())
                }
            }
            Ok(None) => {
                self.directives.apply_line(t);
                // Other events, the `Performance counter stats` title, metric lines: not ours.
                Ok(())
            }
            Err(expected) => ctx.bad_record(pos, expected, raw),
        }
    }
}

impl LineReader for PerfStatReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if self.totals.is_empty() {
            return Ok(());
        }
        let base = self.base(ctx)?;
        let end = match (self.start_ns, self.elapsed_s) {
            (Some(_), Some(e)) => Some(base.saturating_add((e * 1e9).round() as i64)),
            _ => None,
        };
        for (pmu, event, value) in std::mem::take(&mut self.totals) {
            let v = value.map_or(Value::Null, Value::U64);
            match end {
                Some(end) => {
                    self.push(&pmu, &event, base, Value::U64(0), ctx)?;
                    self.push(&pmu, &event, end, v, ctx)?;
                }
                None => self.push(&pmu, &event, base, v, ctx)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_table_lines() {
        assert_eq!(
            parse_line("1.001044469,96757023244321,,cxl_pmu_mem0.0/h2d_req_snpcur/,1001044469,100.00,,"),
            Ok(Some(("cxl_pmu_mem0.0", "h2d_req_snpcur", Some(96_757_023_244_321), Some(1.001_044_469))))
        );
        assert_eq!(
            parse_line("<not counted>,,cxl_pmu_mem0.0/clock_ticks/,0,100.00,,"),
            Ok(Some(("cxl_pmu_mem0.0", "clock_ticks", None, None)))
        );
        assert_eq!(
            parse_line("96,757,023,244,321      cxl_pmu_mem0.0/h2d_req_snpcur/"),
            Ok(Some(("cxl_pmu_mem0.0", "h2d_req_snpcur", Some(96_757_023_244_321), None)))
        );
        assert_eq!(
            parse_line("<not supported>      cxl_pmu_mem1.0/m2s_req_memrd/"),
            Ok(Some(("cxl_pmu_mem1.0", "m2s_req_memrd", None, None)))
        );
        assert!(parse_line("12x34 cxl_pmu_mem0.0/clock_ticks/").is_err());
        assert_eq!(parse_line("1,234 cycles"), Ok(None));
        assert_eq!(parse_started(" Wed Dec  2 14:00:00 2026"), Some(1_796_220_000_000_000_000));
    }
}

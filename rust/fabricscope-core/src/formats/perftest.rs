//! perftest results (`ib_write_bw`, `ib_read_lat`, `ib_send_bw`, `ib_atomic_bw`, ...), client or
//! server side, into the side table `perftest_results` (one row per run and message size).
//!
//! Layout (linux-rdma/perftest `src/perftest_parameters.h`, `RESULT_FMT*`, `REPORT_FMT*`):
//!
//! ```text
//! ---------------------------------------------------------------------------------------
//!                     RDMA_Write BW Test
//!  Dual-port       : OFF        Device         : mlx5_0
//!  Number of qps   : 1        Transport type : IB
//!  Mtu             : 4096[B]
//!  Link type       : Ethernet
//! ---------------------------------------------------------------------------------------
//!  #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
//!  65536      664644           0.00               11615.50             0.185848
//! ---------------------------------------------------------------------------------------
//! ```
//!
//! * A `... BW Test` / `... Latency Test` title starts a run (`run` 0, 1, ... in file order); the
//!   title gives `test` (`write_bw`, `read_lat`, `send_bw`, `atomic_bw`; bidirectional runs get
//!   `_bidirectional`, their bandwidth is both directions summed) and `kind`.
//! * Banner `key : value` pairs (two per line, TAB or space separated) give `device`,
//!   `link_type` (`IB`/`Ethernet`), `mtu_bytes`, `qps`.
//! * Columns are found by header text: `BW peak[..]`, `BW average[..]`, `MsgRate[Mpps]`, `t_min`,
//!   `t_max`, `t_typical`, `t_avg`, `t_stdev`, `99% percentile`, `99.9% percentile`; per-port,
//!   `#sl` and `CPU_Util` columns are skipped. `MB/sec` and `MiB/sec` are 2^20 B/s
//!   (`format_factor = 0x100000`), `Gb/sec` is 1e9 bit/s; stored as Gbit/s.
//! * Duration mode (`-D`, or the `WARNING: BW peak won't be measured` line) prints peak `0.00`:
//!   `duration_mode` is set and the peak is null.
//! * Latency columns are `%-7.2f` without a guaranteed separator, so wide values fuse
//!   (`2465.901216.65`): a row one value short is repaired by splitting two-decimal numbers.
//! * A result block runs from a ` #bytes #iterations ...` header to the dashed line after its
//!   rows. Lines inside it that do not start with a digit (`Conflicting CPU frequency` warnings)
//!   are skipped; a digit-led line that does not fit the header is a bad record naming the header
//!   and the value counts. Outside a block nothing is a row: terminal transcripts (shell prompts,
//!   command lines, `history` lines such as `  12  ib_write_bw -d mlx5_0`, server and client
//!   output of several runs) are read for their result blocks only. A digit-led line after a test
//!   banner but before its header is a bad record: the header is missing.
//! * Host and time: `# host:`/timestamp lines, else the driver's fallbacks.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt16Array, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Position, Result};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;

/// Name of the results table.
pub const RESULTS_TABLE: &str = "perftest_results";

/// Schema of `perftest_results`.
pub fn results_schema() -> SchemaRef {
    let f64n = |n: &str| Field::new(n, DataType::Float64, true);
    Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        Field::new("time", DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())), true),
        Field::new("run", DataType::UInt32, false),
        Field::new("test", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("device", DataType::Utf8, true),
        Field::new("port", DataType::UInt16, true),
        Field::new("link_type", DataType::Utf8, true),
        Field::new("mtu_bytes", DataType::UInt32, true),
        Field::new("qps", DataType::UInt32, true),
        Field::new("duration_mode", DataType::Boolean, false),
        Field::new("size_bytes", DataType::UInt64, false),
        Field::new("iterations", DataType::UInt64, false),
        f64n("bw_peak_gbit_per_s"),
        f64n("bw_average_gbit_per_s"),
        f64n("msg_rate_mpps"),
        f64n("lat_min_us"),
        f64n("lat_max_us"),
        f64n("lat_typical_us"),
        f64n("lat_avg_us"),
        f64n("lat_stdev_us"),
        f64n("lat_p99_us"),
        f64n("lat_p99_9_us"),
    ]))
}

/// What a header column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Bytes,
    Iterations,
    BwPeak,
    BwAvg,
    MsgRate,
    LatMin,
    LatMax,
    LatTypical,
    LatAvg,
    LatStdev,
    LatP99,
    LatP999,
    Other,
}

/// A parsed results header: the columns and the bandwidth unit factor to Gbit/s.
#[derive(Debug, Clone, PartialEq)]
struct Header {
    cols: Vec<Col>,
    gbit_factor: f64,
    /// The header as printed, for error messages.
    text: String,
}

/// Bandwidth unit text to Gbit/s: MB and MiB are both 2^20 B/s in perftest.
fn unit_factor(unit: &str) -> Option<f64> {
    match unit {
        "MB/sec" | "MiB/sec" => Some(1_048_576.0 * 8.0 / 1e9),
        "Gb/sec" => Some(1.0),
        _ => None,
    }
}

/// Parse a ` #bytes #iterations ...` header.
fn parse_header(line: &str) -> Option<Header> {
    let t = line.trim();
    if !t.starts_with("#bytes") && !t.starts_with("#threads") && !t.starts_with("#sl") {
        return None;
    }
    if !t.contains("#iterations") {
        return None;
    }
    // Join the multi-word column names into single tokens before splitting.
    let joined = t
        .replace("BW peak", "BW_peak")
        .replace("BW average", "BW_average")
        .replace("BW Port", "BW_Port")
        .replace("MsgRate Port", "MsgRate_Port")
        .replace("99.9% percentile", "p99.9")
        .replace("99% percentile", "p99")
        .replace("tps average", "tps_average");
    let mut factor = None;
    let cols = joined
        .split_whitespace()
        .map(|tok| {
            let name = tok.split('[').next().unwrap_or(tok);
            let unit = tok.split_once('[').map(|(_, u)| u.trim_end_matches(']'));
            match name {
                "#bytes" => Col::Bytes,
                "#iterations" => Col::Iterations,
                "BW_peak" | "BW_average" => {
                    if let Some(f) = unit.and_then(unit_factor) {
                        factor = Some(f);
                    }
                    if name == "BW_peak" { Col::BwPeak } else { Col::BwAvg }
                }
                "MsgRate" => Col::MsgRate,
                "t_min" => Col::LatMin,
                "t_max" => Col::LatMax,
                "t_typical" => Col::LatTypical,
                "t_avg" => Col::LatAvg,
                "t_stdev" => Col::LatStdev,
                "p99" => Col::LatP99,
                "p99.9" => Col::LatP999,
                _ => Col::Other,
            }
        })
        .collect::<Vec<_>>();
    if !cols.contains(&Col::Bytes) || !cols.contains(&Col::Iterations) {
        return None;
    }
    let has_bw = cols.contains(&Col::BwAvg);
    if has_bw && factor.is_none() {
        return None; // a bandwidth column with an unknown unit: refuse rather than guess
    }
    Some(Header { cols, gbit_factor: factor.unwrap_or(1.0), text: t.split_whitespace().collect::<Vec<_>>().join(" ") })
}

/// Split fused `%.2f` numbers (`2465.901216.65` → `2465.90`, `1216.65`).
fn split_fused(tok: &str) -> Option<Vec<&str>> {
    // Only ASCII digits and dots qualify, so every slice below falls on a character boundary.
    if !tok.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let mut out = Vec::new();
    let mut rest = tok;
    while !rest.is_empty() {
        let dot = rest.find('.')?;
        let end = dot + 3;
        if dot == 0 || end > rest.len() || !rest.as_bytes()[dot + 1..end].iter().all(u8::is_ascii_digit) {
            return None;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    (out.len() >= 2).then_some(out)
}

/// `RDMA_Write BW Test` → (`write_bw`, `bw`); `Send Latency Test` → (`send_lat`, `lat`).
fn parse_title(t: &str) -> Option<(String, &'static str)> {
    let kind = if t.ends_with(" BW Test") {
        "bw"
    } else if t.ends_with(" Latency Test") {
        "lat"
    } else {
        return None;
    };
    let lower = t.to_ascii_lowercase();
    let verb = if lower.starts_with("rdma_write") {
        "write"
    } else if lower.starts_with("rdma_read") {
        "read"
    } else if lower.starts_with("send") {
        "send"
    } else if lower.starts_with("atomic") {
        "atomic"
    } else if lower.starts_with("raw") {
        "raw_ethernet"
    } else {
        return None;
    };
    let mut test = format!("{verb}_{kind}");
    if lower.contains("bidirectional") {
        test.push_str("_bidirectional");
    }
    Some((test, kind))
}

/// The test an echoed command line runs (`ib_write_bw -d mlx5_0 10.0.0.1`, `$ ib_read_lat`,
/// `numactl -N 0 /usr/bin/ib_send_bw -b`), with its `-d`/`--ib-dev` device: what names a run
/// whose banner was not pasted. `None` unless a word is a perftest program.
fn test_from_command(t: &str) -> Option<((String, &'static str), Option<String>)> {
    let cmd = crate::formats::common::prompt_command(t).unwrap_or(t);
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let (at, name) = words.iter().enumerate().find_map(|(i, w)| {
        let base = w.rsplit('/').next().unwrap_or(w);
        let rest = base.strip_prefix("ib_").or_else(|| base.strip_prefix("raw_").map(|_| base))?;
        Some((i, rest))
    })?;
    let (verb, kind) = name.rsplit_once('_')?;
    let kind: &'static str = match kind {
        "bw" => "bw",
        "lat" => "lat",
        _ => return None,
    };
    let verb = match verb {
        "write" | "read" | "send" | "atomic" => verb,
        "raw_ethernet" => "raw_ethernet",
        _ => return None,
    };
    let args = words.get(at + 1..).unwrap_or(&[]);
    let mut test = format!("{verb}_{kind}");
    if args.iter().any(|a| *a == "-b" || *a == "--bidirectional") {
        test.push_str("_bidirectional");
    }
    let device = args.iter().enumerate().find_map(|(i, a)| {
        if *a == "-d" || *a == "--ib-dev" {
            return args.get(i + 1).map(|d| (*d).to_owned());
        }
        a.strip_prefix("--ib-dev=").map(str::to_owned)
    });
    Some(((test, kind), device))
}

/// Split a banner line into `key : value` pairs (` Dual-port : OFF\t\tDevice : mlx5_0`).
fn banner_pairs(line: &str) -> Vec<(String, String)> {
    let parts: Vec<&str> = line.split(" : ").collect();
    let parts: Vec<&str> = if parts.len() > 1 { parts } else { line.split(':').collect() };
    let mut out = Vec::new();
    if parts.len() < 2 {
        return out;
    }
    let mut key = parts[0].trim().to_owned();
    for (i, part) in parts.iter().enumerate().skip(1) {
        if i == parts.len() - 1 {
            out.push((key.clone(), part.trim().to_owned()));
            break;
        }
        // "OFF\t\tDevice         " → value "OFF", next key "Device".
        let p = part.trim_end();
        let split_at = p.find('\t').or_else(|| p.find("   "));
        if let Some(at) = split_at {
            out.push((key.clone(), p[..at].trim().to_owned()));
            p[at..].trim().clone_into(&mut key);
        } else {
            out.push((key.clone(), p.trim().to_owned()));
            key = String::new();
        }
    }
    out
}

/// True when the first bytes look like perftest output.
pub fn looks_like(text: &str) -> bool {
    text.lines().take(400).any(|l| {
        let t = l.trim();
        parse_header(t).is_some()
            || (t.starts_with("RDMA_") || t.starts_with("Send ") || t.starts_with("Atomic")) && parse_title(t).is_some()
    })
}

#[derive(Debug, Default, Clone)]
struct RunInfo {
    test: Option<(String, &'static str)>,
    device: Option<String>,
    link_type: Option<String>,
    mtu: Option<u32>,
    qps: Option<u32>,
    duration: bool,
}

#[derive(Debug, Default)]
struct Rows {
    host: Vec<String>,
    time: Vec<Option<i64>>,
    run: Vec<u32>,
    test: Vec<String>,
    kind: Vec<&'static str>,
    device: Vec<Option<String>>,
    link_type: Vec<Option<String>>,
    mtu: Vec<Option<u32>>,
    qps: Vec<Option<u32>>,
    duration: Vec<bool>,
    size: Vec<u64>,
    iters: Vec<u64>,
    vals: [Vec<Option<f64>>; 10],
}

/// Streaming reader for perftest output.
#[derive(Default)]
pub struct PerftestReader {
    directives: DirectiveState,
    info: RunInfo,
    header: Option<Header>,
    run: Option<u32>,
    next_run: u32,
    rows: Rows,
    /// Rows read since the current header (a dashed line after them closes the result block).
    block_rows: usize,
    /// A test banner was read and its results header has not come yet.
    awaiting_header: bool,
    /// Digit-led lines outside any result block (shell history, pasted text): not rows.
    outside_lines: u64,
}

impl PerftestReader {
    /// A reader for one input.
    pub fn new() -> Self {
        PerftestReader::default()
    }

    fn row(&mut self, t: &str, h: &Header, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        let mut toks: Vec<&str> = t.split_whitespace().collect();
        if toks.len() < h.cols.len() {
            let mut repaired = Vec::with_capacity(h.cols.len());
            for tok in &toks {
                match split_fused(tok) {
                    Some(parts) => repaired.extend(parts),
                    None => repaired.push(tok),
                }
            }
            toks = repaired;
        }
        // A trailing CPU_Util value without a header column is tolerated; anything else is not.
        if toks.len() != h.cols.len() && toks.len() != h.cols.len() + 1 {
            let expected = format!(
                "a perftest results row with one value per column of its header `{}` ({} values; this row has {})",
                h.text,
                h.cols.len(),
                toks.len()
            );
            return ctx.bad_record(pos, &expected, raw);
        }
        let mut size = None;
        let mut iters = None;
        let mut vals: [Option<f64>; 10] = [None; 10];
        for (col, tok) in h.cols.iter().zip(&toks) {
            let idx = match col {
                Col::Bytes => {
                    size = tok.parse::<u64>().ok();
                    continue;
                }
                Col::Iterations => {
                    iters = tok.parse::<u64>().ok();
                    continue;
                }
                Col::Other => continue,
                Col::BwPeak => 0,
                Col::BwAvg => 1,
                Col::MsgRate => 2,
                Col::LatMin => 3,
                Col::LatMax => 4,
                Col::LatTypical => 5,
                Col::LatAvg => 6,
                Col::LatStdev => 7,
                Col::LatP99 => 8,
                Col::LatP999 => 9,
            };
            match tok.parse::<f64>() {
                Ok(v) if v.is_finite() => vals[idx] = Some(v),
                _ => return ctx.bad_record(pos, "a number in every perftest result column", raw),
            }
        }
        let (Some(size), Some(iters)) = (size, iters) else {
            return ctx.bad_record(pos, "integer #bytes and #iterations", raw);
        };
        for v in vals.iter_mut().take(2).flatten() {
            *v *= h.gbit_factor;
        }
        // Duration mode reports peak 0.00: no peak was measured.
        let duration = self.info.duration || (vals[0] == Some(0.0) && vals[1].is_some_and(|a| a > 0.0));
        if duration {
            vals[0] = None;
        }
        let run = if let Some(r) = self.run {
            r
        } else {
            let r = self.next_run;
            self.next_run += 1;
            self.run = Some(r);
            r
        };
        let (test, kind) = self.info.test.clone().unwrap_or_else(|| {
            let kind = if h.cols.contains(&Col::BwAvg) { "bw" } else { "lat" };
            (format!("unknown_{kind}"), kind)
        });
        let time = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let r = &mut self.rows;
        r.host.push(host);
        r.time.push(Some(time));
        r.run.push(run);
        r.test.push(test);
        r.kind.push(kind);
        r.device.push(self.info.device.clone());
        r.link_type.push(self.info.link_type.clone());
        r.mtu.push(self.info.mtu);
        r.qps.push(self.info.qps);
        r.duration.push(duration);
        r.size.push(size);
        r.iters.push(iters);
        for (dst, v) in r.vals.iter_mut().zip(vals) {
            dst.push(v);
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if !t.is_empty() && t.bytes().all(|b| b == b'-') {
            // The dashed line after the rows closes the result block: what follows (a shell
            // prompt, history lines, the next command) is not a row.
            if self.header.is_some() && self.block_rows > 0 {
                self.header = None;
                self.block_rows = 0;
            }
            return Ok(());
        }
        if t.is_empty() || t.starts_with('*') {
            return Ok(());
        }
        if let Some(title) = parse_title(t) {
            // A new test banner: a new run with fresh banner facts.
            self.info = RunInfo { test: Some(title), ..RunInfo::default() };
            self.header = None;
            self.run = None;
            self.block_rows = 0;
            self.awaiting_header = true;
            return Ok(());
        }
        if t.contains("BW peak won't be measured") {
            self.info.duration = true;
            return Ok(());
        }
        if let Some(h) = parse_header(t) {
            // A second header in the same banner (server and client tables) stays one run.
            self.header = Some(h);
            self.block_rows = 0;
            self.awaiting_header = false;
            return Ok(());
        }
        if t.starts_with(|c: char| c.is_ascii_digit())
            && let Some(h) = self.header.clone()
        {
            self.block_rows += 1;
            return self.row(t, &h, pos, raw, ctx);
        }
        if self.directives.apply_line(t) {
            return Ok(());
        }
        if !t.starts_with(|c: char| c.is_ascii_digit())
            && let Some((test, device)) = test_from_command(t)
        {
            // An echoed command starts a run: it names the test when no banner follows.
            self.info = RunInfo { test: Some(test), device, ..RunInfo::default() };
            self.header = None;
            self.run = None;
            self.block_rows = 0;
            return Ok(());
        }
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            if self.awaiting_header {
                // Inside a test's output, before its results header: the header is missing.
                let title = self.info.test.as_ref().map_or("test", |(name, _)| name.as_str());
                let expected =
                    format!("the ` #bytes #iterations ...` results header of the {title} run before its rows");
                return ctx.bad_record(pos, &expected, raw);
            }
            // Shell history (`  12  ib_write_bw -d mlx5_0`) or other text outside a result block.
            self.outside_lines += 1;
            return Ok(());
        }
        for (k, v) in banner_pairs(t) {
            match k.as_str() {
                "Device" => self.info.device = Some(v),
                "Link type" => self.info.link_type = Some(v),
                "Number of qps" => self.info.qps = v.parse().ok(),
                "Mtu" => self.info.mtu = v.trim_end_matches("[B]").trim().parse().ok(),
                "Duration" => self.info.duration = true,
                _ => {}
            }
        }
        Ok(())
    }

    fn emit(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        let r = std::mem::take(&mut self.rows);
        if r.size.is_empty() {
            return Ok(());
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(r.host)),
            Arc::new(TimestampNanosecondArray::from(r.time).with_timezone("UTC")),
            Arc::new(UInt32Array::from(r.run)),
            Arc::new(StringArray::from(r.test)),
            Arc::new(StringArray::from(r.kind)),
            Arc::new(StringArray::from(r.device)),
            Arc::new(UInt16Array::from(vec![None::<u16>; r.size.len()])),
            Arc::new(StringArray::from(r.link_type)),
            Arc::new(UInt32Array::from(r.mtu)),
            Arc::new(UInt32Array::from(r.qps)),
            Arc::new(BooleanArray::from(r.duration)),
            Arc::new(UInt64Array::from(r.size)),
            Arc::new(UInt64Array::from(r.iters)),
        ];
        for v in r.vals {
            columns.push(Arc::new(Float64Array::from(v)));
        }
        let batch = RecordBatch::try_new(results_schema(), columns)
            .map_err(|e| Error::InvalidArgument(format!("arrow (perftest table): {e}")))?;
        ctx.emit_table(RESULTS_TABLE, batch);
        Ok(())
    }
}

impl LineReader for PerftestReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))?;
        if self.rows.size.len() >= ctx.options().batch_rows {
            self.emit(ctx)?;
        }
        Ok(())
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if self.next_run == 0 && self.outside_lines > 0 {
            ctx.warn(format!(
                "{} number-led lines outside any perftest result block (between a ` #bytes #iterations` header and its closing dashed line) were not read as results",
                self.outside_lines
            ));
        }
        self.emit(ctx)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn commands_name_the_test() {
        let ((test, kind), dev) = test_from_command("ib_write_bw -d mlx5_0 -F 10.0.0.1").expect("echo");
        assert_eq!((test.as_str(), kind, dev.as_deref()), ("write_bw", "bw", Some("mlx5_0")));
        let ((test, _), dev) = test_from_command("$ /usr/bin/ib_read_lat --ib-dev=mlx5_1").expect("prompt");
        assert_eq!((test.as_str(), dev.as_deref()), ("read_lat", Some("mlx5_1")));
        let ((test, _), _) = test_from_command("root@h:~# ib_send_bw -b").expect("bidirectional");
        assert_eq!(test, "send_bw_bidirectional");
        assert!(test_from_command("ib_write_foo -d x").is_none());
        assert!(test_from_command("ibstat").is_none());
        assert!(test_from_command("Device : mlx5_0").is_none());
    }

    use super::*;

    #[test]
    fn headers_and_units() {
        let h = parse_header(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]")
            .expect("h");
        assert_eq!(h.cols, vec![Col::Bytes, Col::Iterations, Col::BwPeak, Col::BwAvg, Col::MsgRate]);
        assert!((h.gbit_factor - 0.008_388_608).abs() < 1e-12);
        let g =
            parse_header(" #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]")
                .expect("qos");
        assert_eq!(g.cols[1], Col::Other);
        assert!((g.gbit_factor - 1.0).abs() < f64::EPSILON);
        let l = parse_header(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ").expect("lat");
        assert_eq!(l.cols.len(), 9);
        assert_eq!(l.cols[8], Col::LatP999);
        assert!(parse_header(" #bytes #iterations BW peak[furlongs] BW average[furlongs]").is_none());
    }

    #[test]
    fn fused_numbers_split() {
        assert_eq!(split_fused("2465.901216.65"), Some(vec!["2465.90", "1216.65"]));
        assert_eq!(split_fused("453.06"), None);
        assert_eq!(split_fused("12.3x.45"), None);
        assert_eq!(split_fused("1.2\u{e9}5.00"), None);
        assert_eq!(split_fused("1.\u{e9}"), None);
    }

    #[test]
    fn titles_and_banner() {
        assert_eq!(parse_title("RDMA_Write BW Test"), Some(("write_bw".into(), "bw")));
        assert_eq!(parse_title("RDMA_Write Bidirectional BW Test"), Some(("write_bw_bidirectional".into(), "bw")));
        assert_eq!(parse_title("Send Latency Test"), Some(("send_lat".into(), "lat")));
        assert_eq!(parse_title("RDMA_Write Post List BW Test"), Some(("write_bw".into(), "bw")));
        let p = banner_pairs(" Dual-port       : OFF\t\tDevice         : mlx5_0");
        assert_eq!(p, vec![("Dual-port".into(), "OFF".into()), ("Device".into(), "mlx5_0".into())]);
        let p = banner_pairs(" Number of qps   : 1            Transport type : IB");
        assert_eq!(p, vec![("Number of qps".into(), "1".into()), ("Transport type".into(), "IB".into())]);
    }
}

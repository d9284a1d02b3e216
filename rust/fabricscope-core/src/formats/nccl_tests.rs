//! nccl-tests results (`all_reduce_perf`, `all_gather_perf`, ...): the text log and the `-J` JSON
//! report. Both become two side tables, `nccl_results` (one row per run, size and placement) and
//! `nccl_ranks` (the rank → host → GPU map the log prints); no samples.
//!
//! Text layout (NVIDIA/nccl-tests `src/util.cu`, `writeDeviceReport`/`writeResultHeader`):
//!
//! ```text
//! # Collective test starting: all_reduce_perf
//! # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
//! #  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3
//! #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//!   8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0
//! # Avg bus bandwidth    : 70.742
//! # Collective test concluded: all_reduce_perf
//! ```
//!
//! * Columns are found by the header's tokens, never by position: the first `time`/`cputime`,
//!   `algbw`, `busbw`, `#wrong` (or the old float `error`) belong to out-of-place, the second to
//!   in-place; `redop`/`root` may be missing (old all_gather), per-iteration `i_*` columns, RCCL's
//!   trailing columns and a `timestamp` column (`%Y-%m-%d %H:%M:%S`, two tokens) may be present.
//!   Old versions print an empty `redop` cell for collectives without a reduction (alltoall): a
//!   row one token short of a header with `redop` is read without that column (redop null).
//! * Numbers go through `getFloatStr` (`%.2f`, `%.1f`, `%.0f`, then `%.1e`): parsed as floats.
//!   `#wrong` is `N/A` with `-c 0` (null); the old `error` column is a maximum error, not a count
//!   (null in `wrong`).
//! * A run starts at `# Collective test starting`, a `# nThread` preamble or a table header after
//!   rows; `# Avg bus bandwidth : X` closes it and fills `avg_busbw_gb_per_s` of its rows. Several
//!   runs and collectives per log are numbered `run` 0, 1, ... in file order.
//! * The collective comes from the starting/concluded lines, a command echo naming `*_perf`, the
//!   file name, or else is inferred from busbw/algbw, redop and root (`unknown` when ambiguous).
//! * Host: rank 0's host from the `Rank` lines, else `# host:`/argument fallbacks. Time: the row's
//!   timestamp column (local time without a zone in the log: read as UTC, warned), else a
//!   timestamp line, else the driver's fallback.

use std::io::Read;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Position, Result};
use crate::formats::{BinaryReader, DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;

/// Name of the results table.
pub const RESULTS_TABLE: &str = "nccl_results";
/// Name of the ranks table.
pub const RANKS_TABLE: &str = "nccl_ranks";
/// Rows held for one run before they are emitted without its footer (a real sweep has ~40).
const MAX_PENDING_ROWS: usize = 1 << 20;

/// The collectives nccl-tests ships, as program stems (`all_reduce_perf` → `all_reduce`).
const COLLECTIVES: &[&str] = &[
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "alltoall",
    "sendrecv",
    "scatter",
    "gather",
    "hypercube",
];

fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// Schema of `nccl_results`.
pub fn results_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        Field::new("time", time_type(), true),
        Field::new("run", DataType::UInt32, false),
        Field::new("collective", DataType::Utf8, false),
        Field::new("size_bytes", DataType::UInt64, false),
        Field::new("count", DataType::UInt64, false),
        Field::new("dtype", DataType::Utf8, false),
        Field::new("redop", DataType::Utf8, true),
        Field::new("root", DataType::Int32, true),
        Field::new("placement", DataType::Utf8, false),
        Field::new("time_us", DataType::Float64, false),
        Field::new("algbw_gb_per_s", DataType::Float64, false),
        Field::new("busbw_gb_per_s", DataType::Float64, false),
        Field::new("wrong", DataType::Int64, true),
        Field::new("n_ranks", DataType::UInt32, true),
        Field::new("n_nodes", DataType::UInt32, true),
        Field::new("gpus_per_node", DataType::UInt32, true),
        Field::new("avg_busbw_gb_per_s", DataType::Float64, true),
    ]))
}

/// Schema of `nccl_ranks`.
pub fn ranks_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("run", DataType::UInt32, false),
        Field::new("rank", DataType::UInt32, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("pid", DataType::UInt32, true),
        Field::new("cuda_device", DataType::UInt32, false),
        Field::new("bus_id", DataType::Utf8, true),
        Field::new("gpu_name", DataType::Utf8, true),
    ]))
}

/// One measured placement of one size.
#[derive(Debug, Clone, PartialEq)]
struct Measure {
    time_us: f64,
    algbw: f64,
    busbw: f64,
    wrong: Option<i64>,
}

/// One table row before the run's facts (hosts, footer) are known.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    time_ns: Option<i64>,
    size: u64,
    count: u64,
    dtype: String,
    redop: Option<String>,
    root: Option<i32>,
    out_of_place: Option<Measure>,
    in_place: Option<Measure>,
}

/// One rank line.
#[derive(Debug, Clone, PartialEq)]
struct Rank {
    index: u32,
    host: String,
    pid: Option<u32>,
    device: u32,
    bus_id: Option<String>,
    gpu_name: Option<String>,
}

/// What one run collected.
#[derive(Debug, Default)]
struct Run {
    collective: Option<String>,
    ranks: Vec<Rank>,
    rows: Vec<Row>,
    avg_busbw: Option<f64>,
}

impl Run {
    fn is_empty(&self) -> bool {
        self.ranks.is_empty() && self.rows.is_empty() && self.avg_busbw.is_none()
    }
}

/// Column indices of one placement block: time, algbw, busbw, and `#wrong`/`error` with whether
/// it is a count (`#wrong`) or the old maximum error (`error`).
type Place = (usize, usize, usize, Option<(usize, bool)>);

/// Column indices of a results header.
#[derive(Debug, Clone, Default)]
struct Header {
    n_tokens: usize,
    size: usize,
    count: usize,
    dtype: usize,
    redop: Option<usize>,
    root: Option<usize>,
    /// Out-of-place, then in-place columns.
    places: Vec<Place>,
    timestamp: bool,
}

/// Parse a `# size count type ...` header line into column indices.
fn parse_header(line: &str) -> Option<Header> {
    let body = line.trim_start().strip_prefix('#')?;
    let tokens: Vec<&str> = body.split_whitespace().collect();
    let find = |name: &str| tokens.iter().position(|t| *t == name);
    let (size, count) = (find("size")?, find("count")?);
    let dtype = find("type")?;
    let mut h = Header {
        n_tokens: tokens.len(),
        size,
        count,
        dtype,
        redop: find("redop"),
        root: find("root"),
        places: Vec::new(),
        timestamp: false,
    };
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i], "time" | "cputime") {
            let algbw = tokens[i + 1..].iter().position(|t| *t == "algbw").map(|p| p + i + 1)?;
            let busbw = tokens[algbw + 1..].iter().position(|t| *t == "busbw").map(|p| p + algbw + 1)?;
            let wrong = match tokens.get(busbw + 1) {
                Some(&"#wrong") => Some((busbw + 1, true)),
                Some(&"error") => Some((busbw + 1, false)),
                _ => None,
            };
            h.places.push((i, algbw, busbw, wrong));
            i = busbw + 1;
        } else {
            i += 1;
        }
    }
    if h.places.is_empty() || h.places.len() > 2 {
        return None;
    }
    if tokens.last() == Some(&"timestamp") {
        h.timestamp = true;
        h.n_tokens -= 1;
    }
    Some(h)
}

impl Header {
    /// The same header without its `redop` column, for rows that leave that cell blank (old
    /// nccl-tests print `%6s` of an empty string for alltoall, so the row has one token less).
    fn without_redop(&self) -> Option<Header> {
        let col = self.redop?;
        let shift = |i: usize| if i > col { i - 1 } else { i };
        Some(Header {
            n_tokens: self.n_tokens - 1,
            size: shift(self.size),
            count: shift(self.count),
            dtype: shift(self.dtype),
            redop: None,
            root: self.root.map(shift),
            places: self
                .places
                .iter()
                .map(|&(t, a, b, w)| (shift(t), shift(a), shift(b), w.map(|(i, count)| (shift(i), count))))
                .collect(),
            timestamp: self.timestamp,
        })
    }
}

/// `all_reduce_perf`, `/opt/nccl-tests/build/all_gather_perf_mpi` → the collective.
fn collective_from_program(word: &str) -> Option<String> {
    let stem = word.rsplit('/').next()?;
    let base = stem.split("_perf").next()?;
    if !stem.contains("_perf") {
        return None;
    }
    COLLECTIVES.iter().find(|c| **c == base).map(|c| (*c).to_owned())
}

/// A collective named in a file name (`all_gather_8gpu.log`), longest names first so `reduce`
/// never shadows `reduce_scatter`.
fn collective_from_name(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let mut by_len: Vec<&&str> = COLLECTIVES.iter().collect();
    by_len.sort_by_key(|c| std::cmp::Reverse(c.len()));
    by_len.into_iter().find(|c| lower.contains(**c)).map(|c| (*c).to_owned())
}

/// Infer the collective of a run from the busbw/algbw factor (doc/PERFORMANCE.md), redop and root.
fn infer_collective(rows: &[Row], n_ranks: Option<u32>) -> String {
    let Some(n) = n_ranks.filter(|n| *n > 1).map(f64::from) else { return "unknown".into() };
    let Some(best) = rows
        .iter()
        .filter_map(|r| r.out_of_place.as_ref().or(r.in_place.as_ref()).map(|m| (r, m)))
        .filter(|(_, m)| m.algbw > 0.0)
        .max_by(|a, b| a.1.algbw.total_cmp(&b.1.algbw))
    else {
        return "unknown".into();
    };
    let (row, m) = best;
    let factor = m.busbw / m.algbw;
    let near = |f: f64| (factor - f).abs() <= 0.03 * f;
    let reduces = row.redop.as_deref().is_some_and(|op| op != "none");
    let rooted = row.root.is_some_and(|r| r >= 0);
    let name = if near(2.0 * (n - 1.0) / n) && reduces {
        "all_reduce"
    } else if near((n - 1.0) / n) && reduces {
        "reduce_scatter"
    } else if near(1.0) && rooted {
        if reduces { "reduce" } else { "broadcast" }
    } else {
        "unknown"
    };
    name.into()
}

/// Parse one data row against a header. `None` when the row does not fit.
fn parse_row(line: &str, h: &Header) -> std::result::Result<(Row, Option<String>), &'static str> {
    let mut tokens: Vec<&str> = line.split_whitespace().collect();
    let mut stamp = None;
    if h.timestamp && tokens.len() == h.n_tokens + 2 {
        let time = tokens.pop().unwrap_or_default();
        let date = tokens.pop().unwrap_or_default();
        stamp = Some(format!("{date} {time}"));
    }
    let blank_redop;
    let h = if tokens.len() + 1 == h.n_tokens && h.redop.is_some_and(|r| r > h.dtype) {
        blank_redop = h.without_redop();
        blank_redop.as_ref().unwrap_or(h)
    } else {
        h
    };
    if tokens.len() != h.n_tokens {
        return Err("a results row with one value per header column");
    }
    let int = |i: usize| tokens[i].parse::<u64>().map_err(|_| "an integer size and count");
    let float = |i: usize| -> std::result::Result<f64, &'static str> {
        let v = tokens[i].parse::<f64>().map_err(|_| "a number (time, algbw, busbw)")?;
        if v.is_finite() { Ok(v) } else { Err("a finite number") }
    };
    let mut row = Row {
        time_ns: None,
        size: int(h.size)?,
        count: int(h.count)?,
        dtype: tokens[h.dtype].to_owned(),
        redop: h.redop.map(|i| tokens[i].to_owned()),
        root: match h.root {
            Some(i) => Some(tokens[i].parse::<i32>().map_err(|_| "an integer root")?),
            None => None,
        },
        out_of_place: None,
        in_place: None,
    };
    for (k, (t, a, b, w)) in h.places.iter().enumerate() {
        let wrong = match w {
            Some((i, true)) if tokens[*i] != "N/A" => {
                let v = float(*i).map_err(|_| "a #wrong count or N/A")?;
                Some(v as i64)
            }
            _ => None,
        };
        let m = Measure { time_us: float(*t)?, algbw: float(*a)?, busbw: float(*b)?, wrong };
        if k == 0 && h.places.len() == 2 {
            row.out_of_place = Some(m);
        } else if k == 0 {
            // A single placement block: nccl-tests prints out-of-place first.
            row.out_of_place = Some(m);
        } else {
            row.in_place = Some(m);
        }
    }
    Ok((row, stamp))
}

/// `#  Rank  0 Group  0 Pid   6899 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3` (and the
/// old form without `Group`, bus ids like `[0x07]`).
fn parse_rank(line: &str) -> Option<Rank> {
    let body = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = body.strip_prefix("Rank")?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let rank = words.first()?.parse::<u32>().ok()?;
    let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1));
    let host = (*after("on")?).to_owned();
    let pid = after("Pid").and_then(|p| p.parse::<u32>().ok());
    let device = after("device")?.parse::<u32>().ok()?;
    let (bus_id, gpu_name) = match (rest.find('['), rest.find(']')) {
        (Some(a), Some(b)) if b > a => {
            let name = rest[b + 1..].trim();
            (Some(rest[a + 1..b].to_owned()), (!name.is_empty()).then(|| name.to_owned()))
        }
        _ => (None, None),
    };
    Some(Rank { index: rank, host, pid, device, bus_id, gpu_name })
}

/// Remove the prefix `mpirun --tag-output` puts on every line (`[1,0]<stdout>:`) or the `[0] `
/// of other launchers, so tagged logs read like plain ones.
fn strip_mpi_tag(t: &str) -> &str {
    let Some(rest) = t.strip_prefix('[') else { return t };
    let Some(close) = rest.find(']') else { return t };
    if close == 0 || close > 24 || !rest[..close].bytes().all(|b| b.is_ascii_digit() || b == b',') {
        return t;
    }
    let after = &rest[close + 1..];
    let after = after.strip_prefix("<stdout>:").or_else(|| after.strip_prefix("<stderr>:")).unwrap_or(after);
    after.trim()
}

/// `2025-06-01 12:00:00` (nccl-tests `TIME_STRING_FORMAT`, local time) as ns, read as UTC.
fn parse_local_stamp(s: &str) -> Option<i64> {
    let t = chrono::NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%d %H:%M:%S").ok()?;
    t.and_utc().timestamp_nanos_opt()
}

/// Length of a `mpirun --tag-output` tag at the start of `s`: `[1,0]<stdout>:` (Open MPI 4) or
/// `[prterun-host-123@1,0]<stdout>:` (Open MPI 5); `None` when `s` does not start with one.
fn tag_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix('[')?;
    let close = body.find(']')?;
    let inside = &body[..close];
    let ids = inside.rsplit_once('@').map_or(inside, |(_, ids)| ids);
    let (job, rank) = ids.split_once(',')?;
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    if close > 80 || inside.contains(char::is_whitespace) || !digits(job) || !digits(rank) {
        return None;
    }
    let after = &body[close + 1..];
    let stream = ["<stdout>:", "<stderr>:"].into_iter().find(|p| after.starts_with(p))?;
    Some(1 + close + 1 + stream.len())
}

/// Split a physical line into its tagged chunks (tag, text). A line without a leading tag is one
/// untagged chunk; text before the first tag is kept with an empty tag.
fn split_tagged(line: &str) -> Vec<(&str, &str)> {
    let mut chunks = Vec::new();
    let mut tag = "";
    let mut start = 0usize;
    let mut i = 0usize;
    let bytes = line.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b'['
            && let Some(n) = tag_len(&line[i..])
        {
            if i > start || !tag.is_empty() {
                chunks.push((tag, &line[start..i]));
            }
            tag = &line[i..i + n];
            start = i + n;
            i += n;
            continue;
        }
        i += 1;
    }
    chunks.push((tag, &line[start..]));
    chunks
}

/// Remove Slurm's `srun --label` prefix (`0: `, ` 12: `: the task id, right-aligned).
fn strip_launcher_label(t: &str) -> &str {
    let Some((id, rest)) = t.split_once(':') else { return t };
    let id = id.trim_start();
    let labelled = !id.is_empty() && id.len() <= 6 && id.bytes().all(|b| b.is_ascii_digit());
    if labelled && (rest.is_empty() || rest.starts_with(' ')) { rest.trim_start() } else { t }
}

/// True when the first bytes look like an nccl-tests text log.
pub fn looks_like_log(text: &str) -> bool {
    let mut score = 0;
    for line in text.lines().take(400) {
        let t = strip_launcher_label(strip_mpi_tag(line.trim()));
        if t.starts_with("# Collective test starting:") || t.starts_with("# nccl-tests version") {
            return true;
        }
        if t.starts_with("# nThread ") && t.contains(" nGpus ") {
            score += 2;
        } else if parse_rank(t).is_some() || t.starts_with("# Avg bus bandwidth") {
            score += 1;
        } else if t.starts_with('#') && parse_header(t).is_some() {
            score += 2;
        }
        if score >= 2 {
            return true;
        }
    }
    false
}

/// True when a JSON document's head is an nccl-tests `-J` report.
pub fn looks_like_json(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') && t.contains("\"nccl_version\"") && (t.contains("\"start_time\"") || t.contains("\"results\""))
}

/// A row with its run's facts resolved.
struct Queued {
    run: u32,
    host: String,
    collective: String,
    row: Row,
    n_ranks: Option<u32>,
    n_nodes: Option<u32>,
    per_node: Option<u32>,
    avg_busbw: Option<f64>,
}

/// Shared state of the text and JSON readers: run bookkeeping and the two tables.
#[derive(Default)]
struct Tables {
    results: Vec<Queued>,
    ranks: Vec<(u32, Rank)>,
}

impl Tables {
    /// Close a run: resolve host, collective and topology, and queue its rows.
    fn close(&mut self, run_index: u32, run: Run, file_collective: Option<&str>, host: &str) {
        let n_ranks = (!run.ranks.is_empty()).then_some(run.ranks.len() as u32);
        let mut hosts: Vec<&str> = run.ranks.iter().map(|r| r.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        let n_nodes = (!hosts.is_empty()).then_some(hosts.len() as u32);
        let per_node = match (n_ranks, n_nodes) {
            (Some(r), Some(n)) if n > 0 => Some(r.div_ceil(n)),
            _ => None,
        };
        let run_host = run.ranks.iter().min_by_key(|r| r.index).map_or_else(|| host.to_owned(), |r| r.host.clone());
        let collective = run
            .collective
            .clone()
            .or_else(|| file_collective.map(str::to_owned))
            .unwrap_or_else(|| infer_collective(&run.rows, n_ranks));
        for r in run.ranks {
            self.ranks.push((run_index, r));
        }
        for row in run.rows {
            self.results.push(Queued {
                run: run_index,
                host: run_host.clone(),
                collective: collective.clone(),
                row,
                n_ranks,
                n_nodes,
                per_node,
                avg_busbw: run.avg_busbw,
            });
        }
    }

    fn emit(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        let arrow = |e: arrow_schema::ArrowError| Error::InvalidArgument(format!("arrow (nccl tables): {e}"));
        if !self.results.is_empty() {
            let mut cols: (Vec<String>, Vec<Option<i64>>, Vec<u32>, Vec<String>) = Default::default();
            let (mut size, mut count, mut dtype, mut redop, mut root, mut place) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut time_us, mut alg, mut bus, mut wrong) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut nr, mut nn, mut gpn, mut avg) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for q in self.results.drain(..) {
                let row = &q.row;
                for (name, m) in [("out_of_place", &row.out_of_place), ("in_place", &row.in_place)] {
                    let Some(m) = m else { continue };
                    cols.0.push(q.host.clone());
                    cols.1.push(row.time_ns);
                    cols.2.push(q.run);
                    cols.3.push(q.collective.clone());
                    size.push(row.size);
                    count.push(row.count);
                    dtype.push(row.dtype.clone());
                    redop.push(row.redop.clone());
                    root.push(row.root);
                    place.push(name);
                    time_us.push(m.time_us);
                    alg.push(m.algbw);
                    bus.push(m.busbw);
                    wrong.push(m.wrong);
                    nr.push(q.n_ranks);
                    nn.push(q.n_nodes);
                    gpn.push(q.per_node);
                    avg.push(q.avg_busbw);
                }
            }
            let columns: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(cols.0)),
                Arc::new(TimestampNanosecondArray::from(cols.1).with_timezone("UTC")),
                Arc::new(UInt32Array::from(cols.2)),
                Arc::new(StringArray::from(cols.3)),
                Arc::new(UInt64Array::from(size)),
                Arc::new(UInt64Array::from(count)),
                Arc::new(StringArray::from(dtype)),
                Arc::new(StringArray::from(redop)),
                Arc::new(Int32Array::from(root)),
                Arc::new(StringArray::from(place)),
                Arc::new(Float64Array::from(time_us)),
                Arc::new(Float64Array::from(alg)),
                Arc::new(Float64Array::from(bus)),
                Arc::new(Int64Array::from(wrong)),
                Arc::new(UInt32Array::from(nr)),
                Arc::new(UInt32Array::from(nn)),
                Arc::new(UInt32Array::from(gpn)),
                Arc::new(Float64Array::from(avg)),
            ];
            ctx.emit_table(RESULTS_TABLE, RecordBatch::try_new(results_schema(), columns).map_err(arrow)?);
        }
        if !self.ranks.is_empty() {
            let ranks = std::mem::take(&mut self.ranks);
            let columns: Vec<ArrayRef> = vec![
                Arc::new(ranks.iter().map(|(run, _)| *run).collect::<UInt32Array>()),
                Arc::new(ranks.iter().map(|(_, r)| r.index).collect::<UInt32Array>()),
                Arc::new(ranks.iter().map(|(_, r)| Some(r.host.as_str())).collect::<StringArray>()),
                Arc::new(ranks.iter().map(|(_, r)| r.pid).collect::<UInt32Array>()),
                Arc::new(ranks.iter().map(|(_, r)| r.device).collect::<UInt32Array>()),
                Arc::new(ranks.iter().map(|(_, r)| r.bus_id.as_deref()).collect::<StringArray>()),
                Arc::new(ranks.iter().map(|(_, r)| r.gpu_name.as_deref()).collect::<StringArray>()),
            ];
            ctx.emit_table(RANKS_TABLE, RecordBatch::try_new(ranks_schema(), columns).map_err(arrow)?);
        }
        Ok(())
    }
}

/// Streaming reader for nccl-tests text logs.
#[derive(Default)]
pub struct NcclTestsReader {
    directives: DirectiveState,
    header: Option<Header>,
    run: Run,
    run_index: u32,
    /// The current run has printed its footer (the next header or row starts a new run).
    closed: bool,
    /// A command echo or file name named the collective of the whole file.
    file_collective: Option<String>,
    name_checked: bool,
    tables: Tables,
    stamp_warned: bool,
    /// Per `mpirun --tag-output` tag, the start of a line whose rest has not arrived yet.
    partial: ahash::AHashMap<String, String>,
}

/// Longest line fragment held per rank while waiting for its end (a row is ~120 bytes).
const MAX_PARTIAL_BYTES: usize = 64 << 10;

impl NcclTestsReader {
    /// A reader for one input.
    pub fn new() -> Self {
        NcclTestsReader::default()
    }

    /// Finish the current run and start the next.
    fn next_run(&mut self, ctx: &mut ReadContext<'_>) {
        let run = std::mem::take(&mut self.run);
        if !run.is_empty() {
            // The rank lines name the host; the fallback (which may warn) only when they do not.
            let host = if run.ranks.is_empty() { self.directives.host(ctx) } else { String::new() };
            self.tables.close(self.run_index, run, self.file_collective.as_deref(), &host);
            self.run_index += 1;
        }
        self.closed = false;
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        if !self.name_checked {
            self.name_checked = true;
            let name = ctx.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            self.file_collective = collective_from_name(&name);
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let line = self.untag(line, ctx);
        self.logical_line(&line, raw, pos, ctx)
    }

    /// Reassemble a `mpirun --tag-output` line. Open MPI tags each chunk a rank writes, and
    /// nccl-tests writes a row in pieces (size and type first, the timings after the run), so a
    /// physical line can hold several tagged chunks: `[1,0]<stdout>:  1048576 ... -1[1,0]<stdout>:
    /// 583.4 ...` or, when another rank writes in between, `[1,0]<stdout>:  1048576 ... -1[1,1]
    /// <stdout>:host:21 NCCL INFO ...` with rank 0's rest on a later line. Every chunk but the last
    /// is the start of its rank's next line; the last ends a line.
    fn untag(&mut self, line: &str, ctx: &mut ReadContext<'_>) -> String {
        let chunks = split_tagged(line);
        let Some(((last_tag, last), earlier)) = chunks.split_last() else {
            return line.to_owned();
        };
        for (tag, text) in earlier {
            let buf = self.partial.entry((*tag).to_owned()).or_default();
            if buf.len() + text.len() > MAX_PARTIAL_BYTES {
                ctx.warn(format!("mpirun output of {tag} without a line end for {MAX_PARTIAL_BYTES} bytes: dropped"));
                buf.clear();
                continue;
            }
            buf.push_str(text);
        }
        let mut out = self.partial.remove(*last_tag).unwrap_or_default();
        out.push_str(last);
        out
    }

    fn logical_line(&mut self, line: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let t = strip_launcher_label(strip_mpi_tag(line.trim()));
        if t.is_empty() {
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix('#') {
            let body = rest.trim();
            if let Some(prog) = body.strip_prefix("Collective test starting:") {
                self.next_run(ctx);
                self.run.collective = collective_from_program(prog.trim());
                return Ok(());
            }
            if let Some(prog) = body.strip_prefix("Collective test concluded:") {
                if self.run.collective.is_none() {
                    self.run.collective = collective_from_program(prog.trim());
                }
                self.next_run(ctx);
                return Ok(());
            }
            if body.starts_with("nThread ") {
                if !self.run.rows.is_empty() || self.closed {
                    self.next_run(ctx);
                }
                return Ok(());
            }
            if let Some(v) = body.strip_prefix("Avg bus bandwidth") {
                let value = v.trim_start().trim_start_matches(':').split_whitespace().next().unwrap_or("");
                match value.parse::<f64>() {
                    Ok(x) if x.is_finite() => self.run.avg_busbw = Some(x),
                    _ => return ctx.bad_record(pos, "`# Avg bus bandwidth : <number>`", raw),
                }
                self.closed = true;
                return Ok(());
            }
            if let Some(r) = parse_rank(t) {
                if !self.run.rows.is_empty() || self.closed {
                    self.next_run(ctx);
                }
                self.run.ranks.push(r);
                return Ok(());
            }
            if let Some(h) = parse_header(t) {
                if !self.run.rows.is_empty() || self.closed {
                    // A new table after rows: the next run of the same log (`-N`, appended logs).
                    let ranks = if self.closed { Vec::new() } else { self.run.ranks.clone() };
                    let collective = self.run.collective.clone();
                    self.next_run(ctx);
                    self.run.ranks = ranks;
                    self.run.collective = collective;
                }
                self.header = Some(h);
                return Ok(());
            }
            // `# host: NAME`, `# 1764686822`, other comments.
            self.directives.apply_line(t);
            return Ok(());
        }
        // Command echoes (`mpirun ... all_reduce_perf -b 8`) name the collective.
        if t.contains("_perf") && !t.starts_with(|c: char| c.is_ascii_digit()) {
            if let Some(c) = t.split_whitespace().find_map(collective_from_program) {
                self.file_collective = Some(c);
            }
            return Ok(());
        }
        let Some(h) = &self.header else {
            self.directives.apply_line(t);
            return Ok(());
        };
        if !t.starts_with(|c: char| c.is_ascii_digit()) || starts_with_ordinal(t) {
            // nccl INFO/WARN lines, MPI chatter, warnings between rows (Open MPI's help text
            // between runs lists `1st MCA variable: ...`, `2nd MCA variable: ...`).
            self.directives.apply_line(t);
            return Ok(());
        }
        match parse_row(t, h) {
            Ok((mut row, stamp)) => {
                if self.closed {
                    let collective = self.run.collective.clone();
                    self.next_run(ctx);
                    self.run.collective = collective;
                }
                row.time_ns = match stamp {
                    Some(s) => match parse_local_stamp(&s) {
                        Some(ns) => {
                            if !self.stamp_warned {
                                self.stamp_warned = true;
                                ctx.warn("nccl-tests timestamps carry no time zone: read as UTC");
                            }
                            Some(ns)
                        }
                        None => return ctx.bad_record(pos, "a `%Y-%m-%d %H:%M:%S` timestamp", raw),
                    },
                    None => Some(self.directives.time_ns(ctx)?),
                };
                if self.run.rows.len() >= MAX_PENDING_ROWS {
                    let collective = self.run.collective.clone();
                    let ranks = self.run.ranks.clone();
                    self.next_run(ctx);
                    self.run.collective = collective;
                    self.run.ranks = ranks;
                }
                self.run.rows.push(row);
                Ok(())
            }
            Err(expected) => {
                // A line that starts with a number but is not a row: a timestamp line, or damage.
                if self.directives.apply_line(t) {
                    return Ok(());
                }
                ctx.bad_record(pos, expected, raw)
            }
        }
    }
}

/// Whether a line starts with an English ordinal (`1st`, `2nd`, `3rd`, `11th`): prose, never a
/// results row (whose first cell is a byte count).
fn starts_with_ordinal(t: &str) -> bool {
    let first = t.split_whitespace().next().unwrap_or("");
    let digits = first.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(first.get(digits..), Some("st" | "nd" | "rd" | "th"))
}

impl LineReader for NcclTestsReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        let mut cut: Vec<String> = self.partial.drain().filter(|(_, v)| !v.trim().is_empty()).map(|(k, _)| k).collect();
        if !cut.is_empty() {
            cut.sort();
            ctx.warn(format!("the output of {} ends without a line end: its last line is not read", cut.join(", ")));
        }
        self.next_run(ctx);
        self.tables.emit(ctx)
    }
}

/// Reader for the `-J` JSON report (`src/util.cu`, `JSON_FILE_VERSION 2`).
#[derive(Default)]
pub struct NcclJsonReader;

fn json_f64(v: Option<&serde_json::Value>) -> Option<f64> {
    match v? {
        serde_json::Value::Number(n) => n.as_f64().filter(|x| x.is_finite()),
        _ => None, // "nan" strings and nulls
    }
}

impl NcclJsonReader {
    fn document(v: &serde_json::Value, ctx: &mut ReadContext<'_>, tables: &mut Tables) -> Result<()> {
        let pos = Position { line: None, byte_offset: 0 };
        let Some(obj) = v.as_object() else {
            return ctx.bad_record(pos, "an nccl-tests JSON object", b"not an object");
        };
        let program = obj.get("args").and_then(|a| a.get(0)).and_then(|a| a.as_str()).unwrap_or("");
        let mut run = Run { collective: collective_from_program(program), ..Run::default() };
        if let Some(devices) = obj.get("config").and_then(|c| c.get("devices")).and_then(|d| d.as_array()) {
            for d in devices {
                let rank = d.get("rank").and_then(serde_json::Value::as_u64).and_then(|r| u32::try_from(r).ok());
                let host = d.get("hostname").and_then(|h| h.as_str());
                let device = d.get("device").and_then(serde_json::Value::as_u64).and_then(|r| u32::try_from(r).ok());
                let (Some(rank), Some(host), Some(device)) = (rank, host, device) else {
                    ctx.bad_record(pos, "a device with rank, hostname and device", d.to_string().as_bytes())?;
                    continue;
                };
                run.ranks.push(Rank {
                    index: rank,
                    host: host.to_owned(),
                    pid: d.get("pid").and_then(serde_json::Value::as_u64).and_then(|p| u32::try_from(p).ok()),
                    device,
                    bus_id: d.get("device_hex").and_then(|s| s.as_str()).map(str::to_owned),
                    gpu_name: d.get("device_info").and_then(|s| s.as_str()).map(str::to_owned),
                });
            }
        }
        // start_time is local time without a zone, like the text timestamps.
        let time_ns = match obj.get("start_time").and_then(|s| s.as_str()).and_then(parse_local_stamp) {
            Some(t) => {
                ctx.warn("nccl-tests JSON start_time carries no time zone: read as UTC");
                t
            }
            None => ctx.fallback_time_ns()?,
        };
        let measure = |m: Option<&serde_json::Value>| -> Option<Measure> {
            let m = m?;
            let time_us = json_f64(m.get("time")).or_else(|| json_f64(m.get("cpu_time")))?;
            Some(Measure {
                time_us,
                algbw: json_f64(m.get("alg_bw"))?,
                busbw: json_f64(m.get("bus_bw"))?,
                wrong: json_f64(m.get("nwrong")).map(|w| w as i64),
            })
        };
        for r in obj.get("results").and_then(|r| r.as_array()).map(Vec::as_slice).unwrap_or_default() {
            let size = r.get("size").and_then(serde_json::Value::as_u64);
            let count = r.get("count").and_then(serde_json::Value::as_u64);
            let dtype = r.get("type").and_then(|t| t.as_str());
            let (Some(size), Some(count), Some(dtype)) = (size, count, dtype) else {
                ctx.bad_record(pos, "a result with size, count and type", r.to_string().as_bytes())?;
                continue;
            };
            let (oop, ip) = (measure(r.get("out_of_place")), measure(r.get("in_place")));
            if oop.is_none() && ip.is_none() {
                ctx.bad_record(pos, "out_of_place or in_place with time, alg_bw, bus_bw", r.to_string().as_bytes())?;
                continue;
            }
            // root is written as a padded string ("    -1").
            let root = match r.get("root") {
                Some(serde_json::Value::String(s)) => s.trim().parse::<i32>().ok(),
                Some(serde_json::Value::Number(n)) => n.as_i64().and_then(|x| i32::try_from(x).ok()),
                _ => None,
            };
            run.rows.push(Row {
                time_ns: Some(time_ns),
                size,
                count,
                dtype: dtype.to_owned(),
                redop: r.get("redop").and_then(|s| s.as_str()).map(|s| s.trim().to_owned()),
                root,
                out_of_place: oop,
                in_place: ip,
            });
        }
        run.avg_busbw = json_f64(obj.get("average_bus_bandwidth").and_then(|a| a.get("bandwidth")));
        let host = if run.ranks.is_empty() { ctx.fallback_host() } else { String::new() };
        let file = ctx.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // One report per file: one run.
        tables.close(0, run, collective_from_name(&file).as_deref(), &host);
        Ok(())
    }
}

impl BinaryReader for NcclJsonReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = crate::formats::read_bounded(head, rest, ctx, "nccl-tests JSON report size")?;
        let total = buf.len() as u64;
        let mut tables = Tables::default();
        match serde_json::from_slice::<serde_json::Value>(&buf) {
            Ok(v) => Self::document(&v, ctx, &mut tables)?,
            Err(e) => {
                // nccl-tests leaves the document unterminated when a run dies: say where it stopped.
                let pos = Position { line: Some(e.line() as u64), byte_offset: 0 };
                ctx.bad_record(pos, &format!("a complete nccl-tests JSON report ({e})"), b"")?;
            }
        }
        tables.emit(ctx)?;
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordinals_are_prose() {
        assert!(starts_with_ordinal("1st MCA variable: btl_tcp_if_include"));
        assert!(starts_with_ordinal("2nd MCA variable: btl_tcp_if_exclude"));
        assert!(starts_with_ordinal("23rd x"));
        assert!(!starts_with_ordinal("1024           256     float     sum      -1    61.09"));
        assert!(!starts_with_ordinal("1st"[..0].trim()));
        assert!(!starts_with_ordinal("12ab 3"));
    }

    use super::*;

    #[test]
    fn header_tokens_locate_columns() {
        let h = parse_header("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong").expect("header");
        assert_eq!((h.size, h.count, h.dtype, h.redop, h.root), (0, 1, 2, Some(3), Some(4)));
        assert_eq!(h.places, vec![(5, 6, 7, Some((8, true))), (9, 10, 11, Some((12, true)))]);
        let old = parse_header("#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error").expect("old");
        assert_eq!(old.root, None);
        assert_eq!(old.places[0].3, Some((7, false)));
        assert!(parse_header("# Avg bus bandwidth    : 70.742").is_none());
        assert!(parse_header("#        (B)    (elements)                               (us)  (GB/s)").is_none());
    }

    #[test]
    fn rows_parse_na_and_exponents() {
        let h =
            parse_header("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong").expect("h");
        let (r, _) =
            parse_row("33554432  8388608  float  none  -1  19.56  1715.44  0.00  0  0.78  43046.10  0.00  N/A", &h)
                .expect("row");
        assert_eq!(r.in_place.as_ref().and_then(|m| m.wrong), None);
        assert_eq!(r.out_of_place.as_ref().and_then(|m| m.wrong), Some(0));
        let (r, _) = parse_row("8 2 float sum -1 1.2e+04 0.00 0.00 0 47535 180.71 338.82 0", &h).expect("exp");
        assert_eq!(r.out_of_place.map(|m| m.time_us), Some(12_000.0));
        assert!(parse_row("8 2 float sum -1 1.2 0.00", &h).is_err());
    }

    #[test]
    #[allow(clippy::float_cmp)] // values parsed from text compare exactly
    fn a_blank_redop_cell_is_read_without_the_column() {
        let h = parse_header("#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error").expect("h");
        let (row, _) = parse_row("     1048576         16384   float            571.5    1.83    1.72  0e+00     0.50  2087.88  1957.39  1e+00", &h).expect("row");
        assert_eq!((row.size, row.count, row.dtype.as_str(), row.redop.as_deref()), (1_048_576, 16_384, "float", None));
        let out = row.out_of_place.expect("out");
        assert_eq!((out.time_us, out.algbw, out.busbw), (571.5, 1.83, 1.72));
        assert_eq!(row.in_place.expect("in").busbw, 1957.39);
        // two tokens short is still damage
        assert!(
            parse_row(
                "     1048576         16384   float    571.5    1.83    1.72  0e+00     0.50  2087.88  1957.39",
                &h
            )
            .is_err()
        );
    }

    #[test]
    fn rank_lines_old_and_new() {
        let r =
            parse_rank("#  Rank  8 Group  0 Pid   6733 on ztan-mig-gq73 device  0 [0000:04:00] NVIDIA H100 80GB HBM3")
                .expect("rank");
        assert_eq!((r.index, r.host.as_str(), r.pid, r.device), (8, "ztan-mig-gq73", Some(6733), 0));
        assert_eq!(r.gpu_name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        let r = parse_rank("#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB")
            .expect("old");
        assert_eq!((r.bus_id.as_deref(), r.pid), (Some("0x00"), Some(1320)));
    }

    #[test]
    fn mpi_output_tags_are_stripped() {
        assert_eq!(strip_mpi_tag("[1,0]<stdout>:#  Rank  0 Group"), "#  Rank  0 Group");
        assert_eq!(tag_len("[1,0]<stdout>:x"), Some(14));
        assert_eq!(tag_len("[prterun-h-1@1,12]<stderr>: x"), Some(27));
        assert_eq!(tag_len("[0000:04:00] x"), None);
        assert_eq!(tag_len("[1,0]x"), None);
        assert_eq!(
            split_tagged("[1,0]<stdout>:  8  2 -1[1,1]<stdout>:h:21 INFO"),
            vec![("[1,0]<stdout>:", "  8  2 -1"), ("[1,1]<stdout>:", "h:21 INFO")]
        );
        assert_eq!(split_tagged("plain row"), vec![("", "plain row")]);
        assert_eq!(strip_launcher_label("0: #  Rank  0 Group"), "#  Rank  0 Group");
        assert_eq!(strip_launcher_label(" 12:   1048576  262144"), "1048576  262144");
        assert_eq!(strip_launcher_label("0:"), "");
        assert_eq!(strip_launcher_label("12:00:00"), "12:00:00");
        assert_eq!(strip_launcher_label("host:21:27 [0] NCCL INFO x: y"), "host:21:27 [0] NCCL INFO x: y");
        assert_eq!(strip_mpi_tag("[0]     281.5    0.93"), "281.5    0.93");
        assert_eq!(strip_mpi_tag("[0000:04:00] x"), "[0000:04:00] x");
        assert_eq!(strip_mpi_tag("[\u{e9}] x"), "[\u{e9}] x");
    }

    #[test]
    fn collectives_from_names() {
        assert_eq!(collective_from_program("/opt/src/nccl-tests/build/all_reduce_perf").as_deref(), Some("all_reduce"));
        assert_eq!(collective_from_program("reduce_scatter_perf_mpi").as_deref(), Some("reduce_scatter"));
        assert_eq!(collective_from_program("mpirun"), None);
        assert_eq!(collective_from_name("run-reduce_scatter.log").as_deref(), Some("reduce_scatter"));
    }
}

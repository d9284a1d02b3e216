//! SONiC switch-side PFC and queue counters (sonic-utilities `pfcstat`, `pfcwd`, `queuestat`,
//! Apache-2.0), as `show pfc counters`, `show pfcwd stats` and `show queue counters` print them
//! with python-tabulate's `simple` layout:
//!
//! ```text
//!   Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7
//! ---------  ------  ------  ------  ------  ------  ------  ------  ------
//! Ethernet0   1,200     201     202     203     204     205     206     207
//!
//!       QUEUE       STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP    RX LAST OK/DROP
//! -----------  -----------  -------------------------  ------------  ------------  -----------------  -----------------
//! Ethernet0:3      stormed                        1/0       100/300       100/300              0/200              0/200
//!
//!      Port    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes
//! ---------  -----  --------------  ---------------  -----------  ------------
//! Ethernet0    UC3              52               70           19            76
//! ```
//!
//! One input may hold any of these tables, several times (a support dump, a loop). A row is cut at
//! the columns of the dashed rule under its header (cells of `--history` hold spaces). Numbers
//! carry thousands separators (`1,200`); `N/A` (a port or queue the counters database has no
//! entry for) is unknown: no sample.
//!
//! | table | rows (device = the switch port, priority = the PFC priority) |
//! |---|---|
//! | `Port Rx`/`Port Tx` `PFC0..PFC7` | `rx_pause_frames`/`tx_pause_frames`: PFC frames the switch port received from / sent to its peer |
//! | `--history` (`Port Priority RX Pause Transitions ...`) | `rx_pause_transitions`, `rx_pause_duration_us` |
//! | `QUEUE STATUS STORM DETECTED/RESTORED ...` | the PFC watchdog per queue `<port>:<queue>`: storms detected and restored, packets forwarded and dropped while stormed (`TX`/`RX OK/DROP`, cumulative; `LAST`: of the last storm, gauges), `STATUS` as the gauge `pfcwd_stormed_state` (1 stormed, 0 operational) |
//! | `Port TxQ Counter/pkts ...` | egress queue `UC<q>` packets, bytes and drops; SONiC maps traffic class `q` to queue `q`, so unicast queues 0-7 carry priority `q`; multicast (`MC`), `ALL` and unicast queues above 7 have no PFC priority and are skipped (counted in a warning) |
//!
//! The switch is named by the last `# host:` line or echoed prompt (`admin@leaf01:~$ show pfc
//! counters`), else the host argument, else the file name up to its first dot. Time: timestamp
//! lines, else the driver's fallbacks (`pfcstat`'s `Last cached time was ...` is the time of the
//! baseline it subtracts, not of the counts, and is skipped).

use crate::error::{Position, Result};
use crate::formats::common::prompt_command;
use crate::formats::ib::NameCache;
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use crate::vocabulary::Namespace;

/// A table's kind, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// `Port Rx PFC0 ... PFC7` (`rx` true) or `Port Tx ...`.
    Pfc { rx: bool },
    /// `show pfc counters --history`.
    History,
    /// `show pfcwd stats`.
    Watchdog,
    /// `show queue counters` (the first four counter columns; trimming columns skipped).
    Queue,
}

const PFC_COLUMNS: [&str; 8] = ["PFC0", "PFC1", "PFC2", "PFC3", "PFC4", "PFC5", "PFC6", "PFC7"];
const WATCHDOG_HEADER: &str = "QUEUE STATUS STORM DETECTED/RESTORED TX OK/DROP RX OK/DROP";
const QUEUE_HEADER: &str = "Port TxQ Counter/pkts Counter/bytes Drop/pkts Drop/bytes";
const HISTORY_HEADER: &str = "Port Priority RX Pause Transitions Total RX Pause Time US";

fn table_of(line: &str) -> Option<Table> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if let ["Port", dir @ ("Rx" | "Tx"), rest @ ..] = words.as_slice()
        && *rest == PFC_COLUMNS
    {
        return Some(Table::Pfc { rx: *dir == "Rx" });
    }
    let joined = words.join(" ");
    if joined.starts_with(WATCHDOG_HEADER) {
        return Some(Table::Watchdog);
    }
    if joined.starts_with(QUEUE_HEADER) {
        return Some(Table::Queue);
    }
    if joined.starts_with(HISTORY_HEADER) {
        return Some(Table::History);
    }
    None
}

/// True when one of the first lines is the header of one of these tables.
pub fn looks_like(text: &str) -> bool {
    text.lines().take(40).any(|l| table_of(l).is_some())
}

/// The start (in characters) of each column of a `----  ----` rule, or `None` for another line.
fn rule_columns(line: &str) -> Option<Vec<usize>> {
    let t = line.trim_end();
    if t.is_empty() || !t.chars().all(|c| c == '-' || c == ' ') {
        return None;
    }
    let mut starts = Vec::new();
    let mut prev = ' ';
    for (i, c) in t.chars().enumerate() {
        if c == '-' && prev == ' ' {
            starts.push(i);
        }
        prev = c;
    }
    Some(starts)
}

/// A row's cells, cut at the rule's column starts; `None` when a cell would start inside a word.
fn cells<'a>(text: &'a str, cols: &[usize]) -> Option<Vec<&'a str>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let aligned = cols.iter().skip(1).all(|&c| chars.get(c.wrapping_sub(1)).is_none_or(|(_, ch)| *ch == ' '));
    if !aligned {
        return None;
    }
    let byte_at = |c: usize| chars.get(c).map_or(text.len(), |(b, _)| *b);
    let mut out = Vec::with_capacity(cols.len());
    for (i, &c) in cols.iter().enumerate() {
        let to = cols.get(i + 1).map_or(text.len(), |&n| byte_at(n));
        out.push(text.get(byte_at(c)..to).unwrap_or("").trim());
    }
    Some(out)
}

/// A count cell's value: the number, or `None` for `N/A`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Count(Option<u64>);

/// A count as SONiC prints it: digits with optional thousands separators, or `N/A`. `None`: not a count.
fn count(cell: &str) -> Option<Count> {
    if cell == "N/A" {
        return Some(Count(None));
    }
    let digits: String = cell.chars().filter(|c| *c != ',').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok().map(|n| Count(Some(n)))
}

/// `a/b` counts (`1/0`, `100/300`); `N/A` as both unknown.
fn pair(cell: &str) -> Option<(Option<u64>, Option<u64>)> {
    if cell == "N/A" {
        return Some((None, None));
    }
    let (a, b) = cell.split_once('/')?;
    Some((count(a.trim())?.0, count(b.trim())?.0))
}

/// A port name: one word, no control characters.
fn is_port(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `admin@leaf01:~$ show pfc counters`: the switch's name from the prompt of one of these commands.
fn prompt_host(line: &str) -> Option<String> {
    let cmd = prompt_command(line)?;
    let words: Vec<&str> = cmd.split_whitespace().filter(|w| *w != "sudo").collect();
    let ours = matches!(words.as_slice(), ["show", "pfc" | "pfcwd" | "queue", ..])
        || words.first().is_some_and(|w| ["pfcstat", "pfcwd", "queuestat"].iter().any(|c| w.ends_with(c)));
    if !ours {
        return None;
    }
    let prompt = line.trim().strip_suffix(cmd)?.trim();
    let (_, host) = prompt.split_once('@')?;
    let host = host.split([':', ' ', ']']).next()?.trim();
    (!host.is_empty()).then(|| host.to_owned())
}

/// Where the reader is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Outside,
    /// A header read; its rule comes next.
    Rule(Table, usize),
    /// Rows of a table, cut at these column starts.
    Rows(Table, Vec<usize>),
}

/// Streaming reader for SONiC `show pfc counters`, `show pfcwd stats`, `show queue counters`.
pub struct SonicPfcReader {
    directives: DirectiveState,
    /// The switch a prompt named (a `# host:` line sets the directives' host).
    prompted: Option<String>,
    /// Whether a `# host:` line named the switch.
    named: bool,
    state: State,
    names: NameCache,
    /// Queue rows without a PFC priority (multicast, `ALL`, unicast above 7).
    skipped_queues: u64,
}

impl Default for SonicPfcReader {
    fn default() -> Self {
        SonicPfcReader {
            directives: DirectiveState::default(),
            prompted: None,
            named: false,
            state: State::Outside,
            names: NameCache::new(Namespace::Sonic),
            skipped_queues: 0,
        }
    }
}

impl SonicPfcReader {
    /// A reader for one input.
    pub fn new() -> Self {
        SonicPfcReader::default()
    }

    fn switch(&mut self, ctx: &mut ReadContext<'_>) -> String {
        if let Some(h) = &self.prompted {
            return h.clone();
        }
        if self.named || ctx.host_argument().is_some() {
            return self.directives.host(ctx);
        }
        let file = ctx.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match file.split('.').next().filter(|s| !s.is_empty() && *s != "-") {
            Some(stem) => stem.to_owned(),
            None => self.directives.host(ctx),
        }
    }

    fn push(
        &mut self,
        ctx: &mut ReadContext<'_>,
        (host, device): (i32, i32),
        priority: Option<u8>,
        raw_name: &str,
        value: Option<u64>,
    ) -> Result<()> {
        let Some(v) = value else { return Ok(()) };
        let time_ns = self.directives.time_ns(ctx)?;
        let r = self.names.get(raw_name, ctx);
        ctx.push(&Sample {
            time_ns,
            host,
            device,
            port: None,
            priority,
            counter: r.counter,
            value: Value::U64(v).multiplied(r.multiply),
            scale: r.scale,
            is_counter: r.is_counter,
        })
    }

    fn keys(&mut self, ctx: &mut ReadContext<'_>, port: &str) -> (i32, i32) {
        let switch = self.switch(ctx);
        (ctx.samples.host(&switch), ctx.samples.device(port))
    }

    fn row(&mut self, table: Table, c: &[&str], pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        match table {
            Table::Pfc { rx } => {
                let [port, values @ ..] = c else { return ctx.bad_record(pos, "a port and 8 PFC counts", raw) };
                let parsed: Option<Vec<Count>> = values.iter().map(|v| count(v)).collect();
                let (Some(parsed), true) = (parsed, values.len() == 8 && is_port(port)) else {
                    return ctx.bad_record(pos, "a port and 8 PFC frame counts (digits, `1,200`, or N/A)", raw);
                };
                let keys = self.keys(ctx, port);
                let name = if rx { "Port Rx PFC{p}" } else { "Port Tx PFC{p}" };
                for (p, v) in (0u8..).zip(parsed) {
                    self.push(ctx, keys, Some(p), name, v.0)?;
                }
                Ok(())
            }
            Table::History => {
                const EXPECTED: &str = "a port, `PFC<0-7>`, RX pause transitions and pause time (us)";
                let [port, prio, transitions, total, ..] = c else { return ctx.bad_record(pos, EXPECTED, raw) };
                let prio = prio.strip_prefix("PFC").and_then(|p| p.parse::<u8>().ok()).filter(|p| *p < 8);
                let (Some(prio), Some(tr), Some(us), true) = (prio, count(transitions), count(total), is_port(port))
                else {
                    return ctx.bad_record(pos, EXPECTED, raw);
                };
                let keys = self.keys(ctx, port);
                self.push(ctx, keys, Some(prio), "RX Pause Transitions", tr.0)?;
                self.push(ctx, keys, Some(prio), "Total RX Pause Time US", us.0)
            }
            Table::Watchdog => self.watchdog_row(c, pos, raw, ctx),
            Table::Queue => {
                const EXPECTED: &str = "a port, a queue (`UC<n>`, `MC<n>`, `ALL<n>`) and 4 counts";
                let [port, queue, pkts, bytes, drop_pkts, drop_bytes, ..] = c else {
                    return ctx.bad_record(pos, EXPECTED, raw);
                };
                let values = [count(pkts), count(bytes), count(drop_pkts), count(drop_bytes)];
                let kind = queue.trim_end_matches(|ch: char| ch.is_ascii_digit());
                let index = queue.get(kind.len()..).and_then(|n| n.parse::<u32>().ok());
                if !is_port(port) || !matches!(kind, "UC" | "MC" | "ALL") || index.is_none() || values.contains(&None) {
                    return ctx.bad_record(pos, EXPECTED, raw);
                }
                let prio = match (kind, index) {
                    ("UC", Some(q)) if q < 8 => q as u8,
                    _ => {
                        self.skipped_queues += 1;
                        return Ok(());
                    }
                };
                let keys = self.keys(ctx, port);
                let names = ["UC{p} Counter/pkts", "UC{p} Counter/bytes", "UC{p} Drop/pkts", "UC{p} Drop/bytes"];
                for (name, v) in names.iter().zip(values) {
                    self.push(ctx, keys, Some(prio), name, v.and_then(|c| c.0))?;
                }
                Ok(())
            }
        }
    }

    fn watchdog_row(&mut self, c: &[&str], pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`<port>:<queue>`, a status and `a/b` count pairs";
        let [queue, status, storms, rest @ ..] = c else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some((port, q)) = queue.rsplit_once(':') else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some(q) = q.parse::<u32>().ok() else { return ctx.bad_record(pos, EXPECTED, raw) };
        let state = match *status {
            "stormed" => Some(1),
            "operational" => Some(0),
            "N/A" => None,
            _ => return ctx.bad_record(pos, "a watchdog status `stormed`, `operational` or N/A", raw),
        };
        let pairs: Option<Vec<(Option<u64>, Option<u64>)>> =
            std::iter::once(storms).chain(rest).map(|v| pair(v)).collect();
        let (Some(pairs), true) = (pairs, is_port(port) && rest.len() >= 2) else {
            return ctx.bad_record(pos, EXPECTED, raw);
        };
        if q > 7 {
            // a queue with no PFC priority cannot be paused: the watchdog of a multi-ASIC
            // backplane lists every queue, with nothing to say for these
            self.skipped_queues += 1;
            return Ok(());
        }
        let prio = Some(q as u8);
        let keys = self.keys(ctx, port);
        self.push(ctx, keys, prio, "STATUS", state)?;
        let names = [
            ("STORM DETECTED", "STORM RESTORED"),
            ("TX OK", "TX DROP"),
            ("RX OK", "RX DROP"),
            ("TX LAST OK", "TX LAST DROP"),
            ("RX LAST OK", "RX LAST DROP"),
        ];
        for ((a, b), (va, vb)) in names.iter().zip(pairs) {
            self.push(ctx, keys, prio, a, va)?;
            self.push(ctx, keys, prio, b, vb)?;
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(text) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = text.trim();
        if let Some(table) = table_of(t) {
            self.state = State::Rule(table, t.split("  ").filter(|s| !s.trim().is_empty()).count());
            return Ok(());
        }
        match std::mem::replace(&mut self.state, State::Outside) {
            State::Rule(table, headers) => match rule_columns(text) {
                Some(cols) if cols.len() == headers => {
                    self.state = State::Rows(table, cols);
                    Ok(())
                }
                _ => ctx.bad_record(pos, "the dashed rule under the table header, one group per column", raw),
            },
            State::Rows(table, cols) => {
                if t.is_empty() {
                    // `--history` separates each port's rows by a blank line: the table goes on
                    self.state = State::Rows(table, cols);
                    return Ok(());
                }
                if t.starts_with('#')
                    || t.starts_with("For namespace")
                    || t.starts_with("Last cached time was")
                    || prompt_command(t).is_some()
                    || parse_directive(t).is_some()
                {
                    // the table ended without a blank line: the next command's prompt or a directive
                    return self.outside(t, pos, raw, ctx);
                }
                let Some(c) = cells(text, &cols) else {
                    self.state = State::Rows(table, cols);
                    return ctx.bad_record(pos, "a row aligned to the header's columns", raw);
                };
                let result = self.row(table, &c, pos, raw, ctx);
                self.state = State::Rows(table, cols);
                result
            }
            State::Outside => self.outside(t, pos, raw, ctx),
        }
    }

    fn outside(&mut self, t: &str, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        if t.is_empty() {
            return Ok(());
        }
        if let Some(h) = prompt_host(t) {
            self.prompted = Some(h);
            return Ok(());
        }
        match parse_directive(t) {
            Some(Directive::Time(ts)) => {
                self.directives.set_time(ts);
                return Ok(());
            }
            Some(Directive::Host(h)) => {
                // a `# host:` line names the switch from here on, over an earlier prompt
                self.directives.set_host(h);
                self.named = true;
                self.prompted = None;
                return Ok(());
            }
            Some(Directive::Device(_)) => return Ok(()),
            None => {}
        }
        if t.starts_with('#')
            || prompt_command(t).is_some()
            || t.starts_with("Last cached time was")
            || t.starts_with("For namespace")
            || t.starts_with("Last cleared")
        {
            return Ok(());
        }
        ctx.bad_record(pos, "a `show pfc counters`, `show pfcwd stats` or `show queue counters` table", raw)
    }
}

impl LineReader for SonicPfcReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if self.skipped_queues > 0 {
            ctx.warn(format!(
                "skipped {} queue rows without a PFC priority (multicast, ALL, or a queue above 7)",
                self.skipped_queues
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_their_tables() {
        assert_eq!(
            table_of("  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7"),
            Some(Table::Pfc { rx: true })
        );
        assert_eq!(
            table_of(
                "      QUEUE    STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP    RX LAST OK/DROP"
            ),
            Some(Table::Watchdog)
        );
        assert_eq!(
            table_of("     Port    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes"),
            Some(Table::Queue)
        );
        assert_eq!(table_of("  Port Rx    PFC0    PFC1"), None);
        assert_eq!(table_of("LocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr"), None);
    }

    #[test]
    fn counts_take_separators_and_sentinels() {
        assert_eq!(count("1,200"), Some(Count(Some(1200))));
        assert_eq!(count("12,000,000"), Some(Count(Some(12_000_000))));
        assert_eq!(count("N/A"), Some(Count(None)));
        assert_eq!(count("-1"), None);
        assert_eq!(count("99999999999999999999999"), None);
        assert_eq!(pair("100/300"), Some((Some(100), Some(300))));
        assert_eq!(pair("N/A"), Some((None, None)));
        assert_eq!(pair("1-0"), None);
    }

    #[test]
    fn rows_are_cut_at_the_rule() {
        let cols = rule_columns("-----------  -----------  -------------------------  ------------").expect("rule");
        assert_eq!(cols, [0, 13, 26, 53]);
        let c = cells("Ethernet0:3      stormed                        1/0       100/300", &cols).expect("row");
        assert_eq!(c, ["Ethernet0:3", "stormed", "1/0", "100/300"]);
        assert!(cells("Ethernet0:3 stormedXXXXXXXXXXXXXXXXXXXX", &cols).is_none());
    }

    #[test]
    fn the_prompt_names_the_switch() {
        assert_eq!(prompt_host("admin@leaf01:~$ show pfc counters").as_deref(), Some("leaf01"));
        assert_eq!(prompt_host("admin@sonic-t1:~$ sudo pfcwd show stats").as_deref(), Some("sonic-t1"));
        assert_eq!(prompt_host("root@sw2:/home/admin# queuestat").as_deref(), Some("sw2"));
        assert_eq!(prompt_host("admin@leaf01:~$ show lldp table"), None);
    }
}

//! `rdma statistic show` (iproute2 `rdma` tool): the RDMA port counters every RDMA driver exports
//! through RDMA netlink (mlx5, bnxt_re, irdma, ionic, qedr, rxe, ...), text or `-j` JSON.
//!
//! ```text
//! link mlx5_2/1 rx_write_requests 0 rx_read_requests 0 out_of_buffer 135 ... np_cnp_sent 0
//! link rocep8s0f0/1 rx_write_requests 0 ...
//! ```
//!
//! * Text: a record starts with `link <dev>/<port>`; then `<name> <value>` pairs, on one line or
//!   wrapped over several (a terminal or mail wraps them), or one pair per line with `-p`. Device
//!   and port come from the record; the counter names are the driver's hw_counters names and go
//!   through the sysfs `hw_counters/` vocabulary (the same files under
//!   `/sys/class/infiniband/<dev>/ports/<n>/hw_counters/`), so vendor names (`cnpHandled`,
//!   `tx_cnp_pkts`) map as they do there; unknown names are kept raw.
//! * `rdma statistic qp show` records carry `cntn <n>` (the counter bound to some QPs): their rows
//!   go to the sub-device `<dev>/counter<n>` so they never add up with the port's; `pid`, `comm`
//!   and `qp-type` become attributes, the `LQPN: <...>` line is skipped.
//! * JSON (`rdma -j statistic show`, also `-jp`): an array of objects with `ifname`, `port` and
//!   one key per counter; read whole (bounded by `max_document_bytes`).
//! * Host and time: `# host:`/timestamp lines (before a JSON document too), else the fallbacks.

use crate::error::{Position, Result};
use crate::formats::common::{prompt_command, rdma_json_objects, significant_lines, split_rdma_link};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::vocabulary::{Kind, Namespace, lookup};

/// Keys of a record that describe it rather than count.
const DESCRIPTIVE: &[&str] = &["pid", "comm", "qp-type"];

/// True when the first lines look like `rdma statistic show` text or its JSON.
pub fn looks_like(text: &str) -> bool {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        // `[{"ifindex":0,"ifname":"mlx5_0","port":1,"rx_write_requests":0,...` (the first
        // iproute2 versions printed no `ifindex`); `rdma -j link show` has these keys plus `state`.
        let head: String = trimmed.chars().take(400).filter(|c| !c.is_whitespace()).collect();
        return head.starts_with("[{\"")
            && head.contains("\"ifname\":")
            && head.contains("\"port\":")
            && !head.contains("\"state\":");
    }
    // Past prompts, echoed commands and directives, every line is the tool's own: a record
    // `link <dev>/<port> [<counter> <value>]...`, its wrapped or `-p` continuation lines of
    // `<counter> <value>` pairs, a QP counter's `LQPN: <...>` line, or a `mode [supported]` line.
    // One line of anything else (a benchmark's table, a log line) and the input is not ours.
    let mut records = 0u32;
    let mut in_record = false;
    let mut pending: Option<&str> = None;
    for t in significant_lines(text, 50) {
        if in_record && t.starts_with("LQPN:") {
            continue;
        }
        let mut tokens = t.split_whitespace().peekable();
        if tokens.peek() == Some(&"link") {
            tokens.next();
            if pending.is_some() || tokens.next().is_none_or(|l| split_rdma_link(l).is_none()) {
                return false;
            }
            let rest: Vec<&str> = tokens.clone().collect();
            if is_mode_line(&rest) {
                in_record = false;
                records += 1;
                continue;
            }
            // `rdma link show` prints `link mlx5_0/1 state ACTIVE ...`: identity, not counters.
            if rest.first().is_some_and(|k| LINK_SHOW_KEYS.contains(k)) {
                return false;
            }
            in_record = true;
            records += 1;
        } else if !in_record {
            return false;
        }
        for tok in tokens {
            match pending.take() {
                None if tok.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => pending = Some(tok),
                Some(name) if name == "comm" || name == "qp-type" => {}
                Some(_) if tok.bytes().all(|b| b.is_ascii_digit()) => {}
                None | Some(_) => return false,
            }
        }
    }
    records > 0
}

/// Keys `rdma link show` prints first after `link <dev>/<port>`.
const LINK_SHOW_KEYS: &[&str] = &["state", "subnet_prefix", "lid", "sm_lid", "lmc", "physical_state", "netdev"];

/// The rest of a `rdma statistic mode [supported]` line after `link <dev>/<port>`:
/// `[supported] optional-counters <name>,<name>...` (the optional counters a port supports or has
/// enabled; their values come with `statistic show`).
fn is_mode_line(rest: &[&str]) -> bool {
    let rest = rest.strip_prefix(&["supported"]).unwrap_or(rest);
    matches!(rest, ["optional-counters"] | ["optional-counters", _])
}

/// The record being read: device (or counter sub-device) and port.
#[derive(Debug, Clone)]
struct Record {
    device: String,
    port: u16,
}

/// Streaming reader for `rdma statistic show` text and JSON.
#[derive(Default)]
pub struct RdmaStatisticReader {
    directives: DirectiveState,
    record: Option<Record>,
    /// A counter name whose value is on the next token (a wrapped line).
    pending: Option<String>,
    /// The JSON document, once the input turned out to be `-j` output.
    json: Option<Vec<u8>>,
    /// Position where the JSON document starts.
    json_start: Option<Position>,
}

impl RdmaStatisticReader {
    /// A reader for one input.
    pub fn new() -> Self {
        RdmaStatisticReader::default()
    }

    fn counter(&mut self, name: &str, v: u64, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(rec) = self.record.clone() else { return Ok(()) };
        let (counter, value, scale, is_counter) = match lookup(Namespace::Sysfs, &format!("hw_counters/{name}")) {
            Some(m) => (m.def.name, Value::U64(v).multiplied(m.multiply), m.scale, m.def.kind == Kind::Counter),
            None => (name, Value::U64(v), 1, true),
        };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&rec.device);
        let counter = ctx.samples.counter(counter);
        ctx.push(&Sample {
            time_ns,
            host,
            device,
            port: Some(rec.port),
            priority: None,
            counter,
            value,
            scale,
            is_counter,
        })
    }

    fn attribute(&mut self, key: &str, value: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(rec) = self.record.clone() else { return Ok(()) };
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let a = Attribute { time_ns, host: 0, device: 0, port: Some(rec.port), key, value };
        ctx.push_attribute(&host, &rec.device, &a)
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(doc) = &mut self.json {
            doc.extend_from_slice(raw);
            doc.push(b'\n');
            let limit = ctx.options().limits.max_document_bytes;
            if doc.len() as u64 > limit {
                return Err(crate::error::Error::LimitExceeded {
                    path: ctx.path.to_path_buf(),
                    position: pos,
                    what: "size of an `rdma -j statistic show` document",
                    limit,
                    option: "max_document_bytes",
                });
            }
            return Ok(());
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with("LQPN:") {
            return Ok(());
        }
        if self.record.is_none() && self.pending.is_none() && (t.starts_with('[') || t.starts_with('{')) {
            self.json = Some(format!("{t}\n").into_bytes());
            self.json_start = Some(pos);
            return Ok(());
        }
        if !t.starts_with("link ") && self.directives.apply_line(t) {
            self.record = None;
            self.pending = None;
            return Ok(());
        }
        if t.starts_with('#') || prompt_command(t).is_some() {
            return Ok(());
        }
        let mut tokens = t.split_whitespace().peekable();
        if tokens.peek() == Some(&"link") {
            tokens.next();
            let rest: Vec<&str> = tokens.clone().skip(1).collect();
            if is_mode_line(&rest) {
                // `rdma statistic mode [supported]`: which optional counters exist, no values.
                if self.pending.take().is_some() {
                    return ctx.bad_record(pos, "a value after the last counter name of the previous record", raw);
                }
                self.record = None;
                return Ok(());
            }
            if self.pending.take().is_some() {
                return ctx.bad_record(pos, "a value after the last counter name of the previous record", raw);
            }
            let Some((dev, port)) = tokens.next().and_then(split_rdma_link) else {
                return ctx.bad_record(pos, "`link <device>/<port>` (e.g. `link mlx5_0/1`)", raw);
            };
            self.record = Some(Record { device: dev.to_owned(), port });
        } else if self.record.is_none() {
            return ctx.bad_record(pos, "a `link <device>/<port> <counter> <value> ...` record", raw);
        }
        for tok in tokens {
            let Some(name) = self.pending.take() else {
                self.pending = Some(tok.to_owned());
                continue;
            };
            if name == "cntn" {
                let Some(rec) = &mut self.record else { continue };
                if !tok.bytes().all(|b| b.is_ascii_digit()) {
                    return ctx.bad_record(pos, "a counter id (digits) after `cntn`", raw);
                }
                // A QP counter's rows are not the port's: they get their own sub-device.
                let base = rec.device.split('/').next().unwrap_or_default().to_owned();
                rec.device = format!("{base}/counter{tok}");
                continue;
            }
            if DESCRIPTIVE.contains(&name.as_str()) {
                self.attribute(&name, tok, ctx)?;
                continue;
            }
            let Some(v) = crate::number::parse_u64_digits(tok.as_bytes()) else {
                let expected = format!("an unsigned decimal value for `{name}`, not `{tok}`");
                return ctx.bad_record(pos, &expected, raw);
            };
            self.counter(&name, v, ctx)?;
        }
        Ok(())
    }

    fn read_json(&mut self, doc: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        for obj in &rdma_json_objects(doc, pos, ctx, "rdma -j statistic show")? {
            let dev = obj.get("ifname").and_then(serde_json::Value::as_str);
            let port = obj.get("port").and_then(serde_json::Value::as_u64).and_then(|p| u16::try_from(p).ok());
            let (Some(dev), Some(port)) = (dev, port) else {
                ctx.bad_record(
                    pos,
                    "`ifname` (a string) and `port` (0-65535) in each link object",
                    &serde_json::to_vec(obj).unwrap_or_default(),
                )?;
                continue;
            };
            let device = match obj.get("cntn").and_then(serde_json::Value::as_u64) {
                Some(n) => format!("{dev}/counter{n}"),
                None => dev.to_owned(),
            };
            self.record = Some(Record { device, port });
            for (key, value) in obj {
                if matches!(key.as_str(), "ifindex" | "ifname" | "port" | "cntn" | "lqpn") {
                    continue;
                }
                match value {
                    serde_json::Value::Number(n) if !DESCRIPTIVE.contains(&key.as_str()) => {
                        if let Some(v) = n.as_u64() {
                            self.counter(key, v, ctx)?;
                        } else {
                            let expected = format!("an unsigned integer for `{key}`");
                            ctx.bad_record(pos, &expected, n.to_string().as_bytes())?;
                        }
                    }
                    serde_json::Value::Number(n) => self.attribute(key, &n.to_string(), ctx)?,
                    serde_json::Value::String(s) => self.attribute(key, s, ctx)?,
                    _ => {}
                }
            }
        }
        self.record = None;
        Ok(())
    }
}

impl LineReader for RdmaStatisticReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(doc) = self.json.take() {
            let pos = self.json_start.unwrap_or(Position { line: Some(1), byte_offset: 0 });
            return self.read_json(&doc, pos, ctx);
        }
        if let Some(name) = self.pending.take() {
            let pos = Position { line: None, byte_offset: 0 };
            let expected = format!("a value after the counter name `{name}` at the end of the input");
            return ctx.bad_record(pos, &expected, name.as_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_tells_statistics_from_link_show() {
        assert!(looks_like("link mlx5_0/1 rx_write_requests 0 rx_read_requests 0\n"));
        assert!(looks_like("1764686822\nlink rocep8s0f0/1 rx_write_requests 0\n"));
        assert!(looks_like("link mlx5_2/1 cntn 5 pid 31609 comm client.1 rx_write_requests 0\n"));
        assert!(looks_like(r#"[{"ifindex":0,"ifname":"mlx5_0","port":1,"rx_write_requests":0}]"#));
        assert!(!looks_like("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0\n"));
        assert!(!looks_like(r#"[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE"}]"#));
        assert!(!looks_like("link up\n"));
        assert!(looks_like("$ rdma stat show link rocep1s0f5/1 -p\nlink rocep1s0f5/1\n    rx_write_requests 0\n"));
        assert!(!looks_like("NIC statistics:\n     rx_packets: 1\n"));
        // a prompt without a blank, and `mode supported` lines before the counters
        assert!(looks_like("$rdma statistic show link mana_0/1 -p\nlink mana_0/1\n    requester_timeout 45\n"));
        assert!(looks_like(
            "$ rdma statistic mode supported\nlink rocep8s0f0/1 supported optional-counters cc_rx_ce_pkts,cc_rx_cnp_pkts\n\n\
             $ rdma statistic show link rocep8s0f0/1\nlink rocep8s0f0/1 rx_write_requests 0\ncc_rx_cnp_pkts 0\n"
        ));
        assert!(looks_like("user@host:~$ rdma stat show\nlink mlx5_0/1 rx_write_requests 0\n"));
        // a benchmark log with one `link` line is not ours
        assert!(!looks_like("link mlx5_0/1 rx_write_requests 0\n     1048576   16384   float   571.5\n"));
    }

    #[test]
    fn links_split_at_the_last_slash() {
        assert_eq!(split_rdma_link("mlx5_0/1"), Some(("mlx5_0", 1)));
        assert_eq!(split_rdma_link("rocep8s0f0/2"), Some(("rocep8s0f0", 2)));
        assert_eq!(split_rdma_link("mlx5_0"), None);
        assert_eq!(split_rdma_link("/1"), None);
        assert_eq!(split_rdma_link("mlx5_0/70000"), None);
    }
}

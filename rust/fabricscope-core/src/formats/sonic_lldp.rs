//! SONiC `show lldp table` on a switch: which host NIC or neighbour switch each of its ports is
//! cabled to, as `links` rows (leaf port ↔ host NIC, leaf ↔ spine) for RoCE fabrics.
//!
//! The table is printed by sonic-utilities `scripts/lldpshow` (Apache-2.0) with python-tabulate's
//! `simple` layout, from `lldpctl -f xml` run in the switch's lldp container:
//!
//! ```text
//! Capability codes: (R) Router, (B) Bridge, (O) Other
//! LocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr
//! -----------  --------------  -----------------  ------------  -----------------
//! Ethernet0    gpu-r07         1c:34:da:a1:00:01  R             eth0
//! Ethernet248  spine01         Ethernet8          BR            leaf01:Ethernet248
//! --------------------------------------------------
//! Total entries displayed:  2
//! ```
//!
//! Cells may be empty (a neighbour that sent no system name or no capability) and may contain
//! spaces (`FortyGigabitEthernet 1/0/49`), so a row is cut at the columns of the dashed rule under
//! the header, not at whitespace. `Capability` keeps only `R` (Router), `B` (Bridge) and `O`
//! (any other enabled capability). The footer's count checks that the table is whole.
//!
//! The switch is named by the last `# host:` line or shell prompt echoed before the command
//! (`admin@leaf01:~$ show lldp table`), so one file may hold the tables of several switches; else
//! by the host argument, else by the file name up to its first dot. Its end of each link is `(<switch>, <LocalPort>)`. The far end is:
//!
//! * a **switch** when its capabilities include Bridge: named by its system name, its port by the
//!   port ID (by the description when the port ID is a MAC address);
//! * a **host NIC** when it enables capabilities but not Bridge (lldpd on a Linux host enables
//!   Station, or Router when IP forwarding is on, as under container runtimes; it sends the NIC's
//!   MAC address as port ID and the interface name as description by default): named
//!   `<system name> <interface>`, rdma-ndd's `%h %d` shape, as the `lldpctl` reader names a NIC,
//!   so both readers give the same link;
//! * of **unknown** kind when it enables no capability: named as a switch would be.
//!
//! The management interface (`eth0`, out of band, not the fabric) and rows naming no neighbour
//! system or no port are not links.

use crate::error::{Position, Result};
use crate::formats::{Directive, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::topology::{End, Link, LinkSet, NodeType};

/// Reader name in the links table's `source` column.
const SOURCE: &str = "sonic-lldp-table";

/// The header `lldpshow` prints, in order.
const HEADER: [&str; 5] = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"];

/// True when one of the first lines is the `show lldp table` header.
pub fn looks_like(text: &str) -> bool {
    text.lines().take(20).any(is_header)
}

fn is_header(line: &str) -> bool {
    line.split_whitespace().eq(HEADER)
}

/// `admin@leaf01:~$ show lldp table`, `root@leaf01:/home/admin# lldpshow` (either after `sudo`): the
/// switch's host name, from the prompt.
fn prompt_host(line: &str) -> Option<String> {
    let t = line.trim();
    let (prompt, command) = t.split_once(['$', '#'])?;
    let mut command = command.split_whitespace().collect::<Vec<_>>();
    if command.first() == Some(&"sudo") {
        command.remove(0);
    }
    let shows_table = command == ["show", "lldp", "table"] || command.first().is_some_and(|c| c.ends_with("lldpshow"));
    if !shows_table {
        return None;
    }
    let (_, host) = prompt.split_once('@')?;
    let host = host.split(':').next()?.trim();
    (!host.is_empty() && !host.contains(char::is_whitespace)).then(|| host.to_owned())
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

/// 6 colon- or dash-separated hex octets.
fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    parts.len() == 6 && parts.iter().all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// One table row's cells.
struct Row<'a> {
    local_port: &'a str,
    device: &'a str,
    port_id: &'a str,
    capability: &'a str,
    port_descr: &'a str,
}

impl Row<'_> {
    /// The link, or `None` when the row names no neighbour in the fabric.
    fn link(&self, switch: &str) -> Option<Link> {
        if self.device.is_empty() || is_management_port(self.local_port) {
            return None;
        }
        let descr =
            (!self.port_descr.is_empty() && !self.port_descr.contains(char::is_whitespace)).then_some(self.port_descr);
        // A switch port is best named by its port ID; a MAC port ID is no name, the description is.
        let port = if is_mac(self.port_id) { descr.unwrap_or(self.port_id) } else { self.port_id };
        if port.is_empty() {
            return None;
        }
        let far = if self.capability.is_empty() || self.capability.contains('B') {
            let node_type = if self.capability.is_empty() { NodeType::Unknown } else { NodeType::Switch };
            End { name: Some(self.device.to_owned()), node_type, port_name: Some(port.to_owned()), ..End::default() }
        } else {
            // a host: its NIC is known by its interface name, `<host> <netdev>` (one word each)
            let iface = if port.contains(char::is_whitespace) { descr.unwrap_or(port) } else { port };
            End {
                name: Some(format!("{} {iface}", self.device)),
                node_type: NodeType::Hca,
                port_name: Some(iface.to_owned()),
                ..End::default()
            }
        };
        let near = End {
            name: Some(switch.to_owned()),
            node_type: NodeType::Switch,
            port_name: Some(self.local_port.to_owned()),
            ..End::default()
        };
        Some(Link { a: near, b: far, ..Link::default() })
    }
}

/// SONiC's management interface (`eth0`): out of band, cabled to a management network.
fn is_management_port(port: &str) -> bool {
    port.strip_prefix("eth").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Where the reader is in a table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum State {
    /// Before a header (or after a footer).
    #[default]
    Outside,
    /// Header read; the dashed rule comes next.
    Rule,
    /// Rows, cut at these column starts (characters).
    Rows(Vec<usize>),
    /// The rule above the footer; `Total entries displayed:` comes next.
    Footer,
}

/// Streaming reader for `show lldp table`.
#[derive(Default)]
pub struct SonicLldpReader {
    /// The switch the last `# host:` line or echoed prompt names.
    named: Option<String>,
    /// Where the last line ended (the end of input, for a truncation report).
    end: Position,
    state: State,
    /// Rows of the table being read (the footer's count is checked against it).
    rows: u64,
    /// Where the open table's header was, for a truncation report.
    header_at: Option<Position>,
    set: LinkSet,
}

impl SonicLldpReader {
    /// A fresh reader.
    pub fn new() -> Self {
        Self::default()
    }

    /// The switch this table was printed on.
    fn switch(&mut self, ctx: &mut ReadContext<'_>) -> String {
        if let Some(h) = &self.named {
            return h.clone();
        }
        if let Some(h) = ctx.host_argument() {
            return h.to_owned();
        }
        let file = ctx.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match file.split('.').next().filter(|s| !s.is_empty()) {
            Some(stem) => stem.to_owned(),
            None => ctx.fallback_host(),
        }
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(text) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        // just after this line and its newline: where a missing footer would have started
        self.end = Position { line: pos.line.map(|l| l + 1), byte_offset: pos.byte_offset + raw.len() as u64 + 1 };
        let text = text.trim_end_matches(['\r', '\n']);
        let t = text.trim();
        if let Some(h) = prompt_host(t) {
            self.close_table(pos, raw, ctx)?;
            self.named = Some(h);
            return Ok(());
        }
        if is_header(t) {
            self.close_table(pos, raw, ctx)?;
            self.state = State::Rule;
            self.rows = 0;
            self.header_at = Some(pos);
            return Ok(());
        }
        match std::mem::take(&mut self.state) {
            State::Outside => {
                match parse_directive(t) {
                    Some(Directive::Host(h)) => {
                        self.named = Some(h);
                        return Ok(());
                    }
                    Some(_) => return Ok(()),
                    None => {}
                }
                if t.is_empty() || t.starts_with('#') || t.starts_with("Capability codes:") {
                    return Ok(());
                }
                ctx.bad_record(pos, "a `show lldp table` header (LocalPort RemoteDevice RemotePortID ...)", raw)
            }
            State::Rule => match rule_columns(text) {
                Some(cols) if cols.len() == HEADER.len() => {
                    self.state = State::Rows(cols);
                    Ok(())
                }
                _ => {
                    self.header_at = None;
                    ctx.bad_record(pos, "the dashed rule under the header, one group per column", raw)
                }
            },
            State::Footer => {
                self.header_at = None;
                self.footer(t, pos, raw, ctx)
            }
            State::Rows(cols) => {
                if t.starts_with("Total entries displayed:") {
                    self.header_at = None;
                    return self.footer(t, pos, raw, ctx);
                }
                if rule_columns(text).is_some() {
                    self.state = State::Footer;
                    return Ok(());
                }
                let result = self.row(text, &cols, pos, raw, ctx);
                self.state = State::Rows(cols);
                result
            }
        }
    }

    fn row(&mut self, text: &str, cols: &[usize], pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        if text.trim().is_empty() {
            return Ok(());
        }
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        // A cell starts where its rule group does, after a blank (or at the line's end when empty).
        let aligned = cols.iter().skip(1).all(|&c| chars.get(c.wrapping_sub(1)).is_none_or(|(_, ch)| *ch == ' '));
        if !aligned {
            return ctx.bad_record(pos, "a row aligned to the header's columns", raw);
        }
        let byte_at = |c: usize| chars.get(c).map_or(text.len(), |(b, _)| *b);
        let mut cells = [""; 5];
        for (i, cell) in cells.iter_mut().enumerate() {
            let from = cols.get(i).map_or(text.len(), |&c| byte_at(c));
            let to = cols.get(i + 1).map_or(text.len(), |&c| byte_at(c));
            *cell = text.get(from..to).unwrap_or("").trim();
        }
        let [local_port, device, port_id, capability, port_descr] = cells;
        if local_port.is_empty() || local_port.contains(char::is_whitespace) {
            return ctx.bad_record(pos, "a local port name in the first column", raw);
        }
        if !capability.chars().all(|c| matches!(c, 'R' | 'B' | 'O')) {
            return ctx.bad_record(pos, "capability letters R, B, O", raw);
        }
        self.rows += 1;
        let switch = self.switch(ctx);
        let row = Row { local_port, device, port_id, capability, port_descr };
        if let Some(l) = row.link(&switch) {
            self.set.add(l);
        }
        Ok(())
    }

    fn footer(&mut self, t: &str, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        let count = t.strip_prefix("Total entries displayed:").and_then(|n| n.trim().parse::<u64>().ok());
        match count {
            Some(n) if n == self.rows => Ok(()),
            Some(_) => {
                ctx.bad_record(pos, &format!("`Total entries displayed:` equal to the {} rows read", self.rows), raw)
            }
            None => ctx.bad_record(pos, "`Total entries displayed: <n>` after the rule", raw),
        }
    }

    /// A table still open when another starts or the input ends lost its footer: it was cut.
    fn close_table(&mut self, pos: Position, found: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        self.state = State::Outside;
        match self.header_at.take() {
            Some(_) => ctx.bad_record(pos, "the `Total entries displayed:` footer (the table is cut short)", found),
            None => Ok(()),
        }
    }
}

impl LineReader for SonicLldpReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        self.close_table(self.end, b"the end of the input", ctx)?;
        crate::topology::emit(std::mem::take(&mut self.set), ctx, SOURCE)
    }
}

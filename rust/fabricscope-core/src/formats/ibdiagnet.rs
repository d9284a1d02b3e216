//! `ibdiagnet2.db_csv`: CSV sections between `START_<NAME>` and `END_<NAME>` lines, each a header
//! row then data rows. No real file is public; this follows the formats reference §4.1 (public
//! parsers and the NVIDIA manual) and is deliberately tolerant:
//!
//! * Read: `NODES` (NodeDesc, NodeType, NodeGUID), `PORTS` (NodeGuid, PortNum, LID, PortState,
//!   PortPhyState, LinkWidthActv/Sup, LinkSpeedActv/Sup, LinkSpeedExtActv/Sup), `LINKS`
//!   (NodeGuid1, PortNum1, NodeGuid2, PortNum2) and `PM_INFO` (NodeGUID, PortNumber, counters).
//!   Column names are matched case-insensitively (`NodeGUID`/`NodeGuid`, `PortNum`/`PortNumber`);
//!   unknown columns are ignored in NODES/PORTS/LINKS and kept as raw counters in PM_INFO.
//!   Unknown sections are skipped whole.
//! * Values: decimal or `0x` hex; `0xfffffffffffffffe` ("not supported") and `-1` (ibdiagnet
//!   2.8.1) are null. Quoted cells (`"MF0;sw:MQM8700/U1"`) may contain commas.
//! * PM_INFO mixes basic and 64-bit columns (`PortXmitWait` and `PortXmitWaitExt`,
//!   `PortXmitData` and `PortXmitDataExtended`): per row and canonical counter, the `...Ext`/
//!   `...Extended` column wins when it holds a value, so one counter gives one row. Data columns
//!   are 4-octet words: x4, scale 4.
//! * PORTS gives `port_state_id`, `port_phys_state_id` and `link_width_lanes` gauges. Width and
//!   speed codes follow IBA PortInfo (width 1=1x 2=4x 4=8x 8=12x 16=2x; speed 1=SDR 2=DDR 4=QDR;
//!   extended speed 1=FDR 2=EDR 4=HDR 8=NDR 16=XDR), unverified against a real file.
//! * LINKS with NODES and PORTS become the `links` table at the end of the input.
//! * No timestamps in the file: the fallbacks apply (file name, argument, mtime). Host: the argument.
//! * Errors: a section left open at end of input or by another `START_`, an `END_` that does not
//!   match, a row whose cell count differs from its header, a non-numeric counter.

use std::borrow::Cow;

use ahash::AHashMap;

use crate::error::{Position, Result};
use crate::formats::ib::{self, NameCache, Resolved};
use crate::formats::{LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Sample, Value};
use crate::topology::{End, Link, LinkSet, NodeType};
use crate::vocabulary::Namespace;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Nodes,
    Ports,
    Links,
    PmInfo,
    Other,
}

/// One canonical counter of PM_INFO and the columns that can give it, best first.
#[derive(Debug, Clone)]
struct Group {
    resolved: Resolved,
    columns: Vec<usize>,
}

#[derive(Debug)]
struct Section {
    name: String,
    kind: Kind,
    start: Position,
    header: Option<Vec<String>>,
    groups: Vec<Group>,
    /// Columns of the node GUID and port number, found once per header.
    guid_col: Option<usize>,
    port_col: Option<usize>,
    /// PORTS columns in the order of [`PORT_COLUMNS`], found once per header.
    port_cols: Vec<Option<usize>>,
}

/// PORTS columns read, in the order `port_cols` holds them.
const PORT_COLUMNS: [&str; 9] = [
    "LID",
    "PortState",
    "PortPhyState",
    "LinkWidthActv",
    "LinkSpeedActv",
    "LinkSpeedExtActv",
    "LinkWidthSup",
    "LinkSpeedSup",
    "LinkSpeedExtSup",
];

#[derive(Debug, Default, Clone)]
struct PortFacts {
    lid: Option<u32>,
    width: Option<String>,
    speed: Option<String>,
    supported_width: Option<String>,
    supported_speed: Option<String>,
}

/// Streaming reader for `ibdiagnet2.db_csv`.
pub struct DbCsvReader {
    section: Option<Section>,
    names: NameCache,
    nodes: AHashMap<String, (Option<String>, NodeType)>,
    ports: AHashMap<(String, u16), PortFacts>,
    links: Vec<(String, u16, String, u16)>,
    stamp: Option<(i64, i32)>,
    skipped_sections: Vec<String>,
}

impl Default for DbCsvReader {
    fn default() -> Self {
        DbCsvReader {
            section: None,
            names: NameCache::new(Namespace::Ibdiagnet),
            nodes: AHashMap::new(),
            ports: AHashMap::new(),
            links: Vec::new(),
            stamp: None,
            skipped_sections: Vec::new(),
        }
    }
}

/// Split one CSV line; double-quoted cells may hold commas and `""`. Lines without quotes (all
/// counter rows) borrow their cells: no allocation per cell.
fn split_csv(line: &str) -> Vec<Cow<'_, str>> {
    if !line.contains('"') {
        return line.split(',').map(|c| Cow::Borrowed(c.trim())).collect();
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(Cow::Owned(std::mem::take(&mut cur).trim().to_owned())),
            _ => cur.push(c),
        }
    }
    out.push(Cow::Owned(cur.trim().to_owned()));
    out
}

fn col(header: &[String], names: &[&str]) -> Option<usize> {
    header.iter().position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
}

fn code(cells: &[Cow<'_, str>], idx: Option<usize>) -> Option<u64> {
    match ib::parse_value(cells.get(idx?)?)? {
        Value::U64(v) => Some(v),
        _ => None,
    }
}

fn width_of(code: u64) -> Option<&'static str> {
    // Highest capability first, so a supported bitmask gives its widest width.
    [(8, "12x"), (4, "8x"), (2, "4x"), (16, "2x"), (1, "1x")].iter().find(|(b, _)| code & b != 0).map(|(_, w)| *w)
}

fn speed_of(base: Option<u64>, ext: Option<u64>) -> Option<&'static str> {
    let ext_name = ext.and_then(|e| {
        [(16, "XDR"), (8, "NDR"), (4, "HDR"), (2, "EDR"), (1, "FDR")].iter().find(|(b, _)| e & b != 0).map(|(_, n)| *n)
    });
    ext_name.or_else(|| {
        base.and_then(|b| [(4, "QDR"), (2, "DDR"), (1, "SDR")].iter().find(|(m, _)| b & m != 0).map(|(_, n)| *n))
    })
}

impl DbCsvReader {
    /// A reader for one input.
    pub fn new() -> Self {
        DbCsvReader::default()
    }

    fn stamp(&mut self, ctx: &mut ReadContext<'_>) -> Result<(i64, i32)> {
        if let Some(s) = self.stamp {
            return Ok(s);
        }
        let t = ctx.fallback_time_ns()?;
        let h = ctx.fallback_host();
        let s = (t, ctx.samples.host(&h));
        self.stamp = Some(s);
        Ok(s)
    }

    fn header(&mut self, cells: Vec<String>, ctx: &mut ReadContext<'_>) {
        let Some(sec) = self.section.as_mut() else { return };
        sec.guid_col = col(&cells, &["NodeGUID", "NodeGuid"]);
        sec.port_col = col(&cells, &["PortNumber", "PortNum"]);
        sec.port_cols = PORT_COLUMNS.iter().map(|n| col(&cells, &[n])).collect();
        if sec.kind == Kind::PmInfo {
            let mut groups: Vec<(Group, Vec<(u8, usize)>)> = Vec::new();
            for (i, name) in cells.iter().enumerate() {
                if col(
                    std::slice::from_ref(name),
                    &["NodeGUID", "NodeGuid", "PortNumber", "PortNum", "PortGuid", "PortGUID"],
                )
                .is_some()
                {
                    continue;
                }
                let r = self.names.get(name, ctx);
                let rank = u8::from(name.ends_with("Ext") || name.ends_with("Extended"));
                match groups.iter_mut().find(|(g, _)| g.resolved.counter == r.counter) {
                    Some((_, cols)) => cols.push((rank, i)),
                    None => groups.push((Group { resolved: r, columns: Vec::new() }, vec![(rank, i)])),
                }
            }
            sec.groups = groups
                .into_iter()
                .map(|(mut g, mut cols)| {
                    cols.sort_by_key(|c| std::cmp::Reverse(c.0));
                    g.columns = cols.into_iter().map(|(_, i)| i).collect();
                    g
                })
                .collect();
        }
        sec.header = Some(cells);
    }

    fn row(&mut self, cells: &[Cow<'_, str>], raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        // Every row of the file shares one time and host (the file has none of its own).
        let (time_ns, host) = self.stamp(ctx)?;
        let Some(sec) = self.section.as_ref() else { return Ok(()) };
        let Some(header) = sec.header.as_ref() else { return Ok(()) };
        if cells.len() != header.len() {
            let msg = format!("{} cells as in the {} header (found {})", header.len(), sec.name, cells.len());
            return ctx.bad_record(pos, &msg, raw);
        }
        let (guid_col, port_col) = (sec.guid_col, sec.port_col);
        match sec.kind {
            Kind::Other => Ok(()),
            Kind::Nodes => {
                let Some(guid) = guid_col.and_then(|i| cells.get(i)).and_then(|g| ib::normalize_guid(g)) else {
                    return ctx.bad_record(pos, "a hex NodeGUID in NODES", raw);
                };
                let name = col(header, &["NodeDesc", "NodeDescription"])
                    .and_then(|i| cells.get(i))
                    .map(std::string::ToString::to_string);
                let ty = col(header, &["NodeType"])
                    .and_then(|i| cells.get(i))
                    .map_or(NodeType::Unknown, |t| NodeType::parse(t));
                self.nodes.insert(guid, (name.filter(|n| !n.is_empty()), ty));
                Ok(())
            }
            Kind::Links => {
                let g = |n: &str| col(header, &[n]).and_then(|i| cells.get(i)).and_then(|g| ib::normalize_guid(g));
                let p = |n: &str| code(cells, col(header, &[n])).and_then(|v| u16::try_from(v).ok());
                match (g("NodeGuid1"), p("PortNum1"), g("NodeGuid2"), p("PortNum2")) {
                    (Some(a), Some(pa), Some(b), Some(pb)) => {
                        self.links.push((a, pa, b, pb));
                        Ok(())
                    }
                    _ => ctx.bad_record(pos, "NodeGuid1,PortNum1,NodeGuid2,PortNum2 in LINKS", raw),
                }
            }
            Kind::Ports => {
                let guid = guid_col.and_then(|i| cells.get(i)).and_then(|g| ib::normalize_guid(g));
                let port = code(cells, port_col).and_then(|v| u16::try_from(v).ok());
                let (Some(guid), Some(port)) = (guid, port) else {
                    return ctx.bad_record(pos, "a hex NodeGuid and a PortNum in PORTS", raw);
                };
                let c = |n: &str| {
                    let idx =
                        PORT_COLUMNS.iter().position(|p| *p == n).and_then(|i| sec.port_cols.get(i).copied().flatten());
                    code(cells, idx)
                };
                let facts = PortFacts {
                    lid: c("LID").and_then(|v| u32::try_from(v).ok()),
                    width: c("LinkWidthActv").and_then(width_of).map(str::to_owned),
                    speed: speed_of(c("LinkSpeedActv"), c("LinkSpeedExtActv")).map(str::to_owned),
                    supported_width: c("LinkWidthSup").and_then(width_of).map(str::to_owned),
                    supported_speed: speed_of(c("LinkSpeedSup"), c("LinkSpeedExtSup")).map(str::to_owned),
                };
                let device = ctx.samples.device(&guid);
                let lanes = facts.width.as_deref().and_then(ib::width).map(|(_, n)| u64::from(n));
                let gauges: Vec<(&str, Value)> = [
                    ("port_state_id", c("PortState")),
                    ("port_phys_state_id", c("PortPhyState")),
                    ("link_width_lanes", lanes),
                ]
                .into_iter()
                .filter_map(|(name, v)| v.map(|v| (name, Value::U64(v))))
                .collect();
                ib::push_port_gauges(ctx, time_ns, host, device, port, &gauges)?;
                self.ports.insert((guid, port), facts);
                Ok(())
            }
            Kind::PmInfo => {
                let guid = guid_col.and_then(|i| cells.get(i)).and_then(|g| ib::normalize_guid(g));
                let port = code(cells, port_col).and_then(|v| u16::try_from(v).ok());
                let (Some(guid), Some(port)) = (guid, port) else {
                    return ctx.bad_record(pos, "a hex NodeGUID and a PortNumber in PM_INFO", raw);
                };
                let mut out: Vec<(Resolved, Value)> = Vec::with_capacity(sec.groups.len());
                for g in &sec.groups {
                    let mut best = None;
                    for &i in &g.columns {
                        let cell = cells.get(i).map_or("", AsRef::as_ref);
                        let Some(v) = ib::parse_value(cell) else {
                            let name = header.get(i).map_or("?", String::as_str);
                            let msg = format!("a decimal or 0x-hex value in PM_INFO column {name}");
                            return ctx.bad_record(pos, &msg, raw);
                        };
                        if best.is_none() || (best == Some(Value::Null) && v != Value::Null) {
                            best = Some(v);
                        }
                    }
                    if let Some(v) = best {
                        out.push((g.resolved, v));
                    }
                }
                let device = ctx.samples.device(&guid);
                for (r, v) in out {
                    ctx.push(&Sample {
                        time_ns,
                        host,
                        device,
                        port: Some(port),
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
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(());
        }
        if let Some(name) = t.strip_prefix("START_").filter(|n| ib::is_section_name(n)) {
            if let Some(open) = &self.section {
                let msg = format!("END_{} before a new section starts", open.name);
                ctx.bad_record(pos, &msg, raw)?;
            }
            let kind = match name {
                "NODES" => Kind::Nodes,
                "PORTS" => Kind::Ports,
                "LINKS" => Kind::Links,
                "PM_INFO" => Kind::PmInfo,
                _ => {
                    if !self.skipped_sections.iter().any(|s| s == name) && self.skipped_sections.len() < 64 {
                        self.skipped_sections.push(name.to_owned());
                    }
                    Kind::Other
                }
            };
            self.section = Some(Section {
                name: name.to_owned(),
                kind,
                start: pos,
                header: None,
                groups: Vec::new(),
                guid_col: None,
                port_col: None,
                port_cols: Vec::new(),
            });
            return Ok(());
        }
        if let Some(name) = t.strip_prefix("END_").filter(|n| ib::is_section_name(n)) {
            match &self.section {
                Some(open) if open.name == name => self.section = None,
                Some(open) => {
                    let msg = format!("END_{}", open.name);
                    ctx.bad_record(pos, &msg, raw)?;
                    self.section = None;
                }
                None => ctx.bad_record(pos, "a START_<SECTION> line before END_", raw)?,
            }
            return Ok(());
        }
        let Some(sec) = &self.section else {
            return ctx.bad_record(pos, "a START_<SECTION> line", raw);
        };
        if sec.kind == Kind::Other {
            return Ok(());
        }
        let cells = split_csv(t);
        if sec.header.is_none() {
            self.header(cells.into_iter().map(Cow::into_owned).collect(), ctx);
            return Ok(());
        }
        self.row(&cells, raw, pos, ctx)
    }

    fn links(&self) -> LinkSet {
        let mut set = LinkSet::new();
        let end = |guid: &str, port: u16| {
            let (name, node_type) = self.nodes.get(guid).cloned().unwrap_or((None, NodeType::Unknown));
            let lid = self.ports.get(&(guid.to_owned(), port)).and_then(|f| f.lid);
            End { guid: guid.to_owned(), port, name, node_type, lid, port_name: None }
        };
        for (a, pa, b, pb) in &self.links {
            let facts = self
                .ports
                .get(&(a.clone(), *pa))
                .or_else(|| self.ports.get(&(b.clone(), *pb)))
                .cloned()
                .unwrap_or_default();
            set.add(Link {
                a: end(a, *pa),
                b: end(b, *pb),
                width: facts.width,
                speed: facts.speed,
                supported_width: facts.supported_width,
                supported_speed: facts.supported_speed,
            });
        }
        set
    }
}

impl LineReader for DbCsvReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(open) = self.section.take() {
            let msg = format!("END_{} (the section starting here is truncated)", open.name);
            ctx.bad_record(open.start, &msg, format!("START_{}", open.name).as_bytes())?;
        }
        if !self.skipped_sections.is_empty() {
            ctx.warn(format!("sections not read: {}", self.skipped_sections.join(", ")));
        }
        crate::topology::emit(self.links(), ctx, "ibdiagnet-db-csv")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_and_codes() {
        assert_eq!(split_csv(r#""MF0;sw:MQM8700/U1",2,"a,b""c""#), vec!["MF0;sw:MQM8700/U1", "2", r#"a,b"c"#]);
        assert_eq!(width_of(2), Some("4x"));
        assert_eq!(width_of(3), Some("4x"));
        assert_eq!(width_of(0), None);
        assert_eq!(speed_of(Some(4), Some(2)), Some("EDR"));
        assert_eq!(speed_of(Some(4), Some(0)), Some("QDR"));
        assert_eq!(speed_of(Some(7), Some(31)), Some("XDR"));
    }
}

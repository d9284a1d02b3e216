//! `ibdiagnet2.net_dump`: the per-port table ibdiagnet writes next to `ibdiagnet2.db_csv`. No real
//! file is public; this follows the formats reference §4.1 and the public parser
//! `check_ib_link_status` (HyungKwang/My-Programing), which reads blocks with the regex
//! `^"(.+)", \w+, (\w+), LID \d+\n((.*\w+.*\n)+)^$\n` and the table with separator ` :`:
//!
//! ```text
//! "MF0;leaf01:MQM8700/U1", Mellanox, 0xb8cef603001bf9de, LID 1
//! IB#  : Sta  : PhysSta  : MTU  : LWA : LSA : FEC mode    : Neighbor Guid      : N#  : NLID : Neighbor Description
//! 1    : ACT  : LINK UP  : 4096 : 4x  : 25  : RS-FEC      : 0x0c42a1030065a1b2 : 1   : 5    : "node01 HCA-1"
//! 2    : DOWN : POLLING  :      :     :     :             :                    :     :      :
//! ```
//!
//! * A block starts with `"<node description>", <vendor>, <guid>, LID <lid>` and ends at a blank
//!   line (or end of input). Its first line after that is the column header; columns are found
//!   by name (`IB#`, `Sta`, `PhysSta`, `MTU`, `LWA`, `LSA`, `FEC mode`, `Retrans Mode`,
//!   `Neighbor Guid`, `N#`, `NLID`, `Neighbor Description`), case-insensitively. Cells are split on
//!   ` :` (a node description like `MF0;sw:MQM8700/U1` keeps its colon); short rows (down ports)
//!   are padded with empty cells.
//! * Gauges per port: `port_state_id` (`ACT` 4, `DOWN` 1, `INI` 2, `ARM` 3),
//!   `port_phys_state_id` (`LINK UP` 5, `POLLING` 2, `DISABLED` 3, ...), `link_width_lanes` from
//!   `LWA`, and `link_rate_bytes_per_s` from LWA and `LSA`: LSA is the per-lane rate in Gb/s as
//!   ibdiagnet prints it (2.5, 5, 10, 14, 25, 50, 100, 200) or `FDR10`; it is mapped to the speed
//!   name, whose effective data rate gives the rate (as for iblinkinfo). `N/A`/empty: no row.
//! * Attributes per port: `port_state`, `phys_state`, `mtu`, `link_width`, `link_speed`,
//!   `fec_mode`, `retransmission_mode`, `neighbor_guid`, `neighbor_port`, `neighbor_lid`,
//!   `neighbor_description`; per node (port null): `node_description`, `vendor`, `lid`.
//! * Links: every row with a `Neighbor Guid` and `N#` is one link of the `links` table (source
//!   `ibdiagnet-net-dump`; both directions merge), with width and speed from `LWA`/`LSA`, LIDs
//!   from the block header and `NLID`, names from the block header and `Neighbor Description`.
//!   The file states no node types: a node whose block lists more than two ports is a switch (an
//!   HCA node has one or two) and so is one described `MF0;<name>:<model>/U1` (managed switches);
//!   a node described `<host> HCA-<n>` or `<host> mlx5_<n>` (the `rdma-ndd` default node
//!   description) is an HCA; other nodes stay `unknown`.
//! * No timestamps in the file: the fallbacks apply. Host: the argument.
//! * Errors: a line outside a block that is not a block header, a block header with a bad GUID,
//!   a header row without `IB#`, a port that is not a number, a block without a column header.

use crate::error::{Position, Result};
use crate::formats::common::{net_dump_block_header, phys_state_id, state_id};
use crate::formats::ib;
use crate::formats::{LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Attribute, Value};
use crate::topology::{End, Link, LinkSet, NodeType};

/// Columns read, in the order [`Block::cols`] holds their indexes.
const COLUMNS: [&str; 12] = [
    "IB#",
    "Sta",
    "PhysSta",
    "MTU",
    "LWA",
    "LSA",
    "FEC mode",
    "Retrans Mode",
    "Neighbor Guid",
    "N#",
    "NLID",
    "Neighbor Description",
];
const PORT: usize = 0;
const STA: usize = 1;
const PHYS: usize = 2;
const LWA: usize = 4;
const LSA: usize = 5;

/// Attribute keys of the columns (same order as [`COLUMNS`]; `None`: not an attribute).
const ATTR_KEYS: [Option<&str>; 12] = [
    None,
    Some("port_state"),
    Some("phys_state"),
    Some("mtu"),
    None, // link_width, normalised
    None, // link_speed, normalised
    Some("fec_mode"),
    Some("retransmission_mode"),
    None, // neighbor_guid, normalised
    Some("neighbor_port"),
    Some("neighbor_lid"),
    Some("neighbor_description"),
];
const NEIGHBOR_GUID: usize = 8;
const NEIGHBOR_PORT: usize = 9;
const NEIGHBOR_LID: usize = 10;
const NEIGHBOR_DESCRIPTION: usize = 11;

#[derive(Debug)]
struct Block {
    guid: String,
    name: Option<String>,
    lid: Option<u32>,
    start: Position,
    /// Number of header cells and the index of each of [`COLUMNS`].
    width: usize,
    cols: Option<[Option<usize>; 12]>,
    /// The column header was unreadable: rows are skipped until the block ends.
    skip: bool,
}

/// Speed name from `LSA`: per-lane Gb/s as ibdiagnet prints it, or a name (`FDR10`).
fn speed_from_lsa(s: &str) -> Option<&'static str> {
    if let Some(n) = ib::speed_name(s) {
        return Some(n);
    }
    let g: f64 = s.trim().parse().ok()?;
    [
        (2.5, "SDR"),
        (5.0, "DDR"),
        (10.0, "QDR"),
        (14.0, "FDR"),
        (25.0, "EDR"),
        (50.0, "HDR"),
        (100.0, "NDR"),
        (200.0, "XDR"),
    ]
    .iter()
    .find(|(v, _)| (v - g).abs() < 1e-9)
    .map(|(_, n)| *n)
}

fn empty(s: &str) -> bool {
    s.is_empty() || s.eq_ignore_ascii_case("n/a") || s == "-"
}

/// Streaming reader for `ibdiagnet2.net_dump`.
#[derive(Default)]
pub struct NetDumpReader {
    block: Option<Block>,
    stamp: Option<(i64, i32, String)>,
    /// Links seen, typed once every block is read.
    links: Vec<Link>,
    /// Port rows per node GUID (a switch lists more than two).
    port_rows: ahash::AHashMap<String, usize>,
}

/// Node type from what a net_dump says about a node: its port count and its description.
fn infer_type(ports: usize, name: Option<&str>) -> NodeType {
    // `MF0;<name>:<model>/U1` is how managed NVIDIA/Mellanox switches describe themselves.
    if ports > 2 || name.is_some_and(|n| n.starts_with("MF0;")) {
        return NodeType::Switch;
    }
    let hca_name = name.is_some_and(|n| {
        n.rsplit_once(' ').is_some_and(|(_, last)| {
            last.strip_prefix("HCA-")
                .or_else(|| last.strip_prefix("mlx5_"))
                .or_else(|| last.strip_prefix("mlx4_"))
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
    });
    if hca_name { NodeType::Hca } else { NodeType::Unknown }
}

impl NetDumpReader {
    /// A reader for one input.
    pub fn new() -> Self {
        NetDumpReader::default()
    }

    fn stamp(&mut self, ctx: &mut ReadContext<'_>) -> Result<(i64, i32, String)> {
        if let Some(s) = &self.stamp {
            return Ok(s.clone());
        }
        let t = ctx.fallback_time_ns()?;
        let h = ctx.fallback_host();
        let s = (t, ctx.samples.host(&h), h);
        self.stamp = Some(s.clone());
        Ok(s)
    }

    fn end_block(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(b) = self.block.take()
            && b.cols.is_none()
        {
            let found = format!("\"...\", ..., {}, LID ... (block without a table)", b.guid);
            return ctx.bad_record(
                b.start,
                "a column header line (`IB# : Sta : ...`) after the block header",
                found.as_bytes(),
            );
        }
        Ok(())
    }

    fn row(&mut self, t: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let (time_ns, host, host_name) = self.stamp(ctx)?;
        let Some(b) = self.block.as_ref() else { return Ok(()) };
        let Some(cols) = b.cols else { return Ok(()) };
        let cells: Vec<&str> = t.splitn(b.width.max(1), " :").map(str::trim).collect();
        let cell = |i: usize| cols.get(i).copied().flatten().and_then(|c| cells.get(c).copied()).unwrap_or("");
        let Ok(port) = cell(PORT).parse::<u16>() else {
            return ctx.bad_record(pos, "a port number in the `IB#` column", raw);
        };
        let guid = b.guid.clone();
        let device = ctx.samples.device(&guid);
        let width = ib::width(cell(LWA));
        let speed = speed_from_lsa(cell(LSA));
        let mut gauges: Vec<(&str, Value)> = Vec::with_capacity(4);
        if let Some(v) = state_id(cell(STA)) {
            gauges.push(("port_state_id", Value::U64(v)));
        }
        if let Some(v) = phys_state_id(cell(PHYS)) {
            gauges.push(("port_phys_state_id", Value::U64(v)));
        }
        if let Some((_, n)) = &width {
            gauges.push(("link_width_lanes", Value::U64(u64::from(*n))));
            if let Some(g) = speed.and_then(ib::lane_data_gbps) {
                gauges.push(("link_rate_bytes_per_s", Value::from_f64(f64::from(*n) * g * 1e9 / 8.0)));
            }
        }
        ib::push_port_gauges(ctx, time_ns, host, device, port, &gauges)?;
        let mut attrs: Vec<(&str, String)> = Vec::with_capacity(12);
        for (i, key) in ATTR_KEYS.iter().enumerate() {
            let v = cell(i);
            if let Some(k) = key
                && !empty(v)
            {
                attrs.push((k, v.trim_matches('"').to_owned()));
            }
        }
        let link_width = width.as_ref().map(|(w, _)| w.clone());
        if let Some(w) = &link_width {
            attrs.push(("link_width", w.clone()));
        }
        if let Some(s) = speed {
            attrs.push(("link_speed", s.to_owned()));
        }
        if let Some(g) = ib::normalize_guid(cell(NEIGHBOR_GUID)) {
            attrs.push(("neighbor_guid", g));
        }
        for (key, value) in &attrs {
            let a = Attribute { time_ns, host: 0, device: 0, port: Some(port), key, value };
            ctx.push_attribute(&host_name, &guid, &a)?;
        }
        *self.port_rows.entry(guid.clone()).or_default() += 1;
        if let (Some(peer_guid), Ok(peer_port)) =
            (ib::normalize_guid(cell(NEIGHBOR_GUID)), cell(NEIGHBOR_PORT).parse::<u16>())
        {
            let peer_name = cell(NEIGHBOR_DESCRIPTION).trim_matches('"').trim();
            let local =
                End { guid, port, name: b.name.clone(), node_type: NodeType::Unknown, lid: b.lid, port_name: None };
            let peer = End {
                guid: peer_guid,
                port: peer_port,
                name: (!empty(peer_name)).then(|| peer_name.to_owned()),
                node_type: NodeType::Unknown,
                lid: cell(NEIGHBOR_LID).parse().ok(),
                port_name: None,
            };
            self.links.push(Link {
                a: local,
                b: peer,
                width: link_width,
                speed: speed.map(str::to_owned),
                supported_width: None,
                supported_speed: None,
            });
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return self.end_block(ctx);
        }
        if t.starts_with('#') {
            return Ok(());
        }
        if let Some((desc, vendor, guid_text, lid)) = net_dump_block_header(t) {
            self.end_block(ctx)?;
            let Some(guid) = ib::normalize_guid(guid_text) else {
                return ctx.bad_record(pos, "a hex node GUID in the block header", raw);
            };
            let (time_ns, _, host_name) = self.stamp(ctx)?;
            for (key, value) in [("node_description", desc), ("vendor", vendor), ("lid", lid)] {
                if !value.is_empty() {
                    let a = Attribute { time_ns, host: 0, device: 0, port: None, key, value };
                    ctx.push_attribute(&host_name, &guid, &a)?;
                }
            }
            let name = Some(desc.trim().to_owned()).filter(|d| !d.is_empty());
            self.block =
                Some(Block { guid, name, lid: lid.parse().ok(), start: pos, width: 0, cols: None, skip: false });
            return Ok(());
        }
        let Some(block) = self.block.as_mut() else {
            return ctx.bad_record(pos, "a block header `\"<description>\", <vendor>, 0x<guid>, LID <n>`", raw);
        };
        if block.skip {
            return Ok(());
        }
        if block.cols.is_none() {
            let names: Vec<&str> = t.split(" :").map(str::trim).collect();
            let find = |n: &str| names.iter().position(|h| h.eq_ignore_ascii_case(n));
            if find("IB#").is_none() {
                // Skip the rest of this block: its rows cannot be read without the header.
                block.width = 0;
                block.cols = Some([None; 12]);
                block.skip = true;
                return ctx.bad_record(pos, "a column header line with `IB#`", raw);
            }
            let mut cols = [None; 12];
            for (slot, name) in cols.iter_mut().zip(COLUMNS) {
                *slot = find(name);
            }
            block.width = names.len();
            block.cols = Some(cols);
            return Ok(());
        }
        self.row(t, raw, pos, ctx)
    }
}

impl LineReader for NetDumpReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        self.end_block(ctx)?;
        let mut names: ahash::AHashMap<String, String> = ahash::AHashMap::new();
        for l in &self.links {
            for e in [&l.a, &l.b] {
                if let Some(n) = &e.name {
                    names.entry(e.guid.clone()).or_insert_with(|| n.clone());
                }
            }
        }
        let ty = |guid: &str| {
            infer_type(self.port_rows.get(guid).copied().unwrap_or(0), names.get(guid).map(String::as_str))
        };
        let mut set = LinkSet::new();
        for mut l in std::mem::take(&mut self.links) {
            l.a.node_type = ty(&l.a.guid);
            l.b.node_type = ty(&l.b.guid);
            set.add(l);
        }
        crate::topology::emit(set, ctx, "ibdiagnet-net-dump")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_states_and_speeds() {
        assert_eq!(
            net_dump_block_header("\"MF0;sw:MQM8700/U1\", Mellanox, 0xb8cef603001bf9de, LID 1"),
            Some(("MF0;sw:MQM8700/U1", "Mellanox", "0xb8cef603001bf9de", "1"))
        );
        assert_eq!(net_dump_block_header("\"x\", Mellanox, 0x1"), None);
        assert_eq!(net_dump_block_header("IB# : Sta"), None);
        assert_eq!(net_dump_block_header("\"é"), None);
        assert_eq!(state_id("ACT"), Some(4));
        assert_eq!(phys_state_id("LINK UP"), Some(5));
        assert_eq!(phys_state_id("Polling"), Some(2));
        assert_eq!(speed_from_lsa("25"), Some("EDR"));
        assert_eq!(speed_from_lsa("FDR10"), Some("FDR10"));
        assert_eq!(speed_from_lsa("2.5"), Some("SDR"));
        assert_eq!(speed_from_lsa("N/A"), None);
    }
}

//! `ibnetdiscover` output, both forms (infiniband-diags `ibnetdiscover.c`).
//!
//! **Ports report** (`-p`), one line per port:
//!
//! ```text
//! CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
//! SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'
//! ```
//!
//! Columns: `type lid port guid width speed [- peertype peerlid peerport peerguid ( 'desc' - 'peerdesc' )]`.
//! A line without the peer part is an unconnected port (speed `???` or the lowest speed): it
//! gives no link.
//!
//! **Topology file** (the default output, what most sites keep): one block per node (fields
//! separated by TABs, shown here as blanks),
//!
//! ```text
//! vendid=0x2c9
//! devid=0xcb20
//! sysimgguid=0xe41d2d030003e470
//! switchguid=0xe41d2d030003e470(e41d2d030003e470)
//! Switch  36 "S-e41d2d030003e470"    # "SwitchIB Mellanox Technologies" base port 0 lid 268 lmc 0
//! [3]  "S-f4521403005764b0"[1]    # "MF0;switch-de779e:SX6012/U1" lid 174 4xFDR
//! [34]  "H-e41d2d030061f957"[1](e41d2d030061f957)     # "r-ufm216 HCA-2" lid 2 4xEDR
//!
//! caguid=0xe41d2d030061f957
//! Ca  1 "H-e41d2d030061f957"    # "r-ufm216 HCA-2"
//! [1](e41d2d030061f957)   "S-e41d2d030003e470"[34]    # lid 2 lmc 0 "SwitchIB Mellanox Technologies" lid 268 4xEDR
//! ```
//!
//! * `vendid=`, `devid=`, `sysimgguid=`, `switchguid=`/`caguid=`/`rtguid=` start a node; a
//!   `Switch|Ca|Rt <ports> "S-|H-|R-<guid>" # "<desc>" ...` header names it (a switch header
//!   also gives its LID: `base|enhanced port 0 lid N lmc M`).
//! * Port lines `[port](port guid)? "X-<peer guid>"[peer port](peer port guid)? # ...` give one
//!   link each; after `#` a CA/router port has `lid N lmc M`, then every port has
//!   `"<peer desc>" lid <peer lid> <width><speed>` (`4xEDR`, `1xSDR`; `??`/`???` when unknown),
//!   and `--full` adds ` s=N w=N v=N`. Grouped output (`-g`) adds `[ext N]` after port numbers,
//!   `Chassis N (guid 0x...)`, `Hostname: ...` and `Non-Chassis Nodes` lines, all read or skipped.
//! * Diagnostics ibnetdiscover writes to stderr when a MAD times out (`ibwarn: ...`,
//!   `src/query_smp.c:195; umad (...) bad status 110; ...`), kept when the output was captured
//!   with `2>&1`, are skipped with a warning.
//!
//! Both forms feed the `links` table (see `crate::topology`; both directions merge into one row)
//! and give each connected local port two gauges, `link_width_lanes` and `link_rate_bytes_per_s`
//! (width x effective lane rate), with device = node GUID. Node descriptions are trimmed
//! (switches often end theirs with a blank) and stored as `node_description` attributes; the
//! topology file adds `vendor_id`, `device_id` and `system_image_guid` per node.

use crate::error::{Position, Result};
use crate::formats::ib;
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Value};
use crate::timestamp::Stamp;
use crate::topology::{End, Link, LinkSet, NodeType};

/// True for `CA|SW|RT <lid> <port> 0x<guid> ...`.
pub fn looks_like_port_line(t: &str) -> bool {
    let mut w = t.split_whitespace();
    let digits = |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    matches!(w.next(), Some("CA" | "SW" | "RT"))
        && digits(w.next())
        && digits(w.next())
        && w.next().is_some_and(|g| g.starts_with("0x") && ib::normalize_guid(g).is_some())
}

/// One parsed port line.
#[derive(Debug, Clone, PartialEq)]
pub struct PortLine {
    /// This port.
    pub local: End,
    /// Its peer, when connected.
    pub peer: Option<End>,
    /// Active width (`4x`).
    pub width: Option<String>,
    /// Active speed name.
    pub speed: Option<String>,
}

/// Parse one line; `None` when it is not a port line.
pub fn parse_line(t: &str) -> Option<PortLine> {
    if !looks_like_port_line(t) {
        return None;
    }
    let mut w = t.split_whitespace();
    let node_type = NodeType::parse(w.next()?);
    let lid: u32 = w.next()?.parse().ok()?;
    let port: u16 = w.next()?.parse().ok()?;
    let guid = ib::normalize_guid(w.next()?)?;
    let width = w.next().and_then(ib::width).map(|(s, _)| s);
    let speed = w.next().and_then(ib::speed_name).map(str::to_owned);
    let mut local = End { guid, port, name: None, node_type, lid: Some(lid), port_name: None };
    let rest: Vec<&str> = w.collect();
    if rest.first() != Some(&"-") {
        // Unconnected: the rest is the node description, quoted or not.
        let desc = rest.join(" ");
        let desc = desc.trim().trim_matches('\'').trim();
        local.name = (!desc.is_empty()).then(|| desc.to_owned());
        return Some(PortLine { local, peer: None, width, speed });
    }
    let peer_type = NodeType::parse(rest.get(1)?);
    let peer_lid: u32 = rest.get(2)?.parse().ok()?;
    let peer_port: u16 = rest.get(3)?.parse().ok()?;
    let peer_guid = ib::normalize_guid(rest.get(4)?)?;
    let mut peer = End {
        guid: peer_guid,
        port: peer_port,
        name: None,
        node_type: peer_type,
        lid: Some(peer_lid),
        port_name: None,
    };
    // `( 'desc' - 'peerdesc' )`: descriptions may hold spaces, so split on the quoted separator.
    // ibnetdiscover always prints it after a peer (`" ( '%s' - '%s' )\n"`): a line without it was
    // cut, and its peer GUID or port may be cut short too (`0x5`), so it is not a link.
    let (_, names) = t.split_once("( '")?;
    let names = names.trim_end().trim_end_matches(')').trim_end().trim_end_matches('\'');
    if let Some((a, b)) = names.split_once("' - '") {
        local.name = Some(a.trim().to_owned()).filter(|s| !s.is_empty());
        peer.name = Some(b.trim().to_owned()).filter(|s| !s.is_empty());
    }
    Some(PortLine { local, peer: Some(peer), width, speed })
}

/// `"S-0002c9020046c588"` (a switch), `"H-..."` (a CA), `"R-..."` (a router) at the start of `s`:
/// the node's type, normalised GUID and the text after the closing quote.
fn node_token(s: &str) -> Option<(NodeType, String, &str)> {
    let body = s.strip_prefix('"')?;
    let (kind, rest) = body.split_at_checked(2)?;
    let node_type = match kind {
        "S-" => NodeType::Switch,
        "H-" => NodeType::Hca,
        "R-" => NodeType::Router,
        _ => return None,
    };
    let (hex, after) = rest.split_once('"')?;
    if hex.len() != 16 {
        return None;
    }
    Some((node_type, ib::normalize_guid(hex)?, after))
}

/// A node header of the topology file.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeHeader {
    /// This node.
    pub node_type: NodeType,
    /// Normalised node GUID.
    pub guid: String,
    /// Node description (the quoted text after `#`).
    pub name: Option<String>,
    /// The switch's LID (`base port 0 lid N`); CAs give theirs per port.
    pub lid: Option<u32>,
}

/// `Switch\t36 "S-<guid>"\t\t# "<desc>" base port 0 lid 48 lmc 0`, `Ca\t2 "H-<guid>"\t\t# "<desc>"`,
/// `Rt\t...`; `None` for anything else (a cut header too: its GUID or description is incomplete).
pub fn parse_node_header(t: &str) -> Option<NodeHeader> {
    let (kind, rest) = t.split_once(char::is_whitespace)?;
    let expected = match kind {
        "Switch" => NodeType::Switch,
        "Ca" => NodeType::Hca,
        "Rt" => NodeType::Router,
        _ => return None,
    };
    let (ports, rest) = rest.trim_start().split_once(char::is_whitespace)?;
    if ports.is_empty() || !ports.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (node_type, guid, rest) = node_token(rest.trim_start())?;
    if node_type != expected {
        return None;
    }
    let comment = rest.trim_start().strip_prefix('#')?.trim_start();
    let body = comment.strip_prefix('"')?;
    // The description may hold quotes of its own: it ends at the last quote.
    let (name, after) = body.rsplit_once('"')?;
    let name = Some(name.trim().to_owned()).filter(|n| !n.is_empty());
    let mut lid = None;
    if node_type == NodeType::Switch {
        // `base|enhanced port 0 lid N lmc M`
        let words: Vec<&str> = after.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "lid")?;
        lid = Some(words.get(at + 1)?.parse().ok()?);
    }
    Some(NodeHeader { node_type, guid, name, lid })
}

/// One link line of the topology file.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyPort {
    /// The local port number.
    pub port: u16,
    /// The local port's LID when the line gives it (CA and router ports: `# lid N lmc M`).
    pub lid: Option<u32>,
    /// The peer end (GUID, port, type, LID, description).
    pub peer: End,
    /// Active width (`4x`), `None` when printed as `??`.
    pub width: Option<String>,
    /// Active speed name, `None` when printed as `???`.
    pub speed: Option<String>,
}

/// Skip `[ext N]` and `(port guid)` groups (and blanks) at the start of `s`.
fn skip_port_extras(mut s: &str) -> Option<&str> {
    loop {
        s = s.trim_start();
        if s.starts_with("[ext") {
            s = s.split_once(']')?.1;
        } else if let Some(r) = s.strip_prefix('(') {
            let (g, rest) = r.split_once(')')?;
            if g.is_empty() || !g.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            s = rest;
        } else {
            return Some(s);
        }
    }
}

/// `4xEDR` → (`4x`, `EDR`); the unknown parts ibnetdiscover prints as `??` (width) and `???`
/// (speed) become `None`. `None` overall for anything else (a cut `4xE`).
fn width_speed(token: &str) -> Option<(Option<String>, Option<String>)> {
    let (width, speed) = if let Some(rest) = token.strip_prefix("??") {
        (None, rest)
    } else {
        let x = token.find(['x', 'X'])?;
        let (w, rest) = token.split_at(x + 1);
        (Some(ib::width(w)?.0), rest)
    };
    let speed = match speed {
        "???" => None,
        s => Some(ib::speed_name(s)?.to_owned()),
    };
    Some((width, speed))
}

/// `[34](portguid) "H-<guid>"[1](peer port guid) # [lid N lmc M] "<peer desc>" lid N 4xEDR ...`;
/// `None` when the line is not one (or was cut: the width and speed end every complete line).
pub fn parse_topology_port(t: &str) -> Option<TopologyPort> {
    let (port, rest) = t.strip_prefix('[')?.split_once(']')?;
    let port: u16 = port.parse().ok()?;
    let (peer_type, peer_guid, rest) = node_token(skip_port_extras(rest)?)?;
    let (peer_port, rest) = rest.strip_prefix('[')?.split_once(']')?;
    let peer_port: u16 = peer_port.parse().ok()?;
    let mut comment = skip_port_extras(rest)?.strip_prefix('#')?.trim_start();
    let mut lid = None;
    if let Some(r) = comment.strip_prefix("lid ") {
        let mut w = r.split_whitespace();
        lid = Some(w.next()?.parse().ok()?);
        if w.next()? != "lmc" {
            return None;
        }
        w.next()?.parse::<u32>().ok()?;
        comment = r.split_once('"').map(|(_, d)| d)?;
    } else {
        comment = comment.strip_prefix('"')?;
    }
    // The description may hold quotes: it ends at the last `" lid `.
    let (name, after) = comment.rsplit_once("\" lid ")?;
    let mut w = after.split_whitespace();
    let peer_lid: u32 = w.next()?.parse().ok()?;
    let (width, speed) = width_speed(w.next()?)?;
    let name = Some(name.trim().to_owned()).filter(|n| !n.is_empty());
    let peer =
        End { guid: peer_guid, port: peer_port, name, node_type: peer_type, lid: Some(peer_lid), port_name: None };
    Some(TopologyPort { port, lid, peer, width, speed })
}

/// True for a line only the topology file has: `switchguid=0x..`/`caguid=0x..`/`rtguid=0x..`, a
/// `Switch|Ca|Rt <ports> "S-|H-|R-<guid>" # ...` node header, or a complete port line.
pub fn looks_like_topology_line(t: &str) -> bool {
    parse_id(t).is_some_and(|(k, _)| k == "node_guid")
        || parse_node_header(t).is_some()
        || parse_topology_port(t).is_some()
}

/// A line ibnetdiscover (libibmad, libibnetdisc) writes to stderr: `ibwarn: [pid] fn: ...`,
/// `src/query_smp.c:195; umad (...) bad status 110; Connection timed out`.
fn is_diagnostic(t: &str) -> bool {
    if t.starts_with("ibwarn:") || t.starts_with("ibnetdiscover:") || t.starts_with("ibnetdisc ") {
        return true;
    }
    let Some((path, rest)) = t.split_once(".c:") else { return false };
    !path.contains(char::is_whitespace)
        && rest.split_once(';').is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// One topology-file line that is not a header or port line: `vendid=0x2c9` and friends.
fn parse_id(t: &str) -> Option<(&'static str, &str)> {
    let (key, value) = t.split_once('=')?;
    let key = match key {
        "vendid" => "vendor_id",
        "devid" => "device_id",
        "sysimgguid" => "system_image_guid",
        "switchguid" | "caguid" | "rtguid" => "node_guid",
        _ => return None,
    };
    // `switchguid=0x..(portguid)`, `sysimgguid=0x..\t\t# Chassis 1`: the value ends at the first
    // blank or parenthesis.
    let value = value.split(|c: char| c.is_whitespace() || c == '(').next()?;
    let hex = value.strip_prefix("0x")?;
    (!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some((key, value))
}

/// The topology-file node being read and the ids printed before its header.
#[derive(Debug, Default)]
struct TopologyNode {
    ids: Vec<(&'static str, String)>,
    header: Option<NodeHeader>,
}

/// Streaming reader for `ibnetdiscover` (ports report and topology file).
#[derive(Default)]
pub struct IbnetdiscoverReader {
    directives: DirectiveState,
    links: LinkSet,
    described: ahash::AHashSet<String>,
    node: TopologyNode,
    /// `# Topology file: generated on <ctime>`: used when no timestamp line dates the records.
    generated_ns: Option<i64>,
}

impl IbnetdiscoverReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbnetdiscoverReader::default()
    }

    /// The time of the current record: a timestamp line, else the file's `generated on` line,
    /// else the driver's fallbacks.
    fn time_ns(&self, ctx: &mut ReadContext<'_>) -> Result<i64> {
        // `generated on <ctime>` is written to the second.
        let generated = self.generated_ns.map(|ns| Stamp { ns, resolution_ns: 1_000_000_000 });
        match self.directives.explicit_time().or(generated) {
            Some(t) => Ok(ctx.stated_time(t)),
            None => ctx.fallback_time_ns(),
        }
    }

    /// Store a node's description once (both forms name each node many times).
    fn describe(&mut self, end: &End, time_ns: i64, host_name: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(n) = &end.name
            && self.described.insert(end.guid.clone())
        {
            let a = Attribute { time_ns, host: 0, device: 0, port: None, key: "node_description", value: n };
            ctx.push_attribute(host_name, &end.guid, &a)?;
        }
        Ok(())
    }

    /// Width and rate gauges of a connected local port, then the link.
    fn link(
        &mut self,
        local: End,
        peer: End,
        width: Option<String>,
        speed: Option<String>,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        let time_ns = self.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        self.describe(&local, time_ns, &host_name, ctx)?;
        self.describe(&peer, time_ns, &host_name, ctx)?;
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&local.guid);
        if let Some((_, n)) = width.as_deref().and_then(ib::width) {
            let mut gauges = vec![("link_width_lanes", Value::U64(u64::from(n)))];
            if let Some(g) = speed.as_deref().and_then(ib::lane_data_gbps) {
                gauges.push(("link_rate_bytes_per_s", Value::from_f64(f64::from(n) * g * 1e9 / 8.0)));
            }
            ib::push_port_gauges(ctx, time_ns, host, device, local.port, &gauges)?;
        }
        self.links.add(Link { a: local, b: peer, width, speed, supported_width: None, supported_speed: None });
        Ok(())
    }

    /// A node header: its ids (printed before it) and description become attributes.
    fn header(&mut self, h: NodeHeader, ctx: &mut ReadContext<'_>) -> Result<()> {
        let time_ns = self.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        for (key, value) in std::mem::take(&mut self.node.ids) {
            if key == "node_guid" {
                continue; // the header's own GUID is the device
            }
            let a = Attribute { time_ns, host: 0, device: 0, port: None, key, value: &value };
            ctx.push_attribute(&host_name, &h.guid, &a)?;
        }
        let end = End {
            guid: h.guid.clone(),
            port: 0,
            name: h.name.clone(),
            node_type: h.node_type,
            lid: h.lid,
            port_name: None,
        };
        self.describe(&end, time_ns, &host_name, ctx)?;
        self.node.header = Some(h);
        Ok(())
    }

    fn topology_port(&mut self, p: TopologyPort, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(h) = &self.node.header else {
            return ctx.bad_record(
                pos,
                "a `Switch|Ca|Rt <ports> \"S-|H-|R-<guid>\" # ...` node header before its port lines",
                raw,
            );
        };
        let local = End {
            guid: h.guid.clone(),
            port: p.port,
            name: h.name.clone(),
            node_type: h.node_type,
            lid: p.lid.or(h.lid),
            port_name: None,
        };
        self.link(local, p.peer, p.width, p.speed, ctx)
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(p) = parse_line(t) {
            let Some(peer) = p.peer else { return Ok(()) };
            return self.link(p.local, peer, p.width, p.speed, ctx);
        }
        if t.starts_with('[') {
            return match parse_topology_port(t) {
                Some(p) => self.topology_port(p, raw, pos, ctx),
                None => ctx.bad_record(
                    pos,
                    "a port line `[<port>] \"S-|H-|R-<guid>\"[<port>] # [lid N lmc M] \"<desc>\" lid <lid> <width><speed>`",
                    raw,
                ),
            };
        }
        if let Some((key, value)) = parse_id(t) {
            if key == "vendor_id" {
                // `vendid=` is the first line of every node block.
                self.node = TopologyNode::default();
            }
            self.node.ids.push((key, value.to_owned()));
            return Ok(());
        }
        if matches!(t.split_whitespace().next(), Some("Switch" | "Ca" | "Rt")) {
            return match parse_node_header(t) {
                Some(h) => self.header(h, ctx),
                None => {
                    ctx.bad_record(pos, "a node header `Switch|Ca|Rt <ports> \"S-|H-|R-<guid>\" # \"<desc>\" ...`", raw)
                }
            };
        }
        if let Some(when) = t.strip_prefix("# Topology file: generated on") {
            if let Some(ns) = crate::formats::common::parse_started(when) {
                ctx.warn("ibnetdiscover `generated on` is local time without a zone: read as UTC");
                self.generated_ns = Some(ns);
            }
            return Ok(());
        }
        // Grouped output (`-g`): chassis headers and the Xsigo `Hostname:` line (not a host directive).
        if t == "Non-Chassis Nodes" || t.starts_with("Chassis ") || t.starts_with("Hostname: ") {
            return Ok(());
        }
        if is_diagnostic(t) {
            ctx.warn(format!("ibnetdiscover diagnostic skipped at line {}: {t}", pos.line.unwrap_or(0)));
            return Ok(());
        }
        if let Some(d) = parse_directive(t) {
            match d {
                Directive::Time(ts) => self.directives.set_time(ts),
                Directive::Host(h) => self.directives.set_host(h),
                Directive::Device(_) => {}
            }
            return Ok(());
        }
        if t.starts_with('#') || t.starts_with("$ ") {
            return Ok(());
        }
        ctx.bad_record(
            pos,
            "an ibnetdiscover line: `CA|SW|RT <lid> <port> 0x<guid> <width> <speed> [- ...]` (`-p`), or `vendid=`/`devid=`/`sysimgguid=`/`switchguid=`/`caguid=`, a `Switch|Ca|Rt` node header or a `[<port>] \"<node>\"[<port>] # ...` port line (topology file)",
            raw,
        )
    }
}

impl LineReader for IbnetdiscoverReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        crate::topology::emit(std::mem::take(&mut self.links), ctx, "ibnetdiscover")
    }
}

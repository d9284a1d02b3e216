//! `iblinkinfo` output (infiniband-diags `iblinkinfo.c`; speeds from libibmad `dump.c`).
//!
//! ```text
//! CA: n02 HCA-1:
//!       0xec0d9a03003d62be      4    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       2   17[  ] "MF0;SB7700:MSB7700/U1" ( )
//! Switch: 0x506b4b0300820910 MF0;SB7700:MSB7700/U1:
//!            2    1[  ] ==(                Down/ Polling)=...
//!            2   17[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       4    1[  ] "n02 HCA-1" ( Could be 12X )
//! ```
//!
//! * Blocks `Switch: 0x<guid> <desc>:` and `CA: <desc>:` (CA lines start with the port GUID).
//!   The `-l` form puts both GUIDs on every line and is read too.
//! * The speed is the per-lane **signalling** rate (`25.78125 Gbps` = EDR, `10.0 Gbps (FDR10)`);
//!   it is turned into the speed name. `( Could be 12X Could be 14.0625 Gbps )` gives the
//!   supported width and speed of a link running below its capability.
//! * Every port line gives its state: gauges `port_state_id` (IBA PortState: 1 Down,
//!   2 Initialize, 3 Armed, 4 Active) and `port_phys_state_id` (IBA PortPhysicalState: 2 Polling,
//!   3 Disabled, 5 LinkUp, ...), and attributes `port_state`/`phys_state` with the words
//!   iblinkinfo prints, as for `ibdiagnet2.net_dump`; the port-down finding reads them.
//! * Down ports (`Down/ Polling`) have no link. Without `-l` the peer is named by LID: it is
//!   resolved to a GUID through the LIDs of the blocks read; links whose peer is not in the
//!   input are dropped with a warning.
//! * Connected ports give `link_width_lanes` and `link_rate_bytes_per_s` gauges, and the links
//!   feed the `links` table at the end of the input. Host: argument; time: timestamp lines, else
//!   the fallbacks.

use ahash::AHashMap;

use crate::error::{Position, Result};
use crate::formats::ib;
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Value};
use crate::topology::{End, Link, LinkSet, NodeType};

#[derive(Debug, Clone)]
struct Block {
    guid: Option<String>,
    name: Option<String>,
    node_type: NodeType,
}

#[derive(Debug, Clone)]
struct Pending {
    local: End,
    peer_guid: Option<String>,
    peer_lid: u32,
    peer_port: u16,
    peer_name: Option<String>,
    width: Option<String>,
    speed: Option<String>,
    supported_width: Option<String>,
    supported_speed: Option<String>,
}

/// Streaming reader for iblinkinfo output.
#[derive(Default)]
pub struct IblinkinfoReader {
    block: Option<Block>,
    directives: DirectiveState,
    pending: Vec<Pending>,
    lids: AHashMap<u32, (String, NodeType)>,
    /// Nodes whose type and description attributes were stored.
    described: ahash::AHashSet<String>,
}

/// `4[  ]` or `17` → port number.
fn port_token(t: &str) -> Option<u16> {
    t.split('[').next()?.parse().ok()
}

/// Parse `lid port[ext]` tokens after an optional GUID and quoted description.
fn lid_port(part: &str) -> Option<(Option<String>, Option<String>, u32, u16)> {
    let mut s = part.trim();
    let mut guid = None;
    if s.starts_with("0x") {
        let (g, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
        guid = Some(ib::normalize_guid(g)?);
        s = rest.trim_start();
    }
    let mut name = None;
    if let Some(q) = s.strip_prefix('"') {
        let (n, rest) = q.split_once('"')?;
        name = Some(n.trim().to_owned()).filter(|n| !n.is_empty());
        s = rest.trim_start();
    }
    let mut w = s.split_whitespace();
    let lid = w.next()?.parse().ok()?;
    let port = port_token(w.next()?)?;
    Some((guid, name, lid, port))
}

/// The text after `==(` up to its `)`: `4X 25.78125 Gbps Active/  LinkUp` → (`Active`, `LinkUp`),
/// `               Down/ Polling` → (`Down`, `Polling`). `None` without a `state/ phys` pair.
fn parse_states(right: &str) -> Option<(&str, &str)> {
    let inner = right.split(')').next()?;
    let (left, phys) = inner.split_once('/')?;
    let state = left.split_whitespace().last()?;
    let phys = phys.trim();
    (!phys.is_empty() && !phys.contains(char::is_whitespace)).then_some((state, phys))
}

/// `( Could be 12X Could be 10.0 Gbps )` → supported width and speed.
fn could_be(diag: &str) -> (Option<String>, Option<String>) {
    let (mut width, mut speed) = (None, None);
    for piece in diag.split("Could be").skip(1) {
        let p = piece.trim().trim_end_matches(')').trim();
        if let Some((w, _)) = p.split_whitespace().next().and_then(ib::width) {
            width = Some(w);
        } else if let Some(s) = ib::speed_from_signalling(p) {
            speed = Some(s.to_owned());
        }
    }
    (width, speed)
}

impl IblinkinfoReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IblinkinfoReader::default()
    }

    fn link_line(&mut self, t: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`[0x<guid>] <lid> <port>[..] ==( <width> <speed> Gbps <state>/ <phys>)==> <lid> <port>[..] \"<desc>\" ( ... )`";
        let Some((left, right)) = t.split_once("==(") else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some((local_guid, local_name, lid, port)) = lid_port(left) else {
            return ctx.bad_record(pos, EXPECTED, raw);
        };
        let block = self.block.clone().unwrap_or(Block { guid: None, name: None, node_type: NodeType::Unknown });
        let Some(guid) = local_guid.or(block.guid) else {
            return ctx.bad_record(pos, "a node GUID (a `Switch: 0x...` block or a GUID on the line)", raw);
        };
        let node_type = block.node_type;
        self.lids.entry(lid).or_insert_with(|| (guid.clone(), node_type));
        self.describe(&guid, node_type, local_name.as_deref().or(block.name.as_deref()), ctx)?;
        self.port_state(&guid, port, right, ctx)?;
        let Some((link, peer)) = right.split_once(")==>") else {
            return Ok(()); // a down port: `Down/ Polling)=...`
        };
        let mut words = link.split_whitespace();
        let width = words.next().and_then(ib::width).map(|(w, _)| w);
        if width.is_none() {
            return Ok(()); // a down port: `Down/ Polling)==>  [  ] "" ( )` has no width and no peer
        }
        let speed = ib::speed_from_signalling(&words.collect::<Vec<_>>().join(" ")).map(str::to_owned);
        let Some((peer_guid, peer_name, peer_lid, peer_port)) = lid_port(peer) else {
            return ctx.bad_record(pos, EXPECTED, raw);
        };
        // iblinkinfo always quotes the peer's description after its port: a line without it was
        // cut, and the port before the cut may be short (`36` -> `3`), so it is not a link.
        if peer.matches('"').count() < 2 {
            return ctx.bad_record(pos, EXPECTED, raw);
        }
        let diag = peer.rsplit_once('"').map_or("", |(_, d)| d);
        let (supported_width, supported_speed) = could_be(diag);
        let local = End { guid, port, name: local_name.or(block.name), node_type, lid: Some(lid), port_name: None };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&local.guid);
        if let Some((_, n)) = width.as_deref().and_then(ib::width) {
            let mut gauges = vec![("link_width_lanes", Value::U64(u64::from(n)))];
            if let Some(g) = speed.as_deref().and_then(ib::lane_data_gbps) {
                gauges.push(("link_rate_bytes_per_s", Value::from_f64(f64::from(n) * g * 1e9 / 8.0)));
            }
            ib::push_port_gauges(ctx, time_ns, host, device, port, &gauges)?;
        }
        self.pending.push(Pending {
            local,
            peer_guid,
            peer_lid,
            peer_port,
            peer_name,
            width,
            speed,
            supported_width,
            supported_speed,
        });
        Ok(())
    }

    /// The node's type and description as attributes (port null), once per node: a down port has
    /// no link row, so this is what names its switch or HCA.
    fn describe(
        &mut self,
        guid: &str,
        node_type: NodeType,
        name: Option<&str>,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        if !self.described.insert(guid.to_owned()) {
            return Ok(());
        }
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        let mut facts = vec![("node_type", node_type.as_str())];
        if let Some(n) = name {
            facts.push(("node_description", n));
        }
        for (key, value) in facts {
            let a = Attribute { time_ns, host: 0, device: 0, port: None, key, value };
            ctx.push_attribute(&host_name, guid, &a)?;
        }
        Ok(())
    }

    /// `( 4X 25.78125 Gbps Active/  LinkUp)` or `(  Down/ Polling)`: the port's state gauges and
    /// attributes.
    fn port_state(&mut self, guid: &str, port: u16, right: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some((state, phys)) = parse_states(right) else { return Ok(()) };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(guid);
        let mut gauges = Vec::with_capacity(2);
        if let Some(v) = crate::formats::common::state_id(state) {
            gauges.push(("port_state_id", Value::U64(v)));
        }
        if let Some(v) = crate::formats::common::phys_state_id(phys) {
            gauges.push(("port_phys_state_id", Value::U64(v)));
        }
        ib::push_port_gauges(ctx, time_ns, host, device, port, &gauges)?;
        for (key, value) in [("port_state", state), ("phys_state", phys)] {
            let a = Attribute { time_ns, host: 0, device: 0, port: Some(port), key, value };
            ctx.push_attribute(&host_name, guid, &a)?;
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("Switch: ").and_then(|r| r.strip_suffix(':')) {
            let (g, name) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let Some(guid) = ib::normalize_guid(g) else {
                return ctx.bad_record(pos, "`Switch: 0x<guid> <description>:`", raw);
            };
            let name = Some(name.trim().to_owned()).filter(|n| !n.is_empty());
            self.block = Some(Block { guid: Some(guid), name, node_type: NodeType::Switch });
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("CA: ").and_then(|r| r.strip_suffix(':')) {
            let name = Some(rest.trim().to_owned()).filter(|n| !n.is_empty());
            self.block = Some(Block { guid: None, name, node_type: NodeType::Hca });
            return Ok(());
        }
        if t.contains("==(") {
            return self.link_line(t, raw, pos, ctx);
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
        ctx.bad_record(pos, "`Switch: 0x<guid> <desc>:`, `CA: <desc>:` or a `... ==( ... )==> ...` link line", raw)
    }
}

impl LineReader for IblinkinfoReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        let mut set = LinkSet::new();
        let mut unresolved = 0u64;
        for p in std::mem::take(&mut self.pending) {
            let known = self.lids.get(&p.peer_lid).cloned();
            let Some(peer_guid) = p.peer_guid.clone().or_else(|| known.as_ref().map(|(g, _)| g.clone())) else {
                unresolved += 1;
                continue;
            };
            let peer_type = known.map_or(NodeType::Unknown, |(_, t)| t);
            let peer = End {
                guid: peer_guid,
                port: p.peer_port,
                name: p.peer_name,
                node_type: peer_type,
                lid: Some(p.peer_lid),
                port_name: None,
            };
            set.add(Link {
                a: p.local,
                b: peer,
                width: p.width,
                speed: p.speed,
                supported_width: p.supported_width,
                supported_speed: p.supported_speed,
            });
        }
        if unresolved > 0 {
            ctx.warn(format!("{unresolved} links dropped: their peer LID is not in this input (use `iblinkinfo -l`)"));
        }
        crate::topology::emit(set, ctx, "iblinkinfo")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces() {
        assert_eq!(lid_port("      0xec0d9a03003d62be      4    1[  ] ").map(|x| (x.2, x.3)), Some((4, 1)));
        assert_eq!(
            lid_port(r#" 0x0002c903006e29b0 "sw 1    "  2  17[  ]"#).map(|x| (x.1, x.2, x.3)),
            Some((Some("sw 1".into()), 2, 17))
        );
        assert_eq!(could_be(" ( Could be 12X Could be 10.0 Gbps )"), (Some("12x".into()), Some("QDR".into())));
        assert_eq!(could_be(" ( )"), (None, None));
        assert_eq!(parse_states(" 4X      25.78125 Gbps Active/  LinkUp)==>  4 1[ ]"), Some(("Active", "LinkUp")));
        assert_eq!(
            parse_states("                Down/ Polling)==>             [  ] \"\" ( )"),
            Some(("Down", "Polling"))
        );
        assert_eq!(parse_states("                Down/ Disabled)=..."), Some(("Down", "Disabled")));
        assert_eq!(parse_states("  Down/"), None);
    }
}

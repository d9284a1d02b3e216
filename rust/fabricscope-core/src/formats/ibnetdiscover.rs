//! `ibnetdiscover -p` (ports report) output: one line per port.
//!
//! ```text
//! CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
//! SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'
//! ```
//!
//! Columns: `type lid port guid width speed [- peertype peerlid peerport peerguid ( 'desc' - 'peerdesc' )]`.
//! A line without the peer part is an unconnected port (speed `???` or the lowest speed): it
//! gives no link. Connected lines feed the `links` table (see `crate::topology`; both directions
//! merge into one row) and give the local port two gauges, `link_width_lanes` and
//! `link_rate_bytes_per_s` (width x effective lane rate), with device = node GUID. Node
//! descriptions are trimmed (switches often end theirs with a blank). The plain topology-file
//! form of `ibnetdiscover` (without `-p`) is not read.

use crate::error::{Position, Result};
use crate::formats::ib;
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
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
    let mut local = End { guid, port, name: None, node_type, lid: Some(lid) };
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
    let mut peer = End { guid: peer_guid, port: peer_port, name: None, node_type: peer_type, lid: Some(peer_lid) };
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

/// Streaming reader for `ibnetdiscover -p`.
#[derive(Default)]
pub struct IbnetdiscoverReader {
    directives: DirectiveState,
    links: LinkSet,
    described: ahash::AHashSet<String>,
}

impl IbnetdiscoverReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbnetdiscoverReader::default()
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        let Some(p) = parse_line(t) else {
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
            return ctx.bad_record(
                pos,
                "`CA|SW|RT <lid> <port> 0x<guid> <width> <speed> [- <peer type> <lid> <port> 0x<guid> ( 'desc' - 'desc' )]`",
                raw,
            );
        };
        let Some(peer) = p.peer else { return Ok(()) };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        for end in [&p.local, &peer] {
            if let Some(n) = &end.name
                && self.described.insert(end.guid.clone())
            {
                let a = Attribute { time_ns, host: 0, device: 0, port: None, key: "node_description", value: n };
                ctx.push_attribute(&host_name, &end.guid, &a)?;
            }
        }
        let lanes = p.width.as_deref().and_then(ib::width).map(|(_, n)| n);
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&p.local.guid);
        let gauge = |counter: i32, value: Value, scale: u32| Sample {
            time_ns,
            host,
            device,
            port: Some(p.local.port),
            priority: None,
            counter,
            value,
            scale,
            is_counter: false,
        };
        if let Some(n) = lanes {
            let c = ctx.samples.counter("link_width_lanes");
            ctx.push(&gauge(c, Value::U64(u64::from(n)), 1))?;
            if let Some(g) = p.speed.as_deref().and_then(ib::lane_data_gbps) {
                let c = ctx.samples.counter("link_rate_bytes_per_s");
                ctx.push(&gauge(c, Value::from_f64(f64::from(n) * g * 1e9 / 8.0), 1))?;
            }
        }
        self.links.add(Link {
            a: p.local,
            b: peer,
            width: p.width,
            speed: p.speed,
            supported_width: None,
            supported_speed: None,
        });
        Ok(())
    }
}

impl LineReader for IbnetdiscoverReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        crate::topology::emit(&self.links, ctx, "ibnetdiscover")
    }
}

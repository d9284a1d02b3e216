//! `perfquery` output (infiniband-diags): basic PortCounters, `-x` PortCountersExtended and
//! `-E` PortRcvErrorDetails blocks, any number of ports and snapshots in one stream.
//!
//! ```text
//! 1764686822
//! # Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
//! PortSelect:......................1
//! CounterSelect:...................0x0000
//! PortXmitData:....................36298026860928
//! ```
//!
//! * Block header `# <kind> counters: <portid> port <n> [(CapMask: 0x.. [CapMask2: 0x..])]`; the
//!   portid (`Lid 1719`, a DR path, `Guid 0x...`) is parsed leniently. CapMask/CapMask2 go to
//!   the attributes table (`pma_cap_mask`, `pma_cap_mask2`): they say which width a counter has.
//! * Field lines `Name:....value` (libibmad pads with dots). `PortSelect` sets the port (the last
//!   one seen wins, like infiniband_exporter); `CounterSelect*` are selectors, not counters.
//!   Names go through the `perfquery` vocabulary (Data fields are 4-octet words: x4, scale 4);
//!   unknown names are kept raw. The key set is never assumed from the CapMask.
//! * Port 255 (`-a`, all ports summed) is an aggregate: its rows have a null port.
//! * Device: a GUID in the header, else the first `0x<hex>` token of the file name (the
//!   infiniband_exporter fixture layout `<guid>.out`), else `lid:<lid>`. Host: `# host:` lines,
//!   else the host argument. Time: timestamp lines before a block, else the fallbacks.

use crate::error::{Position, Result};
use crate::formats::ib::{self, NameCache};
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample};
use crate::vocabulary::Namespace;

/// A parsed block header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// `Port`, `Port extended`, `PortRcvErrorDetails`, ...
    pub kind: &'a str,
    /// The port id text (`Lid 1719`).
    pub target: &'a str,
    /// Port number, when the header has one.
    pub port: Option<u16>,
    /// `CapMask` value text.
    pub cap_mask: Option<&'a str>,
    /// `CapMask2` value text.
    pub cap_mask2: Option<&'a str>,
}

/// Parse `# <kind> counters: <target> port <n> (CapMask: ...)`.
pub fn parse_header(line: &str) -> Option<Header<'_>> {
    let body = line.strip_prefix('#')?.trim_start();
    let (kind, rest) = body.split_once(" counters: ")?;
    let (main, caps) = match rest.split_once('(') {
        Some((m, c)) => (m.trim(), Some(c.trim_end().trim_end_matches(')'))),
        None => (rest.trim(), None),
    };
    let (target, port) = match main.rsplit_once(" port ") {
        Some((t, p)) => (t.trim(), Some(p.trim().parse::<u16>().ok()?)),
        None => (main, None),
    };
    // A Prometheus `# HELP x ... counters: ...` line is not a perfquery header.
    if kind.is_empty() || kind.contains(':') || ["HELP ", "TYPE ", "UNIT "].iter().any(|p| kind.starts_with(p)) {
        return None;
    }
    let cap = |key: &str| {
        caps.and_then(|c| {
            let mut words = c.split_whitespace();
            words.position(|w| w == key)?;
            words.next()
        })
    };
    Some(Header { kind: kind.trim(), target, port, cap_mask: cap("CapMask:"), cap_mask2: cap("CapMask2:") })
}

#[derive(Debug, Clone, Copy)]
struct Block {
    time_ns: i64,
    host: i32,
    device: i32,
    port: Option<u16>,
}

/// Streaming reader for perfquery output.
pub struct PerfqueryReader {
    directives: DirectiveState,
    /// GUID from the file name, looked up once (`path_checked`).
    path_device: Option<String>,
    path_checked: bool,
    block: Option<Block>,
    names: NameCache,
}

impl Default for PerfqueryReader {
    fn default() -> Self {
        PerfqueryReader {
            directives: DirectiveState::default(),
            path_device: None,
            path_checked: false,
            block: None,
            names: NameCache::new(Namespace::Perfquery),
        }
    }
}

impl PerfqueryReader {
    /// A reader for one input.
    pub fn new() -> Self {
        PerfqueryReader::default()
    }

    fn start_block(&mut self, header: Option<&Header<'_>>, ctx: &mut ReadContext<'_>) -> Result<Block> {
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let from_header = header
            .and_then(|h| h.target.split_whitespace().filter(|w| w.starts_with("0x")).find_map(ib::normalize_guid));
        let device = if let Some(g) = from_header {
            g
        } else {
            {
                if !self.path_checked {
                    self.path_device = crate::formats::common::guid_from_path(ctx.path);
                    self.path_checked = true;
                }
                match (self.path_device.clone(), header) {
                    (Some(g), _) => g,
                    (None, Some(h)) => {
                        let lid = h.target.strip_prefix("Lid ").map_or(h.target, str::trim);
                        format!("lid:{lid}")
                    }
                    (None, None) => {
                        ctx.warn(
                            "no `# ... counters:` header and no GUID in the file name: rows use device \"unknown\"",
                        );
                        "unknown".to_owned()
                    }
                }
            }
        };
        let block = Block {
            time_ns,
            host: ctx.samples.host(&host),
            device: ctx.samples.device(&device),
            port: header.and_then(|h| h.port).filter(|p| *p != 255),
        };
        if let Some(h) = header {
            for (key, value) in [("pma_cap_mask", h.cap_mask), ("pma_cap_mask2", h.cap_mask2)] {
                if let Some(v) = value {
                    let a = Attribute { time_ns, host: 0, device: 0, port: block.port, key, value: v };
                    ctx.push_attribute(&host, &device, &a)?;
                }
            }
        }
        self.block = Some(block);
        Ok(block)
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(h) = parse_header(t) {
            self.start_block(Some(&h), ctx)?;
            return Ok(());
        }
        let Some((name, rest)) = split_field(t) else {
            if let Some(d) = parse_directive(t) {
                match d {
                    Directive::Time(ts) => self.directives.set_time(ts),
                    Directive::Host(h) => self.directives.set_host(h),
                    Directive::Device(_) => {}
                }
                // The next field line starts a new block dated and named by what was just read.
                self.block = None;
                return Ok(());
            }
            if t.starts_with('#') || t.starts_with("$ ") {
                return Ok(());
            }
            if t.starts_with("ibwarn") || t.starts_with("perfquery:") {
                ctx.warn(format!("perfquery reported: {t}"));
                return Ok(());
            }
            return ctx.bad_record(pos, "a `# ... counters:` header, a `Name:....value` line or a timestamp line", raw);
        };
        if name.starts_with("CounterSelect") {
            return Ok(());
        }
        let mut block = match self.block {
            Some(b) => b,
            None => self.start_block(None, ctx)?,
        };
        if name == "PortSelect" {
            let Ok(p) = rest.parse::<u16>() else {
                return ctx.bad_record(pos, "a port number after `PortSelect:`", raw);
            };
            block.port = (p != 255).then_some(p);
            self.block = Some(block);
            return Ok(());
        }
        let Some(value) = ib::parse_value(rest) else {
            return ctx.bad_record(pos, "a decimal or 0x-hex counter value", raw);
        };
        let r = self.names.get(name, ctx);
        ctx.push(&Sample {
            time_ns: block.time_ns,
            host: block.host,
            device: block.device,
            port: block.port,
            priority: None,
            counter: r.counter,
            value: value.multiplied(r.multiply),
            scale: r.scale,
            is_counter: r.is_counter,
        })
    }
}

/// Split `Name:.....value` into the name and the value text. The name is letters and digits.
fn split_field(t: &str) -> Option<(&str, &str)> {
    let (name, rest) = t.split_once(':')?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let value = rest.trim_start_matches('.').trim();
    (!value.is_empty()).then_some((name, value))
}

impl LineReader for PerfqueryReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let h = parse_header("# Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)");
        assert_eq!(
            h,
            Some(Header {
                kind: "Port extended",
                target: "Lid 1719",
                port: Some(1),
                cap_mask: Some("0x5300"),
                cap_mask2: Some("0x0000002")
            })
        );
        let h = parse_header("# PortRcvErrorDetails counters: Lid 1719 port 2").map(|h| (h.kind, h.port));
        assert_eq!(h, Some(("PortRcvErrorDetails", Some(2))));
        assert_eq!(parse_header("# HELP x y"), None);
        assert_eq!(parse_header("# HELP x Total counters: per port 3"), None);
        assert_eq!(parse_header("# Port counters: Lid 1 port x"), None);
    }

    #[test]
    fn fields() {
        assert_eq!(split_field("PortXmitData:....................16576648"), Some(("PortXmitData", "16576648")));
        assert_eq!(split_field("CounterSelect2:..................0x00"), Some(("CounterSelect2", "0x00")));
        assert_eq!(split_field("Port Xmit: 5"), None);
        assert_eq!(split_field("PortXmitData:......"), None);
    }
}

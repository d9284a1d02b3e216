//! `ibqueryerrors` output (infiniband-diags `ibqueryerrors.c`).
//!
//! ```text
//! Errors for 0x2c903006e29b0 "MF0;ys23ib4:SX6036/U1"
//!    GUID 0x2c903006e29b0 port ALL: [LinkErrorRecoveryCounter == 15] [PortXmitWait == 4294967295]
//!    GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535] [PortXmitWait == 84704351]
//! ## Summary: 4 nodes checked, 4 bad nodes found
//! ```
//!
//! * One row per `[Name == value]` item; the `(1.234GB)` human form of `--data` mode is dropped
//!   and the integer kept (data counters are 4-octet words: x4 like perfquery).
//! * `port ALL` lines are aggregates of the per-port lines and are skipped (counted in a warning).
//! * Only counters above a threshold are listed: absence means "at or below the threshold", not 0.
//! * `##` summary and threshold lines carry no per-port data and are skipped; `Link info:` detail
//!   lines too. Device: the line's GUID, zero padded (`%x` drops leading zeros); the quoted node
//!   description goes to the attributes table as `node_description`. Host: the host argument.

use crate::error::{Position, Result};
use crate::formats::ib::{self, NameCache};
use crate::formats::{Directive, DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample};
use crate::vocabulary::Namespace;

/// Streaming reader for ibqueryerrors output.
pub struct IbqueryerrorsReader {
    directives: DirectiveState,
    node_name: Option<String>,
    described: ahash::AHashSet<String>,
    aggregates: u64,
    names: NameCache,
}

impl Default for IbqueryerrorsReader {
    fn default() -> Self {
        IbqueryerrorsReader {
            directives: DirectiveState::default(),
            node_name: None,
            described: ahash::AHashSet::new(),
            aggregates: 0,
            names: NameCache::new(Namespace::Perfquery),
        }
    }
}

impl IbqueryerrorsReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbqueryerrorsReader::default()
    }

    fn port_line(&mut self, t: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`GUID 0x<guid> port <n>: [Name == value] ...`";
        let Some(rest) = t.strip_prefix("GUID ") else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some((guid_text, rest)) = rest.split_once(" port ") else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some((port_text, items)) = rest.split_once(':') else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some(guid) = ib::normalize_guid(guid_text) else {
            return ctx.bad_record(pos, "a hex node GUID after `GUID`", raw);
        };
        if port_text.trim() == "ALL" {
            self.aggregates += 1;
            return Ok(());
        }
        let Ok(port) = port_text.trim().parse::<u16>() else {
            return ctx.bad_record(pos, "a port number or `ALL` after `port`", raw);
        };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        if let Some(n) = &self.node_name
            && self.described.insert(guid.clone())
        {
            let a = Attribute { time_ns, host: 0, device: 0, port: None, key: "node_description", value: n };
            ctx.push_attribute(&host_name, &guid, &a)?;
        }
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&guid);
        let mut rest = items;
        while let Some(open) = rest.find('[') {
            let after = rest.get(open + 1..).unwrap_or("");
            let Some(close) = after.find(']') else {
                return ctx.bad_record(pos, "a closing `]` after `[Name == value`", raw);
            };
            let item = after.get(..close).unwrap_or("");
            rest = after.get(close + 1..).unwrap_or("");
            let Some((name, value)) = item.split_once("==") else {
                return ctx.bad_record(pos, "`[Name == value]`", raw);
            };
            // `--data` and the extended form append `(1.234GB)`: keep the exact integer only.
            let number = value.split('(').next().unwrap_or("").trim();
            let Some(v) = ib::parse_value(number) else {
                return ctx.bad_record(pos, "an integer counter value in `[Name == value]`", raw);
            };
            let r = self.names.get(name.trim(), ctx);
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

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with("##") {
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("Errors for ").or_else(|| t.strip_prefix("Data Counters for ")) {
            self.node_name = rest.split_once('"').and_then(|(_, r)| r.rsplit_once('"')).map(|(n, _)| n.to_owned());
            return Ok(());
        }
        if t.starts_with("GUID ") {
            return self.port_line(t, raw, pos, ctx);
        }
        if t.starts_with("Link info:") || t.starts_with("ibwarn") || t.starts_with("Suppressing") {
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
        ctx.bad_record(pos, "`Errors for ...`, `GUID ... port ...: [...]` or a `##` summary line", raw)
    }
}

impl LineReader for IbqueryerrorsReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if self.aggregates > 0 {
            ctx.warn(format!("skipped {} `port ALL` aggregate lines (sums of the per-port lines)", self.aggregates));
        }
        Ok(())
    }
}

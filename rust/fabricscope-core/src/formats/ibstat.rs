//! `ibstat` output (rdma-core / infiniband-diags `ibstat.c`): each local HCA and its ports'
//! state, physical state, rate, LIDs and GUIDs.
//!
//! ```text
//! CA 'mlx5_0'
//!         CA type: MT4124
//!         Number of ports: 1
//!         Firmware version: 20.41.1000
//!         Hardware version: 0
//!         Node GUID: 0x00155dfffe3411eb
//!         System image GUID: 0xb83fd203006e2704
//!         Port 1:
//!                 State: Active
//!                 Physical state: LinkUp
//!                 Rate: 200
//!                 Base lid: 13247
//!                 LMC: 0
//!                 SM lid: 1
//!                 Capability mask: 0xa651ec48
//!                 Port GUID: 0x00155dfffd3411eb
//!                 Link layer: InfiniBand
//! ```
//!
//! * `ca_dump` prints the `<type> '<name>'` header (`CA`, `Switch`, `Router`, `iWARP RNIC`), its
//!   device lines, then one `Port <n>:` block per port; `ibstat <ca> <port>` prints `CA: '<name>'`
//!   and one unindented port block. Indentation is tabs as `ibstat.c` prints them, or spaces where
//!   a terminal or a paste turned them into spaces: it is not relied on.
//! * `Rate:` is the port's data rate in Gb/s (`2.5`, `56`, `400`; `40 (FDR10)`), no width.
//!   rdma-core 60 and later add `Effective speed:` (kept as an attribute). Versions before
//!   `Link layer:` existed (OFED 1.4) lack that line; lines of a block in any order are read.
//! * `ibwarn:` (debug `-d`) lines are skipped; an `ibpanic:` line (a device `ibstat` could not
//!   stat) is a warning naming it, the devices before it are kept.
//!
//! Rows: port gauges `port_state_id`, `port_phys_state_id`, `link_rate_bytes_per_s` (the same
//! canonical gauges sysfs and `iblinkinfo` give); port attributes `state`, `phys_state`, `rate`,
//! `link_layer`, `lid`, `sm_lid`, `lmc`, `cap_mask`, `port_guid` (keys as sysfs names them);
//! device attributes `node_type`, `hca_type`, `fw_ver`, `hw_ver`, `node_guid`, `node_guid_hex`,
//! `sys_image_guid`, `sys_image_guid_hex`. Device: the CA name (`mlx5_0`). Host and time:
//! `# host:`/timestamp lines, else the driver's fallbacks (`--host`, the path).

use crate::error::{Position, Result};
use crate::formats::common::{phys_state_id, prompt_command, significant_lines, state_id};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::vocabulary::{self, Kind};

/// The rows of one port or device, for the three port-state readers (`ibstat`, `ibstatus`,
/// `ibv_devinfo`): they name the same facts and must give them the same canonical rows.
pub(crate) struct PortRows<'a> {
    /// Nanoseconds since the epoch.
    pub time_ns: i64,
    /// Host name.
    pub host: &'a str,
    /// RDMA device name (`mlx5_0`).
    pub device: &'a str,
    /// Port number; `None` for a device fact.
    pub port: Option<u16>,
}

impl PortRows<'_> {
    /// A gauge named by its canonical counter (these tools print text, not raw counter names).
    pub fn gauge(&self, ctx: &mut ReadContext<'_>, canonical: &str, value: Value) -> Result<()> {
        let Some(def) = vocabulary::counter(canonical) else { return Ok(()) };
        let s = Sample {
            time_ns: self.time_ns,
            host: ctx.samples.host(self.host),
            device: ctx.samples.device(self.device),
            port: self.port,
            priority: None,
            counter: ctx.samples.counter(def.name),
            value,
            scale: 1,
            is_counter: def.kind == Kind::Counter,
        };
        ctx.push(&s)
    }

    /// An attribute; an empty value gives nothing.
    pub fn attribute(&self, ctx: &mut ReadContext<'_>, key: &str, value: &str) -> Result<()> {
        if value.is_empty() {
            return Ok(());
        }
        let a = Attribute { time_ns: self.time_ns, host: 0, device: 0, port: self.port, key, value };
        ctx.push_attribute(self.host, self.device, &a)
    }

    /// A logical port state by name (`Active`, `PORT_ACTIVE`, `ACTIVE`, `Initializing`): the
    /// `port_state_id` gauge (when the name is a state) and the `state` attribute.
    pub fn logical_state(&self, ctx: &mut ReadContext<'_>, name: &str) -> Result<()> {
        let bare = name.trim();
        let bare = bare.strip_prefix("PORT_").unwrap_or(bare);
        let id = if bare.eq_ignore_ascii_case("initializing") { Some(2) } else { state_id(bare) };
        if let Some(id) = id {
            self.gauge(ctx, "port_state_id", Value::U64(id))?;
        }
        self.attribute(ctx, "state", name.trim())
    }

    /// A physical port state by name (`LinkUp`, `LINK_UP`, `Polling`): the `port_phys_state_id`
    /// gauge (when the name is a state) and the `phys_state` attribute.
    pub fn physical_state(&self, ctx: &mut ReadContext<'_>, name: &str) -> Result<()> {
        if let Some(id) = phys_state_id(name.trim()) {
            self.gauge(ctx, "port_phys_state_id", Value::U64(id))?;
        }
        self.attribute(ctx, "phys_state", name.trim())
    }

    /// A data rate in Gb/s: the `link_rate_bytes_per_s` gauge.
    pub fn rate_gbps(&self, ctx: &mut ReadContext<'_>, gbps: f64) -> Result<()> {
        self.gauge(ctx, "link_rate_bytes_per_s", Value::from_f64((gbps * 125_000_000.0).round()))
    }
}

/// A rate in Gb/s as these tools print one: `400`, `2.5`, `14.0`. Finite, non-negative, at most
/// 100 Tb/s (a garbled number is not a rate).
pub(crate) fn parse_gbps(s: &str) -> Option<f64> {
    let v: f64 = s.trim().parse().ok()?;
    (v.is_finite() && (0.0..=100_000.0).contains(&v)).then_some(v)
}

/// `CA 'mlx5_0'`, `CA: 'mlx5_0'` (`ibstat <ca> <port>`), `Switch 'x'`, `iWARP RNIC 'x'`, `??? 'x'`
/// → (node type as the topology names it, device name).
fn header(t: &str) -> Option<(&'static str, &str)> {
    let (kind, rest) = t.split_once(" '").or_else(|| t.split_once(": '"))?;
    let name = rest.strip_suffix('\'')?;
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains('\'') {
        return None;
    }
    let node_type = match kind.trim_end_matches(':') {
        "CA" => "hca",
        "Switch" => "switch",
        "Router" => "router",
        "iWARP RNIC" => "rnic",
        "???" => "unknown",
        _ => return None,
    };
    Some((node_type, name))
}

/// `Port 1:` → 1.
fn port_header(t: &str) -> Option<u16> {
    t.strip_prefix("Port ")?.strip_suffix(':')?.parse().ok()
}

/// True when the input is `ibstat` output: past prompts, directives and `ibwarn:` lines, the first
/// line is a `CA 'name'` header and a line `ibstat` prints follows it.
pub fn looks_like(text: &str) -> bool {
    let lines: Vec<&str> =
        significant_lines(text, 40).into_iter().filter(|t| !t.starts_with("ibwarn:")).take(4).collect();
    let Some((first, rest)) = lines.split_first() else { return false };
    header(first).is_some()
        && rest.first().is_some_and(|t| {
            t.starts_with("CA type:")
                || t.starts_with("Switch type:")
                || t.starts_with("Router type:")
                || t.starts_with("Number of ports:")
                || port_header(t).is_some()
        })
}

/// Streaming reader for `ibstat` output.
#[derive(Default)]
pub struct IbstatReader {
    directives: DirectiveState,
    device: Option<String>,
    port: Option<u16>,
    panics: Vec<String>,
}

impl IbstatReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbstatReader::default()
    }

    fn fact(&mut self, key: &str, value: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(device) = self.device.clone() else {
            return ctx.bad_record(pos, "a `CA '<name>'` header before the device's lines", raw);
        };
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let device_rows = PortRows { time_ns, host: &host, device: &device, port: None };
        let Some(port) = self.port else {
            return match key {
                "CA type" | "Switch type" | "Router type" | "iWARP RNIC type" | "??? type" => {
                    device_rows.attribute(ctx, "hca_type", value)
                }
                "Number of ports" => Ok(()),
                "Firmware version" => device_rows.attribute(ctx, "fw_ver", value),
                "Hardware version" => device_rows.attribute(ctx, "hw_ver", value),
                "Node GUID" | "System image GUID" => {
                    let key = if key == "Node GUID" { "node_guid" } else { "sys_image_guid" };
                    let Some(hex) = crate::guid::normalize_guid(value) else {
                        return ctx.bad_record(pos, "a hex GUID (`0x` and 16 digits)", raw);
                    };
                    device_rows.attribute(ctx, key, value)?;
                    device_rows.attribute(ctx, &format!("{key}_hex"), &hex)
                }
                _ => device_rows.attribute(ctx, &attribute_key(key), value),
            };
        };
        let rows = PortRows { port: Some(port), ..device_rows };
        match key {
            "State" => rows.logical_state(ctx, value),
            "Physical state" => rows.physical_state(ctx, value),
            "Rate" => {
                // `40 (FDR10)`: the number is the rate, the note names the speed.
                let Some(gbps) = value.split_whitespace().next().and_then(parse_gbps) else {
                    return ctx.bad_record(pos, "a rate in Gb/s (`Rate: 400`, `Rate: 40 (FDR10)`)", raw);
                };
                rows.rate_gbps(ctx, gbps)?;
                rows.attribute(ctx, "rate", value)
            }
            "Base lid" => rows.attribute(ctx, "lid", value),
            "SM lid" => rows.attribute(ctx, "sm_lid", value),
            "LMC" => rows.attribute(ctx, "lmc", value),
            "Capability mask" => rows.attribute(ctx, "cap_mask", value),
            "Port GUID" => {
                if crate::guid::normalize_guid(value).is_none() {
                    return ctx.bad_record(pos, "a hex port GUID (`0x` and 16 digits)", raw);
                }
                rows.attribute(ctx, "port_guid", value)
            }
            "Link layer" => rows.attribute(ctx, "link_layer", value),
            _ => rows.attribute(ctx, &attribute_key(key), value),
        }
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with("ibwarn:") {
            return Ok(());
        }
        if t.starts_with("ibpanic:") || t.starts_with("ibstat: iberror:") {
            self.panics.push(t.to_owned());
            return Ok(());
        }
        if let Some((node_type, name)) = header(t) {
            self.device = Some(name.to_owned());
            self.port = None;
            let time_ns = self.directives.time_ns(ctx)?;
            let host = self.directives.host(ctx);
            return PortRows { time_ns, host: &host, device: name, port: None }.attribute(ctx, "node_type", node_type);
        }
        if let Some(port) = port_header(t) {
            if self.device.is_none() {
                return ctx.bad_record(pos, "a `CA '<name>'` header before `Port <n>:`", raw);
            }
            self.port = Some(port);
            return Ok(());
        }
        if self.directives.apply_line(t) {
            return Ok(());
        }
        if t.starts_with('#') || prompt_command(t).is_some() {
            return Ok(());
        }
        match t.split_once(':') {
            Some((key, value)) if is_key(key) && !value.trim().is_empty() => {
                self.fact(key.trim(), value.trim(), raw, pos, ctx)
            }
            _ => ctx.bad_record(pos, "a `CA '<name>'` header, `Port <n>:` or a `Key: value` line of `ibstat`", raw),
        }
    }
}

/// A key `ibstat` prints: words of letters, digits and spaces (`Physical state`, `SM lid`).
fn is_key(key: &str) -> bool {
    let k = key.trim();
    !k.is_empty()
        && k.len() <= 40
        && k.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'?')
        && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' ' || b == b'?')
}

/// `Effective speed` → `effective_speed`: a key a newer `ibstat` added, kept under its own name.
fn attribute_key(key: &str) -> String {
    key.trim().to_ascii_lowercase().replace(' ', "_")
}

impl LineReader for IbstatReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        for p in self.panics.drain(..) {
            ctx.warn(format!("ibstat stopped: `{p}` (the devices after it were not listed)"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_ports() {
        assert_eq!(header("CA 'mlx5_0'"), Some(("hca", "mlx5_0")));
        assert_eq!(header("CA: 'mlx4_0'"), Some(("hca", "mlx4_0")));
        assert_eq!(header("Switch 'sw0'"), Some(("switch", "sw0")));
        assert_eq!(header("iWARP RNIC 'cxgb4_0'"), Some(("rnic", "cxgb4_0")));
        assert_eq!(header("CA 'a b'"), None);
        assert_eq!(header("Name 'x'"), None);
        assert_eq!(header("CA ''"), None);
        assert_eq!(port_header("Port 1:"), Some(1));
        assert_eq!(port_header("Port x:"), None);
        assert_eq!(port_header("Port 99999999:"), None);
    }

    #[test]
    fn detection() {
        assert!(looks_like("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n"));
        assert!(looks_like("$ ibstat\nCA 'mlx5_0'\n        CA type: MT4129\n"));
        assert!(looks_like("ibwarn: [1] umad_init: umad_init\nCA 'mlx4_0'\n\tCA type: MT4099\n"));
        assert!(looks_like("CA: 'mlx5_0'\nPort 1:\nState: Active\n"));
        assert!(!looks_like("CA 'mlx5_0'\n"));
        assert!(!looks_like("CA 'mlx5_0'\nrx_packets: 1\n"));
        assert!(!looks_like("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n"));
        assert!(!looks_like(""));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_gbps("400"), Some(400.0));
        assert_eq!(parse_gbps("2.5"), Some(2.5));
        assert_eq!(parse_gbps("-1"), None);
        assert_eq!(parse_gbps("1e300"), None);
        assert_eq!(parse_gbps("NaN"), None);
        assert_eq!(parse_gbps("fast"), None);
    }

    #[test]
    fn keys() {
        assert!(is_key("Physical state"));
        assert!(is_key("SM lid"));
        assert!(!is_key(""));
        assert!(is_key("Link layer"));
        assert!(!is_key("a/b"));
        assert_eq!(attribute_key("Effective speed"), "effective_speed");
    }
}

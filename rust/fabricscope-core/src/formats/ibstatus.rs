//! `ibstatus` output (rdma-core / infiniband-diags `scripts/ibstatus`): each local RDMA port's
//! sysfs files printed under a header.
//!
//! ```text
//! Infiniband device 'mlx5_0' port 1 status:
//!         default gid:     fe80:0000:0000:0000:0015:5dff:fd34:11eb
//!         base lid:        0x33bf
//!         sm lid:          0x1
//!         state:           4: ACTIVE
//!         phys state:      5: LinkUp
//!         rate:            200 Gb/sec (4X HDR)
//!         link_layer:      InfiniBand
//! ```
//!
//! * The script `cat`s `gids/0`, `lid`, `sm_lid`, `state`, `phys_state`, `rate` and `link_layer`
//!   of `/sys/class/infiniband/<dev>/ports/<n>`, so each value is what the sysfs reader reads
//!   from the same file; a file it cannot read prints `unknown` (no row). Versions before
//!   `link_layer` existed (OFED 1.5 and earlier) print six lines; a missing `link_layer` file
//!   prints `IB`.
//!
//! Rows: the sysfs reader's for the same files: gauges `port_state_id`, `port_phys_state_id`,
//! `link_rate_bytes_per_s`, `link_width_lanes`; attributes `state`, `phys_state`, `rate`,
//! `link_layer` (`IB` written `InfiniBand`), `lid`, `sm_lid`, `default_gid`; device attribute
//! `node_type` = `hca` (the host's own adapters). Device: the device
//! name of the header. Host and time: `# host:`/timestamp lines, else the driver's fallbacks.

use crate::error::{Position, Result};
use crate::formats::common::{prompt_command, significant_lines};
use crate::formats::ibstat::PortRows;
use crate::formats::sysfs::{parse_rate, parse_state};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::Value;

/// `Infiniband device 'mlx5_0' port 1 status:` → (`mlx5_0`, 1).
fn header(t: &str) -> Option<(&str, u16)> {
    let rest = t.strip_prefix("Infiniband device '")?.strip_suffix(" status:")?;
    let (name, port) = rest.split_once("' port ")?;
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains('\'') {
        return None;
    }
    Some((name, port.parse().ok()?))
}

/// True when the input is `ibstatus` output: its first line (past prompts and directives) is a
/// port header and a key the script prints follows it.
pub fn looks_like(text: &str) -> bool {
    let lines = significant_lines(text, 3);
    let mut it = lines.iter();
    it.next().is_some_and(|t| header(t).is_some())
        && it.next().is_some_and(|t| {
            ["default gid:", "base lid:", "sm lid:", "state:", "phys state:", "rate:", "link_layer:"]
                .iter()
                .any(|k| t.starts_with(k))
        })
}

/// Streaming reader for `ibstatus` output.
#[derive(Default)]
pub struct IbstatusReader {
    directives: DirectiveState,
    port: Option<(String, u16)>,
    described: ahash::AHashSet<String>,
}

impl IbstatusReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbstatusReader::default()
    }

    fn fact(&mut self, key: &str, value: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some((device, port)) = self.port.clone() else {
            return ctx.bad_record(pos, "an `Infiniband device '<dev>' port <n> status:` header first", raw);
        };
        if value == "unknown" {
            return Ok(()); // the script could not read the file
        }
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let rows = PortRows { time_ns, host: &host, device: &device, port: Some(port) };
        match key {
            "state" | "phys state" => {
                let Some((id, name)) = parse_state(value) else {
                    return ctx.bad_record(pos, "a state like `4: ACTIVE`", raw);
                };
                let (gauge, attr) =
                    if key == "state" { ("port_state_id", "state") } else { ("port_phys_state_id", "phys_state") };
                rows.gauge(ctx, gauge, Value::U64(id))?;
                rows.attribute(ctx, attr, name)
            }
            "rate" => {
                let Some((bytes_per_s, lanes)) = parse_rate(value) else {
                    return ctx.bad_record(pos, "a rate like `400 Gb/sec (4X NDR)`", raw);
                };
                rows.gauge(ctx, "link_rate_bytes_per_s", Value::U64(bytes_per_s))?;
                if let Some(l) = lanes {
                    rows.gauge(ctx, "link_width_lanes", Value::U64(l))?;
                }
                rows.attribute(ctx, "rate", value)
            }
            "base lid" => rows.attribute(ctx, "lid", value),
            "sm lid" => rows.attribute(ctx, "sm_lid", value),
            "default gid" => rows.attribute(ctx, "default_gid", value),
            // The script's fallback when the kernel has no `link_layer` file: an InfiniBand port.
            "link_layer" => rows.attribute(ctx, "link_layer", if value == "IB" { "InfiniBand" } else { value }),
            _ => ctx.bad_record(
                pos,
                "one of `default gid`, `base lid`, `sm lid`, `state`, `phys state`, `rate`, `link_layer`",
                raw,
            ),
        }
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some((device, port)) = header(t) {
            self.port = Some((device.to_owned(), port));
            if self.described.insert(device.to_owned()) {
                // The script lists the host's own `/sys/class/infiniband` devices: channel adapters.
                let time_ns = self.directives.time_ns(ctx)?;
                let host = self.directives.host(ctx);
                PortRows { time_ns, host: &host, device, port: None }.attribute(ctx, "node_type", "hca")?;
            }
            return Ok(());
        }
        if t.starts_with("Fatal error:") {
            ctx.warn(format!("ibstatus: `{t}`"));
            return Ok(());
        }
        if self.directives.apply_line(t) || t.starts_with('#') || prompt_command(t).is_some() {
            return Ok(());
        }
        match t.split_once(':') {
            Some((key, value)) if !value.trim().is_empty() => self.fact(key.trim(), value.trim(), raw, pos, ctx),
            _ => ctx.bad_record(
                pos,
                "an `Infiniband device '<dev>' port <n> status:` header or a `key: value` line",
                raw,
            ),
        }
    }
}

impl LineReader for IbstatusReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines() {
        assert_eq!(header("Infiniband device 'mlx5_0' port 1 status:"), Some(("mlx5_0", 1)));
        assert_eq!(header("Infiniband device 'rxe0' port 1 status:"), Some(("rxe0", 1)));
        assert_eq!(header("Infiniband device 'mlx5_0' port x status:"), None);
        assert_eq!(header("Infiniband device '' port 1 status:"), None);
        assert_eq!(header("Infiniband device 'mlx5_0' port 1"), None);
    }

    #[test]
    fn detection() {
        assert!(looks_like("Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t fe80::\n"));
        assert!(looks_like("$ ibstatus\nInfiniband device 'mlx4_0' port 1 status:\n\tbase lid:\t 0x1\n"));
        assert!(!looks_like("Infiniband device 'mlx5_0' port 1 status:\n"));
        assert!(!looks_like("CA 'mlx5_0'\n\tCA type: MT4129\n"));
        assert!(!looks_like(""));
    }
}

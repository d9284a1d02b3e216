//! `ibv_devinfo` and `ibv_devinfo -v` output (rdma-core `libibverbs/examples/devinfo.c`): each
//! RDMA device's identity and each port's state, and with `-v` its width, speed and physical
//! state.
//!
//! ```text
//! hca_id:     mlx5_0
//!     transport:                      InfiniBand (0)
//!     fw_ver:                         28.39.2048
//!     node_guid:                      58a2:e103:002a:09b8
//!     ...
//!             port:   1
//!                     state:                  PORT_ACTIVE (4)
//!                     max_mtu:                4096 (5)
//!                     sm_lid:                 1
//!                     port_lid:               1691
//!                     port_lmc:               0x00
//!                     link_layer:             InfiniBand
//!                     active_width:           4X (2)          (-v)
//!                     active_speed:           25.0 Gbps (32)  (-v)
//!                     phys_state:             LINK_UP (5)     (-v)
//! ```
//!
//! * Every enumerated value is printed with its number in parentheses; the number is what is
//!   read (`PORT_ACTIVE (4)` → 4). Versions older than a speed print `invalid speed (64)` for it
//!   (rdma-core before 20 had no HDR, before 35 no NDR): the code still names the lane rate
//!   (IBA `ActiveSpeed`/`active_speed_ex` bits: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10, 16 FDR
//!   14, 32 EDR 25, 64 HDR 50, 128 NDR 100, 256 XDR 200 Gb/s).
//! * `-v` adds device capability lines and flag names on lines of their own (`BAD_PKEY_CNTR`,
//!   `Unknown flags: 0x...`, `core clock not supported`): inside a device they are skipped, as are
//!   keys not listed below. `GID[  0]:` lines are skipped (addresses, not state).
//!
//! Rows: port gauges `port_state_id`, `port_phys_state_id`, and with `-v` `link_width_lanes` and
//! `link_rate_bytes_per_s` (lanes × the lane rate the speed names, as the kernel's `rate` is
//! computed); port attributes `state`, `phys_state`, `link_layer`, `lid`, `sm_lid`, `lmc`,
//! `active_mtu`, `max_mtu`, `active_width`, `active_speed`, `effective_speed`; device attributes
//! `node_type` (`hca`), `transport`, `fw_ver`, `node_guid`, `node_guid_hex`, `sys_image_guid`, `sys_image_guid_hex`,
//! `vendor_id`, `vendor_part_id`, `hw_ver`, `board_id`. Device: the `hca_id`. Host and time:
//! `# host:`/timestamp lines, else the driver's fallbacks.

use crate::error::{Position, Result};
use crate::formats::common::{prompt_command, significant_lines};
use crate::formats::ibstat::{PortRows, parse_gbps};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::Value;

/// `PORT_ACTIVE (4)` → (`PORT_ACTIVE`, 4).
fn enumerated(v: &str) -> Option<(&str, u64)> {
    let (name, rest) = v.rsplit_once('(')?;
    let n = rest.strip_suffix(')')?.trim().parse().ok()?;
    Some((name.trim(), n))
}

/// Lanes of an IBA `ActiveWidth` code (1 → 1X, 2 → 4X, 4 → 8X, 8 → 12X, 16 → 2X).
fn width_lanes(code: u64) -> Option<u64> {
    match code {
        1 => Some(1),
        2 => Some(4),
        4 => Some(8),
        8 => Some(12),
        16 => Some(2),
        _ => None,
    }
}

/// Per-lane data rate (Gb/s) of an `active_speed` code, as `devinfo.c` prints it.
fn lane_gbps(code: u64) -> Option<f64> {
    match code {
        1 => Some(2.5),
        2 => Some(5.0),
        4 | 8 => Some(10.0),
        16 => Some(14.0),
        32 => Some(25.0),
        64 => Some(50.0),
        128 => Some(100.0),
        256 => Some(200.0),
        _ => None,
    }
}

/// `hca_id:\tmlx5_0` → `mlx5_0`.
fn header(t: &str) -> Option<&str> {
    let name = t.strip_prefix("hca_id:")?.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

/// True when the input is `ibv_devinfo` output: its first line (past prompts and directives) is
/// `hca_id: <dev>` and a device line `devinfo.c` prints follows it.
pub fn looks_like(text: &str) -> bool {
    let lines = significant_lines(text, 3);
    let mut it = lines.iter();
    it.next().is_some_and(|t| header(t).is_some())
        && it.next().is_some_and(|t| ["transport:", "fw_ver:", "node_guid:"].iter().any(|k| t.starts_with(k)))
}

/// Streaming reader for `ibv_devinfo [-v]` output.
#[derive(Default)]
pub struct IbvDevinfoReader {
    directives: DirectiveState,
    device: Option<String>,
    port: Option<u16>,
    /// Lanes and per-lane Gb/s of the current port, until both are known.
    lanes: Option<u64>,
    lane_gbps: Option<f64>,
}

impl IbvDevinfoReader {
    /// A reader for one input.
    pub fn new() -> Self {
        IbvDevinfoReader::default()
    }

    fn fact(&mut self, key: &str, value: &str, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(device) = self.device.clone() else { return Ok(()) };
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let device_rows = PortRows { time_ns, host: &host, device: &device, port: None };
        if key == "port" {
            let Ok(port) = value.parse::<u16>() else {
                return ctx.bad_record(pos, "a port number after `port:`", raw);
            };
            self.port = Some(port);
            self.lanes = None;
            self.lane_gbps = None;
            return Ok(());
        }
        let Some(port) = self.port else {
            return match key {
                "transport" | "fw_ver" | "vendor_id" | "vendor_part_id" | "hw_ver" | "board_id" => {
                    device_rows.attribute(ctx, key, value)
                }
                "node_guid" | "sys_image_guid" => {
                    let Some(hex) = crate::guid::normalize_guid(value) else {
                        return ctx.bad_record(pos, "a GUID like `58a2:e103:002a:09b8`", raw);
                    };
                    device_rows.attribute(ctx, key, value)?;
                    device_rows.attribute(ctx, &format!("{key}_hex"), &hex)
                }
                _ => Ok(()), // `-v` device capabilities: not port state
            };
        };
        let rows = PortRows { port: Some(port), ..device_rows };
        match key {
            "state" | "phys_state" => {
                let Some((name, id)) = enumerated(value) else {
                    return ctx.bad_record(pos, "a state like `PORT_ACTIVE (4)`", raw);
                };
                let (gauge, valid) =
                    if key == "state" { ("port_state_id", 1..=5) } else { ("port_phys_state_id", 1..=7) };
                if valid.contains(&id) {
                    rows.gauge(ctx, gauge, Value::U64(id))?;
                }
                rows.attribute(ctx, key, name)
            }
            "active_width" => {
                let Some((_, code)) = enumerated(value) else {
                    return ctx.bad_record(pos, "a width like `4X (2)`", raw);
                };
                if let Some(l) = width_lanes(code) {
                    rows.gauge(ctx, "link_width_lanes", Value::U64(l))?;
                    self.lanes = Some(l);
                }
                rows.attribute(ctx, key, value)?;
                self.rate(&rows, ctx)
            }
            "active_speed" => {
                let Some((text, code)) = enumerated(value) else {
                    return ctx.bad_record(pos, "a speed like `25.0 Gbps (32)`", raw);
                };
                // The code is the truth; the text is the same rate when this version knew it.
                self.lane_gbps = lane_gbps(code).or_else(|| text.strip_suffix("Gbps").and_then(parse_gbps));
                rows.attribute(ctx, key, value)?;
                self.rate(&rows, ctx)
            }
            "port_lid" => rows.attribute(ctx, "lid", value),
            "port_lmc" => rows.attribute(ctx, "lmc", value),
            "sm_lid" | "link_layer" | "active_mtu" | "max_mtu" | "effective_speed" => rows.attribute(ctx, key, value),
            _ => Ok(()),
        }
    }

    /// The port's rate once its width and speed are both read (`-v` prints width first).
    fn rate(&mut self, rows: &PortRows<'_>, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let (Some(l), Some(g)) = (self.lanes, self.lane_gbps) {
            self.lanes = None;
            self.lane_gbps = None;
            return rows.rate_gbps(ctx, l as f64 * g);
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
        if let Some(name) = header(t) {
            self.device = Some(name.to_owned());
            self.port = None;
            // The host's own verbs devices: channel adapters (`port_down` judges them so).
            let time_ns = self.directives.time_ns(ctx)?;
            let host = self.directives.host(ctx);
            return PortRows { time_ns, host: &host, device: name, port: None }.attribute(ctx, "node_type", "hca");
        }
        if t == "No IB devices found" {
            ctx.warn("ibv_devinfo: `No IB devices found`");
            return Ok(());
        }
        if self.directives.apply_line(t) || t.starts_with('#') || prompt_command(t).is_some() {
            return Ok(());
        }
        if self.device.is_none() {
            return ctx.bad_record(pos, "an `hca_id: <device>` line", raw);
        }
        if t.chars().any(|c| c.is_control() && c != '\t') {
            return ctx.bad_record(pos, "printable text", raw);
        }
        match t.split_once(':') {
            // `GID[  0]:` and flag lines (`BAD_PKEY_CNTR`) are not facts this reader keeps.
            Some((key, value)) if !key.contains('[') => self.fact(key.trim(), value.trim(), raw, pos, ctx),
            _ => Ok(()),
        }
    }
}

impl LineReader for IbvDevinfoReader {
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
    fn enumerated_values() {
        assert_eq!(enumerated("PORT_ACTIVE (4)"), Some(("PORT_ACTIVE", 4)));
        assert_eq!(enumerated("25.0 Gbps (32)"), Some(("25.0 Gbps", 32)));
        assert_eq!(enumerated("invalid speed (64)"), Some(("invalid speed", 64)));
        assert_eq!(enumerated("PORT_CONFIGURATION TRAINNING (4)"), Some(("PORT_CONFIGURATION TRAINNING", 4)));
        assert_eq!(enumerated("4X"), None);
        assert_eq!(enumerated("x (y)"), None);
        assert_eq!(enumerated("x (99999999999999999999999)"), None);
    }

    #[test]
    fn speeds_and_widths() {
        assert_eq!(width_lanes(2), Some(4));
        assert_eq!(width_lanes(16), Some(2));
        assert_eq!(width_lanes(3), None);
        assert_eq!(lane_gbps(16), Some(14.0));
        assert_eq!(lane_gbps(128), Some(100.0));
        assert_eq!(lane_gbps(3), None);
    }

    #[test]
    fn detection() {
        assert!(looks_like("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n"));
        assert!(looks_like("root@h:~# ibv_devinfo\nhca_id: mlx5_0\n        transport:      InfiniBand (0)\n"));
        assert!(!looks_like("hca_id:\tmlx5_0\n"));
        assert!(!looks_like("CA 'mlx5_0'\n\tCA type: MT4129\n"));
        assert!(!looks_like(""));
    }
}

//! `mlnx_qos -i <if>` (Mellanox/NVIDIA mlnx-tools, `python/mlnx_qos`): a RoCE NIC's QoS
//! configuration: the trust mode, which priorities PFC makes lossless, the DSCP-to-priority map,
//! the receive buffers and the traffic classes.
//!
//! ```text
//! DCBX mode: OS controlled
//! Priority trust state: dscp
//! dscp2prio mapping:
//!         prio:0 dscp:07,06,05,04,03,02,01,00,
//!         prio:3 dscp:31,30,29,28,27,26,25,24,
//! Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016
//! Cable len: 7
//! PFC configuration:
//!         priority    0   1   2   3   4   5   6   7
//!         enabled     0   0   0   1   0   0   0   0
//!         buffer      0   0   0   1   0   0   0   0
//! tc: 3 ratelimit: unlimited, tsa: ets, bw: 30%
//!          priority:  3
//! ```
//!
//! The layouts of the tool's history, all read: the first (2017, python 2) printed only the DCBX
//! mode, the PFC `priority`/`enabled` rows and the traffic classes; MLNX_OFED 4.2 added the trust
//! state, the DSCP map and `Cable len`; later versions the `Receive buffer size (bytes)` line
//! (ending `total_size=`, `max_buffer_size=` since 2023) and the PFC `buffer` row (priority to
//! receive buffer). `dscp2prio` lines wrap after 8 DSCP values, repeating `prio:<p> dscp:`.
//!
//! The output does not name the interface: it is the `-i <if>` of the echoed command
//! (`$ mlnx_qos -i ens1f0`, `# mlnx_qos --interface=ens1f0`), else `# device: <if>`; else unknown
//! (warned). Host and time: `# host:` and timestamp lines, else the driver's fallbacks.
//!
//! Rows: attributes of the interface (port null), no samples. Keys, beside the sysfs reader's
//! `ecn.roce_np.enable.<p>` (ECN is not in this tool's output):
//!
//! | key | value |
//! |---|---|
//! | `qos.dcbx` | `OS controlled` or `Firmware controlled` |
//! | `qos.trust` | `pcp` or `dscp` |
//! | `qos.pfc.enable.<p>` | `1` or `0`, for priorities 0-7 |
//! | `qos.pfc.priorities` | the PFC-enabled priorities, comma-separated (empty: none) |
//! | `qos.buffer.<p>` | the receive buffer priority `p` goes to |
//! | `qos.buffer_size_bytes.<b>` | receive buffer `b`'s size |
//! | `qos.max_buffer_size_bytes`, `qos.total_buffer_size_bytes` | the port's buffer |
//! | `qos.cable_len_m` | the cable length the headroom is computed for |
//! | `qos.dscp2prio.<dscp>` | the priority DSCP value `dscp` maps to (trust `dscp` only) |
//! | `qos.prio_tc.<p>` | the traffic class priority `p` is in |
//! | `qos.tc.<tc>.tsa`, `qos.tc.<tc>.bw_percent`, `qos.tc.<tc>.ratelimit` | the class's scheduling |

use crate::error::{Position, Result};
use crate::formats::common::prompt_command;
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::Attribute;

/// True when the head holds lines only `mlnx_qos` prints: its PFC table header with a trust or
/// DCBX line, or `dscp2prio` lines.
pub fn looks_like(text: &str) -> bool {
    let mut pfc = false;
    let mut own = false;
    for raw in text.lines().take(200) {
        let t = raw.trim();
        if t == "PFC configuration:" {
            pfc = true;
        } else if t.starts_with("Priority trust state:")
            || t.starts_with("DCBX mode:")
            || t == "dscp2prio mapping:"
            || t.starts_with("Receive buffer size (bytes):")
        {
            own = true;
        }
    }
    pfc && own
}

/// The interface of an echoed `mlnx_qos -i <if>` command.
fn echoed_interface(line: &str) -> Option<String> {
    let cmd = prompt_command(line).unwrap_or(line.trim());
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "mlnx_qos" || w.ends_with("/mlnx_qos"))?;
    let rest = words.get(at + 1..)?;
    for (i, w) in rest.iter().enumerate() {
        if let Some(v) = w.strip_prefix("--interface=") {
            return Some(v.to_owned()).filter(|v| !v.is_empty());
        }
        if *w == "-i" || *w == "--interface" {
            return rest.get(i + 1).map(|v| (*v).to_owned());
        }
        if let Some(v) = w.strip_prefix("-i").filter(|v| !v.is_empty() && !v.starts_with('-')) {
            return Some(v.to_owned());
        }
    }
    None
}

/// Where the reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    /// Top-level `key: value` lines.
    Top,
    /// After `dscp2prio mapping:`.
    Dscp,
    /// After `PFC configuration:` (its `priority`, `enabled`, `buffer` rows).
    Pfc,
    /// After a `tc: N ...` line (its `priority: N` lines).
    Tc(u8),
}

/// Streaming reader for `mlnx_qos -i <if>` output.
pub struct MlnxQosReader {
    directives: DirectiveState,
    interface: Option<String>,
    warned_interface: bool,
    section: Section,
    /// Whether the `priority 0 1 ... 7` header of the PFC table was read.
    pfc_header: bool,
    /// Whether this report printed any of the tool's lines (a file of only comments is empty).
    seen: bool,
}

impl Default for MlnxQosReader {
    fn default() -> Self {
        MlnxQosReader {
            directives: DirectiveState::default(),
            interface: None,
            warned_interface: false,
            section: Section::Top,
            pfc_header: false,
            seen: false,
        }
    }
}

/// Eight single digits (`0 0 0 1 0 0 0 0`), each at most `max`.
fn eight_digits(text: &str, max: u8) -> Option<[u8; 8]> {
    let mut out = [0u8; 8];
    let mut n = 0;
    for w in text.split_whitespace() {
        let v: u8 = w.parse().ok().filter(|v| *v <= max)?;
        *out.get_mut(n)? = v;
        n += 1;
    }
    (n == 8).then_some(out)
}

impl MlnxQosReader {
    /// A reader for one input.
    pub fn new() -> Self {
        MlnxQosReader::default()
    }

    fn attr(&mut self, ctx: &mut ReadContext<'_>, key: &str, value: &str) -> Result<()> {
        self.seen = true;
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        if self.interface.is_none() && !self.warned_interface {
            self.warned_interface = true;
            ctx.warn("no `mlnx_qos -i <interface>` command echoed and no `# device:` line: interface \"unknown\"");
        }
        let device = self.interface.clone().unwrap_or_else(|| "unknown".to_owned());
        let a = Attribute { time_ns, host: 0, device: 0, port: None, key, value };
        ctx.push_attribute(&host, &device, &a)
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(dev) = echoed_interface(t) {
            // a new report: its own interface and sections
            self.interface = Some(dev);
            self.section = Section::Top;
            self.pfc_header = false;
            return Ok(());
        }
        if let Some(dev) = t.strip_prefix('#').map(str::trim).and_then(|r| r.strip_prefix("device:")) {
            let dev = dev.trim();
            if !dev.is_empty() && !dev.contains(char::is_whitespace) {
                self.interface = Some(dev.to_owned());
                return Ok(());
            }
        }
        if self.directives.apply_line(t) {
            return Ok(());
        }
        if t.starts_with('#') || prompt_command(t).is_some() || t.starts_with("******") {
            // comments, other commands, the tool's `lldpad service is running` warning
            return Ok(());
        }
        if let Some(v) = t.strip_prefix("DCBX mode:") {
            self.section = Section::Top;
            return self.attr(ctx, "qos.dcbx", v.trim());
        }
        if let Some(v) = t.strip_prefix("Priority trust state:") {
            self.section = Section::Top;
            let v = v.trim();
            if !matches!(v, "pcp" | "dscp") {
                return ctx.bad_record(pos, "a trust state `pcp` or `dscp`", raw);
            }
            return self.attr(ctx, "qos.trust", v);
        }
        if t == "dscp2prio mapping:" {
            self.section = Section::Dscp;
            return Ok(());
        }
        if let Some(v) = t.strip_prefix("Receive buffer size (bytes):") {
            self.section = Section::Top;
            return self.buffer_sizes(v, pos, raw, ctx);
        }
        if let Some(v) = t.strip_prefix("Cable len:") {
            self.section = Section::Top;
            let Ok(n) = v.trim().parse::<u32>() else {
                return ctx.bad_record(pos, "`Cable len: <meters>`", raw);
            };
            return self.attr(ctx, "qos.cable_len_m", &n.to_string());
        }
        if t == "PFC configuration:" {
            self.section = Section::Pfc;
            self.pfc_header = false;
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("tc:") {
            return self.tc_line(rest, pos, raw, ctx);
        }
        match self.section {
            Section::Dscp => self.dscp_line(t, pos, raw, ctx),
            Section::Pfc => self.pfc_line(t, pos, raw, ctx),
            Section::Tc(tc) => {
                let Some(p) = t.strip_prefix("priority:").and_then(|p| p.trim().parse::<u8>().ok()).filter(|p| *p < 8)
                else {
                    return ctx.bad_record(pos, "`priority: <0-7>` under a `tc:` line", raw);
                };
                self.attr(ctx, &format!("qos.prio_tc.{p}"), &tc.to_string())
            }
            Section::Top => ctx.bad_record(
                pos,
                "an mlnx_qos line (`DCBX mode:`, `Priority trust state:`, `PFC configuration:`, `tc: ...`)",
                raw,
            ),
        }
    }

    fn buffer_sizes(&mut self, v: &str, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "8 comma-separated buffer sizes, then `max_buffer_size=<n>` or `total_size=<n>`";
        let mut sizes = Vec::with_capacity(8);
        let mut total: Option<(&str, u64)> = None;
        for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some((name, n)) = item.split_once('=') {
                let key = match name.trim() {
                    "max_buffer_size" => "qos.max_buffer_size_bytes",
                    "total_size" => "qos.total_buffer_size_bytes",
                    _ => return ctx.bad_record(pos, EXPECTED, raw),
                };
                let Ok(n) = n.trim().parse::<u64>() else { return ctx.bad_record(pos, EXPECTED, raw) };
                total = Some((key, n));
            } else {
                let Ok(n) = item.parse::<u64>() else { return ctx.bad_record(pos, EXPECTED, raw) };
                sizes.push(n);
            }
        }
        if sizes.len() != 8 {
            return ctx.bad_record(pos, EXPECTED, raw);
        }
        for (b, n) in sizes.iter().enumerate() {
            self.attr(ctx, &format!("qos.buffer_size_bytes.{b}"), &n.to_string())?;
        }
        if let Some((key, n)) = total {
            self.attr(ctx, key, &n.to_string())?;
        }
        Ok(())
    }

    fn dscp_line(&mut self, t: &str, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`prio:<0-7> dscp:<dscp>,<dscp>,...` under `dscp2prio mapping:`";
        let Some(rest) = t.strip_prefix("prio:") else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some((prio, list)) = rest.split_once(" dscp:") else { return ctx.bad_record(pos, EXPECTED, raw) };
        let Some(prio) = prio.trim().parse::<u8>().ok().filter(|p| *p < 8) else {
            return ctx.bad_record(pos, EXPECTED, raw);
        };
        let mut dscps = Vec::new();
        for d in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match d.parse::<u8>().ok().filter(|d| *d < 64) {
                Some(d) => dscps.push(d),
                None => return ctx.bad_record(pos, "DSCP values 0-63 after `dscp:`", raw),
            }
        }
        for d in dscps {
            self.attr(ctx, &format!("qos.dscp2prio.{d}"), &prio.to_string())?;
        }
        Ok(())
    }

    fn pfc_line(&mut self, t: &str, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        let (label, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        match label {
            "priority" => {
                if eight_digits(rest, 7) != Some([0, 1, 2, 3, 4, 5, 6, 7]) {
                    return ctx.bad_record(pos, "`priority 0 1 2 3 4 5 6 7`", raw);
                }
                self.pfc_header = true;
                Ok(())
            }
            "enabled" if self.pfc_header => {
                let Some(bits) = eight_digits(rest, 1) else {
                    return ctx.bad_record(pos, "`enabled` and eight 0/1 values", raw);
                };
                let on: Vec<String> = (0u8..8).filter(|p| bits[usize::from(*p)] == 1).map(|p| p.to_string()).collect();
                for (p, b) in bits.iter().enumerate() {
                    self.attr(ctx, &format!("qos.pfc.enable.{p}"), &b.to_string())?;
                }
                self.attr(ctx, "qos.pfc.priorities", &on.join(","))
            }
            "buffer" if self.pfc_header => {
                let Some(bufs) = eight_digits(rest, 7) else {
                    return ctx.bad_record(pos, "`buffer` and eight buffer numbers 0-7", raw);
                };
                for (p, b) in bufs.iter().enumerate() {
                    self.attr(ctx, &format!("qos.buffer.{p}"), &b.to_string())?;
                }
                Ok(())
            }
            _ => ctx.bad_record(pos, "the PFC table: `priority 0 1 ... 7`, then `enabled` and `buffer` rows", raw),
        }
    }

    /// `tc: 3 ratelimit: unlimited, tsa: ets, bw: 30%` (`tsa: strict`, `vendor`, `unknown`;
    /// ratelimit `12.5 Gbps`).
    fn tc_line(&mut self, rest: &str, pos: Position, raw: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
        const EXPECTED: &str = "`tc: <0-7> ratelimit: <rate>, tsa: <ets|strict|vendor>[, bw: <n>%]`";
        let rest = rest.trim_start();
        let (tc, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let Some(tc) = tc.parse::<u8>().ok().filter(|t| *t < 8) else { return ctx.bad_record(pos, EXPECTED, raw) };
        self.section = Section::Tc(tc);
        for part in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((k, v)) = part.split_once(':') else { return ctx.bad_record(pos, EXPECTED, raw) };
            let v = v.trim();
            match k.trim() {
                "ratelimit" => self.attr(ctx, &format!("qos.tc.{tc}.ratelimit"), v)?,
                "tsa" => self.attr(ctx, &format!("qos.tc.{tc}.tsa"), v)?,
                "bw" => {
                    let Some(n) = v.strip_suffix('%').and_then(|n| n.trim().parse::<u8>().ok()).filter(|n| *n <= 100)
                    else {
                        return ctx.bad_record(pos, "`bw: <0-100>%`", raw);
                    };
                    self.attr(ctx, &format!("qos.tc.{tc}.bw_percent"), &n.to_string())?;
                }
                _ => return ctx.bad_record(pos, EXPECTED, raw),
            }
        }
        Ok(())
    }
}

impl LineReader for MlnxQosReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if !self.seen {
            ctx.warn("no mlnx_qos configuration line in the input");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interface_comes_from_the_echoed_command() {
        assert_eq!(echoed_interface("$ mlnx_qos -i ens1f0").as_deref(), Some("ens1f0"));
        assert_eq!(echoed_interface("root@gpu01:~# mlnx_qos -i eth2").as_deref(), Some("eth2"));
        assert_eq!(echoed_interface("# sudo /usr/bin/mlnx_qos --interface=ens2f1np1").as_deref(), Some("ens2f1np1"));
        assert_eq!(echoed_interface("mlnx_qos -ieth3").as_deref(), Some("eth3"));
        assert_eq!(echoed_interface("mlnx_qos -i ens8f0np0 --trust dscp").as_deref(), Some("ens8f0np0"));
        assert_eq!(echoed_interface("# mlnx_qos"), None);
        assert_eq!(echoed_interface("PFC configuration:"), None);
    }

    #[test]
    fn pfc_rows_are_eight_digits() {
        assert_eq!(eight_digits("0   0   0   1   0   0   0   0   ", 1), Some([0, 0, 0, 1, 0, 0, 0, 0]));
        assert_eq!(eight_digits("0 0 0 1 0 0 0", 1), None);
        assert_eq!(eight_digits("0 0 0 2 0 0 0 0", 1), None);
        assert_eq!(eight_digits("0 0 0 1 0 0 0 0 0", 1), None);
        assert_eq!(eight_digits("0 0 0 x 0 0 0 0", 1), None);
    }

    #[test]
    fn detection_needs_the_pfc_table_and_a_line_of_the_tool() {
        assert!(looks_like("DCBX mode: OS controlled\nPriority trust state: pcp\nPFC configuration:\n"));
        assert!(looks_like("Priority trust state: dscp\nCable len: 7\nPFC configuration:\n\tpriority    0   1\n"));
        assert!(!looks_like("PFC configuration:\n"));
        assert!(!looks_like("Priority trust state: dscp\n"));
        assert!(!looks_like(""));
    }
}

//! `ibdev2netdev` (MLNX_OFED / `mlnx-tools`): which network device each RDMA port drives.
//!
//! ```text
//! mlx5_0 port 1 ==> ens1f0 (Up)
//! 0000:4b:00.0 mlx5_2 (MT4119 - MCX515A-CCAT) CX515A - ConnectX-5 QSFP28 fw 16.27.1016 port 1 (ACTIVE) ==> ens6 (Up)
//! mlx4_0 port 1 <===> ib0
//! ```
//!
//! The three layouts are the `echo` lines of the `ibdev2netdev` script (`mlnx-tools`,
//! `ofed_scripts/ibdev2netdev`): the default `<dev> port <n> ==> <netdev> (<carrier>)`, `-v`
//! `<pci> <dev> (<devid> - <part>) <description> fw <fw> port <n> (<ib state>) ==> <netdev> (<carrier>)`
//! (the PCI address may be empty, the description contains spaces, the state is padded to six
//! characters: `(DOWN  )`) and the pre-2017 "old style" `<dev> port <n> <===> <netdev>`. Output
//! piped through `column -t` (runs of spaces) and a trailing `# comment` are read too.
//!
//! Rows: port attributes of the RDMA device's port (`device` = `mlx5_0`, `port` = 1): `netdev`,
//! `netdev_carrier` (`Up`/`Down`/`NA`, from `/sys/class/net/<netdev>/carrier`), and with `-v`
//! `state` (the IB port state, as sysfs `state` names it), `pci_address`; `fw_ver` has no port (as
//! in sysfs). No samples: the file says what is what, entity resolution joins the names.
//! Host and time: `# host:`/timestamp lines, else the driver's fallbacks.

use crate::error::{Position, Result};
use crate::formats::{DirectiveState, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::Attribute;

/// One `ibdev2netdev` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping<'a> {
    /// RDMA device (`mlx5_0`).
    pub device: &'a str,
    /// Its port.
    pub port: u16,
    /// Network device (`ens1f0`, `ib0`).
    pub netdev: &'a str,
    /// Carrier of the network device as printed (`Up`, `Down`, `NA`); `None` when not printed.
    pub carrier: Option<String>,
    /// `-v`: the IB port state (`ACTIVE`, `DOWN`).
    pub state: Option<String>,
    /// `-v`: PCI address of the function.
    pub pci_address: Option<&'a str>,
    /// `-v`: firmware version.
    pub fw_ver: Option<&'a str>,
}

/// A kernel interface or RDMA device name: no whitespace, no `/`, no parentheses, at most 64 bytes.
fn is_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'/' | b'(' | b')' | b'#'))
}

/// `0000:31:00.0`: a PCI address (domain optional).
fn is_pci_address(s: &str) -> bool {
    s.contains(':') && s.contains('.') && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
}

/// Text inside one pair of parentheses, trimmed: `(DOWN  )` → `DOWN`.
fn in_parens(s: &str) -> Option<String> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.trim().to_owned())
}

/// Parse one `ibdev2netdev` line (any of the three layouts). `None` when it is not one.
pub fn parse_line(line: &str) -> Option<Mapping<'_>> {
    // `ibdev2netdev | column -t` output annotated by hand: `... (Up)  # CX-6 port 1/2`.
    let line = match line.find(" #") {
        Some(i) => &line[..i],
        None => line,
    };
    let (left, right, old_style) = if let Some((l, r)) = line.split_once("<===>") {
        (l, r, true)
    } else {
        let (l, r) = line.split_once("==>")?;
        (l, r, false)
    };
    let mut right_tokens = right.split_whitespace();
    let netdev = right_tokens.next()?;
    let rest: String = right_tokens.collect::<Vec<_>>().join(" ");
    let carrier = if rest.is_empty() {
        None
    } else if old_style {
        return None;
    } else {
        Some(in_parens(&rest)?)
    };
    let tokens: Vec<&str> = left.split_whitespace().collect();
    // The port is the number after the last `port`; what follows it is the `-v` state.
    let at = tokens.iter().rposition(|t| *t == "port")?;
    let port: u16 = tokens.get(at + 1)?.parse().ok()?;
    let after = tokens.get(at + 2..).unwrap_or_default().join(" ");
    let state = if after.is_empty() { None } else { Some(in_parens(&after)?) };
    let (pci_address, device) = match tokens.first() {
        Some(first) if is_pci_address(first) => (Some(*first), *tokens.get(1)?),
        Some(first) => (None, *first),
        None => return None,
    };
    let verbose = at > 1 + usize::from(pci_address.is_some());
    if !verbose && (at != 1 + usize::from(pci_address.is_some()) || state.is_some()) {
        return None;
    }
    // `-v` always prints `fw <version>` and `(<state>)` around the port
    let fw_ver = if verbose {
        let fw = tokens[..at].iter().rposition(|t| *t == "fw").and_then(|i| tokens.get(i + 1)).copied();
        if fw.is_none() || state.is_none() {
            return None;
        }
        fw
    } else {
        None
    };
    (is_name(device) && is_name(netdev)).then_some(Mapping {
        device,
        port,
        netdev,
        carrier,
        state,
        pci_address,
        fw_ver,
    })
}

/// A shell prompt running the tool (`root@h:~# ibdev2netdev -v`, `$ ibdev2netdev | column -t`).
fn is_prompt(t: &str) -> bool {
    t.starts_with("$ ") || (t.contains("ibdev2netdev") && !t.contains("==>") && !t.contains("<===>"))
}

/// True when the first significant lines are `ibdev2netdev` lines.
pub fn looks_like(text: &str) -> bool {
    let mut lines = text
        .lines()
        .take(50)
        .map(str::trim)
        .filter(|t| !(t.is_empty() || t.starts_with('#') || is_prompt(t) || parse_directive(t).is_some()))
        .take(3)
        .peekable();
    lines.peek().is_some() && lines.all(|t| parse_line(t).is_some())
}

/// Streaming reader for `ibdev2netdev` output.
#[derive(Default)]
pub struct Ibdev2netdevReader {
    directives: DirectiveState,
}

impl Ibdev2netdevReader {
    /// A reader for one input.
    pub fn new() -> Self {
        Ibdev2netdevReader::default()
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() || self.directives.apply_line(t) || t.starts_with('#') || is_prompt(t) {
            return Ok(());
        }
        let Some(m) = parse_line(t) else {
            return ctx.bad_record(
                pos,
                "an `ibdev2netdev` line `<rdma device> port <n> ==> <netdev> (<Up|Down>)`",
                raw,
            );
        };
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let mut push = |port: Option<u16>, key: &str, value: &str| {
            let a = Attribute { time_ns, host: 0, device: 0, port, key, value };
            ctx.push_attribute(&host, m.device, &a)
        };
        push(Some(m.port), "netdev", m.netdev)?;
        if let Some(c) = &m.carrier {
            push(Some(m.port), "netdev_carrier", c)?;
        }
        if let Some(s) = &m.state {
            push(Some(m.port), "state", s)?;
        }
        if let Some(p) = m.pci_address {
            push(Some(m.port), "pci_address", p)?;
        }
        if let Some(f) = m.fw_ver {
            push(None, "fw_ver", f)?;
        }
        Ok(())
    }
}

impl LineReader for Ibdev2netdevReader {
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
    fn the_three_layouts_parse() {
        let m = parse_line("mlx5_0 port 1 ==> ens4f0 (Down)").expect("default");
        assert_eq!((m.device, m.port, m.netdev, m.carrier.as_deref()), ("mlx5_0", 1, "ens4f0", Some("Down")));
        let v = "0000:31:00.1 mlx5_1 (MT4117 - MT2138K10121) CX4121A - ConnectX-4 LX SFP28 fw 14.27.1016 port 1 (DOWN  ) ==> ens4f1 (Down)";
        let m = parse_line(v).expect("verbose");
        assert_eq!(
            (m.device, m.port, m.netdev, m.state.as_deref(), m.pci_address, m.fw_ver),
            ("mlx5_1", 1, "ens4f1", Some("DOWN"), Some("0000:31:00.1"), Some("14.27.1016"))
        );
        // `-v` with no PCI address found: the line starts with the device
        let m = parse_line(" mlx5_6 (MT4120 - NA)  fw 16.27.1016 port 1 (ACTIVE) ==> ens6f1 (Up)").expect("no pci");
        assert_eq!((m.device, m.pci_address, m.state.as_deref()), ("mlx5_6", None, Some("ACTIVE")));
        let m = parse_line("mlx4_0 port 2 <===> ib1").expect("old style");
        assert_eq!((m.device, m.port, m.netdev, m.carrier), ("mlx4_0", 2, "ib1", None));
        let m = parse_line("mlx5_1   port  1  ==>  enp27s0f0np0   (Up)    # CX-6 2/2 *ethernet*").expect("column -t");
        assert_eq!((m.device, m.netdev, m.carrier.as_deref()), ("mlx5_1", "enp27s0f0np0", Some("Up")));
    }

    #[test]
    fn near_misses_are_not_lines() {
        for bad in [
            "mlx5_0 port x ==> eth0 (Up)",
            "mlx5_0 port 70000 ==> eth0 (Up)",
            "mlx5_0 port 1 ==>",
            "mlx5_0 port 1 ==> eth0 Up",
            "mlx5_0 1 ==> eth0 (Up)",
            "mlx5_0 extra port 1 ==> eth0 (Up)",
            "mlx5_0 port 1 ==> eth/0 (Up)",
            "link mlx5_0/1 state ACTIVE",
            "NIC statistics:",
        ] {
            assert!(parse_line(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn detection() {
        assert!(looks_like("$ ibdev2netdev | column -t\nmlx5_0   port  1  ==>  ibp26s0        (Down)\n"));
        assert!(looks_like("# host: gpu01\n1764686822\nmlx5_0 port 1 ==> eth0 (Up)\n"));
        assert!(!looks_like("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0\n"));
        assert!(!looks_like("mlx5_0 port 1 ==> eth0 (Up)\nrx_packets: 5\n"));
        assert!(!looks_like(""));
    }
}

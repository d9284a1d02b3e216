//! `rdma link show` (iproute2 `rdma` tool): each RDMA port's state and the network device it
//! drives, for any RDMA driver, text or `-j` JSON.
//!
//! ```text
//! link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev p1p1
//! link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING
//! 0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0
//! [{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"ens1f0np0","netdev_index":4}]
//! ```
//!
//! * Text: one line per port, `link <dev>/<port>` (iproute2 4.17+; the first versions printed
//!   `<dev index>/<port>: <dev>/<port>:`), then `<key> <value>` pairs as `rdma/link.c` prints them:
//!   `subnet_prefix`, `lid`, `sm_lid`, `lmc` (InfiniBand), `state`, `physical_state`, `netdev`,
//!   and with `-d` `netdev_index` and a `caps: <...>` line (skipped).
//! * JSON (`-j`, `-jp`): an array of objects with `ifname` and `port` (the first versions put
//!   `<dev>/<port>` in `ifname`), one key per attribute; read whole (bounded by `max_document_bytes`).
//!
//! Rows: port attributes (`device` = `mlx5_0`, `port` = 1), keyed as sysfs keys the same facts
//! (`state`, `phys_state`, `lid`, `sm_lid`) plus `netdev`, `netdev_index`, `subnet_prefix`, `lmc`;
//! other keys are kept under their own name; `state` and `physical_state` also give the gauges
//! `port_state_id` and `port_phys_state_id` (as sysfs does), and each device `node_type` = `hca`.
//! Host and time: `# host:`/timestamp lines
//! (before a JSON document too), else the driver's fallbacks.

use crate::error::{Error, Position, Result};
use crate::formats::common::{prompt_command, rdma_json_objects, significant_lines, split_rdma_link};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::Attribute;

/// The attribute key for an `rdma link` key: sysfs's name where sysfs has the same fact.
fn key_for(name: &str) -> &str {
    match name {
        "physical_state" => "phys_state",
        other => other,
    }
}

/// Keys whose presence after `link <dev>/<port>` makes the line a link line (not statistics).
const LINK_KEYS: &[&str] = &["subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev"];

/// The port and the `key value` text of a link line: `link mlx5_0/1 state ...` or `0/1: mlx5_0/1: state ...`.
fn split_record(t: &str) -> Option<((&str, u16), &str)> {
    if let Some(rest) = t.strip_prefix("link ") {
        let rest = rest.trim_start();
        let (link, pairs) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        return Some((split_rdma_link(link)?, pairs));
    }
    let (index, rest) = t.split_once(": ")?;
    split_rdma_link(index)?;
    let rest = rest.trim_start();
    let (link, pairs) = match rest.split_once(": ") {
        Some(split) => split,
        None => (rest.strip_suffix(':')?, ""),
    };
    Some((split_rdma_link(link)?, pairs))
}

/// True when the input looks like `rdma link show` text or its JSON.
pub fn looks_like(text: &str) -> bool {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let head: String = trimmed.chars().take(400).filter(|c| !c.is_whitespace()).collect();
        return head.starts_with("[{\"")
            && head.contains("\"ifname\":")
            && (head.contains("\"state\":") || head.contains("\"physical_state\":"));
    }
    // Past prompts, echoed commands and directives, every line is a link line (or the `caps:`
    // line `-d` prints under one): a log that merely contains a `link ...` line is not ours.
    let mut links = 0u32;
    for t in significant_lines(text, 50) {
        if links > 0 && t.starts_with("caps:") {
            continue;
        }
        let is_link = split_record(t)
            .is_some_and(|(_, pairs)| pairs.split_whitespace().next().is_some_and(|k| LINK_KEYS.contains(&k)));
        if !is_link {
            return false;
        }
        links += 1;
    }
    links > 0
}

/// Streaming reader for `rdma link show` text and JSON.
#[derive(Default)]
pub struct RdmaLinkReader {
    directives: DirectiveState,
    /// The JSON document, once the input turned out to be `-j` output.
    json: Option<Vec<u8>>,
    /// Position where the JSON document starts.
    json_start: Option<Position>,
    /// A text record was read (a `caps:` line must follow one).
    in_record: bool,
    /// Devices whose `node_type` attribute was written.
    described: ahash::AHashSet<String>,
}

impl RdmaLinkReader {
    /// A reader for one input.
    pub fn new() -> Self {
        RdmaLinkReader::default()
    }

    fn attribute(&mut self, device: &str, port: u16, key: &str, value: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        // The states are the canonical gauges sysfs gives for the same port, so `port_down`
        // judges a POLLING port of an `rdma link` listing as it judges one read from sysfs.
        if self.described.insert(device.to_owned()) {
            // `rdma` lists the host's own RDMA devices: channel adapters (a POLLING one takes
            // the host off the fabric, as `port_down` judges HCA ports).
            let node = crate::formats::ibstat::PortRows { time_ns, host: &host, device, port: None };
            node.attribute(ctx, "node_type", "hca")?;
        }
        let rows = crate::formats::ibstat::PortRows { time_ns, host: &host, device, port: Some(port) };
        match key {
            "state" => rows.logical_state(ctx, value)?,
            "physical_state" => rows.physical_state(ctx, value)?,
            _ => {}
        }
        if matches!(key, "state" | "physical_state") {
            return Ok(());
        }
        let a = Attribute { time_ns, host: 0, device: 0, port: Some(port), key: key_for(key), value };
        ctx.push_attribute(&host, device, &a)
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(doc) = &mut self.json {
            doc.extend_from_slice(raw);
            doc.push(b'\n');
            let limit = ctx.options().limits.max_document_bytes;
            if doc.len() as u64 > limit {
                return Err(Error::LimitExceeded {
                    path: ctx.path.to_path_buf(),
                    position: pos,
                    what: "size of an `rdma -j link show` document",
                    limit,
                    option: "max_document_bytes",
                });
            }
            return Ok(());
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if !self.in_record && (t.starts_with('[') || t.starts_with('{')) {
            self.json = Some(format!("{t}\n").into_bytes());
            self.json_start = Some(pos);
            return Ok(());
        }
        if t.starts_with("caps:") && self.in_record {
            return Ok(()); // `-d`: the port capability flags, not an identity
        }
        if !t.starts_with("link ") && self.directives.apply_line(t) {
            self.in_record = false;
            return Ok(());
        }
        if t.starts_with('#') || prompt_command(t).is_some() {
            return Ok(());
        }
        let Some(((device, port), pairs)) = split_record(t) else {
            return ctx.bad_record(
                pos,
                "a `link <device>/<port> <key> <value> ...` line (e.g. `link mlx5_0/1 state ACTIVE`)",
                raw,
            );
        };
        let tokens: Vec<&str> = pairs.split_whitespace().collect();
        if tokens.len() % 2 == 1 {
            let expected = format!("a value after `{}`", tokens[tokens.len() - 1]);
            return ctx.bad_record(pos, &expected, raw);
        }
        self.in_record = true;
        for pair in tokens.chunks_exact(2) {
            self.attribute(device, port, pair[0], pair[1], ctx)?;
        }
        Ok(())
    }

    fn read_json(&mut self, doc: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        for obj in &rdma_json_objects(doc, pos, ctx, "rdma -j link show")? {
            let name = obj.get("ifname").and_then(serde_json::Value::as_str);
            let port = obj.get("port").and_then(serde_json::Value::as_u64).and_then(|p| u16::try_from(p).ok());
            // the first iproute2 versions: `"ifname":"mlx5_0/1"` beside `"port":1`
            let link = match (name, port) {
                (Some(n), _) if n.contains('/') => split_rdma_link(n),
                (Some(n), Some(p)) if !n.is_empty() => Some((n, p)),
                _ => None,
            };
            let Some((device, port)) = link else {
                ctx.bad_record(
                    pos,
                    "`ifname` (a device name) and `port` (0-65535) in each link object",
                    &serde_json::to_vec(obj).unwrap_or_default(),
                )?;
                continue;
            };
            for (key, value) in obj {
                if matches!(key.as_str(), "ifindex" | "ifname" | "port" | "caps") {
                    continue;
                }
                match value {
                    serde_json::Value::String(s) => self.attribute(device, port, key, s, ctx)?,
                    serde_json::Value::Number(n) => self.attribute(device, port, key, &n.to_string(), ctx)?,
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl LineReader for RdmaLinkReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        if let Some(doc) = self.json.take() {
            let pos = self.json_start.unwrap_or(Position { line: Some(1), byte_offset: 0 });
            return self.read_json(&doc, pos, ctx);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_text_layouts_split() {
        let ((d, p), rest) =
            split_record("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev p1p1 ").expect("new");
        assert_eq!((d, p, rest.trim()), ("mlx5_0", 1, "state ACTIVE physical_state LINK_UP netdev p1p1"));
        let ((d, p), rest) =
            split_record("0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0 ").expect("old");
        assert_eq!((d, p, rest.trim()), ("mlx5_0", 1, "state ACTIVE physical_state LINK_UP netdev ens1f0"));
        assert!(split_record("link mlx5_0 state ACTIVE").is_none());
        assert!(split_record("link mlx5_0/x state ACTIVE").is_none());
        assert!(split_record("mlx5_0 port 1 ==> eth0 (Up)").is_none());
    }

    #[test]
    fn detection_tells_link_show_from_statistics() {
        assert!(looks_like("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0\n"));
        assert!(looks_like(
            "# host: gpu01\nlink mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state DOWN\n"
        ));
        assert!(looks_like("1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP\n"));
        assert!(looks_like(r#"[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE"}]"#));
        assert!(!looks_like("link mlx5_0/1 rx_write_requests 0 rx_read_requests 0\n"));
        assert!(!looks_like(r#"[{"ifindex":0,"ifname":"mlx5_0","port":1,"rx_write_requests":0}]"#));
        assert!(!looks_like("mlx5_0 port 1 ==> eth0 (Up)\n"));
        assert!(!looks_like(""));
        // prompts and `-d` caps lines are looked past; any other line makes it someone else's
        assert!(looks_like(
            "root@node102:~/3FS# rdma link show\nlink rxe_0/1 state ACTIVE physical_state LINK_UP netdev p1p1\n"
        ));
        assert!(looks_like("link mlx5_0/1 state ACTIVE netdev eth0\n    caps: <CM, IP_BASED_GIDS>\n"));
        assert!(!looks_like(
            "link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state ACTIVE\n\
             # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592\n\
                    8             2     float     sum      -1    42.56    0.00    0.00      0\n"
        ));
    }
}

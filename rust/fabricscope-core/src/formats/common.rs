//! Helpers several readers share: IBA port-state names, the `date`-style start stamp, the device
//! a file name names, the ibdiagnet net_dump block header (read by its reader and by detection),
//! iproute2 `rdma` link names and JSON documents, and the shell prompts of terminal transcripts
//! (which content signatures look past).

use crate::error::{Position, Result};
use crate::read::ReadContext;

/// Logical port state id (IBA PortInfo:PortState) from ibdiagnet's short names or libibmad's
/// long ones (`Down`, `Initialize`, `Armed`, `Active`).
pub(crate) fn state_id(s: &str) -> Option<u64> {
    match s.to_ascii_uppercase().as_str() {
        "DOWN" => Some(1),
        "INI" | "INIT" | "INITIALIZE" => Some(2),
        "ARM" | "ARMED" => Some(3),
        "ACT" | "ACTIVE" => Some(4),
        "ACT_DEFER" | "ACTIVE_DEFER" => Some(5),
        _ => None,
    }
}

/// Physical port state id (IBA PortInfo:PortPhysicalState).
pub(crate) fn phys_state_id(s: &str) -> Option<u64> {
    let u = s.to_ascii_uppercase().replace(['_', ' '], "");
    match u.as_str() {
        "SLEEP" => Some(1),
        "POLLING" | "POLL" => Some(2),
        "DISABLED" | "DISABLE" => Some(3),
        "TRAINING" | "PORTCONFIGURATIONTRAINING" => Some(4),
        "LINKUP" | "UP" => Some(5),
        "LINKERRORRECOVERY" | "ERRORRECOVERY" => Some(6),
        "PHYTEST" => Some(7),
        _ => None,
    }
}

/// `Wed Dec  2 14:00:00 2026` → ns (read as UTC).
pub(crate) fn parse_started(s: &str) -> Option<i64> {
    let norm = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = chrono::NaiveDateTime::parse_from_str(&norm, "%a %b %d %H:%M:%S %Y").ok()?;
    t.and_utc().timestamp_nanos_opt()
}

/// The device a file name names: its first `0x<hex>` token, normalised.
pub(crate) fn guid_from_path(path: &std::path::Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| t.starts_with("0x"))
        .find_map(crate::formats::ib::normalize_guid)
}

/// An `ibdiagnet2.net_dump` block header `"<desc>", <vendor>, <guid>, LID <n>` → (desc, vendor,
/// guid text, lid text).
pub(crate) fn net_dump_block_header(t: &str) -> Option<(&str, &str, &str, &str)> {
    let body = t.strip_prefix('"')?;
    let (desc, rest) = body.rsplit_once("\",")?;
    let mut parts = rest.split(',').map(str::trim);
    let (vendor, guid, lid) = (parts.next()?, parts.next()?, parts.next()?);
    let lid = lid.strip_prefix("LID")?.trim();
    if parts.next().is_some() || !guid.starts_with("0x") || lid.is_empty() {
        return None;
    }
    Some((desc, vendor, guid, lid))
}

/// An iproute2 `rdma` link name `mlx5_0/1` → (`mlx5_0`, 1). Device names hold no `/`.
pub(crate) fn split_rdma_link(s: &str) -> Option<(&str, u16)> {
    let (dev, port) = s.rsplit_once('/')?;
    (!dev.is_empty() && !dev.contains('/')).then_some(())?;
    Some((dev, port.parse().ok()?))
}

/// The objects of an iproute2 `rdma -j ...` JSON document (an array of objects, or one object).
/// A document that is not such JSON, and each element that is not an object, is a bad record
/// naming `command` (the caller's `rdma -j ... show`): strict mode stops there, lenient mode
/// skips it.
pub(crate) fn rdma_json_objects(
    doc: &[u8],
    pos: Position,
    ctx: &mut ReadContext<'_>,
    command: &str,
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>> {
    let head = doc.get(..80).unwrap_or(doc);
    let records = match serde_json::from_slice::<serde_json::Value>(doc) {
        Ok(serde_json::Value::Array(a)) => a,
        Ok(obj @ serde_json::Value::Object(_)) => vec![obj],
        Ok(_) => {
            ctx.bad_record(pos, "a JSON array of link objects", head)?;
            return Ok(Vec::new());
        }
        Err(e) => {
            ctx.bad_record(pos, &format!("an `{command}` JSON array ({e})"), head)?;
            return Ok(Vec::new());
        }
    };
    let mut objects = Vec::with_capacity(records.len());
    for rec in records {
        match rec {
            serde_json::Value::Object(obj) => objects.push(obj),
            other => ctx.bad_record(pos, "a JSON object per link", other.to_string().as_bytes())?,
        }
    }
    Ok(objects)
}

/// The command of a shell prompt line as a terminal transcript shows it: `$ cmd`, `$cmd`, `# cmd`,
/// `user@host:~$ cmd`, `root@node:~/dir# cmd`, `[user@host dir]$ cmd`, `(venv) [user@host ~]$ cmd`.
/// `None` for any other line. A tool's own output never starts this way, so signatures and
/// readers skip these lines (the command they echo is not the tool's output).
pub fn prompt_command(line: &str) -> Option<&str> {
    let t = line.trim();
    // `(base) [user@host ~]$ cmd`: a conda/virtualenv name before the prompt.
    let t = match t.strip_prefix('(').and_then(|r| r.split_once(") ")) {
        Some((env, rest)) if !env.contains(char::is_whitespace) => rest.trim_start(),
        _ => t,
    };
    if let Some(rest) = t.strip_prefix('$').or_else(|| t.strip_prefix("# ")) {
        // `$ cmd` and `$cmd`, but not `${VAR}` or a bare `$`.
        let cmd = rest.trim_start();
        return (!cmd.is_empty() && !rest.starts_with('{')).then_some(cmd);
    }
    if let Some(rest) = t.strip_prefix('[') {
        // `[user@host dir]$ cmd`
        let (inside, after) = rest.split_once(']')?;
        let cmd = after.strip_prefix(['$', '#'])?;
        return (inside.contains('@') && cmd.starts_with(' ')).then(|| cmd.trim_start());
    }
    // `user@host:~/dir$ cmd`, `root@host:~# cmd`
    let (first, rest) = t.split_once(' ')?;
    let prompt = first.strip_suffix(['$', '#'])?;
    (prompt.contains('@') || prompt.ends_with(":~") || prompt.contains(":/") || prompt.contains(":~/"))
        .then(|| rest.trim_start())
        .filter(|cmd| !cmd.is_empty())
}

/// The lines of a head that carry a tool's own output: every line except blank lines, `#`
/// comments, shell prompts with the command they echo, and directive lines (timestamps, `# host:`).
/// The last line is left out when the head does not end with a line break and it is not the
/// only one (a head cut mid-line). At most `limit` lines.
pub fn significant_lines(text: &str, limit: usize) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.len() > 1 && !text.ends_with('\n') {
        lines.pop();
    }
    lines
        .into_iter()
        .map(str::trim)
        .filter(|t| {
            !(t.is_empty()
                || t.starts_with('#')
                || prompt_command(t).is_some()
                || crate::formats::parse_directive(t).is_some())
        })
        .take(limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_recognised_with_their_command() {
        assert_eq!(prompt_command("$ rdma statistic show"), Some("rdma statistic show"));
        assert_eq!(
            prompt_command("$rdma statistic show link mana_0/1 -p"),
            Some("rdma statistic show link mana_0/1 -p")
        );
        assert_eq!(prompt_command("# rdma link"), Some("rdma link"));
        assert_eq!(prompt_command("root@node102:~/3FS# rdma link show"), Some("rdma link show"));
        assert_eq!(prompt_command("user@gpu01:~$ ethtool -S eth0"), Some("ethtool -S eth0"));
        assert_eq!(prompt_command("[abc@fed ~]$ rdma link "), Some("rdma link"));
        assert_eq!(prompt_command("(base) [szymon.ozog@gh-3714u06 ~]$ lsmod"), Some("lsmod"));
        assert_eq!(prompt_command("link mlx5_0/1 state ACTIVE"), None);
        assert_eq!(prompt_command("rx_packets: 1"), None);
        assert_eq!(prompt_command("${HOME}/bin/run"), None);
        assert_eq!(prompt_command("$"), None);
    }

    #[test]
    fn significant_lines_skip_prompts_comments_and_a_cut_last_line() {
        let text = "$ rdma link\n# note\n\nlink a/1 state ACTIVE\n1764686822\nlink b/1 sta";
        assert_eq!(significant_lines(text, 10), vec!["link a/1 state ACTIVE"]);
        assert_eq!(significant_lines("only line", 10), vec!["only line"]);
    }
}

//! The node GUID: the join key between topology (which port is cabled to which) and counters
//! (whose port moved). Every reader stores it the same way, through [`normalize_guid`].

/// A node or port GUID as every reader stores it: lowercase `0x` + 16 hex digits.
///
/// Accepted spellings, as the tools print them:
/// * `0x`/`0X` + 1 to 16 hex digits (`ibnetdiscover`, `perfquery`, UFM; `ibqueryerrors` prints
///   `%x` without zero padding, so `0x2c903006e29b0` becomes `0x0002c903006e29b0`);
/// * four colon-separated groups of four hex digits, optionally `0x`-prefixed (sysfs
///   `node_guid`, `sys_image_guid`: `7cfe:9003:003b:4b96`);
/// * bare hex of exactly 16 digits (bare shorter text such as `1234` is ambiguous with a decimal
///   number and is refused).
///
/// Surrounding whitespace is ignored. `None` for anything else.
pub fn normalize_guid(text: &str) -> Option<String> {
    let t = text.trim();
    let (prefixed, body) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let hex: String = if body.contains(':') {
        let groups: Vec<&str> = body.split(':').collect();
        if groups.len() != 4 || groups.iter().any(|g| g.len() != 4) {
            return None;
        }
        groups.concat()
    } else if prefixed || body.len() == 16 {
        body.to_owned()
    } else {
        return None;
    };
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(format!("0x{:0>16}", hex.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::normalize_guid;

    #[test]
    fn every_tool_spelling_agrees() {
        let want = Some("0x7cfe9003003b4b96".to_owned());
        for spelling in [
            "0x7cfe9003003b4b96",  // ibnetdiscover, perfquery, iblinkinfo
            "0X7CFE9003003B4B96",  // upper case
            "7cfe9003003b4b96",    // bare, full width
            "7cfe:9003:003b:4b96", // sysfs node_guid
            "0x7cfe:9003:003b:4b96",
            " 0x7cfe9003003b4b96\n", // with the line's whitespace
        ] {
            assert_eq!(normalize_guid(spelling), want, "{spelling:?}");
        }
    }

    #[test]
    fn short_prefixed_guids_are_zero_padded() {
        assert_eq!(normalize_guid("0x2c903006e29b0").as_deref(), Some("0x0002c903006e29b0"));
        assert_eq!(normalize_guid("0x2c9030001").as_deref(), Some("0x00000002c9030001"));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "0x",
            "1234",
            "0x1234567890abcdef0",
            "0xzz",
            "0xé",
            "0a7f:bc12",
            "0a7f:bc12:45ef:d23",
            "Not-A-GUID",
            "7cfe:9003:003b:4b96:0000",
            "mlx5_0",
        ] {
            assert_eq!(normalize_guid(bad), None, "{bad:?}");
        }
    }
}

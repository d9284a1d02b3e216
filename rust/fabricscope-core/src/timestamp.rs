//! Timestamps for formats that carry none of their own.
//!
//! Order of precedence (documented in the README): a timestamp line before each snapshot, a
//! timestamp in the file name, an explicit argument, the file's mtime (with a warning).

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

const NS_PER_S: i64 = 1_000_000_000;

/// Plausible epoch-second range for telemetry: 2001-09-09 .. 2262-04-11 (10 digits).
fn plausible_epoch_seconds(s: i64) -> bool {
    // Ten digits, up to the last second whose nanoseconds fit an i64 (2262-04-11): beyond it
    // `secs * NS_PER_S` overflowed (found by fuzzing).
    (1_000_000_000..i64::MAX / NS_PER_S).contains(&s)
}

/// A time an input states, with the resolution it is written to (`date +%s` 1 s, `date +%s.%N`
/// 1 ns, `date -Is` 1 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Nanoseconds since the epoch, UTC.
    pub ns: i64,
    /// The unit of the last digit written, in nanoseconds.
    pub resolution_ns: i64,
}

/// A file-name timestamp's resolution: every form [`timestamp_from_file_name`] reads ends at
/// whole seconds.
pub const FILE_NAME_RESOLUTION_NS: i64 = NS_PER_S;

/// [`parse_timestamp_line`] with the resolution the line is written to.
pub fn parse_stamp_line(line: &str) -> Option<Stamp> {
    parse_stamp(timestamp_token(line)?)
}

/// Parse a line that consists of a timestamp only, as `date +%s`, `date +%s.%N`, `date -Is`,
/// `date -Ins`, `date --rfc-3339=seconds`, `date -u` (UTC/GMT only) print it. An optional leading
/// `#` and a `time:`/`timestamp:`/`time=`/`timestamp=` key are accepted.
///
/// Returns nanoseconds since the epoch, UTC.
pub fn parse_timestamp_line(line: &str) -> Option<i64> {
    parse_timestamp(timestamp_token(line)?)
}

/// The timestamp text of a timestamp line: without a leading `#` and a `time:`-style key.
fn timestamp_token(line: &str) -> Option<&str> {
    let mut s = line.trim();
    if let Some(rest) = s.strip_prefix('#') {
        s = rest.trim_start();
    }
    for key in ["timestamp:", "timestamp=", "time:", "time=", "date:", "date="] {
        if s.get(..key.len()).is_some_and(|p| p.eq_ignore_ascii_case(key)) {
            s = s[key.len()..].trim_start();
            break;
        }
    }
    (!s.is_empty()).then_some(s)
}

/// Parse one timestamp token (no surrounding text). See [`parse_timestamp_line`].
pub fn parse_timestamp(s: &str) -> Option<i64> {
    parse_stamp(s).map(|t| t.ns)
}

/// [`parse_timestamp`] with the resolution the token is written to.
pub fn parse_stamp(s: &str) -> Option<Stamp> {
    // The unit of a fraction's last digit (`.5` 100 ms, `,250000000` 1 ns); 1 s without one.
    let fraction = |frac: &str| match frac.bytes().take_while(u8::is_ascii_digit).count() {
        0 => NS_PER_S,
        n => 10_i64.pow(9 - n.min(9) as u32),
    };
    let stamp = |ns: Option<i64>, resolution_ns: i64| ns.map(|ns| Stamp { ns, resolution_ns });
    let b = s.as_bytes();
    if b.iter().all(|c| c.is_ascii_digit() || *c == b'.') && b.first().is_some_and(u8::is_ascii_digit) {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.len() != 10 || frac.contains('.') || frac.len() > 9 {
            return None;
        }
        let secs: i64 = int.parse().ok()?;
        if !plausible_epoch_seconds(secs) {
            return None;
        }
        let mut frac_ns: i64 = 0;
        if !frac.is_empty() {
            let digits: i64 = frac.parse().ok()?;
            frac_ns = digits * 10_i64.pow(9 - frac.len() as u32);
        }
        return stamp(secs.checked_mul(NS_PER_S)?.checked_add(frac_ns), fraction(frac));
    }
    // RFC 3339 / ISO 8601 (`date -Ins` uses a comma before the fraction). Dates hold no `.`, so
    // the digits after one are the seconds' fraction.
    let normalised = s.replacen(',', ".", 1);
    let written = fraction(normalised.split_once('.').map_or("", |(_, f)| f));
    if let Ok(dt) = DateTime::parse_from_rfc3339(&normalised) {
        return stamp(dt.timestamp_nanos_opt(), written);
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%d %H:%M:%S%.f%z"] {
        if let Ok(dt) = DateTime::parse_from_str(&normalised, fmt) {
            return stamp(dt.timestamp_nanos_opt(), written);
        }
    }
    if let Ok(dt) = DateTime::parse_from_str(&normalised, "%Y-%m-%dT%H:%M%z") {
        return stamp(dt.timestamp_nanos_opt(), 60 * NS_PER_S);
    }
    // Naive forms are taken as UTC.
    let naive = normalised.trim_end_matches('Z').trim_end_matches(" UTC");
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(naive, fmt) {
            return stamp(Utc.from_utc_datetime(&dt).timestamp_nanos_opt(), written);
        }
    }
    // `date` default output, only when the zone is UTC/GMT (any other abbreviation is ambiguous).
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.len() == 6 && (words[4] == "UTC" || words[4] == "GMT") {
        let joined = format!("{} {} {} {}", words[1], words[2], words[5], words[3]);
        if let Ok(dt) = NaiveDateTime::parse_from_str(&joined, "%b %d %Y %H:%M:%S") {
            return stamp(Utc.from_utc_datetime(&dt).timestamp_nanos_opt(), NS_PER_S);
        }
    }
    None
}

/// Find a timestamp embedded in a file name: `20261202T144702Z`, `2026-12-02T14:47:02Z`,
/// `2026-12-02_14-47-02`, `20261202-144702` or a 10-digit epoch (`ethtool-1764686822.txt`).
/// Taken as UTC.
pub fn timestamp_from_file_name(name: &str) -> Option<i64> {
    let b = name.as_bytes();
    let n = b.len();
    let digit_run = |start: usize| -> usize { b[start..].iter().take_while(|c| c.is_ascii_digit()).count() };
    let mut i = 0;
    while i < n {
        if !b[i].is_ascii_digit() || (i > 0 && b[i - 1].is_ascii_digit()) {
            i += 1;
            continue;
        }
        let run = digit_run(i);
        // YYYYMMDD[T_-]HHMMSS. `get` rather than indexing: names may hold multi-byte UTF-8.
        if run == 8
            && matches!(b.get(i + 8), Some(b'T' | b'_' | b'-'))
            && i + 9 < n
            && digit_run(i + 9) >= 6
            && let (Some(d), Some(t)) = (name.get(i..i + 8), name.get(i + 9..i + 15))
            && let Some(ns) = ymd_hms(d, t, "%Y%m%d", "%H%M%S")
        {
            return Some(ns);
        }
        // YYYY-MM-DD[T_ ]HH[:-]MM[:-]SS
        if run == 4
            && matches!(b.get(i + 10), Some(b'T' | b'_' | b' '))
            && let (Some(date), Some(time)) = (name.get(i..i + 10), name.get(i + 11..i + 19))
            && let Some(ns) = ymd_hms(date, &time.replace('-', ":"), "%Y-%m-%d", "%H:%M:%S")
        {
            return Some(ns);
        }
        if run == 10
            && let Some(Ok(secs)) = name.get(i..i + 10).map(str::parse::<i64>)
            && plausible_epoch_seconds(secs)
        {
            return Some(secs * NS_PER_S);
        }
        i += run.max(1);
    }
    None
}

fn ymd_hms(date: &str, time: &str, dfmt: &str, tfmt: &str) -> Option<i64> {
    let d = NaiveDate::parse_from_str(date, dfmt).ok()?;
    let t = NaiveTime::parse_from_str(time, tfmt).ok()?;
    Utc.from_utc_datetime(&d.and_time(t)).timestamp_nanos_opt()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_764_686_822 * NS_PER_S; // 2025-12-02T14:47:02Z

    #[test]
    fn stamps_carry_the_resolution_they_are_written_to() {
        let res = |line: &str| parse_stamp_line(line).map(|s| s.resolution_ns);
        assert_eq!(parse_stamp_line("1764686822"), Some(Stamp { ns: T, resolution_ns: NS_PER_S }));
        assert_eq!(res("1764686822.5"), Some(100_000_000));
        assert_eq!(res("# time: 1764686822.123"), Some(1_000_000));
        assert_eq!(res("1764686822.123456789"), Some(1));
        assert_eq!(res("# 2025-12-02T14:47:02+00:00"), Some(NS_PER_S));
        assert_eq!(res("2025-12-02T14:47:02,250000000+00:00"), Some(1));
        assert_eq!(res("timestamp: 2025-12-02 14:47:02"), Some(NS_PER_S));
        assert_eq!(res("2025-12-02T14:47+00:00"), Some(60 * NS_PER_S));
        assert_eq!(res("Tue Dec  2 14:47:02 UTC 2025"), Some(NS_PER_S));
        assert_eq!(res("rx_packets: 5"), None);
    }

    #[test]
    fn date_outputs_parse() {
        assert_eq!(parse_timestamp_line("1764686822"), Some(T));
        assert_eq!(parse_timestamp_line("1764686822.5"), Some(T + 500_000_000));
        assert_eq!(parse_timestamp_line("# 2025-12-02T14:47:02+00:00"), Some(T));
        assert_eq!(parse_timestamp_line("2025-12-02T15:47:02+01:00"), Some(T));
        assert_eq!(parse_timestamp_line("2025-12-02T14:47:02,250000000+00:00"), Some(T + 250_000_000));
        assert_eq!(parse_timestamp_line("timestamp: 2025-12-02 14:47:02"), Some(T));
        assert_eq!(parse_timestamp_line("Tue Dec  2 14:47:02 UTC 2025"), Some(T));
    }

    #[test]
    fn non_timestamps_are_rejected() {
        assert_eq!(parse_timestamp_line("     rx_packets: 1764686822"), None);
        assert_eq!(parse_timestamp_line("12345"), None);
        assert_eq!(parse_timestamp_line("NIC statistics:"), None);
        assert_eq!(parse_timestamp_line("Tue Dec  2 14:47:02 CET 2025"), None);
        assert_eq!(parse_timestamp_line(""), None);
    }

    #[test]
    fn file_names_carry_timestamps() {
        assert_eq!(timestamp_from_file_name("ethtool-eth2-20251202T144702Z.txt"), Some(T));
        assert_eq!(timestamp_from_file_name("gpu01_2025-12-02_14-47-02.prom"), Some(T));
        assert_eq!(timestamp_from_file_name("snap-1764686822.txt.gz"), Some(T));
        assert_eq!(timestamp_from_file_name("mlx5_0-port1.txt"), None);
        assert_eq!(timestamp_from_file_name("12345678901234.txt"), None);
        assert_eq!(timestamp_from_file_name("2026éééééééé.txt"), None);
        assert_eq!(timestamp_from_file_name("20261202Tééé.txt"), None);
    }
}

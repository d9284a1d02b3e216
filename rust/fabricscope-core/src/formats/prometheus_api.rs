//! Prometheus HTTP API responses (`/api/v1/query`, `/api/v1/query_range`): the JSON a server
//! answers, decoded into the same samples and attributes a `/federate` text dump of the same
//! series gives.
//!
//! ```text
//! {"status":"success","data":{"resultType":"matrix","result":[
//!   {"metric":{"__name__":"node_infiniband_port_data_transmitted_bytes_total","device":"mlx5_0",
//!              "instance":"gpu01:9100","port":"1"},
//!    "values":[[1796400000.032,"2147647570406460"],[1796400015.024,"2147946141068420"]]}]}}
//! ```
//!
//! * `matrix` results (a range selector `m[5m]` or `query_range`) and `vector` results (an
//!   instant query: `"value":[t,"v"]`) are read; `scalar`/`string` results and native
//!   `histograms` carry no counters and are skipped with a warning.
//! * Each series is handed to the text reader as the series text an exposition would carry
//!   (`name{label="value",...}`), so host, device, port, priority, counter mapping, metadata
//!   attributes, `*_info` series and DCGM blanks follow exactly the text reader's conventions.
//! * Values are strings (`"2147647570406460"`, `"1.8527668e+07"`, `"NaN"`): decimal integers are
//!   kept exactly as u64, integral floats up to 2^53 too (as the text reader does).
//! * Timestamps are JSON numbers in seconds; Prometheus keeps milliseconds, so they are rounded
//!   to the millisecond (exact for every timestamp a server can return).
//! * `"status":"error"` responses are an error naming `errorType` and `error`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;

use serde::Deserialize;

use crate::error::{Position, Result};
use crate::formats::BinaryReader;
use crate::formats::prometheus::{Flavor, PrometheusReader, push_escaped};
use crate::read::ReadContext;
use crate::schema::Value;

const NS_PER_MS: i64 = 1_000_000;

/// Does a JSON head look like a Prometheus API query response (a result or an error)?
pub fn looks_like(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') && t.contains("\"status\"") && (t.contains("\"resultType\"") || t.contains("\"errorType\""))
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(default, borrow)]
    data: Option<Data<'a>>,
    #[serde(default, rename = "errorType", borrow)]
    error_type: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Cow<'a, str>,
}

#[derive(Deserialize)]
struct MatrixData<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Cow<'a, str>,
    #[serde(borrow)]
    result: Vec<Series<'a>>,
}

#[derive(Deserialize)]
struct TypedResponse<'a> {
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(borrow)]
    data: MatrixData<'a>,
    #[serde(default, borrow)]
    warnings: Vec<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Series<'a> {
    #[serde(borrow)]
    metric: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
    #[serde(default, borrow)]
    values: Vec<(f64, Cow<'a, str>)>,
    #[serde(default, borrow)]
    value: Option<(f64, Cow<'a, str>)>,
    #[serde(default)]
    histograms: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    histogram: Option<serde::de::IgnoredAny>,
}

/// Reader of one API response document (bounded by `max_document_bytes`).
pub struct PrometheusApiReader;

impl BinaryReader for PrometheusApiReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = crate::formats::read_bounded(head, rest, ctx, "Prometheus API response size")?;
        read_document(&buf, ctx)?;
        Ok(buf.len() as u64)
    }
}

fn json_error(e: &serde_json::Error, buf: &[u8]) -> Position {
    // serde_json reports line and column; turn them into a byte offset for the message.
    let line = e.line().max(1);
    let start: usize = buf.split(|b| *b == b'\n').take(line - 1).map(|l| l.len() + 1).sum();
    Position { line: Some(line as u64), byte_offset: (start + e.column().saturating_sub(1)) as u64 }
}

fn read_document(buf: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
    const EXPECTED: &str =
        "a Prometheus API response {\"status\":\"success\",\"data\":{\"resultType\":...,\"result\":[...]}}";
    // One typed pass on the common path (a matrix or vector of series); anything else (an
    // error status, a scalar result, broken JSON) is explained by a second, lighter pass.
    let typed = match serde_json::from_slice::<TypedResponse<'_>>(buf) {
        Ok(r) if r.status == "success" && matches!(r.data.result_type.as_ref(), "matrix" | "vector") => r,
        _ => return explain(buf, EXPECTED, ctx),
    };
    for w in &typed.warnings {
        ctx.warn(format!("the server warned: {w}"));
    }
    let mut reader = PrometheusReader::new(Flavor::Prometheus);
    let mut key = String::new();
    let mut histograms = false;
    for (index, series) in typed.data.result.iter().enumerate() {
        if ctx.cancelled() {
            break;
        }
        histograms |= series.histograms.is_some() || series.histogram.is_some();
        series_key(series.metric.iter().map(|(k, v)| (k.as_ref(), v.as_ref())), &mut key);
        // No byte offsets survive the typed decode: the series' index in `result` locates it.
        let pos = Position { line: None, byte_offset: index as u64 };
        for (t, v) in series.values.iter().chain(series.value.iter()) {
            let Some(time_ns) = time_ns(*t) else {
                ctx.bad_record(pos, "a timestamp in seconds since the epoch", t.to_string().as_bytes())?;
                continue;
            };
            reader.push_series_sample(key.as_bytes(), v.as_bytes(), time_ns, pos, ctx)?;
        }
    }
    if histograms {
        ctx.warn("native histogram samples carry no counters: skipped");
    }
    Ok(())
}

/// Why a document is not a successful matrix or vector response.
fn explain(buf: &[u8], expected: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
    let head: Response<'_> = match serde_json::from_slice(buf) {
        Ok(r) => r,
        Err(e) => {
            let pos = json_error(&e, buf);
            let found = buf.get(pos.byte_offset as usize..).unwrap_or_default();
            return ctx.bad_record(pos, &format!("{expected} ({e})"), found);
        }
    };
    if head.status != "success" {
        let found = format!(
            "status {:?}, errorType {:?}: {}",
            head.status,
            head.error_type.as_deref().unwrap_or(""),
            head.error.as_deref().unwrap_or("")
        );
        return ctx.bad_record(Position::default(), "a response with \"status\":\"success\"", found.as_bytes());
    }
    match head.data {
        None => ctx.bad_record(Position::default(), expected, b"no \"data\" object"),
        Some(d) if matches!(d.result_type.as_ref(), "matrix" | "vector") => {
            // The light pass accepts what the typed one refused: a series is malformed.
            match serde_json::from_slice::<TypedResponse<'_>>(buf) {
                Err(e) => {
                    let pos = json_error(&e, buf);
                    let found = buf.get(pos.byte_offset as usize..).unwrap_or_default();
                    ctx.bad_record(
                        pos,
                        &format!("series of {{\"metric\":{{...}},\"values\":[[<seconds>,\"<value>\"],...]}} ({e})"),
                        found,
                    )
                }
                Ok(_) => Ok(()),
            }
        }
        Some(d) => {
            ctx.warn(format!("a `{}` result holds no series: nothing read", d.result_type));
            Ok(())
        }
    }
}

/// `name{a="x",b="y"}` from a series' labels in name order (`__name__` is the name), escaped as
/// an exposition writes them: the key under which the text reader resolves a series. Shared by
/// the JSON API and remote read, so both name a series exactly as the files do.
pub(crate) fn series_key<'a>(labels: impl Iterator<Item = (&'a str, &'a str)> + Clone, out: &mut String) {
    out.clear();
    out.push_str(labels.clone().find(|(k, _)| *k == "__name__").map_or("", |(_, n)| n));
    out.push('{');
    let mut first = true;
    for (k, v) in labels {
        if k == "__name__" {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(k);
        out.push_str("=\"");
        push_escaped(out, v);
        out.push('"');
    }
    out.push('}');
}

/// A stored float64 as the JSON API's text of it reads: Go writes it with the shortest digits
/// that round-trip (`strconv.FormatFloat(v, 'f', -1, 64)`: 2^63 as `9223372036854776000`), which
/// the text reader keeps as that exact integer when it fits a u64. Remote read's floats go
/// through here so both APIs give the same values.
pub(crate) fn api_value(v: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: from_f64 keeps these exactly
    const U64_END: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if v > EXACT && v < U64_END && v.fract() == 0.0 {
        // Rust's Display also prints the shortest round-trip digits, padded with zeros.
        if let Ok(u) = format!("{v}").parse::<u64>() {
            return Value::U64(u);
        }
    }
    Value::from_f64(v)
}

/// Seconds (as the API writes them: milliseconds with a fraction) to ns, exactly; None when
/// the time is not finite or beyond what i64 nanoseconds hold (about year 2262).
fn time_ns(seconds: f64) -> Option<i64> {
    let ms = (seconds * 1000.0).round();
    // `as` saturates beyond i64 (never wraps); the product is checked, so a time past what i64
    // nanoseconds hold is refused instead of wrapping (release) or panicking (debug).
    if !ms.is_finite() {
        return None;
    }
    (ms as i64).checked_mul(NS_PER_MS)
}

/// Is `name` a metric the counter vocabulary knows (a canonical counter, a `node_ethtool_*`
/// name that maps to one, or an `*_info` series of a known exporter that carries port
/// attributes)? Used to pull exactly these series from a server.
pub fn is_known_metric(name: &str) -> bool {
    const INFO_FAMILIES: &[&str] = &["node_infiniband_", "node_ethtool_", "node_network_", "DCGM_FI_", "infiniband_"];
    crate::formats::prometheus::is_mapped_metric(name)
        || (name.ends_with("_info") && INFO_FAMILIES.iter().any(|p| name.starts_with(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_to_the_millisecond() {
        assert_eq!(time_ns(1_796_400_000.032), Some(1_796_400_000_032_000_000));
        assert_eq!(time_ns(1_796_400_180.058), Some(1_796_400_180_058_000_000));
        assert_eq!(time_ns(0.001), Some(1_000_000));
        // The largest ms whose ns fit in i64, and one past it: refused, never wrapped.
        assert_eq!(time_ns(9_223_372_036.854), Some(9_223_372_036_854_000_000));
        assert_eq!(time_ns(9_223_372_036.855), None);
        assert_eq!(time_ns(-9_223_372_036.855), None);
        // 10^13 ms passed the old range check (< 9.2e15 ms) and overflowed the multiplication.
        assert_eq!(time_ns(1e10), None);
        assert_eq!(time_ns(f64::NAN), None);
        assert_eq!(time_ns(1e300), None);
    }

    #[test]
    fn series_text_escapes_values() {
        let mut m = BTreeMap::new();
        m.insert(Cow::Borrowed("__name__"), Cow::Borrowed("m"));
        m.insert(Cow::Borrowed("b"), Cow::Borrowed("x\"y\\z\nw"));
        m.insert(Cow::Borrowed("a"), Cow::Borrowed("1"));
        let mut s = String::new();
        series_key(m.iter().map(|(k, v)| (k.as_ref(), v.as_ref())), &mut s);
        assert_eq!(s, r#"m{a="1",b="x\"y\\z\nw"}"#);
    }

    #[test]
    fn floats_read_as_the_api_writes_them() {
        assert_eq!(api_value(18_527_668.0), Value::U64(18_527_668));
        assert_eq!(api_value(9_007_199_254_740_992.0), Value::U64(9_007_199_254_740_992));
        // 2^63, DCGM's int64 blank as a float: Go writes 9223372036854776000.
        assert_eq!(api_value(9_223_372_036_854_775_808.0), Value::U64(9_223_372_036_854_776_000));
        assert_eq!(api_value(18_446_744_073_709_551_616.0), Value::F64(18_446_744_073_709_551_616.0));
        assert_eq!(api_value(-5.0), Value::F64(-5.0));
        assert_eq!(api_value(0.5), Value::F64(0.5));
        assert!(matches!(api_value(f64::NAN), Value::F64(v) if v.is_nan()));
    }

    #[test]
    fn known_metrics() {
        assert!(is_known_metric("node_infiniband_port_data_transmitted_bytes_total"));
        assert!(is_known_metric("node_ethtool_received_prio3_pause"));
        assert!(is_known_metric("node_infiniband_info"));
        assert!(!is_known_metric("node_cpu_seconds_total"));
        assert!(!is_known_metric("node_ethtool_received_broadcast"));
        assert!(!is_known_metric("go_info"));
    }
}

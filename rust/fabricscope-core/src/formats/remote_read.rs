//! Prometheus remote read (`POST /api/v1/read`): the request a client sends and the response a
//! server answers, decoded into the same samples and attributes the JSON API and a `/federate`
//! text dump of the same series give.
//!
//! Both bodies are protocol buffers compressed with snappy's raw block format (no framing), as
//! the Prometheus remote storage documentation specifies
//! (<https://prometheus.io/docs/prometheus/latest/querying/remote_read_api/>). The messages are
//! those of `prompb/remote.proto` and `prompb/types.proto` in github.com/prometheus/prometheus,
//! written out by hand (only the fields read here; unknown fields are skipped by the decoder):
//!
//! ```text
//! ReadRequest  { repeated Query queries = 1; repeated ResponseType accepted_response_types = 2; }
//! Query        { int64 start_timestamp_ms = 1; int64 end_timestamp_ms = 2;
//!                repeated LabelMatcher matchers = 3; }
//! LabelMatcher { Type type = 1 (EQ 0, NEQ 1, RE 2, NRE 3); string name = 2; string value = 3; }
//! ReadResponse { repeated QueryResult results = 1; }
//! QueryResult  { repeated TimeSeries timeseries = 1; }
//! TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; ...; repeated Histogram histograms = 4; }
//! Label        { string name = 1; string value = 2; }
//! Sample       { double value = 1; int64 timestamp = 2; }
//! ```
//!
//! * The response holds the raw stored samples with their own millisecond timestamps, both ends
//!   of `[start, end]` included.
//! * Each series resolves through the text reader as `name{label="value",...}` (the key the JSON
//!   API reader builds too), and each float64 is normalised as the JSON API's text of it would
//!   be, so the rows are identical whichever API pulled them.
//! * Staleness markers (the NaN with bits `0x7ff0000000000002` that Prometheus stores when a
//!   series disappears) are not samples: the query API never returns them, so neither does this.
//! * Hostile input (truncated or corrupt snappy, invalid protobuf, a declared size beyond
//!   `max_decompressed_bytes`) is a bad record naming what was expected, never a panic.

use std::io::Read;

use prost::Message;

use crate::error::{Error, Position, Result};
use crate::formats::BinaryReader;
use crate::formats::prometheus::{Flavor, PrometheusReader};
use crate::formats::prometheus_api::{api_value, series_key};
use crate::read::ReadContext;

const NS_PER_MS: i64 = 1_000_000;
/// Prometheus's staleness marker (`model/value.StaleNaN`).
const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// `prometheus.ReadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadRequest {
    /// Queries, answered in order.
    #[prost(message, repeated, tag = "1")]
    pub queries: Vec<Query>,
    /// Response types the client reads (`0` = SAMPLES).
    #[prost(int32, repeated, tag = "2")]
    pub accepted_response_types: Vec<i32>,
}

/// `prometheus.Query`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Query {
    /// Start, ms since the epoch (inclusive).
    #[prost(int64, tag = "1")]
    pub start_timestamp_ms: i64,
    /// End, ms since the epoch (inclusive).
    #[prost(int64, tag = "2")]
    pub end_timestamp_ms: i64,
    /// Matchers every returned series satisfies.
    #[prost(message, repeated, tag = "3")]
    pub matchers: Vec<LabelMatcher>,
}

/// `prometheus.LabelMatcher`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelMatcher {
    /// 0 `=`, 1 `!=`, 2 `=~`, 3 `!~`.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// Label name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Value or regular expression (RE2, fully anchored by the server).
    #[prost(string, tag = "3")]
    pub value: String,
}

/// `prometheus.ReadResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadResponse {
    /// One result per query.
    #[prost(message, repeated, tag = "1")]
    pub results: Vec<QueryResult>,
}

/// `prometheus.QueryResult`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryResult {
    /// The matching series.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Labels, sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Float samples in time order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<RemoteSample>,
    /// Native histogram samples, kept undecoded: they carry no counters.
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub histograms: Vec<Vec<u8>>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Label name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Label value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RemoteSample {
    /// The stored float64.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// ms since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// A label matcher's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOp {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `=~`
    Regex,
    /// `!~`
    NotRegex,
}

impl MatchOp {
    /// The operator as PromQL writes it (`=`, `!=`, `=~`, `!~`).
    pub fn parse(op: &str) -> Option<MatchOp> {
        match op {
            "=" => Some(MatchOp::Equal),
            "!=" => Some(MatchOp::NotEqual),
            "=~" => Some(MatchOp::Regex),
            "!~" => Some(MatchOp::NotRegex),
            _ => None,
        }
    }

    fn wire(self) -> i32 {
        match self {
            MatchOp::Equal => 0,
            MatchOp::NotEqual => 1,
            MatchOp::Regex => 2,
            MatchOp::NotRegex => 3,
        }
    }
}

/// The body of `POST /api/v1/read` asking for the raw samples of `[start_ms, end_ms]` (both
/// inclusive) of the series all `matchers` select: a snappy-compressed `ReadRequest`.
pub fn encode_request(start_ms: i64, end_ms: i64, matchers: &[(String, MatchOp, String)]) -> Vec<u8> {
    let request = ReadRequest {
        queries: vec![Query {
            start_timestamp_ms: start_ms,
            end_timestamp_ms: end_ms,
            matchers: matchers
                .iter()
                .map(|(name, op, value)| LabelMatcher { r#type: op.wire(), name: name.clone(), value: value.clone() })
                .collect(),
        }],
        // SAMPLES: the one response type every server version answers with one message.
        accepted_response_types: vec![0],
    };
    // Compressing into a buffer sized by max_compress_len cannot fail for an in-memory message.
    snap::raw::Encoder::new().compress_vec(&request.encode_to_vec()).unwrap_or_default()
}

/// Reader of one remote read response (bounded by `max_document_bytes` compressed and
/// `max_document_bytes` decompressed too, as one document in memory).
pub struct RemoteReadReader;

impl BinaryReader for RemoteReadReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = crate::formats::read_bounded(head, rest, ctx, "Prometheus remote read response size")?;
        read_response(&buf, ctx)?;
        Ok(buf.len() as u64)
    }
}

/// Decompress a raw snappy block, refusing a declared size beyond the limit before allocating.
fn decompress(buf: &[u8], ctx: &mut ReadContext<'_>) -> Result<Option<Vec<u8>>> {
    const EXPECTED: &str = "a snappy-compressed (raw block format) Prometheus ReadResponse";
    let declared = match snap::raw::decompress_len(buf) {
        Ok(n) => n as u64,
        Err(e) => {
            ctx.bad_record(Position::default(), &format!("{EXPECTED} ({e})"), buf.get(..16).unwrap_or(buf))?;
            return Ok(None);
        }
    };
    // A snappy element expands at most 64 output bytes from a 3-byte copy: a declared size
    // beyond that ratio is a corrupt header, refused before allocating it.
    if declared > (buf.len() as u64).saturating_mul(22) + 64 {
        let found = format!("a declared size of {declared} bytes from {} compressed bytes", buf.len());
        ctx.bad_record(Position::default(), EXPECTED, found.as_bytes())?;
        return Ok(None);
    }
    // The decoded response is one document held in memory: it is bounded by the document limit
    // (256 MiB by default) as well as the decompression limit (256 GiB, sized for streams).
    let limits = ctx.options().limits;
    let (limit, option) = if limits.max_document_bytes <= limits.max_decompressed_bytes {
        (limits.max_document_bytes, "max_document_bytes")
    } else {
        (limits.max_decompressed_bytes, "max_decompressed_bytes")
    };
    if declared > limit {
        return ctx
            .bad_record_error(Error::LimitExceeded {
                path: ctx.path.to_path_buf(),
                position: Position::default(),
                what: "decompressed size of a remote read response",
                limit,
                option,
            })
            .map(|()| None);
    }
    match snap::raw::Decoder::new().decompress_vec(buf) {
        Ok(out) => Ok(Some(out)),
        Err(e) => {
            // snap names the fault (a literal or copy past the end, a bad offset), not its position.
            ctx.bad_record(Position::default(), &format!("{EXPECTED} ({e})"), buf.get(..16).unwrap_or(buf))?;
            Ok(None)
        }
    }
}

/// Decode a (compressed) `ReadResponse` into samples and attributes.
pub fn read_response(buf: &[u8], ctx: &mut ReadContext<'_>) -> Result<()> {
    let Some(raw) = decompress(buf, ctx)? else { return Ok(()) };
    let response = match ReadResponse::decode(raw.as_slice()) {
        Ok(r) => r,
        Err(e) => {
            let found = raw.get(..16).unwrap_or(&raw);
            return ctx.bad_record(
                Position::default(),
                &format!("a protobuf Prometheus ReadResponse {{results: [{{timeseries: [...]}}]}} ({e})"),
                found,
            );
        }
    };
    let mut reader = PrometheusReader::new(Flavor::Prometheus);
    let mut key = String::new();
    let mut labels: Vec<(&str, &str)> = Vec::new();
    let mut histograms = false;
    for (index, series) in response.results.iter().flat_map(|r| r.timeseries.iter()).enumerate() {
        if ctx.cancelled() {
            break;
        }
        histograms |= !series.histograms.is_empty();
        labels.clear();
        labels.extend(series.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())));
        // Servers send labels sorted by name; sort anyway so the key never depends on the sender.
        if !labels.is_sorted_by_key(|&(name, _)| name) {
            labels.sort_unstable_by_key(|&(name, _)| name);
        }
        series_key(labels.iter().copied(), &mut key);
        // No byte offsets survive the decode: the series' index in the response locates it.
        let pos = Position { line: None, byte_offset: index as u64 };
        // Timestamps beyond the ns range (year 2262) are bad records, reported before the rows.
        for s in series.samples.iter().filter(|s| s.timestamp.checked_mul(NS_PER_MS).is_none()) {
            ctx.bad_record(pos, "a timestamp in ms since the epoch", s.timestamp.to_string().as_bytes())?;
        }
        let values = series.samples.iter().filter(|s| s.value.to_bits() != STALE_NAN_BITS).filter_map(|s| {
            let time_ns = s.timestamp.checked_mul(NS_PER_MS)?;
            Some((api_value(s.value), time_ns))
        });
        reader.push_series_values(key.as_bytes(), values, pos, ctx)?;
    }
    if histograms {
        ctx.warn("native histogram samples carry no counters: skipped");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips() {
        let body = encode_request(
            1_796_400_000_000,
            1_796_400_899_999,
            &[("__name__".into(), MatchOp::Regex, "a|b".into()), ("job".into(), MatchOp::Equal, "node".into())],
        );
        let raw = snap::raw::Decoder::new().decompress_vec(&body).expect("the request is valid snappy");
        let req = ReadRequest::decode(raw.as_slice()).expect("the request is a ReadRequest");
        assert_eq!(req.accepted_response_types, vec![0]);
        let q = &req.queries[0];
        assert_eq!((q.start_timestamp_ms, q.end_timestamp_ms), (1_796_400_000_000, 1_796_400_899_999));
        assert_eq!(q.matchers[0], LabelMatcher { r#type: 2, name: "__name__".into(), value: "a|b".into() });
        assert_eq!(q.matchers[1].r#type, 0);
    }

    #[test]
    fn operators() {
        assert_eq!(MatchOp::parse("!~").map(MatchOp::wire), Some(3));
        assert_eq!(MatchOp::parse("=="), None);
    }
}

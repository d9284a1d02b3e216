//! Prometheus remote read reader: a real `/api/v1/read` response of a Prometheus 2.42 server
//! decodes into exactly the rows the JSON API reader gives for the same series; hostile bodies
//! are typed errors, never panics.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{Output, Row, V, fixture, read_with, temp_file};
use fabricscope_core::formats::remote_read::{Label, QueryResult, ReadResponse, RemoteSample, TimeSeries};
use fabricscope_core::{Error, Format, Limits, ReadOptions};
use proptest::prelude::*;
use prost::Message;

fn opts(strict: bool) -> ReadOptions {
    ReadOptions { format: Some(Format::PrometheusRemoteRead), strict, ..ReadOptions::default() }
}

fn read_body(body: &[u8], o: &ReadOptions) -> fabricscope_core::Result<Output> {
    read_with(&[temp_file("read-response.bin", body)], o)
}

fn without_source(rows: &[Row]) -> Vec<Row> {
    let mut rows: Vec<Row> = rows.iter().map(|r| Row { source: String::new(), ..r.clone() }).collect();
    rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    rows
}

fn compress(msg: &ReadResponse) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(&msg.encode_to_vec()).unwrap()
}

fn series(labels: &[(&str, &str)], samples: &[(f64, i64)]) -> TimeSeries {
    TimeSeries {
        labels: labels.iter().map(|(n, v)| Label { name: (*n).into(), value: (*v).into() }).collect(),
        samples: samples.iter().map(|&(value, timestamp)| RemoteSample { value, timestamp }).collect(),
        histograms: vec![],
    }
}

#[test]
fn real_response_gives_the_rows_of_the_json_api() {
    let read = read_with(&[fixture("prometheus-api/read-response.bin")], &opts(true)).unwrap();
    let json = read_with(&[fixture("prometheus-api/matrix.json")], &ReadOptions::default()).unwrap();
    assert_eq!(read.reports[0].format, Some(Format::PrometheusRemoteRead));
    assert_eq!(read.rows.len(), 7);
    assert_eq!(without_source(&read.rows), without_source(&json.rows));
    let mut a = read.attrs.clone();
    let mut b = json.attrs.clone();
    a.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
    b.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
    assert_eq!(a, b);
    assert!(read.rows.iter().all(|r| r.source == "prometheus-remote-read"));
    // Exact integers and millisecond timestamps; the DCGM blank (2^63 as float64) is no value.
    let tx = read.counter("port_xmit_data_bytes");
    assert_eq!(
        tx.iter().map(|r| (r.time_ns, r.value.clone())).collect::<Vec<_>>(),
        vec![(1_796_400_000_032_000_000, V::U(18_527_668)), (1_796_400_015_024_000_000, V::U(9_007_199_254_740_992))]
    );
    let nvlink: Vec<_> = read.rows.iter().filter(|r| r.device == "gpu0").map(|r| r.value.clone()).collect();
    assert_eq!(nvlink, vec![V::U(123_456_789), V::Null]);
}

#[test]
fn staleness_markers_are_not_samples_and_labels_sort() {
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let msg = ReadResponse {
        results: vec![QueryResult {
            timeseries: vec![series(
                // Unsorted on purpose: the key must not depend on the sender's order.
                &[
                    ("port", "1"),
                    ("__name__", "node_infiniband_port_data_received_bytes_total"),
                    ("device", "mlx5_1"),
                    ("instance", "gpu07:9100"),
                ],
                &[
                    (10.0, 1_796_400_000_000),
                    (stale, 1_796_400_015_000),
                    (f64::NAN, 1_796_400_030_000),
                    (20.0, 1_796_400_045_000),
                ],
            )],
        }],
    };
    let out = read_body(&compress(&msg), &opts(true)).unwrap();
    let rx = out.counter("port_rcv_data_bytes");
    assert_eq!(rx.len(), 3, "{:?}", out.rows);
    assert_eq!((rx[0].host.as_str(), rx[0].device.as_str(), rx[0].port), ("gpu07", "mlx5_1", Some(1)));
    assert_eq!(rx[0].value, V::U(10));
    assert!(matches!(rx[1].value, V::F(v) if v.is_nan()));
}

fn assert_format_error(body: &[u8], expect: &str) {
    let err = read_body(body, &opts(true)).err().unwrap();
    assert!(matches!(err, Error::Format { .. } | Error::LimitExceeded { .. }), "{err}");
    assert!(err.to_string().contains(expect), "{expect:?} not in {err}");
    // Lenient: the one bad body is counted, nothing read, no panic.
    let out = read_body(body, &opts(false)).unwrap();
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (0, 1), "{body:?}");
}

#[test]
fn hostile_bodies_are_typed_errors() {
    let real = std::fs::read(fixture("prometheus-api/read-response.bin")).unwrap();
    // Truncated snappy: the block ends before its declared length.
    assert_format_error(&real[..real.len() / 2], "snappy-compressed");
    // Not snappy at all (JSON sent where protobuf was expected).
    assert_format_error(br#"{"status":"error","errorType":"bad_data","error":"x"}"#, "snappy-compressed");
    // A declared decompressed size of 4 GiB - 1 from 6 bytes: refused before allocating.
    assert_format_error(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0x00], "a declared size of 4294967295 bytes");
    // Valid snappy around bytes that are no ReadResponse: a field length past the end.
    let bad = snap::raw::Encoder::new().compress_vec(&[0x0a, 0xff, 0xff, 0xff, 0x7f, 0x01]).unwrap();
    assert_format_error(&bad, "protobuf Prometheus ReadResponse");
    // A wire type the field cannot have.
    let bad = snap::raw::Encoder::new().compress_vec(&[0x0b, 0x01]).unwrap();
    assert_format_error(&bad, "protobuf Prometheus ReadResponse");
    // A label that is not UTF-8.
    let mut raw = ReadResponse { results: vec![QueryResult { timeseries: vec![series(&[("__name__", "ab")], &[])] }] }
        .encode_to_vec();
    let at = raw.iter().rposition(|&b| b == b'b').unwrap();
    raw[at] = 0xff;
    assert_format_error(&snap::raw::Encoder::new().compress_vec(&raw).unwrap(), "protobuf Prometheus ReadResponse");
}

#[test]
fn decompressed_size_limit_is_an_option() {
    let real = std::fs::read(fixture("prometheus-api/read-response.bin")).unwrap();
    let tight = ReadOptions { limits: Limits { max_decompressed_bytes: 100, ..Limits::default() }, ..opts(true) };
    let err = read_body(&real, &tight).err().unwrap();
    assert!(matches!(err, Error::LimitExceeded { option: "max_decompressed_bytes", .. }), "{err}");
}

#[test]
fn a_response_decodes_to_at_most_the_document_limit() {
    // The decoded response is one document in memory: bounded by max_document_bytes (256 MiB),
    // not only by max_decompressed_bytes (256 GiB, which let a 256 MiB body declare ~5.6 GiB).
    let real = std::fs::read(fixture("prometheus-api/read-response.bin")).unwrap();
    let declared = snap::raw::decompress_len(&real).unwrap() as u64;
    let body = real.len() as u64;
    assert!(declared > body, "the fixture must expand: {declared} <= {body}");
    let tight = ReadOptions { limits: Limits { max_document_bytes: body, ..Limits::default() }, ..opts(true) };
    let err = read_body(&real, &tight).err().unwrap();
    assert!(matches!(err, Error::LimitExceeded { option: "max_document_bytes", limit, .. } if limit == body), "{err}");
    let roomy = ReadOptions { limits: Limits { max_document_bytes: declared, ..Limits::default() }, ..opts(true) };
    assert!(read_body(&real, &roomy).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..512), wrap in any::<bool>()) {
        let body = if wrap { snap::raw::Encoder::new().compress_vec(&raw).unwrap() } else { raw };
        let _ = read_body(&body, &opts(false));
        let _ = read_body(&body, &opts(true));
    }
}

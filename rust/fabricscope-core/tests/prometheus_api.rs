//! Prometheus HTTP API reader: real responses of a Prometheus 2.42 server decode into exactly the
//! rows the text reader gives for the same series written as a `/federate` exposition.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{Output, Row, V, fixture, read_with, temp_file};
use fabricscope_core::{Error, Format, ReadOptions};

fn read_api(name: &str, o: &ReadOptions) -> Output {
    read_with(&[fixture(&format!("prometheus-api/{name}"))], o).unwrap()
}

/// The same series as `matrix.json`, as the server's `/federate` would write them (values as
/// the server stores them: float64).
const FEDERATE: &str = r#"# TYPE DCGM_FI_PROF_NVLINK_TX_BYTES untyped
DCGM_FI_PROF_NVLINK_TX_BYTES{Hostname="gpu01",UUID="GPU-8f6c1c3e-0000-0000-0000-000000000000",gpu="0",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"} 1.23456789e+08 1796400001000
DCGM_FI_PROF_NVLINK_TX_BYTES{Hostname="gpu01",UUID="GPU-8f6c1c3e-0000-0000-0000-000000000000",gpu="0",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"} 9.223372036854776e+18 1796400016000
# TYPE node_ethtool_received_prio3_pause untyped
node_ethtool_received_prio3_pause{device="eth2",instance="roce01:9100",job="node"} 1234 1796400000500
node_ethtool_received_prio3_pause{device="eth2",instance="roce01:9100",job="node"} 2345 1796400015500
# TYPE node_infiniband_info untyped
node_infiniband_info{board_id="MT_0000000838",device="mlx5_0",firmware_version="28.39.1002",hca_type="MT4129",instance="gpu01:9100",job="node"} 1 1796400000000
# TYPE node_infiniband_port_data_transmitted_bytes_total untyped
node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",instance="gpu01:9100",job="node",port="1"} 1.8527668e+07 1796400000032
node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",instance="gpu01:9100",job="node",port="1"} 9.007199254740992e+15 1796400015024
# TYPE node_infiniband_port_errors_received_total untyped
node_infiniband_port_errors_received_total{device="mlx5_0",instance="gpu01:9100",job="node",port="1",weird="a\"b\\c"} 0 1796400000032
"#;

fn without_source(rows: &[Row]) -> Vec<Row> {
    rows.iter().map(|r| Row { source: String::new(), ..r.clone() }).collect()
}

#[test]
fn matrix_response_gives_the_rows_of_the_same_exposition() {
    let api = read_api("matrix.json", &ReadOptions::default());
    let text = read_with(&[temp_file("federate.prom", FEDERATE.as_bytes())], &ReadOptions::default()).unwrap();
    assert_eq!(api.reports[0].format, Some(Format::PrometheusApi));
    assert_eq!(api.rows.len(), 7);
    assert_eq!(without_source(&api.rows), without_source(&text.rows));
    assert_eq!(api.attrs, text.attrs);
    assert!(api.rows.iter().all(|r| r.source == "prometheus-api"));

    // Exact integers, exact millisecond timestamps, canonical names and identity.
    let tx = api.counter("port_xmit_data_bytes");
    assert_eq!(
        tx.iter().map(|r| (r.time_ns, r.value.clone())).collect::<Vec<_>>(),
        vec![(1_796_400_000_032_000_000, V::U(18_527_668)), (1_796_400_015_024_000_000, V::U(9_007_199_254_740_992)),]
    );
    assert_eq!((tx[0].host.as_str(), tx[0].device.as_str(), tx[0].port), ("gpu01", "mlx5_0", Some(1)));
    let pause = api.counter("rx_pause_frames");
    assert_eq!(pause.iter().map(|r| (r.priority, r.host.as_str())).collect::<Vec<_>>(), [(Some(3), "roce01"); 2]);
    // The DCGM int64 blank the server returns as "9223372036854776000" is no value.
    let nvlink: Vec<_> = api.rows.iter().filter(|r| r.device == "gpu0").collect();
    assert_eq!(nvlink.iter().map(|r| r.value.clone()).collect::<Vec<_>>(), vec![V::U(123_456_789), V::Null]);
    assert!(api.attrs.iter().any(|a| a.key == "firmware_version" && a.value == "28.39.1002"));
    assert!(api.attrs.iter().any(|a| a.key == "UUID" && a.host == "gpu01" && a.device == "gpu0"));
    // A label value with a quote and a backslash survives into the counter name.
    assert!(api.rows.iter().any(|r| r.counter == r#"port_rcv_errors{weird="a\"b\\c"}"#));
}

#[test]
fn vector_and_query_range_responses_are_read() {
    let v = read_api("vector.json", &ReadOptions::default());
    assert_eq!(v.rows.len(), 1);
    assert_eq!((v.rows[0].time_ns, v.rows[0].value.clone()), (1_796_400_030_000_000_000, V::U(2345)));
    let r = read_api("range.json", &ReadOptions::default());
    assert_eq!(
        r.rows.iter().map(|r| (r.time_ns, r.value.clone())).collect::<Vec<_>>(),
        vec![(1_796_400_015_000_000_000, V::U(18_527_668)), (1_796_400_030_000_000_000, V::U(9_007_199_254_740_992))]
    );
}

#[test]
fn an_error_response_is_a_format_error_naming_the_server_message() {
    let err = read_with(&[fixture("prometheus-api/error.json")], &ReadOptions::default()).err().unwrap();
    let Error::Format { expected, found, .. } = &err else { panic!("{err}") };
    assert!(expected.contains("\"status\":\"success\""), "{expected}");
    assert!(found.contains("bad_data") && found.contains("invalid parameter"), "{found}");
    // Lenient: counted, nothing read.
    let lenient = read_api("error.json", &ReadOptions { strict: false, ..ReadOptions::default() });
    assert_eq!((lenient.rows.len(), lenient.reports[0].bad_records), (0, 1));
}

#[test]
fn a_scalar_result_holds_no_series() {
    let s = read_api("scalar.json", &ReadOptions::default());
    assert!(s.rows.is_empty());
    assert!(s.reports[0].warnings.iter().any(|w| w.contains("`scalar` result")), "{:?}", s.reports[0].warnings);
}

#[test]
fn malformed_documents_are_errors_not_panics() {
    let strict = ReadOptions { format: Some(Format::PrometheusApi), ..ReadOptions::default() };
    for (doc, expect) in [
        (&br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}}"#[..], "series of"),
        (&br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"m"},"values":[[1,"x"]]}]}}"#[..], "a sample value"),
        (&br#"{"status":"success","data":{"resultType":"matrix""#[..], "Prometheus API response"),
        (&b"{\"status\":\"success\"}"[..], "Prometheus API response"),
        (&b"[]"[..], "Prometheus API response"),
    ] {
        let err = read_with(&[temp_file("resp.json", doc)], &strict).err().unwrap();
        assert!(matches!(err, Error::Format { .. }), "{err}");
        assert!(err.to_string().contains(expect), "{err}");
    }
}

//! Prometheus text 0.0.4 / OpenMetrics 1.0 reader: real exporter fixtures, constructed
//! expositions, hostile inputs and a round-trip property.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use std::fmt::Write as _;
use std::path::PathBuf;

use common::{Attr, Output, Row, V, fixture, read_with, temp_file};
use fabricscope_core::{Error, Format, ReadOptions, TimeSource};
use proptest::prelude::*;

/// 2025-12-02T14:47:02Z, the time given as argument.
const T: i64 = 1_764_686_822_000_000_000;

fn opts() -> ReadOptions {
    ReadOptions { host: Some("ibnode01".into()), time_ns: Some(T), ..ReadOptions::default() }
}

fn lenient() -> ReadOptions {
    ReadOptions { strict: false, ..opts() }
}

fn read_fixture(name: &str, o: &ReadOptions) -> Output {
    read_with(&[fixture(&format!("prometheus/{name}"))], o).unwrap()
}

fn read_text(name: &str, text: &[u8], o: &ReadOptions) -> Output {
    read_with(&[temp_file(name, text)], o).unwrap()
}

#[allow(clippy::too_many_arguments)]
fn row(
    host: &str,
    device: &str,
    port: Option<u16>,
    prio: Option<u8>,
    counter: &str,
    value: V,
    scale: u32,
    is_counter: bool,
) -> Row {
    Row {
        time_ns: T,
        host: host.into(),
        device: device.into(),
        port,
        priority: prio,
        counter: counter.into(),
        value,
        scale,
        is_counter,
        source: "prometheus".into(),
    }
}

fn attr(time_ns: i64, host: &str, device: &str, port: Option<u16>, key: &str, value: &str) -> Attr {
    Attr { time_ns, host: host.into(), device: device.into(), port, key: key.into(), value: value.into() }
}

fn sample_lines(path: &PathBuf) -> usize {
    std::fs::read_to_string(path).unwrap().lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).count()
}

// --- node_exporter ------------------------------------------------------------------------------

#[test]
fn node_exporter_infiniband_maps_every_sample() {
    let out = read_fixture("e2e-output.infiniband.prom", &opts());
    let r = &out.reports[0];
    assert_eq!((r.bad_records, r.format), (0, Some(Format::Prometheus)));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.time_source, TimeSource::Argument);
    // Every sample line is a row except the two `node_infiniband_info` lines.
    let path = fixture("prometheus/e2e-output.infiniband.prom");
    assert_eq!(out.rows.len(), sample_lines(&path) - 2);
    assert_eq!(r.rows, out.rows.len() as u64);

    // Saturated 32-bit PortXmitWait, written as a float by node_exporter, read exactly.
    assert_eq!(
        out.counter("port_xmit_wait_ticks"),
        vec![&row("ibnode01", "mlx4_0", Some(1), None, "port_xmit_wait_ticks", V::U(4_294_967_295), 1, true)]
    );
    // Data counters: node_exporter already multiplied by 4; the scale records it. `legacy_*`
    // (64-bit counters_ext) are distinct `ext_*` series.
    let data = |c: &str| out.counter(c).iter().map(|r| (r.port, r.value.clone(), r.scale)).collect::<Vec<_>>();
    assert_eq!(data("port_xmit_data_bytes"), vec![(Some(1), V::U(14_933_760), 4), (Some(2), V::U(0), 4)]);
    assert_eq!(data("ext_port_xmit_data_bytes"), vec![(Some(1), V::U(14_933_760), 4), (Some(2), V::U(14_933_760), 4)]);
    assert_eq!(data("ext_port_rcv_packets"), vec![(Some(1), V::U(0), 1), (Some(2), V::U(0), 1)]);
    assert_eq!(out.counter("port_rcv_data_bytes")[0].value, V::U(18_527_668));
    assert_eq!(data("port_rcv_packets"), vec![(Some(1), V::U(6_825_908_347), 1)]);
    assert_eq!(
        out.counter("link_rate_bytes_per_s")[0],
        &row("ibnode01", "i40iw0", Some(1), None, "link_rate_bytes_per_s", V::U(1_250_000_000), 1, false)
    );
    let states: Vec<_> =
        out.counter("port_state_id").iter().map(|r| (r.device.as_str(), r.port, r.value.clone())).collect();
    assert_eq!(states, vec![("i40iw0", Some(1), V::U(4)), ("mlx4_0", Some(1), V::U(4)), ("mlx4_0", Some(2), V::U(4))]);
    assert_eq!(out.counter("port_phys_state_id").len(), 3);
    // `port_discards_received_total` is procfs's counters/port_rcv_discards, not the relay errors
    assert_eq!(out.counter("port_rcv_discards")[0].value, V::U(0));
    assert!(out.counter("port_rcv_switch_relay_errors").is_empty());
    assert_eq!(out.counter("port_xmit_discards")[0].value, V::U(5));
    assert!(out.rows.iter().all(|r| !r.counter.contains("info") && r.source == "prometheus"));

    // `node_infiniband_info` becomes attributes of the device, no sample.
    assert_eq!(
        out.attrs,
        vec![
            attr(T, "ibnode01", "i40iw0", None, "board_id", "I40IW Board ID"),
            attr(T, "ibnode01", "i40iw0", None, "firmware_version", "0.2"),
            attr(T, "ibnode01", "i40iw0", None, "hca_type", "I40IW"),
            attr(T, "ibnode01", "mlx4_0", None, "board_id", "SM_1141000001000"),
            attr(T, "ibnode01", "mlx4_0", None, "firmware_version", "2.31.5050"),
            attr(T, "ibnode01", "mlx4_0", None, "hca_type", "MT4099"),
        ]
    );
    assert_eq!(r.attribute_rows, 6);
}

#[test]
fn node_exporter_ethtool_names_are_mapped_back_or_kept() {
    let out = read_fixture("ethtool_linux_test.expected.prom", &opts());
    assert_eq!(out.reports[0].bad_records, 0);
    assert_eq!(
        out.counter("netdev_rx_packets"),
        vec![&row("ibnode01", "eth0", None, None, "netdev_rx_packets", V::U(1_260_062), 1, true)]
    );
    assert_eq!(out.counter("netdev_tx_packets")[0].value, V::U(961_500));
    // Unknown ethtool stats keep their metric name; untyped, so a counter only when `_total`.
    assert_eq!(
        out.counter("node_ethtool_received_broadcast"),
        vec![&row("ibnode01", "eth0", None, None, "node_ethtool_received_broadcast", V::U(5792), 1, false)]
    );
    assert!(out.counter("node_ethtool_received_errors_total")[0].is_counter);
    assert!(!out.counter("node_ethtool_align_errors")[0].is_counter);
    // Labels other than identity/metadata stay in the counter name: five distinct series.
    let speeds: Vec<_> = out
        .rows
        .iter()
        .filter(|r| r.counter.starts_with("node_network_advertised_speed_bytes"))
        .map(|r| (r.counter.as_str(), r.value.clone()))
        .collect();
    assert_eq!(
        speeds,
        vec![
            (r#"node_network_advertised_speed_bytes{duplex="full",mode="1000baseT"}"#, V::U(125_000_000)),
            (r#"node_network_advertised_speed_bytes{duplex="full",mode="100baseT"}"#, V::U(12_500_000)),
            (r#"node_network_advertised_speed_bytes{duplex="full",mode="10baseT"}"#, V::U(1_250_000)),
            (r#"node_network_advertised_speed_bytes{duplex="half",mode="100baseT"}"#, V::U(12_500_000)),
            (r#"node_network_advertised_speed_bytes{duplex="half",mode="10baseT"}"#, V::U(1_250_000)),
        ]
    );
    // Info metrics: attributes (the empty `expansion_rom_version` is no label), no rows.
    assert_eq!(
        out.attrs,
        vec![
            attr(T, "ibnode01", "eth0", None, "bus_info", "0000:00:1f.6"),
            attr(T, "ibnode01", "eth0", None, "driver", "e1000e"),
            attr(T, "ibnode01", "eth0", None, "firmware_version", "0.5-4"),
            attr(T, "ibnode01", "eth0", None, "version", "5.11.0-22-generic"),
            attr(T, "ibnode01", "eth0", None, "type", "MII"),
            attr(T, "ibnode01", "eth0", None, "type", "TP"),
        ]
    );
    assert!(out.rows.iter().all(|r| !r.counter.ends_with("_info") && !r.counter.contains("_info{")));
    let path = fixture("prometheus/ethtool_linux_test.expected.prom");
    assert_eq!(out.rows.len(), sample_lines(&path) - 3);
}

#[test]
fn node_ethtool_per_priority_names_round_trip() {
    let text = b"# TYPE node_ethtool_received_prio3_pause untyped
node_ethtool_received_prio3_pause{device=\"ens1f0np0\"} 42
node_ethtool_transmitted_prio0_pause_duration{device=\"ens1f0np0\"} 1000
node_ethtool_prio5_received_octets{device=\"ens1f0np0\"} 123456789
node_ethtool_received_global_pause{device=\"ens1f0np0\"} 7
node_ethtool_received_bytes_phy{device=\"ens1f0np0\"} 9007199254740993
node_ethtool_received_bytes_total{device=\"ens1f0np0\"} 5
node_ethtool_received_prio3_unknown_thing{device=\"ens1f0np0\"} 1
";
    let out = read_text("ethtool.prom", text, &opts());
    let got: Vec<_> =
        out.rows.iter().map(|r| (r.counter.as_str(), r.priority, r.value.clone(), r.is_counter)).collect();
    assert_eq!(
        got,
        vec![
            ("rx_pause_frames", Some(3), V::U(42), true),
            ("tx_pause_duration_us", Some(0), V::U(1000), true),
            ("prio_rx_bytes", Some(5), V::U(123_456_789), true),
            ("rx_pause_frames", None, V::U(7), true),
            ("phy_rx_bytes", None, V::U(9_007_199_254_740_993), true),
            ("netdev_rx_bytes", None, V::U(5), true),
            ("node_ethtool_received_prio3_unknown_thing", None, V::U(1), false),
        ]
    );
    assert!(out.rows.iter().all(|r| r.device == "ens1f0np0" && r.port.is_none()));
}

// --- infiniband_exporter ----------------------------------------------------------------------

#[test]
fn infiniband_exporter_hca_uses_guids_and_info_attributes() {
    const B96: &str = "0x7cfe9003003b4b96";
    const BDE: &str = "0x7cfe9003003b4bde";
    let o = ReadOptions { host: None, ..opts() };
    let out = read_fixture("hca_test.expected.prom", &o);
    let r = &out.reports[0];
    assert_eq!(r.bad_records, 0);
    assert!(r.warnings.iter().any(|w| w.contains("\"unknown\"")), "{:?}", r.warnings);
    assert_eq!(
        out.counter("port_rcv_data_bytes"),
        vec![
            &row("unknown", B96, Some(1), None, "port_rcv_data_bytes", V::U(148_901_607_811_540), 4, true),
            &row("unknown", BDE, Some(1), None, "port_rcv_data_bytes", V::U(39_009_938_353_200), 4, true),
        ]
    );
    assert_eq!(out.counter("port_xmit_packets")[1].value, V::U(28_825_338_611));
    assert_eq!(out.counter("multicast_rcv_packets")[0].value, V::U(3_732_373_137));
    assert_eq!(
        out.counter("link_rate_bytes_per_s")[0],
        &row("unknown", B96, None, None, "link_rate_bytes_per_s", V::U(12_500_000_000), 1, false)
    );
    assert_eq!(
        out.counter("infiniband_hca_raw_rate_bytes_per_second")[0],
        &row("unknown", B96, None, None, "infiniband_hca_raw_rate_bytes_per_second", V::U(12_890_625_000), 1, false)
    );
    assert_eq!(
        out.counter(r#"infiniband_exporter_collect_errors{collector="hca"}"#),
        vec![&row(
            "unknown",
            "",
            None,
            None,
            r#"infiniband_exporter_collect_errors{collector="hca"}"#,
            V::U(0),
            1,
            false
        )]
    );
    let mut expected = vec![
        attr(T, "unknown", B96, None, "hca", "o0002 HCA-1"),
        attr(T, "unknown", B96, None, "lid", "133"),
        attr(T, "unknown", BDE, None, "hca", "o0001 HCA-1"),
        attr(T, "unknown", BDE, None, "lid", "134"),
    ];
    for (guid, hca, port) in [(B96, "o0002 HCA-1", "11"), (BDE, "o0001 HCA-1", "10")] {
        for (k, v) in [
            ("hca", hca),
            ("uplink", "ib-i1l1s01"),
            ("uplink_guid", "0x7cfe9003009ce5b0"),
            ("uplink_lid", "1719"),
            ("uplink_port", port),
            ("uplink_type", "SW"),
        ] {
            expected.push(attr(T, "unknown", guid, Some(1), k, v));
        }
    }
    assert_eq!(out.attrs, expected);
    let path = fixture("prometheus/hca_test.expected.prom");
    assert_eq!(out.rows.len(), sample_lines(&path) - 4);
}

#[test]
fn infiniband_exporter_switch_ports_and_uplinks() {
    let out = read_fixture("switch_test.expected.prom", &opts());
    assert_eq!(out.reports[0].bad_records, 0);
    assert_eq!(
        out.counter("link_downed_events")[0],
        &row("ibnode01", "0x506b4b03005c2740", Some(1), None, "link_downed_events", V::U(1), 1, true)
    );
    assert_eq!(
        out.counter("port_rcv_data_bytes")[2],
        &row(
            "ibnode01",
            "0x7cfe9003009ce5b0",
            Some(2),
            None,
            "port_rcv_data_bytes",
            V::U(156_315_219_973_512),
            4,
            true
        )
    );
    let rates: Vec<_> = out.counter("link_rate_bytes_per_s").iter().map(|r| (r.port, r.value.clone())).collect();
    assert_eq!(
        rates,
        vec![
            (Some(35), V::U(12_500_000_000)),
            (Some(10), V::U(12_500_000_000)),
            (Some(11), V::U(12_500_000_000)),
            (Some(1), V::U(12_500_000_000)),
        ]
    );
    // switch_info: 2 x (lid, switch); uplink_info: 4 ports x 6 labels.
    assert_eq!(out.attrs.len(), 4 + 24);
    assert_eq!(out.attrs[0], attr(T, "ibnode01", "0x506b4b03005c2740", None, "lid", "2052"));
    assert_eq!(out.attrs[1], attr(T, "ibnode01", "0x506b4b03005c2740", None, "switch", "ib-i4l1s01"));
    assert!(out.attrs.contains(&attr(T, "ibnode01", "0x506b4b03005c2740", Some(35), "uplink", "p0001 HCA-1")));
    assert!(out.attrs.contains(&attr(
        T,
        "ibnode01",
        "0x7cfe9003009ce5b0",
        Some(11),
        "uplink_guid",
        "0x7cfe9003003b4b96"
    )));
    let path = fixture("prometheus/switch_test.expected.prom");
    assert_eq!(out.rows.len(), sample_lines(&path) - 6);
}

#[test]
fn guid_labels_normalise_to_lowercase_0x_16_digits() {
    let text = b"infiniband_switch_port_link_downed_total{guid=\"0x7CFE9003009CE5B0\",port=\"1\"} 1
infiniband_switch_port_link_downed_total{guid=\"7cfe:9003:009c:e5b0\",port=\"2\"} 2
infiniband_switch_port_link_downed_total{guid=\"0x2c903000a1b2\",port=\"3\"} 3
";
    let out = read_text("guids.prom", text, &opts());
    let devs: Vec<_> = out.rows.iter().map(|r| r.device.as_str()).collect();
    assert_eq!(devs, vec!["0x7cfe9003009ce5b0", "0x7cfe9003009ce5b0", "0x00002c903000a1b2"]);
}

// --- DCGM -----------------------------------------------------------------------------------

#[test]
fn dcgm_gpus_sentinels_and_metadata() {
    let o = ReadOptions { host: None, ..opts() };
    let out = read_fixture("dcgm.prom", &o);
    let r = &out.reports[0];
    assert_eq!(r.bad_records, 0);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let got: Vec<_> =
        out.rows.iter().map(|r| (r.counter.as_str(), r.device.as_str(), r.value.clone(), r.is_counter)).collect();
    assert_eq!(
        got,
        vec![
            ("gpu_temperature_celsius", "gpu0", V::U(34), false),
            ("gpu_temperature_celsius", "gpu3", V::U(36), false),
            // DCGM int64 blank: not a temperature.
            ("gpu_memory_temperature_celsius", "gpu0", V::Null, false),
            ("gpu_memory_temperature_celsius", "gpu3", V::U(41), false),
            ("nvlink_bandwidth_total", "gpu0", V::Null, true),
            // exact above 2^53: parsed as an integer, never through f64
            ("nvlink_bandwidth_total", "gpu3", V::U(9_007_199_254_740_993), true),
            // fp64 blank (2^47 printed with %f)
            ("nvlink_tx_bytes_per_s", "gpu0", V::Null, false),
            ("nvlink_tx_bytes_per_s", "gpu3", V::F(21_474_836_480.5), false),
            // the last XID, its code and message are metadata labels
            ("gpu_last_xid", "gpu3", V::U(79), false),
        ]
    );
    assert!(out.rows.iter().all(|r| r.host == "gpu017" && r.port.is_none() && r.priority.is_none()));
    // Metadata labels: attributes once per (host, device, port, key, value).
    let g0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52";
    let g3 = "GPU-1d1c4d2e-7b33-3e54-a1a5-5a0a6f1c9b21";
    let mut expected = Vec::new();
    for (dev, uuid, nv) in [("gpu0", g0, "nvidia0"), ("gpu3", g3, "nvidia3")] {
        expected.push(attr(T, "gpu017", dev, None, "UUID", uuid));
        expected.push(attr(T, "gpu017", dev, None, "device", nv));
        expected.push(attr(T, "gpu017", dev, None, "modelName", "NVIDIA H100 80GB HBM3"));
        expected.push(attr(T, "gpu017", dev, None, "DCGM_FI_DRIVER_VERSION", "550.54.15"));
    }
    // the XID gauge's code and message, once per GPU that reports one
    expected.push(attr(T, "gpu017", "gpu3", None, "err_code", "79"));
    expected.push(attr(T, "gpu017", "gpu3", None, "err_msg", "GPU has fallen off the bus"));
    assert_eq!(out.attrs, expected);
}

// --- federate, OpenMetrics, time -----------------------------------------------------------

#[test]
fn federate_instances_give_hosts_and_ms_timestamps() {
    let out = read_fixture("federate.prom", &opts());
    let r = &out.reports[0];
    assert_eq!(r.bad_records, 0);
    assert_eq!(r.time_source, TimeSource::InFile);
    let got: Vec<_> = out
        .rows
        .iter()
        .map(|r| (r.time_ns, r.host.as_str(), r.device.as_str(), r.port, r.counter.as_str(), r.value.clone(), r.scale))
        .collect();
    assert_eq!(
        got,
        vec![
            (1_764_686_822_123_000_000, "gpu017", "mlx5_0", Some(1), "port_rcv_data_bytes", V::U(12_000_000_004), 4),
            (1_764_686_822_456_000_000, "gpu018", "mlx5_0", Some(1), "port_rcv_data_bytes", V::U(123_456_789_012), 4),
            (1_764_686_822_789_000_000, "fd00::19", "mlx5_0", Some(1), "port_rcv_data_bytes", V::U(7), 4),
            (1_764_686_823_000_000_000, "fe80::1a", "mlx5_0", Some(1), "port_rcv_data_bytes", V::U(8), 4),
            (1_764_686_822_123_000_000, "gpu017", "mlx5_0", Some(1), "port_xmit_wait_ticks", V::U(4_294_967_295), 1),
            // dcgm-exporter's `Hostname`, not the exporter's address: the machine node_exporter names
            (1_764_686_822_500_000_000, "gpu017", "gpu0", None, "gpu_temperature_celsius", V::U(34), 1),
        ]
    );
    let t = 1_764_686_822_123_000_000;
    assert_eq!(out.attrs[0], attr(t, "gpu017", "mlx5_0", Some(1), "job", "node"));
    let jobs = out.attrs.iter().filter(|a| a.key == "job").count();
    assert_eq!(jobs, 5, "one per host and device: {:?}", out.attrs);
    let dcgm: Vec<_> =
        out.attrs.iter().filter(|a| a.device == "gpu0").map(|a| (a.key.as_str(), a.value.as_str())).collect();
    assert_eq!(
        dcgm,
        vec![
            ("DCGM_FI_DRIVER_VERSION", "550.54.15"),
            ("UUID", "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"),
            ("device", "nvidia0"),
            ("instance", "10.1.7.17:9400"),
            ("job", "dcgm"),
            ("modelName", "NVIDIA H100 80GB HBM3"),
        ]
    );
}

#[test]
fn openmetrics_concatenated_scrapes_use_second_timestamps() {
    let out = read_fixture("concatenated.om", &opts());
    let r = &out.reports[0];
    assert_eq!((r.format, r.bad_records), (Some(Format::OpenMetrics), 0));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let got: Vec<_> =
        out.rows.iter().map(|r| (r.time_ns, r.counter.as_str(), r.value.clone(), r.is_counter, r.port)).collect();
    assert_eq!(
        got,
        vec![
            (1_764_686_822_500_000_000, "ib_port_xmit_data_total", V::U(1000), true, Some(1)),
            (1_764_686_822_500_000_000, "ib_port_xmit_data_created", V::U(1_764_600_000), false, Some(1)),
            (1_764_686_832_250_000_000, "ib_port_xmit_data_total", V::U(2000), true, Some(1)),
        ]
    );
    assert!(out.rows.iter().all(|r| r.source == "openmetrics" && r.device == "mlx5_0"));
    assert_eq!(
        out.attrs,
        vec![attr(T, "ibnode01", "", None, "version", "2.1.0"), attr(T, "ibnode01", "", None, "revision", "abc123")]
    );
}

#[test]
fn openmetrics_without_eof_is_read_with_a_warning() {
    // Without `# EOF` or `# UNIT` detection says Prometheus: force the format.
    let om = ReadOptions { format: Some(Format::OpenMetrics), ..opts() };
    let out = read_text("cut.om", b"# TYPE a counter\na_total 1 1764686822\n", &om);
    assert_eq!(out.rows.len(), 1);
    assert_eq!(out.rows[0].time_ns, T);
    assert!(out.reports[0].warnings.iter().any(|w| w.contains("# EOF")), "{:?}", out.reports[0].warnings);
    // Millisecond timestamps in an OpenMetrics file are recognised and warned.
    let out = read_text("ms.om", b"# TYPE a counter\na_total 1 1764686822000\n# EOF\n", &opts());
    assert_eq!(out.rows[0].time_ns, T);
    assert!(out.reports[0].warnings.iter().any(|w| w.contains("milliseconds")));
}

#[test]
fn prometheus_second_timestamps_are_recognised_and_warned() {
    let text = b"m 1 1764686822\nm 2 1764686822.25\nm 3 1764686822000\nm 4 -1000\n";
    let out = read_text("secs.prom", text, &opts());
    let times: Vec<_> = out.rows.iter().map(|r| r.time_ns).collect();
    assert_eq!(times, vec![T, T + 250_000_000, T, -1_000_000_000_000]);
    let w = &out.reports[0].warnings;
    assert_eq!(w.iter().filter(|w| w.contains("seconds")).count(), 1, "{w:?}");
}

#[test]
fn timestamp_directive_lines_date_the_following_samples() {
    let text = b"1764686822
node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4
# 1764686832
node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4
node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4 1764686840000
2026-12-02T14:47:02Z
node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 1
Wed Dec  2 14:47:12 UTC 2026
node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 1
time: 1796222842
node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 1
";
    // No time argument: the directives must be used, not the mtime.
    let o = ReadOptions { time_ns: None, ..opts() };
    let out = read_text("loop.prom", text, &o);
    assert_eq!(out.reports[0].bad_records, 0);
    let s = 1_000_000_000;
    let times: Vec<_> = out.rows.iter().map(|r| r.time_ns).collect();
    assert_eq!(
        times,
        vec![
            1_764_686_822 * s,
            1_764_686_832 * s,
            1_764_686_840 * s,
            1_796_222_822 * s,
            1_796_222_832 * s,
            1_796_222_842 * s
        ]
    );
    assert!(out.reports[0].warnings.is_empty(), "{:?}", out.reports[0].warnings);
}

#[test]
fn host_directive_names_series_without_host_labels() {
    let text =
        b"# host: gpu021\nnode_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4\nm{instance=\"gpu022:9100\"} 1\n";
    let out = read_text("hosts.prom", text, &ReadOptions { host: None, ..opts() });
    let hosts: Vec<_> = out.rows.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(hosts, vec!["gpu021", "gpu022"]);
}

#[test]
fn node_uname_info_names_the_host_of_its_scrape() {
    // Two `curl` scrapes of two machines concatenated: each scrape's series take the nodename of
    // the `node_uname_info` line that ends it; a host label or a host directive still wins.
    let scrape = |host: &str, value: u32| {
        format!(
            "node_network_receive_drop_total{{device=\"eth0\"}} {value}\n\
             m{{instance=\"other:9100\"}} 1\n\
             node_uname_info{{domainname=\"(none)\",machine=\"x86_64\",nodename=\"{host}\",sysname=\"Linux\"}} 1\n"
        )
    };
    let text = format!("{}{}", scrape("gpu001", 5), scrape("gpu002", 7));
    let out = read_text("two.prom", text.as_bytes(), &opts());
    let rows: Vec<_> = out.rows.iter().map(|r| (r.host.as_str(), r.counter.as_str(), r.value.clone())).collect();
    assert_eq!(
        rows,
        vec![
            ("gpu001", "netdev_rx_dropped", V::U(5)),
            ("other", "m", V::U(1)),
            ("gpu002", "netdev_rx_dropped", V::U(7)),
            ("other", "m", V::U(1)),
        ]
    );
    let nodenames: Vec<_> =
        out.attrs.iter().filter(|a| a.key == "nodename").map(|a| (a.host.as_str(), a.value.as_str())).collect();
    assert_eq!(nodenames, vec![("gpu001", "gpu001"), ("gpu002", "gpu002")]);
    assert!(out.reports[0].warnings.is_empty(), "{:?}", out.reports[0].warnings);

    let directed = format!("# host: gpu021\n{text}");
    let out = read_text("directed.prom", directed.as_bytes(), &opts());
    assert_eq!(out.counter("netdev_rx_dropped").iter().map(|r| r.host.as_str()).collect::<Vec<_>>(), ["gpu021"; 2]);
}

#[test]
fn node_uname_info_in_a_later_chunk_names_the_scrapes_after_it() {
    // Many scrapes of one machine, longer than a chunk: lines after a chunk's last uname line
    // belong to the next scrape of the same machine (a `while curl` loop), never to `unknown`.
    let mut text = String::new();
    for i in 0..2000 {
        writeln!(text, "node_network_receive_bytes_total{{device=\"eth0\"}} {i}").unwrap();
        writeln!(text, "node_network_transmit_bytes_total{{device=\"eth0\"}} {i}").unwrap();
        writeln!(text, "node_uname_info{{nodename=\"gpu009\",release=\"6.8.0\"}} 1").unwrap();
    }
    assert!(text.len() > 3 * (64 << 10));
    let o = ReadOptions { host: None, chunk_bytes: 64 << 10, ..opts() };
    let out = read_text("loop.prom", text.as_bytes(), &o);
    assert_eq!(out.rows.len(), 4000);
    assert!(out.rows.iter().all(|r| r.host == "gpu009"), "{:?}", out.rows.iter().find(|r| r.host != "gpu009"));
    assert!(out.reports[0].warnings.is_empty(), "{:?}", out.reports[0].warnings);
}

#[test]
fn kubernetes_target_labels_are_attributes_and_hostname_beats_a_target_address() {
    // Prometheus renames the workload labels dcgm-exporter writes to `exported_*` when the scrape
    // adds the exporter pod's own; `instance` is the pod IP or a service address.
    let text = b"DCGM_FI_DEV_FB_USED{Hostname=\"gpu017\",exported_pod=\"train-0\",exported_namespace=\"ml\",exported_container=\"pytorch\",exported_job=\"x\",gpu=\"0\",instance=\"10.244.1.9:9400\",pod=\"dcgm-exporter-abcde\",app_kubernetes_io_name=\"dcgm-exporter\",helm_sh_chart=\"dcgm-exporter-3.4.2\",kubernetes_node=\"gpu017\"} 100\n\
        DCGM_FI_DEV_FB_USED{Hostname=\"gpu017\",gpu=\"1\",instance=\"10.244.1.9:9400\",pod=\"dcgm-exporter-abcde\"} 200\n\
        DCGM_FI_DEV_FB_USED{Hostname=\"gpu018\",gpu=\"0\",instance=\"gpu018.cluster.local:9400\"} 300\n\
        DCGM_FI_DEV_FB_USED{Hostname=\"gpu019\",gpu=\"0\",instance=\"GPU019:9400\"} 400\n";
    let out = read_text("k8s.prom", text, &opts());
    let rows: Vec<_> = out.rows.iter().map(|r| (r.host.as_str(), r.device.as_str(), r.counter.as_str())).collect();
    assert_eq!(
        rows,
        vec![
            ("gpu017", "gpu0", "DCGM_FI_DEV_FB_USED"),
            ("gpu017", "gpu1", "DCGM_FI_DEV_FB_USED"),
            ("gpu018.cluster.local", "gpu0", "DCGM_FI_DEV_FB_USED"),
            ("GPU019", "gpu0", "DCGM_FI_DEV_FB_USED"),
        ]
    );
    let keys: Vec<_> =
        out.attrs.iter().filter(|a| a.device == "gpu0" && a.host == "gpu017").map(|a| a.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "exported_pod",
            "exported_namespace",
            "exported_container",
            "exported_job",
            "instance",
            "pod",
            "app_kubernetes_io_name",
            "helm_sh_chart",
            "kubernetes_node"
        ]
    );
    let hostname: Vec<_> = out.attrs.iter().filter(|a| a.key == "Hostname").map(|a| a.value.as_str()).collect();
    assert_eq!(hostname, vec!["gpu018", "gpu019"]);
}

#[test]
fn label_sets_repeated_by_every_family_resolve_as_new_ones_would() {
    // One scrape per file: every series once, each host's label sets repeated in every family.
    // Also series with an extra label, a `# TYPE` that changes a name already resolved, and
    // `# host:` directives that change the host of a label set without a host label.
    let text = br#"node_infiniband_port_transmit_wait_total{device="mlx5_0",instance="gpu01:9100",job="node",port="1"} 10 1764686822000
node_infiniband_port_transmit_wait_total{device="mlx5_0",instance="gpu02:9100",job="node",port="1"} 20 1764686822000
my_errors_total{device="mlx5_0",instance="gpu01:9100",job="node",port="1"} 1 1764686823000
my_errors_total{device="mlx5_0",instance="gpu02:9100",job="node",port="1"} 2 1764686823000
my_errors_total{device="mlx5_0",instance="gpu01:9100",job="node",mode="b",port="1"} 3 1764686823000
my_errors_total{device="mlx5_0",instance="gpu01:9100",job="node",mode="b",port="1"} 4 1764686824000
# TYPE my_errors_total gauge
my_errors_total{device="mlx5_0",instance="gpu02:9100",job="node",port="1"} 5 1764686825000
# host: gpu09
my_temp{device="mlx5_0"} 30 1764686826000
# host: gpu10
my_temp{device="mlx5_0"} 31 1764686827000
"#;
    let out = read_text("one-scrape.prom", text, &opts());
    assert_eq!(out.reports[0].bad_records, 0);
    let s = |k: i64| 1_764_686_822_000_000_000 + k * 1_000_000_000;
    let got: Vec<_> = out
        .rows
        .iter()
        .map(|r| (r.time_ns, r.host.as_str(), r.port, r.counter.as_str(), r.value.clone(), r.is_counter))
        .collect();
    assert_eq!(
        got,
        vec![
            (s(0), "gpu01", Some(1), "port_xmit_wait_ticks", V::U(10), true),
            (s(0), "gpu02", Some(1), "port_xmit_wait_ticks", V::U(20), true),
            (s(1), "gpu01", Some(1), "my_errors_total", V::U(1), true),
            (s(1), "gpu02", Some(1), "my_errors_total", V::U(2), true),
            (s(1), "gpu01", Some(1), "my_errors_total{mode=\"b\"}", V::U(3), true),
            (s(2), "gpu01", Some(1), "my_errors_total{mode=\"b\"}", V::U(4), true),
            // The family's new type applies to series of names resolved before it.
            (s(3), "gpu02", Some(1), "my_errors_total", V::U(5), false),
            (s(4), "gpu09", None, "my_temp", V::U(30), false),
            (s(5), "gpu10", None, "my_temp", V::U(31), false),
        ]
    );
    assert!(out.rows.iter().all(|r| r.device == "mlx5_0"));
    // One `job` attribute per port, dated by its first sample, whichever label set carried it.
    assert_eq!(
        out.attrs,
        vec![
            attr(s(0), "gpu01", "mlx5_0", Some(1), "job", "node"),
            attr(s(0), "gpu02", "mlx5_0", Some(1), "job", "node"),
        ]
    );
}

// --- syntax ---------------------------------------------------------------------------------

#[test]
fn label_escapes_blanks_tabs_and_trailing_commas() {
    let text = br#"weird_metric{path="C:\\dir\\x", quote="say \"hi\"",nl="a\nb",brace="}{,= x",} 1
weird_metric	{path="p"}		 2 	
  weird_metric{ path = "p" } 3
weird_metric{} 4
"#;
    let out = read_text("escapes.prom", text, &opts());
    assert_eq!(out.reports[0].bad_records, 0, "{:?}", out.reports[0].errors);
    let got: Vec<_> = out.rows.iter().map(|r| (r.counter.as_str(), r.value.clone())).collect();
    assert_eq!(
        got,
        vec![
            (r#"weird_metric{brace="}{,= x",nl="a\nb",path="C:\\dir\\x",quote="say \"hi\""}"#, V::U(1)),
            (r#"weird_metric{path="p"}"#, V::U(2)),
            (r#"weird_metric{path="p"}"#, V::U(3)),
            ("weird_metric", V::U(4)),
        ]
    );
}

#[test]
fn values_exact_big_negative_and_special() {
    let text = b"v 18446744073709551615
v 18446744073709551616
v +42
v -3.5
v -7
v NaN
v +Inf
v -Inf
v Inf
v 1.5e3
v 0.25
";
    let out = read_text("values.prom", text, &opts());
    let vals: Vec<_> = out.rows.iter().map(|r| r.value.clone()).collect();
    assert_eq!(vals.len(), 11);
    assert_eq!(vals[0], V::U(u64::MAX));
    assert_eq!(vals[1], V::F(18_446_744_073_709_551_616.0));
    assert_eq!(vals[2], V::U(42));
    assert_eq!(vals[3], V::F(-3.5));
    assert_eq!(vals[4], V::F(-7.0));
    assert!(matches!(vals[5], V::F(x) if x.is_nan()));
    assert_eq!(vals[6], V::F(f64::INFINITY));
    assert_eq!(vals[7], V::F(f64::NEG_INFINITY));
    assert_eq!(vals[8], V::F(f64::INFINITY));
    assert_eq!(vals[9], V::U(1500));
    assert_eq!(vals[10], V::F(0.25));
}

#[test]
fn duplicate_series_are_kept_as_two_rows() {
    let text = b"node_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4\nnode_infiniband_state_id{device=\"mlx5_0\",port=\"1\"} 4\n";
    let out = read_text("dup.prom", text, &opts());
    let expected = row("ibnode01", "mlx5_0", Some(1), None, "port_state_id", V::U(4), 1, false);
    assert_eq!(out.rows, vec![expected.clone(), expected]);
}

#[test]
fn port_and_priority_labels() {
    let text = b"x_total{device=\"eth0\",port=\"a\"} 1
x_total{device=\"eth0\",port=\"70000\"} 1
x_total{device=\"eth0\",port=\"2\",priority=\"3\"} 1
x_total{device=\"eth0\",port=\"2\",prio=\"9\"} 1
";
    let out = read_text("ports.prom", text, &opts());
    let got: Vec<_> = out.rows.iter().map(|r| (r.counter.as_str(), r.port, r.priority)).collect();
    assert_eq!(
        got,
        vec![
            (r#"x_total{port="a"}"#, None, None),
            (r#"x_total{port="70000"}"#, None, None),
            ("x_total", Some(2), Some(3)),
            (r#"x_total{prio="9"}"#, Some(2), None),
        ]
    );
    let w = &out.reports[0].warnings;
    assert_eq!(w.iter().filter(|w| w.contains("port")).count(), 1, "{w:?}");
}

#[test]
fn type_lines_decide_counter_or_gauge_for_unknown_metrics() {
    let text = b"# TYPE lat histogram
lat_bucket{le=\"0.1\"} 3
lat_count 5
lat_sum 0.7
# TYPE rpc summary
rpc{quantile=\"0.5\"} 0.2
rpc_count 9
# TYPE temp_total gauge
temp_total 40
# TYPE drops counter
drops 7
plain 1
";
    let out = read_text("types.prom", text, &opts());
    let got: Vec<_> = out.rows.iter().map(|r| (r.counter.as_str(), r.is_counter)).collect();
    assert_eq!(
        got,
        vec![
            (r#"lat_bucket{le="0.1"}"#, true),
            ("lat_count", true),
            ("lat_sum", true),
            (r#"rpc{quantile="0.5"}"#, false),
            ("rpc_count", true),
            ("temp_total", false),
            ("drops", true),
            ("plain", false),
        ]
    );
}

#[test]
fn too_many_labels_is_a_limit_error_naming_max_labels() {
    let text = b"ok 1\nm{a=\"1\",b=\"2\",c=\"3\"} 1\nok 2\n";
    let mut o = opts();
    o.limits.max_labels = 2;
    let err = read_with(&[temp_file("labels.prom", text)], &o).err().unwrap();
    assert!(matches!(err, Error::LimitExceeded { option: "max_labels", limit: 2, .. }), "{err}");
    assert!(err.to_string().contains("line 2"), "{err}");
    o.strict = false;
    let out = read_text("labels.prom", text, &o);
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (2, 1));
}

// --- hostile inputs -------------------------------------------------------------------------

/// Small chunks: the driver zero-fills a chunk-sized buffer per input (slow in debug builds), and
/// small chunks exercise chunk boundaries.
fn forced(format: Format, strict: bool) -> ReadOptions {
    ReadOptions { format: Some(format), strict, chunk_bytes: 64 << 10, ..opts() }
}

#[test]
fn empty_input_has_no_rows() {
    for f in [Format::Prometheus, Format::OpenMetrics] {
        let out = read_text("empty.prom", b"", &forced(f, true));
        assert!(out.rows.is_empty() && out.attrs.is_empty());
        assert_eq!(out.reports[0].bad_records, 0);
        let out = read_text("blank.prom", b"\n\n  \n\t\n", &forced(f, true));
        assert!(out.rows.is_empty());
    }
}

#[test]
fn truncated_last_line_strict_names_file_and_line_lenient_keeps_the_rest() {
    let text = b"a_total{device=\"x\"} 1\nb{device=\"y";
    let p = temp_file("cut-mid-label.prom", text);
    let err = read_with(std::slice::from_ref(&p), &opts()).err().unwrap();
    let msg = err.to_string();
    assert!(matches!(err, Error::Format { .. }), "{msg}");
    assert!(msg.contains("cut-mid-label.prom") && msg.contains("line 2") && msg.contains("byte 22"), "{msg}");
    let out = read_with(&[p], &lenient()).unwrap();
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (1, 1));
    assert_eq!(out.rows[0].value, V::U(1));
}

#[test]
fn binary_garbage_with_format_forced_never_panics() {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(64 << 10).collect();
    bytes.extend_from_slice(b"\nok_total 5\n");
    for f in [Format::Prometheus, Format::OpenMetrics] {
        let p = temp_file("garbage.bin", &bytes);
        let err = read_with(std::slice::from_ref(&p), &forced(f, true)).err().unwrap();
        assert!(matches!(err, Error::Format { .. }) && err.to_string().contains("garbage.bin"), "{err}");
        let out = read_with(&[p], &forced(f, false)).unwrap();
        assert!(out.reports[0].bad_records > 0);
        assert_eq!(out.counter("ok_total").len(), 1);
    }
}

#[test]
fn invalid_utf8_in_names_and_labels_is_a_bad_record() {
    let text = b"good 1\nm\xff 1\nm{a=\"\xff\xfe\"} 1\nm{\xc3=\"x\"} 1\ngood 2\n";
    let err = read_with(&[temp_file("utf8.prom", text)], &opts()).err().unwrap();
    assert!(err.to_string().contains("line 2"), "{err}");
    let out = read_text("utf8.prom", text, &lenient());
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (2, 3));
}

#[test]
fn malformed_lines_are_bad_records() {
    let text = b"good 1
m{a=\"1\"}
m{a=1} 2
m 1 2 3
m abc
{a=\"1\"} 1
1bad 2
m{a=\"1\",a=\"2\"} 3
# TYPE
# TYPE m sometype
m 1 notatime
good 2
";
    let out = read_text("bad.prom", text, &lenient());
    assert_eq!(out.rows.len(), 2);
    assert_eq!(out.reports[0].bad_records, 10, "{:?}", out.reports[0].errors);
}

#[test]
fn a_ten_megabyte_line_hits_max_line_bytes() {
    let mut text = b"good 1\nhuge{a=\"".to_vec();
    text.extend(std::iter::repeat_n(b'x', 10_000_000));
    text.extend_from_slice(b"\"} 1\ngood 2\n");
    let p = temp_file("long.prom", &text);
    let err = read_with(std::slice::from_ref(&p), &opts()).err().unwrap();
    assert!(matches!(err, Error::LimitExceeded { option: "max_line_bytes", .. }), "{err}");
    let out = read_with(&[p], &lenient()).unwrap();
    assert_eq!(out.rows.iter().map(|r| r.value.clone()).collect::<Vec<_>>(), vec![V::U(1), V::U(2)]);
    assert_eq!(out.reports[0].bad_records, 1);
}

// --- properties -----------------------------------------------------------------------------

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn label_value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['a', 'Z', '0', '\\', '"', '\n', '}', '{', '=', ',', ' ', '\t', 'é', '#']),
        1..7,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

#[derive(Debug, Clone)]
struct Series {
    name: String,
    labels: std::collections::BTreeMap<String, String>,
    value: u64,
    ts_ms: Option<i64>,
    spaced: bool,
    trailing_comma: bool,
}

fn series() -> impl Strategy<Value = Series> {
    (
        // A name ending in `:` before a bare integer is `ethtool -S` output, never a sample.
        "[a-z][a-z0-9_:]{0,12}"
            .prop_filter("not an info metric or ethtool-shaped", |n| !n.ends_with("_info") && !n.ends_with(':')),
        prop::collection::btree_map(prop::sample::select(vec!["la", "lb", "l_c", "LD", "_e"]), label_value(), 0..4),
        any::<u64>(),
        prop::option::of(100_000_000_000i64..4_000_000_000_000),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(name, labels, value, ts_ms, spaced, trailing_comma)| Series {
            name: format!("pt_{name}"),
            labels: labels.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            value,
            ts_ms,
            spaced,
            trailing_comma,
        })
}

fn render(s: &Series) -> String {
    let sep = if s.spaced { ", " } else { "," };
    let mut line = s.name.clone();
    if !s.labels.is_empty() || s.trailing_comma {
        let body: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        line.push('{');
        line.push_str(&body.join(sep));
        if s.trailing_comma && !s.labels.is_empty() {
            line.push(',');
        }
        line.push('}');
    }
    line.push_str(if s.spaced { " \t" } else { " " });
    line.push_str(&s.value.to_string());
    if let Some(ts) = s.ts_ms {
        line.push(' ');
        line.push_str(&ts.to_string());
    }
    line
}

fn expected_counter(s: &Series) -> String {
    if s.labels.is_empty() {
        return s.name.clone();
    }
    let body: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    format!("{}{{{}}}", s.name, body.join(","))
}

/// Label layouts of real exporters, `H` and `D` standing for a host and a device value: the
/// label sets of a family differ in those two only.
const LAYOUTS: &[&str] = &[
    r#"{device="D",instance="H",job="node",port="1"}"#,
    r#"{instance="H",device="D"}"#,
    r#"{device="D", instance="H" ,job="node",}"#,
    r#"{Hostname="H",device="D",instance="10.0.0.5:9400"}"#,
    r#"{Hostname="gpu01",device="D",instance="H"}"#,
    r#"{exported_instance="H",instance="pushgateway:9091",device="D",job="x"}"#,
    r#"{host="H",node="gpu01",gpu="D",UUID="GPU-1"}"#,
    r#"{guid="D",instance="H",port="2",priority="3"}"#,
    r#"{device="D",instance="H",port="x"}"#,
    r#"{device="D",instance="H",mode="b",pod="p-1"}"#,
];

fn host_or_device_value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "gpu01:9100",
        "gpu01",
        "gpu02.cluster.local:9100",
        "[::1]:9100",
        "",
        "gpu01:",
        "GPU01:9100",
        "x:abc",
        "mlx5_0",
        "mlx5_1",
        "0",
        "7",
        "0x0002C90300A1B2C3",
        "say \"hi\"",
        "C:\\dir",
        "a}b",
        "é:1",
        "x,y=z",
    ])
    .prop_map(str::to_owned)
}

/// One family after another, each writing every label set of the layout once (one scrape).
fn family_text(layout: &str, metrics: &[&str], values: &[(String, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for m in metrics {
        for (h, d) in values {
            let labels =
                layout.replace("\"H\"", &format!("\"{}\"", escape(h))).replace("\"D\"", &format!("\"{}\"", escape(d)));
            lines.push(format!("{m}{labels} 7 1764686822000"));
        }
    }
    lines
}

proptest! {
    // Each case reads every line again as a file of its own.
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// A label set resolved from the one before it (same labels, other host and device values)
    /// gives what it gives read alone: the same rows, attributes and bad records.
    #[test]
    fn label_sets_of_one_layout_resolve_as_each_alone(
        layout in prop::sample::select(LAYOUTS),
        metrics in prop::sample::subsequence(
            vec!["node_infiniband_port_data_received_bytes_total", "my_errors_total", "DCGM_FI_DEV_GPU_UTIL"], 1..3),
        values in prop::collection::vec((host_or_device_value(), host_or_device_value()), 1..9),
    ) {
        let lines = family_text(layout, &metrics, &values);
        let together = read_text("scrape.prom", (lines.join("\n") + "\n").as_bytes(), &lenient());
        let (mut rows, mut attrs, mut bad) = (Vec::new(), std::collections::BTreeSet::new(), 0);
        for line in &lines {
            let alone = read_text("scrape.prom", (line.clone() + "\n").as_bytes(), &lenient());
            rows.extend(alone.rows);
            attrs.extend(alone.attrs.into_iter().map(|a| (a.host, a.device, a.port, a.key, a.value)));
            bad += alone.reports[0].bad_records;
        }
        prop_assert_eq!(together.rows, rows);
        let together_attrs: std::collections::BTreeSet<_> =
            together.attrs.into_iter().map(|a| (a.host, a.device, a.port, a.key, a.value)).collect();
        prop_assert_eq!(together_attrs, attrs);
        prop_assert_eq!(together.reports[0].bad_records, bad);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn rendered_series_round_trip(all in prop::collection::vec(series(), 1..40)) {
        let text: String = all.iter().map(|s| render(s) + "\n").collect();
        let o = forced(Format::Prometheus, true);
        let out = read_with(&[temp_file("prop.prom", text.as_bytes())], &o).unwrap();
        let expected: Vec<Row> = all
            .iter()
            .map(|s| Row {
                time_ns: s.ts_ms.map_or(T, |ms| ms * 1_000_000),
                host: "ibnode01".into(),
                device: String::new(),
                port: None,
                priority: None,
                counter: expected_counter(s),
                value: V::U(s.value),
                scale: 1,
                is_counter: s.name.ends_with("_total"),
                source: "prometheus".into(),
            })
            .collect();
        prop_assert_eq!(out.rows, expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(
            prop_oneof![
                any::<u8>(),
                prop::sample::select(b"{}\"\\=, \t\n#_:a0.+-eE".to_vec()),
            ],
            0..600,
        )
    ) {
        for f in [Format::Prometheus, Format::OpenMetrics] {
            let p = temp_file("fuzz.prom", &bytes);
            prop_assert!(read_with(std::slice::from_ref(&p), &forced(f, false)).is_ok());
            let _ = read_with(&[p], &forced(f, true));
        }
    }
}

/// Values as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes them, and the edge cases of the
/// exact fast path: every value is what `Value::from_f64(token.parse::<f64>())` gives (plain
/// integers exactly as u64), as before the fast path existed.
#[test]
fn go_g_and_edge_values_read_exactly() {
    let cases: &[(&str, V)] = &[
        ("1.8527668e+07", V::U(18_527_668)),
        ("5e+10", V::U(50_000_000_000)),
        ("3.4359738368e+10", V::U(34_359_738_368)),
        ("0", V::U(0)),
        ("1", V::U(1)),
        ("123456", V::U(123_456)),
        ("1e+06", V::U(1_000_000)),
        ("9.007199254740992e+15", V::U(9_007_199_254_740_992)),
        // Not a double: rounds to 2^53 (ties to even), which is still an exact integer.
        ("9.007199254740993e+15", V::U(9_007_199_254_740_992)),
        ("9.007199254740994e+15", V::F(9_007_199_254_740_994.0)),
        // Plain integers stay exact beyond 2^53.
        ("9007199254740993", V::U(9_007_199_254_740_993)),
        ("1e+21", V::F(1e21)),
        ("1.8446744073709552e+19", V::F(18_446_744_073_709_552_000.0)),
        ("-0", V::U(0)),
        ("4.9e-324", V::F(5e-324)),
        ("-3.5", V::F(-3.5)),
        ("0.25", V::F(0.25)),
        ("0.99999999999999999", V::U(1)),
        ("1.2345678901234567890123e+10", V::F(12_345_678_901.234_568)),
        ("+Inf", V::F(f64::INFINITY)),
        ("-Inf", V::F(f64::NEG_INFINITY)),
    ];
    let mut text = String::new();
    for (i, (tok, _)) in cases.iter().enumerate() {
        let _ = writeln!(text, "edge_value{{case=\"{i}\"}} {tok} 1764686822000");
    }
    text.push_str("edge_value{case=\"nan\"} NaN 1764686822000\n");
    for bad in ["1.5e", "1e+", "12abc", "0x10", "1..5"] {
        let _ = writeln!(text, "edge_value{{case=\"bad\"}} {bad} 1764686822000");
    }
    let out = read_text("edge-values.prom", text.as_bytes(), &lenient());
    let got: Vec<V> = out.rows.iter().map(|r| r.value.clone()).collect();
    let want: Vec<V> = cases.iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(got[..cases.len()], want[..]);
    assert!(matches!(got[cases.len()], V::F(v) if v.is_nan()));
    assert_eq!(got.len(), cases.len() + 1);
    assert_eq!(out.reports[0].bad_records, 5);
}

/// Series are found by their text whatever order scrapes write them in (the reader predicts the
/// next series from the previous scrape's order, and must not trust a wrong prediction).
#[test]
fn series_in_changing_order_keep_their_identity() {
    let scrapes: [&[&str]; 4] = [&["a", "b", "c"], &["c", "a", "b", "d"], &["a", "b", "c", "d"], &["d", "d", "b"]];
    let mut text = String::new();
    let mut want = Vec::new();
    for (k, scrape) in scrapes.iter().enumerate() {
        for (j, name) in scrape.iter().enumerate() {
            let v = 100 * k + j;
            let _ = writeln!(
                text,
                "order_test{{s=\"{name}\",instance=\"h{name}:9100\"}} {v} {}",
                1_764_686_822_000 + k * 1000
            );
            want.push((format!("order_test{{s=\"{name}\"}}"), format!("h{name}"), V::U(v as u64)));
        }
    }
    let out = read_text("order.prom", text.as_bytes(), &opts());
    let got: Vec<_> = out.rows.iter().map(|r| (r.counter.clone(), r.host.clone(), r.value.clone())).collect();
    assert_eq!(got, want);
}

// --- throughput (run: FABRICSCOPE_BENCH_ROUNDS=5 cargo test --profile profiling -p fabricscope-core --test core prometheus::throughput -- --ignored --nocapture) ---

/// Go's `strconv.FormatFloat(v, 'g', -1, 64)`, as prometheus/common `expfmt` writes sample values:
/// shortest round-trip digits (Rust's `{:e}` gives the same digits), exponent form when the
/// decimal exponent is < -4 or >= 6, at least two exponent digits.
fn go_format_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let e = format!("{:e}", v.abs());
    let (mantissa, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if v < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let frac = if digits.len() > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        return format!("{sign}{}{frac}e{}{:02}", &digits[..1], if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let dp = exp + 1;
    if dp <= 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-dp) as usize));
    }
    let dp = dp as usize;
    if dp >= digits.len() {
        return format!("{sign}{digits}{}", "0".repeat(dp - digits.len()));
    }
    format!("{sign}{}.{}", &digits[..dp], &digits[dp..])
}

#[test]
fn go_g_formatting_matches_go() {
    // Outputs of Go's strconv.FormatFloat(v, 'g', -1, 64).
    let cases = [
        (18_527_668.0, "1.8527668e+07"),
        (5e10, "5e+10"),
        (34_359_738_368.0, "3.4359738368e+10"),
        (123_456.0, "123456"),
        (1e6, "1e+06"),
        (0.0001, "0.0001"),
        (0.000_01, "1e-05"),
        (-3.25, "-3.25"),
        (1e21, "1e+21"),
        (1.844_674_407_370_955_2e19, "1.8446744073709552e+19"),
        (5e-324, "5e-324"),
    ];
    for (v, want) in cases {
        assert_eq!(go_format_g(v), want, "{v}");
    }
}

/// Write about 100 MB of node_exporter-style `/federate` text and read it `FABRICSCOPE_BENCH_ROUNDS`
/// times; `go_g` spells values as exporters do (`1.8527668e+07`), else as plain integers.
fn federate_throughput(go_g: bool) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let mut text = String::with_capacity(105 << 20);
    let counters = [
        "node_infiniband_port_data_received_bytes_total",
        "node_infiniband_port_data_transmitted_bytes_total",
        "node_infiniband_port_packets_received_total",
        "node_infiniband_port_transmit_wait_total",
        "node_infiniband_symbol_error_total",
    ];
    let mut i: u64 = 0;
    while text.len() < 100 << 20 {
        let host = i % 512;
        let which = (i / 512 % counters.len() as u64) as usize;
        let c = counters[which];
        let mix = i.wrapping_mul(2_654_435_761);
        // Byte counters 1e7..1e14, packets and waits smaller, error counters mostly 0.
        let v = match which {
            0 | 1 => 4 * (mix % 10u64.pow(6 + (i % 8) as u32)) + 10_000_000,
            2 | 3 => mix % 10u64.pow(5 + (i % 6) as u32),
            _ => u64::from(mix.is_multiple_of(10)) * (mix % 97),
        };
        let value = if go_g { go_format_g(v as f64) } else { v.to_string() };
        let _ = writeln!(
            text,
            "{c}{{device=\"mlx5_{}\",instance=\"gpu{host:03}:9100\",job=\"node\",port=\"1\"}} {value} {}",
            i % 8,
            1_764_686_822_000 + (i / 16_384) * 10_000
        );
        i += 1;
    }
    let p = temp_file(if go_g { "federate-g-100mb.prom" } else { "federate-int-100mb.prom" }, text.as_bytes());
    let rounds: usize = std::env::var("FABRICSCOPE_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let rows = AtomicU64::new(0);
        let sink = |ev: fabricscope_core::Event| {
            if let fabricscope_core::Event::Samples(b) = ev {
                rows.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
            }
            true
        };
        let start = std::time::Instant::now();
        let reports = fabricscope_core::read_paths(std::slice::from_ref(&p), &opts(), &sink).unwrap();
        best = best.min(start.elapsed().as_secs_f64());
        assert_eq!(rows.load(Ordering::Relaxed), i);
        assert_eq!(reports[0].bad_records, 0);
    }
    let mb = text.len() as f64 / 1e6;
    println!(
        "{} values: {mb:.0} MB, {i} lines, best of {rounds}: {best:.3} s = {:.0} MB/s, {:.1} M lines/s",
        if go_g { "Go %g" } else { "integer" },
        mb / best,
        i as f64 / best / 1e6
    );
}

#[test]
#[ignore = "throughput measurement; run explicitly in an optimised profile"]
fn throughput_federate_100mb() {
    federate_throughput(false);
}

#[test]
#[ignore = "throughput measurement; run explicitly in an optimised profile"]
fn throughput_federate_go_g_100mb() {
    federate_throughput(true);
}

/// Every batch of a read, in arrival order, and what each input's report says.
type Batches = (Vec<arrow_array::RecordBatch>, Vec<String>);

/// Every batch and report of reading `paths` in one read, on one thread (so that one reader
/// carries its caches from each input to the next, in order), and of reading each path alone.
fn batches_together_and_alone(paths: &[PathBuf], o: &ReadOptions) -> (Batches, Batches) {
    use fabricscope_core::{Event, read_paths};
    use std::sync::Mutex;
    let read = |paths: &[PathBuf]| {
        let batches = Mutex::new(Vec::new());
        let sink = |ev: Event| {
            let b = match ev {
                Event::Samples(b) | Event::Attributes(b) => b,
                Event::Table { batch, .. } => batch,
            };
            batches.lock().unwrap().push(b);
            true
        };
        let reports = read_paths(paths, o, &sink).unwrap();
        let reports =
            reports.iter().map(|r| format!("{:?}", (r.rows, r.attribute_rows, r.bad_records, &r.warnings, &r.errors)));
        (batches.into_inner().unwrap(), reports.collect::<Vec<_>>())
    };
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let together = one_thread.install(|| read(paths));
    let mut alone = (Vec::new(), Vec::new());
    for p in paths {
        let (b, r) = read(std::slice::from_ref(p));
        alone.0.extend(b);
        alone.1.extend(r);
    }
    (together, alone)
}

/// One scrape of a small fabric: `hosts` hosts of two HCAs and a NIC each, `mode` an extra
/// label on some series, node_exporter's `node_uname_info`, and a DCGM family.
fn scrape(hosts: &[&str], counter_type: &str, ts_ms: i64) -> String {
    let mut s = String::new();
    for (name, t) in [("node_infiniband_port_data_received_bytes_total", "counter"), ("my_queue_depth", counter_type)] {
        let _ = writeln!(s, "# TYPE {name} {t}");
        for h in hosts {
            for d in ["mlx5_0", "mlx5_1"] {
                let _ = writeln!(s, r#"{name}{{device="{d}",instance="{h}:9100",job="node",port="1"}} 42 {ts_ms}"#);
            }
        }
    }
    for h in hosts {
        let _ = writeln!(
            s,
            r#"node_network_info{{device="eth0",instance="{h}:9100",job="node",operstate="up"}} 1 {ts_ms}"#
        );
        let _ = writeln!(s, r#"node_ethtool_rx_bytes{{device="eth0",instance="{h}:9100",mode="a"}} 9 {ts_ms}"#);
        let _ = writeln!(s, r#"DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="{h}",UUID="GPU-{h}"}} 50 {ts_ms}"#);
    }
    s
}

/// A reader that goes on to the next input keeps its label sets: the next input's tables
/// (dictionaries and their order included), attributes, warnings and bad records are what a
/// new reader gives it, whatever the earlier inputs held. The inputs change what they can:
/// hosts come and go, a `# TYPE` line changes a name's type, label sets without a host label
/// take each file's own host, an unparseable `port` is warned about in each input.
#[test]
fn a_reader_carried_to_the_next_input_reads_it_as_a_new_one() {
    let inputs = [
        scrape(&["gpu01", "gpu02", "gpu03"], "counter", 1_764_686_822_000),
        scrape(&["gpu03", "gpu02", "gpu04"], "gauge", 1_764_686_882_000),
        format!(
            "{}{}",
            "# host: node-b\nnode_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",port=\"1\"} 5\n\
             node_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",instance=\"gpu01:9100\",port=\"x\"} 5\n",
            scrape(&["gpu02", "gpu01"], "counter", 1_764_686_942_000)
        ),
        "node_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",port=\"1\"} 6\n\
         node_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",instance=\"gpu01:9100\",port=\"x\"} 6\n"
            .to_string(),
        scrape(&["gpu01", "gpu02", "gpu03", "gpu04"], "counter", 1_764_686_962_000),
    ];
    let paths: Vec<PathBuf> =
        inputs.iter().enumerate().map(|(i, text)| temp_file(&format!("node{i}.prom"), text.as_bytes())).collect();
    for o in [
        ReadOptions { host: None, ..lenient() },
        ReadOptions { host: None, batch_rows: 7, ..lenient() },
        ReadOptions { format: Some(Format::OpenMetrics), ..lenient() },
    ] {
        let (together, alone) = batches_together_and_alone(&paths, &o);
        assert_eq!(together.1, alone.1);
        assert_eq!(together.0.len(), alone.0.len());
        for (t, a) in together.0.iter().zip(&alone.0) {
            assert_eq!(t, a);
        }
        // What the inputs read: rows of every host, the second input's gauge, one port warning
        // in each of the third and fourth inputs.
        let warned = together.1.iter().filter(|r| r.contains("not a port number")).count();
        assert_eq!(warned, 2);
        assert!(together.0.iter().map(arrow_array::RecordBatch::num_rows).sum::<usize>() > 100);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Scrapes of one exporter layout with hostile host and device values, one input each,
    /// sharing some label sets: read in one go by one reader, each input gives what it gives
    /// read alone.
    #[test]
    fn inputs_read_by_one_reader_read_as_each_alone(
        layout in prop::sample::select(LAYOUTS),
        metrics in prop::sample::subsequence(
            vec!["node_infiniband_port_data_received_bytes_total", "my_errors_total", "DCGM_FI_DEV_GPU_UTIL", "node_network_info"], 1..3),
        files in prop::collection::vec(prop::collection::vec((host_or_device_value(), host_or_device_value()), 1..6), 2..5),
    ) {
        let paths: Vec<PathBuf> = files
            .iter()
            .enumerate()
            .map(|(i, values)| {
                let text = family_text(layout, &metrics, values).join("\n") + "\n";
                temp_file(&format!("host{i}.prom"), text.as_bytes())
            })
            .collect();
        let (together, alone) = batches_together_and_alone(&paths, &ReadOptions { host: None, ..lenient() });
        prop_assert_eq!(together.1, alone.1);
        prop_assert_eq!(together.0, alone.0);
    }
}

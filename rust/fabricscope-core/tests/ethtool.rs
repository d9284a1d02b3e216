//! `ethtool -S` reader on real and constructed dumps, with exact expected values.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{Output, Row, V, fixture, read_with, temp_file};
use fabricscope_core::{Error, Format, ReadOptions, TimeSource};

const T0: i64 = 1_764_686_822_000_000_000;
const T1: i64 = 1_764_686_832_000_000_000;

fn opts() -> ReadOptions {
    ReadOptions { time_ns: Some(T0), host: Some("gpu01".into()), ..ReadOptions::default() }
}

fn lenient() -> ReadOptions {
    ReadOptions { strict: false, ..opts() }
}

fn forced(strict: bool) -> ReadOptions {
    ReadOptions { format: Some(Format::Ethtool), strict, ..opts() }
}

fn one<'a>(out: &'a Output, counter: &str) -> &'a Row {
    let rows = out.counter(counter);
    assert_eq!(rows.len(), 1, "{counter}: {rows:?}");
    rows[0]
}

fn read1(path: &std::path::Path, o: &ReadOptions) -> Output {
    read_with(&[path.to_path_buf()], o).unwrap()
}

#[test]
fn node_exporter_fixture_keeps_odd_names_raw_and_maps_known_ones() {
    let out = read1(&fixture("ethtool/node_exporter/eth0/statistics"), &opts());
    assert_eq!(out.reports[0].format, Some(Format::Ethtool));
    assert_eq!(out.rows.len(), 16);
    assert_eq!(out.reports[0].rows, 16);
    assert_eq!(out.reports[0].bad_records, 0);
    assert!(out.attrs.is_empty());
    for r in &out.rows {
        assert_eq!((r.time_ns, r.host.as_str(), r.device.as_str()), (T0, "gpu01", "eth0"));
        assert_eq!((r.port, r.priority, r.scale, r.source.as_str()), (None, None, 1, "ethtool"));
    }
    // `port.rx_dropped` is i40e's port receive-discard count (its PF stats carry the `port.` prefix)
    let dropped = one(&out, "phy_rx_discards");
    assert_eq!((&dropped.value, dropped.is_counter), (&V::U(12028), true));
    assert_eq!(one(&out, "duplicate metric").value, V::U(1));
    assert_eq!(one(&out, "duplicate_metric").value, V::U(2));
    assert_eq!(one(&out, "netdev_tx_packets").value, V::U(961_500));
    assert_eq!(one(&out, "netdev_rx_packets").value, V::U(1_260_062));
    assert_eq!(one(&out, "rx_missed").value, V::U(401));
    // read order is file order
    assert_eq!(out.rows[0].counter, "netdev_tx_packets");
    assert_eq!(out.rows[15].counter, "duplicate_metric");
}

#[test]
fn node_exporter_bond_fixture_is_one_headerless_stat_named_by_its_directory() {
    // `ERROR: 1` alone also reads as a Prometheus sample, so the format is given.
    let out = read1(&fixture("ethtool/node_exporter/bond0/statistics"), &forced(true));
    assert_eq!(out.rows.len(), 1);
    let r = &out.rows[0];
    assert_eq!((r.device.as_str(), r.counter.as_str(), &r.value, r.is_counter), ("bond0", "ERROR", &V::U(1), true));
}

#[test]
fn mlx5_loop_log_gives_two_timestamped_snapshots_with_priorities() {
    let path = fixture("ethtool/constructed/ens1f0np0-ethtool-loop.log");
    let out = read1(&path, &opts());
    let rep = &out.reports[0];
    assert_eq!((rep.rows, rep.bad_records, rep.time_source), (66, 0, TimeSource::InFile));
    assert!(out.rows.iter().all(|r| r.device == "ens1f0np0" && r.host == "gpu01" && r.port.is_none()));
    let times: Vec<i64> = out.rows.iter().map(|r| r.time_ns).collect();
    assert!(times[..33].iter().all(|t| *t == T0) && times[33..].iter().all(|t| *t == T1));

    let pause = out.counter("rx_pause_frames");
    let got: Vec<_> = pause.iter().map(|r| (r.time_ns, r.priority, r.value.clone(), r.is_counter)).collect();
    assert_eq!(got, vec![(T0, Some(3), V::U(1841), true), (T1, Some(3), V::U(2210), true)]);
    let dur = out.counter("rx_pause_duration_us");
    assert_eq!((dur[0].priority, &dur[0].value, &dur[1].value), (Some(3), &V::U(92_050), &V::U(110_500)));
    assert_eq!(out.counter("rx_pause_transitions")[1].value, V::U(1104));
    assert_eq!(out.counter("tx_pause_frames")[0].value, V::U(12));
    assert_eq!(out.counter("prio_rx_ecn_marked_packets")[1].value, V::U(51_877));

    let bytes = out.counter("prio_rx_bytes");
    let got: Vec<_> = bytes.iter().map(|r| (r.time_ns, r.priority, r.value.clone())).collect();
    assert_eq!(
        got,
        vec![
            (T0, Some(0), V::U(1_029_384_756)),
            (T0, Some(3), V::U(37_201_182_930_118)),
            (T1, Some(0), V::U(1_029_390_756)),
            (T1, Some(3), V::U(37_213_470_130_118)),
        ]
    );
    // trailing blank in the kernel's name
    let storm = out.counter("tx_pause_storm_warning_events");
    assert_eq!((storm.len(), &storm[1].value, storm[1].priority), (2, &V::U(1), None));
    assert_eq!(out.counter("tx_pause_storm_error_events")[0].value, V::U(0));
    assert_eq!(out.counter("vport_rdma_rx_unicast_bytes")[0].value, V::U(37_190_011_223_344));
    assert_eq!(out.counter("vport_rdma_tx_unicast_packets")[1].value, V::U(8_804_122_334));
    assert_eq!(out.counter("phy_rx_bytes")[0].value, V::U(37_432_217_029_342));
    assert_eq!(out.counter("phy_rx_discards")[1].value, V::U(58_601_428));
    // 32-bit Q counter wrapping between snapshots: values kept as read
    let oob: Vec<_> = out.counter("rx_out_of_buffer_packets").iter().map(|r| r.value.clone()).collect();
    assert_eq!(oob, vec![V::U(4_294_967_200), V::U(120)]);
    // a percentage gauge, not a counter
    let stall = out.counter("pci_outbound_stalled_rd_percent");
    assert_eq!((&stall[1].value, stall[1].is_counter), (&V::U(41), false));
    assert!(out.counter("pci_outbound_stalled_rd_events")[0].is_counter);
    // unknown names stay raw counters
    let ring = out.counter("rx0_packets");
    assert_eq!((ring.len(), ring[0].is_counter, ring[0].scale, ring[0].priority), (2, true, 1, None));
    assert_eq!(out.counter("module_unplug").len(), 2);
    assert_eq!(out.counter("netdev_rx_bytes")[0].value, V::U(40_062_492_000));
}

#[test]
fn old_prio_naming_maps_to_the_same_counters() {
    let out = read1(&fixture("ethtool/constructed/eth2-old-prio-naming.txt"), &opts());
    assert_eq!(out.rows.len(), 8);
    assert!(out.rows.iter().all(|r| r.device == "eth2"));
    let pick = |c: &str| {
        let r = one(&out, c);
        (r.priority, r.value.clone())
    };
    assert_eq!(pick("rx_pause_frames"), (Some(3), V::U(77)));
    assert_eq!(pick("rx_pause_duration_us"), (Some(3), V::U(3850)));
    assert_eq!(pick("tx_pause_frames"), (Some(3), V::U(5)));
    assert_eq!(pick("prio_rx_bytes"), (Some(0), V::U(640_000)));
    assert_eq!(pick("prio_rx_packets"), (Some(0), V::U(1000)));
    assert_eq!(pick("prio_tx_bytes"), (Some(0), V::U(512_000)));
    assert_eq!(pick("prio_tx_packets"), (Some(0), V::U(800)));
    assert_eq!(pick("netdev_rx_packets"), (None, V::U(1200)));
}

#[test]
fn directives_set_host_device_and_time_per_snapshot() {
    let text = b"# host: gpu017\n\
        2025-12-02T14:47:02+00:00\n\
        $ ethtool -S eth0\n\
        NIC statistics:\n     rx_packets: 1\n     host: 7\n\
        # ethtool -S eth1\n\
        NIC statistics:\n     rx_packets: 2\n\
        timestamp: 1764686832\n\
        NIC statistics:\n     rx_packets: 3\n";
    let p = temp_file("eth9.txt", text);
    let out = read1(&p, &ReadOptions { host: None, ..opts() });
    let got: Vec<_> = out
        .rows
        .iter()
        .map(|r| (r.time_ns, r.host.as_str(), r.device.as_str(), r.counter.as_str(), r.value.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (T0, "gpu017", "eth0", "netdev_rx_packets", V::U(1)),
            // an indented stat called `host` is a stat, not a directive
            (T0, "gpu017", "eth0", "host", V::U(7)),
            (T0, "gpu017", "eth1", "netdev_rx_packets", V::U(2)),
            (T1, "gpu017", "eth1", "netdev_rx_packets", V::U(3)),
        ]
    );
    assert!(out.reports[0].warnings.is_empty(), "{:?}", out.reports[0].warnings);
}

#[test]
fn device_comes_from_the_file_name_else_unknown_with_a_warning() {
    for (name, device) in [
        ("gpu01_eth2_ethtool.log", "eth2"),
        ("ethtool-S-ens1f0np0-20261202T1447Z.txt", "ens1f0np0"),
        ("eth3.txt", "eth3"),
    ] {
        let p = temp_file(name, b"NIC statistics:\n     rx_packets: 5\n");
        let out = read1(&p, &opts());
        assert_eq!(out.rows[0].device, device, "{name}");
        assert!(out.reports[0].warnings.is_empty());
    }
    let p = temp_file("ethtool.txt", b"NIC statistics:\n     rx_packets: 5\n");
    let out = read1(&p, &opts());
    assert_eq!(out.rows[0].device, "unknown");
    assert!(out.reports[0].warnings.iter().any(|w| w.contains("unknown")), "{:?}", out.reports[0].warnings);
}

#[test]
fn time_falls_back_to_the_file_name_then_the_argument() {
    let p = temp_file("ethtool-eth2-20251202T144702Z.txt", b"NIC statistics:\n     rx_packets: 5\n");
    let out = read1(&p, &ReadOptions { time_ns: None, ..opts() });
    assert_eq!((out.rows[0].time_ns, out.reports[0].time_source), (T0, TimeSource::FileName));
    let p = temp_file("eth2.txt", b"NIC statistics:\n     rx_packets: 5\n");
    let out = read1(&p, &ReadOptions { time_ns: Some(T1), ..opts() });
    assert_eq!((out.rows[0].time_ns, out.reports[0].time_source), (T1, TimeSource::Argument));
}

#[test]
fn headerless_stats_are_accepted() {
    let p = temp_file("eth0-ethtool.txt", b"     rx_packets: 9\ntx_bytes_phy: 10\n");
    let out = read1(&p, &forced(true));
    let got: Vec<_> = out.rows.iter().map(|r| (r.counter.as_str(), r.value.clone())).collect();
    assert_eq!(got, vec![("netdev_rx_packets", V::U(9)), ("phy_tx_bytes", V::U(10))]);
}

#[test]
fn u64_extremes_are_exact() {
    let p = temp_file("eth0.txt", b"NIC statistics:\n     rx_bytes_phy: 18446744073709551615\n     rx_bytes: 0\n");
    let out = read1(&p, &opts());
    assert_eq!(one(&out, "phy_rx_bytes").value, V::U(u64::MAX));
    assert_eq!(one(&out, "netdev_rx_bytes").value, V::U(0));
}

// --- hostile inputs ---------------------------------------------------------------------------

fn assert_format_error(err: &Error, file: &str, line: u64) {
    match err {
        Error::Format { path, position, .. } => {
            assert!(path.ends_with(file), "{err}");
            assert_eq!(position.line, Some(line), "{err}");
        }
        other => panic!("expected a format error, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(file) && msg.contains(&format!("line {line}")), "{msg}");
}

#[test]
fn empty_input_has_no_rows() {
    let p = temp_file("eth0.txt", b"");
    let out = read1(&p, &opts());
    assert!(out.rows.is_empty());
    let out = read1(&p, &forced(true));
    assert!(out.rows.is_empty());
    assert_eq!(out.reports[0].bad_records, 0);
}

#[test]
fn bad_values_fail_strict_with_file_and_line_and_are_counted_in_lenient_mode() {
    let cases: &[(&str, &[u8], u64)] = &[
        (
            "above-u64",
            b"NIC statistics:\n     rx_packets: 1\n     rx_bytes: 18446744073709551616\n     tx_packets: 3\n",
            3,
        ),
        ("negative", b"NIC statistics:\n     rx_packets: 1\n     rx_bytes: -5\n     tx_packets: 3\n", 3),
        ("fraction", b"NIC statistics:\n     rx_packets: 1\n     rx_bytes: 1.5\n     tx_packets: 3\n", 3),
        ("utf8", b"NIC statistics:\n     rx_packets: 1\n     rx_\xff\xfebytes: 2\n     tx_packets: 3\n", 3),
        ("junk", b"NIC statistics:\n     rx_packets: 1\nSettings for eth0:\n     tx_packets: 3\n", 3),
    ];
    for (name, text, line) in cases {
        let file = format!("{name}-eth0.txt");
        let p = temp_file(&file, text);
        let err = read_with(std::slice::from_ref(&p), &opts()).err().unwrap();
        assert_format_error(&err, &file, *line);
        let out = read1(&p, &lenient());
        let got: Vec<_> = out.rows.iter().map(|r| (r.counter.as_str(), r.value.clone())).collect();
        assert_eq!(got, vec![("netdev_rx_packets", V::U(1)), ("netdev_tx_packets", V::U(3))], "{name}");
        assert_eq!(out.reports[0].bad_records, 1, "{name}");
        assert!(out.reports[0].errors[0].contains(&format!("line {line}")), "{:?}", out.reports[0].errors);
    }
}

#[test]
fn truncated_last_line_is_a_bad_record() {
    let p = temp_file("cut-eth0.txt", b"NIC statistics:\n     rx_packets: 5\n     tx_pack");
    let err = read_with(std::slice::from_ref(&p), &opts()).err().unwrap();
    assert_format_error(&err, "cut-eth0.txt", 3);
    let out = read1(&p, &lenient());
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (1, 1));
}

#[test]
fn garbage_with_the_format_forced_is_rejected_line_by_line() {
    let mut garbage = vec![0u8, 159, 146, 150, 1, 2, 3, 255, b'\n'];
    garbage.extend_from_slice(b"hello world\n\x00\x00: \x01\n");
    let p = temp_file("garbage.bin", &garbage);
    let err = read_with(std::slice::from_ref(&p), &forced(true)).err().unwrap();
    assert_format_error(&err, "garbage.bin", 1);
    let out = read1(&p, &forced(false));
    assert!(out.rows.is_empty());
    assert_eq!(out.reports[0].bad_records, 3);
}

#[test]
fn stat_lines_without_their_header_are_ethtool_not_prometheus() {
    // node_exporter's real eth0 statistics with the command echo and `NIC statistics:` cut off
    let p = fixture("ethtool/headerless/eth0-tail-n2.txt");
    let head = std::fs::read(&p).unwrap();
    assert_eq!(fabricscope_core::formats::detect(&head, "eth0-tail-n2.txt"), Some(Format::Ethtool));
    let out =
        read_with(&[p], &ReadOptions { host: Some("h1".into()), time_ns: Some(1), ..ReadOptions::default() }).unwrap();
    assert_eq!(out.reports[0].format, Some(Format::Ethtool));
    assert_eq!(out.reports[0].bad_records, 0);
    assert_eq!(out.rows.len(), 16);
    assert!(out.rows.iter().all(|r| !r.counter.ends_with(':') && r.source == "ethtool"));
    let rx = out.rows.iter().find(|r| r.counter == "netdev_rx_packets").unwrap();
    assert_eq!(rx.value, V::U(1_260_062));
    // forced through the Prometheus reader, the same lines are refused with the reason
    let p = temp_file("stats.prom", b"rx_packets: 1260062\ntx_packets: 961500\n");
    let err = read_with(
        std::slice::from_ref(&p),
        &ReadOptions { format: Some(Format::Prometheus), ..ReadOptions::default() },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("line 1") && err.contains("ethtool -S"), "{err}");
    // detected (no header, not indented) they are ethtool
    let out =
        read_with(&[p], &ReadOptions { host: Some("h1".into()), time_ns: Some(1), ..ReadOptions::default() }).unwrap();
    assert_eq!((out.reports[0].format, out.rows.len()), (Some(Format::Ethtool), 2));
}

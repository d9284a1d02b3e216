//! InfiniBand diagnostic counter readers (perfquery, ibqueryerrors, telegraf, UFM CSV/JSON,
//! ibdiagnet2.db_csv PM_INFO) on real and constructed inputs, with exact expected values.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{Output, Row, V, fixture, read_with, temp_file};
use fabricscope_core::{Error, Format, ReadOptions, TimeSource};

const T0: i64 = 1_764_686_822_000_000_000;

fn opts() -> ReadOptions {
    ReadOptions { time_ns: Some(T0), host: Some("mgmt01".into()), ..ReadOptions::default() }
}

fn lenient() -> ReadOptions {
    ReadOptions { strict: false, ..opts() }
}

fn err_of(path: &std::path::Path, o: &ReadOptions) -> Error {
    match read_with(&[path.to_path_buf()], o) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

fn read1(path: &std::path::Path, o: &ReadOptions) -> Output {
    read_with(&[path.to_path_buf()], o).unwrap()
}

fn find<'a>(out: &'a Output, device: &str, port: Option<u16>, counter: &str) -> &'a Row {
    let rows: Vec<&Row> =
        out.rows.iter().filter(|r| r.device == device && r.port == port && r.counter == counter).collect();
    assert_eq!(rows.len(), 1, "{device} {port:?} {counter}: {rows:?}");
    rows[0]
}

#[test]
fn perfquery_extended_two_ports_exact_values() {
    let out = read1(&fixture("ib/perfquery/0x7cfe9003009ce5b0.out"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::Perfquery));
    assert_eq!((rep.rows, rep.bad_records, rep.time_source), (44, 0, TimeSource::Argument));
    let dev = "0x7cfe9003009ce5b0";
    assert!(
        out.rows.iter().all(|r| r.device == dev && r.host == "mgmt01" && r.time_ns == T0 && r.source == "perfquery")
    );
    let x = find(&out, dev, Some(1), "port_xmit_data_bytes");
    assert_eq!((&x.value, x.scale, x.is_counter), (&V::U(36_298_026_860_928 * 4), 4, true));
    assert_eq!(find(&out, dev, Some(1), "port_rcv_data_bytes").value, V::U(12_279_028_775_751 * 4));
    assert_eq!(find(&out, dev, Some(1), "port_xmit_packets").value, V::U(101_733_204_203));
    assert_eq!(find(&out, dev, Some(1), "multicast_rcv_packets").value, V::U(5_584_846_741));
    assert_eq!(find(&out, dev, Some(1), "port_xmit_wait_ticks").value, V::U(22_730_501));
    assert_eq!(find(&out, dev, Some(2), "port_xmit_wait_ticks").value, V::U(36_510_964));
    assert_eq!(find(&out, dev, Some(2), "port_rcv_data_bytes").value, V::U(39_078_804_993_378 * 4));
    assert_eq!(find(&out, dev, Some(2), "qp1_dropped_packets").value, V::U(0));
    // selectors are not counters
    assert!(out.rows.iter().all(|r| !r.counter.starts_with("CounterSelect") && r.counter != "PortSelect"));
    let caps: Vec<(Option<u16>, &str, &str)> =
        out.attrs.iter().map(|a| (a.port, a.key.as_str(), a.value.as_str())).collect();
    assert_eq!(
        caps,
        vec![
            (Some(1), "pma_cap_mask", "0x5300"),
            (Some(1), "pma_cap_mask2", "0x0000002"),
            (Some(2), "pma_cap_mask", "0x5300"),
            (Some(2), "pma_cap_mask2", "0x0000002")
        ]
    );
}

#[test]
fn perfquery_all_fixtures_and_error_details() {
    let out = read_with(&[fixture("ib/perfquery"), fixture("ib/perfquery-rcv-error")], &opts()).unwrap();
    assert!(out.reports.iter().all(|r| r.bad_records == 0 && !r.failed), "{:?}", out.reports);
    // the empty fixture is an empty input, not an error
    assert!(out.reports.iter().any(|r| r.rows == 0 && r.warnings.iter().any(|w| w == "empty input")));
    // HCA with CapMask2 0 still lists (and we read) the error block
    let hca = "0x7cfe9003003b4b96";
    assert_eq!(find(&out, hca, Some(1), "port_xmit_data_bytes").value, V::U(37_108_676_853_855 * 4));
    assert_eq!(find(&out, hca, Some(1), "symbol_errors").value, V::U(0));
    // PortRcvErrorDetails: 6 counters per block, device from the file name `<guid>-<n>.out`
    let details = [
        "port_local_physical_errors",
        "port_malformed_packet_errors",
        "port_buffer_overrun_errors",
        "port_dlid_mapping_errors",
        "port_vl_mapping_errors",
        "port_looping_errors",
    ];
    for d in details {
        assert_eq!(find(&out, "0x7cfe9003009ce5b0", Some(2), d).value, V::U(0));
        assert_eq!(find(&out, "0x506b4b03005c2740", Some(1), d).value, V::U(0));
    }
    assert_eq!(out.rows.len(), 44 + 22 + 22 + 22 + 5 * 6);
}

#[test]
fn perfquery_basic_snapshots_with_timestamps_and_aggregate_port() {
    let text = b"1764686822\n# Port counters: Lid 1 port 1 (CapMask: 0x1600)\nPortSelect:......................1\nCounterSelect:...................0x0000\nSymbolErrorCounter:..............65535\nPortXmitData:....................16576648\nPortXmitWait:....................441\n1764686832\n# Port counters: Lid 1 port 1 (CapMask: 0x1600)\nPortSelect:......................1\nPortXmitData:....................16576700\n# Port counters: Lid 1 port 255 (CapMask: 0x1600)\nPortSelect:......................255\nPortXmitData:....................99\n";
    let p = temp_file("switch-lid1.txt", text);
    let out = read1(&p, &opts());
    let rows: Vec<(i64, &str, Option<u16>, &str, &V)> =
        out.rows.iter().map(|r| (r.time_ns, r.device.as_str(), r.port, r.counter.as_str(), &r.value)).collect();
    let t1 = T0 + 10_000_000_000;
    assert_eq!(
        rows,
        vec![
            (T0, "lid:1", Some(1), "symbol_errors", &V::U(65535)),
            (T0, "lid:1", Some(1), "port_xmit_data_bytes", &V::U(16_576_648 * 4)),
            (T0, "lid:1", Some(1), "port_xmit_wait_ticks", &V::U(441)),
            (t1, "lid:1", Some(1), "port_xmit_data_bytes", &V::U(16_576_700 * 4)),
            (t1, "lid:1", None, "port_xmit_data_bytes", &V::U(99 * 4)),
        ]
    );
    assert_eq!(out.reports[0].time_source, TimeSource::InFile);
}

#[test]
fn perfquery_non_numeric_counter_is_an_error_with_file_and_line_or_a_counted_reject() {
    let p = temp_file("0x0002c903006e29b0.txt", "# Port counters: Lid 1 port 1 (CapMask: 0x1600)\nPortXmitData:....................12x\nPortRcvData:.....................7\n".as_bytes());
    let err = err_of(&p, &opts());
    assert!(matches!(err, Error::Format { .. }));
    let msg = err.to_string();
    assert!(msg.contains("0x0002c903006e29b0.txt") && msg.contains("line 2"), "{msg}");
    let out = read1(&p, &lenient());
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (1, 1));
    assert_eq!(out.rows[0].device, "0x0002c903006e29b0");
    // multi-byte UTF-8 where a value should be never panics
    let p = temp_file("x.txt", "# Port counters: Lid 1 port 1 (CapMask: 0x1600)\nPortXmitData:......é€\n".as_bytes());
    assert_eq!(read1(&p, &lenient()).reports[0].bad_records, 1);
}

#[test]
fn ibqueryerrors_ports_skip_aggregates_and_pad_guids() {
    let out = read1(&fixture("ib/constructed/ibqueryerrors.txt"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::Ibqueryerrors));
    assert_eq!((rep.rows, rep.bad_records), (8, 0));
    assert!(rep.warnings.iter().any(|w| w.contains("1 `port ALL`")));
    let sw = "0x0002c903006e29b0";
    assert_eq!(find(&out, sw, Some(5), "symbol_errors").value, V::U(65535));
    assert_eq!(find(&out, sw, Some(5), "port_xmit_wait_ticks").value, V::U(84_704_351));
    assert_eq!(find(&out, sw, Some(5), "port_rcv_switch_relay_errors").value, V::U(149));
    assert_eq!(find(&out, "0x7cfe9003003b4bde", Some(1), "port_rcv_errors").value, V::U(12));
    let data = find(&out, "0x7cfe9003003b4bde", Some(1), "port_xmit_data_bytes");
    assert_eq!((&data.value, data.scale), (&V::U(4000), 4));
    let descs: Vec<(&str, &str)> = out.attrs.iter().map(|a| (a.device.as_str(), a.value.as_str())).collect();
    assert_eq!(descs, vec![(sw, "MF0;ys23ib4:SX6036/U1"), ("0x7cfe9003003b4bde", "o0001 HCA-1")]);
}

#[test]
fn telegraf_infiniband_readme_sample() {
    let out = read1(&fixture("ib/telegraf/infiniband_readme.lp"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::Telegraf));
    assert_eq!((rep.rows, rep.bad_records, rep.time_source), (21 + 29, 0, TimeSource::InFile));
    let t = 1_737_652_060_000_000_000;
    assert!(
        out.rows
            .iter()
            .all(|r| r.time_ns == t && r.host == "hop-r640-12" && r.device == "mlx5_bond_0" && r.port == Some(1))
    );
    let d = "mlx5_bond_0";
    // telegraf does not multiply the data words: we do
    let x = find(&out, d, Some(1), "port_xmit_data_bytes");
    assert_eq!((&x.value, x.scale), (&V::U(85_378_896_588 * 4), 4));
    assert_eq!(find(&out, d, Some(1), "port_rcv_data_bytes").value, V::U(34_600_185_253 * 4));
    assert_eq!(find(&out, d, Some(1), "port_rcv_packets").value, V::U(34_914_071));
    assert_eq!(find(&out, d, Some(1), "unicast_xmit_packets").value, V::U(82_002_535));
    assert_eq!(find(&out, d, Some(1), "vl15_dropped_packets").value, V::U(0));
    assert_eq!(find(&out, d, Some(1), "rx_read_requests").value, V::U(6000));
    assert_eq!(find(&out, d, Some(1), "rx_write_requests").value, V::U(19000));
    assert_eq!(find(&out, d, Some(1), "rx_out_of_buffer_packets").value, V::U(0));
    // no sysfs spelling: kept raw
    assert_eq!(find(&out, d, Some(1), "lifespan").value, V::U(10));
}

#[test]
fn telegraf_ethtool_priorities_strings_and_hostile_lines() {
    let text = "ethtool,driver=mlx5_core,host=gpu01,interface=eth2 rx_prio3_pause=5i,tx_bytes_phy=7i,link=\"up, full\",ok=true 1737652060\nethtool,host=gpu01,interface=eth2 rx_prio3_pause=abc 1737652060\nethtool,host=gpu01,interface=eth2 rx_prio3_pause=1i notatime\n";
    let p = temp_file("metrics.lp", text.as_bytes());
    let out = read1(&p, &lenient());
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (2, 2));
    let r = find(&out, "eth2", None, "rx_pause_frames");
    assert_eq!((r.priority, &r.value, r.time_ns), (Some(3), &V::U(5), 1_737_652_060_000_000_000));
    assert_eq!(find(&out, "eth2", None, "phy_tx_bytes").value, V::U(7));
    assert_eq!(out.attrs.len(), 1);
    assert_eq!((out.attrs[0].key.as_str(), out.attrs[0].value.as_str()), ("link", "up, full"));
    let err = err_of(&p, &opts()).to_string();
    assert!(err.contains("metrics.lp") && err.contains("line 2"), "{err}");
}

#[test]
fn ufm_json_sample_exact_values() {
    let out = read1(&fixture("ib/ufm/small_telemetry.json"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::UfmJson));
    assert_eq!(rep.bad_records, 0);
    // 6 records x 25 numeric keys (identity keys skipped)
    assert_eq!(rep.rows, 6 * 25);
    let t = 1_709_652_347_161_873_000;
    assert!(out.rows.iter().all(|r| r.time_ns == t && r.host == "mgmt01" && r.source == "ufm-json"));
    let d = "0x248a070300ef19a0";
    assert_eq!(find(&out, d, Some(1), "link_downed_events").value, V::U(1));
    assert_eq!(find(&out, d, Some(23), "port_xmit_packets").value, V::U(244_479));
    assert_eq!(find(&out, d, Some(23), "port_rcv_packets").value, V::U(244_498));
    // ambiguous unit: kept raw
    assert_eq!(find(&out, d, Some(23), "Infiniband_MBOut_u_Gb").value, V::U(70_409_952));
    let pct = find(&out, "0x0c42a103007ab890", Some(1), "Infiniband_Normalized_MBOut_f_u_Percent");
    assert_eq!(pct.value, V::F(0.000_001_535_23));
    let devices: std::collections::BTreeSet<(&str, Option<u16>)> =
        out.rows.iter().map(|r| (r.device.as_str(), r.port)).collect();
    assert_eq!(devices.len(), 6);
}

#[test]
fn ufm_json_syntax_error_names_the_line() {
    let p = temp_file("t.json", b"{\"values\": [\n {\"node_guid\": \"0x1\", \"port_num\": 1,\n  \"x\": 1,,}\n]}\n");
    let err = err_of(&p, &ReadOptions { format: Some(Format::UfmJson), ..opts() }).to_string();
    assert!(err.contains("t.json") && err.contains("line 3"), "{err}");
}

#[test]
fn ufm_csv_rows_nulls_and_bytes_unit() {
    let out = read1(&fixture("ib/constructed/ufm_metrics.csv"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::UfmCsv));
    assert_eq!((rep.rows, rep.bad_records), (14, 0));
    let a = "0x0c42a103007ab890";
    let x = find(&out, a, Some(1), "port_xmit_data_bytes");
    // UFM data columns are read as bytes: not multiplied, scale 4 recorded
    assert_eq!((&x.value, x.scale, x.time_ns), (&V::U(4_086_720), 4, 1_709_652_347_161_873_000));
    assert_eq!(find(&out, a, Some(1), "unicast_xmit_packets").value, V::U(14000));
    assert_eq!(find(&out, a, Some(1), "eff_ber").value, V::F(1.5e-15));
    let b = "0x248a070300ef19a0";
    assert_eq!(find(&out, b, Some(23), "symbol_errors").value, V::U(3));
    assert_eq!(find(&out, b, Some(23), "unicast_xmit_packets").value, V::Null);
    assert_eq!(find(&out, b, Some(23), "Module_Temperature").value, V::Null);
}

#[test]
fn ufm_csv_wrong_cell_count_and_non_numeric() {
    let text = "timestamp,node_guid,port_num,PortXmitPktsExtended\n1709652347161873,0x1,1,5\n1709652347161873,0x1,2\n1709652347161873,0x1,3,lots\n";
    let p = temp_file("ufm.csv", text.as_bytes());
    let err = err_of(&p, &opts()).to_string();
    assert!(err.contains("ufm.csv") && err.contains("line 3") && err.contains("4 comma-separated cells"), "{err}");
    let out = read1(&p, &lenient());
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (1, 2));
    assert_eq!(out.rows[0].device, "0x0000000000000001");
}

#[test]
fn ibdiagnet_pm_info_prefers_extended_columns_and_nulls_sentinels() {
    let out = read1(&fixture("ib/constructed/ibdiagnet2.db_csv"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::IbdiagnetDbCsv));
    assert_eq!(rep.bad_records, 0);
    assert!(rep.warnings.iter().any(|w| w.contains("FANS_SPEED")), "{:?}", rep.warnings);
    let d = "0xb8cef603001bf9de";
    assert_eq!(find(&out, d, Some(1), "link_downed_events").value, V::U(2));
    // PortXmitWaitExt wins over the saturated 32-bit PortXmitWait
    assert_eq!(find(&out, d, Some(1), "port_xmit_wait_ticks").value, V::U(0x00AB_CDEF));
    // ...unless it is the "not supported" sentinel
    assert_eq!(find(&out, d, Some(41), "port_xmit_wait_ticks").value, V::U(12));
    let x = find(&out, d, Some(1), "port_xmit_data_bytes");
    assert_eq!((&x.value, x.scale), (&V::U(0x1000 * 4), 4));
    assert_eq!(find(&out, d, Some(41), "port_xmit_data_bytes").value, V::U(400));
    assert_eq!(find(&out, d, Some(1), "port_rcv_data_bytes").value, V::U(4000));
    assert_eq!(find(&out, d, Some(1), "port_xmit_packets").value, V::Null);
    assert_eq!(find(&out, d, Some(1), "fec_uncorrectable_blocks").value, V::Null);
    assert_eq!(find(&out, d, Some(1), "max_retransmission_rate").value, V::U(7));
    // PORTS gauges
    assert_eq!(find(&out, d, Some(1), "port_state_id").value, V::U(4));
    assert_eq!(find(&out, d, Some(1), "link_width_lanes").value, V::U(4));
    let pm_rows = out.rows.iter().filter(|r| r.port == Some(1) && r.device == d).count();
    assert_eq!(pm_rows, 9 + 3);
}

#[test]
fn ibdiagnet_hostile_sections() {
    let cases: [(&str, &str, &str); 4] = [
        ("START_PM_INFO\nNodeGUID,PortNumber,PortXmitDiscards\n0x1,1,0\n", "END_PM_INFO", "line 1"),
        ("START_PM_INFO\nNodeGUID,PortNumber,PortXmitDiscards\n0x1,1\nEND_PM_INFO\n", "3 cells", "line 3"),
        (
            "START_PM_INFO\nNodeGUID,PortNumber,PortXmitDiscards\n0x1,1,many\nEND_PM_INFO\n",
            "PortXmitDiscards",
            "line 3",
        ),
        ("START_NODES\nNodeGUID\n0x1\nSTART_PORTS\nEND_PORTS\n", "END_NODES", "line 4"),
    ];
    for (text, expected, line) in cases {
        let p = temp_file("ibdiagnet2.db_csv", text.as_bytes());
        let err = err_of(&p, &opts()).to_string();
        assert!(err.contains("ibdiagnet2.db_csv") && err.contains(expected) && err.contains(line), "{err}");
        let out = read1(&p, &lenient());
        assert_eq!(out.reports[0].bad_records, 1, "{text}");
    }
}

fn attr<'a>(out: &'a Output, device: &str, port: Option<u16>, key: &str) -> &'a str {
    let hits: Vec<&str> = out
        .attrs
        .iter()
        .filter(|a| a.device == device && a.port == port && a.key == key)
        .map(|a| a.value.as_str())
        .collect();
    assert_eq!(hits.len(), 1, "{device} {port:?} {key}: {hits:?}");
    hits[0]
}

#[test]
fn ibswinfo_real_fixture_exact_values() {
    let out = read1(&fixture("ib/ibswinfo/test2.out"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::Ibswinfo));
    // 3 switch gauges (temperature, max temperature, uptime) + 2 PSU power + 9 fans
    assert_eq!((rep.rows, rep.bad_records), (14, 0));
    let sw = "0x08c0eb0300d9f672";
    assert!(out.rows.iter().all(|r| r.host == "mgmt01" && r.time_ns == T0 && r.port.is_none() && !r.is_counter));
    assert_eq!(find(&out, sw, None, "switch_temperature_celsius").value, V::U(53));
    assert_eq!(find(&out, sw, None, "switch_max_temperature_celsius").value, V::U(58));
    assert_eq!(find(&out, sw, None, "switch_uptime_seconds").value, V::U(96 * 86_400 + 3600 + 55 * 60 + 47));
    assert_eq!(find(&out, &format!("{sw}/psu0"), None, "switch_psu_power_watts").value, V::U(154));
    assert_eq!(find(&out, &format!("{sw}/psu1"), None, "switch_psu_power_watts").value, V::U(134));
    assert_eq!(find(&out, &format!("{sw}/fan1"), None, "switch_fan_speed_rpm").value, V::U(6125));
    assert_eq!(find(&out, &format!("{sw}/fan9"), None, "switch_fan_speed_rpm").value, V::U(5906));
    assert_eq!(attr(&out, sw, None, "part_number"), "MQM8790-HS2F");
    assert_eq!(attr(&out, sw, None, "serial_number"), "MT2152T10239");
    assert_eq!(attr(&out, sw, None, "firmware_version"), "27.2010.3118");
    assert_eq!(attr(&out, sw, None, "psid"), "MT_0000000063");
    assert_eq!(attr(&out, sw, None, "ports"), "40");
    assert_eq!(attr(&out, sw, None, "fan_status"), "OK");
    assert_eq!(attr(&out, sw, None, "title"), "Quantum Mellanox Technologies");
    let psu1 = format!("{sw}/psu1");
    assert_eq!(attr(&out, &psu1, None, "status"), "OK");
    assert_eq!(attr(&out, &psu1, None, "part_number"), "MTEF-PSF-AC-C");
    assert_eq!(attr(&out, &psu1, None, "serial_number"), "MT2150T22467");
    assert_eq!(attr(&out, &psu1, None, "dc_power"), "OK");
    assert_eq!(attr(&out, &psu1, None, "fan_status"), "OK");
    assert!(out.attrs.iter().all(|a| a.port.is_none()));

    // test3: PSU1 in error and without a power reading; test1: fan status ERROR
    let out = read1(&fixture("ib/ibswinfo/test3.out"), &opts());
    let sw = "0x08c0eb0300add20e";
    assert_eq!(attr(&out, &format!("{sw}/psu1"), None, "dc_power"), "ERROR");
    assert_eq!(out.counter("switch_psu_power_watts").len(), 1);
    assert_eq!(out.reports[0].rows, 3 + 1 + 9);
    let out = read1(&fixture("ib/ibswinfo/test1.out"), &opts());
    assert_eq!(attr(&out, "0x1c34da0300010540", None, "fan_status"), "ERROR");
    assert_eq!(find(&out, "0x1c34da0300010540", None, "switch_uptime_seconds").value, V::U(13_862_333));
}

#[test]
fn ibswinfo_vitals_mode_and_missing_values() {
    let out = read1(&fixture("ib/ibswinfo/vitals1.out"), &opts());
    let rep = &out.reports[0];
    assert_eq!((rep.format, rep.rows, rep.bad_records), (Some(Format::Ibswinfo), 1 + 2 + 2 + 9, 0));
    // no GUID in vitals mode: the file stem names the switch
    assert_eq!(find(&out, "vitals1", None, "switch_uptime_seconds").value, V::U(16_982_312));
    assert_eq!(find(&out, "vitals1", None, "switch_temperature_celsius").value, V::U(73));
    assert_eq!(find(&out, "vitals1", None, "switch_max_temperature_celsius").value, V::U(80));
    assert_eq!(find(&out, "vitals1/psu1", None, "switch_psu_power_watts").value, V::U(102));
    assert_eq!(find(&out, "vitals1/fan8", None, "switch_fan_speed_rpm").value, V::U(5615));
    assert!(out.attrs.is_empty());
    // empty values are "not reported": no row, no error
    let out = read1(&fixture("ib/ibswinfo/test1-missing.out"), &opts());
    let rep = &out.reports[0];
    assert_eq!((rep.rows, rep.bad_records), (1 + 1 + 7, 0));
    assert!(out.rows.iter().all(|r| r.device != "0x1c34da0300010540/fan1"));
    assert!(out.attrs.iter().all(|a| !(a.device.ends_with("/psu1") && a.key == "status")));
}

#[test]
fn ibswinfo_hostile_inputs() {
    // the exporter's error fixtures (3 switch + 2 PSU + 8 fan gauges, one of them `foo`): a
    // non-numeric vital is a bad record with file and line
    for (name, line, rows) in
        [("test-err1.out", "line 20", 12), ("test-err2.out", "line 28", 12), ("test-err3.out", "line 32", 12)]
    {
        let p = fixture(&format!("ib/ibswinfo/{name}"));
        let err = err_of(&p, &opts()).to_string();
        assert!(err.contains(name) && err.contains(line), "{err}");
        let out = read1(&p, &lenient());
        assert_eq!((out.reports[0].rows, out.reports[0].bad_records), (rows, 1), "{name}");
    }
    // truncated mid-line, garbage, bad GUID, multi-byte text: counted, never a panic
    let text = "=====\nQuantum\n=====\npart number | X\nGUID | 0xzz\nthis is not a vital\ntemperature (C) | é€\nuptime (d-h:m:s) | 3d-99:1\nfan#2 (rpm) | 51";
    let p = temp_file("sw.out", text.as_bytes());
    let out = read_with(&[p], &ReadOptions { format: Some(Format::Ibswinfo), ..lenient() }).unwrap();
    assert_eq!((out.reports[0].rows, out.reports[0].bad_records), (1, 4));
    assert_eq!(find(&out, "sw/fan2", None, "switch_fan_speed_rpm").value, V::U(51));
    // two switches appended in one file: each keeps its own GUID
    let two = [
        std::fs::read(fixture("ib/ibswinfo/test2.out")).unwrap(),
        std::fs::read(fixture("ib/ibswinfo/test3.out")).unwrap(),
    ]
    .concat();
    let p = temp_file("two.out", &two);
    let out = read1(&p, &opts());
    assert_eq!(out.reports[0].rows, 14 + 13);
    assert_eq!(find(&out, "0x08c0eb0300add20e", None, "switch_temperature_celsius").value, V::U(47));
    assert_eq!(find(&out, "0x08c0eb0300d9f672", None, "switch_temperature_celsius").value, V::U(53));
}

#[test]
fn net_dump_constructed_exact_values() {
    let out = read1(&fixture("ib/constructed/ibdiagnet2.net_dump"), &opts());
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::IbdiagnetNetDump));
    assert_eq!((rep.rows, rep.bad_records), (18, 0));
    let (leaf, hca) = ("0xb8cef603001bf9de", "0x0c42a1030065a1b2");
    assert!(out.rows.iter().all(|r| r.host == "mgmt01" && r.time_ns == T0 && !r.is_counter));
    assert_eq!(find(&out, leaf, Some(1), "port_state_id").value, V::U(4));
    assert_eq!(find(&out, leaf, Some(1), "port_phys_state_id").value, V::U(5));
    assert_eq!(find(&out, leaf, Some(1), "link_width_lanes").value, V::U(4));
    assert_eq!(find(&out, leaf, Some(1), "link_rate_bytes_per_s").value, V::U(25_000_000_000));
    assert_eq!(find(&out, leaf, Some(2), "link_width_lanes").value, V::U(2));
    assert_eq!(find(&out, leaf, Some(2), "link_rate_bytes_per_s").value, V::U(2_500_000_000));
    assert_eq!(find(&out, leaf, Some(3), "port_state_id").value, V::U(1));
    assert_eq!(find(&out, leaf, Some(3), "port_phys_state_id").value, V::U(2));
    assert!(out.rows.iter().all(|r| !(r.port == Some(3) && r.counter.starts_with("link_"))));
    assert_eq!(find(&out, leaf, Some(41), "link_rate_bytes_per_s").value, V::U(50_000_000_000));
    assert_eq!(find(&out, hca, Some(1), "link_rate_bytes_per_s").value, V::U(25_000_000_000));
    assert_eq!(attr(&out, leaf, None, "node_description"), "MF0;leaf01:MQM8700/U1");
    assert_eq!(attr(&out, leaf, None, "lid"), "1");
    assert_eq!(attr(&out, leaf, Some(1), "link_speed"), "HDR");
    assert_eq!(attr(&out, leaf, Some(2), "link_speed"), "FDR10");
    assert_eq!(attr(&out, leaf, Some(1), "link_width"), "4x");
    assert_eq!(attr(&out, leaf, Some(1), "fec_mode"), "RS-FEC (544,514)");
    assert_eq!(attr(&out, leaf, Some(1), "neighbor_guid"), hca);
    assert_eq!(attr(&out, leaf, Some(41), "neighbor_description"), "MF0;spine01:MQM9700/U1");
    assert_eq!(attr(&out, leaf, Some(41), "neighbor_port"), "7");
    assert_eq!(attr(&out, leaf, Some(3), "port_state"), "DOWN");
    assert!(out.attrs.iter().all(|a| !(a.port == Some(3) && a.key.starts_with("neighbor"))));
}

#[test]
fn net_dump_hostile_inputs() {
    let h = "\"sw\", Mellanox, 0xb8cef603001bf9de, LID 1\n";
    let cols = "IB# : Sta : LWA : LSA\n";
    let cases: [(String, &str, &str); 5] = [
        (format!("garbage first\n{h}{cols}1 : ACT : 4x : 25\n"), "block header", "line 1"),
        (format!("{h}Sta : LWA\n1 : ACT\n"), "IB#", "line 2"),
        (format!("{h}{cols}x : ACT : 4x : 25\n"), "port number", "line 3"),
        (format!("{h}{cols}1 : ACT : 4x : 25\n\n{h}"), "column header", "line 5"),
        (format!("{h}{cols}1 : ACT : 4x : 25\n1é€ : ACT\n"), "port number", "line 4"),
    ];
    for (text, expected, line) in cases {
        let p = temp_file("ibdiagnet2.net_dump", text.as_bytes());
        let err = err_of(&p, &opts()).to_string();
        assert!(err.contains("ibdiagnet2.net_dump") && err.contains(expected) && err.contains(line), "{err}");
        let out = read1(&p, &lenient());
        assert_eq!(out.reports[0].bad_records, 1, "{text}");
    }
    // truncated mid-row: the partial row still has its port; unknown LSA/width give no gauge
    let p = temp_file("ibdiagnet2.net_dump", format!("{h}{cols}1 : ACT : 4x : 25\n2 : ACT : 3x : 7").as_bytes());
    let out = read1(&p, &opts());
    assert_eq!(out.reports[0].rows, 3 + 1);
    assert_eq!(find(&out, "0xb8cef603001bf9de", Some(2), "port_state_id").value, V::U(4));
}

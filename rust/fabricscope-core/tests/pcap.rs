//! Packet captures: exact counts against the `.truth.json` of every synthetic RoCEv2 + PFC
//! capture, pcapng conformance files, Wireshark container edge cases, the real ConnectX-4 Lx CNP
//! frame, and hostile inputs (clear error with byte offset, or skipped and counted).
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, TimestampNanosecondType, UInt8Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use common::{fixture, read_with, temp_file};
use fabricscope_core::packets::{Stats, capture_stats};
use fabricscope_core::{Error, ReadOptions};

fn cap(rel: &str) -> PathBuf {
    fixture(&format!("captures/{rel}"))
}

/// The number after `"key":` in a flat JSON object (the truth files are flat, integer valued).
fn json_u64(json: &str, key: &str) -> u64 {
    let pat = format!("\"{key}\":");
    let at = json.find(&pat).unwrap_or_else(|| panic!("{key} missing")) + pat.len();
    json[at..].trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

fn json_array(json: &str, key: &str) -> Vec<u64> {
    let pat = format!("\"{key}\":");
    let at = json.find(&pat).unwrap() + pat.len();
    let body = &json[at..];
    let open = body.find('[').unwrap();
    let close = body.find(']').unwrap();
    body[open + 1..close].split(',').map(|v| v.trim().parse().unwrap()).collect()
}

fn stats(rel: &str) -> Stats {
    capture_stats(&std::fs::read(cap(rel)).unwrap(), true).unwrap().0
}

const TRUTH_FILES: [&str; 8] = [
    "synth_roce_pfc_le_ns.pcap",
    "synth_roce_pfc_le_us.pcap",
    "synth_roce_pfc_be_ns.pcap",
    "synth_roce_pfc_be_us.pcap",
    "synth_roce_pfc_le.pcapng",
    "synth_roce_pfc_be.pcapng",
    "synth_roce_pfc_sll2.pcap",
    "synth_roce_pfc_snap96.pcap",
];

#[test]
fn every_truth_file_matches_exactly() {
    // Every truth file in the directory is covered (a new capture cannot be forgotten).
    let mut listed: Vec<String> = std::fs::read_dir(cap(""))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".truth.json"))
        .map(|n| n.trim_end_matches(".truth.json").to_owned())
        .collect();
    listed.sort();
    let mut ours: Vec<String> = TRUTH_FILES.iter().map(|s| (*s).to_owned()).collect();
    ours.sort();
    assert_eq!(listed, ours);

    for file in TRUTH_FILES {
        let truth = std::fs::read_to_string(cap(&format!("{file}.truth.json"))).unwrap();
        let s = stats(file);
        let got: BTreeMap<&str, u64> = [
            ("packets", s.packets),
            ("bytes_on_wire", s.bytes_on_wire),
            ("roce", s.roce),
            ("roce_ipv4", s.roce_ipv4),
            ("roce_ipv6", s.roce_ipv6),
            ("vlan_tagged", s.vlan_tagged),
            ("qinq", s.qinq),
            ("ce", s.ce),
            ("ect0", s.ect0),
            ("cnp", s.cnp),
            ("ack", s.ack),
            ("nak_seq", s.nak_seq),
            ("rnr_nak", s.rnr_nak),
            ("psn_gap_events", s.psn_gap_events),
            ("retransmitted_packets", s.retransmitted_packets),
            ("read_requests", s.read_requests),
            ("read_responses", s.read_responses),
            ("pfc", s.pfc),
            ("pfc_xoff", s.pfc_xoff),
            ("pfc_xon", s.pfc_xon),
            ("pause", s.pause),
        ]
        .into_iter()
        .collect();
        let want: BTreeMap<&str, u64> = got.keys().map(|k| (*k, json_u64(&truth, k))).collect();
        assert_eq!(got, want, "{file}");
        assert_eq!(s.pfc_prio_enable_counts.to_vec(), json_array(&truth, "pfc_prio_enable_counts"), "{file}");
        // One backward jump per gap (go-back-N), nothing undecoded.
        assert_eq!(s.psn_backwards, s.psn_gap_events, "{file}");
        assert_eq!(s.undecoded, 0, "{file}");
    }
}

#[test]
fn timestamps_agree_across_byte_orders_and_resolutions() {
    let ns = stats("synth_roce_pfc_le_ns.pcap");
    assert_eq!(stats("synth_roce_pfc_be_ns.pcap").first_time_ns, ns.first_time_ns);
    assert_eq!(stats("synth_roce_pfc_be_ns.pcap").last_time_ns, ns.last_time_ns);
    let us = stats("synth_roce_pfc_le_us.pcap");
    assert_eq!(us.first_time_ns.unwrap() / 1000, ns.first_time_ns.unwrap() / 1000);
    assert_eq!(us.last_time_ns.unwrap() / 1000, ns.last_time_ns.unwrap() / 1000);
    assert!(ns.first_time_ns.unwrap() > 1_600_000_000_000_000_000, "epoch seconds, not a resolution slip");
    for f in ["synth_roce_pfc_le.pcapng", "synth_roce_pfc_be.pcapng"] {
        let ng = stats(f);
        // Within one µs of the ns pcap: interface 1 is µs, interface 0 ns (per-interface tsresol).
        assert!((ng.first_time_ns.unwrap() - ns.first_time_ns.unwrap()).abs() < 1000, "{f}");
        assert!((ng.last_time_ns.unwrap() - ns.last_time_ns.unwrap()).abs() < 1000, "{f}");
    }
}

#[test]
fn wireshark_dhcp_four_containers_same_packets_same_times() {
    let base = stats("wireshark/dhcp.pcap");
    assert_eq!(base.packets, 4);
    for f in ["wireshark/dhcp-nanosecond.pcap", "wireshark/dhcp.pcapng", "wireshark/dhcp-nanosecond.pcapng"] {
        let s = stats(f);
        assert_eq!(s.packets, 4, "{f}");
        assert_eq!(s.bytes_on_wire, base.bytes_on_wire, "{f}");
        assert_eq!(s.first_time_ns.unwrap() / 1000, base.first_time_ns.unwrap() / 1000, "{f}");
        assert_eq!(s.last_time_ns.unwrap() / 1000, base.last_time_ns.unwrap() / 1000, "{f}");
    }
    // The nanosecond files really carry sub-µs digits or exact µs; either way ns are integers.
    assert_eq!(base.first_time_ns.unwrap() % 1000, 0);
}

#[test]
fn wireshark_many_interfaces_mixed_link_types() {
    let s = stats("wireshark/many_interfaces.pcapng.1");
    assert_eq!(s.packets, 64);
    // Loopback/NULL interfaces are counted, not decoded, and not an error.
    assert!(s.undecoded > 0 && s.undecoded < 64, "{s:?}");
}

#[test]
fn pcapng_conformance_suite() {
    // (file, packets = EPB + SPB from the generator's description)
    for (f, n) in [
        ("le_test001.pcapng", 4),
        ("be_test001.pcapng", 4),
        ("le_test005.pcapng", 4),
        ("le_test010.pcapng", 4),
        ("le_test016.pcapng", 4),
        ("le_test100.pcapng", 5),
        ("le_test200.pcapng", 0),
        ("le_test202.pcapng", 8),
        ("be_test202.pcapng", 8),
    ] {
        let s = stats(&format!("pcapng-test-generator/{f}"));
        assert_eq!(s.packets, n, "{f}");
    }
    // Both byte orders of the same content give the same bytes and times.
    let le = stats("pcapng-test-generator/le_test202.pcapng");
    let be = stats("pcapng-test-generator/be_test202.pcapng");
    assert_eq!(
        (le.bytes_on_wire, le.first_time_ns, le.last_time_ns),
        (be.bytes_on_wire, be.first_time_ns, be.last_time_ns)
    );
}

#[test]
fn modified_pcap_variant() {
    let s = stats("pcap-parser/modified-format.pcap");
    assert_eq!(s.packets, 1);
    assert_eq!(s.bytes_on_wire, 98);
    assert_eq!(s.first_time_ns, Some(1_712_763_541_734_807_000));
}

fn events(out: &common::Output) -> Vec<RecordBatch> {
    out.tables.iter().filter(|(n, _)| *n == "packet_events").map(|(_, b)| b.clone()).collect()
}

fn kinds(batches: &[RecordBatch]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for b in batches {
        let d = b.column_by_name("kind").unwrap().as_dictionary::<Int32Type>();
        let vals = d.values().as_string::<i32>();
        for k in d.keys() {
            *m.entry(vals.value(k.unwrap() as usize).to_owned()).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn real_connectx4_lx_cnp_frame() {
    let out =
        read_with(&[cap("scapy_cx4lx_cnp.pcap")], &ReadOptions { host: Some("h".into()), ..ReadOptions::default() })
            .unwrap();
    let ev = events(&out);
    assert_eq!(kinds(&ev), BTreeMap::from([("cnp".to_owned(), 1)]));
    let b = &ev[0];
    assert_eq!(b.column_by_name("opcode").unwrap().as_primitive::<UInt8Type>().value(0), 0x81);
    assert_eq!(b.column_by_name("dest_qp").unwrap().as_primitive::<UInt32Type>().value(0), 0x118);
    assert_eq!(b.column_by_name("psn").unwrap().as_primitive::<UInt32Type>().value(0), 0);
    assert_eq!(b.column_by_name("ecn").unwrap().as_primitive::<UInt8Type>().value(0), 2, "TOS 0xC2 = DSCP 48 + ECT(0)");
    assert_eq!(b.column_by_name("length").unwrap().as_primitive::<UInt32Type>().value(0), 74);
    let cnp: Vec<_> = out.counter("capture_cnp_packets");
    assert_eq!(cnp.last().unwrap().value, common::V::U(1));
    assert_eq!(cnp.last().unwrap().device, "capture0");
    assert_eq!(cnp.last().unwrap().host, "h");
}

/// (counter, device, priority).
type SeriesKey = (String, String, Option<u8>);

/// Final cumulative value of a counter, summed over devices and priorities.
fn final_total(out: &common::Output, counter: &str) -> u64 {
    let mut last: BTreeMap<(String, Option<u8>), u64> = BTreeMap::new();
    for r in out.counter(counter) {
        if let common::V::U(v) = r.value {
            let e = last.entry((r.device.clone(), r.priority)).or_insert(0);
            *e = (*e).max(v);
        }
    }
    last.values().sum()
}

#[test]
fn driver_events_and_binned_samples_match_truth() {
    for file in ["synth_roce_pfc_le_ns.pcap", "synth_roce_pfc_le.pcapng", "synth_roce_pfc_sll2.pcap"] {
        let truth = std::fs::read_to_string(cap(&format!("{file}.truth.json"))).unwrap();
        let t = |k| json_u64(&truth, k);
        let opts = ReadOptions { host: Some("gpu01".into()), bin_ns: 1_000_000, ..ReadOptions::default() };
        let out = read_with(&[cap(file)], &opts).unwrap();
        assert_eq!(
            out.reports[0].format.map(fabricscope_core::Format::name),
            Some(if file.ends_with("ng") { "pcapng" } else { "pcap" })
        );
        let ev = events(&out);
        let k = kinds(&ev);
        let get = |n: &str| k.get(n).copied().unwrap_or(0);
        assert_eq!(get("ce"), t("ce"), "{file}");
        assert_eq!(get("cnp"), t("cnp"), "{file}");
        assert_eq!(get("nak_seq"), t("nak_seq"), "{file}");
        assert_eq!(get("rnr_nak"), t("rnr_nak"), "{file}");
        assert_eq!(get("psn_gap"), t("psn_gap_events"), "{file}");
        assert_eq!(get("retransmitted"), t("retransmitted_packets"), "{file}");
        assert_eq!(get("pfc_xoff") + get("pfc_xon"), json_array(&truth, "pfc_prio_enable_counts").iter().sum::<u64>());
        assert_eq!(get("pause"), t("pause"), "{file}");

        assert_eq!(final_total(&out, "capture_packets"), t("packets"), "{file}");
        assert_eq!(final_total(&out, "capture_bytes"), t("bytes_on_wire"), "{file}");
        assert_eq!(final_total(&out, "capture_roce_packets"), t("roce"), "{file}");
        assert_eq!(final_total(&out, "capture_ce_marked_packets"), t("ce"), "{file}");
        assert_eq!(final_total(&out, "capture_cnp_packets"), t("cnp"), "{file}");
        assert_eq!(final_total(&out, "capture_nak_seq_packets"), t("nak_seq"), "{file}");
        assert_eq!(final_total(&out, "capture_rnr_nak_packets"), t("rnr_nak"), "{file}");
        assert_eq!(final_total(&out, "capture_psn_gap_events"), t("psn_gap_events"), "{file}");
        assert_eq!(final_total(&out, "capture_retransmitted_packets"), t("retransmitted_packets"), "{file}");
        assert_eq!(final_total(&out, "capture_pfc_xoff_frames"), t("pfc_xoff"), "{file}");
        assert_eq!(final_total(&out, "rx_pause_frames"), t("pfc") + t("pause"), "{file}");
        // Per-priority pause rows carry the priority; paused time is positive where XOFF was seen.
        assert!(out.counter("rx_pause_frames").iter().all(|r| r.priority == Some(3)), "{file}");
        assert!(final_total(&out, "capture_paused_time_us") > 0, "{file}");
        // Every counter series starts with a zero row (a baseline for rates) and is monotonic.
        let mut series: BTreeMap<SeriesKey, Vec<(i64, u64)>> = BTreeMap::new();
        for r in &out.rows {
            assert!(r.is_counter && r.source == out.reports[0].format.unwrap().name());
            let common::V::U(v) = r.value else { panic!("integer values") };
            series.entry((r.counter.clone(), r.device.clone(), r.priority)).or_default().push((r.time_ns, v));
        }
        for (key, s) in &series {
            assert_eq!(s[0].1, 0, "{key:?}");
            assert!(s.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{key:?}");
            assert!(s.iter().all(|(t, _)| t % 1_000_000 == 0), "bins aligned");
        }
        // Per-flow binned aggregates add up to the same totals.
        let flows: Vec<&RecordBatch> =
            out.tables.iter().filter(|(n, _)| *n == "packet_flows").map(|(_, b)| b).collect();
        let col_sum = |name: &str| -> u64 {
            flows
                .iter()
                .map(|b| {
                    b.column_by_name(name)
                        .unwrap()
                        .as_primitive::<arrow_array::types::UInt64Type>()
                        .values()
                        .iter()
                        .sum::<u64>()
                })
                .sum()
        };
        assert_eq!(col_sum("retransmitted_packets"), t("retransmitted_packets"), "{file}");
        assert_eq!(col_sum("psn_gap_events"), t("psn_gap_events"), "{file}");
        assert!(col_sum("packets") > 0 && col_sum("packets") < t("roce"), "{file}");
        assert!(flows.iter().map(|b| b.num_rows()).sum::<usize>() >= 8, "{file}: one row per flow per bin");
        // Event times are real epoch nanoseconds and sorted within a file.
        let times: Vec<i64> = ev
            .iter()
            .flat_map(|b| b.column_by_name("time").unwrap().as_primitive::<TimestampNanosecondType>().values().to_vec())
            .collect();
        assert!(times.iter().all(|&t| t > 1_600_000_000_000_000_000));
    }
}

#[test]
fn pcapng_devices_are_interface_names_or_capture_index() {
    let out = read_with(&[cap("synth_roce_pfc_le.pcapng")], &ReadOptions::default()).unwrap();
    let mut devices: Vec<String> = out.rows.iter().map(|r| r.device.clone()).collect();
    devices.sort();
    devices.dedup();
    assert!(!devices.is_empty());
    assert!(devices.iter().all(|d| !d.is_empty()), "{devices:?}");
}

#[test]
fn pfc_pause_time_follows_link_speed() {
    let at = |gbps: u64| {
        let opts = ReadOptions { link_speed_bps: Some(gbps * 1_000_000_000), ..ReadOptions::default() };
        let out = read_with(&[cap("synth_roce_pfc_le_ns.pcap")], &opts).unwrap();
        let ev = events(&out);
        let b = &ev[0];
        let pause = b.column_by_name("pause_ns").unwrap().as_primitive::<arrow_array::types::UInt64Type>();
        let quanta = b.column_by_name("quanta").unwrap().as_primitive::<arrow_array::types::UInt16Type>();
        (0..b.num_rows())
            .filter(|&i| pause.is_valid(i))
            .map(|i| (u64::from(quanta.value(i)), pause.value(i)))
            .collect::<Vec<_>>()
    };
    let fast = at(400);
    let slow = at(100);
    assert!(!fast.is_empty());
    for ((q, p400), (_, p100)) in fast.iter().zip(&slow) {
        assert_eq!(*p400, q * 512 * 1_000_000_000 / 400_000_000_000);
        assert_eq!(*p100, q * 512 * 1_000_000_000 / 100_000_000_000);
    }
}

#[test]
fn gzip_compressed_capture() {
    use std::io::Write;
    let raw = std::fs::read(cap("synth_roce_pfc_le_ns.pcap")).unwrap();
    let mut enc = flate2_like_gzip(&raw);
    enc.flush().unwrap();
    let p = temp_file("c.pcap.gz", enc.get_ref());
    let out = read_with(&[p], &ReadOptions::default()).unwrap();
    assert_eq!(out.reports[0].format.unwrap().name(), "pcap");
    assert_eq!(kinds(&events(&out)).get("cnp"), Some(&14));
}

/// gzip by hand (stored blocks) so the test needs no extra dependency: deflate "stored" blocks
/// of at most 65535 bytes plus a CRC-32 trailer.
fn flate2_like_gzip(data: &[u8]) -> std::io::Cursor<Vec<u8>> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut chunks = data.chunks(65535).peekable();
    while let Some(c) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = c.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(c);
    }
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    out.extend_from_slice(&(!crc).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    std::io::Cursor::new(out)
}

// ---------------------------------------------------------------------------------------------
// Hostile inputs

fn pcap_header(snaplen: u32, linktype: u32) -> Vec<u8> {
    let mut h = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    h.extend_from_slice(&snaplen.to_le_bytes());
    h.extend_from_slice(&linktype.to_le_bytes());
    h
}

fn pcap_record(ts: u32, data: &[u8], incl: Option<u32>) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&ts.to_le_bytes());
    r.extend_from_slice(&0u32.to_le_bytes());
    r.extend_from_slice(&incl.unwrap_or(data.len() as u32).to_le_bytes());
    r.extend_from_slice(&(data.len() as u32).to_le_bytes());
    r.extend_from_slice(data);
    r
}

fn offset_of(e: &Error) -> (u64, String) {
    match e {
        Error::Format { position, expected, .. } => (position.byte_offset, expected.clone()),
        other => panic!("expected a format error, got {other}"),
    }
}

fn read_bytes(name: &str, bytes: &[u8], strict: bool) -> fabricscope_core::Result<common::Output> {
    let p = temp_file(name, bytes);
    read_with(&[p], &ReadOptions { strict, ..ReadOptions::default() })
}

#[test]
fn hostile_bad_magic_and_truncated_header() {
    // Not a capture at all: detection refuses it.
    assert!(matches!(
        read_bytes("x.pcap", &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0], true),
        Err(Error::UnknownFormat { .. })
    ));
    // Forced format with a bad magic: format error at byte 0.
    let p = temp_file("y.pcap", &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let e =
        read_with(&[p], &ReadOptions { format: fabricscope_core::Format::from_name("pcap"), ..ReadOptions::default() })
            .err()
            .unwrap();
    assert_eq!(offset_of(&e).0, 0);
    // Magic then 6 bytes: truncated file header.
    let e = read_bytes("t.pcap", &pcap_header(65535, 1)[..10], true).err().unwrap();
    assert_eq!(offset_of(&e).0, 0);
    assert!(e.to_string().contains("24-byte"), "{e}");
}

#[test]
fn hostile_truncated_record_strict_and_lenient() {
    let mut f = pcap_header(65535, 1);
    f.extend(pcap_record(1, &[0u8; 60], None));
    let second = f.len() as u64;
    let rec = pcap_record(2, &[0u8; 60], None);
    f.extend_from_slice(&rec[..40]); // header + part of the data
    let e = read_bytes("tr.pcap", &f, true).err().unwrap();
    assert_eq!(offset_of(&e).0, second);
    assert!(e.to_string().contains("truncated"), "{e}");
    let out = read_bytes("tr.pcap", &f, false).unwrap();
    assert_eq!(out.reports[0].bad_records, 1);
    assert_eq!(final_total(&out, "capture_packets"), 1);
    // Truncated record header.
    let mut g = pcap_header(65535, 1);
    g.extend_from_slice(&[1, 2, 3, 4, 5]);
    assert_eq!(offset_of(&read_bytes("th.pcap", &g, true).err().unwrap()).0, 24);
}

#[test]
fn hostile_caplen_above_snaplen_and_2_pow_31() {
    let mut f = pcap_header(96, 1);
    f.extend(pcap_record(1, &[0u8; 60], None));
    let off = f.len() as u64;
    f.extend(pcap_record(2, &[0u8; 60], Some(200)));
    let e = read_bytes("s.pcap", &f, true).err().unwrap();
    let (at, msg) = offset_of(&e);
    assert_eq!(at, off);
    assert!(msg.contains("snap length 96"), "{msg}");
    let out = read_bytes("s.pcap", &f, false).unwrap();
    assert_eq!((out.reports[0].bad_records, final_total(&out, "capture_packets")), (1, 1));

    let mut g = pcap_header(u32::MAX, 1);
    g.extend(pcap_record(2, &[0u8; 60], Some(0x8000_0000)));
    let (at, msg) = offset_of(&read_bytes("big.pcap", &g, true).err().unwrap());
    assert_eq!(at, 24);
    assert!(msg.contains("at most"), "{msg}");
}

#[test]
fn hostile_unknown_link_type() {
    let mut f = pcap_header(65535, 147); // LINKTYPE_USER0
    f.extend(pcap_record(1, &[0u8; 60], None));
    let (at, msg) = offset_of(&read_bytes("lt.pcap", &f, true).err().unwrap());
    assert_eq!(at, 20);
    assert!(msg.contains("link type"), "{msg}");
    let out = read_bytes("lt.pcap", &f, false).unwrap();
    assert_eq!(out.reports[0].bad_records, 1);
    assert_eq!(final_total(&out, "capture_packets"), 1, "counted, not decoded");
    assert!(out.tables.is_empty());
}

fn ng_block(btype: u32, body: &[u8]) -> Vec<u8> {
    let len = (12 + body.len().div_ceil(4) * 4) as u32;
    let mut b = btype.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(body);
    b.resize(len as usize - 4, 0);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

fn ng_start() -> Vec<u8> {
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut f = ng_block(0x0A0D_0D0A, &shb);
    let mut idb = vec![1, 0, 0, 0];
    idb.extend_from_slice(&65535u32.to_le_bytes());
    f.extend(ng_block(1, &idb));
    f
}

fn ng_epb(data: &[u8]) -> Vec<u8> {
    let mut b = 0u32.to_le_bytes().to_vec();
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&1_000_000u32.to_le_bytes());
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    ng_block(6, &b)
}

#[test]
fn hostile_pcapng_zero_length_block_and_length_mismatch() {
    let mut zero = ng_start();
    zero.extend(ng_epb(&[0u8; 60]));
    let off = zero.len() as u64;
    zero.extend_from_slice(&6u32.to_le_bytes());
    zero.extend_from_slice(&0u32.to_le_bytes());
    zero.extend_from_slice(&[0u8; 16]);
    let (at, msg) = offset_of(&read_bytes("z.pcapng", &zero, true).err().unwrap());
    assert_eq!(at, off);
    assert!(msg.contains("at least 12"), "{msg}");
    let out = read_bytes("z.pcapng", &zero, false).unwrap();
    assert_eq!((out.reports[0].bad_records, final_total(&out, "capture_packets")), (1, 1));

    // Trailing length differs from the leading one: error, or counted and skipped by length.
    let mut mismatch = ng_start();
    let off = mismatch.len() as u64;
    let mut bad = ng_epb(&[0u8; 60]);
    let blen = bad.len();
    bad[blen - 4] ^= 0x40;
    mismatch.extend(bad);
    mismatch.extend(ng_epb(&[0u8; 60]));
    let (at, msg) = offset_of(&read_bytes("m.pcapng", &mismatch, true).err().unwrap());
    assert_eq!(at, off);
    assert!(msg.contains("trailing block length"), "{msg}");
    let out = read_bytes("m.pcapng", &mismatch, false).unwrap();
    assert_eq!((out.reports[0].bad_records, final_total(&out, "capture_packets")), (1, 2));

    // Captured length beyond the block; packet on an undeclared interface.
    let mut beyond = ng_start();
    let mut epb = ng_epb(&[0u8; 60]);
    epb[20..24].copy_from_slice(&5000u32.to_le_bytes());
    let off = beyond.len() as u64;
    beyond.extend(epb);
    assert_eq!(offset_of(&read_bytes("c.pcapng", &beyond, true).err().unwrap()).0, off);
    let mut undeclared = ng_start();
    let mut epb = ng_epb(&[0u8; 60]);
    epb[8..12].copy_from_slice(&7u32.to_le_bytes());
    undeclared.extend(epb);
    undeclared.extend(ng_epb(&[0u8; 60]));
    let out = read_bytes("i.pcapng", &undeclared, false).unwrap();
    assert_eq!((out.reports[0].bad_records, final_total(&out, "capture_packets")), (1, 1));
}

#[test]
fn hostile_truncations_never_panic() {
    // Every prefix and a few corruptions of real captures: errors or rows, never a panic.
    for file in ["synth_roce_pfc_le.pcapng", "synth_roce_pfc_be_ns.pcap", "pcapng-test-generator/be_test202.pcapng"] {
        let raw = std::fs::read(cap(file)).unwrap();
        for cut in (0..raw.len()).step_by(389).chain([raw.len() - 1]) {
            let _ = capture_stats(&raw[..cut], false);
            let _ = capture_stats(&raw[..cut], true);
        }
        for i in (0..raw.len()).step_by(211) {
            let mut c = raw.clone();
            c[i] ^= 0xA5;
            let _ = capture_stats(&c, false);
        }
    }
}

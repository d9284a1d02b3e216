//! Generated RoCEv2 + PFC captures: one small capture in which every event kind occurs (its
//! events, per-flow rows and binned samples are pinned exactly, so a faster reader must produce
//! the same tables), and an ignored throughput probe on 128-byte snapshots:
//!
//! ```text
//! cargo test --profile profiling -p fabricscope-core --test core pcap_generated:: -- --ignored --nocapture
//! ```
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use common::{Output, read_with, temp_file};
use fabricscope_core::packets::{capture_stats, decode};
use fabricscope_core::{Event, ReadOptions, read_paths};

// ---------------------------------------------------------------------------------------------
// Frame builders (network byte order, as on the wire)

/// A deterministic generator (64-bit LCG, Knuth's MMIX constants): no dependency, same bytes
/// on every platform.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() as f64) / f64::from(1u32 << 31)
    }
}

#[derive(Clone, Copy)]
struct QueuePair {
    v6: bool,
    tags: u8,
    pcp: u8,
    src: [u8; 16],
    dst: [u8; 16],
    qp: u32,
    psn: u32,
}

fn eth(ethertype: u16, tags: u8, pcp: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    if tags >= 2 {
        f.extend_from_slice(&0x88A8u16.to_be_bytes());
        f.extend_from_slice(&((u16::from(pcp) << 13) | 0x64).to_be_bytes());
    }
    if tags >= 1 {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&((u16::from(pcp) << 13) | 0x0A).to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

/// A RoCEv2 packet: Ethernet (+ tags), IPv4/IPv6 with `tos`, UDP 4791, `transport` (BTH and
/// extension headers), `payload` zero bytes, 4-byte ICRC.
fn roce(q: &QueuePair, reverse: bool, tos: u8, transport: &[u8], payload: usize) -> Vec<u8> {
    let (src, dst) = if reverse { (q.dst, q.src) } else { (q.src, q.dst) };
    let udp_len = 8 + transport.len() + payload + 4;
    let mut f = eth(if q.v6 { 0x86DD } else { 0x0800 }, q.tags, q.pcp);
    if q.v6 {
        let word = (6u32 << 28) | (u32::from(tos) << 20);
        f.extend_from_slice(&word.to_be_bytes());
        f.extend_from_slice(&(udp_len as u16).to_be_bytes());
        f.extend_from_slice(&[17, 64]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
    } else {
        f.extend_from_slice(&[0x45, tos]);
        f.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
        f.extend_from_slice(&src[..4]);
        f.extend_from_slice(&dst[..4]);
    }
    f.extend_from_slice(&0xC000u16.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(transport);
    f.resize(f.len() + payload + 4, 0);
    f
}

fn bth(opcode: u8, qp: u32, psn: u32) -> Vec<u8> {
    let mut b = vec![opcode, 0, 0xFF, 0xFF];
    b.extend_from_slice(&(qp & 0x00FF_FFFF).to_be_bytes());
    b.extend_from_slice(&(psn & 0x00FF_FFFF).to_be_bytes());
    b
}

fn with_reth(mut b: Vec<u8>, dma_len: u32) -> Vec<u8> {
    b.extend_from_slice(&[0; 12]); // virtual address, rkey
    b.extend_from_slice(&dma_len.to_be_bytes());
    b
}

fn with_aeth(mut b: Vec<u8>, syndrome: u8, msn: u32) -> Vec<u8> {
    b.extend_from_slice(&((u32::from(syndrome) << 24) | (msn & 0x00FF_FFFF)).to_be_bytes());
    b
}

/// 802.1Qbb PFC frame: `enable` vector and eight quanta.
fn pfc(enable: u8, quanta: [u16; 8]) -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xC2, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    f.extend_from_slice(&0x8808u16.to_be_bytes());
    f.extend_from_slice(&0x0101u16.to_be_bytes());
    f.extend_from_slice(&u16::from(enable).to_be_bytes());
    for q in quanta {
        f.extend_from_slice(&q.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

/// 802.3x PAUSE frame.
fn pause(quanta: u16) -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xC2, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    f.extend_from_slice(&0x8808u16.to_be_bytes());
    f.extend_from_slice(&0x0001u16.to_be_bytes());
    f.extend_from_slice(&quanta.to_be_bytes());
    f.resize(60, 0);
    f
}

fn qps(n: u32) -> Vec<QueuePair> {
    (0..n)
        .map(|q| {
            let v6 = q % 8 == 7;
            let mut src = [0u8; 16];
            let mut dst = [0u8; 16];
            if v6 {
                src[0] = 0xFD;
                dst[0] = 0xFD;
                dst[7] = 1;
                src[12..].copy_from_slice(&q.to_be_bytes());
                dst[12..].copy_from_slice(&q.to_be_bytes());
            } else {
                src[..4].copy_from_slice(&(0x0A00_0001 + q).to_be_bytes());
                dst[..4].copy_from_slice(&(0x0A10_0001 + q).to_be_bytes());
            }
            let tags = if q % 16 == 5 { 2 } else { u8::from(q % 4 == 1) };
            QueuePair { v6, tags, pcp: 3, src, dst, qp: 0x100 + q, psn: (q * 0x0003_1337) & 0x00FF_FFFF }
        })
        .collect()
}

/// Classic pcap, little-endian, nanosecond magic, LINKTYPE_ETHERNET.
fn write_pcap(frames: &[(i64, Vec<u8>)], snaplen: Option<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xA1B2_3C4Du32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&snaplen.unwrap_or(262_144).to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (t, f) in frames {
        let incl = snaplen.map_or(f.len(), |s| f.len().min(s as usize));
        out.extend_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(incl as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&f[..incl]);
    }
    out
}

fn ng_block(out: &mut Vec<u8>, btype: u32, body: &[u8]) {
    let padded = body.len().div_ceil(4) * 4;
    let len = (12 + padded) as u32;
    out.extend_from_slice(&btype.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + padded - body.len(), 0);
    out.extend_from_slice(&len.to_le_bytes());
}

/// pcapng, little-endian: interface 0 (µs, named), interface 1 (ns via if_tsresol, 100 Gb/s
/// if_speed). Packets alternate between the interfaces in EPBs; every 50th is an SPB.
fn write_pcapng(frames: &[(i64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    ng_block(&mut out, 0x0A0D_0D0A, &shb);
    let idb = |opts: &[(u16, &[u8])]| {
        let mut b = Vec::new();
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for (code, v) in opts {
            b.extend_from_slice(&code.to_le_bytes());
            b.extend_from_slice(&(v.len() as u16).to_le_bytes());
            b.extend_from_slice(v);
            b.resize(b.len().div_ceil(4) * 4, 0);
        }
        b.extend_from_slice(&[0; 4]);
        b
    };
    ng_block(&mut out, 1, &idb(&[(2, b"mlx5_0")]));
    ng_block(&mut out, 1, &idb(&[(2, b"mlx5_1"), (9, &[9]), (8, &100_000_000_000u64.to_le_bytes())]));
    for (i, (t, f)) in frames.iter().enumerate() {
        if i % 50 == 49 {
            let mut b = Vec::new();
            b.extend_from_slice(&(f.len() as u32).to_le_bytes());
            b.extend_from_slice(f);
            ng_block(&mut out, 3, &b);
            continue;
        }
        let iface = (i % 2) as u32;
        let units = if iface == 0 { (*t / 1000) as u64 } else { *t as u64 };
        let mut b = Vec::new();
        b.extend_from_slice(&iface.to_le_bytes());
        b.extend_from_slice(&((units >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(units as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
        ng_block(&mut out, 6, &b);
    }
    out
}

/// A capture in which every event kind and every counter occurs, over several 1 ms bins.
fn every_event_frames() -> Vec<(i64, Vec<u8>)> {
    let mut rng = Lcg(4791);
    let mut pairs = qps(12);
    let mut frames = Vec::new();
    let mut time: i64 = 1_700_000_000_000_000_000;
    for i in 0..3000usize {
        time += 1_000 + (rng.next() % 2_000) as i64;
        let count = pairs.len();
        let qp = &mut pairs[i % count];
        let pick = rng.unit();
        let frame = if i % 97 == 0 {
            let on = (i / 97) % 3 != 2;
            let quanta = if on { [0, 0, 0, 0xFFFF, 0, 0x40, 0, 0] } else { [0; 8] };
            pfc(0b0010_1000, quanta)
        } else if i % 211 == 0 {
            pause(if (i / 211) % 2 == 0 { 0x200 } else { 0 })
        } else if i % 173 == 0 {
            // Not IP: ARP.
            let mut f = eth(0x0806, 0, 0);
            f.resize(60, 0);
            f
        } else if pick < 0.08 {
            // ACK, RNR NAK, NAK sequence error, other NAK (invalid request).
            let syndrome = match rng.next() % 8 {
                0 => 0x20 | (rng.next() % 32) as u8,
                1 => 0x60,
                2 => 0x61 + (rng.next() % 3) as u8,
                _ => 0x1F,
            };
            roce(qp, true, 0x6A, &with_aeth(bth(0x11, qp.qp + 0x1000, qp.psn), syndrome, i as u32), 0)
        } else if pick < 0.10 {
            roce(qp, true, 0xC2, &[bth(0x81, qp.qp + 0x1000, 0), vec![0; 16]].concat(), 0)
        } else if pick < 0.12 {
            // READ request: reserves ceil(len / PMTU) PSNs.
            let len = 256 + (rng.next() % 8192) as u32;
            let f = roce(qp, false, 0x6A, &with_reth(bth(0x0C, qp.qp, qp.psn), len), 0);
            qp.psn = (qp.psn + len.div_ceil(1024)) & 0x00FF_FFFF;
            f
        } else if pick < 0.14 {
            // READ responses (first / middle / last / only) in the reverse direction.
            let op = 0x0D + (rng.next() % 4) as u8;
            let b = if op == 0x0E { bth(op, qp.qp + 0x1000, 0) } else { with_aeth(bth(op, qp.qp + 0x1000, 0), 0, 0) };
            roce(qp, true, 0x6A, &b, if op == 0x10 { 64 } else { 1024 })
        } else if pick < 0.15 {
            // UD SEND ONLY: no per-flow sequence.
            roce(qp, false, 0x6A, &[bth(0x64, qp.qp, qp.psn), vec![0; 8]].concat(), 256)
        } else {
            // RDMA WRITE first/middle/last/only and SEND, CE now and then, gaps and retransmissions.
            let draw = rng.unit();
            if draw < 0.01 {
                qp.psn = (qp.psn + 1 + (rng.next() % 3) as u32) & 0x00FF_FFFF; // lost before the capture point
            } else if draw < 0.02 {
                qp.psn = qp.psn.wrapping_sub(2 + (rng.next() % 3) as u32) & 0x00FF_FFFF; // go-back-N
            }
            let tos = if rng.unit() < 0.04 { 0x6B } else { 0x6A };
            let (op, b) = match rng.next() % 5 {
                0 => (0x06, with_reth(bth(0x06, qp.qp, qp.psn), 4096)),
                1 => (0x07, bth(0x07, qp.qp, qp.psn)),
                2 => (0x08, bth(0x08, qp.qp, qp.psn)),
                3 => (0x0A, with_reth(bth(0x0A, qp.qp, qp.psn), 512)),
                _ => (0x04, bth(0x04, qp.qp, qp.psn)),
            };
            qp.psn = (qp.psn + 1) & 0x00FF_FFFF;
            roce(qp, false, tos, &b, if op == 0x06 || op == 0x07 { 1024 } else { 512 })
        };
        frames.push((time, frame));
    }
    // A PSN wrap on one flow, and an IPv4 later fragment (no UDP header to read).
    let mut w = pairs[0];
    w.psn = 0x00FF_FFFE;
    for _ in 0..4 {
        time += 1_000;
        frames.push((time, roce(&w, false, 0x6A, &bth(0x04, w.qp, w.psn), 64)));
        w.psn = (w.psn + 1) & 0x00FF_FFFF;
    }
    let mut frag = roce(&pairs[1], false, 0x6B, &bth(0x04, pairs[1].qp, 0), 64);
    let ip = 14 + 4 * usize::from(pairs[1].tags);
    frag[ip + 6] = 0x00;
    frag[ip + 7] = 0x10;
    frames.push((time + 1_000, frag));
    frames
}

// ---------------------------------------------------------------------------------------------
// Rendering the output tables as text (logical values: dictionary columns resolved)

fn cell(batch: &RecordBatch, col: usize, row: usize) -> String {
    let a = batch.column(col);
    if a.is_null(row) {
        return "-".into();
    }
    match a.data_type() {
        DataType::Dictionary(..) => {
            let d = a.as_dictionary::<Int32Type>();
            d.values().as_string::<i32>().value(d.keys().value(row) as usize).to_owned()
        }
        DataType::Utf8 => a.as_string::<i32>().value(row).to_owned(),
        DataType::Timestamp(..) => a.as_primitive::<TimestampNanosecondType>().value(row).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(row).to_string(),
        DataType::UInt16 => a.as_primitive::<UInt16Type>().value(row).to_string(),
        DataType::UInt8 => a.as_primitive::<UInt8Type>().value(row).to_string(),
        other => panic!("unexpected column type {other}"),
    }
}

fn render_table(out: &Output, name: &str) -> String {
    let mut s = String::new();
    for (n, b) in &out.tables {
        if *n != name {
            continue;
        }
        for row in 0..b.num_rows() {
            let cells: Vec<String> = (0..b.num_columns()).map(|c| cell(b, c, row)).collect();
            writeln!(s, "{}", cells.join(",")).unwrap();
        }
    }
    s
}

fn render_samples(out: &Output) -> String {
    let mut s = String::new();
    for r in &out.rows {
        writeln!(s, "{r:?}").unwrap();
    }
    s
}

/// FNV-1a 64: a stable digest to pin a whole table.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn kind_counts(out: &Output) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (n, b) in &out.tables {
        if *n != "packet_events" {
            continue;
        }
        let d = b.column_by_name("kind").unwrap().as_dictionary::<Int32Type>();
        let v = d.values().as_string::<i32>();
        for k in d.keys().values() {
            *m.entry(v.value(*k as usize).to_owned()).or_insert(0) += 1;
        }
    }
    m
}

fn read_generated(name: &str, bytes: &[u8]) -> Output {
    let p = temp_file(name, bytes);
    let opts = ReadOptions { host: Some("gpu01".into()), bin_ns: 1_000_000, ..ReadOptions::default() };
    let out = read_with(&[p], &opts).unwrap();
    assert_eq!(out.reports[0].bad_records, 0, "{name}");
    out
}

struct Pinned {
    kinds: [(&'static str, u64); 10],
    events: usize,
    flows: usize,
    samples: usize,
    digest: [u64; 3],
}

fn check(name: &str, bytes: &[u8], want: &Pinned) {
    let out = read_generated(name, bytes);
    let events = render_table(&out, "packet_events");
    let flows = render_table(&out, "packet_flows");
    let samples = render_samples(&out);
    let kinds = kind_counts(&out);
    let got_kinds: Vec<(String, u64)> = kinds.into_iter().collect();
    let want_kinds: Vec<(String, u64)> = want.kinds.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
    let got = (events.lines().count(), flows.lines().count(), out.rows.len());
    let digest = [fnv(&events), fnv(&flows), fnv(&samples)];
    if std::env::var_os("PCAP_GENERATED_PRINT").is_some() {
        println!("{name}: kinds {got_kinds:?} rows {got:?} digest {digest:#x?}");
    }
    assert_eq!(got_kinds, want_kinds, "{name}");
    assert_eq!(got, (want.events, want.flows, want.samples), "{name}");
    assert_eq!(digest, want.digest, "{name}: the tables changed (set PCAP_GENERATED_PRINT=1 to see)");
    // The statistics-only path agrees with the driver.
    let (stats, bad) = capture_stats(bytes, true).unwrap();
    assert_eq!(bad, 0);
    assert_eq!(stats.ce, want.kinds.iter().find(|k| k.0 == "ce").unwrap().1, "{name}");
    assert_eq!(stats.cnp, want.kinds.iter().find(|k| k.0 == "cnp").unwrap().1, "{name}");
    assert_eq!(stats.psn_gap_events, want.kinds.iter().find(|k| k.0 == "psn_gap").unwrap().1, "{name}");
}

const KINDS: [(&str, u64); 10] = [
    ("ce", 108),
    ("cnp", 52),
    ("nak_other", 23),
    ("nak_seq", 26),
    ("pause", 14),
    ("pfc_xoff", 42),
    ("pfc_xon", 20),
    ("psn_gap", 29),
    ("retransmitted", 87),
    ("rnr_nak", 30),
];

/// Classic pcap and its 128-byte snapshot give the same tables: `length` is the wire length and
/// every header the analysis reads lies within the first 128 bytes.
const CLASSIC: Pinned = Pinned {
    kinds: KINDS,
    events: 431,
    flows: 72,
    samples: 219,
    digest: [0x1ea2_17b2_523f_36ba, 0x697f_d37b_4f2d_e390, 0xec32_9163_d2bc_80d1],
};

#[test]
fn every_event_kind_full_frames_pcap() {
    check("full.pcap", &write_pcap(&every_event_frames(), None), &CLASSIC);
}

#[test]
fn every_event_kind_128_byte_snapshots_pcap() {
    check("snap128.pcap", &write_pcap(&every_event_frames(), Some(128)), &CLASSIC);
}

#[test]
fn every_event_kind_pcapng_two_interfaces() {
    // Two interfaces (two devices in the samples), one with 100 Gb/s if_speed for PFC time.
    let want = Pinned {
        kinds: KINDS,
        events: 431,
        flows: 72,
        samples: 401,
        digest: [0xfac3_a50f_013e_4f72, 0xc54a_8982_43cd_a81c, 0xb03f_91f2_e237_ba4e],
    };
    check("two.pcapng", &write_pcapng(&every_event_frames()), &want);
}

#[test]
fn streaming_through_the_buffer_matches_reading_from_memory() {
    // ~45 MB of full frames: with a 64 KiB first chunk the reader leaves the driver's bytes after
    // a few records and streams the rest through its buffer (refills, records cut at the buffer
    // edge, one 3 MiB enhanced packet block that makes the buffer grow); with a 64 MiB first
    // chunk everything is parsed in place. Same tables either way.
    let mut frames = bench_frames(40_000);
    let mut jumbo = frames[20_000].1.clone();
    jumbo.resize(3 << 20, 0);
    frames[20_000].1 = jumbo;
    let classic: Vec<(i64, Vec<u8>)> = frames.iter().filter(|(_, f)| f.len() < 1 << 16).cloned().collect();
    for (name, bytes) in [("stream.pcap", write_pcap(&classic, None)), ("stream.pcapng", write_pcapng(&frames))] {
        let p = temp_file(name, &bytes);
        let render = |chunk_bytes: usize| {
            let opts = ReadOptions { host: Some("gpu01".into()), chunk_bytes, ..ReadOptions::default() };
            let out = read_with(std::slice::from_ref(&p), &opts).unwrap();
            assert_eq!(out.reports[0].bad_records, 0, "{name}");
            assert_eq!(out.reports[0].bytes, bytes.len() as u64, "{name}");
            (render_table(&out, "packet_events"), render_table(&out, "packet_flows"), render_samples(&out))
        };
        let streamed = render(64 << 10);
        let in_place = render(64 << 20);
        assert!(streamed.0.lines().count() > 500, "{name}: events present");
        assert!(streamed == in_place, "{name}: streamed and in-place reads differ");
        let (stats, _) = capture_stats(&bytes, true).unwrap();
        assert_eq!(stats.packets, if name.ends_with("ng") { 40_000 } else { 39_999 }, "{name}");
    }
}

#[test]
fn corrupted_generated_captures_never_panic() {
    // Random byte corruptions (lengths, block types, interface ids, header fields) of both
    // containers: lenient reads finish and count what they skip; strict reads either succeed
    // or stop with a format error that names a byte offset inside the input.
    let frames = every_event_frames();
    let mut rng = Lcg(17);
    for original in [write_pcap(&frames, Some(128)), write_pcapng(&frames)] {
        for round in 0..200 {
            let mut bytes = original.clone();
            for _ in 0..=round % 8 {
                let at = (rng.next() as usize) % bytes.len();
                bytes[at] = match rng.next() % 4 {
                    0 => 0xFF,
                    1 => 0,
                    _ => rng.next() as u8,
                };
            }
            if round % 10 == 0 {
                bytes.truncate((rng.next() as usize) % bytes.len());
            }
            let lenient = capture_stats(&bytes, false);
            if let Ok((stats, _bad)) = &lenient {
                assert!(stats.packets <= frames.len() as u64 * 2, "round {round}");
            }
            match capture_stats(&bytes, true) {
                Ok(_) => {}
                Err(fabricscope_core::Error::Format { position, .. }) => {
                    assert!(position.byte_offset <= bytes.len() as u64, "round {round}");
                }
                Err(other) => panic!("round {round}: unexpected error {other}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Throughput probe (ignored: timing never runs in the test suite)

/// The benchmark's traffic (bench/bench_pcap.py): 64 QPs of RDMA WRITE MIDDLE packets with
/// 1 KiB payloads, ~10 % ACKs, 1 % CNPs, 1 % CE marks, a PSN gap now and then, IPv6 and
/// 802.1Q / QinQ mixed in, a PFC XOFF / XON every 1000 packets.
fn bench_frames(packets: usize) -> Vec<(i64, Vec<u8>)> {
    let mut rng = Lcg(4791);
    let mut q = qps(64);
    let mut t: i64 = 1_700_000_000_000_000_000;
    let mut frames = Vec::with_capacity(packets);
    for i in 0..packets {
        let r = rng.unit();
        let qp = &mut q[i % 64];
        let frame = if i % 1000 == 999 {
            pfc(0x08, if (i / 1000) % 2 == 0 { [0, 0, 0, 0xFFFF, 0, 0, 0, 0] } else { [0; 8] })
        } else if r < 0.10 {
            roce(qp, true, 0x6A, &with_aeth(bth(0x11, qp.qp + 0x1000, qp.psn), 0x1F, 0), 0)
        } else if r < 0.11 {
            roce(qp, true, 0xC2, &[bth(0x81, qp.qp + 0x1000, 0), vec![0; 16]].concat(), 0)
        } else {
            if rng.unit() < 0.0002 {
                qp.psn = (qp.psn + 1) & 0x00FF_FFFF;
            }
            let f = roce(qp, false, if r > 0.99 { 0x6B } else { 0x6A }, &bth(0x07, qp.qp, qp.psn), 1024);
            qp.psn = (qp.psn + 1) & 0x00FF_FFFF;
            f
        };
        t += 25 + (i & 7) as i64;
        frames.push((t, frame));
    }
    frames
}

/// CPU nanoseconds of every thread of this process so far (Linux `schedstat`; 0 elsewhere):
/// less sensitive to other jobs on a shared machine than wall time.
fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
    dir.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Best wall seconds and best CPU seconds of `n` runs, and the last run's result.
fn best_of(n: usize, mut f: impl FnMut() -> u64) -> (f64, f64, u64) {
    let mut best = f64::INFINITY;
    let mut best_cpu = f64::INFINITY;
    let mut out = 0;
    for _ in 0..n {
        let c0 = cpu_ns();
        let t0 = Instant::now();
        out = f();
        best = best.min(t0.elapsed().as_secs_f64());
        best_cpu = best_cpu.min((cpu_ns().saturating_sub(c0)) as f64 / 1e9);
    }
    (best, best_cpu, out)
}

#[test]
#[ignore = "throughput probe: run with --ignored --nocapture in the profiling profile"]
fn throughput_128_byte_snapshots() {
    let packets: usize = std::env::var("PCAP_PACKETS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let repeat: usize = std::env::var("PCAP_REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let bytes = write_pcap(&bench_frames(packets), Some(128));
    println!("capture: {packets} packets, {:.1} MB (128-byte snapshots), best of {repeat}", bytes.len() as f64 / 1e6);
    println!("{:<58} {:>8} {:>9} {:>9}", "best of the runs", "wall s", "M pkt/s", "M pkt/CPU-s");
    let rate = |label: &str, (s, cpu, n): (f64, f64, u64)| {
        let m = packets as f64 / 1e6;
        println!("{label:<58} {s:>8.3} {:>9.2} {:>9.2}  ({n})", m / s, m / cpu);
    };
    // PCAP_DRIVER_ONLY=1: only the driver, for `perf record`.
    let all = std::env::var_os("PCAP_DRIVER_ONLY").is_none();
    // 1. Framing only: walk the record headers.
    if all {
        rate(
            "framing only (record headers)",
            best_of(repeat, || {
                let mut off = 24usize;
                let mut n = 0u64;
                while off + 16 <= bytes.len() {
                    let incl = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
                    n += u64::from(bytes[off + 16]);
                    off += 16 + incl;
                }
                n
            }),
        );
        // 2. Framing + header decode (no analysis).
        rate(
            "framing + decode::decode",
            best_of(repeat, || {
                let mut off = 24usize;
                let mut n = 0u64;
                while off + 16 <= bytes.len() {
                    let incl = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
                    let f = decode::decode(1, &bytes[off + 16..off + 16 + incl]).unwrap();
                    n += u64::from(f.roce.map_or(0, |r| r.psn & 1)) + u64::from(f.ecn);
                    off += 16 + incl;
                }
                n
            }),
        );
        // 3. The analysis with its Arrow event and flow tables, no samples table (capture_stats).
        rate(
            "capture_stats (analysis + event/flow Arrow, no samples)",
            best_of(repeat, || capture_stats(&bytes, true).unwrap().0.packets),
        );
    }
    // 4. The driver end to end from a file (page cache): what `fabricscope.read` runs.
    let path = temp_file("throughput_snap128.pcap", &bytes);
    let opts = ReadOptions { host: Some("bench".into()), ..ReadOptions::default() };
    rate(
        "driver: read_paths(file) end to end",
        best_of(repeat, || {
            let rows = std::sync::atomic::AtomicU64::new(0);
            let sink = |ev: Event| {
                if let Event::Table { batch, .. } = ev {
                    rows.fetch_add(batch.num_rows() as u64, std::sync::atomic::Ordering::Relaxed);
                }
                true
            };
            let reports = read_paths(std::slice::from_ref(&path), &opts, &sink).unwrap();
            assert_eq!(reports[0].bad_records, 0);
            rows.into_inner()
        }),
    );
}

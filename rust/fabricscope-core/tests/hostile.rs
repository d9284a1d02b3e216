//! Hostile input against the driver's resource limits, and regressions for what fuzzing found.
//! The Python corpus in `tests/hostile/` covers every format end to end; these tests
//! pin the core's own guarantees: decompression bombs stop at a named limit on every reader path,
//! whole-document readers are bounded, and `read_bytes` is the same driver as `read_paths`.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

use common::{fixture, read_with, rows_of, temp_file};
use fabricscope_core::read::RATIO_GRACE_BYTES;
use fabricscope_core::{Error, Event, Format, Limits, Position, ReadOptions, read_bytes};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn opts(limits: Limits) -> ReadOptions {
    ReadOptions { time_ns: Some(1_764_686_822_000_000_000), host: Some("h".into()), limits, ..ReadOptions::default() }
}

/// A valid Prometheus head followed by about `n` bytes of 1 KiB comment lines: the reader keeps
/// reading (comments are legal), so only the decompression limits can stop it.
fn prometheus_then_blank_lines(n: usize) -> Vec<u8> {
    let mut text = b"# TYPE x counter\nx 1\n".to_vec();
    let mut line = vec![b' '; 1024];
    line[0] = b'#';
    line[1023] = b'\n';
    while text.len() < n {
        text.extend_from_slice(&line);
    }
    text
}

#[test]
fn zstd_bomb_stops_at_the_ratio_limit_after_the_grace() {
    let plain = prometheus_then_blank_lines(80 << 20);
    let bomb = zstd::encode_all(&plain[..], 3).unwrap();
    assert!(bomb.len() < 100 << 10, "a bomb: {} compressed bytes", bomb.len());
    let err = read_bytes(&bomb, Path::new("bomb.prom.zst"), &opts(Limits::default()), &|_| true).unwrap_err();
    match err {
        Error::LimitExceeded { what, limit, option, position, .. } => {
            assert_eq!((what, limit, option), ("decompression ratio", 250, "max_decompression_ratio"));
            assert!(position.byte_offset >= RATIO_GRACE_BYTES - (1 << 20), "{position}");
            assert!(position.byte_offset <= RATIO_GRACE_BYTES + (1 << 20), "{position}");
        }
        other => panic!("expected a ratio limit, got {other}"),
    }
    // Raising the limit reads it all: one row, every blank line consumed.
    let raised = Limits { max_decompression_ratio: u64::MAX, ..Limits::default() };
    let report = read_bytes(&bomb, Path::new("bomb.prom.zst"), &opts(raised), &|_| true).unwrap();
    assert_eq!((report.rows, report.bytes), (1, plain.len() as u64));
}

#[test]
fn decompressed_size_limit_names_the_option_and_the_offset() {
    let plain = prometheus_then_blank_lines(3 << 20);
    let limits = Limits { max_decompressed_bytes: 1 << 20, ..Limits::default() };
    let p = temp_file("big.prom.gz", &gzip(&plain));
    let err = read_with(std::slice::from_ref(&p), &opts(limits)).err().unwrap();
    let Error::LimitExceeded { path, option, limit, position, .. } = &err else { panic!("{err}") };
    assert_eq!((path.as_path(), *option, *limit), (p.as_path(), "max_decompressed_bytes", 1 << 20));
    assert!(position.byte_offset <= 1 << 20, "{position}");
    assert!(err.to_string().contains("raise it with max_decompressed_bytes"), "{err}");
    // Lenient mode cannot skip past a bomb: the input fails, named in its report, and the
    // other inputs are still read.
    let good = temp_file("good.prom", b"y_total{instance=\"h\"} 5 1764686822000\n");
    let lenient = ReadOptions { strict: false, ..opts(limits) };
    let out = read_with(&[p, good], &lenient).unwrap();
    assert!(out.reports[0].failed);
    assert!(out.reports[0].errors[0].contains("max_decompressed_bytes"), "{:?}", out.reports[0].errors);
    assert_eq!(out.rows.len(), 1);
}

#[test]
fn decompression_limits_also_bound_binary_readers() {
    // Once only the line loop checked max_decompressed_bytes: a compressed capture or
    // UFM JSON document could expand without bound.
    let pcap = std::fs::read(fixture("captures/synth_roce_pfc_le_us.pcap")).unwrap();
    assert!(pcap.len() > 4096);
    let limits = Limits { max_decompressed_bytes: 2048, ..Limits::default() };
    let err = read_bytes(&gzip(&pcap), Path::new("cap.pcap.gz"), &opts(limits), &|_| true).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { option: "max_decompressed_bytes", limit: 2048, .. }), "{err}");

    let json = std::fs::read(fixture("ib/ufm/small_telemetry.json")).unwrap();
    let limits = Limits { max_decompressed_bytes: (json.len() / 2) as u64, ..Limits::default() };
    let err = read_bytes(&gzip(&json), Path::new("ufm.json.gz"), &opts(limits), &|_| true).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { option: "max_decompressed_bytes", .. }), "{err}");
}

#[test]
fn whole_document_readers_are_bounded_by_max_document_bytes() {
    let json = std::fs::read(fixture("ib/ufm/small_telemetry.json")).unwrap();
    let limits = Limits { max_document_bytes: 100, ..Limits::default() };
    let err = read_bytes(&json, Path::new("ufm.json"), &opts(limits), &|_| true).unwrap_err();
    match err {
        Error::LimitExceeded { option, limit, position, .. } => {
            assert_eq!((option, limit), ("max_document_bytes", 100));
            assert_eq!(position, Position { line: None, byte_offset: 100 });
        }
        other => panic!("expected max_document_bytes, got {other}"),
    }
    let report = read_bytes(&json, Path::new("ufm.json"), &opts(Limits::default()), &|_| true).unwrap();
    assert!(report.rows > 0);
    // Every whole-document reader shares the one bound and its one override.
    for (rel, format) in
        [("nccl-tests/constructed-report.json", Format::NcclTestsJson), ("cxl/cxl-list-memdevs.json", Format::CxlList)]
    {
        let doc = std::fs::read(fixture(rel)).unwrap();
        let o = ReadOptions { format: Some(format), ..opts(Limits { max_document_bytes: 64, ..Limits::default() }) };
        let err = read_bytes(&doc, Path::new(rel), &o, &|_| true).unwrap_err();
        assert!(matches!(err, Error::LimitExceeded { option: "max_document_bytes", limit: 64, .. }), "{rel}: {err}");
        let o = ReadOptions { format: Some(format), ..opts(Limits::default()) };
        read_bytes(&doc, Path::new(rel), &o, &|_| true).unwrap();
    }
}

#[test]
fn read_bytes_is_the_same_driver_as_read_paths() {
    for (rel, format) in [
        ("prometheus/dcgm.prom", Format::Prometheus),
        ("ib/constructed/ibdiagnet2.db_csv", Format::IbdiagnetDbCsv),
        ("captures/synth_roce_pfc_le.pcapng", Format::Pcapng),
    ] {
        let path = fixture(rel);
        let data = std::fs::read(&path).unwrap();
        let o = opts(Limits::default());
        let from_file = read_with(std::slice::from_ref(&path), &o).unwrap();
        let rows = Mutex::new(Vec::new());
        let sink = |ev: Event| {
            if let Event::Samples(b) = ev {
                rows.lock().unwrap().extend(rows_of(&b));
            }
            true
        };
        let report = read_bytes(&data, &path, &o, &sink).unwrap();
        assert_eq!(report.format, Some(format), "{rel}");
        assert_eq!(rows.into_inner().unwrap(), from_file.rows, "{rel}");
        assert_eq!(report.bytes, from_file.reports[0].bytes, "{rel}");
    }
}

#[test]
fn a_label_count_bomb_is_one_limit_error_per_line_in_lenient_mode() {
    let labels: Vec<String> = (0..10_000).map(|i| format!("l{i}=\"v\"")).collect();
    let text = format!(
        "ok_total{{instance=\"h\"}} 1 1764686822000\nbomb_total{{{}}} 1 1764686822000\nok2_total{{instance=\"h\"}} 2 1764686822000\n",
        labels.join(",")
    );
    let p = temp_file("labels.prom", text.as_bytes());
    let err = read_with(std::slice::from_ref(&p), &opts(Limits::default())).err().unwrap();
    assert!(
        matches!(
            err,
            Error::LimitExceeded { option: "max_labels", limit: 128, position: Position { line: Some(2), .. }, .. }
        ),
        "{err}"
    );
    let out = read_with(&[p], &ReadOptions { strict: false, ..opts(Limits::default()) }).unwrap();
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (2, 1));
}

/// Rows of the `links` table an input produced.
fn links_of(data: &[u8], format: Format, strict: bool) -> Result<(usize, u64), Error> {
    let n = Mutex::new(0usize);
    let sink = |ev: Event| {
        if let Event::Table { name: "links", batch } = ev {
            *n.lock().unwrap() += batch.num_rows();
        }
        true
    };
    let o = ReadOptions { format: Some(format), strict, ..opts(Limits::default()) };
    let report = read_bytes(data, Path::new("cut.txt"), &o, &sink)?;
    Ok((n.into_inner().unwrap(), report.bad_records))
}

#[test]
fn a_cut_ibnetdiscover_line_is_not_a_link_to_guid_0x5() {
    // Found by tests/hostile (random truncation): `... - CA  1432  1 0x5` was read as a link to
    // node GUID 0x0000000000000005. ibnetdiscover always ends a connected line with the names.
    let full = std::fs::read(fixture("ib/ibnetdiscover/test.out")).unwrap();
    let line = b"SW  2052 35 0x506b4b03005c2740 4x EDR - CA  1432  1 0x506b4b0300cc02a6";
    let at = full.windows(line.len()).position(|w| w == line).unwrap();
    let cut = &full[..at + line.len() - 15]; // `... CA  1432  1 0x5`
    assert!(cut.ends_with(b" 0x5"));
    let err = links_of(cut, Format::Ibnetdiscover, true).unwrap_err();
    assert!(
        matches!(err, Error::Format { position: Position { byte_offset, .. }, .. } if byte_offset == at as u64),
        "{err}"
    );
    let (before, _) = links_of(&full[..at], Format::Ibnetdiscover, true).unwrap();
    assert_eq!(links_of(cut, Format::Ibnetdiscover, false).unwrap(), (before, 1));
}

#[test]
fn a_cut_iblinkinfo_line_is_not_a_link_to_port_3() {
    // Found by tests/hostile: a line cut after `==>  2   3` (of `2   36[  ] "..."`) was read as a
    // link to port 3. iblinkinfo always quotes the peer's description after its port.
    let full = std::fs::read(fixture("ib/constructed/iblinkinfo.txt")).unwrap();
    let line = b"           9    3[  ] ==( 4X       10.0 Gbps Active/  LinkUp)==>       2   36[  ]";
    let at = full.windows(line.len()).position(|w| w == line).unwrap();
    let cut = &full[..at + line.len() - 5];
    assert!(cut.ends_with(b"2   3"));
    let err = links_of(cut, Format::Iblinkinfo, true).unwrap_err();
    assert!(
        matches!(err, Error::Format { position: Position { byte_offset, .. }, .. } if byte_offset == at as u64),
        "{err}"
    );
    // Lenient: the cut line is one bad record; the links are exactly the complete file's two
    // (its own link is the one switch 2 already reported from the other end, 2/36 <-> 9/3).
    assert_eq!(links_of(cut, Format::Iblinkinfo, false).unwrap(), (2, 1));
    assert_eq!(links_of(&full, Format::Iblinkinfo, true).unwrap(), (2, 0));
}

#[test]
fn an_epoch_line_past_2262_is_not_a_timestamp_and_does_not_overflow() {
    // Found by fuzzing (nvidia_smi_nvlink target): the timestamp line `9647686822` passed the
    // 10-digit check and `secs * 1e9` overflowed i64 (a panic in debug builds, a wrapped,
    // negative time in release). Every text reader shares this directive parser.
    use fabricscope_core::timestamp::{parse_timestamp, timestamp_from_file_name};
    assert_eq!(parse_timestamp("9647686822"), None);
    assert_eq!(parse_timestamp("9223372036.999999999"), None);
    assert_eq!(parse_timestamp("9223372035.999999999"), Some(9_223_372_035_999_999_999));
    assert_eq!(timestamp_from_file_name("ethtool-9999999999.txt"), None);
    assert_eq!(timestamp_from_file_name("ethtool-1764686822.txt"), Some(1_764_686_822_000_000_000));
    // Through a reader: the line is not a timestamp, so it is a bad record (strict: an error at
    // line 1); lenient mode keeps the row with the fallback time.
    let text = b"9647686822\nNIC statistics:\n     rx_packets: 5\n";
    let o = ReadOptions { format: Some(Format::Ethtool), ..opts(Limits::default()) };
    let err = read_bytes(text, Path::new("eth0.txt"), &o, &|_| true).unwrap_err();
    assert!(matches!(err, Error::Format { position: Position { line: Some(1), byte_offset: 0 }, .. }), "{err}");
    let o = ReadOptions { strict: false, ..o };
    let rows = Mutex::new(Vec::new());
    let sink = |ev: Event| {
        if let Event::Samples(b) = ev {
            rows.lock().unwrap().extend(rows_of(&b));
        }
        true
    };
    let report = read_bytes(text, Path::new("eth0.txt"), &o, &sink).unwrap();
    let rows = rows.into_inner().unwrap();
    assert_eq!((rows.len(), report.bad_records), (1, 1));
    assert_eq!(rows[0].time_ns, 1_764_686_822_000_000_000);
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_found_by_walking_is_a_warning_never_opened() {
    // Opening a FIFO without a writer waits for ever: this test would hang, not fail, if it did.
    let good = temp_file("ok.prom", b"x_total{instance=\"h\"} 1\n");
    let dir = good.parent().unwrap().to_path_buf();
    mkfifo(&dir.join("pipe.prom"));
    let out = read_with(std::slice::from_ref(&dir), &opts(Limits::default())).unwrap();
    assert_eq!(out.rows.len(), 1);
    assert_eq!(out.reports.len(), 2);
    let fifo = &out.reports[1];
    assert_eq!(fifo.path, dir.join("pipe.prom"));
    assert_eq!(fifo.warnings, ["not a regular file (a FIFO): not read"]);
    assert!(!fifo.failed && fifo.format.is_none());
    // Named: with regular_files_only the same; without it a named FIFO is read as a stream
    // (not exercised here: it waits for a writer by design).
    let only = ReadOptions { regular_files_only: true, ..opts(Limits::default()) };
    let out = read_with(&[dir.join("pipe.prom")], &only).unwrap();
    assert_eq!(out.reports[0].warnings, ["not a regular file (a FIFO): not read"]);
}

#[test]
fn a_fifo_in_a_copied_sysfs_tree_is_a_warning_of_that_file() {
    let marker = temp_file(".marker", b"");
    let port = marker.parent().unwrap().join("sys/class/infiniband/mlx5_0/ports/1");
    std::fs::create_dir_all(port.join("counters")).unwrap();
    std::fs::write(port.join("counters/port_rcv_data"), b"7\n").unwrap();
    mkfifo(&port.join("counters/port_xmit_data"));
    let root = marker.parent().unwrap().join("sys");
    let out = read_with(&[root], &opts(Limits::default())).unwrap();
    assert_eq!(out.rows.len(), 1, "{:?}", out.reports);
    let warned = out.reports[0].warnings.iter().any(|w| w.ends_with("port_xmit_data: not read: not a regular file"));
    assert!(warned, "{:?}", out.reports[0].warnings);
}

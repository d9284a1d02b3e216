//! Driver behaviour shared by all formats: compression, encodings, limits, lenient mode.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{read, read_with, temp_file};
use fabricscope_core::{Error, ReadOptions};

#[test]
fn empty_file_gives_no_rows_and_a_warning() {
    let p = temp_file("empty.prom", b"");
    let out = read(&p).unwrap();
    assert!(out.rows.is_empty());
    assert_eq!(out.reports[0].warnings, vec!["empty input".to_owned()]);
}

#[test]
fn binary_garbage_is_an_unknown_format_error_naming_the_file() {
    let p = temp_file("garbage.bin", &[0u8, 159, 146, 150, 1, 2, 3, 255]);
    let err = read(&p).err().unwrap();
    assert!(matches!(err, Error::UnknownFormat { .. }), "{err}");
    assert!(err.to_string().contains("garbage.bin"));
}

#[test]
fn utf16_is_refused_with_advice() {
    let p = temp_file("utf16.prom", &[0xff, 0xfe, b'#', 0, b' ', 0]);
    let err = read(&p).err().unwrap();
    assert!(err.to_string().contains("iconv"), "{err}");
}

#[test]
fn missing_path_is_an_io_error_in_strict_mode_and_a_failed_report_in_lenient_mode() {
    let p = std::path::PathBuf::from("/nonexistent/fabricscope/x.prom");
    assert!(matches!(read(&p).err().unwrap(), Error::Io { .. }));
    let out = read_with(&[p], &ReadOptions { strict: false, ..ReadOptions::default() }).unwrap();
    assert!(out.reports[0].failed);
}

#[test]
fn truncated_gzip_is_a_decompress_error() {
    // a gzip header followed by nothing useful
    let p = temp_file("cut.prom.gz", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x4b]);
    let err = read(&p).err().unwrap();
    assert!(matches!(err, Error::Decompress { codec: "gzip", .. }), "{err}");
}

#[test]
fn walked_directories_skip_unrecognised_files_but_named_files_fail() {
    let dir = temp_file("README.md", b"# notes\n\nnot telemetry\n").parent().unwrap().to_path_buf();
    std::fs::write(dir.join("eth0.txt"), b"1796200000\nNIC statistics:\n     rx_packets: 5\n").unwrap();
    let out = read_with(std::slice::from_ref(&dir), &ReadOptions { host: Some("h".into()), ..ReadOptions::default() })
        .unwrap();
    assert_eq!(out.rows.len(), 1);
    let readme = out.reports.iter().find(|r| r.path.ends_with("README.md")).unwrap();
    assert!(readme.warnings[0].starts_with("skipped"), "{:?}", readme.warnings);
    assert!(!readme.failed);
    assert!(matches!(read(dir.join("README.md")).err().unwrap(), Error::UnknownFormat { .. }));
}

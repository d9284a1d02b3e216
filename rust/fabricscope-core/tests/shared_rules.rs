//! Rules the Python package reads from the core instead of re-implementing: what a directory
//! expands to, the reader limits and their defaults, the schemas, the GUID spelling.

use crate::common;

use std::path::PathBuf;

use common::temp_file;
use fabricscope_core::{Format, InputKind, Limits, expand_inputs, normalize_guid};

#[test]
fn a_directory_expands_to_its_files_and_whole_sysfs_trees() {
    let dump = temp_file("a.prom", b"x 1\n");
    let root = dump.parent().expect("dir").to_path_buf();
    std::fs::write(root.join("b.log"), b"rx_bytes: 1\n").expect("write");
    std::fs::write(root.join(".hidden"), b"").expect("write");
    let port = root.join("gpu01/sys/class/infiniband/mlx5_0/ports/1/counters");
    std::fs::create_dir_all(&port).expect("mkdir");
    std::fs::write(port.join("port_xmit_data"), b"5\n").expect("write");
    let missing = root.join("gone.prom");

    let got = expand_inputs(&[root.clone(), missing.clone()], None);
    let want: Vec<(PathBuf, InputKind)> = vec![
        (root.join("a.prom"), InputKind::Walked),
        (root.join("b.log"), InputKind::Walked),
        (root.join("gpu01/sys"), InputKind::SysfsTree),
        (missing, InputKind::Failed),
    ];
    assert_eq!(got, want);
    // A forced non-sysfs format walks into the tree's files; the sysfs format keeps every
    // directory whole.
    let forced = expand_inputs(std::slice::from_ref(&root), Format::from_name("prometheus"));
    assert!(forced.iter().any(|(p, k)| p.ends_with("counters/port_xmit_data") && *k == InputKind::Walked));
    let tree = expand_inputs(std::slice::from_ref(&root), Format::from_name("sysfs"));
    assert_eq!(tree, vec![(root.clone(), InputKind::SysfsTree)]);
    assert_eq!(
        [InputKind::File, InputKind::Walked, InputKind::SysfsTree, InputKind::Failed].map(InputKind::as_str),
        ["file", "walked", "sysfs-tree", "failed"]
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn limits_by_name_round_trip_and_refuse_nonsense() {
    let d = Limits::default();
    assert_eq!(
        d.named(),
        [
            ("max_line_bytes", 1 << 20),
            ("max_labels", 128),
            ("max_decompressed_bytes", 256 << 30),
            ("max_decompression_ratio", 250),
            ("max_document_bytes", 256 << 20),
        ]
    );
    assert_eq!(d.named().map(|(n, _)| n), Limits::NAMES);
    let mut l = d;
    l.set("max_labels", 512).expect("known limit");
    assert_eq!(l.max_labels, 512);
    let unknown = l.set("max_lines", 5).expect_err("unknown");
    assert!(unknown.contains("expected one of max_line_bytes"), "{unknown}");
    assert!(l.set("max_line_bytes", 0).expect_err("zero").contains("positive"));
    // The inverse of `named`: the defaults with the named limits set, or the first problem.
    let from = Limits::from_named([("max_labels", 512), ("max_document_bytes", 4096)]).expect("known limits");
    assert_eq!((from.max_labels, from.max_document_bytes, from.max_line_bytes), (512, 4096, d.max_line_bytes));
    assert_eq!(Limits::from_named(d.named()).expect("defaults").named(), d.named());
    let unknown = Limits::from_named([("max_lines", 0)]).expect_err("unknown name first");
    assert!(unknown.starts_with("unknown limit \"max_lines\"; expected one of max_line_bytes"), "{unknown}");
}

#[test]
fn one_guid_spelling_for_every_reader() {
    assert_eq!(normalize_guid("7cfe:9003:003b:4b96").as_deref(), Some("0x7cfe9003003b4b96"));
    assert_eq!(normalize_guid("0x7CFE9003003B4B96").as_deref(), Some("0x7cfe9003003b4b96"));
    assert_eq!(normalize_guid("mlx5_0"), None);
}

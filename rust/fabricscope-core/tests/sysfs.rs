//! sysfs trees and `grep -H` dumps on real fixtures, with exact expected values.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::{Attr, Output, Row, V, fixture, read, read_with, temp_file};
use fabricscope_core::{Error, Format, ReadOptions, TimeSource};

const T0: i64 = 1_764_686_822_000_000_000;
const T1: i64 = 1_764_686_832_000_000_000;

fn opts() -> ReadOptions {
    ReadOptions { time_ns: Some(T0), ..ReadOptions::default() }
}

fn tree_opts() -> ReadOptions {
    ReadOptions { format: Some(Format::SysfsTree), ..opts() }
}

fn read1(path: &Path, o: &ReadOptions) -> Output {
    read_with(&[path.to_path_buf()], o).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn procfs() -> PathBuf {
    fixture("sysfs/procfs/sys")
}

fn node_exporter() -> PathBuf {
    fixture("sysfs/node_exporter/sys")
}

/// The one row of `counter` on `device`/`port`.
fn row<'a>(out: &'a Output, device: &str, port: Option<u16>, counter: &str) -> &'a Row {
    let rows: Vec<&Row> =
        out.rows.iter().filter(|r| r.device == device && r.port == port && r.counter == counter).collect();
    assert_eq!(rows.len(), 1, "{device} {port:?} {counter}: {rows:?}");
    rows[0]
}

fn attr(out: &Output, device: &str, port: Option<u16>, key: &str) -> String {
    let a: Vec<&Attr> = out.attrs.iter().filter(|a| a.device == device && a.port == port && a.key == key).collect();
    assert_eq!(a.len(), 1, "{device} {port:?} {key}: {a:?}");
    a[0].value.clone()
}

fn sorted_rows(out: &Output) -> Vec<String> {
    let mut v: Vec<String> = out.rows.iter().map(|r| format!("{r:?}")).collect();
    v.sort();
    v
}

fn sorted_attrs(out: &Output) -> Vec<String> {
    let mut v: Vec<String> = out.attrs.iter().map(|a| format!("{a:?}")).collect();
    v.sort();
    v
}

fn temp_dir(name: &str) -> PathBuf {
    // temp_file makes a fresh directory per call; use it as the parent.
    let marker = temp_file(".marker", b"");
    let dir = marker.parent().unwrap().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, content: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
            let mut perm = std::fs::metadata(&dst).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&dst, perm).unwrap();
        }
    }
}

/// What `grep -H . <every file under root>` prints, with `root` shown as `shown_as`.
fn grep_dump(root: &Path, shown_as: &str, out: &mut String) {
    let mut entries: Vec<_> = std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let shown = format!("{shown_as}/{name}");
        if p.is_dir() {
            grep_dump(&p, &shown, out);
        } else {
            let text = std::fs::read_to_string(&p).unwrap();
            for line in text.lines().filter(|l| !l.is_empty()) {
                writeln!(out, "{shown}:{line}").unwrap();
            }
        }
    }
}

// --- trees ------------------------------------------------------------------------------------

#[test]
fn procfs_tree_maps_counters_with_units_and_widths() {
    let out = read(procfs()).unwrap_or_else(|e| panic!("{e}"));
    let rep = &out.reports[0];
    assert_eq!(rep.format, Some(Format::SysfsTree));
    assert_eq!((rep.rows, rep.attribute_rows, rep.bad_records), (114, 66, 0));
    assert_eq!(out.rows.len(), 114);
    // the directory holding sys/ names the host
    assert!(out.rows.iter().all(|r| r.host == "procfs" && r.source == "sysfs"));
    let t = out.rows[0].time_ns;
    assert!(out.rows.iter().all(|r| r.time_ns == t) && out.attrs.iter().all(|a| a.time_ns == t));
    assert_eq!(rep.time_source, TimeSource::Mtime);

    // 4-octet data words become bytes, scale recorded
    let x = row(&out, "mlx5_0", Some(1), "port_xmit_data_bytes");
    assert_eq!((&x.value, x.scale, x.is_counter, x.priority), (&V::U(11_523_046_035_392), 4, true, None));
    assert_eq!(row(&out, "mlx5_0", Some(1), "port_rcv_data_bytes").value, V::U(18_126_345_378 * 4));
    let p = row(&out, "mlx5_0", Some(1), "port_xmit_packets");
    assert_eq!((&p.value, p.scale), (&V::U(10_907_922_116), 1));
    assert_eq!(row(&out, "mlx4_0", Some(2), "port_rcv_data_bytes").value, V::U(9_841_747_136));
    assert_eq!(row(&out, "mlx4_0", Some(1), "port_xmit_wait_ticks").value, V::U(3599));
    assert_eq!(row(&out, "mlx5_0", Some(1), "vl15_dropped_packets").value, V::U(0));
    // hw_counters
    assert_eq!(row(&out, "mlx5_0", Some(1), "duplicate_requests").value, V::U(41));
    assert_eq!(row(&out, "mlx5_0", Some(1), "local_ack_timeout_errors").value, V::U(131));
    assert_eq!(row(&out, "mlx5_0", Some(1), "rx_read_requests").value, V::U(175_528_982));
    assert_eq!(row(&out, "mlx5_0", Some(1), "roce_adp_retrans_events").value, V::U(99));
    assert_eq!(out.rows.iter().filter(|r| r.device == "mlx5_0").count(), 49);
    // lifespan is a cache lifetime, not a counter
    assert!(out.rows.iter().all(|r| !r.counter.contains("lifespan")));
    assert_eq!(attr(&out, "mlx5_0", Some(1), "hw_counters.lifespan_ms"), "10");

    // rate, width, state
    let rate = row(&out, "mlx4_0", Some(1), "link_rate_bytes_per_s");
    assert_eq!((&rate.value, rate.is_counter, rate.scale), (&V::U(5_000_000_000), false, 1));
    assert_eq!(row(&out, "mlx4_0", Some(1), "link_width_lanes").value, V::U(4));
    assert_eq!(row(&out, "mlx5_0", Some(1), "link_rate_bytes_per_s").value, V::U(3_125_000_000));
    assert_eq!(row(&out, "mlx5_0", Some(1), "link_width_lanes").value, V::U(1));
    assert_eq!(row(&out, "hfi1_0", Some(1), "link_rate_bytes_per_s").value, V::U(12_500_000_000));
    assert_eq!(attr(&out, "mlx4_0", Some(1), "rate"), "40 Gb/sec (4X QDR)");
    let st = row(&out, "mlx5_0", Some(1), "port_state_id");
    assert_eq!((&st.value, st.is_counter), (&V::U(4), false));
    assert_eq!(attr(&out, "mlx5_0", Some(1), "state"), "ACTIVE");
    // as committed in the fixture
    assert_eq!(row(&out, "mlx5_0", Some(1), "port_phys_state_id").value, V::U(4));
    assert_eq!(row(&out, "mlx4_0", Some(1), "port_phys_state_id").value, V::U(5));
    assert_eq!(attr(&out, "mlx4_0", Some(1), "phys_state"), "LinkUp");
    // the extra blank line is trimmed
    assert_eq!(attr(&out, "mlx4_0", Some(2), "link_layer"), "InfiniBand");

    // device attributes: port null, GUID normalised too
    assert_eq!(attr(&out, "mlx5_0", None, "node_guid"), "0a7f:bc12:45ef:d23b");
    assert_eq!(attr(&out, "mlx5_0", None, "node_guid_hex"), "0x0a7fbc1245efd23b");
    assert_eq!(attr(&out, "mlx5_0", None, "fw_ver"), "14.28.2006");
    assert_eq!(attr(&out, "mlx5_0", None, "board_id"), "SM_2001000001034");
    assert_eq!(attr(&out, "mlx4_0", None, "hca_type"), "MT4099");
    assert_eq!(
        attr(&out, "hfi1_0", None, "board_id"),
        "HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path Adapter"
    );
}

#[test]
fn procfs_net_device_gives_speed_carrier_and_dcqcn_configuration() {
    let out = read1(&procfs(), &opts());
    let speed = row(&out, "eth0", None, "link_rate_bytes_per_s");
    assert_eq!((&speed.value, speed.scale, speed.is_counter), (&V::U(125_000_000), 125_000, false));
    let cc = row(&out, "eth0", None, "netdev_carrier_changes");
    assert_eq!((&cc.value, cc.is_counter), (&V::U(2), true));
    assert_eq!(out.rows.iter().filter(|r| r.device == "eth0").count(), 2);
    assert_eq!(attr(&out, "eth0", None, "operstate"), "up");
    assert_eq!(attr(&out, "eth0", None, "mtu"), "1500");
    assert_eq!(attr(&out, "eth0", None, "address"), "01:01:01:01:01:01");
    assert_eq!(attr(&out, "eth0", None, "duplex"), "full");
    assert_eq!(attr(&out, "eth0", None, "ecn.roce_np.enable.3"), "1");
    assert_eq!(attr(&out, "eth0", None, "ecn.roce_np.enable.2"), "0");
    assert_eq!(attr(&out, "eth0", None, "ecn.roce_rp.enable.7"), "0");
    assert_eq!(attr(&out, "eth0", None, "ecn.roce_np.cnp_dscp"), "48");
    assert_eq!(attr(&out, "eth0", None, "ecn.roce_rp.rpg_time_reset"), "300");
    let ecn = out.attrs.iter().filter(|a| a.device == "eth0" && a.key.starts_with("ecn.")).count();
    assert_eq!(ecn, 35);
    assert_eq!(out.attrs.iter().filter(|a| a.device == "eth0").count(), 39);
}

#[test]
fn node_exporter_tree_keeps_saturation_and_no_pma_nulls() {
    let out = read1(&node_exporter(), &opts());
    let rep = &out.reports[0];
    assert_eq!((rep.rows, rep.attribute_rows, rep.bad_records), (69, 18, 0));
    assert!(out.rows.iter().all(|r| r.host == "node_exporter" && r.time_ns == T0));
    assert_eq!(rep.time_source, TimeSource::Argument);
    // pegged at 2^32-1, kept exactly
    let w = row(&out, "mlx4_0", Some(1), "port_xmit_wait_ticks");
    assert_eq!((&w.value, w.scale), (&V::U(4_294_967_295), 1));
    // every counters/* of the iWARP device is `N/A (no PMA)`
    let gauges = ["link_rate_bytes_per_s", "link_width_lanes", "port_state_id", "port_phys_state_id"];
    let i40: Vec<&Row> =
        out.rows.iter().filter(|r| r.device == "i40iw0" && !gauges.contains(&r.counter.as_str())).collect();
    assert_eq!(i40.len(), 17);
    assert!(i40.iter().all(|r| r.value == V::Null && r.is_counter));
    assert_eq!(row(&out, "i40iw0", Some(1), "port_xmit_data_bytes").scale, 4);
    // `10 Gb/sec (4X)`: no speed name
    assert_eq!(row(&out, "i40iw0", Some(1), "link_rate_bytes_per_s").value, V::U(1_250_000_000));
    assert_eq!(row(&out, "i40iw0", Some(1), "link_width_lanes").value, V::U(4));
    // a file the vocabulary does not know keeps its name
    let d = row(&out, "mlx4_0", Some(1), "port_rcv_discards");
    assert_eq!((&d.value, d.scale, d.is_counter), (&V::U(0), 1, true));
    // counters_ext (legacy mlx4, 64-bit): data words x4 as well, kept as their own series so the
    // 32-bit and 64-bit copies on one port never interleave.
    let rcv = |name: &str| -> Vec<V> {
        out.rows
            .iter()
            .filter(|r| r.device == "mlx4_0" && r.port == Some(2) && r.counter == name)
            .map(|r| r.value.clone())
            .collect()
    };
    assert_eq!(rcv("port_rcv_data_bytes"), vec![V::U(0)]);
    assert_eq!(rcv("ext_port_rcv_data_bytes"), vec![V::U(4_631_917 * 4)]);
    assert_eq!(out.rows.iter().filter(|r| r.device == "mlx4_0" && r.port == Some(1)).count(), 28);
    assert_eq!(out.rows.iter().filter(|r| r.device == "mlx4_0" && r.port == Some(2)).count(), 20);
}

type RowFilter = Box<dyn Fn(&Row) -> bool>;

#[test]
fn every_root_depth_reads_the_matching_part_of_the_tree() {
    let full = read1(&procfs(), &opts());
    let class = procfs().join("class");
    let cases: Vec<(PathBuf, RowFilter)> = vec![
        (class.clone(), Box::new(|_| true)),
        (class.join("infiniband"), Box::new(|r| r.device != "eth0")),
        (class.join("net"), Box::new(|r| r.device == "eth0")),
        (class.join("net/eth0"), Box::new(|r| r.device == "eth0")),
        (class.join("infiniband/mlx4_0"), Box::new(|r| r.device == "mlx4_0")),
        (class.join("infiniband/mlx4_0/ports/2"), Box::new(|r| r.device == "mlx4_0" && r.port == Some(2))),
    ];
    for (root, keep) in cases {
        let out = read1(&root, &tree_opts());
        let want: Vec<String> = {
            let mut v: Vec<String> = full.rows.iter().filter(|r| keep(r)).map(|r| format!("{r:?}")).collect();
            v.sort();
            v
        };
        assert!(!want.is_empty());
        assert_eq!(sorted_rows(&out), want, "{}", root.display());
    }
    // a port root carries no device attributes
    let out = read1(&class.join("infiniband/mlx5_0/ports/1"), &tree_opts());
    assert!(out.attrs.iter().all(|a| a.port == Some(1)));
    assert_eq!(out.attrs.len(), 5);
}

#[test]
fn a_directory_that_is_no_sysfs_tree_is_an_unknown_format() {
    let dir = temp_dir("not-sysfs");
    write(&dir.join("a.txt"), b"hello\n");
    let err = read_with(std::slice::from_ref(&dir), &tree_opts()).err().unwrap();
    assert!(matches!(err, Error::UnknownFormat { .. }), "{err}");
}

#[test]
fn timestamp_file_dates_the_tree_and_the_containing_directory_names_the_host() {
    let base = temp_dir("snap");
    let host_dir = base.join("gpu07");
    copy_tree(&procfs().join("class/infiniband/mlx5_0"), &host_dir.join("sys/class/infiniband/mlx5_0"));
    write(&host_dir.join("timestamp"), b"1764686822\n");
    let out = read1(&host_dir.join("sys"), &ReadOptions::default());
    assert_eq!(out.reports[0].time_source, TimeSource::InFile);
    assert!(out.reports[0].warnings.is_empty(), "{:?}", out.reports[0].warnings);
    assert_eq!(out.rows.len(), 49);
    assert!(out.rows.iter().all(|r| r.time_ns == T0 && r.host == "gpu07"));
    assert!(out.attrs.iter().all(|a| a.time_ns == T0 && a.host == "gpu07"));

    // at the tree root, in `date -Is` form
    write(&host_dir.join("sys/timestamp"), b"2025-12-02T14:47:12+00:00\n");
    let out = read1(&host_dir.join("sys"), &ReadOptions::default());
    assert!(out.rows.iter().all(|r| r.time_ns == T1));

    // a timestamp file that is no timestamp is a bad record
    write(&host_dir.join("sys/timestamp"), b"yesterday\n");
    let err = read_with(&[host_dir.join("sys")], &opts()).err().unwrap();
    assert!(err.to_string().contains("timestamp"), "{err}");
    let out = read1(&host_dir.join("sys"), &ReadOptions { strict: false, ..opts() });
    assert_eq!((out.reports[0].bad_records, out.rows.len()), (1, 49));
    assert!(out.rows.iter().all(|r| r.time_ns == T0));
}

#[cfg(unix)]
#[test]
fn live_sysfs_quirks_symlinks_unreadable_files_and_loops() {
    use std::os::unix::fs::symlink;
    let sys = temp_dir("live").join("sys");
    let dev = sys.join("devices/pci0000:00/0000:00:02.0/0000:03:00.0");
    let ib = dev.join("infiniband/mlx5_0");
    write(&ib.join("fw_ver"), b"28.39.1002\n");
    write(&ib.join("ports/1/counters/port_xmit_data"), b"100\n");
    write(&ib.join("ports/1/rate"), b"400 Gb/sec (4X NDR)\n");
    write(&ib.join("ports/1/state"), b"4: ACTIVE\n");
    // read failures are warned and skipped: a dangling link and a directory in a file's place
    symlink("/nonexistent/fabricscope/port_rcv_data", ib.join("ports/1/counters/port_rcv_data")).unwrap();
    std::fs::create_dir_all(ib.join("ports/1/counters/symbol_error")).unwrap();
    // a loop back up the tree, as `device/` and `subsystem/` links are in live sysfs
    symlink("../../..", ib.join("device")).unwrap();
    let net = dev.join("net/ens1f0np0");
    write(&net.join("statistics/rx_bytes"), b"5000\n");
    write(&net.join("speed"), b"-1\n");
    write(&net.join("operstate"), b"down\n");
    symlink("../..", net.join("device")).unwrap();
    std::fs::create_dir_all(sys.join("class/infiniband")).unwrap();
    std::fs::create_dir_all(sys.join("class/net")).unwrap();
    symlink(
        "../../devices/pci0000:00/0000:00:02.0/0000:03:00.0/infiniband/mlx5_0",
        sys.join("class/infiniband/mlx5_0"),
    )
    .unwrap();
    symlink("../../devices/pci0000:00/0000:00:02.0/0000:03:00.0/net/ens1f0np0", sys.join("class/net/ens1f0np0"))
        .unwrap();

    let out = read1(&sys, &ReadOptions { host: Some("gpu03".into()), ..opts() });
    let got: Vec<_> =
        out.rows.iter().map(|r| (r.device.as_str(), r.port, r.counter.as_str(), r.value.clone())).collect();
    assert_eq!(
        got,
        vec![
            ("mlx5_0", Some(1), "port_xmit_data_bytes", V::U(400)),
            ("mlx5_0", Some(1), "link_rate_bytes_per_s", V::U(50_000_000_000)),
            ("mlx5_0", Some(1), "link_width_lanes", V::U(4)),
            ("mlx5_0", Some(1), "port_state_id", V::U(4)),
            ("ens1f0np0", None, "netdev_rx_bytes", V::U(5000)),
        ]
    );
    assert!(out.rows.iter().all(|r| r.host == "gpu03"));
    assert_eq!(attr(&out, "ens1f0np0", None, "operstate"), "down");
    let warnings = &out.reports[0].warnings;
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("port_rcv_data")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("symbol_error")), "{warnings:?}");
    assert_eq!(out.reports[0].bad_records, 0);
}

#[test]
fn binary_and_malformed_contents_are_bad_records_naming_the_file() {
    let sys = temp_dir("bad").join("sys");
    let port = sys.join("class/infiniband/mlx5_0/ports/1");
    write(&port.join("counters/port_xmit_data"), b"100\n");
    write(&port.join("counters/port_rcv_data"), b"\x00\x01\x02\xff\n");
    write(&port.join("counters/symbol_error"), b"-3\n");
    write(&port.join("counters/link_downed"), b"18446744073709551616\n");
    write(&port.join("hw_counters/out_of_buffer"), b"lots\n");
    write(&port.join("rate"), b"fast\n");
    write(&port.join("state"), b"ACTIVE\n");
    write(&port.join("link_layer"), b"Ether\x01net\n");
    let err = read_with(std::slice::from_ref(&sys), &opts()).err().unwrap();
    match &err {
        // files are read in sorted order: counters/link_downed is the first bad one
        Error::Format { path, .. } => assert!(path.ends_with("counters/link_downed"), "{err}"),
        other => panic!("{other}"),
    }
    let out = read1(&sys, &ReadOptions { strict: false, ..opts() });
    assert_eq!(out.reports[0].bad_records, 7, "{:?}", out.reports[0].errors);
    let got: Vec<_> = out.rows.iter().map(|r| (r.counter.as_str(), r.value.clone())).collect();
    assert_eq!(got, vec![("port_xmit_data_bytes", V::U(400))]);
    assert!(out.attrs.is_empty());
    let errors = out.reports[0].errors.join("\n");
    for f in ["port_rcv_data", "symbol_error", "link_downed", "out_of_buffer", "rate", "state", "link_layer"] {
        assert!(errors.contains(f), "{f}: {errors}");
    }
}

// --- grep dumps -------------------------------------------------------------------------------

#[test]
fn grep_dump_of_a_tree_gives_the_same_rows_as_the_tree() {
    for (root, host) in [(procfs(), "procfs"), (node_exporter(), "node_exporter")] {
        let tree = read1(&root, &ReadOptions { host: Some(host.into()), ..opts() });
        let mut dump = String::new();
        grep_dump(&root.join("class"), "/sys/class", &mut dump);
        let p = temp_file("grep-dump.txt", dump.as_bytes());
        let grep = read1(&p, &ReadOptions { host: Some(host.into()), ..opts() });
        assert_eq!(grep.reports[0].format, Some(Format::SysfsGrep));
        assert_eq!(grep.reports[0].bad_records, 0, "{:?}", grep.reports[0].errors);
        let strip =
            |v: Vec<String>| v.into_iter().map(|s| s.replace("\"sysfs-grep\"", "\"sysfs\"")).collect::<Vec<_>>();
        assert_eq!(strip(sorted_rows(&grep)), sorted_rows(&tree));
        assert_eq!(sorted_attrs(&grep), sorted_attrs(&tree));
        assert!(grep.rows.iter().all(|r| r.source == "sysfs-grep"));
    }
}

#[test]
fn grep_dump_with_timestamps_hosts_and_relative_or_pci_paths() {
    let text = "\
1764686822
/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:2880761508848
/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE
/sys/class/infiniband/mlx5_0/ports/1/rate:2.5 Gb/sec (1X SDR)
/sys/class/infiniband/mlx5_0/node_guid:0a7f:bc12:45ef:d23b
/sys/class/net/eth2/statistics/rx_bytes:77
/sys/class/net/eth2/ecn/roce_np/enable/3:0
1764686832
# host: gpu09
/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0/infiniband/mlx5_0/ports/1/counters/port_xmit_data:2880761509848
mlx5_1/ports/2/hw_counters/np_cnp_sent:12
class/infiniband/i40iw0/ports/1/counters/symbol_error:N/A (no PMA)
gpu10: /sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:3
";
    let p = temp_file("dump.txt", text.as_bytes());
    let out = read1(&p, &ReadOptions { host: Some("gpu08".into()), ..opts() });
    assert_eq!(out.reports[0].bad_records, 0);
    let got: Vec<_> = out
        .rows
        .iter()
        .map(|r| (r.time_ns, r.host.as_str(), r.device.as_str(), r.port, r.counter.as_str(), r.value.clone(), r.scale))
        .collect();
    assert_eq!(
        got,
        vec![
            (T0, "gpu08", "mlx5_0", Some(1), "port_xmit_data_bytes", V::U(11_523_046_035_392), 4),
            (T0, "gpu08", "mlx5_0", Some(1), "port_state_id", V::U(4), 1),
            (T0, "gpu08", "mlx5_0", Some(1), "link_rate_bytes_per_s", V::U(312_500_000), 1),
            (T0, "gpu08", "mlx5_0", Some(1), "link_width_lanes", V::U(1), 1),
            (T0, "gpu08", "eth2", None, "netdev_rx_bytes", V::U(77), 1),
            (T1, "gpu09", "mlx5_0", Some(1), "port_xmit_data_bytes", V::U(11_523_046_039_392), 4),
            (T1, "gpu09", "mlx5_1", Some(2), "np_cnp_sent_packets", V::U(12), 1),
            (T1, "gpu09", "i40iw0", Some(1), "symbol_errors", V::Null, 1),
            (T1, "gpu10", "mlx5_0", Some(1), "out_of_sequence_packets", V::U(3), 1),
        ]
    );
    assert_eq!(attr(&out, "mlx5_0", Some(1), "state"), "ACTIVE");
    assert_eq!(attr(&out, "mlx5_0", Some(1), "rate"), "2.5 Gb/sec (1X SDR)");
    assert_eq!(attr(&out, "mlx5_0", None, "node_guid_hex"), "0x0a7fbc1245efd23b");
    assert_eq!(attr(&out, "eth2", None, "ecn.roce_np.enable.3"), "0");
    assert_eq!(out.reports[0].time_source, TimeSource::InFile);
}

#[test]
fn grep_dump_without_a_timestamp_line_uses_the_fallbacks() {
    let p = temp_file("gpu01-20251202T144702Z.txt", b"/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed:2\n");
    let out = read1(&p, &ReadOptions::default());
    let r = &out.rows[0];
    assert_eq!((r.time_ns, r.host.as_str(), &r.value), (T0, "unknown", &V::U(2)));
    assert_eq!(out.reports[0].time_source, TimeSource::FileName);
    assert!(out.reports[0].warnings.iter().any(|w| w.contains("host")));
}

#[test]
fn grep_dump_hostile_lines_fail_strict_with_file_and_line_and_count_in_lenient_mode() {
    let good = "/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed:1\n";
    let cases: &[(&str, &[u8])] = &[
        ("above-u64", b"/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:18446744073709551616\n"),
        ("negative", b"/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:-1\n"),
        ("garbage", b"this is not a sysfs dump\n"),
        ("utf8", b"/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:\xff\xfe\n"),
        ("not-sysfs-path", b"/etc/passwd:root\n"),
    ];
    for (name, bad) in cases {
        let mut text = good.as_bytes().to_vec();
        text.extend_from_slice(bad);
        text.extend_from_slice(good.as_bytes());
        let file = format!("{name}.grep");
        let p = temp_file(&file, &text);
        let o = ReadOptions { format: Some(Format::SysfsGrep), ..opts() };
        let err = read_with(std::slice::from_ref(&p), &o).err().unwrap();
        match &err {
            Error::Format { path, position, .. } => {
                assert!(path.ends_with(&file), "{err}");
                assert_eq!(position.line, Some(2), "{err}");
            }
            other => panic!("{name}: {other}"),
        }
        let out = read1(&p, &ReadOptions { strict: false, ..o });
        assert_eq!((out.rows.len(), out.reports[0].bad_records), (2, 1), "{name}");
    }
    // truncated mid-line
    let mut text = good.as_bytes().to_vec();
    text.extend_from_slice(b"/sys/class/infiniband/mlx5_0/ports/1/coun");
    let p = temp_file("cut.grep", &text);
    let o = ReadOptions { format: Some(Format::SysfsGrep), ..opts() };
    let err = read_with(std::slice::from_ref(&p), &o).err().unwrap();
    assert!(err.to_string().contains("cut.grep") && err.to_string().contains("line 2"), "{err}");
    let out = read1(&p, &ReadOptions { strict: false, ..o });
    assert_eq!((out.rows.len(), out.reports[0].bad_records), (1, 1));
    // empty input, format forced
    let p = temp_file("empty.grep", b"");
    let out = read1(&p, &ReadOptions { format: Some(Format::SysfsGrep), ..opts() });
    assert!(out.rows.is_empty() && out.attrs.is_empty());
}

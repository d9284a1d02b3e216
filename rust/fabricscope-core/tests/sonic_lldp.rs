//! The `links` table from SONiC `show lldp table`, checked row by row: outputs people posted
//! (tests/fixtures/sonic_lldp/SOURCES.md), a GPU leaf in the same layout, and hostile input.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use std::fmt::Write as _;

use common::{Output, ethernet_links, fixture, read_with, temp_file};
use fabricscope_core::formats::detect;
use fabricscope_core::{Error, Format, ReadOptions};

/// No host argument: the switch's name comes from the input itself or its file name.
fn opts() -> ReadOptions {
    ReadOptions { time_ns: Some(1_764_686_822_000_000_000), ..ReadOptions::default() }
}

fn strict() -> ReadOptions {
    ReadOptions { format: Some(Format::SonicLldpTable), ..opts() }
}

fn lenient() -> ReadOptions {
    ReadOptions { strict: false, ..strict() }
}

/// (node_name, port_name, node_type, tier, peer_node_name, peer_port_name, peer_node_type, peer_tier)
type Row = [Option<String>; 8];

fn rows(out: &Output) -> Vec<Row> {
    ethernet_links(out)
        .into_iter()
        .map(|[a, b, c, d, e, f, g, h, source]| {
            assert_eq!(source.as_deref(), Some("sonic-lldp-table"));
            [a, b, c, d, e, f, g, h]
        })
        .collect()
}

fn row(a: [&str; 8]) -> Row {
    a.map(|x| (!x.is_empty()).then(|| x.to_owned()))
}

#[test]
fn gpu_leaf_hosts_by_mac_or_ifname_port_id_and_a_spine() {
    let out = read_with(&[fixture("sonic_lldp/constructed-leaf01.show-lldp-table.txt")], &opts()).unwrap();
    assert_eq!(out.reports[0].bad_records, 0);
    // hosts (Router or Other, no Bridge) are NICs named `<host> <netdev>`: the MAC port ID gives way
    // to the description; the leaf is a leaf because hosts hang off it; Bridge makes a switch.
    assert_eq!(
        rows(&out),
        vec![
            row(["gpu-r07.cluster.local eth0", "eth0", "hca", "hca", "leaf01", "Ethernet0", "switch", "leaf"]),
            row([
                "gpu-r08.cluster.local ens1f0np0",
                "ens1f0np0",
                "hca",
                "hca",
                "leaf01",
                "Ethernet4",
                "switch",
                "leaf"
            ]),
            row(["gpu-r09 ens1f0np0", "ens1f0np0", "hca", "hca", "leaf01", "Ethernet8", "switch", "leaf"]),
            row(["leaf01", "Ethernet248", "switch", "leaf", "spine01", "Ethernet8", "switch", "spine"]),
        ]
    );
}

#[test]
fn t0_to_four_t1_routers_skips_the_management_port() {
    // No `# host:` line and no prompt in the post: the switch is named by the file name.
    let out = read_with(&[fixture("sonic_lldp/sonic-buildimage-pr5698.show-lldp-table.txt")], &opts()).unwrap();
    assert_eq!(out.reports[0].bad_records, 0);
    let sw = "sonic-buildimage-pr5698";
    // two switches of the same tier: the rows list the lower name first
    let t1 = |port: &str, peer: &str| row([peer, "Ethernet1", "switch", "spine", sw, port, "switch", "spine"]);
    assert_eq!(
        rows(&out),
        vec![
            t1("Ethernet224", "ARISTA01T1"),
            t1("Ethernet232", "ARISTA02T1"),
            t1("Ethernet240", "ARISTA03T1"),
            t1("Ethernet248", "ARISTA04T1"),
        ]
    );
    // the host argument wins over the file name
    let named = ReadOptions { host: Some("t0-lab".into()), ..opts() };
    let out = read_with(&[fixture("sonic_lldp/sonic-buildimage-pr5698.show-lldp-table.txt")], &named).unwrap();
    assert_eq!(rows(&out)[0][4].as_deref(), Some("t0-lab"));
}

#[test]
fn prompt_names_the_switch_port_ids_with_spaces_and_nameless_rows() {
    // `admin@sonic:~$ show lldp table`: the switch is `sonic`. Rows with no RemoteDevice (MAC-only
    // neighbours) are no links; a neighbour with no capability is of unknown kind.
    let out = read_with(&[fixture("sonic_lldp/sonic-buildimage-issue18871-dx010.txt")], &opts()).unwrap();
    assert_eq!(out.reports[0].bad_records, 0, "{:?}", out.reports[0].errors);
    assert_eq!(
        rows(&out),
        vec![
            row(["sonic", "Ethernet104", "switch", "spine", "sw0", "FortyGigabitEthernet 1/0/49", "unknown", ""]),
            row(["sonic", "Ethernet108", "switch", "spine", "sw0", "FortyGigabitEthernet 1/0/50", "unknown", ""]),
        ]
    );
}

#[test]
fn a_post_without_its_footer_is_reported_as_cut_and_its_rows_kept_when_lenient() {
    let p = fixture("sonic_lldp/sonic-buildimage-issue11645-vlab-02-no-footer.txt");
    match read_with(std::slice::from_ref(&p), &strict()) {
        Err(Error::Format { position, expected, .. }) => {
            assert!(expected.contains("Total entries displayed"), "{expected}");
            assert_eq!(position.line, Some(13));
            assert_eq!(position.byte_offset, std::fs::metadata(&p).unwrap().len());
        }
        other => panic!("expected a format error, got {:?}", other.map(|o| o.reports)),
    }
    let out = read_with(&[p], &lenient()).unwrap();
    assert_eq!(out.reports[0].bad_records, 1);
    let got = rows(&out);
    // (switch port, neighbour, neighbour port), whichever end the row lists first
    let ports: Vec<_> = got
        .iter()
        .map(|r| {
            let (me, peer) = if r[0].as_deref() == Some("vlab-02") { (0, 4) } else { (4, 0) };
            (r[me + 1].clone().unwrap(), r[peer].clone().unwrap(), r[peer + 1].clone().unwrap())
        })
        .collect();
    let want = [
        ("Ethernet0", "ARISTA01T1", "fortyGigE0/0"),
        ("Ethernet1", "ARISTA01T1", "fortyGigE0/4"),
        ("Ethernet16", "ARISTA03T1", "fortyGigE0/0"),
        ("Ethernet17", "ARISTA03T1", "fortyGigE0/4"),
        ("Ethernet20", "ARISTA04T1", "fortyGigE0/0"),
        ("Ethernet21", "ARISTA04T1", "fortyGigE0/4"),
    ]
    .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()));
    assert_eq!(ports, want);
    assert!(got.iter().all(|r| r[4].as_deref() == Some("vlab-02")));
}

#[test]
fn detection_by_header_and_format_names() {
    for f in [
        "sonic_lldp/constructed-leaf01.show-lldp-table.txt",
        "sonic_lldp/sonic-buildimage-issue18871-dx010.txt",
        "sonic_lldp/sonic-buildimage-pr5698.show-lldp-table.txt",
    ] {
        assert_eq!(detect(&std::fs::read(fixture(f)).unwrap(), "x"), Some(Format::SonicLldpTable), "{f}");
    }
    // the same words in prose, or another vendor's LLDP table, are not this format
    assert_ne!(detect(b"The LocalPort column names the switch port.\n", "x"), Some(Format::SonicLldpTable));
    assert_ne!(
        detect(b"Device ID            Local Intf      Hold-time  Capability  Port ID\n", "x"),
        Some(Format::SonicLldpTable)
    );
    assert_eq!(Format::from_name("sonic-lldp-table"), Some(Format::SonicLldpTable));
    assert_eq!(Format::from_name("lldpshow"), Some(Format::SonicLldpTable));
}

const HEAD: &str = "# host: leaf9\nLocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr\n-----------  --------------  -----------------  ------------  -----------------\n";

#[test]
fn hostile_rows_strict_names_the_line_lenient_keeps_the_good_rows() {
    let text = format!(
        "{HEAD}Ethernet0    gpu01           aa:bb:cc:dd:ee:01  R             eth0\n\
         Ethernet4gpu02whoops this is not aligned at all\n\
         Ethernet8    gpu03           aa:bb:cc:dd:ee:03  XYZ           eth0\n\
         Ethernet12   gpu04           aa:bb:cc:dd:ee:04  O             eth1\n\
         --------------------------------------------------\nTotal entries displayed:  4\n"
    );
    let p = temp_file("leaf9.txt", text.as_bytes());
    match read_with(std::slice::from_ref(&p), &strict()) {
        Err(Error::Format { position, expected, .. }) => {
            assert_eq!(position.line, Some(5));
            assert!(expected.contains("aligned"), "{expected}");
        }
        other => panic!("expected a format error, got {:?}", other.map(|o| o.reports)),
    }
    let out = read_with(&[p], &lenient()).unwrap();
    // two bad rows; the footer counts four displayed rows, two were read
    assert_eq!(out.reports[0].bad_records, 3, "{:?}", out.reports[0].errors);
    assert_eq!(
        rows(&out),
        vec![
            row(["gpu01 eth0", "eth0", "hca", "hca", "leaf9", "Ethernet0", "switch", "leaf"]),
            row(["gpu04 eth1", "eth1", "hca", "hca", "leaf9", "Ethernet12", "switch", "leaf"]),
        ]
    );
}

#[test]
fn hostile_truncated_garbage_wrong_encoding_and_missing_rule_never_panic() {
    let full = std::fs::read(fixture("sonic_lldp/constructed-leaf01.show-lldp-table.txt")).unwrap();
    // cut anywhere: strict fails naming a position, lenient keeps what it read, nothing panics
    for cut in (0..full.len()).step_by(7) {
        let p = temp_file("leaf01.txt", &full[..cut]);
        let strict_result = read_with(std::slice::from_ref(&p), &strict());
        let out = read_with(&[p], &lenient()).unwrap();
        assert!(rows(&out).len() <= 4);
        if out.reports[0].bad_records > 0 {
            assert!(strict_result.is_err(), "cut at {cut}");
        }
    }
    // cut in the middle of the rows: the missing footer is reported
    let cut = full.len() / 2;
    let p = temp_file("leaf01.txt", &full[..cut]);
    let Err(err) = read_with(std::slice::from_ref(&p), &strict()) else { panic!("a cut table must fail") };
    assert!(err.to_string().contains("Total entries displayed"), "{err}");
    // garbage, UTF-16 and Latin-1 bytes: reported as bad records, never rows
    let utf16: Vec<u8> = HEAD.encode_utf16().flat_map(u16::to_le_bytes).collect();
    for junk in [&b"\x00\xff\xfe garbage \x89PNG\r\n"[..], &utf16, b"LocalPort    RemoteDevice\n\xe9\xe8\n"] {
        let p = temp_file("junk.txt", junk);
        assert!(read_with(std::slice::from_ref(&p), &strict()).is_err(), "{}", String::from_utf8_lossy(junk));
        let out = read_with(&[p], &lenient()).unwrap();
        assert!(rows(&out).is_empty());
        assert!(out.reports[0].bad_records >= 1);
    }
    // a header without its rule
    let p = temp_file(
        "norule.txt",
        b"LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr\nEthernet0    x    y    B    z\n",
    );
    let Err(err) = read_with(std::slice::from_ref(&p), &strict()) else { panic!("a header without rule must fail") };
    assert!(err.to_string().contains("dashed rule"), "{err}");
    // a neighbour without port ID or description names no port: no link
    let noport = format!(
        "{HEAD}Ethernet0    gpu01                              R\n{}",
        "-".repeat(50) + "\nTotal entries displayed:  1\n"
    );
    let out = read_with(&[temp_file("noport.txt", noport.as_bytes())], &strict()).unwrap();
    assert!(rows(&out).is_empty());
    // an empty table (lldpshow with no neighbour) is valid and has no links
    let empty = format!("{HEAD}--------------------------------------------------\nTotal entries displayed:  0\n");
    let out = read_with(&[temp_file("empty.txt", empty.as_bytes())], &strict()).unwrap();
    assert!(rows(&out).is_empty());
}

#[test]
fn huge_table_reads_every_row_and_two_switches_in_one_file() {
    let n = 100_000;
    // tabulate widens a column to its widest cell: `Ethernet99999` needs 13
    let mut text = String::from(
        "# host: leaf9\nLocalPort      RemoteDevice    RemotePortID       Capability    RemotePortDescr\n",
    );
    text.push_str("-------------  --------------  -----------------  ------------  -----------------\n");
    for i in 0..n {
        let (port, host) = (format!("Ethernet{i}"), format!("gpu{i}"));
        writeln!(text, "{port:<13}  {host:<14}  aa:bb:cc:dd:ee:01  R             eth0").unwrap();
    }
    writeln!(text, "--------------------------------------------------\nTotal entries displayed:  {n}").unwrap();
    // a second switch's table after the first, named by its own prompt
    text.push_str(
        "root@leaf10:/home/admin# sudo show lldp table\nCapability codes: (R) Router, (B) Bridge, (O) Other\n",
    );
    text.push_str(&HEAD["# host: leaf9\n".len()..]);
    text.push_str("Ethernet0    gpu-x           aa:bb:cc:dd:ee:01  R             eth3\n");
    text.push_str("--------------------------------------------------\nTotal entries displayed:  1\n");
    let out = read_with(&[temp_file("big.txt", text.as_bytes())], &strict()).unwrap();
    let got = rows(&out);
    assert_eq!(got.len(), n + 1);
    let on = |sw: &str| got.iter().filter(|r| r[4].as_deref() == Some(sw)).count();
    // the last `# host:` line or prompt names the switch
    assert_eq!((on("leaf9"), on("leaf10")), (n, 1));
    let last = row(["gpu99999 eth0", "eth0", "hca", "hca", "leaf9", "Ethernet99999", "switch", "leaf"]);
    assert!(got.contains(&last));
    assert!(got.contains(&row(["gpu-x eth3", "eth3", "hca", "hca", "leaf10", "Ethernet0", "switch", "leaf"])));
}

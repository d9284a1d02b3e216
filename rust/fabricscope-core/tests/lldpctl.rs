//! The `links` table from `lldpctl -f keyvalue` and `-f json`/`json0` (lldpd), checked row by row:
//! real lldpd layouts (tests/fixtures/lldpctl/SOURCES.md) and hostile input.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use common::{Output, ethernet_links, fixture, read_with, temp_file};
use fabricscope_core::formats::detect;
use fabricscope_core::{Error, Format, ReadOptions};

fn opts() -> ReadOptions {
    ReadOptions { time_ns: Some(1_764_686_822_000_000_000), host: Some("ns-1".into()), ..ReadOptions::default() }
}

/// (node_name, port_name, node_type, tier, peer_node_name, peer_port_name, peer_node_type, peer_tier, source)
type Row = [Option<String>; 9];

fn rows(out: &Output) -> Vec<Row> {
    ethernet_links(out)
}

fn row(a: [&str; 9]) -> Row {
    a.map(|x| (!x.is_empty()).then(|| x.to_owned()))
}

fn read_fixture(rel: &str, o: &ReadOptions) -> Output {
    read_with(&[fixture(rel)], o).unwrap()
}

#[test]
fn lldpd_test_suite_neighbour_in_json_json0_and_keyvalue_is_one_link() {
    // ns-1 eth0 is cabled to ns-2 eth1 (a host: Station on, no Bridge/Router), port ID a MAC:
    // the port is named by its description `eth1`.
    let json = row(["ns-1 eth0", "eth0", "hca", "hca", "ns-2.example.com", "eth1", "hca", "hca", "lldpctl-json"]);
    assert_eq!(rows(&read_fixture("lldpctl/neighbors-json-eth0.json", &opts())), vec![json]);
    // json0 omits Router/Station in the test's document: the neighbour's kind is unknown
    let json0 = row(["ns-1 eth0", "eth0", "hca", "hca", "ns-2.example.com", "eth1", "unknown", "", "lldpctl-json"]);
    assert_eq!(rows(&read_fixture("lldpctl/neighbors-json0-eth0.json", &opts())), vec![json0]);
    let kv = row(["ns-1 eth0", "eth0", "hca", "hca", "ns-2.example.com", "eth1", "hca", "hca", "lldpctl-keyvalue"]);
    assert_eq!(rows(&read_fixture("lldpctl/neighbors-keyvalue-eth0.txt", &opts())), vec![kv]);
}

#[test]
fn show_interfaces_describes_the_local_port_not_a_link() {
    let out = read_fixture("lldpctl/interfaces-json-eth0.json", &opts());
    assert!(rows(&out).is_empty());
    assert_eq!(out.reports[0].bad_records, 0);
}

#[test]
fn host_nics_to_two_leaves_with_local_and_ifname_port_ids() {
    // `# host:` in the file wins over the argument; `eth1.100` keeps its dot.
    let out = read_fixture("lldpctl/constructed-gpu-r07-two-nics-keyvalue.txt", &opts());
    assert_eq!(
        rows(&out),
        vec![
            row(["gpu-r07 eth0", "eth0", "hca", "hca", "leaf-a01", "Eth1/9", "switch", "leaf", "lldpctl-keyvalue"]),
            row([
                "gpu-r07 eth1.100",
                "eth1.100",
                "hca",
                "hca",
                "leaf-b01",
                "Ethernet12",
                "switch",
                "leaf",
                "lldpctl-keyvalue"
            ]),
        ]
    );
}

#[test]
fn detection_tells_json_from_keyvalue_and_from_other_json() {
    let kv = std::fs::read(fixture("lldpctl/constructed-gpu-r07-two-nics-keyvalue.txt")).unwrap();
    assert_eq!(detect(&kv, "x"), Some(Format::LldpctlKeyvalue));
    let js = std::fs::read(fixture("lldpctl/neighbors-json0-eth0.json")).unwrap();
    assert_eq!(detect(&js, "x"), Some(Format::LldpctlJson));
    assert_eq!(detect(b"# host: h1\n{\"lldp\": {\"interface\": {}}}\n", "x"), Some(Format::LldpctlJson));
    assert_ne!(
        detect(b"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}", "x"),
        Some(Format::LldpctlJson)
    );
    assert_ne!(detect(b"lldp_enabled=1\n", "x"), Some(Format::LldpctlKeyvalue));
    assert_eq!(Format::from_name("lldpctl-json"), Some(Format::LldpctlJson));
}

#[test]
fn hostile_keyvalue_strict_names_the_line_lenient_keeps_the_good_records() {
    let text = b"# host: h1\nlldp.eth0.chassis.name=leaf-a\nlldp.eth0.chassis.Bridge.enabled=on\nthis is not a key\nlldp.eth0.port.ifname=Ethernet0\nlldp.=x\n";
    let p = temp_file("cut.lldp.txt", text);
    let strict = ReadOptions { format: Some(Format::LldpctlKeyvalue), ..opts() };
    match read_with(std::slice::from_ref(&p), &strict) {
        Err(Error::Format { position, expected, .. }) => {
            assert_eq!(position.line, Some(4));
            assert!(expected.contains("lldp.<interface>"), "{expected}");
        }
        other => panic!("expected a format error, got {:?}", other.map(|o| o.reports)),
    }
    let lenient = ReadOptions { strict: false, ..strict };
    let out = read_with(&[p], &lenient).unwrap();
    assert_eq!(out.reports[0].bad_records, 2);
    assert_eq!(
        rows(&out),
        vec![row(["h1 eth0", "eth0", "hca", "hca", "leaf-a", "Ethernet0", "switch", "leaf", "lldpctl-keyvalue"])]
    );
}

#[test]
fn hostile_json_truncated_garbage_wrong_shape_and_empty_never_panic() {
    let full = std::fs::read(fixture("lldpctl/neighbors-json-eth0.json")).unwrap();
    let o = ReadOptions { format: Some(Format::LldpctlJson), ..opts() };
    for cut in [full.len() / 3, full.len() / 2, full.len() - 3] {
        let p = temp_file("cut.lldp.json", &full[..cut]);
        let Err(err) = read_with(std::slice::from_ref(&p), &o) else { panic!("a cut document must fail") };
        assert!(err.to_string().contains("lldpctl JSON"), "{err}");
        let out = read_with(&[p], &ReadOptions { strict: false, ..o.clone() }).unwrap();
        assert_eq!((rows(&out).len(), out.reports[0].bad_records), (0, 1));
    }
    for junk in [&b"{\"lldp\": {\"interface\": 7}}"[..], b"{\"lldp\": []}", b"{\"lldp\": {\"interface\": [1, 2]}}"] {
        let p = temp_file("junk.lldp.json", junk);
        assert!(read_with(std::slice::from_ref(&p), &o).is_err(), "{}", String::from_utf8_lossy(junk));
    }
    // wrong values inside a valid shape: no name, no port -> no link, no panic
    let odd = br#"{"lldp": {"interface": {"eth0": {"chassis": {"id": {"type": "mac"}}, "port": {"id": 5}}}}}"#;
    let out = read_with(&[temp_file("odd.lldp.json", odd)], &o).unwrap();
    assert!(rows(&out).is_empty());
    let out = read_with(&[temp_file("empty.lldp.json", b"{\"lldp\": {}}")], &o).unwrap();
    assert!(rows(&out).is_empty());
}

//! The `links` table from ibnetdiscover -p, iblinkinfo and ibdiagnet2.db_csv, checked link by link.
#![allow(clippy::unwrap_used, missing_docs)]

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt16Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use common::{Output, V, fixture, read_with, temp_file};
use fabricscope_core::{Format, ReadOptions};

fn opts() -> ReadOptions {
    ReadOptions { time_ns: Some(1_764_686_822_000_000_000), host: Some("mgmt01".into()), ..ReadOptions::default() }
}

/// One link, flattened: (guid, port, name, type, lid, tier) for each end, then width, speed,
/// lane Gb/s, data rate Gb/s, supported width and speed.
#[derive(Debug, PartialEq)]
struct L {
    a: (String, u16, Option<String>, String, Option<u32>, Option<String>),
    b: (String, u16, Option<String>, String, Option<u32>, Option<String>),
    width: Option<String>,
    speed: Option<String>,
    lane_gbps: Option<f64>,
    data_rate_gbps: Option<f64>,
    supported: (Option<String>, Option<String>),
}

fn s(b: &RecordBatch, c: &str, i: usize) -> Option<String> {
    let a = b.column_by_name(c).unwrap().as_string::<i32>();
    a.is_valid(i).then(|| a.value(i).to_owned())
}

fn links_of(out: &Output) -> Vec<L> {
    let mut v = Vec::new();
    for (name, b) in &out.tables {
        assert_eq!(*name, "links");
        let u16c = |c: &str| b.column_by_name(c).unwrap().as_primitive::<UInt16Type>().clone();
        let u32c = |c: &str| b.column_by_name(c).unwrap().as_primitive::<UInt32Type>().clone();
        let f64c = |c: &str| b.column_by_name(c).unwrap().as_primitive::<Float64Type>().clone();
        let (port, peer_port, lid, peer_lid) = (u16c("port"), u16c("peer_port"), u32c("lid"), u32c("peer_lid"));
        let (lane, rate) = (f64c("lane_gbps"), f64c("data_rate_gbps"));
        for i in 0..b.num_rows() {
            v.push(L {
                a: (
                    s(b, "node_guid", i).unwrap(),
                    port.value(i),
                    s(b, "node_name", i),
                    s(b, "node_type", i).unwrap(),
                    lid.is_valid(i).then(|| lid.value(i)),
                    s(b, "tier", i),
                ),
                b: (
                    s(b, "peer_node_guid", i).unwrap(),
                    peer_port.value(i),
                    s(b, "peer_node_name", i),
                    s(b, "peer_node_type", i).unwrap(),
                    peer_lid.is_valid(i).then(|| peer_lid.value(i)),
                    s(b, "peer_tier", i),
                ),
                width: s(b, "width", i),
                speed: s(b, "speed", i),
                lane_gbps: lane.is_valid(i).then(|| lane.value(i)),
                data_rate_gbps: rate.is_valid(i).then(|| rate.value(i)),
                supported: (s(b, "supported_width", i), s(b, "supported_speed", i)),
            });
        }
    }
    v
}

fn end(
    guid: &str,
    port: u16,
    name: &str,
    ty: &str,
    lid: u32,
    tier: &str,
) -> (String, u16, Option<String>, String, Option<u32>, Option<String>) {
    (guid.into(), port, Some(name.into()), ty.into(), Some(lid), Some(tier.into()))
}

fn link(
    a: (String, u16, Option<String>, String, Option<u32>, Option<String>),
    b: (String, u16, Option<String>, String, Option<u32>, Option<String>),
    width: &str,
    speed: &str,
    lane: f64,
    rate: f64,
) -> L {
    L {
        a,
        b,
        width: Some(width.into()),
        speed: Some(speed.into()),
        lane_gbps: Some(lane),
        data_rate_gbps: Some(rate),
        supported: (None, None),
    }
}

#[test]
fn ibnetdiscover_fixture_links_one_by_one() {
    let out = read_with(&[fixture("ib/ibnetdiscover/test.out")], &opts()).unwrap();
    assert_eq!(out.reports[0].format, Some(Format::Ibnetdiscover));
    assert_eq!(out.reports[0].bad_records, 0);
    let got = links_of(&out);
    let leaf1 = |p| end("0x7cfe9003009ce5b0", p, "ib-i1l1s01", "switch", 1719, "leaf");
    let expected = vec![
        link(
            end("0x506b4b0300cc02a6", 1, "p0001 HCA-1", "hca", 1432, "hca"),
            end("0x506b4b03005c2740", 35, "ib-i4l1s01", "switch", 2052, "leaf"),
            "4x",
            "EDR",
            25.781_25,
            100.0,
        ),
        link(end("0x7cfe9003003b4b96", 1, "o0002 HCA-1", "hca", 133, "hca"), leaf1(11), "4x", "EDR", 25.781_25, 100.0),
        link(end("0x7cfe9003003b4bde", 1, "o0001 HCA-1", "hca", 134, "hca"), leaf1(10), "4x", "EDR", 25.781_25, 100.0),
        link(
            leaf1(1),
            end("0x7cfe900300b07320", 1, "ib-i1l2s01", "switch", 1516, "spine"),
            "4x",
            "EDR",
            25.781_25,
            100.0,
        ),
    ];
    assert_eq!(got, expected);
    // every connected port line gives width and rate gauges (7 connected lines)
    assert_eq!(out.counter("link_width_lanes").len(), 7);
    let r = out.rows.iter().find(|r| r.counter == "link_rate_bytes_per_s" && r.device == "0x7cfe9003003b4bde").unwrap();
    assert_eq!((r.port, &r.value, r.is_counter), (Some(1), &V::U(12_500_000_000), false));
}

#[test]
fn ibnetdiscover_aggregation_node_does_not_make_a_leaf() {
    let out = read_with(&[fixture("ib/ibnetdiscover/test2.out")], &opts()).unwrap();
    let got = links_of(&out);
    let an = |lid| end("0x946dae0300630bfe", 1, "Mellanox Technologies Aggregation Node", "hca", lid, "hca");
    let leaf = |p| end("0x946dae0300630bf6", p, "5FB0405-leaf-IB01", "switch", 51, "leaf");
    let expected = vec![
        link(an(78), leaf(81), "4x", "HDR", 53.125, 200.0),
        link(
            an(60),
            end("0x946dae030053ec1a", 81, "5FB0406-spine-IB03", "switch", 9, "spine"),
            "4x",
            "HDR",
            53.125,
            200.0,
        ),
        link(end("0xb83fd20300da1138", 1, "worker20 mlx5_3", "hca", 88, "hca"), leaf(79), "4x", "HDR", 53.125, 200.0),
    ];
    assert_eq!(got, expected);
    // only unconnected ports (unquoted description): no links, no rows, no errors
    let out = read_with(&[fixture("ib/ibnetdiscover/test3.out")], &opts()).unwrap();
    assert_eq!(out.reports[0].format, Some(Format::Ibnetdiscover));
    assert!(out.tables.is_empty() && out.rows.is_empty() && out.reports[0].bad_records == 0);
}

#[test]
fn iblinkinfo_resolves_peers_by_lid_and_reads_could_be() {
    let out = read_with(&[fixture("ib/constructed/iblinkinfo.txt")], &opts()).unwrap();
    assert_eq!(out.reports[0].format, Some(Format::Iblinkinfo));
    assert_eq!(out.reports[0].bad_records, 0);
    let leaf = |p| end("0x506b4b0300820910", p, "MF0;SB7700:MSB7700/U1", "switch", 2, "leaf");
    let mut downgraded = link(
        leaf(36),
        end("0x506b4b0300820aaa", 3, "MF0;spine1:MSB7800/U1", "switch", 9, "spine"),
        "4x",
        "QDR",
        10.0,
        32.0,
    );
    downgraded.supported = (None, Some("EDR".into()));
    // rows are sorted by their first end's GUID
    let expected = vec![
        downgraded,
        link(end("0xec0d9a03003d62be", 1, "n02 HCA-1", "hca", 4, "hca"), leaf(17), "4x", "EDR", 25.781_25, 100.0),
    ];
    assert_eq!(links_of(&out), expected);
}

#[test]
fn ibdiagnet_links_from_nodes_ports_and_links() {
    let out = read_with(&[fixture("ib/constructed/ibdiagnet2.db_csv")], &opts()).unwrap();
    let leaf = |p, lid| end("0xb8cef603001bf9de", p, "MF0;leaf1:MQM8700/U1", "switch", lid, "leaf");
    let mut hca =
        link(end("0x1070fd0300aa0001", 1, "gpu01 mlx5_0", "hca", 11, "hca"), leaf(1, 5), "4x", "HDR", 53.125, 200.0);
    hca.supported = (Some("4x".into()), Some("HDR".into()));
    let mut up = link(
        leaf(41, 5),
        end("0xb8cef603001bfa00", 3, "MF0;spine1:MQM8700/U1", "switch", 7, "spine"),
        "4x",
        "EDR",
        25.781_25,
        100.0,
    );
    up.supported = (Some("4x".into()), Some("HDR".into()));
    assert_eq!(links_of(&out), vec![hca, up]);
}

#[test]
fn ibnetdiscover_hostile_line_names_file_and_line() {
    let p = temp_file("fabric.ibnd", b"CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'a' - 'b' )\nCA   134  1 0x7cfe9003003b4bde 4x EDR - SW  17x9 10\n");
    let o = ReadOptions { format: Some(Format::Ibnetdiscover), ..opts() };
    let err = match read_with(std::slice::from_ref(&p), &o) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("fabric.ibnd") && err.contains("line 2"), "{err}");
    let out = read_with(&[p], &ReadOptions { strict: false, ..o }).unwrap();
    assert_eq!((links_of(&out).len(), out.reports[0].bad_records), (1, 1));
}

fn topology(name: &str) -> Output {
    read_with(&[fixture(&format!("ib/ibnetdiscover-topology/{name}"))], &opts()).unwrap()
}

#[test]
fn ibnetdiscover_topology_file_is_detected_and_gives_links() {
    // a real EDR/FDR/QDR fabric with loopback cables and a MAD time-out line from stderr
    let out = topology("3.topo");
    assert_eq!(out.reports[0].format, Some(Format::Ibnetdiscover));
    assert_eq!(out.reports[0].bad_records, 0, "{:?}", out.reports[0].errors);
    assert!(out.reports[0].warnings.iter().any(|w| w.contains("line 1") && w.contains("query_smp.c")));
    let got = links_of(&out);
    // 3 loopback cables + 1 inter-switch link + 6 HCA links; both directions merged
    assert_eq!(got.len(), 10);
    let edr = got.iter().find(|l| l.a.0 == "0xe41d2d030061f957").unwrap();
    assert_eq!(
        *edr,
        link(
            end("0xe41d2d030061f957", 1, "r-ufm216 HCA-2", "hca", 2, "hca"),
            end("0xe41d2d030003e470", 34, "SwitchIB Mellanox Technologies", "switch", 268, "leaf"),
            "4x",
            "EDR",
            25.781_25,
            100.0,
        )
    );
    let isl = got.iter().find(|l| l.b.0 == "0xf4521403005764b0" && l.a.0 == "0xe41d2d030003e470").unwrap();
    assert_eq!((isl.a.1, isl.b.1, isl.speed.as_deref()), (3, 1, Some("FDR")));
    assert_eq!(isl.b.2.as_deref(), Some("MF0;switch-de779e:SX6012/U1"));
    let sdr = got.iter().find(|l| l.a.0 == "0xe41d2d03005cf1f8").unwrap();
    assert_eq!((sdr.width.as_deref(), sdr.speed.as_deref(), sdr.data_rate_gbps), (Some("4x"), Some("SDR"), Some(8.0)));
    // dated by its `generated on` line (local time read as UTC), not by the argument
    let t = 1_469_446_226_000_000_000;
    assert!(out.rows.iter().all(|r| r.time_ns == t));
    // each connected port of each node block gives its width: 9 + 5 switch ports, 6 HCA ports
    assert_eq!(out.counter("link_width_lanes").len(), 20);
    let attr = |dev: &str, key: &str| {
        out.attrs.iter().find(|a| a.device == dev && a.key == key && a.port.is_none()).map(|a| a.value.clone())
    };
    assert_eq!(attr("0xe41d2d030003e470", "device_id").as_deref(), Some("0xcb20"));
    assert_eq!(attr("0xe41d2d030003e470", "vendor_id").as_deref(), Some("0x2c9"));
    assert_eq!(attr("0x0002c903003421b0", "system_image_guid").as_deref(), Some("0x2c903003421b3"));
    assert_eq!(attr("0x0002c903003421b0", "node_description").as_deref(), Some("r-ufm111 HCA-1"));
}

#[test]
fn ibnetdiscover_topology_other_real_files() {
    // man page example (`Non-Chassis Nodes`, `lmc 1`, a 1xSDR link), IBM (Ca blocks), Oracle (QDR)
    for (name, n_links) in [("1.topo", 7), ("2.topo", 2), ("4.topo", 1)] {
        let out = topology(name);
        assert_eq!(out.reports[0].format, Some(Format::Ibnetdiscover), "{name}");
        assert_eq!(out.reports[0].bad_records, 0, "{name}: {:?}", out.reports[0].errors);
        assert_eq!(links_of(&out).len(), n_links, "{name}");
    }
    let out = topology("2.topo");
    let expected = vec![
        link(
            end("0x0002c902002789ac", 1, "compute-00-01 HCA-1", "hca", 1, "hca"),
            end("0x000b8cffff0053ee", 1, "MT43132 Mellanox Technologies", "switch", 3, "leaf"),
            "4x",
            "SDR",
            2.5,
            8.0,
        ),
        link(
            end("0x0002c9030002847c", 2, "compute-00-00 HCA-1", "hca", 2, "hca"),
            end("0x000b8cffff0053ee", 2, "MT43132 Mellanox Technologies", "switch", 3, "leaf"),
            "4x",
            "SDR",
            2.5,
            8.0,
        ),
    ];
    assert_eq!(links_of(&out), expected);
    // the man page's example reports two ports at 1x from one end only: the gauges keep each
    // port's own width (the merged link keeps the first end's)
    let out = topology("1.topo");
    let one_x: Vec<(String, Option<u16>)> = out
        .counter("link_width_lanes")
        .iter()
        .filter(|r| r.value == V::U(1))
        .map(|r| (r.device.clone(), r.port))
        .collect();
    assert_eq!(one_x, vec![("0x0008f10400410015".to_owned(), Some(1)), ("0x0008f10403960558".to_owned(), Some(1))]);
}

#[test]
fn ibnetdiscover_topology_hostile_lines_name_the_cause() {
    let good = "vendid=0x2c9\ndevid=0xcb20\nswitchguid=0xe41d2d030003e470(e41d2d030003e470)\nSwitch\t36 \"S-e41d2d030003e470\"\t\t# \"sw\" base port 0 lid 268 lmc 0\n[3]\t\"S-f4521403005764b0\"[1]\t\t# \"MF0;sw2:SX6012/U1\" lid 174 4xFDR\n";
    let cases: [(&str, &str); 3] = [
        // cut inside the peer GUID, inside the speed, a header cut before its description, a port line before any header
        ("[34]\t\"H-e41d2d030061f957\"[1](e41d2d03", "port line"),
        ("[34]\t\"H-e41d2d030061f957\"[1](e41d2d030061f957) \t\t# \"r HCA-2\" lid 2 4xE", "port line"),
        ("Switch\t36 \"S-e41d2d030003e4", "node header"),
    ];
    let o = ReadOptions { format: Some(Format::Ibnetdiscover), ..opts() };
    for (i, (bad, what)) in cases.iter().enumerate() {
        let p = temp_file(&format!("cut{i}.topo"), format!("{good}{bad}\n").as_bytes());
        let err = match read_with(std::slice::from_ref(&p), &o) {
            Ok(_) => panic!("expected an error for {bad:?}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(&format!("cut{i}.topo")) && err.contains("line 6") && err.contains(what), "{err}");
        let out = read_with(&[p], &ReadOptions { strict: false, ..o.clone() }).unwrap();
        assert_eq!((links_of(&out).len(), out.reports[0].bad_records), (1, 1));
    }
    let p = temp_file("orphan.topo", b"[3]\t\"S-f4521403005764b0\"[1]\t\t# \"x\" lid 174 4xFDR\n");
    let err = read_with(std::slice::from_ref(&p), &o).err().map(|e| e.to_string()).unwrap();
    assert!(err.contains("line 1") && err.contains("node header before its port lines"), "{err}");
    // garbage bytes are not a topology file
    let p = temp_file("garbage.topo", b"\xff\xfe\x00vendid=\n");
    assert!(read_with(std::slice::from_ref(&p), &o).is_err());
}

#[test]
fn net_dump_rows_give_links() {
    let out = read_with(&[fixture("ib/constructed/ibdiagnet2.net_dump")], &opts()).unwrap();
    let got = links_of(&out);
    let leaf = |p| end("0xb8cef603001bf9de", p, "MF0;leaf01:MQM8700/U1", "switch", 1, "leaf");
    let fdr10 =
        link(end("0x0c42a1030065a1c4", 1, "node02 HCA-1", "hca", 6, "hca"), leaf(2), "2x", "FDR10", 10.3125, 20.0);
    let expected = vec![
        link(end("0x0c42a1030065a1b2", 1, "node01 HCA-1", "hca", 5, "hca"), leaf(1), "4x", "HDR", 53.125, 200.0),
        fdr10,
        link(
            leaf(41),
            end("0xb8cef603001bfa00", 7, "MF0;spine01:MQM9700/U1", "switch", 2, "spine"),
            "4x",
            "NDR",
            106.25,
            400.0,
        ),
    ];
    assert_eq!(got, expected);
    let src = out.tables[0].1.column_by_name("source").unwrap().as_string::<i32>().value(0).to_owned();
    assert_eq!(src, "ibdiagnet-net-dump");
}

#[test]
fn ibnetdiscover_topology_cut_anywhere_reads_without_panic() {
    // Every prefix of a real topology file (a capture cut short) reads leniently: the complete
    // lines before the cut give their links, the cut line at most one bad record.
    let text = std::fs::read(fixture("ib/ibnetdiscover-topology/3.topo")).unwrap();
    let o = ReadOptions { format: Some(Format::Ibnetdiscover), strict: false, ..opts() };
    let mut last_links = 0;
    for cut in (0..text.len()).step_by(41) {
        let p = temp_file("cut.topo", &text[..cut]);
        let out = read_with(&[p], &o).unwrap();
        assert!(out.reports[0].bad_records <= 1, "cut at {cut}: {:?}", out.reports[0].errors);
        let n = links_of(&out).len();
        assert!(n >= last_links, "cut at {cut}: links went from {last_links} to {n}");
        last_links = n;
    }
    assert_eq!(last_links, 10);
}

/// The links batch of one input.
fn links_batch(out: &Output) -> RecordBatch {
    let batches: Vec<&RecordBatch> = out.tables.iter().filter(|(n, _)| *n == "links").map(|(_, b)| b).collect();
    assert_eq!(batches.len(), 1);
    batches[0].clone()
}

/// A links batch with its two ends swapped (the same cables, named from the other side).
fn reversed(b: &RecordBatch) -> RecordBatch {
    let schema = b.schema();
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            let name = f.name();
            let other = name.strip_prefix("peer_").map_or_else(|| format!("peer_{name}"), str::to_owned);
            b.column_by_name(&other).unwrap_or_else(|| b.column_by_name(name).unwrap()).clone()
        })
        .collect();
    RecordBatch::try_new(schema, columns).unwrap()
}

#[test]
fn merged_links_are_each_cable_once_tiered_over_every_input() {
    use fabricscope_core::topology::merge_links;
    let out = read_with(&[fixture("ib/ibnetdiscover/test.out")], &opts()).unwrap();
    let whole = links_batch(&out);
    assert_eq!(whole.num_rows(), 4);
    // The leaf-spine cable alone: no HCA in that input, so both switches are spines.
    let alone = whole.slice(3, 1);
    let rest = whole.slice(0, 3);
    let merged_alone = merge_links(std::slice::from_ref(&alone)).unwrap().unwrap();
    assert_eq!(s(&merged_alone, "tier", 0).as_deref(), Some("spine"));
    assert_eq!(s(&merged_alone, "peer_tier", 0).as_deref(), Some("spine"));
    // Merged with the rest, in any order and from either side, it is the whole input's table.
    for parts in [
        vec![alone.clone(), rest.clone()],
        vec![rest.clone(), reversed(&alone)],
        vec![reversed(&whole), whole.clone(), alone.clone()],
    ] {
        let merged = merge_links(&parts).unwrap().unwrap();
        let got = links_of(&Output { rows: vec![], attrs: vec![], reports: vec![], tables: vec![("links", merged)] });
        assert_eq!(got, links_of(&out));
    }
    // The first input to name a cable keeps its source; a later one only fills what it left out.
    let mut named = whole.clone();
    let mut cols = named.columns().to_vec();
    let src = named.schema().index_of("source").unwrap();
    cols[src] = std::sync::Arc::new(arrow_array::StringArray::from(vec!["iblinkinfo"; 4]));
    named = RecordBatch::try_new(named.schema(), cols).unwrap();
    let merged = merge_links(&[named, whole.clone()]).unwrap().unwrap();
    assert_eq!(merged.num_rows(), 4);
    assert_eq!(s(&merged, "source", 0).as_deref(), Some("iblinkinfo"));
    // Nothing to merge: no table.
    assert!(merge_links(&[]).unwrap().is_none());
    assert!(merge_links(&[whole.slice(0, 0)]).unwrap().is_none());
}

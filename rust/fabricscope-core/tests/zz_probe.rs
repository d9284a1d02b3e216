#![allow(clippy::unwrap_used, missing_docs)]
mod common;
use fabricscope_core::ReadOptions;
#[test]
fn probe() {
    for p in ["sysfs/procfs/sys", "sysfs/node_exporter/sys"] {
        let out = common::read_with(&[common::fixture(p)], &ReadOptions{time_ns: Some(1), ..ReadOptions::default()}).unwrap();
        for r in &out.rows { println!("S {} {} {:?} {} {:?} s={} c={}", r.host, r.device, r.port, r.counter, r.value, r.scale, r.is_counter); }
        for a in &out.attrs { println!("A {} {} {:?} {} = {:?}", a.host, a.device, a.port, a.key, a.value); }
        println!("{:?}", out.reports);
    }
}

//! The core's integration tests, one module per reader or concern, linked into one test binary
//! (a binary per file links the whole core once per file).
//!
//! Run one module's tests with a filter: `cargo test -p fabricscope-core --test core prometheus::`.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

mod cxl;
mod driver;
mod ethtool;
mod fuzz_smoke;
mod hostile;
mod ib_counters;
mod ib_topology;
mod lldpctl;
mod nccl_tests;
mod nvidia_smi;
mod pcap;
mod pcap_generated;
mod perftest;
mod prometheus;
mod prometheus_api;
mod rates;
mod remote_read;
mod shared_rules;
mod sonic_lldp;
mod sysfs;

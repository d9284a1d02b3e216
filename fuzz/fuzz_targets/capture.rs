//! Fuzz the pcap / pcapng reader: any bytes, strict and lenient, must give rows or an error,
//! never a panic, an overflow or an unbounded allocation (see `common/mod.rs`).
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::run_target("capture", data));

//! Fuzz format detection and the whole auto-detect path: `detect` on any bytes and file name,
//! then the driver with no forced format (gzip/zstd magic, BOMs, then whichever reader detection
//! picks), so the fuzzer can reach every reader from content alone (see `common/mod.rs`).
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::run_target("detect", data));

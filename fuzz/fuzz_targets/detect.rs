//! Fuzz format detection and the whole auto-detect path: `detect` on any bytes and file name,
//! then the driver with no forced format (gzip/zstd magic, BOMs, then whichever reader detection
//! picks), so the fuzzer can reach every reader from content alone.
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Name hints only break ties; try one that carries a hint and one that does not.
    let _ = fabricscope_core::formats::detect(data, "ethtool-S.log");
    let _ = fabricscope_core::formats::detect(data, "x");
    common::read_as(None, data);
});

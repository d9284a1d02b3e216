//! Fuzz the pcap / pcapng reader: any bytes, strict and lenient, must give rows or an error,
//! never a panic, an overflow or an unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fabricscope_core::packets::capture_stats(data, true);
    let _ = fabricscope_core::packets::capture_stats(data, false);
    // Also as if it were pcapng / pcap with a valid magic in front.
    let mut ng = vec![0x0a, 0x0d, 0x0d, 0x0a];
    ng.extend_from_slice(data);
    let _ = fabricscope_core::packets::capture_stats(&ng, false);
});

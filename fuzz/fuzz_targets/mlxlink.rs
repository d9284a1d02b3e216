//! Fuzz the `Format::Mlxlink` reader through the real driver (see `common/mod.rs`).
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::run_target("mlxlink", data));

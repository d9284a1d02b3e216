//! Fuzz the `Format::Ibqueryerrors` reader through the real driver (see `common/mod.rs`).
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use fabricscope_core::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::read_as(Some(Format::Ibqueryerrors), data));

//! cargo-fuzz entry point of `ipfix`; the checks are in `fuzz/checks/ipfix.rs`.
#![no_main]

#[path = "../checks/ipfix.rs"]
mod ipfix;

libfuzzer_sys::fuzz_target!(|data: &[u8]| ipfix::run(data));

//! cargo-fuzz entry point of `encap`; the checks are in `fuzz/checks/encap.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::encap::run(data));

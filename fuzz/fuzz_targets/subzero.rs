//! cargo-fuzz entry point of `subzero`; the checks are in `fuzz/checks/subzero.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::subzero::run(data));

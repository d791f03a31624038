//! cargo-fuzz entry point of `options`; the checks are in `fuzz/checks/options.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::options::run(data));

//! cargo-fuzz entry point of `filter`; the checks are in `fuzz/checks/filter.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::filter::run(data));

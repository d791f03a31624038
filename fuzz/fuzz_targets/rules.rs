//! cargo-fuzz entry point of `rules`; the checks are in `fuzz/checks/rules.rs`.
#![no_main]

#[path = "../checks/rules.rs"]
mod rules;

libfuzzer_sys::fuzz_target!(|data: &[u8]| rules::run(data));

//! cargo-fuzz entry point of `classify`; the checks are in `fuzz/checks/classify.rs`.
#![no_main]

#[path = "../checks/classify.rs"]
mod classify;

libfuzzer_sys::fuzz_target!(|data: &[u8]| classify::run(data));

//! cargo-fuzz entry point of `decode`; the checks are in `fuzz/checks/decode.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::decode::run(data));

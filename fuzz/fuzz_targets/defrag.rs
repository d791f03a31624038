//! cargo-fuzz entry point of `defrag`; the checks are in `fuzz/checks/defrag.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::defrag::run(data));

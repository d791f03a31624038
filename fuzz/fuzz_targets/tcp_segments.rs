//! cargo-fuzz entry point of `tcp_segments`; the checks are in `fuzz/checks/tcp_segments.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::tcp_segments::run(data));

//! cargo-fuzz entry point of `engine_frames`; the checks are in `fuzz/checks/engine_frames.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::engine_frames::run(data));

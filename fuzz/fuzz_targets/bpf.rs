//! cargo-fuzz entry point of `bpf`; the checks are in `fuzz/checks/bpf.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::bpf::run(data));
